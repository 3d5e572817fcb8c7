#include "suites/stats/multinomial_draw.h"

#include <algorithm>
#include <boost/random/binomial_distribution.hpp>

namespace samplecheck::stats {

std::vector<uint64_t> multinomial_counts(std::span<const double> mass, uint64_t n,
                                         philox_engine& engine) {
  std::vector<double> suffix(mass.size() + 1, 0.0);
  for (size_t j = mass.size(); j-- > 0;) suffix[j] = suffix[j + 1] + mass[j];
  std::vector<uint64_t> counts(mass.size(), 0);
  uint64_t left = n;
  for (size_t j = 0; j < mass.size() && left > 0; ++j) {
    if (!(mass[j] > 0.0)) continue;
    const double p = std::min(1.0, mass[j] / suffix[j]);
    if (p >= 1.0 || !(suffix[j + 1] > 0.0)) {
      counts[j] = left;
      break;
    }
    using binomial = boost::random::binomial_distribution<int64_t, double>;
    counts[j] = static_cast<uint64_t>(binomial(static_cast<int64_t>(left), p)(engine));
    left -= counts[j];
  }
  return counts;
}

}  // namespace samplecheck::stats
