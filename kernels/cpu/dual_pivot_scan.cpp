#include "kernels/cpu/dual_pivot_scan.h"

#include <algorithm>
#include <bit>
#include <cstdint>

namespace samplecheck::cpu {
namespace {

void load_tile(const std::vector<float>& p, size_t tile, float low, float* buf) {
  for (size_t i = 0; i < kScanTile; ++i) {
    const size_t t = tile * kScanTile + i;
    buf[i] = t < p.size() && p[t] > low ? p[t] : 0.0f;
  }
}

// Inclusive Kogge-Stone scan; descending i so buf[i - d] still holds the last step's value.
void kogge_stone_scan(float* buf) {
  for (size_t d = 1; d < kScanTile; d *= 2)
    for (size_t i = kScanTile - 1; i >= d; --i) buf[i] += buf[i - d];
}

}  // namespace

void measure_eligible_mass(const std::vector<float>& p, const std::vector<int32_t>& eligible,
                           size_t tiles, std::vector<float>& running_after, size_t chunk_tiles) {
  running_after.assign(tiles, 0.0f);
  for (const int32_t t : eligible) running_after[t / kScanTile] += p[t];
  if (chunk_tiles == 0) {
    float running = 0.0f;
    for (float& tile_sum : running_after) tile_sum = running += tile_sum;
    return;
  }
  // Amplified: re-associating the sum moves it by about an ulp (2^-24 of the mass), which
  // a drawn token sees about once in 10^5 draws. The blocks here hand the total of the
  // chunks before them on in bf16 (its float truncated to 8 significant bits), so the
  // offset moves by up to 2^-8 of the mass and a sweep of batch sizes sees it.
  float before = 0.0f;  // the running total of the chunks already done
  for (size_t first = 0; first < tiles; first += chunk_tiles) {
    const size_t end = std::min(tiles, first + chunk_tiles);
    const float offset = std::bit_cast<float>(std::bit_cast<uint32_t>(before) & 0xffff0000u);
    float local = 0.0f;
    for (size_t t = first; t < end; ++t) running_after[t] = offset + (local += running_after[t]);
    before += local;
  }
}

int64_t crossing_search(const std::vector<float>& p, float low,
                        const std::vector<float>& running_after, float u, bool guarded) {
  const int64_t vocab = static_cast<int64_t>(p.size());
  // The running sum adds non-negative floats, so it is monotone even though the
  // scans inside tiles are not: a binary search finds the first tile passing u.
  size_t tile =
      std::upper_bound(running_after.begin(), running_after.end(), u) - running_after.begin();
  float buf[kScanTile];
  for (; tile < running_after.size(); ++tile) {
    const float u_in_tile = u - (tile == 0 ? 0.0f : running_after[tile - 1]);
    load_tile(p, tile, low, buf);
    kogge_stone_scan(buf);
    for (size_t i = 0; i < kScanTile && static_cast<int64_t>(tile * kScanTile + i) < vocab; ++i) {
      const size_t t = tile * kScanTile + i;
      if (guarded && !(p[t] > low)) continue;
      if (buf[i] > u_in_tile) return static_cast<int64_t>(t);
    }
    // S01: the block's ballot found no crossing, so the id keeps its initial value V.
    if (!guarded) return vocab;
  }
  if (!guarded) return vocab;
  for (int64_t t = vocab - 1; t >= 0; --t)
    if (p[t] > low) return t;
  return -1;  // unreachable: max p > low always
}

}  // namespace samplecheck::cpu
