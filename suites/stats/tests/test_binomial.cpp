// Exact binomial p-values and Clopper-Pearson intervals against closed forms, and the
// per-token report on planted deviations and under the null.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <vector>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/tests/multinomial_sim.h"

namespace st = samplecheck::stats;
using std::vector;

TEST_CASE("binomial: exact two-sided p-values") {
  // n = 10, p = 1/2: P(X <= 0) = 1/1024 so p = 2/1024; P(X >= 8) = (45 + 10 + 1) / 1024,
  // so p = 112/1024. Boost's incomplete beta is accurate to a few ulps: 1e-12 relative.
  CHECK(st::binomial_two_sided_p(0, 10, 0.5) == Approx(2.0 / 1024).epsilon(1e-12));
  CHECK(st::binomial_two_sided_p(8, 10, 0.5) == Approx(112.0 / 1024).epsilon(1e-12));
  CHECK(st::binomial_two_sided_p(5, 10, 0.5) == 1.0);
  CHECK(st::binomial_two_sided_p(0, 10, 0.0) == 1.0);
  CHECK(st::binomial_two_sided_p(1, 10, 0.0) == 0.0);
  CHECK(st::binomial_two_sided_p(9, 10, 1.0) == 0.0);
  // n = 1000, p = 0.001, k = 5: the upper tail by summing the pmf (lgamma) in long double.
  long double below = 0;
  for (int k = 0; k < 5; ++k)
    below += std::exp(std::lgamma(1001.0L) - std::lgamma(k + 1.0L) - std::lgamma(1001.0L - k) +
                      k * std::log(0.001L) + (1000 - k) * std::log1p(-0.001L));
  CHECK(st::binomial_upper_tail(5, 1000, 0.001) ==
        Approx(static_cast<double>(1 - below)).epsilon(1e-10));
  CHECK_THROWS_AS(st::binomial_two_sided_p(11, 10, 0.5), std::invalid_argument);
  CHECK_THROWS_AS(st::binomial_two_sided_p(1, 10, 1.5), std::invalid_argument);
}

TEST_CASE("binomial: planted over- and under-sampled tokens are named") {
  // 100 equally likely tokens, n = 10,000 (100 expected each). Token 7 gets 150 extra
  // draws and token 3 none: both must be reported at alpha = 1e-3, token 3 and 7 first,
  // and their Clopper-Pearson intervals must exclude q = 0.01 on the right side.
  const vector<double> q(100, 0.01);
  samplecheck::stats::testing::multinomial_sim sim(q, 17);
  auto counts = sim.counts(10000);
  counts[7] += 150;
  counts[8] += counts[3];
  counts[3] = 0;
  const auto found = st::deviating_tokens(counts, q, 1e-3);
  REQUIRE(found.size() >= 2);
  for (size_t i = 0; i < 2; ++i) {
    const auto& d = found[i];
    CAPTURE(d.token, d.count, d.lower, d.upper, d.p_value);
    CHECK((d.token == 3 || d.token == 7));
    CHECK(d.over == (d.token == 7));
    CHECK((d.over ? d.lower > 0.01 : d.upper < 0.01));
  }
  CHECK(st::deviating_tokens(counts, q, 1e-3, 1).size() == 1);
  // A token with q = 0 that appears is always reported, with a lower bound above 0.
  vector<double> q0(q);
  q0[99] = 0.0;
  q0[98] = 0.02;
  const auto z = st::deviating_tokens(vector<uint64_t>(counts), q0, 1e-3);
  bool named = false;
  for (const auto& d : z) named |= d.token == 99 && d.over && d.lower > 0.0;
  CHECK(named);
}

TEST_CASE("binomial: family-wise false alarms under the null") {
  // 300 replicates of Zipf(1.0) over 2,000 tokens with n = 20,000: at alpha = 0.05 the
  // number of replicates reporting any token must stay under the top of the binomial
  // 99.9% band of Binomial(300, 0.05) (Bonferroni is conservative).
  const auto q = samplecheck::stats::testing::zipf(2000, 1.0);
  samplecheck::stats::testing::multinomial_sim sim(q, 2024);
  const uint64_t replicates = 300;
  const uint64_t alarms = sim.rejections(replicates, 20000, [&](const vector<uint64_t>& c) {
    return !st::deviating_tokens(c, q, 0.05).empty();
  });
  const auto band = samplecheck::stats::testing::binomial_band(replicates, 0.05);
  CAPTURE(alarms, band.high);
  CHECK(alarms <= band.high);
}

TEST_CASE("binomial: a full vocabulary row is checked quickly") {
  // V = 151,936 (the largest fixture vocabulary), n = 100,000. Reported for the battery's
  // time budget; the check is that nothing is reported under the null at alpha = 1e-6.
  const auto q = samplecheck::stats::testing::zipf(151936, 1.0);
  samplecheck::stats::testing::multinomial_sim sim(q, 3);
  const auto counts = sim.counts(100000);
  const auto start = std::chrono::steady_clock::now();
  const auto found = st::deviating_tokens(counts, q, 1e-6);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("deviating_tokens at V = 151936, n = 100000: " << seconds << " s");
  CHECK(found.empty());
}
