// Collision test: are two streams that should be independent draws from q really
// independent? Pairs (a_j, b_j), j < n, are compared; under the null each pair is
// equal with probability s = sum_i q_i^2 independently, so the collision count
// C ~ Binomial(n, s) exactly. Dependence (a replayed offset, a wrapped subsequence,
// two outputs sharing one uniform) shows as too many equal draws; p_value is the
// exact one-sided upper tail P(X >= C) (Boost cdf of the complement).
//
// The power of this check: detectable_mass_shift(n, s, 2 * alpha) in power.h (the
// one-sided test at alpha is the upper half of the two-sided test at 2 alpha).
#pragma once

#include <cstdint>
#include <span>

namespace samplecheck::stats {

struct collision_result {
  uint64_t collisions, pairs;
  double expected;  // n * s
  double p_value;
  double collision_prob;  // s
};

// a and b have equal length > 0; every token in [0, probs.size()) (else invalid_argument
// naming the stream and index); probs as in goodness_of_fit.
collision_result collision_test(std::span<const int32_t> a, std::span<const int32_t> b,
                                std::span<const double> probs);

}  // namespace samplecheck::stats
