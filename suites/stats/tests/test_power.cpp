// Critical values, non-centralities and the power promises, checked against closed forms
// and by simulating the worst-case alternative.
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/non_central_chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <utility>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/power.h"
#include "suites/stats/tests/multinomial_sim.h"

namespace st = samplecheck::stats;

TEST_CASE("power: chi-square critical values") {
  // df = 1, alpha = 0.05: 3.841458820694124 (Abramowitz & Stegun 26.8, the 1.959963984540054^2
  // of the normal). df = 2 is the exponential with mean 2, so the critical value is -2 ln alpha
  // exactly. Boost's quantile is accurate to a few ulps; 1e-12 relative leaves room.
  CHECK(st::chi_square_critical(1, 0.05) ==
        Approx(1.959963984540054 * 1.959963984540054).epsilon(1e-12));
  for (double a : {0.05, 1e-3, 1e-7})
    CHECK(st::chi_square_critical(2, a) == Approx(-2.0 * std::log(a)).epsilon(1e-12));
  CHECK_THROWS_AS(st::chi_square_critical(0, 0.05), std::invalid_argument);
  CHECK_THROWS_AS(st::chi_square_critical(3, 1.5), std::invalid_argument);
}

TEST_CASE("power: non-centrality meets the power target") {
  // df = 1: ncx2(1, lambda) is (Z + sqrt(lambda))^2, so the power at critical value c is
  // Phi(sqrt(lambda) - sqrt(c)) + Phi(-sqrt(lambda) - sqrt(c)), independent of Boost's ncx2.
  const boost::math::normal_distribution<double> z;
  for (double a : {0.05, 1e-4, 1e-7}) {
    const double lambda = st::noncentrality_for_power(1, a, 0.99);
    const double root_c = std::sqrt(st::chi_square_critical(1, a));
    const double power = boost::math::cdf(z, std::sqrt(lambda) - root_c) +
                         boost::math::cdf(z, -std::sqrt(lambda) - root_c);
    CAPTURE(a, lambda);
    // The root-finder stops at a relative tolerance near 1e-10 in lambda.
    CHECK(power == Approx(0.99).epsilon(1e-6));
  }
  // G*Power tables: df = 1, alpha 0.05, power 0.99 needs lambda = 18.37 (4 digits given).
  CHECK(st::noncentrality_for_power(1, 0.05, 0.99) == Approx(18.37).epsilon(5e-4));
  for (int64_t df : {5, 100, 20000}) {
    const double lambda = st::noncentrality_for_power(df, 1e-7, 0.99);
    const boost::math::non_central_chi_squared_distribution<double> alt(static_cast<double>(df),
                                                                        lambda);
    CAPTURE(df, lambda);
    CHECK(boost::math::cdf(boost::math::complement(alt, st::chi_square_critical(df, 1e-7))) ==
          Approx(0.99).epsilon(1e-6));
  }
  // Samples and detectable TVD are inverse to each other (ceil adds < 1 sample).
  const double eps = st::detectable_tvd(30, 1e-7, 100000);
  const uint64_t n = st::samples_for_tvd(30, 1e-7, eps);
  CHECK(n >= 100000);
  CHECK(n <= 100001);
}

TEST_CASE("power: detectable_tvd holds for the worst-case alternative, by simulation") {
  // K = 20 cells: two halves of q mass 1/2 each; the alternative multiplies the first half
  // by (1 + 2 eps) and the second by (1 - 2 eps), so TV = eps and chi2(p||q) = 4 eps^2
  // exactly (the Cauchy-Schwarz equality case). At the eps detectable_tvd reports, the
  // Pearson test at alpha = 1e-3 must reject in >= 99% of replicates, up to the lower
  // end of the binomial 99.9% band for 400 replicates.
  std::vector<double> half = samplecheck::stats::testing::zipf(10, 0.7), q, p;
  for (int h = 0; h < 2; ++h)
    for (double w : half) q.push_back(w / 2.0);
  const uint64_t n = 20000;
  const double alpha = 1e-3;
  const double eps = st::detectable_tvd(19, alpha, n);
  for (size_t k = 0; k < q.size(); ++k)
    p.push_back(q[k] * (k < 10 ? 1.0 + 2.0 * eps : 1.0 - 2.0 * eps));
  samplecheck::stats::testing::multinomial_sim sim(p, 20261130);
  const uint64_t replicates = 400;
  uint64_t rejected = 0;
  for (uint64_t r = 0; r < replicates; ++r) {
    const auto counts = sim.counts(n);
    const auto fit = st::goodness_of_fit(counts, q);
    REQUIRE(fit.df == 19);  // every cell expected >= 5, so no merging changed the df
    rejected += fit.p_pearson <= alpha;
  }
  const auto band = samplecheck::stats::testing::binomial_band(replicates, 0.99);
  CAPTURE(eps, rejected, band.low);
  CHECK(rejected >= band.low);
}

// Of 400 binomial(n, p_alt) counts, how many a two-sided test against p0 at alpha rejects,
// and the fewest a test of power 0.99 rejects (the low end of the 99% band).
std::pair<uint64_t, uint64_t> simulated_rejections(uint64_t n, double p_alt, double p0,
                                                   double alpha, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::binomial_distribution<uint64_t> alt(n, p_alt);
  const uint64_t replicates = 400;
  uint64_t rejected = 0;
  for (uint64_t r = 0; r < replicates; ++r)
    rejected += st::binomial_two_sided_p(alt(rng), n, p0) <= alpha;
  return {rejected, samplecheck::stats::testing::binomial_band(replicates, 0.99).low};
}

TEST_CASE("power: detectable_mass_shift is exact and holds by simulation") {
  const uint64_t n = 100000;
  const double p0 = 1e-4, alpha = 1e-3;
  const uint64_t c = st::binomial_upper_critical(n, p0, alpha);
  // c is the smallest rejecting count: its tail is <= alpha/2, the one below is not.
  CHECK(st::binomial_upper_tail(c, n, p0) <= alpha / 2);
  CHECK(st::binomial_upper_tail(c - 1, n, p0) > alpha / 2);
  CHECK(st::binomial_two_sided_p(c, n, p0) <= alpha);
  const double shift = st::detectable_mass_shift(n, p0, alpha);
  CHECK(st::binomial_upper_tail(c, n, p0 + shift) == Approx(0.99).epsilon(1e-9));

  const auto [rejected, least] = simulated_rejections(n, p0 + shift, p0, alpha, 7);
  CAPTURE(shift, rejected, least);
  CHECK(rejected >= least);
  // p0 = 0: a single hit rejects, so the shift is the p with P(X >= 1) = 0.99.
  CHECK(st::detectable_mass_shift(n, 0.0, alpha) ==
        Approx(-std::expm1(std::log(0.01) / n)).epsilon(1e-9));
}

TEST_CASE("power: detectable_mass_loss is exact and holds by simulation") {
  const uint64_t n = 200000;
  const double p0 = 1.76e-4, alpha = 6e-8;
  const int64_t c = st::binomial_lower_critical(n, p0, alpha);
  // c is the largest rejecting count: its lower tail is <= alpha/2, the one above is not.
  REQUIRE(c >= 0);
  const auto k = static_cast<uint64_t>(c);
  CHECK(st::binomial_lower_tail(k, n, p0) <= alpha / 2);
  CHECK(st::binomial_lower_tail(k + 1, n, p0) > alpha / 2);
  CHECK(st::binomial_two_sided_p(k, n, p0) <= alpha);
  const double loss = st::detectable_mass_loss(n, p0, alpha);
  REQUIRE(loss > 0);
  REQUIRE(loss < p0);
  CHECK(st::binomial_lower_tail(k, n, p0 - loss) == Approx(0.99).epsilon(1e-9));

  const auto [rejected, least] = simulated_rejections(n, p0 - loss, p0, alpha, 11);
  CAPTURE(loss, rejected, least);
  CHECK(rejected >= least);
  // Too few draws for even a count of 0 to reject: no loss is detectable.
  CHECK(st::binomial_lower_critical(1000, p0, alpha) == -1);
  CHECK(std::isinf(st::detectable_mass_loss(1000, p0, alpha)));
}

TEST_CASE("power: the promise holds on a merged Zipf row, where Pearson's scale c > 1") {
  // Zipf(1.0) over 4,000 tokens, n = 30,000: merging leaves cells of unequal E, so the
  // exact-moment reference is c chi2(nu) with c > 1 while the power formulas use plain
  // chi2(df). A deviation along direction d (+q on even cells, -q on odd ones, centred)
  // scaled so that n chi2(p||q) = lambda* must still be rejected at alpha = 1e-4 in >= 99%
  // of 300 replicates (lower end of the 99.9% band). A larger row off-line held the
  // promise too (docs/judging-power/power.md, "Figures behind the statistics' comments").
  namespace t = samplecheck::stats::testing;
  const auto q = t::zipf(4000, 1.0);
  const uint64_t n = 30000;
  const double alpha = 1e-4;
  std::vector<uint64_t> any(q.size(), 0);
  any[0] = n;
  const auto cells = st::merge_by_expected(any, q, n);
  const auto k = static_cast<int64_t>(cells.members.size());
  std::vector<double> d(q.size(), 0.0);
  double sum = 0.0;
  for (int64_t c = 0; c < k; ++c)
    for (int64_t tok : cells.members[c]) sum += d[tok] = (c % 2 ? 1.0 : -1.0) * q[tok];
  for (size_t tok = 0; tok < q.size(); ++tok) d[tok] -= sum * q[tok];
  double chi2 = 0.0;
  for (const auto& members : cells.members) {
    double dk = 0.0, qk = 0.0;
    for (int64_t tok : members) dk += d[tok], qk += q[tok];
    chi2 += dk * dk / qk;
  }
  const double lambda = st::noncentrality_for_power(k - 1, alpha);
  const double step = std::sqrt(lambda / (static_cast<double>(n) * chi2));
  std::vector<double> p(q.size());
  for (size_t tok = 0; tok < q.size(); ++tok) p[tok] = q[tok] + step * d[tok];
  t::multinomial_sim sim(p, 4);
  const uint64_t replicates = 300;
  uint64_t rejected = 0;
  double scale = 0.0;
  for (uint64_t r = 0; r < replicates; ++r) {
    const auto fit = st::goodness_of_fit(sim.counts(n), q);
    scale = fit.pearson_scale;
    rejected += fit.p_pearson <= alpha;
  }
  const auto band = t::binomial_band(replicates, 0.99);
  CAPTURE(k, lambda, scale, rejected, band.low);
  CHECK(scale > 1.01);
  CHECK(rejected >= band.low);
}
