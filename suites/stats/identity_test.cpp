#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

identity_result identity_test(std::span<const uint64_t> counts, std::span<const double> probs) {
  return identity_test(counts, probs, kDefaultIdentityFloor);
}

identity_result identity_test(std::span<const uint64_t> counts, std::span<const double> probs,
                              double floor) {
  const std::vector<double> q = detail::checked_probabilities("identity_test", counts, probs);
  const uint64_t n = detail::checked_total("identity_test", counts);
  if (!(floor >= 0.0 && floor < 1.0))
    throw std::invalid_argument("identity_test: floor = " + std::to_string(floor) +
                                " is not in [0, 1)");
  const double m = static_cast<double>(n);

  identity_result r{};
  r.floor = floor;
  double pooled_q = 0.0;
  uint64_t pooled_count = 0, impossible_count = 0;
  double mass = 0.0;  // Q
  auto add_cell = [&](uint64_t count, double qk) {
    const double lambda = m * qk;
    const double d = static_cast<double>(count) - lambda;
    r.statistic += (d * d - static_cast<double>(count)) / lambda;
    mass += qk;
    ++r.cells;
  };
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] >= floor && q[i] > 0.0) {
      add_cell(counts[i], q[i]);
    } else if (q[i] > 0.0) {
      pooled_q += q[i];
      pooled_count += counts[i];
    } else {
      impossible_count += counts[i];
    }
  }
  if (pooled_q > 0.0) add_cell(pooled_count, pooled_q);

  const double cells = static_cast<double>(r.cells);
  const double variance = 2.0 * (1.0 - 3.0 / m) * mass * mass - 4.0 * (1.0 - 2.0 / m) * mass +
                          2.0 * (1.0 - 1.0 / m) * cells;
  r.null_mean = -mass;
  r.null_sd = std::sqrt(std::max(variance, 0.0));
  if (impossible_count > 0) {
    r.statistic = std::numeric_limits<double>::infinity();
    r.p_value = 0.0;
    return r;
  }
  const double excess = r.statistic + mass;  // Z - E[Z]
  // Summing many terms leaves rounding of order 1e-16 * |terms|; an excess within it
  // is no evidence (and must not meet a variance that rounded to 0).
  if (excess <= 1e-9 * (std::fabs(r.statistic) + mass + 1.0)) {
    r.p_value = 1.0;
  } else if (variance <= 1e-12 * cells) {
    // Degenerate null (one cell, or m = 1): Z equals its mean almost surely, so any
    // excess is impossible under the null.
    r.p_value = 0.0;
  } else {
    r.p_value = variance / (variance + excess * excess);
  }
  return r;
}

}  // namespace samplecheck::stats
