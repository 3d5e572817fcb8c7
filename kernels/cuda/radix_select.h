// One 8-bit step of the exact k-th-largest radix select over 32-bit order keys
// (row_ops.cuh's kth_largest, one block; cluster_prepare.cuh's, a cluster). A pure
// function of the pass's histogram, so the host test (tests/radix_select_test.cpp)
// runs the very arithmetic the kernels run.
#pragma once

#include <cstdint>

#include "reference/host_device.h"

namespace samplecheck::cuda {

// The key prefix found so far and the rank (1 = largest) still to find among the
// keys that carry it.
struct radix_prefix {
  uint32_t prefix;
  int remaining;
};

// `histogram` counts digit (key >> shift) & 0xff over the keys that carry `at.prefix`
// in the bits above `shift`. Takes the highest digit whose count, with every digit
// above it, reaches `at.remaining`, and returns the longer prefix and the rank left
// inside it. Digit 0 takes whatever remains (the rank is always reachable).
SC_HOST_DEVICE radix_prefix radix_select_step(const unsigned* histogram, int shift,
                                              radix_prefix at) {
  int digit = 255;
  for (; digit > 0; --digit) {
    const int count = static_cast<int>(histogram[digit]);
    if (count >= at.remaining) break;
    at.remaining -= count;
  }
  return {at.prefix | (static_cast<uint32_t>(digit) << shift), at.remaining};
}

}  // namespace samplecheck::cuda
