// Per-token exact binomial checks, so that a failure names the tokens it is about.
//
// Under the null, token i's count N_i ~ Binomial(n, q_i). Each token gets level
// alpha / V (Bonferroni over the V tokens given), so P(any correct token is reported)
// <= alpha. Token i is reported when q_i lies outside its two-sided Clopper-Pearson
// interval at that level; equivalently (that is how the interval is defined) when the
// exact one-sided tail in the observed direction, P(X >= N_i) or P(X <= N_i), is
// <= alpha / (2 V). The tail is evaluated for every token (one Boost cdf each); the
// interval (binomial_distribution::find_lower/upper_bound_on_p) only for reported ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace samplecheck::stats {

struct token_deviation {
  int64_t token;
  uint64_t count;
  double expected_p, lower, upper;  // Clopper-Pearson interval at level alpha / V
  bool over;                        // observed more often than q predicts
  double p_value;                   // exact two-sided p (2 x the tail), before Bonferroni
};

// Reported tokens, most severe (smallest p_value; ties by token id) first, at most
// max_report of them. An empty result means no token deviates at family level alpha.
std::vector<token_deviation> deviating_tokens(std::span<const uint64_t> counts,
                                              std::span<const double> probs, double alpha,
                                              size_t max_report = 10);

// Exact two-sided p-value of k successes in n trials at probability p: twice the
// smaller tail, min(1, 2 min(P(X <= k), P(X >= k))), through Boost's binomial cdf and
// its complement. Valid (conservative) for every n and p.
double binomial_two_sided_p(uint64_t k, uint64_t n, double p);

// The two tails on their own, P(X <= k) and P(X >= k), exact, with p = 0 and 1 handled.
double binomial_lower_tail(uint64_t k, uint64_t n, double p);
double binomial_upper_tail(uint64_t k, uint64_t n, double p);

}  // namespace samplecheck::stats
