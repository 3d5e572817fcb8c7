#include "suites/stats/binomial_intervals.h"

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <stdexcept>
#include <string>

#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

namespace {
using boost::math::binomial_distribution;

void check_binomial_args(const char* where, uint64_t k, uint64_t n, double p) {
  if (k > n)
    throw std::invalid_argument(std::string(where) + ": k = " + std::to_string(k) +
                                " > n = " + std::to_string(n));
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument(std::string(where) + ": p = " + std::to_string(p) +
                                " is not in [0, 1]");
}
}  // namespace

double binomial_lower_tail(uint64_t k, uint64_t n, double p) {
  check_binomial_args("binomial_lower_tail", k, n, p);
  if (k == n || p == 0.0) return 1.0;
  if (p == 1.0) return 0.0;
  return boost::math::cdf(binomial_distribution<double>(static_cast<double>(n), p),
                          static_cast<double>(k));
}

double binomial_upper_tail(uint64_t k, uint64_t n, double p) {
  check_binomial_args("binomial_upper_tail", k, n, p);
  if (k == 0 || p == 1.0) return 1.0;
  if (p == 0.0) return 0.0;
  return boost::math::cdf(boost::math::complement(
      binomial_distribution<double>(static_cast<double>(n), p), static_cast<double>(k - 1)));
}

double binomial_two_sided_p(uint64_t k, uint64_t n, double p) {
  return std::min(1.0, 2.0 * std::min(binomial_lower_tail(k, n, p), binomial_upper_tail(k, n, p)));
}

std::vector<token_deviation> deviating_tokens(std::span<const uint64_t> counts,
                                              std::span<const double> probs, double alpha,
                                              size_t max_report) {
  detail::check_level("deviating_tokens", "alpha", alpha);
  const std::vector<double> q = detail::checked_probabilities("deviating_tokens", counts, probs);
  const uint64_t n = detail::checked_total("deviating_tokens", counts);
  const double token_alpha = alpha / static_cast<double>(q.size());
  const double nd = static_cast<double>(n);

  std::vector<token_deviation> found;
  for (size_t i = 0; i < q.size(); ++i) {
    const double expected = nd * q[i];
    const double k = static_cast<double>(counts[i]);
    if (k == expected) continue;
    const bool over = k > expected;
    // Only the tail in the observed direction can be small: the other one holds the
    // median and is >= 1/2.
    const double tail =
        over ? binomial_upper_tail(counts[i], n, q[i]) : binomial_lower_tail(counts[i], n, q[i]);
    if (tail > token_alpha / 2.0) continue;
    found.push_back(token_deviation{static_cast<int64_t>(i), counts[i], q[i], 0.0, 0.0, over,
                                    std::min(1.0, 2.0 * tail)});
  }
  std::sort(found.begin(), found.end(), [](const token_deviation& a, const token_deviation& b) {
    return a.p_value != b.p_value ? a.p_value < b.p_value : a.token < b.token;
  });
  if (found.size() > max_report) found.resize(max_report);
  for (token_deviation& d : found) {
    d.lower = binomial_distribution<double>::find_lower_bound_on_p(nd, static_cast<double>(d.count),
                                                                   token_alpha / 2.0);
    d.upper = binomial_distribution<double>::find_upper_bound_on_p(nd, static_cast<double>(d.count),
                                                                   token_alpha / 2.0);
  }
  return found;
}

}  // namespace samplecheck::stats
