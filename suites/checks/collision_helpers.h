// What the checks built on collision tests share (checks_streams.cpp defines them):
// the pairs a collision test needs, the collision probability of a row, a call whose
// every output must come back valid, and the randomised p-value of a collision count.
#pragma once

#include <cstdint>
#include <string_view>

#include "suites/battery/check.h"
#include "suites/checks/sampling.h"
#include "suites/stats/collision_test.h"

namespace samplecheck::checks {

// Pairs a collision test needs so that an excess collision rate of the budget's
// collision_shift is detected with probability power (one-sided at alpha: two-sided at
// 2 alpha), at most max_pairs.
uint64_t collision_pairs_for(const battery::check_context& ctx, double s, uint64_t max_pairs,
                             double alpha);

// sum_i q_i^2: the probability that two independent draws are equal.
double collision_prob(const filtered_distribution& d);

// Runs a call; any error or invalid output of a valid row is an exact failure (false).
bool run_valid(const battery::check_context& ctx, harness::sample_call& call, std::string_view what,
               battery::check_outcome& out);

// The randomised p-value P(X > C) + u P(X = C) of a check's collision test number
// `part` (stats/combine.h): exactly uniform under the null, where the plain P(X >= C)
// is 1 whenever no pair collides (most runs: a flat row expects less than one equal
// pair). u is stats::randomisation_uniform(seed, 0, part): fixed by the run seed, so a
// replay reproduces the p-value, and independent of the tokens. A check with several
// parts combines them by Sidak.
double randomized_collision_p(uint64_t seed, uint64_t part, const stats::collision_result& c);

}  // namespace samplecheck::checks
