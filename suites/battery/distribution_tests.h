// The statistics applied to one row's draws, shared by goodness_of_fit and ties: OUT
// tokens (exact), stats::row_tests on the IN-conditional distribution (omnibus Pearson,
// cumulative mass in q order, single tokens) and the BOUNDARY count against its range.
// A row's p-value is Sidak over its sub-tests (row_sub_tests), so it is close to
// uniform under the null; its plan sizes the Pearson sub-test at the Sidak level.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "suites/battery/sampling.h"

namespace samplecheck::battery {

// Draws a row needs so that goodness of fit at level `alpha` detects a TVD of `tvd`
// (on the IN-conditional distribution) with probability `power`, capped at `cap`.
struct planned_draws {
  uint64_t draws = 0;  // draws of the row (IN, BOUNDARY and all)
  int64_t df = 0;      // merged cells - 1 the plan assumed
  bool capped = false;
};
planned_draws plan_gof_draws(const judged_row& row, double alpha, double tvd, double power,
                             uint64_t cap);

// Rows whose IN-conditional distribution has something to test (>= 2 IN tokens) or
// whose BOUNDARY tokens carry a mass range.
bool gof_testable(const judged_row& row);
// The sub-tests of a row: stats::kRowSubTests with >= 2 IN tokens, + 1 with BOUNDARY tokens.
uint64_t row_sub_tests(const judged_row& row);

struct row_fit {
  double p_value = 1.0;       // Sidak over the row's sub-tests
  double detectable_tvd = 0;  // power at the IN draws seen
  std::string detail;         // statistics, deviating tokens when p is small
};
// `alpha` is the row's share (it decides how many deviating tokens are named).
row_fit fit_row(const judged_row& row, const std::vector<uint64_t>& counts, double alpha,
                double power);

}  // namespace samplecheck::battery
