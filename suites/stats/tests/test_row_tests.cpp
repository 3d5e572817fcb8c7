// The row tests (omnibus, cumulative, token; Sidak over them; the Monte Carlo body),
// the Sidak combination, the randomised binomial p-values and the uniformity tests:
// known values, null calibration (p-values close to uniform, not piled at 1) and power
// on planted rows.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <vector>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/combine.h"
#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/multinomial_draw.h"
#include "suites/stats/row_tests.h"
#include "suites/stats/tests/multinomial_sim.h"
#include "suites/stats/uniformity.h"

namespace st = samplecheck::stats;
using st::testing::multinomial_sim;
using std::vector;

namespace {
// The fixtures' peaked shape at V tokens: 8 halving head tokens (0.95 of the mass), a
// Zipf(1.1) tail holding 0.05.
vector<double> peaked_row(size_t V) {
  const vector<double> tail = st::testing::zipf(V - 8, 1.1);
  vector<double> q(V);
  for (size_t i = 0; i < V; ++i)
    q[i] = i < 8 ? 0.475 / (1 - std::pow(0.5, 8)) * std::pow(0.5, i) : 0.05 * tail[i - 8];
  return q;
}

// 4,000 null p-values: the count below 0.1 inside its binomial band.
void check_null_p_values(const vector<double>& p) {
  REQUIRE(p.size() == 4000);
  const auto band = st::testing::binomial_band(4000, 0.1);
  const auto below =
      static_cast<uint64_t>(std::count_if(p.begin(), p.end(), [](double v) { return v < 0.1; }));
  CHECK(below >= band.low);
  CHECK(below <= band.high);
}
}  // namespace

TEST_CASE("sidak: combination and level") {
  CHECK(st::sidak_combine(0.0, 5) == 0.0);
  CHECK(st::sidak_combine(1.0, 5) == 1.0);
  // 1 - 0.99^10, and its inverse.
  CHECK(st::sidak_combine(0.01, 10) == Approx(1 - std::pow(0.99, 10)).epsilon(1e-13));
  CHECK(st::sidak_level(1 - std::pow(0.99, 10), 10) == Approx(0.01).epsilon(1e-12));
  // At tiny levels Sidak and Bonferroni agree: 1e-9 * 30 to 1e-8 relative.
  CHECK(st::sidak_combine(1e-9, 30) == Approx(3e-8).epsilon(1e-7));
  const vector<double> p{0.3, 0.02, 0.9};
  CHECK(st::sidak_min(p) == Approx(1 - std::pow(0.98, 3)).epsilon(1e-13));
  CHECK_THROWS_AS(st::sidak_combine(0.5, 0), std::invalid_argument);
}

TEST_CASE("randomised binomial p-value: bounds and exact uniformity") {
  // X ~ Binomial(10, 0.1): P(X > 1) + u P(X = 1), against the pmf summed by hand.
  const double p0 = std::pow(0.9, 10), p1 = 10 * 0.1 * std::pow(0.9, 9);
  CHECK(st::binomial_randomized_upper_tail(1, 10, 0.1, 0.0) == Approx(1 - p0 - p1).epsilon(1e-12));
  CHECK(st::binomial_randomized_upper_tail(1, 10, 0.1, 0.5) ==
        Approx(1 - p0 - 0.5 * p1).epsilon(1e-12));
  CHECK(st::binomial_randomized_upper_tail(0, 10, 0.1, 0.999999) ==
        Approx(1 - 1e-6 * p0).epsilon(1e-9));
  // With an expected count of 0.4 the plain p-value is 1 in 67% of null draws; the
  // randomised one is uniform: its count below 0.1 is Binomial(4000, 0.1).
  std::mt19937_64 rng(7);
  std::binomial_distribution<uint64_t> x(4000, 1e-4);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  vector<double> p;
  for (int i = 0; i < 4000; ++i)
    p.push_back(st::binomial_randomized_upper_tail(x(rng), 4000, 1e-4, u(rng)));
  check_null_p_values(p);
  CHECK(st::uniformity(p).ks_p > 1e-3);
}

TEST_CASE("uniformity: limit distributions against published critical values") {
  // Kolmogorov: Q(1.3581) = 0.05, Q(1.6276) = 0.01 (Smirnov's table).
  CHECK(st::kolmogorov_upper_tail(1.3581) == Approx(0.05).epsilon(1e-3));
  CHECK(st::kolmogorov_upper_tail(1.6276) == Approx(0.01).epsilon(2e-3));
  // Anderson-Darling limit: 2.492 -> 0.95, 3.857 -> 0.99, 1.933 -> 0.90 (Stephens 1974).
  CHECK(st::anderson_darling_cdf(2.492) == Approx(0.95).epsilon(1e-3));
  CHECK(st::anderson_darling_cdf(3.857) == Approx(0.99).epsilon(1e-3));
  CHECK(st::anderson_darling_cdf(1.933) == Approx(0.90).epsilon(1e-3));
  // p-values piled at 1 (Bonferroni's k * min p, k = 30) are rejected; uniform ones are not.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  vector<double> uniform, bonferroni;
  for (int i = 0; i < 200; ++i) {
    uniform.push_back(u(rng));
    double m = 1;
    for (int k = 0; k < 30; ++k) m = std::min(m, u(rng));
    bonferroni.push_back(std::min(1.0, 30 * m));
  }
  const auto good = st::uniformity(uniform), piled = st::uniformity(bonferroni);
  CHECK(good.ad_p > 1e-3);
  CHECK(good.sign_p > 1e-3);
  CHECK(piled.ad_p < 1e-6);
  CHECK(piled.median > piled.median_high);
}

TEST_CASE("randomised two-sided binomial p-value: never above the doubled exact tail") {
  // X ~ Binomial(30, 0.5), x = 20: the doubled tail counts P(X = 20) in both tails.
  const double doubled = st::binomial_two_sided_p(20, 30, 0.5);
  for (const double u : {0.0, 0.3, 0.999}) {
    CAPTURE(u);
    CHECK(st::binomial_randomized_two_sided_p(20, 30, 0.5, u) <= doubled);
  }
  // Above the mean the upper tail is the smaller: 2 (P(X > 20) + (1 - u) P(X = 20)), so
  // u = 0 is the doubled tail and u -> 1 is below it by 2 P(X = 20).
  const double atom = st::binomial_upper_tail(20, 30, 0.5) - st::binomial_upper_tail(21, 30, 0.5);
  CHECK(st::binomial_randomized_two_sided_p(20, 30, 0.5, 0.0) == Approx(doubled).epsilon(1e-12));
  CHECK(st::binomial_randomized_two_sided_p(20, 30, 0.5, 0.75) ==
        Approx(doubled - 1.5 * atom).epsilon(1e-12));
  // Exactly uniform: at a mean of 20 (atoms up to 0.09) the share below 0.1 is 0.1.
  std::mt19937_64 rng(17);
  std::binomial_distribution<uint64_t> x(2000, 0.01);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  vector<double> p;
  for (int i = 0; i < 4000; ++i)
    p.push_back(st::binomial_randomized_two_sided_p(x(rng), 2000, 0.01, u(rng)));
  check_null_p_values(p);
  CHECK(st::uniformity(p).ad_p > 1e-3);
  CHECK_THROWS_AS(st::binomial_randomized_two_sided_p(1, 10, 0.1, 1.0), std::invalid_argument);
}

TEST_CASE("row tests: the Monte Carlo body is uniform on the peaked row", "[calibration]") {
  // The fixtures' peaked shape (8 halving head tokens), where Sidak over cuts and tokens
  // that count nearly the same draws leaned high (row median 0.62-0.64 without it).
  constexpr size_t V = 2049;
  const vector<double> q = peaked_row(V);
  constexpr uint32_t B = 19;
  multinomial_sim sim(q, 4049);
  vector<double> p, sidak;
  for (int r = 0; r < 200; ++r) {
    const auto t = st::row_tests(sim.counts(5000), q, 21, static_cast<uint64_t>(r), B);
    p.push_back(t.p_value);
    sidak.push_back(t.p_sidak);
    // The rule: the rank above 1 / (B + 1), the Sidak bound (capped there) below.
    const double c = 1.0 / (B + 1);
    REQUIRE(t.p_mc >= 0);
    CHECK(t.p_value == (t.p_mc > c ? t.p_mc : std::min(t.p_sidak, c)));
  }
  const auto calibrated = st::uniformity(p), plain = st::uniformity(sidak);
  std::printf("peaked V %zu, 5,000 draws: median %.3f (AD p %.3g), Sidak alone %.3f (AD p %.3g)\n",
              V, calibrated.median, calibrated.ad_p, plain.median, plain.ad_p);
  CHECK(calibrated.ad_p > 1e-3);
  CHECK(calibrated.median >= calibrated.median_low);
  CHECK(calibrated.median <= calibrated.median_high);
  const auto small =
      static_cast<uint64_t>(std::count_if(p.begin(), p.end(), [](double v) { return v < 0.05; }));
  CHECK(small <= st::testing::binomial_band(200, 0.05).high);
  // Power is the Sidak bound's: a doubled token is still rejected far below the level.
  const vector<double> q2 = [&] {
    vector<double> d = q;
    d[3] *= 2;
    double s = 0;
    for (double v : d) s += v;
    for (double& v : d) v /= s;
    return d;
  }();
  multinomial_sim planted(q2, 5);
  const auto t = st::row_tests(planted.counts(20000), q, 22, 0, B);
  CHECK(t.p_value == t.p_sidak);
  CHECK(t.p_value < 1e-12);
}

namespace {
vector<double> planted_double(vector<double> q, size_t token) {
  q[token] *= 2;
  double s = 0;
  for (double v : q) s += v;
  for (double& v : q) v /= s;
  return q;
}
}  // namespace

TEST_CASE("row tests: p-values close to uniform under the null", "[calibration]") {
  // Zipf(1.1) rows of 2,048 and 32,000 tokens at 20,000 draws: 300 null replicates each.
  for (const size_t V : {size_t{2048}, size_t{32000}, size_t{2049}}) {
    // V = 2049: the peaked shape of the fixtures (8 halving head tokens, 0.05 in a tail).
    vector<double> q = st::testing::zipf(V, 1.1);
    if (V == 2049) q = peaked_row(V);
    multinomial_sim sim(q, 1000 + V);
    vector<double> p, omnibus, cumulative, token;
    for (int r = 0; r < 300; ++r) {
      const auto c = sim.counts(20000);
      const auto t = st::row_tests(c, q, 11, static_cast<uint64_t>(r), 0);
      p.push_back(t.p_value);
      omnibus.push_back(t.omnibus.p_pearson);
      cumulative.push_back(t.p_cumulative);
      token.push_back(t.p_directed);
    }
    const auto all = st::uniformity(p);
    std::printf(
        "V %zu: medians: row %.3f (band [%.3f, %.3f], AD p %.3g), omnibus %.3f, cumulative %.3f, "
        "token %.3f\n",
        V, all.median, all.median_low, all.median_high, all.ad_p, st::uniformity(omnibus).median,
        st::uniformity(cumulative).median, st::uniformity(token).median);
    CAPTURE(V, all.median, all.ad_p);
    CHECK(all.median >= all.median_low);
    CHECK(all.median <= all.median_high);
    CHECK(st::uniformity(omnibus).ad_p > 1e-3);
    // Never anti-conservative: no excess of small p-values (Sidak's inequality).
    const auto small =
        static_cast<uint64_t>(std::count_if(p.begin(), p.end(), [](double v) { return v < 0.05; }));
    CHECK(small <= st::testing::binomial_band(300, 0.05).high);
  }
}

TEST_CASE("row tests: each sub-test sees its class of defect") {
  const vector<double> q = st::testing::zipf(2048, 1.1);
  // One token of mass ~0.01 doubled: the token test holds the minimum.
  const size_t b = 5;
  REQUIRE(q[b] > 0.01);
  multinomial_sim doubled(planted_double(q, b), 3);
  const auto t = st::row_tests(doubled.counts(20000), q, 12, 0, 0);
  CHECK(t.worst_token == static_cast<int64_t>(b));
  CHECK(t.p_token < 1e-20);
  CHECK(t.p_value < 1e-15);
  // The tail (the last tokens holding 1% of the mass) zeroed: the cumulative test.
  vector<double> floor = q;
  double tail = 0;
  for (size_t i = floor.size(); i-- > 0 && tail + floor[i] < 0.01;) tail += floor[i], floor[i] = 0;
  for (double& v : floor) v /= 1 - tail;
  multinomial_sim floored(floor, 5);
  const auto f = st::row_tests(floored.counts(5000), q, 13, 0, 0);
  CHECK(f.p_cumulative < 1e-8);
  CHECK(f.worst_cut_seen > f.worst_cut_mass);  // the head holds more than its mass
  // A correct row at the same draws is not rejected.
  multinomial_sim null(q, 9);
  CHECK(st::row_tests(null.counts(5000), q, 14, 0, 0).p_value > 1e-4);
}

namespace {
// A two-sample test of two equal-size samples of a continuous statistic: counts of each
// in the deciles of the pooled sample, Pearson's homogeneity X2 on the 2 x 10 table
// (df 9, Boost's chi-squared through chi_square_upper_tail).
double two_sample_p(vector<double> a, vector<double> b) {
  vector<double> pooled = a;
  pooled.insert(pooled.end(), b.begin(), b.end());
  std::sort(pooled.begin(), pooled.end());
  constexpr size_t kBins = 10;
  vector<double> edges;
  for (size_t k = 1; k < kBins; ++k) edges.push_back(pooled[k * pooled.size() / kBins]);
  const auto bin = [&](double v) {
    return static_cast<size_t>(std::upper_bound(edges.begin(), edges.end(), v) - edges.begin());
  };
  vector<double> ca(kBins, 0), cb(kBins, 0);
  for (double v : a) ++ca[bin(v)];
  for (double v : b) ++cb[bin(v)];
  double x2 = 0;
  for (size_t k = 0; k < kBins; ++k) {
    const double e = (ca[k] + cb[k]) / 2;  // equal sample sizes
    if (e > 0) x2 += (ca[k] - e) * (ca[k] - e) / e + (cb[k] - e) * (cb[k] - e) / e;
  }
  return samplecheck::stats::chi_square_upper_tail(kBins - 1, x2);
}

// The row statistic (p_sidak) of `replicates` rows drawn token by token from `draw_from`
// and judged against q: the simulation the block replicates replace.
vector<double> drawn_token_by_token(const vector<double>& q, const vector<double>& draw_from,
                                    uint64_t n, size_t replicates, uint64_t seed) {
  multinomial_sim sim(draw_from, seed);
  vector<double> s;
  for (size_t b = 0; b < replicates; ++b)
    s.push_back(st::row_tests(sim.counts(n), q, 31, (b + 1) << 40, 0).p_sidak);
  return s;
}
}  // namespace

TEST_CASE("row tests: block replicates have the null distribution of token-by-token draws",
          "[calibration]") {
  // The peaked shape (8 halving heads, cuts and exact tokens) and zipf at V = 2,049 and
  // 5,000 draws; q strictly descending, so q order and token ids agree.
  constexpr size_t V = 2049;
  const vector<double> peaked = peaked_row(V);
  constexpr uint32_t B = 400;
  for (const auto& q : {peaked, st::testing::zipf(V, 1.1)}) {
    multinomial_sim sim(q, 41);
    const auto blocks = st::row_tests(sim.counts(5000), q, 31, 0, B).mc_replicates;
    REQUIRE(blocks.size() == B);
    const double p = two_sample_p(blocks, drawn_token_by_token(q, q, 5000, B, 43));
    std::printf("block replicates against token-by-token draws: homogeneity p %.3g\n", p);
    CHECK(p > 1e-3);
    // The test can fail: draws from q with one head token doubled are told apart.
    CHECK(two_sample_p(blocks, drawn_token_by_token(q, planted_double(q, 3), 5000, B, 47)) < 1e-3);
  }
}

TEST_CASE("row tests: a replicate's generator calls do not grow with n") {
  // 40 blocks of zipf mass: the conditional binomials cost a bounded number of 64-bit
  // calls per block at n = 10^3 and n = 10^9 alike, and every draw lands in a block.
  const vector<double> mass = st::testing::zipf(40, 1.1);
  for (const uint64_t n : {uint64_t{1000}, uint64_t{1000000000}}) {
    st::philox_engine engine(1, 2, 0);
    const auto c = st::multinomial_counts(mass, n, engine);
    uint64_t total = 0;
    for (uint64_t x : c) total += x;
    CAPTURE(n, engine.calls());
    CHECK(total == n);
    CHECK(engine.calls() <= 8 * mass.size());
    CHECK(engine.calls() >= mass.size() - 1);
  }
  // The draws follow the masses: block 0 holds its share of 10^9 within 6 sd.
  st::philox_engine engine(3, 4, 0);
  const double c0 = static_cast<double>(st::multinomial_counts(mass, 1000000000, engine)[0]);
  CHECK(std::fabs(c0 - 1e9 * mass[0]) < 6 * std::sqrt(1e9 * mass[0] * (1 - mass[0])));
}

TEST_CASE("row tests: a precomputed order gives the same result") {
  vector<double> q = st::testing::zipf(3000, 1.1);
  std::swap(q[0], q[2999]);  // not in id order
  q[10] = q[11];             // a tie, broken by id
  double s = 0;
  for (double v : q) s += v;
  for (double& v : q) v /= s;
  multinomial_sim sim(q, 19);
  const auto c = sim.counts(30000);
  const auto order = st::row_order(q);
  const auto a = st::row_tests(c, q, 3, 4, 19), b = st::row_tests(c, q, 3, 4, 19, order);
  CHECK(a.p_value == b.p_value);
  CHECK(a.mc_replicates == b.mc_replicates);
  CHECK(a.worst_token == b.worst_token);
  const vector<size_t> bad{0, 5000};
  CHECK_THROWS_AS(st::row_tests(c, q, 3, 4, 0, bad), std::invalid_argument);
}
