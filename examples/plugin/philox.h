// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel Random Numbers: As Easy
// as 1, 2, 3", SC'11), with the stream of cuRAND's curand_init(seed, subsequence,
// offset) for curandStatePhilox4_32_10_t, which samplecheck's header requires:
//   key     = (low 32 bits of seed, high 32 bits of seed)
//   counter = (c low, c high, subsequence low, subsequence high), c = offset / 4
//   the first output is word offset % 4 of Philox(counter, key), then the words
//   that follow it, the counter going up by one every four outputs.
// So output j of stream (seed, subsequence) is word j % 4 of block j / 4, and
// `offset` counts 32-bit outputs.
#pragma once

#include <array>
#include <cstdint>

namespace vendor {

using philox_block = std::array<uint32_t, 4>;

// Ten rounds of the bijection; the key takes a Weyl step between rounds.
inline philox_block philox4x32_10(philox_block counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t product0 = uint64_t{kMultiplier0} * counter[0];
    const uint64_t product1 = uint64_t{kMultiplier1} * counter[2];
    counter = {
        static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ key0, static_cast<uint32_t>(product1),
        static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ key1, static_cast<uint32_t>(product0)};
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

class philox_stream {
 public:
  philox_stream(uint64_t seed, uint64_t subsequence, uint64_t offset)
      : key0_(static_cast<uint32_t>(seed)),
        key1_(static_cast<uint32_t>(seed >> 32)),
        subsequence_(subsequence),
        position_(offset) {}

  // The next 32-bit output, as curand() returns it.
  uint32_t next() {
    const uint64_t block = position_ / 4;
    if (!have_block_ || block != block_index_) {
      const philox_block counter{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                 static_cast<uint32_t>(subsequence_),
                                 static_cast<uint32_t>(subsequence_ >> 32)};
      block_ = philox4x32_10(counter, key0_, key1_);
      block_index_ = block;
      have_block_ = true;
    }
    return block_[position_++ % 4];
  }

 private:
  uint32_t key0_, key1_;
  uint64_t subsequence_;
  uint64_t position_;
  philox_block block_{};
  uint64_t block_index_ = 0;
  bool have_block_ = false;
};

// A double in [0, 1) from the next two outputs: 32 bits of the first above 21 of
// the second, 53 bits in all, so a token of mass down to 2^-53 keeps its share.
inline double next_unit_double(philox_stream& stream) {
  const uint64_t high = stream.next();
  const uint64_t low = stream.next();
  return static_cast<double>((high << 21) | (low >> 11)) * 0x1.0p-53;
}

}  // namespace vendor
