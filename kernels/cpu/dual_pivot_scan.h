// The inverse-transform step of the dual-pivot sampler, as a GPU block lays it out:
// the row in tiles of kScanTile tokens, a float sum per tile (sequential, token order)
// and a float running sum across tiles, then a Kogge-Stone scan inside the tile that
// holds the crossing. The per-tile sum and the scan associate differently, so the
// prefix sum is not monotone and the two can disagree about where u is crossed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace samplecheck::cpu {

inline constexpr size_t kScanTile =
    1024;  // one block's slice of the row (FlashInfer: threads x vector width)

// running_after[t]: the float running sum of the eligible tokens' p up to the end of
// tile t. `eligible` lists them in token order; `tiles` = ceil(V / kScanTile).
// chunk_tiles = 0: one running sum across the row (the correct kernel). Otherwise the
// row is split between blocks of chunk_tiles tiles, each block's running sum starts at
// 0 and is offset by the running total of the blocks before it: the same mass in
// another association, so other float bits (X02 chooses chunk_tiles from the batch).
void measure_eligible_mass(const std::vector<float>& p, const std::vector<int32_t>& eligible,
                           size_t tiles, std::vector<float>& running_after, size_t chunk_tiles = 0);

// The token whose scanned prefix first passes u among {p > low}. Guarded (the correct
// kernel): only eligible tokens are returned, a tile the sum said holds the crossing but
// the scan does not passes the search on, and u beyond the scanned total returns the
// last eligible token. Unguarded (S01): any token whose prefix passes u, and V when the
// tile's scan finds none or u is beyond the total.
int64_t crossing_search(const std::vector<float>& p, float low,
                        const std::vector<float>& running_after, float u, bool guarded);

}  // namespace samplecheck::cpu
