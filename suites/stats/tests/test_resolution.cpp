// The cells' floor (cell_min_expected) against a correct float32 subject: its 2^-24
// resolution must not move the omnibus statistic by more than a sliver of its spread.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "fixtures/samplers/sampler_fixtures.h"
#include "suites/stats/goodness_of_fit.h"

namespace st = samplecheck::stats;
namespace fx = samplecheck::fixtures;
using std::vector;

namespace {
constexpr uint64_t kSteps = uint64_t{1} << 24;  // a 24-bit uniform: k 2^-24, k < 2^24

// What an inverse-CDF sampler computing in float32 draws, exactly: its running sum in the
// given order (token order: dual_pivot's; q-descending: sort_filter's) rounded to float, the target
// float(u * mass) for each of the 2^24 uniforms, the first token whose running sum exceeds it.
// Token i gets the uniforms whose target lies in [sum_{i-1}, sum_i); targets rise with k, so a
// binary search per edge.
vector<double> float32_subject(const vector<float>& p, const vector<size_t>& order) {
  vector<float> sum(p.size());
  double exact = 0;
  for (size_t k = 0; k < p.size(); ++k) sum[k] = static_cast<float>(exact += p[order[k]]);
  const float mass = sum.back();
  const auto below = [&](float edge) {  // #{k : float(k 2^-24 * mass) < edge}
    uint64_t lo = 0, hi = kSteps;
    while (lo < hi) {
      const uint64_t k = (lo + hi) / 2;
      if (static_cast<float>(k) * 0x1p-24f * mass < edge)
        lo = k + 1;
      else
        hi = k;
    }
    return lo;
  };
  vector<double> q(p.size());
  uint64_t before = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    const uint64_t upto = below(sum[k]);
    q[order[k]] = static_cast<double>(upto - before) / static_cast<double>(kSteps);
    before = upto;
  }
  return q;
}

struct shift {
  double lambda, spread;  // X2's mean shift n sum (Q' - Q)^2 / Q; its null sd sqrt(2 df)
};

// The row's tokens by probability, largest first (sort_filter's scan, and the judge's order).
vector<size_t> q_descending(const vector<float>& p) {
  vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  return order;
}

// The shift over the cells partition_by_expected forms at n draws.
shift omnibus_shift(const vector<float>& p, const vector<double>& subject, uint64_t n,
                    double min_expected) {
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  const vector<size_t> order = q_descending(p);
  vector<double> q;
  for (size_t i : order) q.push_back(p[i] / total);
  const st::cell_partition cells = st::partition_by_expected(q, n, min_expected);
  shift s{0, std::sqrt(2.0 * static_cast<double>(cells.end.size() - 1))};
  size_t begin = 0;
  for (size_t end : cells.end) {
    double Q = 0, S = 0;
    for (size_t k = begin; k < end; ++k) Q += q[k], S += subject[order[k]];
    s.lambda += static_cast<double>(n) * (S - Q) * (S - Q) / Q;
    begin = end;
  }
  return s;
}
}  // namespace

TEST_CASE("resolution: the cells' floor is Cochran's 5, then n^2 2^-24 / 64") {
  CHECK(st::cell_min_expected(0) == 5.0);
  CHECK(st::cell_min_expected(50000) == 5.0);
  CHECK(st::cell_min_expected(73200) == 5.0);  // n^2 2^-24 / 64 = 5 at n = 73,271
  CHECK(st::cell_min_expected(73400) > 5.0);
  CHECK(st::cell_min_expected(8000000) == Approx(59604.64).epsilon(1e-6));
  // A floor of n 2^-30 in mass: the same mass at any n.
  CHECK(st::cell_min_expected(1 << 22) / (1 << 22) == Approx(0x1p-30 * (1 << 22)));
}

TEST_CASE("resolution: a float32 subject's 2^-24 steps leave X2 unshifted") {
  // Measured on the H100 (2026-12-06): correct CUDA samplers at p ~1e-3 on long_tail with
  // cells of E = 5, X2 ~1,300 above its df of ~123,000 (sd ~500). The fixture's rows at the
  // standard budget's V, scanned in token order and in q order; `stats_resolution -s`
  // prints each shift (docs/judging-power/resolution.md).
  const auto shape = GENERATE(fx::shape::long_tail, fx::shape::zipf);
  const bool sorted = GENERATE(false, true);
  const vector<float> p = fx::make_probs(shape, {.vocab_size = 151936, .seed = 4});
  vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (sorted) order = q_descending(p);
  const vector<double> subject = float32_subject(p, order);
  CAPTURE(fx::shape_name(shape), sorted);
  for (const uint64_t n : {uint64_t{1000000}, uint64_t{8000000}, uint64_t{32000000}}) {
    CAPTURE(n);
    const shift fine = omnibus_shift(p, subject, n, 5.0);
    const shift floor = omnibus_shift(p, subject, n, st::cell_min_expected(n));
    if (n == 8000000) CHECK(fine.lambda > 0.5 * fine.spread);  // what the floor removes
    CHECK(floor.lambda < 0.5);
    CHECK(floor.lambda < 0.1 * floor.spread);
  }
}
