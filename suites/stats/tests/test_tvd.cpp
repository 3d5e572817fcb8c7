// The TVD point estimate on a hand example and the coverage of its upper bound.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/tests/multinomial_sim.h"
#include "suites/stats/tvd.h"

namespace st = samplecheck::stats;
using std::vector;

TEST_CASE("tvd: hand example") {
  // q = (1/2, 1/2), counts (60, 40), n = 100: point = 1/2 (0.1 + 0.1) = 0.1; K = 2, so
  // upper = 0.1 + 1/2 sqrt(1/100) + sqrt(ln(1/0.01) / 200). Plain arithmetic: 1e-14.
  const auto r = st::tvd_upper_bound(vector<uint64_t>{60, 40}, vector<double>{0.5, 0.5}, 0.01);
  CHECK(r.point == Approx(0.1).epsilon(1e-14));
  CHECK(r.upper == Approx(0.1 + 0.05 + std::sqrt(std::log(100.0) / 200.0)).epsilon(1e-14));
  CHECK(r.confidence == Approx(0.99).epsilon(1e-15));
  CHECK(r.cells == 2);
  // Samples on a q = 0 token are TV mass in a cell of their own.
  const auto z =
      st::tvd_upper_bound(vector<uint64_t>{50, 40, 10}, vector<double>{0.5, 0.5, 0.0}, 0.01);
  CHECK(z.point == Approx(0.5 * (0.0 + 0.1 + 0.1)).epsilon(1e-14));
  CHECK(z.cells == 3);
  CHECK_THROWS_AS(st::tvd_upper_bound(vector<uint64_t>{1, 1}, vector<double>{0.5, 0.5}, 0.0),
                  std::invalid_argument);
}

TEST_CASE("tvd: the upper bound covers the true cell TVD") {
  // A planted alternative with a known TV over the merged cells: the bound at delta =
  // 0.05 may miss in at most the top of the binomial 99.9% band of Binomial(300, 0.05)
  // replicates (the proof gives <= 5%; the slack of the expectation bound makes misses rare).
  const auto q = samplecheck::stats::testing::zipf(500, 1.1);
  vector<double> p = q;
  for (size_t i = 0; i < p.size(); ++i) p[i] *= (i % 2 == 0) ? 1.3 : 0.8;
  double sum = 0.0;
  for (double x : p) sum += x;
  for (double& x : p) x /= sum;
  const uint64_t n = 3000;
  samplecheck::stats::testing::multinomial_sim sim(p, 31337);
  const uint64_t replicates = 300;
  uint64_t misses = 0;
  double true_tv = -1.0;
  for (uint64_t r = 0; r < replicates; ++r) {
    const auto counts = sim.counts(n);
    const auto bound = st::tvd_upper_bound(counts, q, 0.05);
    if (true_tv < 0) {
      // The cells depend on q and n only, so one merge gives the partition for every replicate.
      const auto m = st::merge_by_expected(counts, q, n);
      true_tv = 0.0;
      for (const auto& cell : m.members) {
        double pk = 0.0, qk = 0.0;
        for (int64_t t : cell) pk += p[t], qk += q[t];
        true_tv += 0.5 * std::fabs(pk - qk);
      }
    }
    misses += bound.upper < true_tv;
  }
  const auto band = samplecheck::stats::testing::binomial_band(replicates, 0.05);
  CAPTURE(true_tv, misses, band.high);
  CHECK(true_tv > 0.05);  // the alternative is not trivial
  CHECK(misses <= band.high);
}
