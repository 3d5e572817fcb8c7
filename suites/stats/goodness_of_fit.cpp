#include "suites/stats/goodness_of_fit.h"

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/poisson.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

namespace {
struct moments {
  double mean, variance;
};

// Mean and variance of the Poisson deviance 2 (O ln(O / E) - O + E), O ~ Poisson(E), by
// summing over E +- (12 sqrt(E) + 12): the mass left out is below 1e-30.
moments poisson_deviance_moments(double e) {
  if (e > 1e6) return {1.0, 2.0};
  const double width = 12.0 * std::sqrt(e) + 12.0;
  const double low = std::max(0.0, std::floor(e - width)), high = std::ceil(e + width);
  double pmf = boost::math::pdf(boost::math::poisson_distribution<double>(e), low);
  double first = 0.0, second = 0.0;
  for (double k = low; k <= high; ++k) {
    if (k > low) pmf *= e / k;
    const double d = 2.0 * ((k > 0.0 ? k * std::log(k / e) : 0.0) - k + e);
    first += pmf * d;
    second += pmf * d * d;
  }
  return {first, second - first * first};
}
}  // namespace

gof_result goodness_of_fit(std::span<const uint64_t> counts, std::span<const double> probs,
                           std::optional<double> min_expected) {
  const uint64_t n = detail::checked_total("goodness_of_fit", counts);
  const merged_cells cells = merge_by_expected(counts, probs, n, min_expected);

  gof_result r{};
  r.n = n;
  r.cells = static_cast<int64_t>(cells.members.size());
  r.df = r.cells - 1;
  r.observed_zero_probability = cells.observed_zero_probability;
  for (size_t k = 0; k < cells.observed.size(); ++k) {
    const double o = static_cast<double>(cells.observed[k]);
    const double e = cells.expected[k];
    r.pearson += (o - e) * (o - e) / e;
    if (o > 0.0) r.g_statistic += 2.0 * o * std::log(o / e);
  }
  // Summed terms of G can round a true 0 to a tiny negative.
  r.g_statistic = std::max(r.g_statistic, 0.0);
  if (cells.observed_zero_probability > 0) {
    r.pearson = r.g_statistic = std::numeric_limits<double>::infinity();
    r.p_pearson = r.p_g = 0.0;
    return r;
  }
  if (r.df <= 0) {
    r.p_pearson = r.p_g = 1.0;
    return r;
  }
  const pearson_reference pearson = pearson_null(cells.expected, n);
  r.pearson_variance = pearson.variance;
  r.pearson_scale = pearson.scale;
  r.pearson_nu = pearson.nu;
  r.p_pearson = chi_square_upper_tail(r.pearson_nu, r.pearson / r.pearson_scale);

  const double m = static_cast<double>(n);
  const moments total = poisson_deviance_moments(m);
  r.g_mean = -total.mean;
  r.g_variance = -total.variance;
  for (double e : cells.expected) {
    const moments cell = poisson_deviance_moments(e);
    r.g_mean += cell.mean;
    r.g_variance += cell.variance;
  }
  r.g_scale = r.g_variance / (2.0 * r.g_mean);
  r.g_nu = 2.0 * r.g_mean * r.g_mean / r.g_variance;
  r.p_g = chi_square_upper_tail(r.g_nu, r.g_statistic / r.g_scale);
  return r;
}

pearson_reference pearson_null(std::span<const double> expected, uint64_t n) {
  const double m = static_cast<double>(n), k = static_cast<double>(expected.size());
  double inverse_sum = 0.0;  // sum_k 1 / pi_k
  for (const double e : expected) inverse_sum += m / e;
  const double df = k - 1.0;
  pearson_reference r{};
  r.variance = 2.0 * df + (inverse_sum - k * k - 2.0 * k + 2.0) / m;
  r.scale = r.variance / (2.0 * df);
  r.nu = df / r.scale;
  return r;
}

double chi_square_upper_tail(double df, double x) {
  if (!(df > 0.0 && std::isfinite(df)) || std::isnan(x))
    throw std::invalid_argument("chi_square_upper_tail: df = " + std::to_string(df) +
                                ", x = " + std::to_string(x));
  if (x <= 0.0) return 1.0;
  if (std::isinf(x)) return 0.0;
  return boost::math::cdf(
      boost::math::complement(boost::math::chi_squared_distribution<double>(df), x));
}

}  // namespace samplecheck::stats
