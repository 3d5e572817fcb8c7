// Runs one check in a forked child process, with a wall-clock timeout; the outcome
// comes back through a pipe as JSON. Everything that can go wrong with a subject
// (crash, hang, abort, exit, an exception) becomes an outcome, never a dead parent.
// The check ends when the child does, even if a helper the subject started still holds
// the pipe; the child's whole process group is killed then, and on a timeout.
#pragma once

#include "suites/battery/check.h"

namespace samplecheck::battery {

struct isolated_result {
  check_outcome outcome;
  bool crashed = false;    // no result: a signal, an exit before the check finished, a timeout
  bool timed_out = false;  // killed at the timeout: the subject hangs, later checks may too
  std::string why;         // what happened to the child when crashed or timed out
  double seconds = 0;
};

// isolate = false runs in-process (still catching exceptions): for debuggers only.
isolated_result run_check(const check_definition& check, const check_context& ctx, double timeout_s, bool isolate);

nlohmann::json outcome_to_json(const check_outcome& o);
check_outcome outcome_from_json(const nlohmann::json& j);

}  // namespace samplecheck::battery
