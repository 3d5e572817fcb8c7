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

inline constexpr size_t kScanTile = 1024;  // one block's slice of the row (FlashInfer: threads x vector width)

// running_after[t]: the float running sum of the eligible tokens' p up to the end of
// tile t. `eligible` lists them in token order; `tiles` = ceil(V / kScanTile).
void measure_eligible_mass(const std::vector<float>& p, const std::vector<int32_t>& eligible,
                           size_t tiles, std::vector<float>& running_after);

// The token whose scanned prefix first passes u among {p > low}. Guarded (the correct
// kernel): only eligible tokens are returned, a tile the sum said holds the crossing but
// the scan does not passes the search on, and u beyond the scanned total returns the
// last eligible token. Unguarded (S01): any token whose prefix passes u, and V when the
// tile's scan finds none or u is beyond the total.
int64_t crossing_search(const std::vector<float>& p, float low, const std::vector<float>& running_after,
                        float u, bool guarded);

}  // namespace samplecheck::cpu
