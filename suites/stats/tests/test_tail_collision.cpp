// Tail and collision tests: exact values, calibration under the null, and detection of
// the defects they exist for.
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/collision_test.h"
#include "suites/stats/power.h"
#include "suites/stats/tail_test.h"
#include "suites/stats/tests/multinomial_sim.h"

namespace st = samplecheck::stats;
using std::vector;

TEST_CASE("tail: the tail set and its exact binomial p-value") {
  // q = (0.9, 0.0999, 1e-4 / 2, 1e-4 / 2 - 1e-6, 1e-6): threshold 1e-3 takes the last
  // three, mass 1e-4. n = 1000 with 3 tail draws: p = binomial_two_sided_p(3, 1000, 1e-4).
  const vector<double> q{0.9, 0.0999, 5e-5, 4.9e-5, 1e-6};
  const vector<uint64_t> counts{900, 97, 2, 0, 1};
  const auto r = st::tail_test(counts, q, 1e-3);
  CHECK(r.tokens == 3);
  CHECK(r.count == 3);
  CHECK(r.expected_mass == Approx(1e-4).epsilon(1e-12));
  CHECK(r.observed_fraction == Approx(0.003).epsilon(1e-15));
  CHECK(r.p_value == st::binomial_two_sided_p(3, 1000, r.expected_mass));
  CHECK(r.p_value < 1e-3);
  CHECK_THROWS_AS(st::tail_test(counts, q, 0.0), std::invalid_argument);
}

TEST_CASE("tail: calibrated under the null, fails a truncated or flattened tail") {
  // Zipf(1.0) over 100,000 tokens: about 21% of the mass sits below 1e-5. 300 replicates
  // of n = 2,000: false alarms at 0.05 within the top of the 99.9% band (the exact test
  // is conservative).
  const auto q = samplecheck::stats::testing::zipf(100000, 1.0);
  samplecheck::stats::testing::multinomial_sim sim(q, 8);
  const uint64_t replicates = 300;
  const uint64_t alarms = sim.rejections(replicates, 2000, [&](const vector<uint64_t>& c) {
    return st::tail_test(c, q).p_value <= 0.05;
  });
  const auto band = samplecheck::stats::testing::binomial_band(replicates, 0.05);
  CAPTURE(alarms, band.high);
  CHECK(alarms <= band.high);

  // A sampler that never emits a tail token (truncation), and one that emits them twice
  // as often (a flattened tail): both rejected at 1e-6 with n = 2,000.
  vector<double> truncated = q, flattened = q;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] < 1e-5) truncated[i] = 0.0, flattened[i] *= 2.0;
  }
  samplecheck::stats::testing::multinomial_sim cut(truncated, 9), flat(flattened, 10);
  CHECK(st::tail_test(cut.counts(2000), q).p_value < 1e-6);
  CHECK(st::tail_test(flat.counts(2000), q).p_value < 1e-6);
}

TEST_CASE("collision: exact value and bad input") {
  // a = (0 1 2 3), b = (0 2 2 1): 2 equal pairs. q uniform on 4 tokens, s = 1/4:
  // P(Bin(4, 1/4) >= 2) = 1 - (81 + 108) / 256 = 67/256.
  const vector<int32_t> a{0, 1, 2, 3}, b{0, 2, 2, 1};
  const vector<double> q(4, 0.25);
  const auto r = st::collision_test(a, b, q);
  CHECK(r.collisions == 2);
  CHECK(r.expected == Approx(1.0).epsilon(1e-15));
  CHECK(r.p_value == Approx(67.0 / 256).epsilon(1e-12));
  const vector<int32_t> bad{0, 4, 2, 1};
  CHECK_THROWS_WITH(st::collision_test(a, bad, q), Catch::Contains("stream b[1] = 4"));
  CHECK_THROWS_AS(st::collision_test(a, vector<int32_t>{0}, q), std::invalid_argument);
}

TEST_CASE("collision: calibrated under independence, detects shared randomness") {
  // Zipf(1.1) over 1,000 tokens, s = sum q^2 about 0.07; pairs of 5,000 independent draws.
  const auto q = samplecheck::stats::testing::zipf(1000, 1.1);
  samplecheck::stats::testing::multinomial_sim sim(q, 12);
  const uint64_t replicates = 300, n = 5000;
  uint64_t alarms = 0;
  for (uint64_t r = 0; r < replicates; ++r) {
    const auto a = sim.stream(n), b = sim.stream(n);
    alarms += st::collision_test(a, b, q).p_value <= 0.05;
  }
  const auto band = samplecheck::stats::testing::binomial_band(replicates, 0.05);
  CAPTURE(alarms, band.high);
  CHECK(alarms <= band.high);

  // The second stream replays the first with probability rho (a stale offset on some
  // rows). The collision probability becomes s + rho (1 - s); at the rho that
  // detectable_mass_shift promises for alpha = 1e-6, >= 99% of 300 replicates reject
  // (lower end of the 99.9% band).
  const auto first = st::collision_test(sim.stream(n), sim.stream(n), q);
  const double s = first.collision_prob;
  const double shift = st::detectable_mass_shift(n, s, 2e-6);  // one-sided at 1e-6
  const double rho = shift / (1.0 - s);
  std::bernoulli_distribution replay(rho);
  uint64_t rejected = 0;
  for (uint64_t r = 0; r < replicates; ++r) {
    auto a = sim.stream(n), b = sim.stream(n);
    for (uint64_t j = 0; j < n; ++j)
      if (replay(sim.rng())) b[j] = a[j];
    rejected += st::collision_test(a, b, q).p_value <= 1e-6;
  }
  const auto power_band = samplecheck::stats::testing::binomial_band(replicates, 0.99);
  CAPTURE(s, shift, rho, rejected, power_band.low);
  CHECK(rejected >= power_band.low);
}
