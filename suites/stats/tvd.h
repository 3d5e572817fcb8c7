// Total-variation distance between the sampler's distribution p and the reference q,
// seen through the cells of merge_by_expected (plus one cell for the tokens with q = 0
// when there are any).
//
// point = TV_K(p_hat, q) = 1/2 sum_k |O_k / n - q_k| over the K cells.
//
// upper: with probability >= confidence = 1 - delta over the n samples,
//   TV_K(p, q) <= point + 1/2 sqrt((K - 1) / n) + sqrt(ln(1 / delta) / (2 n)).
// Proof: TV_K(p, q) <= TV_K(p_hat, q) + TV_K(p_hat, p) (triangle inequality).
// E[TV_K(p_hat, p)] <= 1/2 sum_k sqrt(p_k (1 - p_k) / n) <= 1/2 sqrt((K - 1) / n)
// (Jensen per cell, then Cauchy-Schwarz with sum_k p_k (1 - p_k) <= 1 - 1/K), whatever
// p is. Moving one sample changes TV_K(p_hat, p) by at most 1/n, so McDiarmid gives
// P(TV_K(p_hat, p) >= E + t) <= exp(-2 n t^2); t = sqrt(ln(1/delta) / (2 n)).
// The cells are fixed by q and n before sampling, so the bound holds as stated.
//
// Scope: TV_K <= the token-level TVD (merging can only hide differences). A deviation
// that moves mass between tokens of one merged cell is the business of the per-token
// intervals (binomial_intervals.h) and the tail test, not of this bound.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace samplecheck::stats {

struct tvd_estimate {
  double point, upper;
  double confidence;  // 1 - delta
  int64_t cells;      // K
  uint64_t n;
};

// Over the cells merge_by_expected forms (min_expected defaults to cell_min_expected(n)).
tvd_estimate tvd_upper_bound(std::span<const uint64_t> counts, std::span<const double> probs,
                             double delta, std::optional<double> min_expected = {});

}  // namespace samplecheck::stats
