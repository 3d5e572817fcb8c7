// The check kit: register_checks() puts every check into the battery's table
// (suites/battery/check.h). A check is one row function beside its run and plan functions
// in its family's file (checks_<family>.cpp), declared here and listed once in
// register_checks() (checks.cpp), which fixes the order reports print them in.
#pragma once

#include <string>
#include <vector>

#include "suites/battery/check.h"
#include "suites/checks/sampling.h"

namespace samplecheck::checks {

// Registers every check into the battery's table, in the order reports print them; each
// program calls it before it plans a run (a second call does nothing).
void register_checks();

// Each check's row of the table: name, kind, weight, what it judges, when it is n/a, and
// its run and plan functions.
battery::check_definition support_check();                        // checks_distribution.cpp
battery::check_definition goodness_of_fit_check();                // checks_distribution.cpp
battery::check_definition ties_check();                           // checks_distribution.cpp
battery::check_definition degenerate_rows_check();                // checks_rows.cpp
battery::check_definition replay_check();                         // checks_streams.cpp
battery::check_definition offset_advancement_check();             // checks_streams.cpp
battery::check_definition per_request_seeds_check();              // checks_streams.cpp
battery::check_definition batch_reorder_check();                  // checks_streams.cpp
battery::check_definition parallel_samples_check();               // checks_streams.cpp
battery::check_definition parameter_routing_check();              // checks_rows.cpp
battery::check_definition tail_check();                           // checks_tail.cpp
battery::check_definition spelling_agreement_check();             // checks_spelling.cpp
battery::check_definition sampler_batch_invariance_check();       // checks_batch.cpp
battery::check_definition sampler_run_to_run_check();             // checks_batch.cpp
battery::check_definition round_advancement_check();              // checks_contract.cpp
battery::check_definition stream_position_check();                // checks_contract.cpp
battery::check_definition stream_agreement_check();               // checks_agreement.cpp
battery::check_definition matmul_batch_invariance_check();        // checks_matmul.cpp
battery::check_definition matmul_run_to_run_check();              // checks_matmul.cpp
battery::check_definition matmul_launch_configs_check();          // checks_matmul.cpp
battery::check_definition matmul_accuracy_check();                // checks_matmul.cpp
battery::check_definition matmul_all_ones_check();                // checks_matmul.cpp
battery::check_definition matmul_short_odd_k_check();             // checks_matmul.cpp
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
