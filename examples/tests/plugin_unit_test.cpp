// The vendor example plugin's pieces, compiled from examples/plugin and held to
// samplecheck's truth: its Philox against Random123's known answers and the
// reference stream, its bf16 rounding against the reference, and the tokens its
// filters keep against the judge's exact rule (reference/filtered_distribution.h).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "bf16.h"
#include "filters.h"
#include "philox.h"
#include "reference/filtered_distribution.h"
#include "reference/numeric.h"
#include "reference/philox.h"
#include "suites/testing/fixtures.h"
#include "suites/testing/philox_kat.h"

namespace {

std::vector<int32_t> kept_ids(const std::vector<float>& row, int32_t top_k, double top_p) {
  const std::vector<double> probs(row.begin(), row.end());
  return vendor::filter_row(probs, top_k, top_p).ids;
}

bool contains(const std::vector<int32_t>& ids, int32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

TEST_CASE("the vendor Philox4x32-10 matches Random123's known answers") {
  using samplecheck::testing::fixture_path;
  const auto kats = samplecheck::testing::read_philox_kats(fixture_path("philox4x32_10_kat.txt"));
  REQUIRE(kats.size() == 3);
  for (const auto& kat : kats) {
    const vendor::philox_block got = vendor::philox4x32_10(kat.counter, kat.key[0], kat.key[1]);
    CHECK(got == kat.expected);
  }
  // Negative control: the comparison sees a one-bit change of the counter.
  const auto& first = kats.front();
  vendor::philox_block other = first.counter;
  other[3] ^= 1u;
  CHECK(vendor::philox4x32_10(other, first.key[0], first.key[1]) != first.expected);
}

TEST_CASE("the vendor stream is curand_init(seed, subsequence, offset)'s") {
  const uint64_t seeds[] = {0, 1, 0x243f6a8885a308d3ull, ~uint64_t{0}};
  const uint64_t subsequences[] = {0, 1, 7, uint64_t{1} << 32, ~uint64_t{0}};
  const uint64_t offsets[] = {0, 1, 2, 3, 4, 5, 17, (uint64_t{1} << 34) + 2};
  for (const uint64_t seed : seeds)
    for (const uint64_t subsequence : subsequences)
      for (const uint64_t offset : offsets) {
        CAPTURE(seed, subsequence, offset);
        vendor::philox_stream mine(seed, subsequence, offset);
        samplecheck::philox_stream truth(seed, subsequence, offset);
        for (int i = 0; i < 12; ++i) REQUIRE(mine.next() == truth.next());
      }
}

TEST_CASE("the vendor uniform takes 53 bits from two outputs, in [0, 1)") {
  vendor::philox_stream a(5, 0, 0), b(5, 0, 0);
  const uint64_t high = b.next(), low = b.next();
  CHECK(vendor::next_unit_double(a) == static_cast<double>((high << 21) | (low >> 11)) / 0x1p53);
  // The largest value is below 1: all 53 bits set.
  CHECK(static_cast<double>((uint64_t{1} << 53) - 1) * 0x1.0p-53 < 1.0);
}

TEST_CASE("the vendor bf16 conversions agree with the reference, NaN and ties included") {
  samplecheck::philox_stream bits(11, 0, 0);
  std::vector<uint32_t> cases = {0x00000000u, 0x80000000u, 0x3F808000u, 0x3F818000u, 0x7F7FFFFFu,
                                 0x7F800000u, 0xFF800000u, 0x7FC00001u, 0x7F800001u, 0x00000001u};
  for (int i = 0; i < 100000; ++i) cases.push_back(bits.next());
  for (const uint32_t b : cases) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    CAPTURE(b);
    CHECK(vendor::float_to_bf16(f) == samplecheck::float_to_bf16(f));
    const uint16_t h = static_cast<uint16_t>(b);
    const float mine = vendor::bf16_to_float(h), truth = samplecheck::bf16_to_float(h);
    CHECK(std::memcmp(&mine, &truth, sizeof mine) == 0);
  }
}

// A .4 B .3 C .2 D .1: top-k 3 + top-p .6 keeps A and B in either filter order.
TEST_CASE("the vendor filters keep the worked example's sets") {
  const std::vector<float> row{0.4f, 0.3f, 0.2f, 0.1f};
  CHECK(kept_ids(row, 3, 0.6f) == std::vector<int32_t>{0, 1});
  CHECK(kept_ids(row, 2, 0.5f) == std::vector<int32_t>{0});  // top-p on the top-2 mass
  CHECK(kept_ids(row, 0, 0.5f) == std::vector<int32_t>{0, 1});
  CHECK(kept_ids(row, 0, 1.0f) == std::vector<int32_t>{0, 1, 2, 3});
  // Ties with the k-th survive; a tie group that top-p cuts is kept whole.
  const std::vector<float> tied{0.25f, 0.25f, 0.25f, 0.125f, 0.125f, 0.0f};
  CHECK(kept_ids(tied, 1, 1.0f) == std::vector<int32_t>{0, 1, 2});
  CHECK(kept_ids(tied, 4, 1.0f) == std::vector<int32_t>{0, 1, 2, 3, 4});
  CHECK(kept_ids(tied, 0, 0.3f) == std::vector<int32_t>{0, 1, 2});
  CHECK(kept_ids(tied, 0, 0.8f) == std::vector<int32_t>{0, 1, 2, 3, 4});
  // A token of probability 0 is never kept, even when k reaches it.
  CHECK(kept_ids(tied, 5, 1.0f).size() == 5);
}

TEST_CASE("the vendor filters agree with the judge's exact rule on tied and skewed rows") {
  using namespace samplecheck;
  // Rows with exact ties (values from a small set) and long tails.
  std::vector<std::vector<float>> rows;
  philox_stream stream(2024, 0, 0);
  for (int r = 0; r < 60; ++r) {
    const int vocab = 4 + r % 29;
    std::vector<float> raw(static_cast<size_t>(vocab));
    for (float& v : raw) {
      const uint32_t x = stream.next();
      v = r % 2 == 0 ? static_cast<float>(x % 5) : std::ldexp(1.0f, -static_cast<int>(x % 12));
    }
    float sum = 0.0f;
    for (const float v : raw) sum += v;
    if (sum == 0.0f) continue;
    for (float& v : raw) v /= sum;
    rows.push_back(raw);
  }
  int64_t decided = 0;
  for (const std::vector<float>& row : rows)
    for (const int32_t k : {0, 1, 2, 3, 5, 8, 40})
      for (const float p : {1.0f, 0.95f, 0.7f, 0.5f, 0.3f, 0.05f}) {
        filter_params params;
        params.top_k = k;
        params.top_p = p;
        params.order = filter_order::top_k_first;
        params.ties = tie_policy::keep_ties;
        reference_options options;
        options.normalisation = probs_normalisation::renormalise;
        const reference_result truth =
            compute_filtered_distribution(row, input_kind::probs, params, options);
        REQUIRE(truth.ok());
        const std::vector<int32_t> kept = kept_ids(row, k, p);
        for (int32_t t = 0; t < static_cast<int32_t>(row.size()); ++t) {
          const membership m = truth.distribution().status[t];
          if (m == membership::boundary) continue;  // either answer is right within rounding
          CAPTURE(row, k, p, t);
          CHECK(contains(kept, t) == (m == membership::in));
          ++decided;
        }
      }
  CHECK(decided > 10000);
}

TEST_CASE("the vendor inverse CDF maps [0, 1) onto the kept tokens by their mass") {
  const std::vector<double> probs{0.0, 0.5, 0.25, 0.25};
  const vendor::kept_tokens kept = vendor::filter_row(probs, 0, 1.0);
  REQUIRE(kept.ids == std::vector<int32_t>{1, 2, 3});
  CHECK(vendor::invert_cdf(kept, 0.0) == 1);
  CHECK(vendor::invert_cdf(kept, 0.4999) == 1);
  CHECK(vendor::invert_cdf(kept, 0.5) == 2);
  CHECK(vendor::invert_cdf(kept, 0.75) == 3);
  CHECK(vendor::invert_cdf(kept, std::nextafter(1.0, 0.0)) == 3);
}
