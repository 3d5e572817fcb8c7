// Exact decoding of the storage types a row may arrive in. bf16 and fp16 widen to
// float without rounding, so every sampler and the reference see identical values.
#pragma once

#include <cstdint>
#include <cstring>

#include "reference/host_device.h"

namespace samplecheck {

enum class storage_type : int32_t { f32 = 1, bf16 = 2, f16 = 3 };

SC_HOST_DEVICE float bits_to_float(uint32_t bits) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

SC_HOST_DEVICE uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(f);
#else
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
#endif
}

SC_HOST_DEVICE float bf16_to_float(uint16_t h) { return bits_to_float(static_cast<uint32_t>(h) << 16); }

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

// Element i of a row stored as `type`.
SC_HOST_DEVICE float load_element(const void* row, storage_type type, int64_t i) {
  switch (type) {
    case storage_type::bf16: return bf16_to_float(static_cast<const uint16_t*>(row)[i]);
    case storage_type::f16: return f16_to_float(static_cast<const uint16_t*>(row)[i]);
    default: return static_cast<const float*>(row)[i];
  }
}

SC_HOST_DEVICE int64_t storage_bytes(storage_type type) { return type == storage_type::f32 ? 4 : 2; }

}  // namespace samplecheck
