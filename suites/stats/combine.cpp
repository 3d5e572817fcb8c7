#include "suites/stats/combine.h"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <cmath>
#include <stdexcept>
#include <string>

#include "reference/philox.h"
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

double weighted_share_p(double p, double w) {
  detail::check_level("weighted_share_p", "w", w);
  const double knee = w / 2.0;
  return p <= knee ? p / w : 0.5 + 0.5 * (p - knee) / (1.0 - knee);
}

double sidak_min(std::span<const double> p) {
  if (p.empty()) return 1.0;
  return sidak_combine(*std::min_element(p.begin(), p.end()), p.size());
}

namespace {
void check_uniform(const char* where, double u) {
  if (!(u >= 0.0 && u < 1.0))
    throw std::invalid_argument(std::string(where) + ": u = " + std::to_string(u) +
                                " is not in [0, 1)");
}

// P(X = k), X ~ Binomial(n, p), k <= n.
double binomial_atom(uint64_t k, uint64_t n, double p) {
  if (p <= 0.0) return k == 0 ? 1.0 : 0.0;
  if (p >= 1.0) return k == n ? 1.0 : 0.0;
  return boost::math::pdf(boost::math::binomial_distribution<double>(static_cast<double>(n), p),
                          static_cast<double>(k));
}
}  // namespace

double binomial_randomized_upper_tail(uint64_t k, uint64_t n, double p, double u) {
  check_uniform("binomial_randomized_upper_tail", u);
  if (k > n) return 0.0;
  const double above = k == n ? 0.0 : binomial_upper_tail(k + 1, n, p);
  return std::clamp(above + u * binomial_atom(k, n, p), 0.0, 1.0);
}

double binomial_randomized_two_sided_p(uint64_t k, uint64_t n, double p, double u) {
  check_uniform("binomial_randomized_two_sided_p", u);
  if (k > n) return 0.0;
  // The smaller tail directly (1 - F would lose the digits of a tiny upper tail).
  const double atom = binomial_atom(k, n, p);
  const double below = k == 0 ? 0.0 : binomial_lower_tail(k - 1, n, p);
  const double above = k == n ? 0.0 : binomial_upper_tail(k + 1, n, p);
  const double lower = below + u * atom, upper = above + (1.0 - u) * atom;
  return std::clamp(2.0 * std::min(lower, upper), 0.0, 1.0);
}

double randomisation_uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  philox_stream s(seed, (uint64_t{1} << 63) + stream, index);
  return static_cast<double>(s.next()) * 0x1p-32;
}

}  // namespace samplecheck::stats
