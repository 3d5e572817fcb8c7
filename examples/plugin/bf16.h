// bfloat16: the high 16 bits of an IEEE binary32.
#pragma once

#include <cstdint>
#include <cstring>

namespace vendor {

inline float bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// Round to nearest, ties to even. A NaN stays a NaN (quieted): rounding its
// payload could carry into the exponent and make it an infinity.
inline uint16_t float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t round_half_even = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + round_half_even) >> 16);
}

}  // namespace vendor
