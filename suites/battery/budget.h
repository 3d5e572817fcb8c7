// Sample budgets. A budget states power targets, not sample counts: each check
// derives its samples from its target, its share of the run's false-alarm budget
// and the reference distribution (stats/power.h), capped so a run stays bounded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace samplecheck::battery {

struct budget_settings {
  std::string name;
  int64_t vocab_size;        // V of the fixture rows
  double gof_tvd;            // goodness of fit: TVD (over merged cells) detected with prob. 0.99
  double tail_shift;         // tail: excess tail mass detected with prob. 0.99
  double collision_shift;    // stream checks: excess collision rate detected with prob. 0.99
  uint64_t max_draws_per_row;  // cap on any one row's draws (power is then reported as reached)
  double support_rate;        // exact checks: an OUT-token rate seen with prob. 0.99 per row
  int64_t batch_rows;        // rows of the batch-shaped checks (reorder, degenerate, routing)
  // Wall-clock budget of one check's sampling. A pilot call measures the subject's
  // cost per draw; when the power target would take longer, every row's draws are
  // scaled down together and the check reports the power it actually reached,
  // marked "time-capped". Gumbel-max costs O(V) per draw, inverse CDF O(log V).
  double check_seconds;
  double power = 0.99;
};

// quick: CI on 2 cores (V = 32,000). standard: V = 151,936, 5x finer targets.
budget_settings quick_budget();
budget_settings standard_budget();
std::optional<budget_settings> budget_by_name(std::string_view name);

}  // namespace samplecheck::battery
