// Sample budgets. A budget states power targets, not sample counts: each check
// derives its samples from its target, its share of the run's false-alarm budget
// and the reference distribution (stats/power.h), capped per row so a run stays
// bounded. Nothing in a plan depends on time: what a budget costs is stated on a
// reference machine (docs/budgets.md), and a wall-clock limit can only stop a check
// as TIMEOUT, never shrink its samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace samplecheck::battery {

struct budget_settings {
  std::string name;
  int64_t vocab_size;          // V of the fixture rows
  double gof_tvd;              // goodness of fit: TVD (over merged cells) detected with prob. 0.99
  double tail_shift;           // tail: excess tail mass detected with prob. 0.99
  double collision_shift;      // stream checks: excess collision rate detected with prob. 0.99
  uint64_t max_draws_per_row;  // cap on any one row's draws (power is then reported as reached)
  double support_rate;         // exact checks: an OUT-token rate seen with prob. 0.99 per row
  int64_t batch_rows;          // rows of the batch-shaped checks (reorder, degenerate, routing)
  // Wall-clock limit of one check at this budget's V (scaled linearly above it): a
  // correct in-tree CPU subject needs a fraction of it (docs/budgets.md); a check
  // still running then is stopped and reported as TIMEOUT.
  double check_timeout_s;
  double power = 0.99;
  // tail: a row that keeps this fraction of its tail mass or less (a noise capped below the
  // tail's gap, S23) is detected with prob. 0.99; losing all of it is the case S11 and S13
  double tail_kept = 0.1;
  // ties: shares of two tied tokens in the ratio 1 + tie_ratio are detected with prob. 0.99
  double tie_ratio = 0.2;
  // ties, groups of more than 16 tied tokens: the lower-id half's share over the upper
  // half's, 1 + tie_halves_ratio, detected with prob. 0.99 (tie_splits.h)
  double tie_halves_ratio = 0.03;
  // ties: the V of the flat row (one tie group of all its tokens) the halves are sized on
  int64_t tie_flat_vocab = 8192;
  // goodness_of_fit: rows whose settings are drawn from the run seed, beside the fixed grid
  size_t drawn_rows = 2;
  // support and goodness_of_fit: rows at V = 65,535 and 65,537 beside the budget's V
  // (check_helpers.h, wide_vocab_rows). Off, every row is at the budget's V: the tests use
  // it to show what a budget of that V alone misses (X11, a 16-bit token id).
  bool wide_vocab = true;
};

// quick: CI on 2 cores (V = 32,000). standard: V = 151,936, 5x finer targets (goodness of
// fit 10x: TVD 0.01).
budget_settings quick_budget();
budget_settings standard_budget();
std::optional<budget_settings> budget_by_name(std::string_view name);

}  // namespace samplecheck::battery
