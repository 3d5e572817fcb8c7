#include "suites/battery/checks.h"

namespace samplecheck::battery {

const std::vector<check_definition>& all_checks() {
  static const std::vector<check_definition> checks{
      {"support", check_kind::exact, 0, "no OUT token, no id outside [0, V), no valid = 0 on a valid row", {}, run_support},
      {"goodness_of_fit", check_kind::statistical, 4,
       "chi-square and identity statistic on the IN-conditional distribution, BOUNDARY count in range, TVD bound",
       {}, run_goodness_of_fit},
      {"ties", check_kind::statistical, 1, "exact ties at the k-th value follow the declared tie policy",
       ties_not_applicable, run_ties},
      {"degenerate_rows", check_kind::exact, 0,
       "NaN / Inf / negative / all-zero rows give valid = 0, neighbours unchanged, bad parameters refused", {},
       run_degenerate_rows},
      {"replay", check_kind::exact, 0, "same seed, subsequence and offset give the same tokens", {}, run_replay},
      {"offset_advancement", check_kind::statistical, 1,
       "calls at offset and offset + declared advance are independent (collision test)", {}, run_offset_advancement},
      {"per_request_seeds", check_kind::statistical, 1, "seeds [a, b, ...] give independent requests, [a, a, ...] equal ones",
       {}, run_per_request_seeds},
      {"batch_reorder", check_kind::exact, 0, "permuting the requests permutes their tokens", {}, run_batch_reorder},
      {"parallel_samples", check_kind::statistical, 1,
       "outputs sharing one input row on distinct subsequences are independent (collision test)", {},
       run_parallel_samples},
      {"parameter_routing", check_kind::exact, 0, "per-row parameters follow the row-index map", routing_not_applicable,
       run_parameter_routing},
      {"tail", check_kind::statistical, 2, "mass on tokens below 1e-5, both directions (tiny and subnormal tails)", {},
       run_tail},
      {"spelling_agreement", check_kind::exact, 0, "two spellings of one rule pick the same token on the same numbers",
       spelling_not_applicable, run_spelling_agreement},
  };
  return checks;
}

const check_definition* find_check(std::string_view name) {
  for (const auto& c : all_checks())
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace samplecheck::battery
