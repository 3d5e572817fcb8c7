#include "suites/stats/row_tests.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/combine.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {
namespace {
constexpr size_t kTokensExact = 64;
}  // namespace

std::vector<size_t> row_cut_points(std::span<const double> prefix, double n) {
  std::vector<size_t> cuts;
  const size_t R = prefix.size() - 1;  // prefix[r] = mass of the first r tokens
  for (int j = 1; j < 64; j += 2) {
    const double t = std::ldexp(1.0, -j);
    if (n * t < kCutMinExpected) break;
    // Head: the first r whose mass reaches t; tail: the first r whose rest is <= t.
    const auto head = std::lower_bound(prefix.begin() + 1, prefix.end(), t);
    const auto tail = std::lower_bound(prefix.begin() + 1, prefix.end(), 1.0 - t);
    for (auto it : {head, tail}) {
      const size_t r = static_cast<size_t>(it - prefix.begin());
      if (r >= 1 && r < R && prefix[r] < 1.0) cuts.push_back(r);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

row_test_result row_tests(std::span<const uint64_t> counts, std::span<const double> probs) {
  row_test_result r;
  r.omnibus = goodness_of_fit(counts, probs);
  const std::vector<double> q = detail::checked_probabilities("row_tests", counts, probs);
  const uint64_t n = r.omnibus.n;
  const double nd = static_cast<double>(n);
  if (r.omnibus.observed_zero_probability > 0) {
    r.p_cumulative = r.p_token = r.p_value = 0.0;
    return r;
  }

  std::vector<size_t> order;
  for (size_t i = 0; i < q.size(); ++i)
    if (q[i] > 0.0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return q[a] > q[b]; });
  std::vector<double> prefix(order.size() + 1, 0.0);
  std::vector<uint64_t> seen(order.size() + 1, 0);
  for (size_t k = 0; k < order.size(); ++k) {
    prefix[k + 1] = prefix[k] + q[order[k]];
    seen[k + 1] = seen[k] + counts[order[k]];
  }
  for (double& m : prefix) m = std::min(m / prefix.back(), 1.0);

  const std::vector<size_t> cuts = row_cut_points(prefix, nd);
  r.cuts = static_cast<int64_t>(cuts.size());
  double p_cut = 1.0;
  for (const size_t c : cuts) {
    const double p = binomial_two_sided_p(seen[c], n, prefix[c]);
    if (p < p_cut) {
      p_cut = p;
      r.worst_cut_tokens = static_cast<int64_t>(c);
      r.worst_cut_mass = prefix[c];
      r.worst_cut_seen = static_cast<double>(seen[c]) / nd;
    }
  }
  r.p_cumulative = cuts.empty() ? 1.0 : sidak_combine(p_cut, cuts.size());

  // Tokens ranked by Poisson deviance 2 (O ln(O / E) - O + E); exact tails for the top.
  std::vector<std::pair<double, size_t>> deviance;
  deviance.reserve(order.size());
  for (const size_t i : order) {
    const double o = static_cast<double>(counts[i]), e = nd * q[i];
    if (e < kTokenMinExpected) continue;
    deviance.emplace_back(2.0 * ((o > 0 ? o * std::log(o / e) : 0.0) - o + e), i);
  }
  const size_t top = std::min(kTokensExact, deviance.size());
  std::partial_sort(deviance.begin(), deviance.begin() + static_cast<std::ptrdiff_t>(top),
                    deviance.end(), [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first : a.second < b.second;
                    });
  double p_tok = 1.0;
  for (size_t k = 0; k < top; ++k) {
    const size_t i = deviance[k].second;
    const double p = binomial_two_sided_p(counts[i], n, std::min(q[i] / prefix.back(), 1.0));
    if (p < p_tok) {
      p_tok = p;
      r.worst_token = static_cast<int64_t>(i);
      r.worst_token_count = counts[i];
      r.worst_token_q = q[i];
    }
  }
  r.p_token = deviance.size() <= 1 ? 1.0 : sidak_combine(p_tok, deviance.size());
  // The cuts and the tokens are one family of binomial counts (a cut of one token is
  // that token's test): Sidak over the family's size, then over {omnibus, family}.
  double p_min = r.omnibus.p_pearson;
  r.tests = 1;
  const size_t family = cuts.size() + (deviance.size() >= 2 ? deviance.size() : 0);
  if (order.size() > 2 && family > 0) {
    const double p_family_min =
        std::min(cuts.empty() ? 1.0 : p_cut, deviance.size() >= 2 ? p_tok : 1.0);
    r.p_directed = sidak_combine(p_family_min, family);
    p_min = std::min(p_min, r.p_directed);
    ++r.tests;
  }
  r.p_min = p_min;
  r.p_value = sidak_combine(p_min, r.tests);
  return r;
}

}  // namespace samplecheck::stats
