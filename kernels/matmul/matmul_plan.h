// The reduction order of the batch-invariant matmuls, shared by the CUDA/HIP
// kernels and their CPU emulations so both compute the same bits.
//
// Order for one output (m, n), over the K range [begin, end) of a segment:
//   32 reduction lanes; lane l owns the 8-element chunks that start at
//   begin + 8 l + 256 t (t = 0, 1, ...), and accumulates them in increasing k
//   with fp32 fma starting from +0. The 32 lane sums are combined by an xor
//   butterfly (distances 16, 8, 4, 2, 1; each step v[i] = v[i] + v[i ^ d]).
// The segment sums p_0..p_{S-1} are folded left to right: ((p0 + p1) + p2) + p3,
// then the bias is added once, then the result is rounded to bf16.
//
// bf16 x bf16 products are exact in fp32 (8 + 8 significand bits < 24), so
// fma(a, w, acc) and acc + a * w round identically for normal-range data: the
// CPU emulation needs no fma instruction to reproduce the GPU bits.
//
// Nothing in that order depends on M or on the tile shape, which is why every
// correct launch configuration gives the same bits. The matmul defects of
// kernels/defect.h (B01-B08) are switches in the plan.
#pragma once

#include <cstdint>

#include "kernels/defect.h"
#include "reference/host_device.h"

namespace samplecheck::matmul {

inline constexpr int kReductionLanes = 32;
inline constexpr int kChunk = 8;  // 16 bytes of bf16: one vector load
inline constexpr int64_t kLaneRound = int64_t{kReductionLanes} * kChunk;  // 256
inline constexpr int kSegments = 4;
// K <= 256 stays on the persistent kernel, because there each segment would be a
// single block and split/unsplit launches round differently (mutant B04).
inline constexpr int64_t kSegmentMinK = 256;
inline constexpr int kMaxSegments = kSegments;

// B07's undeclared threshold (a vendor does not declare its bug) and B08's SM budget
// (a 132-SM GPU's): B08 takes 132 / ceil(M / tile_m) splits, rounded down to 4, 2
// or 1, as split-KV planners size their splits to fill the GPU.
inline constexpr int64_t kB07Threshold = 2048;
inline constexpr int64_t kB08SmBudget = 132;

struct reduction_plan {
  int64_t segment_length = 0;  // multiple of kChunk except for a single segment
  int32_t num_segments = 1;
  bool split = false;                // one program per segment, then a reduce kernel
  bool butterfly_ascending = false;  // B03: distances 1, 2, 4, 8, 16
  bool round_partials = false;       // B04: split partials stored in the output dtype
  bool bias_in_partial0 = false;     // B05
  bool atomic_reduce = false;        // B06
};

struct launch_config {
  const char* name;
  int32_t tile_m;  // output rows per reduction group
  int32_t tile_n;  // output columns per reduction group
  bool split;
};

// The tile shapes the kernels are instantiated for. Split is meaningful only
// for the segmented kernel; the persistent kernel has the tiles alone.
inline constexpr launch_config kPersistentConfigs[] = {{"tile1x4", 1, 4, false},
                                                       {"tile1x8", 1, 8, false},
                                                       {"tile4x8", 4, 8, false},
                                                       {"tile8x4", 8, 4, false}};
inline constexpr launch_config kSegmentedConfigs[] = {
    {"tile1x4.split", 1, 4, true}, {"tile1x4.unsplit", 1, 4, false},
    {"tile1x8.split", 1, 8, true}, {"tile1x8.unsplit", 1, 8, false},
    {"tile4x8.split", 4, 8, true}, {"tile4x8.unsplit", 4, 8, false},
    {"tile8x4.split", 8, 4, true}, {"tile8x4.unsplit", 8, 4, false}};
inline constexpr int32_t kNumPersistentConfigs = 4;
inline constexpr int32_t kNumSegmentedConfigs = 8;

// The launch table: split while the output tiles alone are too few to fill the GPU,
// up to M = 1024 (M = 32 when N > 8192, whose many columns fill it sooner); 1x4
// tiles at M <= 2, 8x4 above. The fastest choices of the matmul bench
// (docs/h200.md, "The matmul launch tables").
inline bool table_split(int64_t m, int64_t n) { return m <= (n > 8192 ? 32 : 1024); }

inline int32_t table_tile(int64_t m) { return m <= 2 ? 0 : 3; }  // 1x4, else 8x4

inline int32_t persistent_table_config(int64_t m, int64_t /*n*/) { return table_tile(m); }
inline int32_t segmented_table_config(int64_t m, int64_t n) {
  return 2 * table_tile(m) + (table_split(m, n) ? 0 : 1);
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
inline bool is_power_of_two(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

inline reduction_plan persistent_plan(int64_t k) {
  reduction_plan plan;
  plan.segment_length = k;
  plan.num_segments = 1;
  return plan;
}

// The segmented kernel's plan for one call. `split` comes from the launch
// configuration (or the table); a correct plan's bits do not depend on it.
// tile_m: the launch's output rows per reduction group (only B08 reads it).
inline reduction_plan segmented_plan(defect d, int64_t m, int64_t k, bool split,
                                     int32_t tile_m = 1) {
  if (k <= kSegmentMinK && d != defect::B04) return persistent_plan(k);
  reduction_plan plan;
  plan.split = split;
  plan.num_segments = kSegments;
  if (d == defect::B01 && m > 64) plan.num_segments = 2;
  if (d == defect::B07 && m >= kB07Threshold) plan.num_segments = 2;
  if (d == defect::B08) {
    const int64_t per_tile = kB08SmBudget / ceil_div(m, tile_m > 0 ? tile_m : 1);
    plan.num_segments = per_tile >= 4 ? 4 : per_tile >= 2 ? 2 : 1;
  }
  if (d == defect::B04 && k <= kSegmentMinK) {
    // Each segment is one short block, as kSegmentMinK prevents in a correct
    // kernel, and the split launch's partials go through the output dtype.
    plan.segment_length = round_up(ceil_div(k, kSegments), kChunk);
    plan.round_partials = split;
  } else {
    // Segments are whole lane rounds, so a segment's chunks never straddle its end.
    plan.segment_length = round_up(ceil_div(k, plan.num_segments), kLaneRound);
  }
  if (d == defect::B02)
    plan.num_segments =
        static_cast<int32_t>(k / plan.segment_length > 0 ? k / plan.segment_length : 1);
  plan.butterfly_ascending = d == defect::B03 && is_power_of_two(k) && m >= 64;
  plan.bias_in_partial0 = d == defect::B05 && split;
  plan.atomic_reduce = d == defect::B06 && split;
  return plan;
}

// sc_matmul::launch_config_name for both kernel families (CPU emulation and CUDA).
inline const char* persistent_config_name(void*, int32_t index) {
  return index >= 0 && index < kNumPersistentConfigs ? kPersistentConfigs[index].name : nullptr;
}
inline const char* segmented_config_name(void*, int32_t index) {
  return index >= 0 && index < kNumSegmentedConfigs ? kSegmentedConfigs[index].name : nullptr;
}

}  // namespace samplecheck::matmul
