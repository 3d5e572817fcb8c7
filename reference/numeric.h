// Exact decoding of the storage types a row may arrive in. bf16 and fp16 widen to
// float without rounding, so every sampler and the reference see identical values.
#pragma once

#include <cstdint>
#include <cstring>

#include "reference/host_device.h"

namespace samplecheck {

enum class storage_type : int32_t { f32 = 1, bf16 = 2, f16 = 3 };

// The same bits read as another type of the same width. memcpy is the defined way on the
// host and is supported in device code, where the compiler turns it into a register move.
template <typename To, typename From>
SC_HOST_DEVICE To same_bits(From from) {
  static_assert(sizeof(To) == sizeof(From), "same_bits needs types of one width");
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

SC_HOST_DEVICE float bits_to_float(uint32_t bits) { return same_bits<float>(bits); }
SC_HOST_DEVICE uint32_t float_to_bits(float f) { return same_bits<uint32_t>(f); }

SC_HOST_DEVICE float bf16_to_float(uint16_t h) {
  return bits_to_float(static_cast<uint32_t>(h) << 16);
}

// Round to nearest even; NaN stays a quiet NaN.
SC_HOST_DEVICE uint16_t float_to_bf16(float f) {
  const uint32_t bits = float_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// IEEE binary16 to float, subnormals included, by exponent rebias.
SC_HOST_DEVICE float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return bits_to_float(sign);
    // Subnormal: value = mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// Round to nearest even, as the hardware conversion does: magnitudes from 65520 up
// become Inf, those below 2^-14 become binary16 subnormals (or zero), NaN stays a
// quiet NaN with its sign and top payload bits.
SC_HOST_DEVICE uint16_t float_to_f16(float f) {
  const uint32_t bits = float_to_bits(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520 and up, Inf
  if (magnitude >= 0x38800000u) {
    // Normal: rebias the exponent (127 - 15), then drop 13 mantissa bits; a carry out
    // of the mantissa correctly bumps the exponent.
    const uint32_t rebiased = magnitude - 0x38000000u;
    return static_cast<uint16_t>(sign | ((rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13));
  }
  // Subnormal result: round(|f| * 2^24) with |f| = significand * 2^(exponent - 150).
  const uint32_t exponent = magnitude >> 23;
  const uint32_t shift = 126u - exponent;         // >= 14 here
  if (exponent == 0 || shift > 24u) return sign;  // below 2^-25 (or exactly it: tie to 0)
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t q = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u))) ++q;  // q = 0x400 is the smallest normal
  return static_cast<uint16_t>(sign | q);
}

// Element i of a row stored as `type`.
SC_HOST_DEVICE float load_element(const void* row, storage_type type, int64_t i) {
  switch (type) {
    case storage_type::bf16:
      return bf16_to_float(static_cast<const uint16_t*>(row)[i]);
    case storage_type::f16:
      return f16_to_float(static_cast<const uint16_t*>(row)[i]);
    default:
      return static_cast<const float*>(row)[i];
  }
}

SC_HOST_DEVICE int64_t storage_bytes(storage_type type) {
  return type == storage_type::f32 ? 4 : 2;
}

}  // namespace samplecheck
