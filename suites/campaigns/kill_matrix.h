// The kill matrix: the battery on every mutant subject ("<host>:<catalog id>"), and
// whether the check that kernels/mutant_catalog.h names killed it.
#pragma once

#include <string>
#include <vector>

#include "suites/battery/runner.h"

namespace samplecheck::campaigns {

struct mutant_result {
  std::string subject;      // "cpu.dual_pivot:S01"
  std::string id;           // "S01"
  std::string named_check;  // the catalog's killing check
  battery::battery_report report;
  bool killed_by_named = false;
  bool unavailable = false;  // the mutant's device is absent
  // The named check ran and was applicable: only then is KILLED or SURVIVED a verdict.
  bool judged = false;
  const battery::check_report* named() const;
};

// Mutants among `subjects` (names with a ':' and a catalog id). named_only runs just
// each mutant's catalog check (the CI proof); otherwise every check (the matrix).
std::vector<mutant_result> run_mutants(const std::vector<battery::subject>& subjects,
                                       const battery::run_options& options,
                                       const battery::subject_lookup& lookup, bool named_only);

// Mutant x check: K killed, . passed, - n/a, s skipped, E error; then per mutant the
// named check's verdict, p-value and samples.
std::string format_kill_matrix(const std::vector<mutant_result>& results);

// True when every judged mutant was killed by its named check.
bool all_killed(const std::vector<mutant_result>& results);

// True when no mutant was judged: each one's device is absent or its named check did not run.
bool none_judged(const std::vector<mutant_result>& results);

}  // namespace samplecheck::campaigns
