// The float order the CUDA kernels key on (float_order.h), run on the host: the
// order-preserving image must sort floats as floats do (signed zeros, subnormals
// and infinities included) and invert exactly, and a packed (key, index) pair must
// prefer the larger key, then the lower index, over the "no token" sentinel and 0.
// Two plausible slips must fail the same checks: keying on the raw bits (negative
// floats come out in reverse) and packing the index without inverting it (a tie
// goes to the higher index).
#include "kernels/cuda/float_order.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

namespace sc = samplecheck::cuda;

// Ascending, each strictly above the one before (-0 before +0, as the kernels take it).
const std::vector<float> kLadder = {-INFINITY, -FLT_MAX, -1.5f,        -FLT_MIN, -FLT_TRUE_MIN,
                                    -0.0f,     0.0f,     FLT_TRUE_MIN, FLT_MIN,  1e-10f,
                                    0.5f,      1.0f,     FLT_MAX,      INFINITY};

template <typename Key>
bool strictly_ascending(const std::vector<float>& xs, Key key) {
  for (size_t i = 1; i < xs.size(); ++i)
    if (!(key(xs[i - 1]) < key(xs[i]))) return false;
  return true;
}

std::vector<float> random_floats(size_t n) {
  std::mt19937 rng(7);
  std::vector<float> xs;
  while (xs.size() < n) {
    const float x = samplecheck::bits_to_float(static_cast<uint32_t>(rng()));
    if (!std::isnan(x)) xs.push_back(x);  // every exponent, both signs
  }
  return xs;
}

unsigned long long pack_index_unflipped(float key, int index) {
  return static_cast<unsigned long long>(sc::ordered_bits(key)) << 32 |
         static_cast<uint32_t>(index);
}

}  // namespace

TEST_CASE("ordered_bits sorts floats as floats sort, and inverts exactly", "[float_order]") {
  CHECK(strictly_ascending(kLadder, sc::ordered_bits));
  auto xs = random_floats(20000);
  std::vector<float> by_value = xs, by_bits = xs;
  std::stable_sort(by_value.begin(), by_value.end(), [](float a, float b) {
    return a < b || (a == b && std::signbit(a) && !std::signbit(b));
  });
  std::stable_sort(by_bits.begin(), by_bits.end(),
                   [](float a, float b) { return sc::ordered_bits(a) < sc::ordered_bits(b); });
  CHECK(std::equal(by_value.begin(), by_value.end(), by_bits.begin(), [](float a, float b) {
    return samplecheck::float_to_bits(a) == samplecheck::float_to_bits(b);
  }));
  xs.insert(xs.end(), kLadder.begin(), kLadder.end());
  for (const float x : xs)
    REQUIRE(samplecheck::float_to_bits(sc::from_ordered_bits(sc::ordered_bits(x))) ==
            samplecheck::float_to_bits(x));
  // The negative control: raw bits put every negative float above the positives.
  CHECK_FALSE(strictly_ascending(kLadder, samplecheck::float_to_bits));
}

TEST_CASE("pack_best prefers the larger key, then the lower index", "[float_order]") {
  const int kNone = INT_MAX;  // the kernels' "no token yet"
  CHECK(sc::pack_best(2.0f, 7) > sc::pack_best(1.0f, 3));
  CHECK(sc::pack_best(1.0f, 3) > sc::pack_best(1.0f, 5));
  CHECK(sc::pack_best(-1.0f, 9) > sc::pack_best(-2.0f, 0));
  CHECK(sc::pack_best(-INFINITY, 5) > sc::pack_best(-INFINITY, kNone));
  CHECK(sc::pack_best(FLT_TRUE_MIN, 151935) > sc::pack_best(0.0f, 0));
  for (const float key : kLadder)
    for (const int index : {0, 1, 151935, (1 << 18) - 1, kNone}) {
      const unsigned long long packed = sc::pack_best(key, index);
      REQUIRE(packed > 0ull);  // 0 is the identity of the max
      REQUIRE(sc::index_of_best(packed) == index);
      REQUIRE(samplecheck::float_to_bits(sc::key_of_best(packed)) ==
              samplecheck::float_to_bits(key));
    }
  // The negative control: an index packed as is wins ties for the higher index.
  CHECK_FALSE(pack_index_unflipped(1.0f, 3) > pack_index_unflipped(1.0f, 5));
}
