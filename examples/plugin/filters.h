// Which tokens a row keeps, and the inverse CDF over them.
//
// top-k, ties kept (SC_TIE_KEEP_TIES): token j survives when fewer than k tokens
// have a larger probability, so every token tied with the k-th largest survives.
// top-p after top-k (SC_ORDER_TOP_K_FIRST), on the top-k-renormalised distribution:
// keep the smallest set of most probable tokens whose mass reaches p of the top-k
// mass. Token j survives when the mass of the tokens more probable than j is below
// p times that mass: the token that carries the sum across p is kept, and with it
// every token tied with it. A token of probability 0 is never kept.
#pragma once

#include <cstdint>
#include <vector>

namespace vendor {

// The survivors of one row, most probable first, and their cumulative mass.
struct kept_tokens {
  std::vector<int32_t> ids;
  std::vector<double> cumulative;  // cumulative[i] = mass of ids[0..i]
  bool empty() const { return ids.empty(); }
};

// `probs` holds finite, non-negative values (not necessarily summing to 1).
// top_k = 0 or >= the row length: off. top_p = 1: off.
kept_tokens filter_row(const std::vector<double>& probs, int32_t top_k, double top_p);

// The kept token whose cumulative interval holds unit * total mass, unit in [0, 1).
int32_t invert_cdf(const kept_tokens& kept, double unit);

}  // namespace vendor
