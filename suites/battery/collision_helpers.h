// What the checks built on collision tests share (checks_streams.cpp defines them):
// the pairs a collision test needs, the collision probability of a row, and a call
// whose every output must come back valid.
#pragma once

#include <cstdint>
#include <string_view>

#include "suites/battery/check.h"
#include "suites/battery/sampling.h"

namespace samplecheck::battery {

// Pairs a collision test needs so that an excess collision rate of the budget's
// collision_shift is detected with probability power (one-sided at alpha: two-sided at
// 2 alpha), at most max_pairs.
uint64_t collision_pairs_for(const check_context& ctx, double s, uint64_t max_pairs, double alpha);

// sum_i q_i^2: the probability that two independent draws are equal.
double collision_prob(const filtered_distribution& d);

// Runs a call; any error or invalid output of a valid row is an exact failure (false).
bool run_valid(const check_context& ctx, sample_call& call, std::string_view what,
               check_outcome& out);

}  // namespace samplecheck::battery
