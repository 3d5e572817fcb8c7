// Judging power against the Neyman-Pearson limit: alternatives planted at a
// TVD of 0.01 and 0.003 on rows of V = 151,936 tokens, and for each the draws a judge
// needs to reject it with probability 0.99:
//   NP       the likelihood-ratio test that knows the alternative (the most powerful
//            test at its level: no judge can need fewer draws). Its null and
//            alternative tails are Lugannani-Rice saddlepoint tails of the summed log
//            likelihood ratio, from its exact cumulant generating function over the
//            row; a defect that zeroes or adds support has a closed form.
//   battery  goodness_of_fit's row test (stats::row_tests: omnibus Pearson + the
//            directed cuts/tokens family, Sidak over both), at the level a row gets in
//            a standard run. Its draws are the smallest n at which one of its
//            sub-tests alone reaches power 0.99 (exact binomial power for the cuts
//            and tokens, non-central chi-square for the omnibus): a lower bound on the
//            combined test's power, then checked by simulation at that n (R rows
//            drawn from the planted distribution with the reference Philox).
//   peers    FlashInfer's cosine rule, vLLM's chi-square and PyTorch's, at their own
//            sample counts (suites/peers): the fraction of R planted rows they reject
//            and of R correct rows they reject (their false alarms).
// Every judge is held to the same alpha (the battery's row level) except the peers,
// whose levels are their own.
//
//   judging_power_bench [--reps R] [--threads T] [--seed S]
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/non_central_chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "reference/philox.h"
#include "suites/peers/peer_judges.h"
#include "suites/stats/combine.h"
#include "suites/stats/goodness_of_fit.h"
#include "suites/stats/row_tests.h"
#include "tools/bench/power/planted_alternatives.h"

namespace st = samplecheck::stats;
namespace pe = samplecheck::peers;
using samplecheck::power_bench::alternative;
using samplecheck::power_bench::kV;
using samplecheck::power_bench::planted;
using samplecheck::power_bench::tvd;
using std::vector;

namespace {

constexpr double kPower = 0.99;

// The level of one goodness_of_fit row in a standard run: alpha 1e-6, the check's
// Holm weight 4 of the sampler checks' 10, one dtype, 1% spent on the early looks,
// Sidak over the 13 tested rows of a top-k/top-p/min-p subject (cpu.sort_filter).
double row_level() { return st::sidak_level(1e-6 * 0.4 * 0.99, 13); }

// ---- Neyman-Pearson ---------------------------------------------------------------

// log sum_i q_i^(1-s) p_i^s and its first two derivatives in s (the per-draw cumulant
// generating function of log(p/q) under q; under p it is K(s + 1)).
struct cgf {
  double k, k1, k2;
};
cgf cgf_at(const alternative& a, double s) {
  double m0 = 0, m1 = 0, m2 = 0, scale = -1e300;
  vector<double> terms;
  for (size_t i = 0; i < kV; ++i) {
    if (a.q[i] <= 0) continue;
    const double x = std::log(a.p[i] / a.q[i]);
    const double lw = std::log(a.q[i]) + s * x;
    scale = std::max(scale, lw);
  }
  for (size_t i = 0; i < kV; ++i) {
    if (a.q[i] <= 0) continue;
    const double x = std::log(a.p[i] / a.q[i]);
    const double w = std::exp(std::log(a.q[i]) + s * x - scale);
    m0 += w, m1 += w * x, m2 += w * x * x;
  }
  const double mean = m1 / m0;
  return {std::log(m0) + scale, mean, m2 / m0 - mean * mean};
}

// Lugannani-Rice: P(sum of n >= n K'(s)) at the saddlepoint s (either sign).
double lr_upper_tail(const cgf& c, double s, double n) {
  const boost::math::normal_distribution<double> z;
  const double x = c.k1;
  const double w2 = 2.0 * n * (s * x - c.k);
  if (std::fabs(s) < 1e-9 || w2 <= 0) return 0.5;
  const double w = (s > 0 ? 1 : -1) * std::sqrt(w2), u = s * std::sqrt(n * c.k2);
  return boost::math::cdf(boost::math::complement(z, w)) +
         boost::math::pdf(z, w) * (1.0 / u - 1.0 / w);
}

double np_draws(const alternative& a, double alpha) {
  double zeroed = 0, added = 0;
  for (size_t i = 0; i < kV; ++i) {
    if (a.p[i] == 0 && a.q[i] > 0) zeroed += a.q[i];
    if (a.q[i] == 0 && a.p[i] > 0) added += a.p[i];
  }
  // Support changes: reject q when no zeroed token is drawn (false alarm (1 - m)^n);
  // reject when an added token is drawn (no false alarm, power 1 - (1 - m)^n).
  if (zeroed > 0) return std::ceil(std::log(alpha) / std::log1p(-zeroed));
  if (added > 0) return std::ceil(std::log(1 - kPower) / std::log1p(-added));
  // Saddlepoints s in (0, 1): the threshold n K'(s); null tail at s, power at s - 1.
  vector<cgf> grid;
  vector<double> ss;
  for (int j = 1; j < 400; ++j) ss.push_back(j / 400.0), grid.push_back(cgf_at(a, j / 400.0));
  auto power_at = [&](double n) {
    // The s whose null tail is alpha (the tail falls with s), then the power there.
    for (size_t j = 0; j < ss.size(); ++j)
      if (lr_upper_tail(grid[j], ss[j], n) <= alpha) {
        cgf under_p = grid[j];
        return lr_upper_tail(under_p, ss[j] - 1.0, n);
      }
    return 0.0;
  };
  double lo = 1, hi = 1;
  while (power_at(hi) < kPower && hi < 1e12) hi *= 2;
  lo = hi / 2;
  while (hi / lo > 1.005) {
    const double mid = std::sqrt(lo * hi);
    (power_at(mid) >= kPower ? hi : lo) = mid;
  }
  return std::ceil(hi);
}

// ---- the battery's row test, analytically ------------------------------------------

double binomial_power(double n, double q, double p, double level) {
  if (q <= 0 || q >= 1) return 0;
  const boost::math::binomial_distribution<double> null(n, q), alt(n, p);
  // Critical counts of the two-sided test at `level` (level / 2 a side).
  double lo = boost::math::quantile(null, level / 2);
  while (lo >= 0 && boost::math::cdf(null, lo) > level / 2) lo -= 1;
  double hi = boost::math::quantile(boost::math::complement(null, level / 2));
  while (hi <= n && boost::math::cdf(boost::math::complement(null, hi - 1)) > level / 2) hi += 1;
  double power = 0;
  if (lo >= 0) power += boost::math::cdf(alt, lo);
  if (hi <= n) power += boost::math::cdf(boost::math::complement(alt, hi - 1));
  return power;
}

// The largest power among the row test's sub-tests at n draws (each at its own level).
double battery_power(const alternative& a, double n, double alpha) {
  const double sub = st::sidak_level(alpha, st::kRowSubTests);
  double support_p = 0;
  for (size_t i = 0; i < kV; ++i)
    if (a.q[i] == 0) support_p += a.p[i];
  if (support_p > 0) return 1 - std::pow(1 - support_p, n);  // support: an exact failure
  // Omnibus: lambda = n chi2(p || q) over the merged cells at n.
  vector<uint64_t> dummy(kV, 0);
  size_t first = 0;
  while (a.q[first] <= 0) ++first;
  dummy[first] = static_cast<uint64_t>(n);
  const auto cells = st::merge_by_expected(dummy, a.q, static_cast<uint64_t>(n));
  double chi2 = 0;
  for (const auto& members : cells.members) {
    double qc = 0, pc = 0;
    for (const int64_t t : members) qc += a.q[t], pc += a.p[t];
    chi2 += (pc - qc) * (pc - qc) / qc;
  }
  double best = 0;
  const double df = static_cast<double>(cells.members.size() - 1);
  if (df >= 1) {
    const double crit =
        boost::math::quantile(boost::math::complement(boost::math::chi_squared(df), sub));
    best = boost::math::cdf(
        boost::math::complement(boost::math::non_central_chi_squared(df, n * chi2), crit));
  }
  // Directed family: the cuts and the tokens with n q >= kTokenMinExpected (row_tests.h).
  vector<size_t> order;
  for (size_t i = 0; i < kV; ++i)
    if (a.q[i] > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return a.q[x] > a.q[y]; });
  vector<double> qp(order.size() + 1, 0), pp(order.size() + 1, 0);
  for (size_t k = 0; k < order.size(); ++k)
    qp[k + 1] = qp[k] + a.q[order[k]], pp[k + 1] = pp[k] + a.p[order[k]];
  const vector<size_t> cuts = st::row_cut_points(qp, n);
  size_t tokens = 0;
  for (const size_t i : order) tokens += n * a.q[i] >= st::kTokenMinExpected ? 1 : 0;
  const size_t family = cuts.size() + (tokens >= 2 ? tokens : 0);
  if (family == 0) return best;
  const double member = st::sidak_level(sub, family);
  for (const size_t r : cuts)
    best = std::max(best, binomial_power(n, qp[r], std::min(pp[r], 1.0), member));
  if (tokens >= 2)
    for (const size_t i : order)
      if (n * a.q[i] >= st::kTokenMinExpected && std::fabs(a.p[i] - a.q[i]) > 1e-3 * a.q[i])
        best = std::max(best, binomial_power(n, a.q[i], a.p[i], member));
  return best;
}

double battery_draws(const alternative& a, double alpha) {
  double hi = 64;
  while (battery_power(a, hi, alpha) < kPower && hi < 1e10) hi *= 2;
  double lo = hi / 2;
  while (hi / lo > 1.01) {
    const double mid = std::sqrt(lo * hi);
    (battery_power(a, mid, alpha) >= kPower ? hi : lo) = mid;
  }
  return std::ceil(hi);
}

// ---- simulation with the reference Philox -----------------------------------------

// A UniformRandomBitGenerator over one Philox stream.
struct philox_bits {
  using result_type = uint32_t;
  samplecheck::philox_stream s;
  static constexpr uint32_t min() { return 0; }
  static constexpr uint32_t max() { return 0xffffffffu; }
  uint32_t operator()() { return s.next(); }
};

// n draws from p as a multinomial, by conditional binomials over the tokens.
vector<uint64_t> multinomial(const vector<double>& p, uint64_t n, philox_bits& bits) {
  vector<uint64_t> c(p.size(), 0);
  double rest = 1.0;
  uint64_t left = n;
  for (size_t i = 0; i < p.size() && left > 0; ++i) {
    if (p[i] <= 0) continue;
    const double share = std::min(1.0, p[i] / rest);
    if (share >= 1.0) {
      c[i] = left;
      left = 0;
      break;
    }
    std::binomial_distribution<uint64_t> b(left, share);
    c[i] = b(bits);
    left -= c[i];
    rest -= p[i];
  }
  return c;
}

struct row {
  std::string name, parameter;
  double tvd, np, battery;
  int battery_killed = 0, reps = 0;
  vector<double> battery_p{};  // the row test's p-value of each simulated planted row
  int peer_killed[3] = {0, 0, 0}, peer_false[3] = {0, 0, 0};
};

pe::sample_tally tally_of(const vector<uint64_t>& c) {
  pe::sample_tally t(static_cast<int64_t>(c.size()));
  for (size_t i = 0; i < c.size(); ++i) t.counts[i] = static_cast<int64_t>(c[i]);
  return t;
}

row measure(const alternative& a, int reps, uint64_t seed) {
  const double alpha = row_level();
  row r{a.name, a.parameter, tvd(a.q, a.p), np_draws(a, alpha), battery_draws(a, alpha)};
  r.reps = reps;
  bool support = false;
  for (size_t i = 0; i < kV; ++i) support |= a.q[i] == 0 && a.p[i] > 0;
  vector<uint8_t> allowed(kV);
  for (size_t i = 0; i < kV; ++i) allowed[i] = a.q[i] > 0;
  const int64_t peer_n[3] = {pe::kFlashInferSamples, pe::kVllmSamples, pe::kPytorchSamples};
  for (int k = 0; k < reps; ++k) {
    philox_bits bits{samplecheck::philox_stream(seed, static_cast<uint64_t>(k), 0)};
    const auto c = multinomial(a.p, static_cast<uint64_t>(r.battery), bits);
    bool killed = false;
    if (support) {
      for (size_t i = 0; i < kV; ++i) killed |= a.q[i] == 0 && c[i] > 0;
    } else {
      const double p = st::row_tests(c, a.q, seed, static_cast<uint64_t>(k), 0).p_value;
      r.battery_p.push_back(p);
      killed = p <= alpha;
    }
    r.battery_killed += killed ? 1 : 0;
    for (int j = 0; j < 3; ++j) {
      for (const bool planted_row : {true, false}) {
        const auto pc =
            multinomial(planted_row ? a.p : a.q, static_cast<uint64_t>(peer_n[j]), bits);
        const auto t = tally_of(pc);
        const pe::peer_verdict v = j == 0   ? pe::flashinfer_judge(t, a.q, allowed)
                                   : j == 1 ? pe::vllm_judge(t, a.q)
                                            : pe::pytorch_judge(t, a.q);
        (planted_row ? r.peer_killed : r.peer_false)[j] += v.passed ? 0 : 1;
      }
    }
  }
  return r;
}

// One alternative's line of the table; returns its battery / NP ratio.
double print_row(row& r) {
  using boost::math::binomial_distribution;
  const double lo = r.battery_killed == 0 ? 0.0
                                          : binomial_distribution<double>::find_lower_bound_on_p(
                                                r.reps, r.battery_killed, 0.025);
  const double hi =
      r.battery_killed == r.reps
          ? 1.0
          : binomial_distribution<double>::find_upper_bound_on_p(r.reps, r.battery_killed, 0.025);
  std::string median = "exact";
  if (!r.battery_p.empty()) {
    std::sort(r.battery_p.begin(), r.battery_p.end());
    median = fmt::format("{:.1e}", r.battery_p[r.battery_p.size() / 2]);
  }
  std::printf(
      "%-24s %7.4f %10.0f %10.0f %6.2f %4d/%-4d [%.3f,%.3f] %9s %3d/%-3d %2d%% %3d/%-3d %2d%% "
      "%3d/%-3d %2d%%  %s\n",
      r.name.c_str(), r.tvd, r.np, r.battery, r.battery / r.np, r.battery_killed, r.reps, lo, hi,
      median.c_str(), r.peer_killed[0], r.reps, 100 * r.peer_false[0] / r.reps, r.peer_killed[1],
      r.reps, 100 * r.peer_false[1] / r.reps, r.peer_killed[2], r.reps,
      100 * r.peer_false[2] / r.reps, r.parameter.c_str());
  return r.battery / r.np;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"judging power against the Neyman-Pearson limit"};
  int reps = 100, threads = 2;
  uint64_t seed = 20261201;
  app.add_option("--reps", reps, "simulated rows per alternative and judge")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "worker threads")->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "Philox seed of the simulated rows");
  CLI11_PARSE(app, argc, argv);

  vector<alternative> alts;
  for (const double tau : {0.01, 0.003})
    for (auto& a : planted(tau)) alts.push_back(std::move(a));
  vector<row> rows(alts.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < alts.size();) rows[i] = measure(alts[i], reps, seed + i);
    });
  for (auto& t : pool) t.join();

  std::printf(
      "V = %zu, row level alpha = %.3g (standard run), power 0.99, %d simulated rows per cell\n",
      kV, row_level(), reps);
  std::printf("%-24s %7s %10s %10s %6s %9s %-13s %9s %-11s %-11s %-11s  %s\n", "alternative", "TVD",
              "NP draws", "battery", "ratio", "killed", "95% CI", "median p", "FlashInfer", "vLLM",
              "PyTorch", "planted");
  double worst = 0;
  for (auto& r : rows) worst = std::max(worst, print_row(r));
  std::printf("largest battery / NP ratio: %.2f (goal: within 3)\n", worst);
  std::printf(
      "killed: planted rows the battery's row test rejected at its draws (Clopper-Pearson 95%%; "
      "the row test's median p); peers: planted rows rejected at their own n (FlashInfer %lld, "
      "vLLM %lld, PyTorch %lld) and the %% of correct rows they rejected\n",
      static_cast<long long>(pe::kFlashInferSamples), static_cast<long long>(pe::kVllmSamples),
      static_cast<long long>(pe::kPytorchSamples));
  return 0;
}
