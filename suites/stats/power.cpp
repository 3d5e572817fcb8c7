#include "suites/stats/power.h"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/non_central_chi_squared.hpp>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

namespace {
void check_df(const char* where, int64_t df) {
  if (df < 1)
    throw std::invalid_argument(std::string(where) + ": df = " + std::to_string(df) +
                                ", expected >= 1 (at least two cells)");
}
}  // namespace

double chi_square_critical(int64_t df, double alpha) {
  check_df("chi_square_critical", df);
  detail::check_level("chi_square_critical", "alpha", alpha);
  return boost::math::quantile(boost::math::complement(
      boost::math::chi_squared_distribution<double>(static_cast<double>(df)), alpha));
}

double noncentrality_for_power(int64_t df, double alpha, double power) {
  detail::check_level("noncentrality_for_power", "power", power);
  if (power <= alpha)
    throw std::invalid_argument("noncentrality_for_power: power " + std::to_string(power) +
                                " <= alpha " + std::to_string(alpha) + " needs no deviation");
  const double critical = chi_square_critical(df, alpha);
  return boost::math::non_central_chi_squared_distribution<double>::find_non_centrality(
      boost::math::complement(static_cast<double>(df), critical, power));
}

double detectable_tvd(int64_t df, double alpha, uint64_t n, double power) {
  if (n == 0) throw std::invalid_argument("detectable_tvd: n = 0");
  const double lambda = noncentrality_for_power(df, alpha, power);
  return std::sqrt(lambda / (4.0 * static_cast<double>(n)));
}

uint64_t samples_for_tvd(int64_t df, double alpha, double tvd, double power) {
  if (!(tvd > 0.0 && tvd <= 1.0))
    throw std::invalid_argument("samples_for_tvd: tvd = " + std::to_string(tvd) +
                                " is not in (0, 1]");
  const double lambda = noncentrality_for_power(df, alpha, power);
  return static_cast<uint64_t>(std::ceil(lambda / (4.0 * tvd * tvd)));
}

uint64_t binomial_upper_critical(uint64_t n, double p0, double alpha) {
  detail::check_level("binomial_upper_critical", "alpha", alpha);
  if (n == 0) throw std::invalid_argument("binomial_upper_critical: n = 0");
  if (!(p0 >= 0.0 && p0 < 1.0))
    throw std::invalid_argument("binomial_upper_critical: p0 = " + std::to_string(p0) +
                                " is not in [0, 1)");
  const double half = alpha / 2.0;
  if (p0 == 0.0) return 1;
  // Boost's discrete quantile is a start; the exact tail settles the last step either way.
  const double start = boost::math::quantile(boost::math::complement(
      boost::math::binomial_distribution<double>(static_cast<double>(n), p0), half));
  uint64_t c = static_cast<uint64_t>(std::min(std::max(start, 0.0), static_cast<double>(n)));
  while (c > 1 && binomial_upper_tail(c - 1, n, p0) <= half) --c;
  while (c <= n && binomial_upper_tail(c, n, p0) > half) ++c;
  return c;  // n + 1: no count rejects
}

double detectable_mass_shift(uint64_t n, double p0, double alpha, double power) {
  detail::check_level("detectable_mass_shift", "power", power);
  const uint64_t c = binomial_upper_critical(n, p0, alpha);
  if (c > n) return std::numeric_limits<double>::infinity();
  const double p1 = boost::math::binomial_distribution<double>::find_lower_bound_on_p(
      static_cast<double>(n), static_cast<double>(c), power);
  return p1 - p0;
}

int64_t binomial_lower_critical(uint64_t n, double p0, double alpha) {
  detail::check_level("binomial_lower_critical", "alpha", alpha);
  if (n == 0) throw std::invalid_argument("binomial_lower_critical: n = 0");
  if (!(p0 >= 0.0 && p0 <= 1.0))
    throw std::invalid_argument("binomial_lower_critical: p0 = " + std::to_string(p0) +
                                " is not in [0, 1]");
  const double half = alpha / 2.0;
  if (p0 == 0.0 || binomial_lower_tail(0, n, p0) > half) return -1;
  // Boost's discrete quantile is a start; the exact tail settles the last step either way.
  const double start = boost::math::quantile(
      boost::math::binomial_distribution<double>(static_cast<double>(n), p0), half);
  uint64_t c = static_cast<uint64_t>(std::min(std::max(start, 0.0), static_cast<double>(n)));
  while (c > 0 && binomial_lower_tail(c, n, p0) > half) --c;
  while (c < n && binomial_lower_tail(c + 1, n, p0) <= half) ++c;
  return static_cast<int64_t>(c);
}

double detectable_mass_loss(uint64_t n, double p0, double alpha, double power) {
  detail::check_level("detectable_mass_loss", "power", power);
  const int64_t c = binomial_lower_critical(n, p0, alpha);
  if (c < 0) return std::numeric_limits<double>::infinity();
  const double p1 = boost::math::binomial_distribution<double>::find_upper_bound_on_p(
      static_cast<double>(n), static_cast<double>(c), power);
  return p0 - p1;
}

}  // namespace samplecheck::stats
