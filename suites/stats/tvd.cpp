#include "suites/stats/tvd.h"

#include <algorithm>
#include <cmath>

#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

tvd_estimate tvd_upper_bound(std::span<const uint64_t> counts, std::span<const double> probs,
                             double delta, std::optional<double> min_expected) {
  detail::check_level("tvd_upper_bound", "delta", delta);
  const uint64_t n = detail::checked_total("tvd_upper_bound", counts);
  const merged_cells cells = merge_by_expected(counts, probs, n, min_expected);
  const double m = static_cast<double>(n);

  double abs_sum = 0.0;
  for (size_t k = 0; k < cells.observed.size(); ++k)
    abs_sum += std::fabs(static_cast<double>(cells.observed[k]) / m - cells.expected[k] / m);
  int64_t K = static_cast<int64_t>(cells.members.size());
  if (!cells.zero_probability.empty()) {
    abs_sum += static_cast<double>(cells.observed_zero_probability) / m;
    ++K;
  }
  tvd_estimate r{};
  r.point = 0.5 * abs_sum;
  r.upper = r.point + 0.5 * std::sqrt(static_cast<double>(K - 1) / m) +
            std::sqrt(std::log(1.0 / delta) / (2.0 * m));
  r.upper = std::min(r.upper, 1.0);  // TV never exceeds 1, so capping keeps the bound valid
  r.confidence = 1.0 - delta;
  r.cells = K;
  r.n = n;
  return r;
}

}  // namespace samplecheck::stats
