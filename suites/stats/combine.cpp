#include "suites/stats/combine.h"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <cmath>
#include <stdexcept>
#include <string>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

double sidak_combine(double p_min, uint64_t k) {
  if (k == 0) throw std::invalid_argument("sidak_combine: k = 0");
  if (!(p_min >= 0.0 && p_min <= 1.0))
    throw std::invalid_argument("sidak_combine: p = " + std::to_string(p_min) +
                                " is not in [0, 1]");
  if (p_min >= 1.0) return 1.0;
  return std::min(1.0, -std::expm1(static_cast<double>(k) * std::log1p(-p_min)));
}

double sidak_level(double alpha, uint64_t k) {
  detail::check_level("sidak_level", "alpha", alpha);
  if (k == 0) throw std::invalid_argument("sidak_level: k = 0");
  return -std::expm1(std::log1p(-alpha) / static_cast<double>(k));
}

double sidak_min(std::span<const double> p) {
  if (p.empty()) return 1.0;
  return sidak_combine(*std::min_element(p.begin(), p.end()), p.size());
}

double binomial_randomized_upper_tail(uint64_t k, uint64_t n, double p, double u) {
  if (!(u >= 0.0 && u < 1.0))
    throw std::invalid_argument("binomial_randomized_upper_tail: u = " + std::to_string(u) +
                                " is not in [0, 1)");
  if (k > n) return 0.0;
  const double above = k == n ? 0.0 : binomial_upper_tail(k + 1, n, p);
  double at = 0.0;
  if (p <= 0.0)
    at = k == 0 ? 1.0 : 0.0;
  else if (p >= 1.0)
    at = k == n ? 1.0 : 0.0;
  else
    at = boost::math::pdf(boost::math::binomial_distribution<double>(static_cast<double>(n), p),
                          static_cast<double>(k));
  return std::clamp(above + u * at, 0.0, 1.0);
}

}  // namespace samplecheck::stats
