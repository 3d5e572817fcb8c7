// The crossing search of the dual-pivot sampler on its own: the float prefix sum it
// runs over is not monotone, and the guard must keep every answer inside {p > low}.
#include "kernels/cpu/dual_pivot_scan.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

using namespace samplecheck::cpu;

namespace {

struct scanned_row {
  std::vector<float> p;
  float low;
  std::vector<float> running_after;
};

// Values spread over six decades (so float sums round), a third of them at or below `low`.
scanned_row random_row(std::mt19937& gen, size_t vocab, float low) {
  std::uniform_real_distribution<float> exponent(-6.0f, 0.0f);
  scanned_row row{std::vector<float>(vocab), low, {}};
  for (size_t t = 0; t < vocab; ++t)
    row.p[t] = t % 3 == 1 ? low * (t % 2) : std::pow(10.0f, exponent(gen));
  std::vector<int32_t> eligible;
  for (size_t t = 0; t < vocab; ++t)
    if (row.p[t] > low) eligible.push_back(static_cast<int32_t>(t));
  measure_eligible_mass(row.p, eligible, (vocab + kScanTile - 1) / kScanTile, row.running_after);
  return row;
}

}  // namespace

TEST_CASE("the guarded search returns only eligible tokens, for u across the whole mass") {
  std::mt19937 gen(7);
  for (const size_t vocab : {size_t{1}, size_t{1000}, kScanTile, 3 * kScanTile + 17}) {
    CAPTURE(vocab);
    const scanned_row row = random_row(gen, vocab, 1e-4f);
    if (row.running_after.back() == 0.0f) continue;  // vocab 1 may hold a single ineligible token
    for (int i = 0; i <= 4096; ++i) {
      const float u = row.running_after.back() * (static_cast<float>(i) / 4096.0f);
      const int64_t t = crossing_search(row.p, row.low, row.running_after, u, true);
      CAPTURE(u);
      REQUIRE(t >= 0);
      REQUIRE(t < static_cast<int64_t>(vocab));
      REQUIRE(row.p[t] > row.low);
    }
  }
}

TEST_CASE("u at or past the scanned total: the guard clamps, the unguarded search returns V") {
  std::mt19937 gen(11);
  const scanned_row row = random_row(gen, 2 * kScanTile + 5, 1e-4f);
  const float total = row.running_after.back();
  int64_t last_eligible = static_cast<int64_t>(row.p.size()) - 1;
  while (!(row.p[last_eligible] > row.low)) --last_eligible;
  for (const float u : {total, std::nextafter(total, INFINITY), total * 1.001f}) {
    REQUIRE(crossing_search(row.p, row.low, row.running_after, u, true) == last_eligible);
    REQUIRE(crossing_search(row.p, row.low, row.running_after, u, false) ==
            static_cast<int64_t>(row.p.size()));
  }
}

TEST_CASE("where the tile sum and the scan disagree, only the guard saves the search") {
  // u just below the tile's sequential sum: the sum says the crossing is in this tile.
  // Whenever the scan's prefixes all stay at or below u (it rounded the same values to
  // less), the unguarded search has no crossing and returns V; the guard must still
  // return an eligible token. Random tiles hit this often; require that some did.
  std::mt19937 gen(3);
  int disagreements = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const scanned_row row = random_row(gen, kScanTile, 1e-4f);
    const float u = std::nextafter(row.running_after.back(), 0.0f);
    const int64_t unguarded = crossing_search(row.p, row.low, row.running_after, u, false);
    const int64_t guarded = crossing_search(row.p, row.low, row.running_after, u, true);
    REQUIRE(guarded >= 0);
    REQUIRE(guarded < static_cast<int64_t>(kScanTile));
    REQUIRE(row.p[guarded] > row.low);
    if (unguarded == static_cast<int64_t>(kScanTile)) ++disagreements;
  }
  INFO(disagreements << " of 400 tiles had no scanned crossing below their own sum");
  REQUIRE(disagreements > 0);
}
