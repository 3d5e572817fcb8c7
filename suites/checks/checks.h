// The check kit: the run functions of every check (one file per family defines them) and
// register_checks(), which puts them with their names, kinds and applicability into the
// battery's table (suites/battery/check.h).
#pragma once

#include <string>

#include "suites/battery/check.h"
#include "suites/checks/sampling.h"

namespace samplecheck::battery {

// Registers every check into the battery's table, in the order reports print them; each
// program calls it before it plans a run (a second call does nothing).
void register_checks();

check_outcome run_support(const check_context& ctx);
check_outcome run_goodness_of_fit(const check_context& ctx);
check_outcome run_ties(const check_context& ctx);
check_outcome run_tail(const check_context& ctx);
check_outcome run_degenerate_rows(const check_context& ctx);
check_outcome run_replay(const check_context& ctx);
check_outcome run_offset_advancement(const check_context& ctx);
check_outcome run_per_request_seeds(const check_context& ctx);
check_outcome run_batch_reorder(const check_context& ctx);
check_outcome run_parallel_samples(const check_context& ctx);
check_outcome run_parameter_routing(const check_context& ctx);
check_outcome run_spelling_agreement(const check_context& ctx);
check_outcome run_sampler_batch_invariance(const check_context& ctx);
check_outcome run_sampler_run_to_run(const check_context& ctx);
check_outcome run_round_advancement(const check_context& ctx);
// The ties check's two halves: exact ties split evenly among tied IN tokens (every
// sampler, at level alpha), and goodness of fit on rows (the tie policy at the k-th).
check_outcome run_tie_split(const check_context& ctx, double alpha);
check_outcome run_ties_at_k(const check_context& ctx);
check_outcome fit_rows(const check_context& ctx, std::string_view check, uint64_t seed,
                       const std::vector<judged_row>& rows);
// fit_rows' plan: each row's draws at the last look (the most it draws; it may stop early).
struct fit_plan {
  std::vector<uint64_t> draws;
  size_t testable = 0;
  bool capped = false;
  uint64_t samples() const;
};
fit_plan plan_fit(const check_context& ctx, const std::vector<judged_row>& rows);

// The planned samples of each check that states its plan (check_definition::planned_samples),
// by the plan functions its run function draws by.
uint64_t planned_support(const check_context& ctx);
uint64_t planned_goodness_of_fit(const check_context& ctx);
uint64_t planned_ties(const check_context& ctx);
uint64_t planned_tie_split(const check_context& ctx, double alpha);
uint64_t planned_tail(const check_context& ctx);
uint64_t planned_replay(const check_context& ctx);
uint64_t planned_offset_advancement(const check_context& ctx);
uint64_t planned_per_request_seeds(const check_context& ctx);
uint64_t planned_batch_reorder(const check_context& ctx);
uint64_t planned_parallel_samples(const check_context& ctx);
uint64_t planned_sampler_batch_invariance(const check_context& ctx);
uint64_t planned_sampler_run_to_run(const check_context& ctx);
uint64_t planned_matmul_batch_invariance(const check_context& ctx);
uint64_t planned_matmul_run_to_run(const check_context& ctx);
uint64_t planned_matmul_launch_configs(const check_context& ctx);
uint64_t planned_matmul_one_launch(const check_context& ctx);  // accuracy, all_ones
uint64_t planned_matmul_short_odd_k(const check_context& ctx);
uint64_t planned_degenerate_rows(const check_context& ctx);
uint64_t planned_parameter_routing(const check_context& ctx);
uint64_t planned_spelling_agreement(const check_context& ctx);
uint64_t planned_round_advancement(const check_context& ctx);
uint64_t planned_stream_position(const check_context& ctx);
check_outcome run_stream_position(const check_context& ctx);
// stream_agreement (checks_agreement.cpp): tokens against the declared uniform_rule on the
// reference stream.
check_outcome run_stream_agreement(const check_context& ctx);
uint64_t planned_stream_agreement(const check_context& ctx);
std::string agreement_not_applicable(const subject& s, const subject_lookup& lookup);

check_outcome run_matmul_batch_invariance(const check_context& ctx);
check_outcome run_matmul_run_to_run(const check_context& ctx);
check_outcome run_matmul_launch_configs(const check_context& ctx);
check_outcome run_matmul_accuracy(const check_context& ctx);
check_outcome run_matmul_all_ones(const check_context& ctx);
check_outcome run_matmul_short_odd_k(const check_context& ctx);

std::string launch_configs_not_applicable(const subject& s, const subject_lookup& lookup);
std::string ties_not_applicable(const subject& s, const subject_lookup& lookup);
std::string routing_not_applicable(const subject& s, const subject_lookup& lookup);
std::string spelling_not_applicable(const subject& s, const subject_lookup& lookup);
// The subject that claims the same rule on the same random numbers, by name; empty if none.
std::string spelling_partner_name(const subject& s);

}  // namespace samplecheck::battery
