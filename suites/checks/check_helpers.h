// Small pieces every check uses: per-check seeds, the fixture rows of a budget, and
// outcome formatting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "suites/battery/check.h"
#include "suites/checks/sampling.h"

namespace samplecheck::checks {

// Shapes x the subject's parameter grid (fixtures::parameter_grid) at the budget's V.
// Unfiltered rows for every shape in `unfiltered`, every grid setting for `filtered`.
std::vector<judged_row> grid_rows(const battery::subject& s, const battery::budget_settings& b,
                                  uint64_t seed, const std::vector<fixtures::shape>& filtered,
                                  const std::vector<fixtures::shape>& unfiltered);

// The filters whose parameters the subject reads (temperature only for logits).
uint32_t declared_params(const battery::subject& s);

// Rows at V = 65,535 and 65,537 whatever the budget's V (one list each: a call holds one
// V), so a path switched at 65,536 is reached: the peaked shape unfiltered and under one
// setting drawn from the seed; at 65,537 also the high_ids shape, unfiltered and (where
// top-k is declared) at k = 8. Empty where the budget turns them off (wide_vocab).
std::vector<std::vector<judged_row>> wide_vocab_rows(const battery::check_context& ctx,
                                                     uint64_t seed);

// Rows the reference rejected are a harness error (a fixture that is not a valid
// input): the message names the row and the reference's field and index.
// Whether the subject is sent rows that do not sum to 1 (the subnormal shape, which holds
// ~6e-37 in all): not to one that declares probs_normalisation assume_sum_one.
bool sends_unnormalised_rows(const battery::subject& s);

std::string reference_errors(const std::vector<judged_row>& rows);

// The start of a check's evidence in its reproduction record: the check's derived seed
// (the run's subject, budget, seed, V and dtype are the record's own fields).
nlohmann::json repro_base(uint64_t check_seed);

// The draws of a plan: the sum over its rows.
uint64_t total_draws(const std::vector<uint64_t>& draws_per_row);

// "the smallest OUT-token rate seen with probability 0.99 at n draws" = 1 - 0.01^(1/n).
std::string exact_power(uint64_t draws, std::string_view what);

// A drawing failure (a refused or broken call) or the first OUT token of any row, as the
// check's exact failure; `where` adds what locates the draws (their plan, the look).
// `rows` are the buckets' rows where `buckets` is given; the record names the input row, and
// `first[input row]` as its first_subsequence (draw j of the row: (seed, first + j, offset 0)).
bool report_support_failure(const std::vector<judged_row>& rows, const drawn_counts& drawn,
                            uint64_t seed, const nlohmann::json& where,
                            const std::vector<uint64_t>& first, const route_buckets* buckets,
                            battery::check_outcome& out);

// Draws, then the first OUT token of any row (an exact failure).
bool draw_and_check_support(const battery::check_context& ctx, uint64_t seed,
                            const std::vector<judged_row>& rows, const std::vector<uint64_t>& draws,
                            drawn_counts& drawn, battery::check_outcome& out);

}  // namespace samplecheck::checks
