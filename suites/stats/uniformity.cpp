#include "suites/stats/uniformity.h"

#include <algorithm>
#include <boost/math/distributions/beta.hpp>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "suites/stats/binomial_intervals.h"

namespace samplecheck::stats {

double kolmogorov_upper_tail(double lambda) {
  if (lambda <= 0.0) return 1.0;
  if (lambda < 0.2) return 1.0;  // Q(0.2) = 1 - 6e-23: the series converges slowly there
  double sum = 0.0;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * lambda * lambda);
    sum += (k % 2 == 1 ? term : -term);
    if (term < 1e-17) break;
  }
  return std::clamp(2.0 * sum, 0.0, 1.0);
}

double anderson_darling_cdf(double z) {
  if (z <= 0.0) return 0.0;
  // Marsaglia & Marsaglia (2004), ADinf.
  if (z < 2.0)
    return std::exp(-1.2337141 / z) / std::sqrt(z) *
           (2.00012 +
            (0.247105 - (0.0649821 - (0.0347962 - (0.011672 - 0.00168691 * z) * z) * z) * z) * z);
  return std::exp(-std::exp(
      1.0776 - (2.30695 - (0.43424 - (0.082433 - (0.008056 - 0.0003146 * z) * z) * z) * z) * z));
}

uniformity_result uniformity(std::span<const double> p_values, double band) {
  if (p_values.empty()) throw std::invalid_argument("uniformity: no p-values");
  std::vector<double> x(p_values.begin(), p_values.end());
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] >= 0.0 && x[i] <= 1.0))
      throw std::invalid_argument("uniformity: p-value " + std::to_string(i) + " = " +
                                  std::to_string(x[i]) + " is not in [0, 1]");
  std::sort(x.begin(), x.end());
  uniformity_result r;
  r.n = x.size();
  const double n = static_cast<double>(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    r.ks_distance = std::max(
        {r.ks_distance, static_cast<double>(i + 1) / n - x[i], x[i] - static_cast<double>(i) / n});
    r.ks_lower_distance = std::max(r.ks_lower_distance, static_cast<double>(i + 1) / n - x[i]);
    r.below_half += x[i] < 0.5 ? 1 : 0;
  }
  const double sqrt_n = std::sqrt(n);
  r.ks_lower_p = std::min(1.0, std::exp(-2.0 * n * r.ks_lower_distance * r.ks_lower_distance));
  r.ks_p = kolmogorov_upper_tail((sqrt_n + 0.12 + 0.11 / sqrt_n) * r.ks_distance);

  // ln 0 and ln(1 - 1) are clamped to the smallest and largest p a double can tell
  // from 0 and 1, so one exact 0 or 1 gives a large but finite A2.
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double lo = std::clamp(x[i], 1e-300, 1.0 - 1e-16);
    const double hi = std::clamp(x[x.size() - 1 - i], 1e-300, 1.0 - 1e-16);
    sum += (2.0 * static_cast<double>(i) + 1.0) * (std::log(lo) + std::log1p(-hi));
  }
  r.ad_statistic = -n - sum / n;
  r.ad_p = 1.0 - anderson_darling_cdf(r.ad_statistic);

  const size_t mid = x.size() / 2;
  r.median = x.size() % 2 ? x[mid] : 0.5 * (x[mid - 1] + x[mid]);
  const double k = std::ceil(n / 2.0);
  const boost::math::beta_distribution<double> order_stat(k, n + 1.0 - k);
  r.median_low = boost::math::quantile(order_stat, band / 2.0);
  r.median_high = boost::math::quantile(boost::math::complement(order_stat, band / 2.0));
  r.sign_p = binomial_two_sided_p(r.below_half, r.n, 0.5);
  return r;
}

}  // namespace samplecheck::stats
