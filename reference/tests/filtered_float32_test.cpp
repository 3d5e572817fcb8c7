// The BOUNDARY band against a float32 kernel: a plain float implementation of each
// rule (softmax with expf, float sort, float cumulative sum, float comparisons) must
// keep every IN token and drop every OUT token; it may decide BOUNDARY tokens either
// way. Thresholds are placed exactly on float prefix sums so that the float kernel
// and the exact rule really do disagree, and the test requires that they sometimes do
// (only on BOUNDARY tokens), or the band would be untested.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "reference/filtered_distribution.h"
#include "reference/philox.h"
#include "reference/uniform.h"

using namespace samplecheck;

namespace {

// A float32 kernel: the rules of filtered_distribution.h evaluated in float, with a
// sequential cumulative sum (the worst order for rounding).
std::vector<bool> float32_filter(const std::vector<float>& z, const filter_params& params,
                                 std::vector<float>* prefix = nullptr) {
  const size_t n = z.size();
  const auto t = static_cast<float>(params.temperature);
  float m = -INFINITY;
  for (float x : z) m = std::max(m, x / t);
  std::vector<float> p(n);
  float sum = 0;
  for (size_t i = 0; i < n; ++i) sum += (p[i] = std::exp(z[i] / t - m));
  for (auto& x : p) x /= sum;
  const bool lowest = params.ties == tie_policy::lowest_index;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  // before[r]: float mass preceding position r (keep_ties: the start of r's tie group).
  std::vector<float> before(n);
  std::vector<size_t> rank(n);
  float running = 0;
  for (size_t r = 0; r < n; ++r) {
    const bool tied = r && p[order[r]] == p[order[r - 1]];
    before[r] = (!lowest && tied) ? before[r - 1] : running;
    rank[r] = (!lowest && tied) ? rank[r - 1] : r;
    running += p[order[r]];
  }
  if (prefix) *prefix = before;
  const int64_t k = params.top_k;
  const bool top_k_on = k > 0 && k < static_cast<int64_t>(n);
  float top_k_mass = 0;
  for (size_t r = 0; r < n; ++r)
    top_k_mass += (!top_k_on || static_cast<int64_t>(rank[r]) < k) ? p[order[r]] : 0.0f;
  const float denominator =
      params.order == filter_order::top_k_first && top_k_on ? top_k_mass : 1.0f;
  const float threshold = static_cast<float>(params.top_p) * denominator;
  const float min_p_threshold = static_cast<float>(params.min_p) * p[order[0]];
  std::vector<bool> kept(n);
  for (size_t r = 0; r < n; ++r) {
    const float q = p[order[r]];
    kept[order[r]] = q > 0 && (!top_k_on || static_cast<int64_t>(rank[r]) < k) &&
                     (params.top_p >= 1 || before[r] < threshold) && q >= min_p_threshold;
  }
  return kept;
}

// Zipf-like logits with a coarse grid on odd seeds, so exact ties occur too.
std::vector<float> zipf_like_logits(uint64_t seed, size_t n) {
  philox_stream rng(seed, 3, 0);
  std::vector<float> z(n);
  for (size_t i = 0; i < n; ++i) {
    const float rank_term = -1.1f * std::log(1.0f + static_cast<float>(rng.next() % n));
    z[i] =
        seed % 2 ? std::round(rank_term * 4) / 4 : rank_term + 0.3f * uniform_open_one(rng.next());
  }
  return z;
}

struct float32_tally {
  long cases = 0, boundary_tokens = 0, flips = 0;
};

// The float32 kernel on one row: it must keep every IN token and drop every OUT one;
// BOUNDARY tokens it decides against the exact rule are counted as flips.
void check_float32_row(const std::vector<float>& z, const filter_params& params, uint64_t seed,
                       float32_tally& tally) {
  const reference_options options;  // the default band: any summation order
  const auto result = compute_filtered_distribution(z, input_kind::logits, params, options);
  REQUIRE(result.ok());
  const auto& d = result.distribution();
  const auto kept = float32_filter(z, params);
  ++tally.cases;
  for (size_t i = 0; i < z.size(); ++i) {
    if (d.status[i] == membership::boundary) {
      ++tally.boundary_tokens;
      tally.flips += kept[i] != (d.prob[i] > 0);
      continue;
    }
    if ((d.status[i] == membership::in) != kept[i]) {
      CAPTURE(seed, z.size(), params.temperature, params.top_k, params.top_p, params.min_p,
              static_cast<int>(params.order), static_cast<int>(params.ties), i);
      FAIL("float32 kernel " << (kept[i] ? "keeps" : "drops") << " a token the reference calls "
                             << to_string(d.status[i]));
    }
  }
}

}  // namespace

TEST_CASE("reference: a float32 kernel never contradicts IN or OUT", "[reference][float32]") {
  float32_tally tally;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const size_t n = seed % 3 == 0 ? 4096 : seed % 3 == 1 ? 1000 : 100;
    const std::vector<float> z = zipf_like_logits(seed, n);
    for (double temperature : {0.6, 1.0}) {
      for (auto order : {filter_order::top_k_first, filter_order::joint}) {
        for (auto ties : {tie_policy::keep_ties, tie_policy::lowest_index}) {
          for (int64_t k : {int64_t{0}, int64_t{20}}) {
            filter_params params;
            params.temperature = temperature, params.top_k = k, params.order = order,
            params.ties = ties;
            params.min_p = seed % 4 == 0 ? 0.02 : 0.0;
            // A top_p equal to one of the float kernel's own prefix sums (the first at or
            // above .8): the float rule sits on an exact tie there, the exact one need not.
            std::vector<float> prefix;
            float32_filter(z, filter_params{temperature, 0, 1.0, 0.0, order, ties}, &prefix);
            const double on_prefix = *std::lower_bound(prefix.begin(), prefix.end(), 0.8f);
            for (double top_p : {0.5, 0.9, on_prefix}) {
              params.top_p = top_p;
              check_float32_row(z, params, seed, tally);
            }
          }
        }
      }
    }
  }
  std::printf(
      "float32 kernel: %ld cases, %ld BOUNDARY tokens, %ld decided against the exact rule\n",
      tally.cases, tally.boundary_tokens, tally.flips);
  CHECK(tally.cases == 60 * 2 * 2 * 2 * 2 * 3);
  CHECK(tally.boundary_tokens > 0);
  CHECK(tally.flips > 0);
}

namespace {

// The rules by their definitions (O(V^2)) on given probabilities q, ties by equal q.
std::vector<bool> rules_on(const std::vector<long double>& q, const filter_params& p) {
  const size_t n = q.size();
  const bool lowest = p.ties == tie_policy::lowest_index;
  auto precedes = [&](size_t i, size_t j) {
    return q[i] > q[j] || (lowest && q[i] == q[j] && i < j);
  };
  std::vector<bool> in_top_k(n, true);
  if (p.top_k > 0 && p.top_k < static_cast<int64_t>(n)) {
    for (size_t j = 0; j < n; ++j) {
      int64_t ahead = 0;
      for (size_t i = 0; i < n; ++i) ahead += precedes(i, j);
      in_top_k[j] = ahead < p.top_k;
    }
  }
  long double total = 0, top_k_mass = 0, q_max = 0;
  for (size_t i = 0; i < n; ++i)
    total += q[i], top_k_mass += in_top_k[i] ? q[i] : 0, q_max = std::max(q_max, q[i]);
  const long double denominator = p.order == filter_order::top_k_first ? top_k_mass : total;
  std::vector<bool> kept(n);
  for (size_t j = 0; j < n; ++j) {
    long double before = 0;
    for (size_t i = 0; i < n; ++i) before += (in_top_k[i] && precedes(i, j)) ? q[i] : 0;
    kept[j] = q[j] > 0 && in_top_k[j] && (p.top_p >= 1 || before < p.top_p * denominator) &&
              q[j] >= p.min_p * q_max;
  }
  return kept;
}

}  // namespace

// Near-ties (logits 1e-7 apart) let a float kernel reorder tokens. Every perturbation
// p_i (1 + d_i) with |d_i| <= 6u (below the smallest allowance e_i, and equal for equal
// logits) must leave IN tokens kept and OUT tokens dropped.
TEST_CASE("reference: perturbed near-tie rows never contradict IN or OUT", "[reference][float32]") {
  const float levels[] = {0.0f, -1e-7f, -2e-7f, -0.5f, -0.5f - 1e-7f, -1.0f};
  long perturbations = 0, boundary_flips = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    philox_stream rng(seed, 11, 0);
    std::vector<float> z(6);
    for (auto& x : z) x = levels[rng.next() % 6];
    for (int64_t k : {int64_t{0}, int64_t{2}, int64_t{3}}) {
      for (double top_p : {0.4, 0.6, 1.0}) {
        for (double min_p : {0.0, 0.6}) {
          for (auto order : {filter_order::top_k_first, filter_order::joint}) {
            for (auto ties : {tie_policy::keep_ties, tie_policy::lowest_index}) {
              const filter_params params{1.0, k, top_p, min_p, order, ties};
              const auto result = compute_filtered_distribution(z, input_kind::logits, params);
              REQUIRE(result.ok());
              const auto& d = result.distribution();
              for (int trial = 0; trial < 64; ++trial) {
                std::vector<long double> q(6);
                for (size_t i = 0; i < 6; ++i) {
                  // One draw per distinct logit, so exact ties stay exact.
                  const uint32_t bits =
                      philox_stream(seed * 1000 + trial, float_to_bits(z[i]), 0).next();
                  const double delta =
                      6 * 0x1p-24 * (2 * uniform_double(bits, bits * 2654435761u) - 1);
                  q[i] = static_cast<long double>(d.source[i]) * (1 + delta);
                }
                const auto kept = rules_on(q, params);
                ++perturbations;
                for (size_t i = 0; i < 6; ++i) {
                  if (d.status[i] == membership::boundary) {
                    boundary_flips += kept[i] != (d.prob[i] > 0);
                    continue;
                  }
                  if ((d.status[i] == membership::in) != kept[i]) {
                    CAPTURE(seed, k, top_p, min_p, static_cast<int>(order), static_cast<int>(ties),
                            trial, i);
                    FAIL("a perturbation " << (kept[i] ? "keeps" : "drops")
                                           << " a token the reference calls "
                                           << to_string(d.status[i]));
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  std::printf("near-tie perturbations: %ld, BOUNDARY tokens decided against the exact rule: %ld\n",
              perturbations, boundary_flips);
  CHECK(boundary_flips > 0);
}
