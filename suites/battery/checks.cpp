#include "suites/battery/checks.h"

#include <algorithm>

namespace samplecheck::battery {

const std::vector<check_definition>& all_checks() {
  constexpr subject_kind S = subject_kind::sampler, M = subject_kind::matmul;
  static const std::vector<check_definition> checks{
      {"support",
       S,
       check_kind::exact,
       0,
       "no OUT token, no id outside [0, V), no valid = 0 on a valid row",
       {},
       run_support, planned_support},
      {"goodness_of_fit",
       S,
       check_kind::statistical,
       4,
       "chi-square, cumulative-mass cuts and single tokens on the IN-conditional distribution, "
       "BOUNDARY count "
       "in range; Sidak-combined, group-sequential looks",
       {},
       run_goodness_of_fit, planned_goodness_of_fit},
      {"ties", S, check_kind::statistical, 1,
       "exact ties split evenly among tied tokens in every row; ties at the k-th follow the "
       "declared tie policy",
       ties_not_applicable, run_ties, planned_ties},
      {"degenerate_rows",
       S,
       check_kind::exact,
       0,
       "NaN / Inf / negative / all-zero rows give valid = 0, neighbours unchanged, bad parameters "
       "refused",
       {},
       run_degenerate_rows, planned_degenerate_rows},
      {"replay",
       S,
       check_kind::exact,
       0,
       "same seed, subsequence and offset give the same tokens",
       {},
       run_replay, planned_replay},
      {"offset_advancement",
       S,
       check_kind::statistical,
       1,
       "calls at offset and offset + declared advance are independent (collision test)",
       {},
       run_offset_advancement, planned_offset_advancement},
      {"per_request_seeds",
       S,
       check_kind::statistical,
       1,
       "seeds [a, b, ...] give independent requests, [a, a, ...] equal ones",
       {},
       run_per_request_seeds, planned_per_request_seeds},
      {"batch_reorder",
       S,
       check_kind::exact,
       0,
       "permuting the requests permutes their tokens",
       {},
       run_batch_reorder, planned_batch_reorder},
      {"parallel_samples",
       S,
       check_kind::statistical,
       1,
       "outputs sharing one input row on distinct subsequences are independent (collision test)",
       {},
       run_parallel_samples, planned_parallel_samples},
      {"parameter_routing", S, check_kind::exact, 0, "per-row parameters follow the row-index map",
       routing_not_applicable, run_parameter_routing, planned_parameter_routing},
      {"tail",
       S,
       check_kind::statistical,
       2,
       "mass on tokens below 1e-5, both directions (tiny and subnormal tails)",
       {},
       run_tail, planned_tail},
      {"spelling_agreement", S, check_kind::exact, 0,
       "two spellings of one rule pick the same token on the same numbers", spelling_not_applicable,
       run_spelling_agreement, planned_spelling_agreement},
      // The same names as the matmul checks below: one meaning (bitwise the same whatever
      // the batch; the same call twice), one spelling in --checks for both kinds.
      {"batch_invariance",
       S,
       check_kind::exact,
       0,
       "a request's token is the same at every batch size 1-4096, slot and batchmates as alone",
       {},
       run_sampler_batch_invariance, planned_sampler_batch_invariance},
      {"run_to_run",
       S,
       check_kind::exact,
       0,
       "the same call repeated gives the same tokens and valid flags",
       {},
       run_sampler_run_to_run, planned_sampler_run_to_run},
      {"round_advancement",
       S,
       check_kind::statistical,
       1,
       "calls one declared advance apart on rows that force many rejection rounds share no "
       "uniforms (collision test)",
       {},
       run_round_advancement, planned_round_advancement},
      {"stream_position",
       S,
       check_kind::statistical,
       1,
       "offsets and subsequences 2^32..2^63 apart give independent draws (collision test)",
       {},
       run_stream_position, planned_stream_position},
      {"stream_agreement", S, check_kind::exact, 0,
       "where the subject declares its uniform_rule, its tokens on unfiltered rows are the rule "
       "evaluated on the reference Philox stream (offsets and subsequences past 2^32)",
       agreement_not_applicable, run_stream_agreement, planned_stream_agreement},
      {"batch_invariance",
       M,
       check_kind::exact,
       0,
       "every batch size gives each row the bits it has alone (probes first / middle / last, bias "
       "on and off)",
       {},
       run_matmul_batch_invariance, planned_matmul_batch_invariance},
      {"run_to_run",
       M,
       check_kind::exact,
       0,
       "repeated launches of one batch give the same bits",
       {},
       run_matmul_run_to_run, planned_matmul_run_to_run},
      {"launch_config_independence", M, check_kind::exact, 0,
       "every declared launch configuration (split and unsplit) gives the subject's own choice's "
       "bits",
       launch_configs_not_applicable, run_matmul_launch_configs, planned_matmul_launch_configs},
      {"accuracy",
       M,
       check_kind::exact,
       0,
       "relative Frobenius error below 1% against the fp64 reference",
       {},
       run_matmul_accuracy, planned_matmul_one_launch},
      {"all_ones",
       M,
       check_kind::exact,
       0,
       "all-ones operands give exactly bf16(K + bias), bias = bf16(K)",
       {},
       run_matmul_all_ones, planned_matmul_one_launch},
      {"short_odd_k",
       M,
       check_kind::exact,
       0,
       "K <= 512, K not a multiple of 8 and K < 8: batch invariance, configurations and accuracy",
       {},
       run_matmul_short_odd_k, planned_matmul_short_odd_k},
  };
  return checks;
}

const check_definition* find_check(std::string_view name) {
  for (const auto& c : all_checks())
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<std::string> check_names() {
  std::vector<std::string> names;
  for (const auto& c : all_checks())
    if (std::find(names.begin(), names.end(), c.name) == names.end()) names.emplace_back(c.name);
  return names;
}

}  // namespace samplecheck::battery
