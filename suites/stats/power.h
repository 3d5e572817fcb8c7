// Power: the smallest deviation each check detects with probability `power` (0.99 by
// default) at the samples used, and the sample counts a power target requires.
//
// Chi-square checks (Pearson over K = df + 1 merged cells at level alpha): under an
// alternative p the statistic is asymptotically non-central chi-square with df degrees
// of freedom and non-centrality lambda = n * chi2(p || q), chi2(p || q) =
// sum_k (p_k - q_k)^2 / q_k (the standard local-alternative limit; Cochran's conditions
// as for the null). noncentrality_for_power gives lambda* with
//   P(ncx2(df, lambda*) > chi_square_critical(df, alpha)) = power,
// and power grows with lambda. By Cauchy-Schwarz,
//   2 TV = sum_k |p_k - q_k| / sqrt(q_k) * sqrt(q_k) <= sqrt(chi2(p || q)),
// i.e. chi2 >= 4 TV^2, so every alternative at TV >= eps has lambda >= 4 n eps^2.
// Hence detectable_tvd = sqrt(lambda* / (4 n)), samples_for_tvd = ceil(lambda* / (4 eps^2)).
// Equality holds when |p_k - q_k| is proportional to q_k, the worst case the power test
// plants. The TVD is over the merged cells (tvd.h says why that is what is seen).
// These figures are for goodness_of_fit's p_pearson. Its exact-moment reference
// c * chi2(nu) has c > 1 when cells have unequal E, which the formulas above ignore;
// the promise still held in simulation (tests/test_power.cpp: K = 1,646, c = 1.042,
// 299/300 rejected; off-line K = 10,235, c = 1.047, alpha 1e-7: 297/300). G at the same
// alternative: 292/300, so quote G's power only loosely.
//
// Binomial checks (tail, collision, support-like counts): detectable_mass_shift(n, p0,
// alpha) is the smallest delta such that the exact two-sided test of tail_test at level
// alpha (binomial_two_sided_p <= alpha) rejects p = p0 + delta with probability >=
// power. Computed exactly: c = the smallest count with P(X >= c | p0) <= alpha / 2, then
// p1 with P(X >= c | p1) = power (the Clopper-Pearson inversion). Upward shifts are the
// ones reported because a tail or collision failure is excess mass; for the one-sided
// collision test at alpha pass 2 * alpha. Returns +infinity if no p1 <= 1 reaches it.
// detectable_mass_loss is its mirror for a deficit: c = the largest count with
// P(X <= c | p0) <= alpha / 2, then p1 with P(X <= c | p1) = power; a tail that keeps
// only part of its mass (a noise capped below the tail's gap, S23) is such a deficit.
// Returns +infinity if no count rejects (P(X = 0 | p0) > alpha / 2).
#pragma once

#include <cstdint>

namespace samplecheck::stats {

// quantile(complement(chi_squared(df), alpha)): X2 above it rejects at level alpha.
double chi_square_critical(int64_t df, double alpha);
// lambda with P(ncx2(df, lambda) > chi_square_critical(df, alpha)) = power (Boost's
// non_central_chi_squared::find_non_centrality root-find).
double noncentrality_for_power(int64_t df, double alpha, double power = 0.99);
double detectable_tvd(int64_t df, double alpha, uint64_t n, double power = 0.99);
uint64_t samples_for_tvd(int64_t df, double alpha, double tvd, double power = 0.99);
double detectable_mass_shift(uint64_t n, double p0, double alpha, double power = 0.99);
double detectable_mass_loss(uint64_t n, double p0, double alpha, double power = 0.99);

// The count c above: the exact two-sided test at alpha rejects whenever X >= c.
uint64_t binomial_upper_critical(uint64_t n, double p0, double alpha);
// Its mirror: the test rejects whenever X <= c; -1 where no count does.
int64_t binomial_lower_critical(uint64_t n, double p0, double alpha);

}  // namespace samplecheck::stats
