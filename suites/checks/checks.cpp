#include "suites/checks/checks.h"

#include <mutex>

namespace samplecheck::checks {
namespace {

using battery::subject_kind;

// A row of the table: plain function pointers, so that the table is constant-initialised
// and register_checks() may run before this file's dynamic initialisation.
struct check_row {
  std::string_view name;
  subject_kind applies_to;
  battery::check_kind kind;
  double weight;
  std::string_view what;
  battery::check_outcome (*run)(const battery::check_context&);
  uint64_t (*planned)(const battery::check_context&);
  std::string (*not_applicable)(const battery::subject&, const battery::subject_lookup&);

  // A null not_applicable gives an empty std::function: the check always applies.
  battery::check_definition definition() const {
    return {name, applies_to, kind, weight, what, not_applicable, run, planned};
  }
};

// An exact check takes no share of the Holm budget (weight 0).
constexpr check_row exact_check(subject_kind kind, std::string_view name, std::string_view what,
                                decltype(check_row::run) run, decltype(check_row::planned) planned,
                                decltype(check_row::not_applicable) not_applicable = nullptr) {
  return {name, kind, battery::check_kind::exact, 0, what, run, planned, not_applicable};
}

// Every statistical check judges a sampler; `weight` is its share of the Holm budget.
constexpr check_row statistical_check(
    std::string_view name, double weight, std::string_view what, decltype(check_row::run) run,
    decltype(check_row::planned) planned,
    decltype(check_row::not_applicable) not_applicable = nullptr) {
  return {name,    subject_kind::sampler, battery::check_kind::statistical, weight, what, run,
          planned, not_applicable};
}

// Every sampler and matmul check, in the order reports print them: name, what it judges,
// its run and plan functions, and when it is n/a. The collectives' rows follow (their n/a
// rules are lambdas beside them, checks_collective.cpp).
constexpr check_row kChecks[] = {
    exact_check(subject_kind::sampler, "support",
                "no OUT token, no id outside [0, V), no valid = 0 on a valid row", run_support,
                planned_support),
    statistical_check(
        "goodness_of_fit", 4,
        "chi-square, cumulative-mass cuts and single tokens on the IN-conditional "
        "distribution, BOUNDARY count in range; Sidak-combined, group-sequential looks",
        run_goodness_of_fit, planned_goodness_of_fit),
    statistical_check("ties", 1,
                      "exact ties split evenly among tied tokens in every row; ties at the "
                      "k-th follow the declared tie policy",
                      run_ties, planned_ties, ties_not_applicable),
    exact_check(subject_kind::sampler, "degenerate_rows",
                "NaN / Inf / negative / all-zero rows give valid = 0, neighbours unchanged, "
                "bad parameters refused",
                run_degenerate_rows, planned_degenerate_rows),
    exact_check(subject_kind::sampler, "replay",
                "same seed, subsequence and offset give the same tokens", run_replay,
                planned_replay),
    statistical_check(
        "offset_advancement", 1,
        "calls at offset and offset + declared advance are independent (collision test)",
        run_offset_advancement, planned_offset_advancement),
    statistical_check("per_request_seeds", 1,
                      "seeds [a, b, ...] give independent requests, [a, a, ...] equal ones",
                      run_per_request_seeds, planned_per_request_seeds),
    exact_check(subject_kind::sampler, "batch_reorder",
                "permuting the requests permutes their tokens", run_batch_reorder,
                planned_batch_reorder),
    statistical_check("parallel_samples", 1,
                      "outputs sharing one input row on distinct subsequences are independent "
                      "(collision test)",
                      run_parallel_samples, planned_parallel_samples),
    exact_check(subject_kind::sampler, "parameter_routing",
                "per-row parameters follow the row-index map", run_parameter_routing,
                planned_parameter_routing, routing_not_applicable),
    statistical_check("tail", 2,
                      "mass on tokens below 1e-5, both directions (tiny and subnormal tails)",
                      run_tail, planned_tail),
    exact_check(subject_kind::sampler, "spelling_agreement",
                "two spellings of one rule pick the same token on the same numbers",
                run_spelling_agreement, planned_spelling_agreement, spelling_not_applicable),
    exact_check(subject_kind::sampler, "batch_invariance",
                "a request's token is the same at every batch size 1-4096, slot and batchmates "
                "as alone",
                run_sampler_batch_invariance, planned_sampler_batch_invariance),
    exact_check(subject_kind::sampler, "run_to_run",
                "the same call repeated gives the same tokens and valid flags",
                run_sampler_run_to_run, planned_sampler_run_to_run),
    statistical_check("round_advancement", 1,
                      "calls one declared advance apart on rows that force many rejection "
                      "rounds share no uniforms (collision test)",
                      run_round_advancement, planned_round_advancement),
    statistical_check(
        "stream_position", 1,
        "offsets and subsequences 2^32..2^63 apart give independent draws (collision test)",
        run_stream_position, planned_stream_position),
    exact_check(
        subject_kind::sampler, "stream_agreement",
        "where the subject declares its uniform_rule, its tokens on unfiltered rows are the "
        "rule evaluated on the reference Philox stream (offsets and subsequences past 2^32)",
        run_stream_agreement, planned_stream_agreement, agreement_not_applicable),
    exact_check(subject_kind::matmul, "batch_invariance",
                "every batch size gives each row the bits it has alone (probes first / middle "
                "/ last, bias on and off)",
                run_matmul_batch_invariance, planned_matmul_batch_invariance),
    exact_check(subject_kind::matmul, "run_to_run",
                "repeated launches of one batch give the same bits", run_matmul_run_to_run,
                planned_matmul_run_to_run),
    exact_check(subject_kind::matmul, "launch_config_independence",
                "every declared launch configuration (split and unsplit) gives the subject's "
                "own choice's bits",
                run_matmul_launch_configs, planned_matmul_launch_configs,
                launch_configs_not_applicable),
    exact_check(subject_kind::matmul, "accuracy",
                "relative Frobenius error below 1% against the fp64 reference", run_matmul_accuracy,
                planned_matmul_one_launch),
    exact_check(subject_kind::matmul, "all_ones",
                "all-ones operands give exactly bf16(K + bias), bias = bf16(K)",
                run_matmul_all_ones, planned_matmul_one_launch),
    exact_check(subject_kind::matmul, "short_odd_k",
                "K <= 512, K not a multiple of 8 and K < 8: batch invariance, configurations "
                "and accuracy",
                run_matmul_short_odd_k, planned_matmul_short_odd_k),
};

}  // namespace

void register_checks() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const check_row& row : kChecks) battery::register_check(row.definition());
    for (const auto row : {collective_message_invariance_check, collective_run_to_run_check,
                           collective_tp_invariance_check})
      battery::register_check(row());
  });
}

}  // namespace samplecheck::checks
