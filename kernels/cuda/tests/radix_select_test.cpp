// The radix-select step the CUDA kernels use for the k-th largest (radix_select.h),
// run on the host: four 8-bit passes with host histograms must find exactly the key
// std::nth_element finds, for every k tried, on keys with few distinct values, many
// ties and uniform bits. The same loop with the digit taken on `count > remaining`
// (an off-by-one that drops exact hits) must get some of them wrong.
#include "kernels/cuda/radix_select.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace {

using samplecheck::cuda::radix_prefix;
using step_fn = radix_prefix (*)(const unsigned*, int, radix_prefix);

radix_prefix strict_step(const unsigned* histogram, int shift, radix_prefix at) {
  int digit = 255;
  for (; digit > 0; --digit) {
    const int count = static_cast<int>(histogram[digit]);
    if (count > at.remaining) break;  // the defect: an exact hit moves on
    at.remaining -= count;
  }
  return {at.prefix | (static_cast<uint32_t>(digit) << shift), at.remaining};
}

// The k-th largest key (k >= 1) as the kernels find it: per pass, a histogram of the
// pass's digit over the keys matching the prefix so far, then one step.
uint32_t kth_largest(const std::vector<uint32_t>& keys, int k, step_fn step) {
  radix_prefix at{0, k};
  uint32_t mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    unsigned histogram[256] = {};
    for (const uint32_t key : keys)
      if ((key & mask) == at.prefix) ++histogram[(key >> shift) & 0xffu];
    at = step(histogram, shift, at);
    mask |= 0xffu << shift;
  }
  return at.prefix;
}

uint32_t reference_kth(std::vector<uint32_t> keys, int k) {
  std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(), std::greater<>());
  return keys[k - 1];
}

std::vector<std::vector<uint32_t>> key_sets() {
  std::mt19937 rng(2026);
  std::vector<std::vector<uint32_t>> sets;
  std::vector<uint32_t> uniform(5000), ties(5000), clustered(5000);
  for (auto& x : uniform) x = rng();
  for (auto& x : ties)
    x = 0x3f000000u + (rng() % 7) * 0x00010101u;  // 7 distinct keys, ~700 copies each
  for (auto& x : clustered)
    x = 0x3c000000u | (rng() & 0x0000ffffu);  // one top byte, as float probs have
  sets = {uniform, ties, clustered, {42u}, {5u, 5u, 5u}};
  return sets;
}

}  // namespace

// Exact: a radix select has no tolerance, so every (set, k) must agree.
TEST_CASE("the radix-select step finds exactly the k-th largest key", "[radix_select]") {
  for (const auto& keys : key_sets()) {
    const int n = static_cast<int>(keys.size());
    for (const int k : {1, 2, 20, n / 3 + 1, n / 2 + 1, n}) {
      if (k < 1 || k > n) continue;
      INFO("n = " << n << ", k = " << k);
      CHECK(kth_largest(keys, k, samplecheck::cuda::radix_select_step) == reference_kth(keys, k));
    }
  }
}

TEST_CASE("the comparison catches a step that moves on at an exact hit", "[radix_select][mutant]") {
  int wrong = 0, tried = 0;
  for (const auto& keys : key_sets()) {
    const int n = static_cast<int>(keys.size());
    for (const int k : {1, 2, 20, n / 3 + 1, n / 2 + 1, n}) {
      if (k < 1 || k > n) continue;
      ++tried;
      wrong += kth_largest(keys, k, strict_step) != reference_kth(keys, k);
    }
  }
  WARN("the strict step is wrong on " << wrong << " of " << tried << " (set, k) cases");
  CHECK(wrong > 0);
}
