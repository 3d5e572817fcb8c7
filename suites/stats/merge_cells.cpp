#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

double cell_min_expected(uint64_t n) {
  const double m = static_cast<double>(n);
  return std::max(5.0, m * m * 0x1p-24 / 64.0);
}

cell_partition partition_by_expected(std::span<const double> q_sorted, uint64_t n,
                                     std::optional<double> min_expected_given) {
  const double min_expected = min_expected_given.value_or(cell_min_expected(n));
  cell_partition cells;
  const double scale = static_cast<double>(n);
  double pool_expected = 0.0;
  bool pooled = false;
  for (size_t k = 0; k < q_sorted.size(); ++k) {
    pool_expected += scale * q_sorted[k];
    pooled = true;
    if (pool_expected >= min_expected) {
      cells.end.push_back(k + 1);
      cells.expected.push_back(pool_expected);
      pool_expected = 0.0;
      pooled = false;
    }
  }
  if (pooled) {
    if (cells.end.empty()) {
      cells.end.push_back(q_sorted.size());
      cells.expected.push_back(pool_expected);
    } else {
      cells.end.back() = q_sorted.size();
      cells.expected.back() += pool_expected;
    }
  }
  return cells;
}

merged_cells merge_by_expected(std::span<const uint64_t> counts, std::span<const double> probs,
                               uint64_t n, std::optional<double> min_expected_given) {
  const double min_expected = min_expected_given.value_or(cell_min_expected(n));
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

  std::vector<double> q_sorted;
  q_sorted.reserve(order.size());
  for (const int64_t token : order) q_sorted.push_back(q[static_cast<size_t>(token)]);
  cell_partition partition = partition_by_expected(q_sorted, n, min_expected);
  cells.expected = std::move(partition.expected);
  size_t begin = 0;
  for (const size_t end : partition.end) {
    cells.members.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(begin),
                               order.begin() + static_cast<std::ptrdiff_t>(end));
    begin = end;
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
