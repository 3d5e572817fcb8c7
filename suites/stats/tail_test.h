// Tail test: the total count on the tokens whose target probability is below a
// threshold, T = {i : q_i < threshold} (q_i = 0 included: a filtered token that
// appears is tail mass too).
//
// Under the null the tail count C ~ Binomial(n, Q_T), Q_T = sum_{i in T} q_i, exactly
// (each draw lands in T with probability Q_T). p_value is the exact two-sided
// binomial_two_sided_p(C, n, Q_T): too much tail mass (a sampler that flattens the
// tail, S05-style) and too little (one that truncates it) both fail. With Q_T = 0 the
// p-value is 1 if C = 0 and 0 otherwise.
#pragma once

#include <cstdint>
#include <span>

namespace samplecheck::stats {

inline constexpr double kDefaultTailThreshold = 1e-5;

struct tail_result {
  double threshold, expected_mass, observed_fraction, p_value;
  uint64_t count, n;
  int64_t tokens;  // |T|
};

tail_result tail_test(std::span<const uint64_t> counts, std::span<const double> probs,
                      double threshold = kDefaultTailThreshold);

}  // namespace samplecheck::stats
