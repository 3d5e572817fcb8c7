// Combining p-values of independent sub-tests into one p-value that stays uniform
// under the null, and the levels that size each sub-test's samples.
//
// Sidak over the minimum: for k independent p-values, each uniform under the null,
//   P(min_i p_i <= x) = 1 - (1 - x)^k,  so  p = 1 - (1 - min_i p_i)^k
// is exactly uniform (Bonferroni's k * min p is its upper bound and piles mass at 1:
// with k = 30 sub-tests it equals 1 in about 37% of null runs). The battery's rows
// are drawn on disjoint Philox subsequences, so their p-values are independent; a
// row's Pearson statistic (IN-conditional counts) and its BOUNDARY count are
// independent too (given the BOUNDARY count the IN counts are multinomial). Sidak is
// chosen over Fisher or Stouffer because the defects it must see usually sit in one
// row (one filter setting, one shape): the minimum keeps each row's own power, which
// is exactly what a row's plan is sized for (sidak_level), whereas Fisher spreads it.
//
// Randomised p-values: a count statistic X with null cdf F has the discrete p-value
// P(X >= x), which is super-uniform (collisions with an expected count of 0.4 give
// p = 1 in 67% of null runs). p = P(X > x) + u P(X = x), with u uniform on [0, 1),
// is exactly uniform; u comes from the check's own Philox stream, so a replay
// reproduces it. It rejects whenever the plain p-value does, so its power is at least
// that of the plain test. Two-sided: with F = P(X < x) + u P(X = x), exactly uniform,
// p = 2 min(F, 1 - F) is exactly uniform too, where the doubled exact tail
// 2 min(P(X <= x), P(X >= x)) counts the atom twice (a token expecting 20 draws has
// P(X = x) up to 0.09): it is below x with probability < x, and Sidak's minimum over
// a family of them piles towards 1.
#pragma once

#include <cstdint>
#include <span>

namespace samplecheck::stats {

// 1 - (1 - p_min)^k, computed as -expm1(k log1p(-p_min)); k >= 1.
double sidak_combine(double p_min, uint64_t k);
// The per-test level x with 1 - (1 - x)^k = alpha: k tests each at x reject with
// probability alpha together.
double sidak_level(double alpha, uint64_t k);
// A part's p-value p at its share w of a level (weighted Bonferroni), without piling at
// 1: p / w up to p = w / 2 (so P(result <= x) <= w x for every x <= 1/2, the levels
// that matter), then mapped linearly onto [1/2, 1]; uniform p gives a result whose
// median is 1/2 rather than min(1, p / w)'s w / 2 of its mass at exactly 1.
double weighted_share_p(double p, double w);
// min over p of Sidak; 1 for an empty span.
double sidak_min(std::span<const double> p);

// P(X > k) + u P(X = k), X ~ Binomial(n, p); u in [0, 1).
double binomial_randomized_upper_tail(uint64_t k, uint64_t n, double p, double u);
// 2 min(F, 1 - F), F = P(X < k) + u P(X = k); u in [0, 1). Rejects whenever the
// doubled exact tail does (it is never larger).
double binomial_randomized_two_sided_p(uint64_t k, uint64_t n, double p, double u);

// The u of randomised p-value `index` of randomisation stream `stream` under `seed`
// (a check's seed): output `index` of Philox (seed, 2^63 + stream, 0) / 2^32. No draw
// of a check uses subsequences from 2^63 on, so u is independent of the tokens, fixed
// by the run seed (never by time), and a replay reproduces the p-value.
double randomisation_uniform(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace samplecheck::stats
