// The ring order of an all-reduce, as one body for the CPU collectives and the CUDA one
// (reference/host_device.h): which rank starts an element's sum when NCCL's ring moves a
// message of `count` elements. X13 plants this order in a fixed-order collective on both.
#pragma once

#include <cstdint>

#include "reference/host_device.h"
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>  // the __forceinline__ that SC_HOST_DEVICE names
#endif

namespace samplecheck::collective {

// NCCL's ring moves a message in loops of world_size chunks of at most this many elements
// (its chunk is a byte budget; 128 KiB of float32 here): a long message's chunk boundaries,
// and so its elements' first ranks, repeat every loop.
inline constexpr int64_t kRingChunkElements = 32768;

// X13's chunked path starts at this count; shorter messages keep rank order.
inline constexpr int64_t kX13ChunkedFrom = 4096;

// The rank that starts element i's sum in a ring over messages of `count`: the message goes
// in loops of world chunks of ceil(rest / world) elements, at most kRingChunkElements each.
SC_HOST_DEVICE int32_t ring_first_rank(int64_t count, int32_t world, int64_t i) {
  int64_t start = 0;
  for (;;) {
    const int64_t rest = count - start;
    int64_t chunk = (rest + world - 1) / world;
    if (chunk > kRingChunkElements) chunk = kRingChunkElements;
    if (i < start + chunk * world) return static_cast<int32_t>((i - start) / chunk);
    start += chunk * world;
  }
}

// The rank that starts element i's sum in a fixed-order collective: rank 0, except that X13
// (`chunked`) takes the ring's order from kX13ChunkedFrom elements up, as vLLM hands large
// messages from its custom all-reduce to NCCL, while declaring size invariance.
SC_HOST_DEVICE int32_t fixed_order_first_rank(bool chunked, int64_t count, int32_t world,
                                              int64_t i) {
  return chunked && count >= kX13ChunkedFrom ? ring_first_rank(count, world, i) : 0;
}

}  // namespace samplecheck::collective
