// The statistics applied to one row's draws, shared by goodness_of_fit and ties: OUT
// tokens (exact), stats::row_tests on the IN-conditional distribution (omnibus Pearson,
// cumulative mass in q order, single tokens) and the BOUNDARY count against its range.
// A row's p-value combines row_tests' p-value (itself Sidak over its sub-tests, its
// body calibrated at the last look) and the BOUNDARY count by weighted Bonferroni
// (19 : 1), so it is close to uniform under the null; its plan sizes the Pearson
// sub-test at its level inside both combinations (pearson_level).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "suites/checks/sampling.h"

namespace samplecheck::checks {

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
// The level of a row's Pearson sub-test when the row is judged at `alpha`: row_tests'
// share (all of alpha, or 19/20 where the row has BOUNDARY tokens too), then Sidak over
// row_tests' stats::kRowSubTests.
double pearson_level(const judged_row& row, double alpha);

struct row_fit {
  double p_value = 1.0;       // Sidak over the row's sub-tests
  double detectable_tvd = 0;  // power at the IN draws seen
  std::string detail;         // statistics, deviating tokens when p is small
  // The parts, for combine_last_look: row_tests' Monte Carlo statistics of the IN part
  // (empty without replicates or IN part) and the BOUNDARY count's p-value (< 0: none).
  double in_observed = 1;
  std::vector<double> in_replicates;
  double p_boundary = -1;
};
// `alpha` is the row's share (it decides how many deviating tokens are named); the
// randomised p-values of stats::row_tests use (seed, stream), distinct per row, and
// `replicates` calibrate its body (row_tests.h; 0: none).
// `in_order`: in_probs_order(row) where the row is fitted at several looks (empty: sorted
// each time).
row_fit fit_row(const judged_row& row, const std::vector<uint64_t>& counts, double alpha,
                double power, uint64_t seed, uint64_t stream, uint32_t replicates,
                std::span<const size_t> in_order = {});
// The IN-conditional distribution's tokens in q-descending order (stats::row_order).
std::vector<size_t> in_probs_order(const judged_row& row);

// The p-value of rows fitted with the same number of replicates B, all at once. The IN
// parts by Monte Carlo over the rows together: replicate b of every row is one null draw
// of the rows (independent, on disjoint subsequences), so the minimum over rows of the
// row's bounded p-value on the counts and on each replicate gives B + 1 exchangeable
// statistics, whose randomised rank (u from (seed, stream)) is exactly uniform; below
// 1 / (B + 1) the Sidak bound over the rows decides (row_tests.h's rule, one level up).
// Row by row, that rule left each row's p-value short of uniform below 1 / (B + 1),
// which a Sidak over many rows reads: cpu.sort_filter's check medians were 0.58-0.60.
// The BOUNDARY counts (a composite null, no replicate) join by weighted Bonferroni
// (1 / 20 of the level, as in a row).
double combine_last_look(const std::vector<row_fit>& fits, uint64_t seed, uint64_t stream);

}  // namespace samplecheck::checks
