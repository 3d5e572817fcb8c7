// The storage types a sampler's input may be declared in (SC_DTYPE_*), as the harness
// writes them: float rows become bf16 / fp16 bits only when every value is exactly
// representable, so what the subject reads is what the reference judged. The battery
// makes its rows representable first with round_to_dtype().
//
// Header-only: the kernel tests and the peers use it without linking the harness.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"
#include "reference/numeric.h"

namespace samplecheck::harness {

inline std::string dtype_name(int32_t dtype) {
  switch (dtype) {
    case SC_DTYPE_F32:
      return "f32";
    case SC_DTYPE_BF16:
      return "bf16";
    case SC_DTYPE_F16:
      return "f16";
    default:
      return "unknown dtype " + std::to_string(dtype);
  }
}

// Whether SC_DTYPE_BIT(dtype) is a bit of `declared` (a dtype outside 0..31 never is).
inline bool declares_dtype(uint32_t declared, int32_t dtype) {
  return dtype >= 0 && dtype < 32 && (declared & SC_DTYPE_BIT(static_cast<uint32_t>(dtype))) != 0;
}

// The 16-bit pattern nearest x (round to nearest even); bf16 and f16 only.
inline uint16_t nearest_bits(float x, int32_t dtype) {
  switch (dtype) {
    case SC_DTYPE_BF16:
      return float_to_bf16(x);
    case SC_DTYPE_F16:
      return float_to_f16(x);
    default:
      throw std::invalid_argument("nearest_bits: " + dtype_name(dtype) + " is not a 16-bit dtype");
  }
}

// exact_bits' common case by shifts alone, for encoding whole rows: a finite float whose
// dropped mantissa bits are zero and whose exponent the dtype holds (an f16 subnormal
// included: a row's small probabilities are mostly f16 subnormals); nothing for every
// other value, which exact_bits then decides.
inline std::optional<uint16_t> plain_bits(float x, int32_t dtype) {
  const uint32_t f = float_to_bits(x);
  const auto sign = static_cast<uint16_t>((f >> 16) & 0x8000u);
  if (dtype == SC_DTYPE_BF16) {
    const uint32_t exponent = (f >> 23) & 0xffu;
    if ((f & 0xffffu) == 0 && exponent != 0xffu) return static_cast<uint16_t>(f >> 16);
    return std::nullopt;
  }
  if (dtype != SC_DTYPE_F16) return std::nullopt;
  if ((f & 0x7fffffffu) == 0) return sign;
  const uint32_t exponent = (f >> 23) & 0xffu;  // f16's normal exponents 1..30 are 113..142
  if (exponent >= 113u && exponent <= 142u) {
    if ((f & 0x1fffu) != 0) return std::nullopt;
    return static_cast<uint16_t>(sign | ((exponent - 112u) << 10) | ((f >> 13) & 0x3ffu));
  }
  // An f16 subnormal m 2^-24 (m = 1..1023) is a float of exponent 103..112 whose 24-bit
  // significand s gives m = s 2^(exponent - 126) exactly.
  if (exponent < 103u || exponent > 112u) return std::nullopt;
  const uint32_t significand = (f & 0x7fffffu) | 0x800000u, shift = 126u - exponent;
  if ((significand & ((1u << shift) - 1u)) != 0) return std::nullopt;
  return static_cast<uint16_t>(sign | (significand >> shift));
}

inline float widen_bits(uint16_t bits, int32_t dtype) {
  return dtype == SC_DTYPE_BF16 ? bf16_to_float(bits) : f16_to_float(bits);
}

// x's pattern in a 16-bit dtype when x is exactly representable there (every NaN is:
// it stays a NaN, sign kept), else nothing. -0 stays -0; a float subnormal is
// representable in bf16 (float's exponent range) and never in f16.
inline std::optional<uint16_t> exact_bits(float x, int32_t dtype) {
  const uint16_t bits = nearest_bits(x, dtype);
  if (std::isnan(x) || float_to_bits(widen_bits(bits, dtype)) == float_to_bits(x)) return bits;
  return std::nullopt;
}

// Each value rounded to the nearest `dtype` value (round to nearest even, overflow to
// Inf, NaN kept) and widened back exactly; f32 leaves them as they are. After this,
// exact_bits() accepts every value.
inline std::vector<float> round_to_dtype(std::vector<float> values, int32_t dtype) {
  if (dtype == SC_DTYPE_F32) return values;
  for (float& v : values) v = widen_bits(nearest_bits(v, dtype), dtype);
  return values;
}

}  // namespace samplecheck::harness
