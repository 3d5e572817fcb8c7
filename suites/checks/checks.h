// The check kit: register_checks() puts every check into the battery's table
// (suites/battery/check.h). A check is a run and a plan function in its family's file
// (checks_<family>.cpp), declared here and named by its row of the one table in checks.cpp,
// which fixes the order reports print them in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "suites/battery/check.h"
#include "suites/checks/sampling.h"

namespace samplecheck::checks {

// Registers every check into the battery's table, in the order reports print them; each
// program calls it before it plans a run (a second call does nothing).
void register_checks();

// The run and plan functions the table names (and when a check is n/a), by family file.
// checks_agreement.cpp
battery::check_outcome run_stream_agreement(const battery::check_context& ctx);
uint64_t planned_stream_agreement(const battery::check_context& ctx);
std::string agreement_not_applicable(const battery::subject& s,
                                     const battery::subject_lookup& lookup);
// checks_batch.cpp
battery::check_outcome run_sampler_batch_invariance(const battery::check_context& ctx);
uint64_t planned_sampler_batch_invariance(const battery::check_context& ctx);
battery::check_outcome run_sampler_run_to_run(const battery::check_context& ctx);
uint64_t planned_sampler_run_to_run(const battery::check_context& ctx);
// checks_contract.cpp
battery::check_outcome run_round_advancement(const battery::check_context& ctx);
uint64_t planned_round_advancement(const battery::check_context& ctx);
battery::check_outcome run_stream_position(const battery::check_context& ctx);
uint64_t planned_stream_position(const battery::check_context& ctx);
// checks_distribution.cpp
battery::check_outcome run_support(const battery::check_context& ctx);
uint64_t planned_support(const battery::check_context& ctx);
battery::check_outcome run_goodness_of_fit(const battery::check_context& ctx);
uint64_t planned_goodness_of_fit(const battery::check_context& ctx);
battery::check_outcome run_ties(const battery::check_context& ctx);
uint64_t planned_ties(const battery::check_context& ctx);
std::string ties_not_applicable(const battery::subject& s, const battery::subject_lookup& lookup);
// checks_rows.cpp
battery::check_outcome run_degenerate_rows(const battery::check_context& ctx);
uint64_t planned_degenerate_rows(const battery::check_context& ctx);
battery::check_outcome run_parameter_routing(const battery::check_context& ctx);
uint64_t planned_parameter_routing(const battery::check_context& ctx);
std::string routing_not_applicable(const battery::subject& s,
                                   const battery::subject_lookup& lookup);
// checks_spelling.cpp
battery::check_outcome run_spelling_agreement(const battery::check_context& ctx);
uint64_t planned_spelling_agreement(const battery::check_context& ctx);
std::string spelling_not_applicable(const battery::subject& s,
                                    const battery::subject_lookup& lookup);
// checks_streams.cpp
battery::check_outcome run_replay(const battery::check_context& ctx);
uint64_t planned_replay(const battery::check_context& ctx);
battery::check_outcome run_offset_advancement(const battery::check_context& ctx);
uint64_t planned_offset_advancement(const battery::check_context& ctx);
battery::check_outcome run_per_request_seeds(const battery::check_context& ctx);
uint64_t planned_per_request_seeds(const battery::check_context& ctx);
battery::check_outcome run_batch_reorder(const battery::check_context& ctx);
uint64_t planned_batch_reorder(const battery::check_context& ctx);
battery::check_outcome run_parallel_samples(const battery::check_context& ctx);
uint64_t planned_parallel_samples(const battery::check_context& ctx);
// checks_tail.cpp
battery::check_outcome run_tail(const battery::check_context& ctx);
uint64_t planned_tail(const battery::check_context& ctx);
// checks_matmul.cpp
battery::check_outcome run_matmul_batch_invariance(const battery::check_context& ctx);
uint64_t planned_matmul_batch_invariance(const battery::check_context& ctx);
battery::check_outcome run_matmul_run_to_run(const battery::check_context& ctx);
uint64_t planned_matmul_run_to_run(const battery::check_context& ctx);
battery::check_outcome run_matmul_launch_configs(const battery::check_context& ctx);
uint64_t planned_matmul_launch_configs(const battery::check_context& ctx);
std::string launch_configs_not_applicable(const battery::subject& s,
                                          const battery::subject_lookup& lookup);
battery::check_outcome run_matmul_accuracy(const battery::check_context& ctx);
uint64_t planned_matmul_one_launch(const battery::check_context& ctx);
battery::check_outcome run_matmul_all_ones(const battery::check_context& ctx);
battery::check_outcome run_matmul_short_odd_k(const battery::check_context& ctx);
uint64_t planned_matmul_short_odd_k(const battery::check_context& ctx);
// checks_collective.cpp: its rows, each beside its n/a rule.
battery::check_definition collective_message_invariance_check();  // checks_collective.cpp
battery::check_definition collective_run_to_run_check();          // checks_collective.cpp
battery::check_definition collective_tp_invariance_check();       // checks_collective.cpp

// The ties check's two halves: exact ties split evenly among tied IN tokens (every
// sampler, at level alpha; checks_ties.cpp), and goodness of fit on rows (the tie policy
// at the k-th; checks_distribution.cpp).
battery::check_outcome run_tie_split(const battery::check_context& ctx, double alpha);
uint64_t planned_tie_split(const battery::check_context& ctx, double alpha);
battery::check_outcome run_ties_at_k(const battery::check_context& ctx);
// buckets: bucket_by_route of `rows`, judged in their place (each draw by its reported
// route's reference; the ties check); null: the rows themselves.
battery::check_outcome fit_rows(const battery::check_context& ctx, uint64_t seed,
                                const std::vector<judged_row>& rows,
                                const route_buckets* buckets = nullptr);
// fit_rows' plan: each row's draws at the last look (the most it draws; it may stop early).
struct fit_plan {
  std::vector<uint64_t> draws;
  size_t testable = 0;
  bool capped = false;
  uint64_t samples() const;
};
fit_plan plan_fit(const battery::check_context& ctx, const std::vector<judged_row>& rows,
                  const route_buckets* buckets = nullptr);

}  // namespace samplecheck::checks
