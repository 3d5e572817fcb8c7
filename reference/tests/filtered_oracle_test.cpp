// Brute-force oracles. Every small row on a grid full of exact ties, every parameter
// combination on a grid, against an enumeration written the simplest way:
//  - probs: integer weights, exact integer arithmetic (ties at the top-p and min-p
//    thresholds are decided exactly, and flagged);
//  - logits: long double softmax with the O(V^2) definition of "preceded by".
// The reference may call a token BOUNDARY where a float32 kernel could decide either
// way; IN and OUT must match the oracle exactly, and (exact oracle) a BOUNDARY token
// must sit on an exact tie: no gratuitous boundaries on rows with wide margins.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "reference/filtered_distribution.h"

using namespace samplecheck;

namespace {

struct fraction {
  int64_t num, den;
  double value() const { return static_cast<double>(num) / static_cast<double>(den); }
};

struct exact_answer {
  std::vector<bool> kept;
  std::vector<bool> on_tie;  // a threshold test of this token is an exact equality
};

bool precedes(const std::vector<int64_t>& w, size_t i, size_t j, tie_policy ties) {
  return w[i] > w[j] || (ties == tie_policy::lowest_index && w[i] == w[j] && i < j);
}

exact_answer exact_filter(const std::vector<int64_t>& w, int64_t k, fraction top_p, fraction min_p,
                          filter_order order, tie_policy ties) {
  const size_t n = w.size();
  int64_t total = 0, w_max = 0;
  for (auto x : w) total += x, w_max = std::max(w_max, x);
  std::vector<bool> in_top_k(n, true);
  if (k > 0 && k < static_cast<int64_t>(n)) {
    for (size_t j = 0; j < n; ++j) {
      int64_t ahead = 0;
      for (size_t i = 0; i < n; ++i) ahead += precedes(w, i, j, ties);
      in_top_k[j] = ahead < k;
    }
  }
  int64_t top_k_mass = 0;
  for (size_t i = 0; i < n; ++i) top_k_mass += in_top_k[i] ? w[i] : 0;
  const int64_t denominator = order == filter_order::top_k_first ? top_k_mass : total;
  exact_answer a{std::vector<bool>(n), std::vector<bool>(n)};
  for (size_t j = 0; j < n; ++j) {
    int64_t before = 0;
    for (size_t i = 0; i < n; ++i) before += (in_top_k[i] && precedes(w, i, j, ties)) ? w[i] : 0;
    // before / denominator < num / den, and w_j / w_max >= num / den, cross-multiplied.
    const bool top_p_keep = top_p.num == top_p.den || before * top_p.den < top_p.num * denominator;
    const bool min_p_keep = min_p.num == 0 || w[j] * min_p.den >= min_p.num * w_max;
    a.kept[j] = w[j] > 0 && in_top_k[j] && top_p_keep && min_p_keep;
    a.on_tie[j] = (top_p.num != top_p.den && before * top_p.den == top_p.num * denominator) ||
                  (min_p.num != 0 && w[j] * min_p.den == min_p.num * w_max);
  }
  return a;
}

// Every vector of length n over {0, ..., base - 1}, as the mixed-radix digits of `code`.
std::vector<int64_t> digits(int64_t code, size_t n, int64_t base) {
  std::vector<int64_t> w(n);
  for (auto& x : w) x = code % base, code /= base;
  return w;
}

struct tally {
  long cases = 0, boundary_tokens = 0, tie_tokens = 0, cases_with_boundary = 0;
};

// The judge's contract for one row: IN and OUT exact, ranges cover the oracle's answer.
// Returns what is wrong, or "" (plain checks: Catch assertions per token would
// dominate the run time of a few million cases).
std::string compare(const filtered_distribution& d, const std::vector<bool>& kept,
                    const std::vector<double>& weight, const std::vector<bool>* on_tie, tally& t) {
  double kept_weight = 0;
  for (size_t j = 0; j < kept.size(); ++j) kept_weight += kept[j] ? weight[j] : 0;
  ++t.cases;
  if (d.num_boundary) ++t.cases_with_boundary;
  for (size_t j = 0; j < kept.size(); ++j) {
    auto where = [&] {
      return "token " + std::to_string(j) + " is " + to_string(d.status[j]) +
             (kept[j] ? ", oracle keeps it" : ", oracle drops it");
    };
    if (d.status[j] == membership::boundary) {
      ++t.boundary_tokens;
      if (on_tie && !(*on_tie)[j]) return where() + " without an exact tie";
    } else if ((d.status[j] == membership::in) != kept[j]) {
      return where();
    }
    const double target = kept[j] ? weight[j] / kept_weight : 0.0;
    if (target < d.prob_min[j] * (1 - 1e-12) || target > d.prob_max[j] * (1 + 1e-12)) {
      return where() + ": oracle probability " + std::to_string(target) +
             " outside [prob_min, prob_max]";
    }
    // Without boundary tokens the nominal probability is the oracle's, to 1e-12.
    if (d.num_boundary == 0 && std::fabs(d.prob[j] - target) > 1e-12 * target) {
      return where() + ": probability " + std::to_string(d.prob[j]) + " != oracle " +
             std::to_string(target);
    }
  }
  return "";
}

}  // namespace

TEST_CASE("reference: probs rows equal the exact integer enumeration", "[reference][oracle]") {
  struct grid {
    size_t n;
    int64_t base, shift;  // weights shift + {0, ..., base - 1}
  };
  // Lengths 1-7, every vector; the value set shrinks with the length so the run stays
  // near a second per core ({0,1,2}^7 alone would be 2.2 million cases).
  const grid grids[] = {{1, 5, 0}, {2, 5, 0}, {3, 5, 0}, {4, 5, 0},
                        {5, 4, 0}, {6, 3, 0}, {7, 2, 1}};
  const fraction top_ps[] = {{1, 4}, {1, 3}, {1, 2}, {3, 5}, {2, 3}, {3, 4}, {1, 1}};
  const fraction min_ps[] = {{0, 1}, {1, 3}, {1, 2}, {1, 1}};
  reference_options options;
  options.normalisation = probs_normalisation::renormalise;
  tally t;
  for (const auto& g : grids) {
    int64_t rows = 1;
    for (size_t i = 0; i < g.n; ++i) rows *= g.base;
    for (int64_t code = g.shift ? 0 : 1; code < rows; ++code) {  // all zero is an error row
      auto w = digits(code, g.n, g.base);
      for (auto& x : w) x += g.shift;
      std::vector<float> row(w.begin(), w.end());
      std::vector<double> weight(w.begin(), w.end());
      for (int64_t k = 0; k <= static_cast<int64_t>(g.n) + 1; ++k) {
        for (const auto& top_p : top_ps) {
          for (const auto& min_p : min_ps) {
            for (auto order : {filter_order::top_k_first, filter_order::joint}) {
              for (auto ties : {tie_policy::keep_ties, tie_policy::lowest_index}) {
                filter_params params;
                params.top_k = k, params.top_p = top_p.value(), params.min_p = min_p.value();
                params.order = order, params.ties = ties;
                const auto result =
                    compute_filtered_distribution(row, input_kind::probs, params, options);
                const auto expected = exact_filter(w, k, top_p, min_p, order, ties);
                for (size_t j = 0; j < g.n; ++j) t.tie_tokens += expected.on_tie[j];
                const std::string wrong =
                    result.ok()
                        ? compare(result.distribution(), expected.kept, weight, &expected.on_tie, t)
                        : result.error().message;
                if (!wrong.empty()) {
                  CAPTURE(code, g.n, k, top_p.value(), min_p.value(), static_cast<int>(order),
                          static_cast<int>(ties));
                  FAIL(wrong);
                }
              }
            }
          }
        }
      }
    }
  }
  std::printf(
      "exact probs oracle: %ld cases, %ld with BOUNDARY tokens, %ld BOUNDARY tokens, %ld tokens on "
      "exact ties\n",
      t.cases, t.cases_with_boundary, t.boundary_tokens, t.tie_tokens);
  // The grid must reach the thresholds exactly, or it would not test the boundary at all.
  CHECK(t.cases > 1000000);
  CHECK(t.tie_tokens > 10000);
  CHECK(t.cases_with_boundary > 1000);
}

namespace {

// Long double softmax and the filters by their definitions, O(V^2), no sorting.
std::vector<bool> long_double_filter(const std::vector<float>& z, const filter_params& p,
                                     std::vector<double>& weight) {
  const size_t n = z.size();
  long double z_max = -INFINITY;
  for (float x : z) z_max = std::max<long double>(z_max, x);
  std::vector<long double> q(n, 0.0L);
  long double total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (p.temperature == 0)
      q[i] = z[i] == z_max ? 1.0L : 0.0L;
    else if (std::isfinite(z[i]))
      q[i] = std::exp((z[i] - z_max) / static_cast<long double>(p.temperature));
    total += q[i];
  }
  for (auto& x : q) x /= total;
  weight.assign(q.begin(), q.end());
  const bool lowest = p.ties == tie_policy::lowest_index;
  auto precedes = [&](size_t i, size_t j) {
    return z[i] > z[j] || (lowest && z[i] == z[j] && i < j);
  };
  std::vector<bool> kept(n);
  if (p.temperature == 0) {
    bool found = false;
    for (size_t j = 0; j < n; ++j)
      kept[j] = q[j] > 0 && !(lowest && found), found = found || q[j] > 0;
    return kept;
  }
  std::vector<bool> in_top_k(n, true);
  const auto k = p.top_k;
  if (k > 0 && k < static_cast<int64_t>(n)) {
    for (size_t j = 0; j < n; ++j) {
      int64_t ahead = 0;
      for (size_t i = 0; i < n; ++i) ahead += precedes(i, j);
      in_top_k[j] = ahead < k;
    }
  }
  long double top_k_mass = 0, q_max = 0;
  for (size_t i = 0; i < n; ++i)
    top_k_mass += in_top_k[i] ? q[i] : 0, q_max = std::max(q_max, q[i]);
  const long double denominator = p.order == filter_order::top_k_first ? top_k_mass : 1.0L;
  for (size_t j = 0; j < n; ++j) {
    long double before = 0;
    for (size_t i = 0; i < n; ++i) before += (in_top_k[i] && precedes(i, j)) ? q[i] : 0;
    kept[j] = q[j] > 0 && in_top_k[j] && (p.top_p == 1 || before < p.top_p * denominator) &&
              q[j] >= p.min_p * q_max;
  }
  return kept;
}

}  // namespace

TEST_CASE("reference: logits rows equal a long double enumeration", "[reference][oracle]") {
  const float values[] = {-INFINITY, -1.0f, -0.5f, 0.0f, 1.0f};
  tally t;
  for (size_t n = 1; n <= 4; ++n) {
    int64_t rows = 1;
    for (size_t i = 0; i < n; ++i) rows *= 5;
    for (int64_t code = 0; code < rows; ++code) {
      const auto index = digits(code, n, 5);
      std::vector<float> z(n);
      for (size_t i = 0; i < n; ++i) z[i] = values[index[i]];
      if (std::all_of(z.begin(), z.end(), [](float x) { return std::isinf(x); }))
        continue;  // an error row
      for (double temperature : {0.0, 0.5, 1.0, 2.0}) {
        for (int64_t k = 0; k <= 3; ++k) {
          for (double top_p : {0.5, 0.8, 1.0}) {
            for (double min_p : {0.0, 0.3}) {
              for (auto order : {filter_order::top_k_first, filter_order::joint}) {
                for (auto ties : {tie_policy::keep_ties, tie_policy::lowest_index}) {
                  filter_params params;
                  params.temperature = temperature, params.top_k = k, params.top_p = top_p,
                  params.min_p = min_p;
                  params.order = order, params.ties = ties;
                  const auto result = compute_filtered_distribution(z, input_kind::logits, params);
                  std::vector<double> weight;
                  const auto kept = long_double_filter(z, params, weight);
                  const std::string wrong =
                      result.ok() ? compare(result.distribution(), kept, weight, nullptr, t)
                                  : result.error().message;
                  if (!wrong.empty()) {
                    CAPTURE(code, n, temperature, k, top_p, min_p, static_cast<int>(order),
                            static_cast<int>(ties));
                    FAIL(wrong);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  std::printf("long double logits oracle: %ld cases, %ld with BOUNDARY tokens\n", t.cases,
              t.cases_with_boundary);
  CHECK(t.cases > 100000);
  CHECK(t.cases_with_boundary > 100);
}
