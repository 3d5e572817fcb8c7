// The Gumbel key of one token and the cheap bounds that let cuda.gumbel_* skip it
// (kernels/cuda/gumbel.cu); tests/gumbel_bounds_test.cu checks them on the device.
//
// Most tokens cannot beat the row's best key, and proving so is cheaper than the
// logarithm and the division (cpu.gumbel_* skip the same way; the tokens computed
// in full get the same float key here). A first pass gives every token a cheap
// lower bound of its key, from -log1p(-v) <= v / (1 - v); the largest in the warp
// (and in the block's earlier chunks), T, is at most the row's best key. A second
// pass computes in full only the tokens whose cheap upper bound, from -log1p(-v) >=
// v, reaches T. The winner's bounds are near its key (its v is small), so few
// tokens pass: at B = 64 one warp-slot in 11 ran the log (Nsight Compute).
// Float rounding is covered with margins (log1pf and logf within 1 ulp, __logf
// within 3, the approximate reciprocal within 1, products and sums within half an
// ulp):
//   probs:  lower p (1 - v) / v (1 - 2^-18), from key >= p (1 - v) / v (1 - 2^-22);
//           skip when v * T (1 - 2^-16) >= p, as key <= p / v (1 + 2^-22) < T.
//           Either side must be a normal float: a subnormal one has no relative
//           precision.
//   logits: key = s - log(q) with s = z / T_emp, s' = z * (1 / T_emp) within 2^-22 |s|,
//           |log q| < 23: lower s' + log((1 - v) / v) - (5e-5 + 6e-7 |s'|); skip when
//           log v >= s' - T + 5e-5 + 6e-7 (|s'| + |T|).
// A skipped key is strictly below T, so neither the argmax nor its lowest-index
// tie-break can move. v == 0 (S05's defect) gets no bound and is never skipped.
#pragma once

#include <cfloat>

#include "kernels/gpu_compat.h"

namespace samplecheck::cuda {

// The key of a token of probability (or logit) z with stream fraction v, q = -log1p(-v)
// ~ Exp(1): probs p / max(q, FLT_MIN) (SGLang v0.5.20's rule), logits z / T_emp - log(q).
template <bool Logits>
__device__ __forceinline__ float gumbel_key(float z, float v, float temperature) {
  if constexpr (Logits) return z / temperature - logf(-log1pf(-v));
  else return z / fmaxf(-log1pf(-v), FLT_MIN);
}

// At most gumbel_key<Logits>(z, v, 1 / inverse_temperature).
template <bool Logits>
__device__ __forceinline__ float key_floor(float z, float v, float inverse_temperature) {
  if constexpr (Logits) {
    // s' + log((1 - v) / v) - (5e-5 + 6e-7 |s'|), T_emp > 0; fused, s' is never
    // held (the second pass recomputes it in its own fused form)
    const float log_odds = __logf((1.0f - v) * gpu_reciprocal_approx(v));
    return v > 0.0f ? fmaf(z, inverse_temperature, log_odds) - fmaf(fabsf(z), 6e-7f * inverse_temperature, 5e-5f)
                    : -INFINITY;
  } else {
    const float numerator = z * (1.0f - v);
    return v > 0.0f && numerator >= FLT_MIN ? numerator * gpu_reciprocal_approx(v) * (1.0f - 0x1p-18f) : 0.0f;
  }
}

// below(z, v) only if gumbel_key<Logits>(z, v, 1 / inverse_temperature) < floor, where
// floor is a key some token reached (or a key_floor of one).
template <bool Logits>
class key_bounds {
 public:
  __device__ __forceinline__ key_bounds(float floor, float inverse_temperature)
      : threshold_(Logits ? floor : floor * (1.0f - 0x1p-16f)),
        slack_(5e-5f + 6e-7f * fabsf(floor)),
        inverse_temperature_(inverse_temperature) {}

  __device__ __forceinline__ bool below(float z, float v) const {
    if constexpr (Logits) {
      // s' - T + slack as one fused s' - T (rounded once, inside the slack)
      return v > 0.0f && __logf(v) >= fmaf(z, inverse_temperature_, -threshold_) +
                                          fmaf(fabsf(z), 6e-7f * inverse_temperature_, slack_);
    } else {
      const float product = v * threshold_;  // the threshold carries 1 - 2^-16
      return product >= FLT_MIN && product >= z;
    }
  }

 private:
  float threshold_, slack_, inverse_temperature_;
};

}  // namespace samplecheck::cuda
