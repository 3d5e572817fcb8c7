// Philox4x32-10: Random123's known answers (read from the fixture file that ctest
// passes), cuRAND's offset/subsequence arithmetic, and the uniform conversions.
#include "reference/philox.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reference/uniform.h"
#include "suites/testing/fixtures.h"
#include "suites/testing/philox_kat.h"

using samplecheck::philox4x32_10;
using samplecheck::philox_block;
using samplecheck::philox_stream;

TEST_CASE("Philox4x32-10 matches Random123's known-answer vectors", "[philox]") {
  using samplecheck::testing::fixture_path;
  const auto kats = samplecheck::testing::read_philox_kats(fixture_path("philox4x32_10_kat.txt"));
  REQUIRE(kats.size() == 3);
  for (const auto& kat : kats) {
    // Random123's rule: an all-zero expected value would be a harness error.
    REQUIRE((kat.expected[0] | kat.expected[1] | kat.expected[2] | kat.expected[3]) != 0);
    const philox_block counter{{kat.counter[0], kat.counter[1], kat.counter[2], kat.counter[3]}};
    const philox_block got = philox4x32_10(counter, kat.key[0], kat.key[1]);
    for (int i = 0; i < 4; ++i) CHECK(got.w[i] == kat.expected[i]);
  }
}

TEST_CASE("offset counts 32-bit outputs as curand_init's offset does", "[philox]") {
  const uint64_t seed = 0x243f6a8885a308d3ull;
  philox_stream origin(seed, 7, 0);
  std::vector<uint32_t> first(64);
  for (auto& x : first) x = origin.next();
  for (uint64_t offset : {1u, 3u, 4u, 5u, 17u, 63u}) {
    philox_stream shifted(seed, 7, offset);
    CAPTURE(offset);
    CHECK(shifted.next() == first[offset]);
    CHECK(origin.at(offset) == first[offset]);
  }
  // Output j is word j % 4 of block j / 4 with the subsequence in the upper words.
  const philox_block block5 = philox4x32_10({{5, 0, 7, 0}}, uint32_t(seed), uint32_t(seed >> 32));
  CHECK(first[22] == block5.w[2]);
}

TEST_CASE("subsequence selects the upper counter words and seed the key", "[philox]") {
  philox_stream a(1, 0, 0), b(1, 1, 0), c(2, 0, 0);
  const uint32_t a0 = a.next(), b0 = b.next(), c0 = c.next();
  CHECK(a0 != b0);
  CHECK(a0 != c0);
  const philox_block expect_b = philox4x32_10({{0, 0, 1, 0}}, 1, 0);
  CHECK(b0 == expect_b.w[0]);
  // A 64-bit subsequence reaches the fourth counter word.
  philox_stream hi(1, uint64_t{1} << 32, 0);
  CHECK(hi.next() == philox4x32_10({{0, 0, 0, 1}}, 1, 0).w[0]);
  // Offsets past 2^32 blocks carry into the second counter word.
  const uint64_t far = (uint64_t{1} << 34) + 2;
  CHECK(philox_stream(1, 0, far).next() == philox4x32_10({{0, 1, 0, 0}}, 1, 0).w[2]);
}

TEST_CASE("next_four gives the outputs of four next() calls from any offset", "[philox]") {
  // Every offset mod 4 (one block or two), a block boundary carrying into the
  // second counter word, and a stream left where four next() calls leave it.
  for (const uint64_t start : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{4},
                               uint64_t{7}, (uint64_t{1} << 34) - 2}) {
    CAPTURE(start);
    philox_stream one(0x1234'5678'9abc'def0ull, 77, start),
        four(0x1234'5678'9abc'def0ull, 77, start);
    for (int call = 0; call < 3; ++call) {
      uint32_t words[4];
      four.next_four(words);
      for (const uint32_t w : words) CHECK(w == one.next());
      CHECK(four.position() == one.position());
    }
  }
  // Negative control: the comparison sees a stream one output off (the slip a
  // dropped or doubled block would cause).
  philox_stream ahead(5, 0, 1), behind(5, 0, 0);
  uint32_t words[4];
  ahead.next_four(words);
  CHECK_FALSE((words[0] == behind.next() && words[1] == behind.next() &&
               words[2] == behind.next() && words[3] == behind.next()));
}

TEST_CASE("curand_uniform is (0, 1] and exactly 1 from 0xffffff80 up", "[uniform]") {
  using samplecheck::curand_uniform_from_bits;
  CHECK(curand_uniform_from_bits(0) > 0.0f);
  CHECK(curand_uniform_from_bits(0xffffff7fu) < 1.0f);
  CHECK(curand_uniform_from_bits(0xffffff80u) == 1.0f);
  CHECK(curand_uniform_from_bits(0xffffffffu) == 1.0f);
  // 2^25 of the 2^32 raw values map to 1.0f: probability 2^-25 per draw.
  CHECK(0xffffffffull - 0xffffff80ull + 1 == 128);
}

TEST_CASE("the guarded uniforms never reach their open ends", "[uniform]") {
  using namespace samplecheck;
  CHECK(uniform_open_one(0xffffffffu) < 1.0f);
  CHECK(uniform_open_one(0) == 0.0f);
  CHECK(uniform_open_both(0) > 0.0f);
  CHECK(uniform_open_both(0xffffffffu) < 1.0f);
  CHECK(uniform_double(0xffffffffu, 0xffffffffu) < 1.0);
}
