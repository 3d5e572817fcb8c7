#include "suites/battery/budget.h"

namespace samplecheck::battery {

namespace {

// One row a budget. Quick's tie_halves_ratio and tie_flat_vocab: X10's halves ratio on a flat
// row of 8,192 is about 1.03 (checks_ties.cpp); the Gumbel samplers' draw is O(V), and 8,192 is
// the smallest V whose top noise (log V + Gumbel) lies mostly at 8 or above, where the bf16 ulp
// is 1/16. Packed by hand, a budget to a few lines, so the two read side by side.
// clang-format off
const budget_settings kBudgets[] = {
    {.name = "quick", .vocab_size = 32000, .gof_tvd = 0.1, .tail_shift = 2e-3,
     .collision_shift = 0.02, .max_draws_per_row = 200000, .support_rate = 2e-3,
     .batch_rows = 64, .check_timeout_s = 300, .tie_ratio = 0.2, .tie_halves_ratio = 0.03,
     .tie_flat_vocab = 8192, .drawn_rows = 2},
    {.name = "standard", .vocab_size = 151936, .gof_tvd = 0.01, .tail_shift = 4e-4,
     .collision_shift = 0.004, .max_draws_per_row = 8000000, .support_rate = 2e-4,
     .batch_rows = 256, .check_timeout_s = 3600, .tie_ratio = 0.01, .tie_halves_ratio = 0.01,
     .tie_flat_vocab = 151936, .drawn_rows = 8},
};
// clang-format on

}  // namespace

budget_settings quick_budget() { return *budget_by_name("quick"); }

budget_settings standard_budget() { return *budget_by_name("standard"); }

std::optional<budget_settings> budget_by_name(std::string_view name) {
  for (const budget_settings& b : kBudgets)
    if (b.name == name) return b;
  return std::nullopt;
}

}  // namespace samplecheck::battery
