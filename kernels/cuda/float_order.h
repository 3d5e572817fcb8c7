// Floats as unsigned integers in the same order: the radix select's keys
// (radix_select.h), the device sort's keys (sort_filter.cu) and the Gumbel
// argmax's packed (key, index) pairs (gumbel.cu). Host and device alike, so the
// host test (tests/float_order_test.cpp) checks the very arithmetic the kernels run.
#pragma once

#include <cstdint>

#include "reference/host_device.h"
#include "reference/numeric.h"

namespace samplecheck::cuda {

// a < b as floats (with -0 just below +0; NaN aside) iff ordered_bits(a) <
// ordered_bits(b): negative floats have their bits inverted, others their sign set.
SC_HOST_DEVICE uint32_t ordered_bits(float x) {
  const uint32_t b = float_to_bits(x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
SC_HOST_DEVICE float from_ordered_bits(uint32_t o) {
  return bits_to_float((o & 0x80000000u) ? (o & 0x7fffffffu) : ~o);
}

// A (key, index) pair as one 64-bit word whose larger value is the better pair:
// the larger key, then the lower index. 0 is below every pair with a non-NaN key,
// so it is the identity of a max over pairs.
SC_HOST_DEVICE unsigned long long pack_best(float key, int index) {
  return static_cast<unsigned long long>(ordered_bits(key)) << 32 | static_cast<uint32_t>(~index);
}
SC_HOST_DEVICE int index_of_best(unsigned long long best) {
  return static_cast<int>(~static_cast<uint32_t>(best));
}
SC_HOST_DEVICE float key_of_best(unsigned long long best) {
  return from_ordered_bits(static_cast<uint32_t>(best >> 32));
}

}  // namespace samplecheck::cuda
