// One null multinomial draw over a fixed partition of a row, for the Monte Carlo replicates
// of row_tests: a count per block by conditional binomials (block j gets
// Binomial(n - drawn so far, mass_j / mass of blocks >= j), Boost.Random's BTRD sampler),
// so a replicate costs O(blocks) generator calls whatever n, where drawing the n tokens one
// by one cost O(n log V).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/philox.h"

namespace samplecheck::stats {

// A 64-bit UniformRandomNumberGenerator over one Philox stream (two 32-bit outputs a
// call), counting its calls so that a test can pin what a replicate costs.
class philox_engine {
 public:
  using result_type = uint64_t;
  philox_engine(uint64_t seed, uint64_t subsequence, uint64_t offset)
      : stream_(seed, subsequence, offset) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~uint64_t{0}; }
  result_type operator()() {
    ++calls_;
    const uint64_t hi = stream_.next();
    return (hi << 32) | stream_.next();
  }
  uint64_t calls() const { return calls_; }

 private:
  philox_stream stream_;
  uint64_t calls_ = 0;
};

// n draws over blocks of these masses (>= 0, summing to 1 up to rounding: each block's
// conditional probability is taken against the suffix sum of the masses, so rounding
// never leaves draws unassigned; the last block with mass takes the rest).
std::vector<uint64_t> multinomial_counts(std::span<const double> mass, uint64_t n,
                                         philox_engine& engine);

}  // namespace samplecheck::stats
