#include "suites/stats/row_tests.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/combine.h"
#include "suites/stats/input_checks.h"
#include "suites/stats/multinomial_draw.h"
#include "suites/stats/parallel_for.h"

namespace samplecheck::stats {
namespace {
constexpr size_t kTokensExact = 64;
constexpr uint64_t kReplicateStride = uint64_t{1} << 40;

// What the statistics of a row depend on besides its counts, a function of q and n
// alone, in q-descending order (ties by token id): the merged cells, the cuts, the
// tokens of the directed family, and the blocks that refine all three. Every statistic
// is a function of the counts on the blocks, so a null replicate is one multinomial
// draw over the blocks.
struct row_layout {
  std::vector<size_t> order;   // tokens with q > 0
  std::vector<double> q;       // q[order[k]], renormalised
  std::vector<double> prefix;  // prefix[k]: mass of the first k, normalised
  cell_partition cells;
  pearson_reference pearson{};
  std::vector<size_t> cuts;
  std::vector<size_t> heavy;      // positions with n q >= kTokenMinExpected
  std::vector<size_t> block_end;  // the refinement, as position ends
  std::vector<size_t> cell_block_end, cut_block, heavy_block;  // block indices
};

// The block whose end is position `end` (an end of the refinement by construction).
size_t block_ending_at(const std::vector<size_t>& block_end, size_t end) {
  return static_cast<size_t>(std::lower_bound(block_end.begin(), block_end.end(), end) -
                             block_end.begin());
}

std::vector<size_t> q_order(const std::vector<double>& q) {
  std::vector<size_t> order;
  for (size_t i = 0; i < q.size(); ++i)
    if (q[i] > 0.0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return q[a] > q[b]; });
  return order;
}

row_layout make_layout(const std::vector<double>& q, uint64_t n, std::span<const size_t> order) {
  row_layout l;
  l.order = order.empty() ? q_order(q) : std::vector<size_t>(order.begin(), order.end());
  l.prefix.assign(l.order.size() + 1, 0.0);
  for (size_t k = 0; k < l.order.size(); ++k) {
    l.q.push_back(q[l.order[k]]);
    l.prefix[k + 1] = l.prefix[k] + l.q[k];
  }
  const double total = l.prefix.back();
  for (double& m : l.prefix) m = std::min(m / total, 1.0);
  const double nd = static_cast<double>(n);
  l.cells = partition_by_expected(l.q, n);
  if (l.cells.end.size() > 1) l.pearson = pearson_null(l.cells.expected, n);
  l.cuts = row_cut_points(l.prefix, nd);
  std::vector<size_t> ends = l.cells.end;
  ends.insert(ends.end(), l.cuts.begin(), l.cuts.end());
  for (size_t k = 0; k < l.q.size(); ++k)
    if (nd * l.q[k] >= kTokenMinExpected) {
      l.heavy.push_back(k);
      ends.push_back(k);
      ends.push_back(k + 1);
    }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  if (!ends.empty() && ends.front() == 0) ends.erase(ends.begin());
  l.block_end = std::move(ends);
  for (const size_t e : l.cells.end) l.cell_block_end.push_back(block_ending_at(l.block_end, e));
  for (const size_t c : l.cuts) l.cut_block.push_back(block_ending_at(l.block_end, c));
  for (const size_t h : l.heavy) l.heavy_block.push_back(block_ending_at(l.block_end, h + 1));
  return l;
}

std::vector<uint64_t> block_counts_of(const row_layout& l, std::span<const uint64_t> counts) {
  std::vector<uint64_t> blocks(l.block_end.size(), 0);
  size_t k = 0;
  for (size_t b = 0; b < l.block_end.size(); ++b)
    for (; k < l.block_end[b]; ++k) blocks[b] += counts[l.order[k]];
  return blocks;
}

// The omnibus Pearson statistic over the merged cells and its p-value.
void omnibus_pearson(const row_layout& l, const std::vector<uint64_t>& blocks, row_test_result& r) {
  auto& g = r.omnibus;
  g.pearson = 0;
  size_t b = 0;
  for (size_t c = 0; c < l.cell_block_end.size(); ++c) {
    uint64_t o = 0;
    for (; b <= l.cell_block_end[c]; ++b) o += blocks[b];
    const double e = l.cells.expected[c], d = static_cast<double>(o) - e;
    g.pearson += d * d / e;
  }
  g.p_pearson = g.df > 0 ? chi_square_upper_tail(g.pearson_nu, g.pearson / g.pearson_scale) : 1.0;
}

// The smallest p of the cuts' binomial tests (1 with no cut); records the worst cut.
double cuts_min_p(const row_layout& l, const std::vector<uint64_t>& blocks, uint64_t n,
                  uint64_t seed, uint64_t stream, row_test_result& r) {
  std::vector<uint64_t> seen(l.block_end.size() + 1, 0);  // counts before block j
  for (size_t j = 0; j < l.block_end.size(); ++j) seen[j + 1] = seen[j] + blocks[j];
  double p_cut = 1.0;
  for (size_t i = 0; i < l.cuts.size(); ++i) {
    const size_t c = l.cuts[i];
    const uint64_t s = seen[l.cut_block[i] + 1];
    const double p =
        binomial_randomized_two_sided_p(s, n, l.prefix[c], randomisation_uniform(seed, stream, c));
    if (p < p_cut) {
      p_cut = p;
      r.worst_cut_tokens = static_cast<int64_t>(c);
      r.worst_cut_mass = l.prefix[c];
      r.worst_cut_seen = static_cast<double>(s) / static_cast<double>(n);
    }
  }
  return p_cut;
}

// Tokens ranked by Poisson deviance 2 (O ln(O / E) - O + E); exact tails for the top.
// The smallest p among them (1 with none); records the worst token.
double tokens_min_p(const row_layout& l, const std::vector<uint64_t>& blocks, uint64_t n,
                    uint64_t seed, uint64_t stream, bool position_ids, row_test_result& r) {
  const double nd = static_cast<double>(n);
  std::vector<std::pair<double, size_t>> deviance;  // (deviance, index into heavy)
  deviance.reserve(l.heavy.size());
  const auto id = [&](size_t h) { return position_ids ? l.heavy[h] : l.order[l.heavy[h]]; };
  for (size_t h = 0; h < l.heavy.size(); ++h) {
    const double o = static_cast<double>(blocks[l.heavy_block[h]]), e = nd * l.q[l.heavy[h]];
    deviance.emplace_back(2.0 * ((o > 0 ? o * std::log(o / e) : 0.0) - o + e), h);
  }
  const size_t top = std::min(kTokensExact, deviance.size());
  std::partial_sort(deviance.begin(), deviance.begin() + static_cast<std::ptrdiff_t>(top),
                    deviance.end(), [&](const auto& a, const auto& c) {
                      return a.first != c.first ? a.first > c.first : id(a.second) < id(c.second);
                    });
  double p_tok = 1.0;
  for (size_t k = 0; k < top; ++k) {
    const size_t h = deviance[k].second;
    const uint64_t o = blocks[l.heavy_block[h]];
    const double q = std::min(l.q[l.heavy[h]], 1.0);
    const double p = binomial_randomized_two_sided_p(
        o, n, q, randomisation_uniform(seed, stream, (uint64_t{1} << 32) + id(h)));
    if (p < p_tok) {
      p_tok = p;
      r.worst_token = static_cast<int64_t>(id(h));
      r.worst_token_count = o;
      r.worst_token_q = q;
    }
  }
  return p_tok;
}

// The statistics on block counts. `position_ids`: a token's randomisation index (and its
// tie-break in the deviance ranking) is its position in q order (the Monte Carlo's
// exchangeable form) instead of its token id.
void evaluate(const row_layout& l, const std::vector<uint64_t>& blocks, uint64_t n, uint64_t seed,
              uint64_t stream, bool position_ids, row_test_result& r) {
  omnibus_pearson(l, blocks, r);
  const double p_cut = cuts_min_p(l, blocks, n, seed, stream, r);
  r.cuts = static_cast<int64_t>(l.cuts.size());
  r.p_cumulative = l.cuts.empty() ? 1.0 : sidak_combine(p_cut, l.cuts.size());
  const double p_tok = tokens_min_p(l, blocks, n, seed, stream, position_ids, r);
  const size_t tokens = l.heavy.size();  // the deviance ranking's size
  r.p_token = tokens <= 1 ? 1.0 : sidak_combine(p_tok, tokens);
  // The cuts and the tokens are one family of binomial counts (a cut of one token is
  // that token's test): Sidak over the family's size, then over {omnibus, family}.
  double p_min = r.omnibus.p_pearson;
  r.tests = 1;
  const size_t family = l.cuts.size() + (tokens >= 2 ? tokens : 0);
  if (l.order.size() > 2 && family > 0) {
    const double p_family_min = std::min(l.cuts.empty() ? 1.0 : p_cut, tokens >= 2 ? p_tok : 1.0);
    r.p_directed = sidak_combine(p_family_min, family);
    p_min = std::min(p_min, r.p_directed);
    ++r.tests;
  }
  r.p_min = p_min;
  r.p_value = r.p_sidak = sidak_combine(p_min, r.tests);
}

// The Monte Carlo rule of row_tests.h. The statistic is taken in q-descending positions
// for the observed counts and the replicates alike (so they stay exchangeable); replicate
// b is one multinomial draw over the layout's blocks from stream + (b + 1) 2^40.
void calibrate_body(row_test_result& r, const row_layout& l, const std::vector<uint64_t>& blocks,
                    uint64_t seed, uint64_t stream, uint32_t replicates) {
  if (stream >= kReplicateStride)
    throw std::invalid_argument("row_tests: randomisation stream " + std::to_string(stream) +
                                " is not below 2^40");
  const uint64_t n = r.omnibus.n;
  row_test_result on_counts = r;
  evaluate(l, blocks, n, seed, stream, true, on_counts);
  const double observed = on_counts.p_min;
  r.mc_observed = on_counts.p_sidak;
  r.mc_replicates.clear();
  std::vector<double> mass(l.block_end.size());
  for (size_t j = 0; j < mass.size(); ++j)
    mass[j] = l.prefix[l.block_end[j]] - l.prefix[j == 0 ? 0 : l.block_end[j - 1]];
  // Each replicate has its own stream, so they run on the cores the rows leave idle and
  // give the numbers a sequential loop gives.
  std::vector<double> sim_min(replicates), sim_sidak(replicates);
  parallel_for(replicates, [&](size_t b) {
    const uint64_t sim_stream = stream + (b + 1) * kReplicateStride;
    philox_engine engine(seed, (uint64_t{1} << 63) + sim_stream, kReplicateStride);
    row_test_result on_sim = r;
    evaluate(l, multinomial_counts(mass, n, engine), n, seed, sim_stream, true, on_sim);
    sim_min[b] = on_sim.p_min, sim_sidak[b] = on_sim.p_sidak;
  });
  uint64_t below = 0, equal = 0;
  for (uint32_t b = 0; b < replicates; ++b) {
    r.mc_replicates.push_back(sim_sidak[b]);
    below += sim_min[b] < observed ? 1 : 0;
    equal += sim_min[b] == observed ? 1 : 0;
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

std::vector<size_t> row_order(std::span<const double> probs) {
  return q_order(detail::normalised(probs));
}

row_test_result row_tests(std::span<const uint64_t> counts, std::span<const double> probs,
                          uint64_t seed, uint64_t stream, uint32_t replicates,
                          std::span<const size_t> order) {
  const std::vector<double> q = detail::checked_probabilities("row_tests", counts, probs);
  row_test_result r;
  auto& g = r.omnibus;
  // Pearson only: G (goodness_of_fit's other statistic) is not a sub-test of the row.
  g.g_statistic = g.p_g = g.g_mean = g.g_variance = g.g_scale = g.g_nu =
      std::numeric_limits<double>::quiet_NaN();
  g.n = detail::checked_total("row_tests", counts);
  for (size_t i = 0; i < q.size(); ++i)
    if (q[i] == 0.0) g.observed_zero_probability += counts[i];
  if (g.observed_zero_probability > 0) {
    g.pearson = std::numeric_limits<double>::infinity();
    r.p_cumulative = r.p_token = r.p_min = r.p_sidak = r.p_value = 0.0;
    return r;
  }
  if (std::any_of(order.begin(), order.end(), [&](size_t i) { return i >= q.size(); }))
    throw std::invalid_argument("row_tests: order does not index probs");
  const row_layout l = make_layout(q, g.n, order);
  g.cells = static_cast<int64_t>(l.cells.end.size());
  g.df = g.cells - 1;
  g.pearson_variance = l.pearson.variance;
  g.pearson_scale = l.pearson.scale;
  g.pearson_nu = l.pearson.nu;
  const std::vector<uint64_t> blocks = block_counts_of(l, counts);
  evaluate(l, blocks, g.n, seed, stream, false, r);
  if (replicates > 0) calibrate_body(r, l, blocks, seed, stream, replicates);
  return r;
}

}  // namespace samplecheck::stats
