// The Gumbel key of one token, and the cheap bounds that let cuda.gumbel_probs skip
// it (kernels/cuda/gumbel.cu); tests/gumbel_bounds_test.cu checks them on the device.
//
// Most tokens cannot beat the row's best key, and proving so is cheaper than the
// logarithm and the division (cpu.gumbel_probs skips the same way; the tokens
// computed in full get the same float key here). A first pass gives every token a
// cheap lower bound of its key, from -log1p(-v) <= v / (1 - v) (the margin applied
// once, to the largest); the largest in the warp (and in the block's earlier
// chunks), T, is at most the row's best key. A second pass computes in full only
// the tokens whose cheap upper bound, from -log1p(-v) >= v, reaches T. The winner's bounds are near
// its key (its v is small), so few tokens pass: at B = 64 one warp-slot in 11 ran the log (Nsight
// Compute). Float rounding is covered with margins (log1pf within 1 ulp, the
// approximate reciprocal within 1, products and sums within half an ulp):
//   lower (key_floor below);
//   skip when v * T (1 - 2^-16) >= p, as key <= p / v (1 + 2^-22) < T.
//   Either side must be a normal float: a subnormal one has no relative precision.
// A skipped key is strictly below T, so neither the argmax nor its lowest-index
// tie-break can move. v == 0 (S05's defect) gets no bound and is never skipped.
// Logits compute every key: a bound on z / T - log(q) needs a logarithm of its own,
// and on the H200 the two passes measured no faster at B = 1 and 64 and slower at
// B = 8 (13.2 against 11.9 us).
#pragma once

#include <cfloat>

#include "kernels/gpu_compat.h"

namespace samplecheck::cuda {

// The key of a token of probability (or logit) z with stream fraction v, q = -log1p(-v)
// ~ Exp(1): probs p / max(q, FLT_MIN) (SGLang v0.5.20's rule), logits z / T_emp - log(q).
template <bool Logits>
__device__ __forceinline__ float gumbel_key(float z, float v, float temperature) {
  if constexpr (Logits)
    return z / temperature - logf(-log1pf(-v));
  else
    return z / fmaxf(-log1pf(-v), FLT_MIN);
}

// One token's estimate of p (1 - v) / v, as fma(p, 1 / v, -p) with the approximate
// reciprocal: three instructions a token with the max that keeps the largest. v
// is never 0 but under S05, whose v == 0 gets no bound.
template <bool MaybeZero>
__device__ __forceinline__ float key_floor_estimate(float p, float v) {
  const float estimate = fmaf(p, gpu_reciprocal_approx(v), -p);
  return MaybeZero && !(v > 0.0f) ? 0.0f : estimate;
}

// At most gumbel_key<false>(p, v, 1) of the token whose estimate is the largest
// (and so at most the row's best key). The estimate is within (2^-23 + 2^-24) p / v
// of p (1 - v) / v. For v <= 1/2 that is 2^-21 of it, and the key is at least
// p (1 - v) / v (1 - 2^-22): the margin 1 - 2^-18 covers both. For v > 1/2 the key,
// p / -log(1 - v), exceeds p (1 - v) / v by a factor of 1.44 or more, which grows
// faster than the estimate's relative error as v nears 1. Estimates below 2^-100
// (subnormal products on the way) give no bound; above FLT_MAX, FLT_MAX (a key
// that overflows to inf can win and must not be skipped).
__device__ __forceinline__ float key_floor(float largest_estimate) {
  return largest_estimate >= 0x1p-100f ? fminf(largest_estimate, FLT_MAX) * (1.0f - 0x1p-18f)
                                       : 0.0f;
}

// below(p, v) only if gumbel_key<false>(p, v, 1) < floor, where floor is a key some
// token reached (or a key_floor of one).
class key_bounds {
 public:
  __device__ __forceinline__ explicit key_bounds(float floor)
      : threshold_(floor * (1.0f - 0x1p-16f)) {}

  __device__ __forceinline__ bool below(float p, float v) const {
    const float product = v * threshold_;  // the threshold carries 1 - 2^-16
    return product >= FLT_MIN && product >= p;
  }

 private:
  float threshold_;
};

}  // namespace samplecheck::cuda
