#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

merged_cells merge_by_expected(std::span<const uint64_t> counts, std::span<const double> probs,
                               uint64_t n, double min_expected) {
  const std::vector<double> q = detail::checked_probabilities("merge_by_expected", counts, probs);
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total != n)
    throw std::invalid_argument("merge_by_expected: counts sum to " + std::to_string(total) +
                                " but n = " + std::to_string(n));
  if (!(min_expected > 0.0 && std::isfinite(min_expected)))
    throw std::invalid_argument("merge_by_expected: min_expected must be finite and > 0");

  merged_cells cells;
  std::vector<int64_t> order;
  order.reserve(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] > 0.0) {
      order.push_back(static_cast<int64_t>(i));
    } else {
      cells.zero_probability.push_back(static_cast<int64_t>(i));
      cells.observed_zero_probability += counts[i];
    }
  }
  // The order (and so the partition) depends on q alone; counts are only summed below.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return q[a] > q[b]; });

  const double scale = static_cast<double>(n);
  std::vector<int64_t> pool;
  double pool_expected = 0.0;
  for (int64_t token : order) {
    pool.push_back(token);
    pool_expected += scale * q[token];
    if (pool_expected >= min_expected) {
      cells.members.push_back(std::move(pool));
      cells.expected.push_back(pool_expected);
      pool.clear();
      pool_expected = 0.0;
    }
  }
  if (!pool.empty()) {
    if (cells.members.empty()) {
      cells.members.push_back(std::move(pool));
      cells.expected.push_back(pool_expected);
    } else {
      cells.members.back().insert(cells.members.back().end(), pool.begin(), pool.end());
      cells.expected.back() += pool_expected;
    }
  }
  cells.observed.reserve(cells.members.size());
  for (const auto& members : cells.members) {
    uint64_t observed = 0;
    for (int64_t token : members) observed += counts[static_cast<size_t>(token)];
    cells.observed.push_back(observed);
  }
  return cells;
}

}  // namespace samplecheck::stats
