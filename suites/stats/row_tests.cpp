#include "suites/stats/row_tests.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "reference/philox.h"
#include "suites/stats/binomial_intervals.h"
#include "suites/stats/combine.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {
namespace {
constexpr size_t kTokensExact = 64;
constexpr uint64_t kReplicateStride = uint64_t{1} << 40;

// n draws from q (cumulative sums `cumulative`, last 1) by inversion, 53-bit uniforms
// from the replicate's randomisation stream (offsets from 2^40: clear of its u's).
std::vector<uint64_t> null_counts(std::span<const double> cumulative, uint64_t n, uint64_t seed,
                                  uint64_t stream) {
  philox_stream s(seed, (uint64_t{1} << 63) + stream, kReplicateStride);
  std::vector<uint64_t> c(cumulative.size(), 0);
  for (uint64_t j = 0; j < n; ++j) {
    const uint64_t hi = s.next(), lo = s.next();
    const double u = static_cast<double>((hi << 21) ^ (lo >> 11)) * 0x1p-53;
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
    ++c[std::min<size_t>(static_cast<size_t>(it - cumulative.begin()), c.size() - 1)];
  }
  return c;
}

// The Monte Carlo rule of row_tests.h on an observed result. The statistic is taken
// in q-descending token order, for the observed counts and the replicates alike (so
// they stay exchangeable), where the sorts inside row_tests find their input sorted.
void calibrate_body(row_test_result& r, std::span<const uint64_t> counts, std::span<const double> q,
                    uint64_t seed, uint64_t stream, uint32_t replicates) {
  if (stream >= kReplicateStride)
    throw std::invalid_argument("row_tests: randomisation stream " + std::to_string(stream) +
                                " is not below 2^40");
  std::vector<size_t> order(q.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return q[a] > q[b]; });
  std::vector<double> sorted_q(q.size()), cumulative(q.size());
  std::vector<uint64_t> sorted_counts(q.size());
  double sum = 0;
  for (size_t k = 0; k < q.size(); ++k) {
    sorted_q[k] = q[order[k]];
    sorted_counts[k] = counts[order[k]];
    cumulative[k] = sum += sorted_q[k];
  }
  for (double& c : cumulative) c /= sum;
  const row_test_result on_counts = row_tests(sorted_counts, sorted_q, seed, stream, 0);
  const double observed = on_counts.p_min;
  r.mc_observed = on_counts.p_sidak;
  r.mc_replicates.clear();
  uint64_t below = 0, equal = 0;
  for (uint32_t b = 0; b < replicates; ++b) {
    const uint64_t sim_stream = stream + (b + 1) * kReplicateStride;
    const auto sim = null_counts(cumulative, r.omnibus.n, seed, sim_stream);
    const row_test_result on_sim = row_tests(sim, sorted_q, seed, sim_stream, 0);
    const double t = on_sim.p_min;
    r.mc_replicates.push_back(on_sim.p_sidak);
    below += t < observed ? 1 : 0;
    equal += t == observed ? 1 : 0;
  }
  const double u = randomisation_uniform(seed, stream, uint64_t{1} << 34);
  const double slots = static_cast<double>(replicates) + 1.0;
  r.p_mc = std::min(1.0, (static_cast<double>(below) + u * static_cast<double>(equal + 1)) / slots);
  const double c = 1.0 / slots;
  r.p_value = r.p_mc > c ? r.p_mc : std::min(r.p_sidak, c);
}
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

row_test_result row_tests(std::span<const uint64_t> counts, std::span<const double> probs,
                          uint64_t seed, uint64_t stream, uint32_t replicates) {
  row_test_result r;
  r.omnibus = goodness_of_fit(counts, probs);
  const std::vector<double> q = detail::checked_probabilities("row_tests", counts, probs);
  const uint64_t n = r.omnibus.n;
  const double nd = static_cast<double>(n);
  if (r.omnibus.observed_zero_probability > 0) {
    r.p_cumulative = r.p_token = r.p_min = r.p_sidak = r.p_value = 0.0;
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
    const double p = binomial_randomized_two_sided_p(seen[c], n, prefix[c],
                                                     randomisation_uniform(seed, stream, c));
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
    const double p = binomial_randomized_two_sided_p(
        counts[i], n, std::min(q[i] / prefix.back(), 1.0),
        randomisation_uniform(seed, stream, (uint64_t{1} << 32) + i));
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
  r.p_value = r.p_sidak = sidak_combine(p_min, r.tests);
  if (replicates > 0) calibrate_body(r, counts, q, seed, stream, replicates);
  return r;
}

}  // namespace samplecheck::stats
