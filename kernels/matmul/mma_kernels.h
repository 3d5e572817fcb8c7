// The tensor-core (mma.sync bf16) batch-invariant matmuls: cuda.segmented_mma
// and cuda.persistent_mma. CUDA only (sm_80+ instructions, built for sm_90a);
// never compiled for HIP.
//
// Order for one output (m, n), over the K range [begin, end) of a segment:
//   the k16 steps of the segment, k0 = begin, begin + 16, ... (k0 < end), in
//   increasing k0; each step is one mma.sync m16n8k16 (bf16 in, fp32 out) whose
//   C input is the running sum, starting from +0. Elements at or past K are 0.
// The segment sums p_0..p_{S-1} are folded left to right: ((p0 + p1) + p2) + p3,
// then the bias is added once in fp32, then one rounding to bf16
// (reference/numeric.h float_to_bf16, as the SIMT kernels).
// Segments: K <= 256 is one segment [0, K) (kSegmentMinK: there a split and an
// unsplit launch would round differently); otherwise
// 4 segments of round_up(ceil(K / 4), 64) elements (the last one ends at K, and
// may be empty: its sum is +0), so a 64-wide k-tile never straddles two.
//
// Why that order does not depend on M, on the tile shape, on split vs unsplit
// or on the launch: row i of an mma's D depends only on row i of A, on B and on
// row i of C, and every config sends each output through the same mma steps
// (same segments, same k0 sequence, same zero padding). Its position in the
// m16n8 tile is m % 16 and n % 8 whatever the tile, and rows past M and columns
// past N are zero-filled, never read into another output's sum. Split launches
// run one block per (tile, segment); each stores its fp32 p_s, and the last of
// a tile's blocks to arrive folds the tile's p_0..p_{S-1} in segment order, in
// the same kernel. Unsplit launches fold the same p_s in registers in the same
// order; in-block launches (g4 below) in shared memory, one warp group per
// segment. Every way it is the same fp32 adds on the same values. What the CPU
// cannot do is reproduce the bits: the mma's internal accumulation of its 16
// products and C is not an IEEE fma sequence, so these kernels have no CPU
// emulation; their tests are invariance checks on the GPU plus accuracy
// against the fp64 reference.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul/matmul_kernels.h"

namespace samplecheck::matmul {

inline constexpr int64_t kMmaKTile = 64;  // segment granule and default k-tile, in elements

// The block tiles the kernel is instantiated for (mma_kernels.cu sets their
// warp grids and pipeline depths). sN: N cp.async stages, deeper than that
// tile's default (N - 1 k-tiles loading while one is computed), for launches
// with one or two blocks per SM, where a block's k-tiles in flight set the pace.
// k128: 128-wide k-tiles (256 contiguous bytes per W row per stage, half the
// barriers per k); same k16 steps, same segment ends, so the same bits. The
// stage count never changes a bit either; m16n64k128 and m32n64k128 keep 4:
// at 3 a third block would fit an SM, but the launches they are chosen for
// (M <= 32, N <= 4096) have at most 256 blocks, 2 per SM of a 132-SM GPU, so a
// block's k-tiles in flight set the pace and 3 stages would only cut them.
// w8: 8 warps (4 x 2, 16 x 32 outputs each, as m32n64's) instead of 4, and 6
// stages, 2 blocks per SM: twice the warps issuing per SM at the same block count.
// g4: the in-block split. One block per output tile with 4 warp groups, group
// s computing segment s through its own 48 KB of stages; group 0 then folds the
// 4 sums in segment order from shared memory (the same fp32 adds as the split
// launches' fold). Its k-tiles come from the bulk tensor copy engine (TMA: one
// 2-D box of A and one of W per stage, issued by one thread of the group,
// completing on the stage's mbarrier), landing in the same 128-byte swizzle
// the cp.async path writes. Why: in every one-group launch at M = 64 each warp's
// chain of dependent instructions per k-tile set the pace, far below HBM
// bandwidth, TMA-fed configs with deep stages included (Nsight Compute; figures
// in docs/h200.md). Four groups run the 4 segments' chains side by side in a
// 512-thread block, with no fp32 partials in global memory and no second pass.
enum class mma_tile : int32_t {
  m16n32,
  m16n64,
  m16n128,
  m32n64,
  m64n32,
  m64n64,
  m64n64s6,
  m64n128,
  m64n128s8,
  m128n128,
  m16n64k128,
  m32n64k128,
  m64n64k128,
  m64n64w8,
  m16n32g4,
  m16n64g4,
  m32n32g4,
  m32n64g4,
  m64n32g4,
  m64n64g4,
  m32n96g4
};
inline constexpr int mma_tile_groups(mma_tile tile) { return tile >= mma_tile::m16n32g4 ? 4 : 1; }
inline constexpr bool mma_tile_uses_tma(mma_tile tile) { return mma_tile_groups(tile) > 1; }

struct mma_tile_size {
  int32_t rows, cols;
};
inline constexpr mma_tile_size mma_tile_dims(mma_tile tile) {
  switch (tile) {
    case mma_tile::m16n32:
    case mma_tile::m16n32g4:
      return {16, 32};
    case mma_tile::m32n32g4:
      return {32, 32};
    case mma_tile::m32n96g4:
      return {32, 96};
    case mma_tile::m16n64:
    case mma_tile::m16n64g4:
    case mma_tile::m16n64k128:
      return {16, 64};
    case mma_tile::m16n128:
      return {16, 128};
    case mma_tile::m32n64:
    case mma_tile::m32n64g4:
    case mma_tile::m32n64k128:
      return {32, 64};
    case mma_tile::m64n32:
    case mma_tile::m64n32g4:
      return {64, 32};
    case mma_tile::m64n64:
    case mma_tile::m64n64g4:
    case mma_tile::m64n64s6:
    case mma_tile::m64n64w8:
    case mma_tile::m64n64k128:
      return {64, 64};
    case mma_tile::m64n128:
    case mma_tile::m64n128s8:
      return {64, 128};
    case mma_tile::m128n128:
      return {128, 128};
  }
  return {0, 0};
}

struct mma_launch_config {
  const char* name;
  mma_tile tile;
  bool split;  // one block per (tile, segment), the last to arrive folds
};

// Split configs for M <= 64, where 4 x (M / BM) x (N / BN) blocks is all the
// parallelism the fixed order allows (a segment's k16 steps are one chain):
// small tiles give more blocks, deep pipelines more bytes in flight per block.
// The unsplit ones are for large M, where the tiles alone fill the GPU, and for
// M <= 64 where a split's fold and extra blocks cost more than they give
// (m64n64.unsplit at M = 64 on qkv); the last four are candidates for that.
inline constexpr mma_launch_config kSegmentedMmaConfigs[] = {
    {"m16n32.split", mma_tile::m16n32, true},
    {"m16n64.split", mma_tile::m16n64, true},
    {"m32n64.split", mma_tile::m32n64, true},
    {"m64n32.split", mma_tile::m64n32, true},
    {"m64n64.split", mma_tile::m64n64, true},
    {"m64n64s6.split", mma_tile::m64n64s6, true},
    {"m64n128.split", mma_tile::m64n128, true},
    {"m64n128s8.split", mma_tile::m64n128s8, true},
    {"m64n64.unsplit", mma_tile::m64n64, false},
    {"m128n128.unsplit", mma_tile::m128n128, false},
    {"m16n64k128.split", mma_tile::m16n64k128, true},
    {"m32n64k128.split", mma_tile::m32n64k128, true},
    {"m64n64k128.split", mma_tile::m64n64k128, true},
    {"m32n64.unsplit", mma_tile::m32n64, false},
    {"m64n32.unsplit", mma_tile::m64n32, false},
    {"m64n64w8.split", mma_tile::m64n64w8, true},
    {"m64n64w8.unsplit", mma_tile::m64n64w8, false},
    // In-block split: one block per tile, its 4 warp groups computing the 4 segments.
    {"m16n32g4.inblock", mma_tile::m16n32g4, false},
    {"m16n64g4.inblock", mma_tile::m16n64g4, false},
    {"m32n32g4.inblock", mma_tile::m32n32g4, false},
    {"m32n64g4.inblock", mma_tile::m32n64g4, false},
    {"m64n32g4.inblock", mma_tile::m64n32g4, false},
    {"m64n64g4.inblock", mma_tile::m64n64g4, false},
    {"m32n96g4.inblock", mma_tile::m32n96g4, false}};  // qkv at M = 64: 128 tiles for 132 SMs
inline constexpr mma_launch_config kPersistentMmaConfigs[] = {
    {"m16n32", mma_tile::m16n32, false},   {"m16n64", mma_tile::m16n64, false},
    {"m16n128", mma_tile::m16n128, false}, {"m64n64", mma_tile::m64n64, false},
    {"m64n128", mma_tile::m64n128, false}, {"m128n128", mma_tile::m128n128, false}};
inline constexpr int32_t kNumSegmentedMmaConfigs = 24;
inline constexpr int32_t kNumPersistentMmaConfigs = 6;
static_assert(sizeof kSegmentedMmaConfigs / sizeof kSegmentedMmaConfigs[0] ==
              kNumSegmentedMmaConfigs);
static_assert(sizeof kPersistentMmaConfigs / sizeof kPersistentMmaConfigs[0] ==
              kNumPersistentMmaConfigs);

// Launch tables: the fastest configuration per layer and M of the matmul bench's
// per-configuration lines (docs/h200.md, "The matmul launch tables", has the
// times and the command). qkv N = 6144, o and down N = 4096, gate_up N = 24576.
// Any entry may change without changing a bit: every config computes the order at
// the top of this file (the launch-configuration test checks it).
inline int32_t segmented_mma_table_config(int64_t m, int64_t n) {
  if (n > 8192) {
    // gate_up: its 384 tiles fill the GPU without a split, in-block or not.
    if (m <= 32) return 13;  // m32n64.unsplit
    if (m <= 64) return 8;   // m64n64.unsplit
  } else if (n <= 4096) {
    // o and down: the in-block split was the fastest.
    if (m <= 32) return 18;  // m16n64g4.inblock
    // M = 64: taller tiles; every split configuration was far slower.
    if (m <= 64) return 21;  // m64n32g4.inblock
  } else {
    // qkv: the in-block split; from M = 32 on, m32n96's 128 tiles match the SM
    //   count better than m64n64's 96 or m32n64's 192.
    if (m <= 16) return 18;  // m16n64g4.inblock
    if (m <= 64) return 23;  // m32n96g4.inblock
  }
  if (m <= 256) return n > 8192 ? 8 : 6;  // m64n64.unsplit : m64n128.split
  return 9;                               // m128n128.unsplit
}
// persistent_mma has one block per output tile (the same bench run).
inline int32_t persistent_mma_table_config(int64_t m, int64_t n) {
  // M = 1 and 16: m16n64 was the fastest (or tied) on every layer.
  if (m <= 16) return 1;  // m16n64
  // M = 32: m16n64, m64n64 on gate_up (qkv's m16n32 was within noise of m16n64,
  //         which is kept).
  if (m <= 32) return n > 8192 ? 3 : 1;  // m64n64 : m16n64
  // M = 64: m16n64 on o and down, m16n32 on qkv, m64n64 on gate_up.
  if (m <= 64) return n > 8192 ? 3 : (n > 4096 ? 0 : 1);  // m64n64 : m16n32 : m16n64
  return m <= 256 ? 4 : 5;  // m64n128 : m128n128 (not timed above M = 64)
}

// The segment plan of the mma order above; `split` is meaningful only with more
// than one segment (a single segment is always folded in registers).
inline reduction_plan segmented_mma_plan(int64_t k, bool split) {
  reduction_plan plan;
  if (k <= kSegmentMinK) return persistent_plan(k);
  plan.num_segments = kSegments;
  plan.segment_length = round_up(ceil_div(k, kSegments), kMmaKTile);
  plan.split = split;
  return plan;
}

inline const char* segmented_mma_config_name(void*, int32_t index) {
  return index >= 0 && index < kNumSegmentedMmaConfigs ? kSegmentedMmaConfigs[index].name : nullptr;
}
inline const char* persistent_mma_config_name(void*, int32_t index) {
  return index >= 0 && index < kNumPersistentMmaConfigs ? kPersistentMmaConfigs[index].name
                                                        : nullptr;
}

// The workspace of a split launch: one uint32 arrival counter per output tile,
// which must be zero before the launch (the launch leaves it zero again, so a
// later call or a CUDA-graph replay finds it so), and num_segments fp32
// planes of m x n partials. Unsplit launches need neither (both 0).
inline bool mma_splits(const reduction_plan& plan) { return plan.split && plan.num_segments > 1; }
inline size_t mma_counter_bytes(const reduction_plan& plan, mma_tile tile, int64_t m, int64_t n) {
  const mma_tile_size dims = mma_tile_dims(tile);
  // Rounded to 256 bytes so partials placed right after start aligned.
  return mma_splits(plan) ? static_cast<size_t>(
                                round_up(ceil_div(m, dims.rows) * ceil_div(n, dims.cols) * 4, 256))
                          : 0;
}
inline size_t mma_partial_bytes(const reduction_plan& plan, int64_t m, int64_t n) {
  return mma_splits(plan) ? static_cast<size_t>(plan.num_segments * m * n) * sizeof(float) : 0;
}
inline size_t mma_workspace_bytes(const reduction_plan& plan, mma_tile tile, int64_t m, int64_t n) {
  return mma_counter_bytes(plan, tile, m, n) + mma_partial_bytes(plan, m, n);
}

// Enqueues the mma kernel on `stream` (a cudaStream_t): one launch, split or
// not. `tile_counters` (mma_counter_bytes, zeroed) and `partials`
// (mma_partial_bytes) are used only by split launches. Any pointer alignment
// and any K are accepted: misaligned operands, K % 8 != 0 or K >= 2^32 take a
// scalar load path into the same shared-memory tiles, so the bits are those of
// the fast path; TMA tiles also need M, N, K < 2^31 (32-bit box coordinates) and
// the driver's tensor-map encoder, else they take cp.async. Returns the cudaError_t code.
int launch_mma_matmul(const reduction_plan& plan, mma_tile tile, const device_problem& problem,
                      uint32_t* tile_counters, float* partials, void* stream);

}  // namespace samplecheck::matmul
