// Pearson and G against hand-computed values, the merge's independence from the observed
// counts, and the false-alarm rate under the null.
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>

#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/tests/multinomial_sim.h"

namespace st = samplecheck::stats;
using std::vector;

TEST_CASE("gof: chi-square upper tail against closed forms") {
  // df = 1: P(chi2 > x) = erfc(sqrt(x / 2)); df = 2: exp(-x / 2); df = 3:
  // erfc(sqrt(x / 2)) + sqrt(2 x / pi) exp(-x / 2). std::erfc/exp are independent of Boost,
  // whose incomplete gamma is good to a few ulps: 1e-12 relative (1e-10 in the far tail).
  CHECK(st::chi_square_upper_tail(1, 3.841458820694124) == Approx(0.05).epsilon(1e-12));
  for (double x : {0.1, 1.0, 4.0, 30.0, 60.0}) {
    CAPTURE(x);
    CHECK(st::chi_square_upper_tail(1, x) == Approx(std::erfc(std::sqrt(x / 2))).epsilon(1e-10));
    CHECK(st::chi_square_upper_tail(2, x) == Approx(std::exp(-x / 2)).epsilon(1e-12));
    CHECK(st::chi_square_upper_tail(3, x) ==
          Approx(std::erfc(std::sqrt(x / 2)) + std::sqrt(2 * x / M_PI) * std::exp(-x / 2))
              .epsilon(1e-10));
  }
  // scipy's chi2.ppf(0.999, 10), the peers' critical value: the same tail at a larger df.
  CHECK(st::chi_square_upper_tail(10, 29.58829844507442) == Approx(0.001).epsilon(1e-10));
  CHECK(st::chi_square_upper_tail(5, 0.0) == 1.0);
  CHECK(st::chi_square_upper_tail(3, INFINITY) == 0.0);
  // Bad input is the caller's error, not a p-value: df <= 0, df infinite, x NaN.
  CHECK_THROWS_AS(st::chi_square_upper_tail(0, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(st::chi_square_upper_tail(INFINITY, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(st::chi_square_upper_tail(3, NAN), std::invalid_argument);
}

TEST_CASE("gof: known values") {
  // Two cells, q = (1/2, 1/2), n = 100, counts (60, 40): X2 = 2 * 10^2 / 50 = 4;
  // G = 2 (60 ln 1.2 + 40 ln 0.8). Pearson's exact variance: 2 * 1 + (2 + 2 - 4 - 4 + 2) /
  // 100 = 1.98, so c = 0.99 and nu = 1 / 0.99. Plain arithmetic: 1e-14.
  const vector<uint64_t> c1{60, 40};
  const vector<double> q1{0.5, 0.5};
  auto r = st::goodness_of_fit(c1, q1);
  CHECK(r.df == 1);
  CHECK(r.cells == 2);
  CHECK(r.pearson == Approx(4.0).epsilon(1e-14));
  CHECK(r.g_statistic == Approx(2.0 * (60 * std::log(1.2) + 40 * std::log(0.8))).epsilon(1e-14));
  CHECK(r.pearson_variance == Approx(1.98).epsilon(1e-14));
  CHECK(r.pearson_scale == Approx(0.99).epsilon(1e-14));
  CHECK(r.pearson_nu == Approx(1 / 0.99).epsilon(1e-14));
  CHECK(r.p_pearson == Approx(st::chi_square_upper_tail(1 / 0.99, 4 / 0.99)).epsilon(1e-14));
  CHECK(r.p_g ==
        Approx(st::chi_square_upper_tail(r.g_nu, r.g_statistic / r.g_scale)).epsilon(1e-14));
  // With E = 50 per cell the corrections are small: p stays near the classical
  // erfc(sqrt(2)) = 0.0455 (within 5%).
  CHECK(r.p_pearson == Approx(std::erfc(std::sqrt(2.0))).epsilon(0.05));

  // Three cells, q = (1/2, 1/4, 1/4), n = 200, counts (90, 60, 50): E = (100, 50, 50),
  // X2 = 1 + 2 + 0 = 3; Var = 4 + (2 + 4 + 4 - 9 - 6 + 2) / 200 = 3.985.
  const vector<uint64_t> c2{90, 60, 50};
  const vector<double> q2{0.5, 0.25, 0.25};
  r = st::goodness_of_fit(c2, q2);
  CHECK(r.df == 2);
  CHECK(r.pearson == Approx(3.0).epsilon(1e-14));
  CHECK(r.pearson_variance == Approx(3.985).epsilon(1e-14));
  CHECK(r.p_pearson == Approx(std::exp(-1.5)).epsilon(0.02));
}

TEST_CASE("gof: exact null moments of Pearson and G against enumeration") {
  // Every multinomial outcome of n draws over q = (0.5, 0.3, 0.2), n = 30..60 (all E >= 5):
  // E[X2] = K - 1 and the Haldane variance are exact (1e-9 relative for the summation).
  // G's moments come from Poissonization, so they are approximate against enumeration;
  // the checks allow 0.5% on the mean and 2% on the variance, two to three times the errors
  // seen (docs/judging-power/power.md, "Figures behind the statistics' comments").
  const vector<double> q{0.5, 0.3, 0.2};
  for (uint64_t n : {30, 45, 60}) {
    double px = 0, pxx = 0, pg = 0, pgg = 0;
    vector<uint64_t> c(3);
    for (uint64_t a = 0; a <= n; ++a) {
      for (uint64_t b = 0; a + b <= n; ++b) {
        c = {a, b, n - a - b};
        double log_pmf = std::lgamma(n + 1.0);
        for (int k = 0; k < 3; ++k) log_pmf += c[k] * std::log(q[k]) - std::lgamma(c[k] + 1.0);
        const auto r = st::goodness_of_fit(c, q);
        const double w = std::exp(log_pmf);
        px += w * r.pearson, pxx += w * r.pearson * r.pearson;
        pg += w * r.g_statistic, pgg += w * r.g_statistic * r.g_statistic;
      }
    }
    const auto r = st::goodness_of_fit(vector<uint64_t>{n, 0, 0}, q);
    CAPTURE(n, px, pxx - px * px, pg, pgg - pg * pg, r.g_mean, r.g_variance);
    CHECK(px == Approx(2.0).epsilon(1e-9));
    CHECK(pxx - px * px == Approx(r.pearson_variance).epsilon(1e-9));
    CHECK(pg == Approx(r.g_mean).epsilon(0.005));
    CHECK(pgg - pg * pg == Approx(r.g_variance).epsilon(0.02));
  }
}

TEST_CASE("gof: merge pools by expected count, in a stated order") {
  // n = 100, q = (.5 .3 .1 .05 .03 .02): expected 50 30 10 5 3 2. With min 6: 50, 30, 10
  // stand alone; 5 + 3 = 8 closes a pool; the final 2 joins that last cell.
  const vector<double> q{0.5, 0.3, 0.1, 0.05, 0.03, 0.02};
  const vector<uint64_t> counts{45, 35, 9, 6, 3, 2};
  const auto m = st::merge_by_expected(counts, q, 100, 6.0);
  REQUIRE(m.members.size() == 4);
  CHECK(m.members[3] == vector<int64_t>{3, 4, 5});
  CHECK(m.observed[3] == 11);
  CHECK(m.expected[3] == Approx(10.0).epsilon(1e-12));
  CHECK_THROWS_AS(st::merge_by_expected(counts, q, 99, 6.0), std::invalid_argument);
}

TEST_CASE("gof: the merge never depends on the observed counts") {
  // Property: for random q with many exactly equal probabilities (ties are where a merge
  // could peek at counts) and two unrelated count vectors of the same n, the cells, their
  // members and expected counts are identical.
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t v = 20 + rng() % 200;
    vector<double> q(v);
    for (auto& x : q) x = static_cast<double>(1 + rng() % 6);  // few distinct values
    q[rng() % v] = 0.0;
    const double sum = std::accumulate(q.begin(), q.end(), 0.0);
    for (auto& x : q) x /= sum;
    const uint64_t n = 50 + rng() % 500;
    samplecheck::stats::testing::multinomial_sim sim(q, rng());
    const auto a = sim.counts(n), b = sim.counts(n);
    const auto ma = st::merge_by_expected(a, q, n), mb = st::merge_by_expected(b, q, n);
    CAPTURE(trial, v, n);
    REQUIRE(ma.members == mb.members);
    REQUIRE(ma.expected == mb.expected);
    REQUIRE(ma.zero_probability == mb.zero_probability);
    // Every positive-q token sits in exactly one cell; every cell reaches the minimum
    // unless the whole row's expectation is below it.
    vector<int> seen(v, 0);
    for (const auto& cell : ma.members)
      for (int64_t t : cell) ++seen[static_cast<size_t>(t)];
    for (size_t i = 0; i < v; ++i) REQUIRE(seen[i] == (q[i] > 0 ? 1 : 0));
    for (double e : ma.expected) REQUIRE(e >= 5.0 - 1e-9);
  }
}

TEST_CASE("gof: impossible tokens and bad input") {
  const vector<double> q{0.5, 0.5, 0.0};
  const vector<uint64_t> hit{50, 49, 1};
  auto r = st::goodness_of_fit(hit, q);
  CHECK(r.observed_zero_probability == 1);
  CHECK(r.p_pearson == 0.0);
  CHECK(r.p_g == 0.0);
  const vector<uint64_t> two{1, 1};
  CHECK_THROWS_WITH(st::goodness_of_fit(two, q), Catch::Contains("counts has 2"));
  const vector<uint64_t> three{1, 1, 0};
  CHECK_THROWS_WITH(st::goodness_of_fit(three, vector<double>{0.5, 0.6, 0.0}),
                    Catch::Contains("sum to"));
  CHECK_THROWS_WITH(st::goodness_of_fit(three, vector<double>{0.5, 0.5, NAN}),
                    Catch::Contains("probs[2]"));
  CHECK_THROWS_WITH(st::goodness_of_fit(three, vector<double>{1.5, -0.5, 0.0}),
                    Catch::Contains("probs[1]"));
  CHECK_THROWS_WITH(st::goodness_of_fit(vector<uint64_t>{0, 0, 0}, q),
                    Catch::Contains("no samples"));
}

TEST_CASE("gof: false-alarm rate under the null") {
  // 500 replicates of n = 2000 draws from Zipf(1.1) over 60 tokens (merging pools the
  // tail). At alpha = 0.05 the count of rejections must lie in the binomial 99.9% band of
  // Binomial(500, 0.05): the chi-square approximation with E >= 5 is close, not exact.
  const auto q = samplecheck::stats::testing::zipf(60, 1.1);
  samplecheck::stats::testing::multinomial_sim sim(q, 424242);
  const uint64_t replicates = 500;
  uint64_t pearson = 0, g = 0;
  for (uint64_t r = 0; r < replicates; ++r) {
    const auto fit = st::goodness_of_fit(sim.counts(2000), q);
    pearson += fit.p_pearson <= 0.05;
    g += fit.p_g <= 0.05;
  }
  const auto band = samplecheck::stats::testing::binomial_band(replicates, 0.05);
  CAPTURE(pearson, g, band.low, band.high);
  WARN("gof null false alarms at 0.05 of " << replicates << ": Pearson " << pearson << ", G " << g);
  CHECK(pearson >= band.low);
  CHECK(pearson <= band.high);
  CHECK(g >= band.low);
  CHECK(g <= band.high);
}
