// Philox4x32-10 (Salmon et al., SC'11) with cuRAND's state semantics.
//
// cuRAND's curand_init(seed, subsequence, offset) for curandStatePhilox4_32_10_t:
//   key     = {seed lo 32 bits, seed hi 32 bits}
//   counter = {c lo, c hi, subsequence lo, subsequence hi}, c = offset / 4
//   the first curand() returns word (offset % 4) of philox(counter, key).
// So output number j of stream (seed, subsequence) is word j % 4 of block j / 4,
// and "offset" counts 32-bit outputs. Known answers: fixtures/philox4x32_10_kat.txt.
#pragma once

#include <cstdint>

#include "reference/host_device.h"

namespace samplecheck {

struct philox_block {
  uint32_t w[4];
};

SC_HOST_DEVICE uint32_t philox_mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
#if defined(__CUDA_ARCH__)
  // One IMAD.HI and one IMAD; the 64-bit product costs an extra add of a zero
  // high word per multiply in nvcc 13's SASS (a fifth of a Philox block).
  *hi = __umulhi(a, b);
  return a * b;
#else
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  return static_cast<uint32_t>(product);
#endif
}

// The raw bijection: 10 rounds, key bumped between rounds.
SC_HOST_DEVICE philox_block philox4x32_10(philox_block ctr, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = philox_mulhilo(kM0, ctr.w[0], &hi0);
    const uint32_t lo1 = philox_mulhilo(kM1, ctr.w[2], &hi1);
    ctr = philox_block{{hi1 ^ ctr.w[1] ^ key0, lo1, hi0 ^ ctr.w[3] ^ key1, lo0}};
    key0 += kW0;
    key1 += kW1;
  }
  return ctr;
}

// Word `i` (0..3) of a block by selects, not a run-time array index: an indexed
// array would move the block to local memory on a GPU, once per output.
SC_HOST_DEVICE uint32_t word_of(const philox_block& b, uint32_t i) {
  const uint32_t low = i & 1u ? b.w[1] : b.w[0];
  const uint32_t high = i & 1u ? b.w[3] : b.w[2];
  return i & 2u ? high : low;
}

// A cuRAND-compatible stream: (seed, subsequence) select the stream and
// `offset` the first 32-bit output, exactly as curand_init does.
class philox_stream {
 public:
  SC_HOST_DEVICE philox_stream(uint64_t seed, uint64_t subsequence, uint64_t offset)
      : key0_(static_cast<uint32_t>(seed)),
        key1_(static_cast<uint32_t>(seed >> 32)),
        subsequence_(subsequence),
        position_(offset) {}

  // The next raw 32-bit output (curand()).
  SC_HOST_DEVICE uint32_t next() {
    const uint64_t block = position_ >> 2;
    const uint32_t word = static_cast<uint32_t>(position_ & 3u);
    if (block != cached_block_ || !cached_) {
      cache_ = block_at(block);
      cached_block_ = block;
      cached_ = true;
    }
    ++position_;
    return word_of(cache_, word);
  }

  // The next four outputs, as four next() calls give them, from one Philox block
  // (two when the position is not a multiple of 4): no per-output block test, so
  // a kernel that unrolls it carries one or two Philox bodies, not four.
  SC_HOST_DEVICE void next_four(uint32_t (&out)[4]) {
    const uint64_t block = position_ >> 2;
    const uint32_t shift = static_cast<uint32_t>(position_ & 3u);
    const philox_block first = block_at(block);
    position_ += 4;
    if (shift == 0) {  // the common case (offsets in steps of 4), with no selects
      for (uint32_t j = 0; j < 4; ++j) out[j] = first.w[j];
      return;
    }
    const philox_block second = block_at(block + 1);
    for (uint32_t j = 0; j < 4; ++j) {
      const uint32_t i = shift + j;
      out[j] = i < 4 ? word_of(first, i) : word_of(second, i - 4);
    }
  }

  // Output number `index` of this stream's origin (offset 0), without moving.
  SC_HOST_DEVICE uint32_t at(uint64_t index) const {
    return word_of(block_at(index >> 2), index & 3u);
  }

  SC_HOST_DEVICE uint64_t position() const { return position_; }

 private:
  SC_HOST_DEVICE philox_block block_at(uint64_t block) const {
    const philox_block ctr{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                            static_cast<uint32_t>(subsequence_),
                            static_cast<uint32_t>(subsequence_ >> 32)}};
    return philox4x32_10(ctr, key0_, key1_);
  }

  uint32_t key0_, key1_;
  uint64_t subsequence_;
  uint64_t position_;
  philox_block cache_{};
  uint64_t cached_block_ = 0;
  bool cached_ = false;
};

}  // namespace samplecheck
