// Goodness of fit of observed token counts to a reference distribution q.
//
// Cells: merge_by_expected pools tokens using the expected counts n * q_i ONLY, so
// the partition is fixed before the samples are seen and the chi-square reference
// distribution applies. Tokens with q_i = 0 belong to no cell: any count on one is
// impossible under the null and makes every p-value 0.
//
// Pearson: X2 = sum_k (O_k - E_k)^2 / E_k.  G-test: G = 2 sum_k O_k ln(O_k / E_k).
// Reference distributions (upper tails through Boost's complement), chosen so that
// rows of 150k tokens (tens of thousands of cells near E = 5) stay calibrated at the
// tiny per-check levels a 1e-6 budget gives:
//  - Pearson: its exact multinomial moments are E[X2] = K - 1 and
//    Var[X2] = 2 (K - 1) + (sum_k 1 / pi_k - K^2 - 2 K + 2) / n  (pi_k = E_k / n; Haldane
//    1937). X2 is referred to c * chi_squared(nu) with the same two moments:
//    c = Var / (2 (K - 1)), nu = (K - 1) / c. (With plain chi_squared(K - 1) the
//    variance is off by about 1 / (2 E) per cell.)
//  - G: per cell, G_k = 2 (O_k ln(O_k / E_k) - O_k + E_k) (the -O + E terms sum to 0).
//    Under Poissonization the cells are independent Poisson(E_k), and the mean and
//    variance of each G_k are summed exactly over the Poisson pmf (Boost's poisson pdf,
//    then the pmf recurrence, over E +- (12 sqrt(E) + 12)); the multinomial G is the
//    Poissonized one minus the deviance of the total count, so its moments are
//    M = sum_k mean(E_k) - mean(n), S = sum_k var(E_k) - var(n). G is referred to
//    c * chi_squared(nu) with c = S / (2 M), nu = 2 M^2 / S: plain chi_squared(K - 1)
//    and Williams' correction both put G's mean too high on large rows
//    (docs/judging-power/power.md, "Figures behind the statistics' comments").
//    Cells with E > 1e6 use mean 1 and variance 2 (their corrections are < 1e-6).
// Both are approximations that need every E_k >= 5 (Cochran), which cell_min_expected
// guarantees; they are not exact, and tests/test_goodness_of_fit.cpp measures their
// false-alarm rate. With one cell there is nothing to test: df = 0 and p = 1.
//
// identity_test: the statistic of Acharya, Daskalakis & Kamath (NeurIPS 2015),
//   Z = sum_{cells} ((N_k - m q_k)^2 - N_k) / (m q_k),
// over one cell per token with q_i >= floor, plus one pooled cell holding every token
// with 0 < q_i < floor (those tokens are left to tail_test individually). Its null
// moments under fixed-m multinomial sampling, derived from factorial moments
// (E[N_k^(r)] = m^(r) q_k^r, E[N_j^(r) N_k^(s)] = m^(r+s) q_j^r q_k^s), are exact:
//   E[Z]   = -Q,   Q = sum of q over the cells (= 1: probs are renormalised)
//   Var[Z] = 2 (1 - 3/m) Q^2 - 4 (1 - 2/m) Q + 2 (1 - 1/m) C,   C = number of cells.
// (Poissonized, each term has mean 0 and variance 2; the multinomial terms above are
// the correction.) The p-value is one-sided (too large Z = too far from q) by
// Cantelli's inequality: P(Z >= z) <= Var / (Var + (z + Q)^2) for z + Q > 0, else 1.
// It assumes nothing about the shape of Z, so it is valid for any row, however sparse
// or long-tailed, and any m; the price is power (z must reach about sigma/sqrt(alpha)).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace samplecheck::stats {

// The default floor of identity_test equals tail_test's default threshold, so the two
// checks split the support between them.
inline constexpr double kDefaultIdentityFloor = 1e-5;

struct merged_cells {
  std::vector<uint64_t> observed;
  std::vector<double> expected;
  std::vector<std::vector<int64_t>> members;  // token ids of each cell
  std::vector<int64_t> zero_probability;      // tokens with q = 0 (in no cell)
  uint64_t observed_zero_probability = 0;     // samples that landed on them
};

// The smallest expected count of a merged cell at n draws: Cochran's 5, or n^2 2^-24 / 64
// where larger (n above ~73,000), so that every cell holds at least n 2^-30 of the row's
// mass. A correct subject computing in float32 with a 24-bit uniform (cuRAND's) draws each
// token with a whole number of 2^-24 steps of its running sum, about half a step off
// n q_i's share: on a row of 140,000 tail tokens of ~20 steps that is ~2.5% a token, and
// over cells of E = 5 it moves X2 by 600-1,800 at n = 8e6, one to three standard deviations
// (H100, 2026-12-06: correct CUDA samplers at p ~1e-3 on the long_tail row). A cell of mass P
// sums its tokens' errors to ~(P 2^-24 k)^(1/2), so each cell adds ~n k 2^-24 / P to X2's
// mean and the cells together ~k n 2^-24 / P_min: with P_min = n 2^-30 that is 64 k, ~0.3
// at any n (docs/judging-power/resolution.md has the measurement).
double cell_min_expected(uint64_t n);

// The cells of tokens already in q-descending order (q_sorted, all > 0): each token with
// n q_i >= min_expected is its own cell; the smaller ones are pooled in that order until
// the pool reaches min_expected; a final pool below min_expected joins the last cell.
// min_expected defaults to cell_min_expected(n).
// end[k] is the position one past cell k. A function of q and n alone.
struct cell_partition {
  std::vector<size_t> end;
  std::vector<double> expected;
};
cell_partition partition_by_expected(std::span<const double> q_sorted, uint64_t n,
                                     std::optional<double> min_expected = {});

// Tokens sorted by q descending (ties by token id), then partition_by_expected. counts
// must sum to n.
merged_cells merge_by_expected(std::span<const uint64_t> counts, std::span<const double> probs,
                               uint64_t n, std::optional<double> min_expected = {});

struct gof_result {
  double pearson = 0, g_statistic = 0;  // raw X2 and G
  int64_t df = 0;                       // cells - 1
  double p_pearson = 0, p_g = 0;
  int64_t cells = 0;
  uint64_t n = 0;
  uint64_t observed_zero_probability = 0;    // > 0 forces both p-values to 0
  double pearson_variance = 0;               // exact null Var[X2]
  double pearson_scale = 0, pearson_nu = 0;  // X2 ~ c * chi_squared(nu) under the null
  double g_mean = 0, g_variance = 0;         // null moments of G (M, S above)
  double g_scale = 0, g_nu = 0;              // G ~ c * chi_squared(nu) under the null
};

// Pearson's X2 over cells with these expected counts at n draws is referred to
// scale * chi_squared(nu), with its exact multinomial variance (above); df = cells - 1 > 0.
struct pearson_reference {
  double variance, scale, nu;
};
pearson_reference pearson_null(std::span<const double> expected, uint64_t n);

// P(chi_squared(df) > x) through Boost's complement (scipy's chi2.sf); df > 0 need not
// be an integer; x <= 0 gives 1 and x = +inf gives 0. Every chi-square p-value of the
// project, the peers' rules included, comes from here. Throws std::invalid_argument
// naming df and x when df is not finite and positive or x is NaN: a statistic that
// cannot be referred is a bug upstream, not a p-value.
double chi_square_upper_tail(double df, double x);
// probs sum to 1 over the support given (tolerance 1e-6; renormalised).
gof_result goodness_of_fit(std::span<const uint64_t> counts, std::span<const double> probs,
                           std::optional<double> min_expected = {});

struct identity_result {
  double statistic, null_sd, p_value;
  int64_t cells;
  double floor;
  double null_mean;  // -Q
};
identity_result identity_test(std::span<const uint64_t> counts, std::span<const double> probs);
identity_result identity_test(std::span<const uint64_t> counts, std::span<const double> probs,
                              double floor);

}  // namespace samplecheck::stats
