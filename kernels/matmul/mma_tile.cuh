// The tensor-core matmul's block (mma_kernels.cu): its launch arguments, the
// shape constants of a tile configuration, a thread's share of the k-tile copies,
// and mma_block, one thread's view of the kernel's steps. The synchronization they
// follow is described at the top of mma_kernels.cu. Included by mma_kernels.cu only.
#pragma once

#include <cuda.h>

#include "kernels/gpu_compat.h"
#include "kernels/matmul/mma_kernels.h"
#include "kernels/matmul/mma_primitives.cuh"
#include "reference/numeric.h"

namespace samplecheck::matmul {
// Internal linkage, as when all of this was in mma_kernels.cu: the only includer.
namespace {

struct mma_args {
  CUtensorMap map_a,
      map_w;  // TMA path only: [M][K] and [N][K] bf16, 64 x BM / BN boxes, 128-byte swizzle
  device_problem p;
  int64_t segment_length;
  int32_t num_segments;
  bool split;
  uint32_t* tile_counters;  // [n-tiles][m-tiles] arrivals, zero at launch; split only
  float* partials;          // [num_segments][m][n] fp32; split only
};

// BK: the k-tile width, 64 or 128 elements. It changes what one pipeline stage
// holds (128: 256 contiguous bytes per W row instead of 128), not the order:
// the k16 steps, their k0 and the segment ends are the same (mma_kernels.h).
// GROUPS: 1, or 4 warp groups per block, group s computing segment s of the
// block's tile with its own STAGES slots (an in-block split, folded in shared memory).
template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, int BK, bool Tma, int GROUPS = 1>
struct tile_shape {
  static constexpr int kRowChunks = BK / 8;                // 16-byte chunks in one k-tile row
  static constexpr int kThreads = WARPS_M * WARPS_N * 32;  // one group's
  static constexpr int kBlockThreads = GROUPS * kThreads;
  static constexpr int kWarpM = BM / WARPS_M, kWarpN = BN / WARPS_N;
  static constexpr int MI = kWarpM / 16, NI = kWarpN / 8;
  static constexpr uint32_t kStageBytes = (BM + BN) * BK * 2;
  // TMA's 128-byte swizzle is a function of the address: its tiles start 1024-byte aligned.
  static constexpr size_t kGroupBytes = size_t{STAGES} * kStageBytes;
  static constexpr size_t kSharedBytes = GROUPS * kGroupBytes + (Tma ? 1024 : 0);
  // A k-tile copy: thread i takes chunk i % kRowChunks of the stage rows
  // i / kRowChunks + j kRoundRows, j < kLoads (A rows, then W rows).
  static constexpr int kRoundRows = kThreads / kRowChunks, kLoads = (BM + BN) / kRoundRows;
  static constexpr uint32_t kRoundBytes =
      kRoundRows * BK * 2;  // from load j to load j + 1 in a stage
  // The blocks per SM that the H200's shared memory allows (228 KiB, 1 KiB of
  // it reserved per block); __launch_bounds__ caps the registers so they fit.
  static constexpr int kMinBlocks = static_cast<int>(228 * 1024 / (kSharedBytes + 1024));
  static_assert(kMinBlocks >= 1 && 65536 / (kBlockThreads * kMinBlocks) >= 128,
                "a register cap under 128 would spill");
  static_assert(GROUPS == 1 || (GROUPS == kSegments && BM * BN * 4 <= kGroupBytes),
                "one group per segment; a group's sums fit in its own slots");
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0,
                "B fragments are loaded 16 columns (two n8 tiles) at a time");
  static_assert(kThreads % kRowChunks == 0 && kRoundRows % 8 == 0 && BM % kRoundRows == 0 &&
                    BN % kRoundRows == 0,
                "a thread's chunk and row % 8 (so its swizzle) are the same in every round; a "
                "round is all A or all W");
  static_assert(STAGES >= 2 && (BK == 64 || BK == 128),
                "a tile overhangs a segment (64 k multiple) by 64 at most");
  static_assert(!Tma || (BK == 64 && (BM + BN) % 8 == 0),
                "a box row is one 128-byte swizzle row; stages stay 1024-aligned");
};

// This thread's part of every k-tile copy, chunk `chunk` of stage rows r0, r0 +
// kRoundRows, ...: what does not depend on the k-tile (pointers, row predicates,
// destinations) is computed once per block, so a vector tile costs per chunk one
// address add, a predicate and the copy.
template <class Shape, int BM, int BK, bool Vector>
struct tile_loader {
  static constexpr int kLoads = Shape::kLoads;
  static constexpr uint32_t kRoundBytes = Shape::kRoundBytes;
  const device_problem& p;
  int64_t m0, n0;
  int chunk, r0;                                      // of the group-local thread
  uint32_t destination = 2 * swizzle<BK>(r0, chunk);  // byte offset of load 0 in a stage
  const uint16_t* source[Vector ? kLoads : 1];        // vector: row start + chunk
  uint32_t row_valid = 0;  // vector: bit j, load j's row is inside the problem

  // Rows past M or N point at the operand's row 0, in bounds, and are read as zero bytes.
  __device__ __forceinline__ const uint16_t* row_start(int row, bool& valid) const {
    const bool is_a = row < BM;
    const int64_t global_row = (is_a ? m0 : n0 - BM) + row;
    valid = global_row < (is_a ? p.m : p.n);
    return (is_a ? p.a : p.weight) + (valid ? global_row : 0) * p.k;
  }

  __device__ __forceinline__ tile_loader(const device_problem& problem, int64_t m, int64_t n,
                                         int thread)
      : p(problem),
        m0(m),
        n0(n),
        chunk(thread % Shape::kRowChunks),
        r0(thread / Shape::kRowChunks) {
    if constexpr (Vector) {
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        bool valid;
        source[j] = row_start(r0 + j * Shape::kRoundRows, valid) + chunk * 8;
        row_valid |= static_cast<uint32_t>(valid) << j;
        asm("" : "+l"(source[j]));  // opaque: a tile adds k to it, not row * K + k anew
      }
    }
  }

  // k-tile [k0, k0 + BK) into the stage at shared address `stage`, zeros at or
  // past `k_end` (the segment end) and in rows past M or N. Vector: cp.async of
  // 16 bytes (aligned operands, K % 8 == 0, K < 2^32); otherwise scalar loads
  // and a shared-memory store of the same contents.
  __device__ __forceinline__ void load(uint32_t stage, int64_t k0, int64_t k_end) const {
    const uint32_t dst = stage + destination;
    if constexpr (Vector) {
      // K % 8 == 0 and k_end is K or a multiple of 64: a chunk is all in or all
      // out, and this thread's chunk is at the same k in all its rows (a 128-wide
      // tile past the segment end gets zeros, and no mma reads them).
      if (k0 + chunk * 8 < k_end) {
        const auto k = static_cast<uint32_t>(k0);  // K < 2^32
#pragma unroll
        for (int j = 0; j < kLoads; ++j)
          cp_async_16(dst + j * kRoundBytes, source[j] + k, row_valid >> j & 1 ? 16 : 0);
      } else {
#pragma unroll
        for (int j = 0; j < kLoads; ++j) cp_async_16(dst + j * kRoundBytes, p.a, 0);
      }
    } else {
      // One chunk at a time: unrolled, the scalar loads of every chunk would be
      // in flight together and spill.
#pragma unroll 1
      for (int j = 0; j < kLoads; ++j) {
        bool valid;
        const uint16_t* row = row_start(r0 + j * Shape::kRoundRows, valid);
        const int64_t k = k0 + chunk * 8;
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t lo = valid && k + 2 * i < k_end ? row[k + 2 * i] : 0u;
          const uint32_t hi = valid && k + 2 * i + 1 < k_end ? row[k + 2 * i + 1] : 0u;
          w[i] = lo | (hi << 16);
        }
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst + j * kRoundBytes),
                     "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                     : "memory");
      }
    }
  }
};

// f(mi, ni, e) for every element of a thread's MI x NI mma tiles, unrolled.
template <int MI, int NI, class F>
__device__ __forceinline__ void for_each_fragment(F&& f) {
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) f(mi, ni, e);
}

// One thread of mma_tile_kernel: where its block's tile, its group's slots and its
// warp's outputs are, the k-tile sequence it streams, and the kernel's steps on them.
template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, int BK, bool Tma, int GROUPS,
          load_path Path>
struct mma_block {
  using Shape = tile_shape<BM, BN, WARPS_M, WARPS_N, STAGES, BK, Tma, GROUPS>;
  static constexpr int MI = Shape::MI, NI = Shape::NI;
  static constexpr bool kVector = Path != load_path::scalar, kCopyEngine = Path == load_path::tma;
  using fragments = float[MI][NI][4];

  const mma_args& args;
  const device_problem& p;
  // In-block split (GROUPS = 4): group g computes segment g alone, through its own
  // slots, mbarriers and named barrier (1 + g); the fold is in shared memory.
  const int group = GROUPS > 1 ? static_cast<int>(threadIdx.x) / Shape::kThreads : 0;
  const int thread = GROUPS > 1 ? static_cast<int>(threadIdx.x) % Shape::kThreads
                                : static_cast<int>(threadIdx.x);
  // Block order (x only): m-tile fastest, then segment, then n-tile. The blocks
  // that read the same W k-range (every m-tile of one n-tile and segment) run
  // side by side, so W comes from DRAM once and from L2 for the other m-tiles.
  // 32-bit index arithmetic: the launch keeps the block count below 2^31.
  const uint32_t segments_in_grid = args.split ? static_cast<uint32_t>(args.num_segments) : 1u;
  const uint32_t m_tiles = static_cast<uint32_t>((p.m + BM - 1) / BM);
  const uint32_t block = blockIdx.x;
  const int64_t m0 = static_cast<int64_t>(block % m_tiles) * BM;
  const int64_t n0 = static_cast<int64_t>(block / m_tiles / segments_in_grid) * BN;
  // A group past the last segment (K <= 256: one segment) has nothing to compute.
  const int32_t first = GROUPS > 1   ? min(group, args.num_segments)
                        : args.split ? static_cast<int32_t>(block / m_tiles % segments_in_grid)
                                     : 0;
  const int32_t last = GROUPS > 1 || args.split ? min(first + 1, args.num_segments)
                                                : args.num_segments;
  const int lane = thread % 32, warp = thread / 32;
  const int warp_row = (warp / WARPS_N) * Shape::kWarpM,
            warp_col = (warp % WARPS_N) * Shape::kWarpN;
  const uint32_t shared_base, aligned_base, slot0, full0;
  const tile_loader<Shape, BM, BK, kVector> loader;
  uint32_t a_offset, w_offset;  // ldmatrix rows at k16 step 0 (constructor)
  // Next to load: load_k of [segment begin, load_end) of segment load_s.
  int32_t load_s;
  int64_t load_k, load_end;

  // shared_address, stage_full: the shared addresses of the dynamic slots and of
  // the TMA mbarriers.
  __device__ __forceinline__ mma_block(const mma_args& a, uint32_t shared_address,
                                       uint32_t stage_full)
      : args(a),
        p(a.p),
        shared_base(shared_address),
        aligned_base(kCopyEngine ? (shared_base + 1023u) & ~1023u : shared_base),
        slot0(aligned_base + group * static_cast<uint32_t>(Shape::kGroupBytes)),
        full0(stage_full + 8 * STAGES * group),
        loader(p, m0, n0, thread) {
    if constexpr (kCopyEngine) {
      if (threadIdx.x == 0) {
        for (int s = 0; s < GROUPS * STAGES; ++s) mbarrier_init(full0 + 8 * s);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::
                         : "memory");  // visible to the copy engine
      }
      __syncthreads();
    }
    // ldmatrix rows at k16 step 0, byte offsets in a stage. A: lanes 0-15 rows 0-15
    // at k 0-7 (a0, a1), lanes 16-31 at k 8-15 (a2, a3). W: matrix q = lane / 8 is n
    // rows 0-7 (q 0, 1) or 8-15 (q 2, 3) at k 0-7 (q even) or 8-15 (q odd).
    a_offset = 2 * swizzle<BK>(warp_row + (lane & 15), lane >> 4);
    w_offset =
        2 * (BM * BK + swizzle<BK>(warp_col + (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1));
    asm(""
        : "+r"(a_offset),
          "+r"(w_offset));  // kept in registers, not re-derived from threadIdx every tile
    load_s = first;
    load_k = segment_begin(first);
    load_end = min64(load_k + args.segment_length, p.k);
  }

  __device__ __forceinline__ void group_sync() const {
    if constexpr (GROUPS == 1)
      __syncthreads();
    else
      asm volatile("bar.sync %0, %1;\n" ::"r"(1 + group), "n"(Shape::kThreads) : "memory");
  }

  __device__ __forceinline__ int64_t segment_begin(int32_t s) const {
    return min64(int64_t{s} * args.segment_length, p.k);
  }

  // The next k-tile of the sequence into slot `stage` (none past the last; the
  // group is committed anyway).
  __device__ __forceinline__ void load_next(int stage) {
    if (load_k >= load_end && load_s + 1 < last) {  // only trailing segments are empty (past K)
      load_k = segment_begin(++load_s);
      load_end = min64(load_k + args.segment_length, p.k);
    }
    if (load_k < load_end) {
      const uint32_t slot = slot0 + stage * Shape::kStageBytes;
      if constexpr (kCopyEngine) {
        // A k-tile never crosses a segment end (64-wide tiles, segments of 64
        // multiples) except at K, past which the box reads zeros.
        if (thread == 0) {
          const uint32_t bar = full0 + 8 * stage;
          mbarrier_expect_bytes(bar, Shape::kStageBytes);
          tma_load(slot, &args.map_a, static_cast<int32_t>(load_k), static_cast<int32_t>(m0), bar);
          tma_load(slot + BM * BK * 2, &args.map_w, static_cast<int32_t>(load_k),
                   static_cast<int32_t>(n0), bar);
        }
      } else {
        loader.load(slot, load_k, load_end);
      }
      load_k += BK;
    }
    if constexpr (!kCopyEngine)
      cp_async_commit();  // empty groups too: group g holds the sequence's tile g
  }

  // One k16 step: MI x NI mma.sync into acc, from the tile in `slot`.
  __device__ __forceinline__ void k16_step(fragments& acc, uint32_t slot, int kk) const {
    uint32_t a_frag[MI][4],
        b_frag[NI / 2][4];  // b_frag[nj]: b0, b1 of n-tile 2 nj, then of 2 nj + 1
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
      ldmatrix_x4(slot + k16_offset(a_offset, kk) + mi * 32 * BK, a_frag[mi]);
#pragma unroll
    for (int nj = 0; nj < NI / 2; ++nj)
      ldmatrix_x4(slot + k16_offset(w_offset, kk) + nj * 32 * BK, b_frag[nj]);
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
        mma_bf16(acc[mi][ni], a_frag[mi], b_frag[ni / 2][(ni % 2) * 2],
                 b_frag[ni / 2][(ni % 2) * 2 + 1]);
  }

  // Segment s's k-tiles [begin, end) from the slots into acc, refilling each slot
  // once every warp is past it; stage and phase follow the sequence's tile g.
  __device__ __forceinline__ void segment_tiles(fragments& acc, int64_t begin, int64_t end,
                                                int& stage, uint32_t& phase) {
    const int tiles = static_cast<int>((end - begin + BK - 1) / BK);
    for (int t = 0; t < tiles; ++t) {
      const int previous = stage == 0 ? STAGES - 1 : stage - 1;  // tile g - 1's slot
      const uint32_t slot = slot0 + stage * Shape::kStageBytes;
      if constexpr (kCopyEngine) {
        group_sync();  // every warp is past tile g - 1
        load_next(previous);
        mbarrier_wait(full0 + 8 * stage, phase);  // tile g has landed
      } else {
        cp_async_wait<STAGES - 2>();  // tile g has landed (scalar stores: already there)
        group_sync();
        load_next(previous);  // all warps are past tile g - 1
      }
      const int64_t tile_k = begin + static_cast<int64_t>(t) * BK;
      // The segment's k16 steps end at its end: a step wholly past K is not an mma,
      // whatever the k-tile width (mma_kernels.h). Only a segment's last tile has such steps.
      // A warp whose rows are all past M has no output: it skips its mma (uniform branch).
      if (m0 + warp_row >= p.m) {
      } else if (tile_k + BK <= end) {
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) k16_step(acc, slot, kk);
      } else {
#pragma unroll
        for (int kk = 0; kk < BK / 16 && tile_k + kk * 16 < end; ++kk) k16_step(acc, slot, kk);
      }
      if (++stage == STAGES) stage = 0, phase ^= 1u;
    }
  }

  // The k-tiles of segments first..last - 1 stream through the slots as one
  // sequence (the next segment's first tiles load while this one's last are
  // computed); each segment's sum still starts from +0, and total is
  // ((p0 + p1) + p2) + p3: the first segment is copied, not added to +0.
  __device__ __forceinline__ void sum_segments(fragments& total) {
    // Not unrolled: each unrolled copy would keep its own load addresses live.
#pragma unroll 1
    for (int t = 0; t < STAGES - 1; ++t) load_next(t);
    int stage = 0;  // tile g's slot, g % STAGES (g counts over all the block's segments)
    uint32_t phase =
        0;  // TMA: (g / STAGES) % 2, the phase of stage's mbarrier that tile g completes
    for (int32_t s = first; s < last; ++s) {
      const int64_t begin = segment_begin(s), end = min64(begin + args.segment_length, p.k);
      float acc[MI][NI][4] = {};  // +0
      segment_tiles(acc, begin, end, stage, phase);
      for_each_fragment<MI, NI>([&](int mi, int ni, int e) {
        total[mi][ni][e] = s == first ? acc[mi][ni][e] : total[mi][ni][e] + acc[mi][ni][e];
      });
    }
  }

  // In-block split: ((p0 + p1) + p2) + p3 as every other launch folds. Groups 1..
  // leave their sums in their own (idle) slots, each value where the same thread of
  // group 0 reads it; no group writes memory another group has read. False in the
  // groups other than 0, which are then done.
  __device__ __forceinline__ bool fold_groups(fragments& total, uint16_t* shared) const {
    const auto sums_of = [&](int32_t g) {
      return reinterpret_cast<float*>(shared +
                                      (aligned_base - shared_base + g * Shape::kGroupBytes) / 2);
    };
    const auto at = [&](int mi, int ni, int e) {
      return ((mi * NI + ni) * 4 + e) * Shape::kThreads + thread;
    };
    __syncthreads();  // every group is past its last tile
    if (group > 0 && group < args.num_segments)
      for_each_fragment<MI, NI>(
          [&](int mi, int ni, int e) { sums_of(group)[at(mi, ni, e)] = total[mi][ni][e]; });
    __syncthreads();
    if (group != 0) return false;
    for (int32_t s = 1; s < args.num_segments; ++s)
      for_each_fragment<MI, NI>([&](int mi, int ni, int e) {
        total[mi][ni][e] = total[mi][ni][e] + sums_of(s)[at(mi, ni, e)];
      });
    return true;
  }

  // c0, c1: row lane / 4, columns 2 (lane % 4) + 0, 1; c2, c3: the row 8 below.
  __device__ __forceinline__ int64_t row_of(int mi, int e) const {
    return m0 + warp_row + mi * 16 + (lane >> 2) + (e >> 1) * 8;
  }
  __device__ __forceinline__ int64_t column_of(int ni, int e) const {
    return n0 + warp_col + ni * 8 + (lane & 3) * 2 + (e & 1);
  }
  // The end of every order: bias once in fp32, one rounding.
  __device__ __forceinline__ void write_output(int64_t m, int64_t n, float v) const {
    if (p.bias != nullptr) v = v + bf16_to_float(p.bias[n]);
    p.out[m * p.n + n] = float_to_bf16(v);
  }
  // f(m, n, this thread's sum for (m, n), a scratch float) for each of its
  // outputs inside the problem (in row `only` of 8, mi * 2 + e / 2, if given).
  template <class F>
  __device__ __forceinline__ void for_each_output(fragments& total, fragments& part, F&& f,
                                                  int only = -1) const {
    for_each_fragment<MI, NI>([&](int mi, int ni, int e) {
      const int64_t m = row_of(mi, e), n = column_of(ni, e);
      if ((only < 0 || mi * 2 + e / 2 == only) && m < p.m && n < p.n)
        f(m, n, total[mi][ni][e], part[mi][ni][e]);
    });
  }
  __device__ __forceinline__ float* plane(int32_t s, int64_t m, int64_t n) const {
    return args.partials + (int64_t{s} * p.m + m) * p.n + n;
  }

  // Split: stores this block's plane and counts the block in its tile; true in
  // the block that completes the count, which then folds the tile.
  __device__ __forceinline__ bool publish_plane(fragments& total, fragments& part) const {
    for_each_output(total, part,
                    [&](int64_t m, int64_t n, float v, float&) { *plane(first, m, n) = v; });
    // Publish this block's plane before counting it: the barrier first, so thread
    // 0 counts only once all of the block's warps have stored. (Without it warp 0
    // could count while another warp's stores were still to come, and the folding
    // block read that warp's slots of the plane before they were written: the
    // race a changed warp schedule, e.g. under racecheck, can expose.)
    __syncthreads();
    const uint32_t tile = block % m_tiles + block / m_tiles / segments_in_grid * m_tiles;
    bool folds_tile = false;
    if (threadIdx.x == 0) {
      folds_tile =
          gpu_arrive(args.tile_counters + tile) == static_cast<uint32_t>(args.num_segments - 1);
      // Every block of the tile has counted, so nothing else touches it in this
      // launch; zero it for the next launch or graph replay (stream order).
      if (folds_tile) atomicExch(args.tile_counters + tile, 0u);
    }
    return __syncthreads_or(folds_tile);  // hands thread 0's acquire to the block
  }

  // ((p0 + p1) + p2) + p3 as the unsplit fold, every plane from L2 (__ldcg: this
  // SM's L1 is not coherent with the other blocks' stores; p_first is this
  // thread's own). A plane's loads for one of the thread's rows are all issued
  // before any is added: 2 MI L2 round trips per segment, not one per output.
  __device__ __forceinline__ void fold_planes(fragments& total, fragments& part) const {
#pragma unroll
    for (int row = 0; row < 2 * MI; ++row)
#pragma unroll 1
      for (int32_t s = 0; s < args.num_segments; ++s) {
        for_each_output(
            total, part,
            [&](int64_t m, int64_t n, float&, float& v) { v = __ldcg(plane(s, m, n)); }, row);
        for_each_output(
            total, part, [&](int64_t, int64_t, float& sum, float v) { sum = s == 0 ? v : sum + v; },
            row);
      }
  }

  __device__ __forceinline__ void write_outputs(fragments& total, fragments& part) const {
    for_each_output(total, part,
                    [&](int64_t m, int64_t n, float v, float&) { write_output(m, n, v); });
  }
};

}  // namespace
}  // namespace samplecheck::matmul
