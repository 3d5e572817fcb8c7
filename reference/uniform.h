// Conversions from raw 32-bit Philox outputs to uniforms, as the samplers use them.
// The interval ends matter: a sampler that feeds an interval containing 1 (or 0)
// into log() produces an infinite key (bug catalog S05).
#pragma once

#include <cstdint>

#include "reference/host_device.h"

namespace samplecheck {

// cuRAND's curand_uniform: x * 2^-32 + 2^-33 evaluated in float, so the result is
// in (0, 1] and equals exactly 1.0f for every x >= 0xffffff80 (probability 2^-25).
SC_HOST_DEVICE float curand_uniform_from_bits(uint32_t x) {
  constexpr float kInv2Pow32 = 2.3283064365386963e-10f;  // 2^-32, exact in float
  return static_cast<float>(x) * kInv2Pow32 + kInv2Pow32 / 2.0f;
}

// The top 24 bits as a float in [0, 1): exact, never 1. The safe choice for
// inverse-CDF search (u < total mass always has a crossing).
SC_HOST_DEVICE float uniform_open_one(uint32_t x) {
  return static_cast<float>(x >> 8) * 5.9604644775390625e-8f;  // 2^-24
}

// (0, 1): the top 23 bits plus half a step, in [2^-24, 1 - 2^-24], so -log(u) and
// -log(-log(u)) are finite. (24 bits plus half a step would round up to 1.0f.)
// The guard that S05's defect lacks.
SC_HOST_DEVICE float uniform_open_both(uint32_t x) {
  return (static_cast<float>(x >> 9) + 0.5f) * 1.1920928955078125e-7f;  // 2^-23
}

// (0, 1) with float's full resolution near 0: x * 2^-32 + 2^-33, capped at 1 - 2^-24.
// For Exp(1) as -log1p(-v): the small exponentials that let a low-probability token
// win a Gumbel argmax come from small v, which this represents down to 2^-33. The
// common spelling -log(u) with a 24-bit u cannot go below -log(1 - 2^-24) ~ 6e-8
// (torch's exponential_ clamps at eps/2 alike), so a token with p below about
// 6e-8 * max p almost never wins: the tail is truncated, and samplecheck's tail
// check fails such a sampler (docs/h200.md, "Samplers under the battery").
SC_HOST_DEVICE float uniform_fine_near_zero(uint32_t x) {
  constexpr float kBelowOne = 0.99999994039535522f;  // 1 - 2^-24
  const float v = static_cast<float>(x) * 2.3283064365386963e-10f + 1.1641532182693481e-10f;
  return v < kBelowOne ? v : kBelowOne;
}

// A double in [0, 1) from two outputs (53 bits), for CPU samplers that work in double.
SC_HOST_DEVICE double uniform_double(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * 1.1102230246251565e-16;  // 2^-53
}

}  // namespace samplecheck
