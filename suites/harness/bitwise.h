// Bitwise comparison, the one way the exact checks compare outputs (the matmul testbeds'
// bf16 rows, the collectives' float32 messages): memcmp of the bits, so +0 and -0, or two
// NaN payloads, differ as they do to the next layer. Header-only, free of fmt.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace samplecheck::harness {

// The index of the first element whose bits differ, or -1 when all `count` agree.
template <class T>
int64_t first_difference(const T* expected, const T* actual, int64_t count) {
  if (std::memcmp(expected, actual, static_cast<size_t>(count) * sizeof(T)) == 0) return -1;
  for (int64_t i = 0; i < count; ++i)
    if (std::memcmp(expected + i, actual + i, sizeof(T)) != 0) return i;
  return -1;
}

// An element's bit pattern as the reports print it: "0x3f800000" for float 1.0, "0x3f80" for
// bf16 1.0.
template <class T>
std::string bits_hex(const T& value) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  char text[24];
  std::snprintf(text, sizeof text, "0x%0*" PRIx64, static_cast<int>(2 * sizeof(T)), bits);
  return text;
}

}  // namespace samplecheck::harness
