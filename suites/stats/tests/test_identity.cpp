// The ADK identity statistic: its null moments against exact enumeration, and the
// validity of its Cantelli p-value on a sparse, long-tailed row.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <vector>

#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/tests/multinomial_sim.h"

namespace st = samplecheck::stats;
using std::vector;

namespace {
// E[Z] and Var[Z] by summing over every multinomial outcome of m draws (pmf from lgamma),
// independent of the factorial-moment algebra the library uses.
std::pair<double, double> enumerate_moments(const vector<double>& q, uint64_t m, double floor) {
  double mean = 0.0, second = 0.0;
  vector<uint64_t> counts(q.size(), 0);
  std::function<void(size_t, uint64_t)> walk = [&](size_t i, uint64_t left) {
    if (i + 1 == q.size()) {
      counts[i] = left;
      double log_pmf = std::lgamma(static_cast<double>(m) + 1);
      for (size_t k = 0; k < q.size(); ++k)
        log_pmf += static_cast<double>(counts[k]) * std::log(q[k]) -
                   std::lgamma(static_cast<double>(counts[k]) + 1);
      const double z = st::identity_test(counts, q, floor).statistic;
      mean += std::exp(log_pmf) * z;
      second += std::exp(log_pmf) * z * z;
      return;
    }
    for (uint64_t c = 0; c <= left; ++c) {
      counts[i] = c;
      walk(i + 1, left - c);
    }
  };
  walk(0, m);
  return {mean, second - mean * mean};
}
}  // namespace

TEST_CASE("identity: exact null mean and variance match enumeration") {
  // Five tokens; floor 0 keeps every token a cell, floor 0.1 pools the last two.
  // The enumeration sums a few thousand terms: agreement to 1e-9 relative is expected.
  const vector<double> q{0.4, 0.3, 0.2, 0.06, 0.04};
  for (uint64_t m : {1, 2, 3, 7, 12}) {
    for (double floor : {0.0, 0.1}) {
      const auto [mean, var] = enumerate_moments(q, m, floor);
      vector<uint64_t> any(q.size(), 0);
      any[0] = m;
      const auto r = st::identity_test(any, q, floor);
      CAPTURE(m, floor, mean, var);
      CHECK(r.null_mean == Approx(mean).epsilon(1e-9).margin(1e-12));
      CHECK(r.null_sd * r.null_sd == Approx(var).epsilon(1e-9).margin(1e-12));
      CHECK(r.cells == (floor > 0 ? 4 : 5));
    }
  }
}

TEST_CASE("identity: valid on a sparse Zipf row over 100k tokens") {
  // Zipf(1.0) over 100,000 tokens, m = 2,000 draws (most tokens unseen). Whatever the
  // floor, the false-alarm rate at alpha = 0.05 over 300 replicates must not exceed the
  // top of the binomial 99.9% band of Binomial(300, 0.05). Cantelli is conservative, so
  // far fewer are expected.
  const auto q = samplecheck::stats::testing::zipf(100000, 1.0);
  const uint64_t replicates = 300;
  const auto band = samplecheck::stats::testing::binomial_band(replicates, 0.05);
  for (double floor : {st::kDefaultIdentityFloor, 0.0}) {
    samplecheck::stats::testing::multinomial_sim sim(q, 99);
    const uint64_t rejected = sim.rejections(replicates, 2000, [&](const vector<uint64_t>& c) {
      return st::identity_test(c, q, floor).p_value <= 0.05;
    });
    CAPTURE(floor, rejected, band.high);
    CHECK(rejected <= band.high);
  }
}

TEST_CASE("identity: detects a planted deviation and impossible tokens") {
  // The sampler drops the top token of Zipf(1.0) over 1,000 tokens and renormalises
  // (q_0 = 0.134, TV = 0.134). E[Z] = m chi2(p||q) = m (q_0 + q_0^2 / (1 - q_0)) = 0.154 m,
  // sd under the null about sqrt(2 * 1000) = 45: at m = 20,000, Z is near 3,090 and the
  // Cantelli p-value near 2e-4, so it must fall below 1e-3. (At m = 5,000 it is only
  // about 3e-3: Cantelli's price for validity on any row.)
  const auto q = samplecheck::stats::testing::zipf(1000, 1.0);
  vector<double> p = q;
  p[0] = 0.0;
  samplecheck::stats::testing::multinomial_sim sim(p, 5);
  const auto r = st::identity_test(sim.counts(20000), q);
  CAPTURE(r.statistic, r.null_sd, r.p_value);
  CHECK(r.p_value < 1e-3);

  const vector<double> q2{0.5, 0.5, 0.0};
  CHECK(st::identity_test(vector<uint64_t>{3, 3, 1}, q2).p_value == 0.0);
  CHECK_THROWS_AS(st::identity_test(vector<uint64_t>{3, 3, 1}, q2, -1.0), std::invalid_argument);
}
