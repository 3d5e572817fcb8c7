// Runs one check here, in samplecheck's process, against a subject in its own process
// (suites/harness/subject_process.h): every statistic and verdict is computed here from
// the outputs the subject returned, so a subject can fail a check but never forge one.
// Each call must finish by the check's deadline (its budgeted time); a subject that
// crashes, hangs, exits or replies garbage becomes the check's FAIL or TIMEOUT with what
// happened and the tail of its stderr, and its process is restarted for the next check.
#pragma once

#include "suites/battery/check.h"

namespace samplecheck::battery {

// What one check run against its subject process gave.
struct check_run {
  check_outcome outcome;
  bool subject_failed = false;  // no result: the subject process died, hung or broke the protocol
  bool timed_out = false;       // no reply by the deadline: the subject hangs, later checks may too
  std::string why;              // what happened to the subject process when it failed
  double seconds = 0;
  double subject_seconds = 0;  // of `seconds`, spent in subject calls (subject_clock)
  uint64_t subject_calls = 0;
  uint64_t subject_input_rows = 0;  // summed over the calls
};

// A check's exceptions become harness errors; a subject process's failure, `subject_failed`.
check_run run_check(const check_definition& check, const check_context& ctx, double timeout_s);

}  // namespace samplecheck::battery
