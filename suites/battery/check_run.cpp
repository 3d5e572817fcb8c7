#include "suites/battery/check_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "suites/harness/subject_process.h"

namespace samplecheck::battery {

namespace {

// The check itself, exceptions included. Availability is the subject process's word
// (its hello), so this process never initialises a device for a process subject.
check_outcome guarded_run(const check_definition& check, const check_context& ctx) {
  std::string why;
  if (!memory_space_available(ctx.subj, &why)) {
    check_outcome o;
    o.unavailable = true;
    o.detail = why;
    return o;
  }
  try {
    return check.run(ctx);
  } catch (const std::exception& e) {
    return harness_failure(fmt::format("exception in check {}: {}", check.name, e.what()));
  }
}

}  // namespace

check_run run_check(const check_definition& check, const check_context& ctx, double timeout_s) {
  check_run result;
  const subject_clock clock;
  // The subject process's start-up, where the check starts it, is the subject's time too.
  const auto started = [&] { return ctx.subj.process ? ctx.subj.process->start_seconds() : 0.0; };
  const double started_before = started();
  const double start = protocol::now_seconds();
  try {
    const harness::call_deadline deadline(start + timeout_s);
    result.outcome = guarded_run(check, ctx);
  } catch (const harness::subject_failure& f) {
    result.subject_failed = true;
    result.timed_out = f.timed_out;
    result.why = f.timed_out ? fmt::format("timed out after {:.0f} s (per-check timeout): {}",
                                           timeout_s, f.why)
                             : f.why;
  }
  result.seconds = protocol::now_seconds() - start;
  result.subject_seconds = std::min(clock.seconds() + started() - started_before, result.seconds);
  result.subject_calls = clock.calls();
  result.subject_input_rows = clock.input_rows();
  return result;
}

}  // namespace samplecheck::battery
