// Are p-values uniform on [0, 1]? What `samplecheck calibrate` asks of every
// statistical check's p-values over many fresh-seed runs of a correct subject.
//
//  - Kolmogorov-Smirnov: D = sup |F_n(x) - x|; p from Kolmogorov's limit
//    Q(l) = 2 sum_k (-1)^(k-1) exp(-2 k^2 l^2) at l = (sqrt(n) + 0.12 + 0.11 / sqrt(n)) D
//    (Stephens 1970; within 1% of the exact tail for n >= 5 at the usual levels).
//    One-sided D- = sup (F_n(x) - x) (too many small p-values: an anti-conservative
//    check), p = exp(-2 n D-^2) (Smirnov's limit; an upper bound for every n, Massart).
//  - Anderson-Darling: A2 = -n - 1/n sum_i (2i - 1) (ln x_(i) + ln(1 - x_(n+1-i))),
//    which weights the tails, so p-values piled at 1 (a conservative check) or at 0
//    show sooner than with KS; p from the limit distribution by Marsaglia & Marsaglia
//    (J. Stat. Software 9(2), 2004: ADinf, |error| < 2e-6; the finite-n correction is
//    below 0.003 for n >= 20 and is left out, so use n >= 20).
//  - median: the sign test (the count below 1/2 is Binomial(n, 1/2), exact two-sided
//    p through Boost) and the interval that holds the sample median of n uniforms with
//    probability 1 - band (Beta(k, n + 1 - k) quantiles, k = ceil(n / 2), Boost).
// p-values of count statistics are discrete and some checks' are conservative by
// design (a BOUNDARY mass range); those show as a mild excess near 1, which these
// tests see as a deviation: read them with the median and the false-alarm count.
#pragma once

#include <cstdint>
#include <span>

namespace samplecheck::stats {

struct uniformity_result {
  uint64_t n = 0;
  double ks_distance = 0, ks_p = 1;
  double ks_lower_distance = 0, ks_lower_p = 1;  // D- and its p
  double ad_statistic = 0, ad_p = 1;
  double median = 0.5;
  double median_low = 0, median_high = 1;  // the band's interval for the median
  double sign_p = 1;
  uint64_t below_half = 0;
};

// p-values in [0, 1]; n >= 1. band: 1 - coverage of the median interval (default 1e-3).
uniformity_result uniformity(std::span<const double> p_values, double band = 1e-3);

// The Kolmogorov limit Q(l) = P(sqrt(n) D > l) and the Anderson-Darling limit cdf.
double kolmogorov_upper_tail(double lambda);
double anderson_darling_cdf(double a2);

}  // namespace samplecheck::stats
