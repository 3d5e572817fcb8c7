#include "suites/stats/tail_test.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

tail_result tail_test(std::span<const uint64_t> counts, std::span<const double> probs,
                      double threshold) {
  const std::vector<double> q = detail::checked_probabilities("tail_test", counts, probs);
  const uint64_t n = detail::checked_total("tail_test", counts);
  if (!(threshold > 0.0 && threshold <= 1.0))
    throw std::invalid_argument("tail_test: threshold = " + std::to_string(threshold) +
                                " is not in (0, 1]");
  tail_result r{};
  r.threshold = threshold;
  r.n = n;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] < threshold) {
      r.expected_mass += q[i];
      r.count += counts[i];
      ++r.tokens;
    }
  }
  // Renormalisation can leave 1 + 1e-16 when T is everything.
  r.expected_mass = std::min(r.expected_mass, 1.0);
  r.observed_fraction = static_cast<double>(r.count) / static_cast<double>(n);
  r.p_value = binomial_two_sided_p(r.count, n, r.expected_mass);
  return r;
}

}  // namespace samplecheck::stats
