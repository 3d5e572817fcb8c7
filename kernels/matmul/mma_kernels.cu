// The tensor-core batch-invariant matmul: mma.sync m16n8k16 bf16 -> fp32, fed by
// ldmatrix from a multi-stage shared-memory pipeline (cp.async or TMA). The reduction
// order, and why it does not depend on M or on the launch, is in mma_kernels.h.
//
// A block owns a BM x BN output tile and one segment (split) or all of them
// (unsplit); in a split launch the last of a tile's blocks to finish folds the
// tile, so every launch is one kernel. Its WARPS_M x WARPS_N warps own (BM /
// WARPS_M) x (BN / WARPS_N) outputs each, as MI x NI mma tiles of 16 x 8. The
// block streams the BK-wide k-tiles (64 or 128) of A [BM, BK] and W [BN, BK] of
// its segments, one segment after the other, through STAGES shared slots as one
// sequence; each segment's sum starts afresh from +0 (seed 003's design note).
//
// Synchronization, all of it: (1) a slot is refilled (cp.async or scalar
// stores) only after the __syncthreads that follows every warp's last ldmatrix
// of it: iteration g refills the slot tile g - 1 used, after the barrier of
// iteration g; (2) cp.async.wait_group STAGES - 2 then __syncthreads before a
// tile is read: groups are committed one per prologue step and one per
// iteration (empty ones too), so group g holds tile g of the sequence whatever
// the segments' tile counts; (3) split: every thread stores its partials, a
// barrier, then thread 0 counts the block with one acq_rel atomic (gpu_arrive:
// its release is cumulative, so it publishes the stores the barrier ordered
// before it); in the block that completes the count the barrier hands thread
// 0's acquire to every thread, which reads every plane from L2.
// TMA tiles replace (1) and (2) by the copy engine: thread 0 refills tile g - 1's
// slot after the barrier of iteration g (all ldmatrix reads of it done), arming
// the slot's mbarrier with the stage's byte count; every thread waits on that
// mbarrier's phase (the slot's fill count, mod 2) before reading the tile.
// In-block split (GROUPS = 4): each warp group runs (1) and (2) on its own
// slots and mbarriers with its own named barrier (1 + group) in place of
// __syncthreads; then a block barrier (every group past its last tile), groups
// 1.. store their sums in their own slots, a block barrier, group 0 folds.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <climits>

#include "kernels/gpu_compat.h"
#include "kernels/matmul/mma_kernels.h"
#include "reference/numeric.h"

namespace samplecheck::matmul {
namespace {

static_assert(kMmaKTile == 64, "the 128-wide k-tiles rely on segments being multiples of 64");

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

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Element offset of 16-byte chunk `chunk` of row `row` in a [rows][BK] tile. The
// chunk's low 3 bits are XORed with row % 8, so the 8 rows one ldmatrix matrix
// reads (same logical chunk) land in 8 different 16-byte bank groups: no bank
// conflicts (BK = 64 or 128: 8 or 16 chunks a row, the XOR stays in the row).
template <int BK>
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * BK + ((chunk ^ (row & 7)) << 3);
}

// 16 bytes global -> shared, bypassing L1 (W is read once); src_bytes = 0 fills zeros.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

// How a block's k-tiles reach shared memory: scalar loads and stores (any
// alignment and K), cp.async of 16 bytes a thread, or the copy engine (TMA).
enum class load_path { scalar, cp_async, tma };

__device__ __forceinline__ void mbarrier_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
// One arrival (the issuing thread's) that also expects `bytes` from the copy engine.
__device__ __forceinline__ void mbarrier_expect_bytes(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, "
        "1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
}
// Box (column k, row `row`) of `map` into shared `dst`; rows and columns past the
// tensor arrive as zeros and still count in the mbarrier's bytes.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int32_t k,
                                         int32_t row, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k), "r"(row), "r"(bar)
      : "memory");
}

// Four 8x8 b16 matrices; lanes 8q..8q+7 give the row addresses of matrix q, and
// thread t receives row t / 4, columns 2 (t % 4) and +1 of each, in r[q].
__device__ __forceinline__ void ldmatrix_x4(uint32_t address, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
}

// c = A (16 x 16, row) . B (16 x 8, col) + c, bf16 inputs, fp32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

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

// Byte offset of k16 step kk of a thread's ldmatrix row, from `offset`, its
// step-0 offset (chunk h = 0 or 1). The step's chunk 2 kk + h swizzles to
// (2 kk & 8) + ((2 kk & 6) ^ (h ^ row % 8)), and bits 4-6 of `offset` hold
// h ^ row % 8 (rows are whole 128-byte units): one XOR and a constant.
__device__ __forceinline__ uint32_t k16_offset(uint32_t offset, int kk) {
  return (offset ^ static_cast<uint32_t>((kk & 3) << 5)) + static_cast<uint32_t>((kk & 4) << 5);
}

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

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, int BK, bool Tma, int GROUPS,
          load_path Path>
__global__ void __launch_bounds__(
    GROUPS* WARPS_M* WARPS_N * 32,
    (tile_shape<BM, BN, WARPS_M, WARPS_N, STAGES, BK, Tma, GROUPS>::kMinBlocks))
    mma_tile_kernel(const __grid_constant__ mma_args args) {
  using Shape = tile_shape<BM, BN, WARPS_M, WARPS_N, STAGES, BK, Tma, GROUPS>;
  constexpr int MI = Shape::MI, NI = Shape::NI;
  constexpr bool kVector = Path != load_path::scalar, kCopyEngine = Path == load_path::tma;
  extern __shared__ __align__(128)
      uint16_t shared[];  // per group: STAGES x (A [BM][BK], W [BN][BK])
  __shared__ uint64_t
      stage_full[kCopyEngine ? GROUPS * STAGES : 1];  // TMA: a stage's tile has landed
  // In-block split (GROUPS = 4): group g computes segment g alone, through its own
  // slots, mbarriers and named barrier (1 + g); the fold is in shared memory.
  const int group = GROUPS > 1 ? static_cast<int>(threadIdx.x) / Shape::kThreads : 0;
  const int thread =
      GROUPS > 1 ? static_cast<int>(threadIdx.x) % Shape::kThreads : static_cast<int>(threadIdx.x);
  const auto group_sync = [&] {
    if constexpr (GROUPS == 1)
      __syncthreads();
    else
      asm volatile("bar.sync %0, %1;\n" ::"r"(1 + group), "n"(Shape::kThreads) : "memory");
  };

  const device_problem& p = args.p;
  // Block order (x only): m-tile fastest, then segment, then n-tile. The blocks
  // that read the same W k-range (every m-tile of one n-tile and segment) run
  // side by side, so W comes from DRAM once and from L2 for the other m-tiles.
  // 32-bit index arithmetic: the launch keeps the block count below 2^31.
  const uint32_t segments_in_grid = args.split ? static_cast<uint32_t>(args.num_segments) : 1u;
  const auto m_tiles = static_cast<uint32_t>((p.m + BM - 1) / BM);
  const uint32_t block = blockIdx.x;
  const int64_t m0 = static_cast<int64_t>(block % m_tiles) * BM;
  const int64_t n0 = static_cast<int64_t>(block / m_tiles / segments_in_grid) * BN;
  // A group past the last segment (K <= 256: one segment) has nothing to compute.
  const int32_t first = GROUPS > 1   ? min(group, args.num_segments)
                        : args.split ? static_cast<int32_t>(block / m_tiles % segments_in_grid)
                                     : 0;
  const int32_t last =
      GROUPS > 1 || args.split ? min(first + 1, args.num_segments) : args.num_segments;
  const int lane = thread % 32, warp = thread / 32;
  const int warp_row = (warp / WARPS_N) * Shape::kWarpM,
            warp_col = (warp % WARPS_N) * Shape::kWarpN;
  const auto shared_base = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  const uint32_t aligned_base = kCopyEngine ? (shared_base + 1023u) & ~1023u : shared_base;
  const uint32_t slot0 = aligned_base + group * static_cast<uint32_t>(Shape::kGroupBytes);
  const auto full0 =
      static_cast<uint32_t>(__cvta_generic_to_shared(stage_full)) + 8 * STAGES * group;
  const tile_loader<Shape, BM, BK, kVector> loader(p, m0, n0, thread);
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
  uint32_t a_offset = 2 * swizzle<BK>(warp_row + (lane & 15), lane >> 4);
  uint32_t w_offset =
      2 * (BM * BK + swizzle<BK>(warp_col + (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1));
  asm(""
      : "+r"(a_offset),
        "+r"(w_offset));  // kept in registers, not re-derived from threadIdx every tile

  // The k-tiles of segments first..last - 1 stream through the slots as one
  // sequence (the next segment's first tiles load while this one's last are
  // computed); each segment's sum still starts from +0. Next to load: load_k of
  // [segment begin, load_end) of segment load_s.
  const auto segment_begin = [&](int32_t s) {
    return min64(int64_t{s} * args.segment_length, p.k);
  };
  int32_t load_s = first;
  int64_t load_k = segment_begin(first), load_end = min64(load_k + args.segment_length, p.k);
  const auto load_next = [&](int stage) {
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
  };
  // Not unrolled: each unrolled copy would keep its own load addresses live.
#pragma unroll 1
  for (int t = 0; t < STAGES - 1; ++t) load_next(t);
  int stage = 0;       // tile g's slot, g % STAGES (g counts over all the block's segments)
  uint32_t phase = 0;  // TMA: (g / STAGES) % 2, the phase of stage's mbarrier that tile g completes
  float total[MI][NI][4];
  for (int32_t s = first; s < last; ++s) {
    const int64_t begin = segment_begin(s), end = min64(begin + args.segment_length, p.k);
    const int tiles = static_cast<int>((end - begin + BK - 1) / BK);
    float acc[MI][NI][4] = {};  // +0
    // One k16 step: MI x NI mma.sync into acc, from the tile in `slot`.
    const auto k16_step = [&](uint32_t slot, int kk) {
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
    };
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
        for (int kk = 0; kk < BK / 16; ++kk) k16_step(slot, kk);
      } else {
#pragma unroll
        for (int kk = 0; kk < BK / 16 && tile_k + kk * 16 < end; ++kk) k16_step(slot, kk);
      }
      if (++stage == STAGES) stage = 0, phase ^= 1u;
    }
    // ((p0 + p1) + p2) + p3: the first segment is copied, not added to +0.
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          total[mi][ni][e] = s == first ? acc[mi][ni][e] : total[mi][ni][e] + acc[mi][ni][e];
  }

  // c0, c1: row lane / 4, columns 2 (lane % 4) + 0, 1; c2, c3: the row 8 below.
  const auto row_of = [&](int mi, int e) {
    return m0 + warp_row + mi * 16 + (lane >> 2) + (e >> 1) * 8;
  };
  const auto column_of = [&](int ni, int e) {
    return n0 + warp_col + ni * 8 + (lane & 3) * 2 + (e & 1);
  };
  // The end of every order: bias once in fp32, one rounding.
  const auto write_output = [&](int64_t m, int64_t n, float v) {
    if (p.bias != nullptr) v = v + bf16_to_float(p.bias[n]);
    p.out[m * p.n + n] = float_to_bf16(v);
  };
  // f(m, n, this thread's sum for (m, n), a scratch float) for each of its
  // outputs inside the problem (in row `only` of 8, mi * 2 + e / 2, if given).
  float part[MI][NI][4];
  const auto for_each_output = [&](auto&& f, int only = -1) {
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t m = row_of(mi, e), n = column_of(ni, e);
          if ((only < 0 || mi * 2 + e / 2 == only) && m < p.m && n < p.n)
            f(m, n, total[mi][ni][e], part[mi][ni][e]);
        }
  };
  if constexpr (GROUPS > 1) {
    // ((p0 + p1) + p2) + p3 as every other launch folds: groups 1.. leave their
    // sums in their own (idle) slots, each value where the same thread of group 0
    // reads it; no group writes memory another group has read.
    const auto sums_of = [&](int32_t g) {
      return reinterpret_cast<float*>(shared +
                                      (aligned_base - shared_base + g * Shape::kGroupBytes) / 2);
    };
    const auto at = [&](int mi, int ni, int e) {
      return ((mi * NI + ni) * 4 + e) * Shape::kThreads + thread;
    };
    __syncthreads();  // every group is past its last tile
    if (group > 0 && group < args.num_segments)
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e) sums_of(group)[at(mi, ni, e)] = total[mi][ni][e];
    __syncthreads();
    if (group != 0) return;
    for (int32_t s = 1; s < args.num_segments; ++s)
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            total[mi][ni][e] = total[mi][ni][e] + sums_of(s)[at(mi, ni, e)];
  }
  if (!args.split) {
    for_each_output([&](int64_t m, int64_t n, float v, float&) { write_output(m, n, v); });
    return;
  }

  const auto plane = [&](int32_t s, int64_t m, int64_t n) {
    return args.partials + (int64_t{s} * p.m + m) * p.n + n;
  };
  for_each_output([&](int64_t m, int64_t n, float v, float&) { *plane(first, m, n) = v; });
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
  if (!__syncthreads_or(folds_tile)) return;  // hands thread 0's acquire to the block
    // ((p0 + p1) + p2) + p3 as the unsplit fold, every plane from L2 (__ldcg: this
    // SM's L1 is not coherent with the other blocks' stores; p_first is this
    // thread's own). A plane's loads for one of the thread's rows are all issued
    // before any is added: 2 MI L2 round trips per segment, not one per output.
#pragma unroll
  for (int row = 0; row < 2 * MI; ++row)
#pragma unroll 1
    for (int32_t s = 0; s < args.num_segments; ++s) {
      for_each_output([&](int64_t m, int64_t n, float&, float& v) { v = __ldcg(plane(s, m, n)); },
                      row);
      for_each_output([&](int64_t, int64_t, float& sum, float v) { sum = s == 0 ? v : sum + v; },
                      row);
    }
  for_each_output([&](int64_t m, int64_t n, float v, float&) { write_output(m, n, v); });
}

// The driver's tensor-map encoder, found once through the runtime (no link to
// libcuda); null when the driver has none.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto encoder = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      function = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  return encoder;
}

// A [rows][k] bf16 operand as 64-column x box_rows boxes in the 128-byte swizzle
// of `swizzle` above; zeros past its rows and columns.
bool encode_operand(CUtensorMap& map, const uint16_t* base, int64_t rows, int64_t k, int box_rows) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t row_bytes[1] = {static_cast<cuuint64_t>(k) * 2};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kMmaKTile), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t steps[2] = {1, 1};
  return tensor_map_encoder()(
             &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<uint16_t*>(base), dims,
             row_bytes, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The tile's rows and columns come from mma_tile_dims, the table the workspace
// size is computed from, so the two cannot disagree.
template <mma_tile Tile, int WARPS_M, int WARPS_N, int STAGES, int BK = 64>
cudaError_t launch_shape(mma_args args, bool vector, cudaStream_t stream) {
  constexpr int BM = mma_tile_dims(Tile).rows, BN = mma_tile_dims(Tile).cols;
  constexpr bool kTma = mma_tile_uses_tma(Tile);
  constexpr int G = mma_tile_groups(Tile);
  using Shape = tile_shape<BM, BN, WARPS_M, WARPS_N, STAGES, BK, kTma, G>;
  using kernel_type = void (*)(mma_args);
  constexpr load_path kEngine =
      kTma ? load_path::tma : load_path::cp_async;  // no TMA kernel for the other tiles
  const kernel_type kernels[3] = {
      mma_tile_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, BK, kTma, G, load_path::scalar>,
      mma_tile_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, BK, kTma, G, load_path::cp_async>,
      mma_tile_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, BK, kTma, G, kEngine>};
  // Above 48 KiB of dynamic shared memory needs an opt-in, once per kernel.
  const auto opt_in = [](kernel_type kernel) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                int{Shape::kSharedBytes});
  };
  static const cudaError_t opt_ins[3] = {opt_in(kernels[0]), opt_in(kernels[1]),
                                         opt_in(kernels[2])};
  const device_problem& p = args.p;
  constexpr int64_t kCoordinateLimit = int64_t{1} << 31;  // TMA box coordinates are int32
  const bool tma = kTma && vector && p.m < kCoordinateLimit && p.n < kCoordinateLimit &&
                   p.k < kCoordinateLimit && tensor_map_encoder() != nullptr &&
                   encode_operand(args.map_a, p.a, p.m, p.k, BM) &&
                   encode_operand(args.map_w, p.weight, p.n, p.k, BN);
  const int path = tma ? 2 : vector ? 1 : 0;
  if (opt_ins[path] != cudaSuccess) return opt_ins[path];
  const int64_t blocks =
      ceil_div(p.m, BM) * ceil_div(p.n, BN) * (args.split ? args.num_segments : 1);
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;  // gridDim.x's limit, 2^31 - 1
  kernels
      [path]<<<static_cast<unsigned>(blocks), Shape::kBlockThreads, Shape::kSharedBytes, stream>>>(
          args);
  return cudaGetLastError();
}

}  // namespace

int launch_mma_matmul(const reduction_plan& plan, mma_tile tile, const device_problem& problem,
                      uint32_t* tile_counters, float* partials, void* stream_handle) {
  const auto stream = static_cast<cudaStream_t>(stream_handle);
  const mma_args args{
      {},      {}, problem, plan.segment_length, plan.num_segments, mma_splits(plan), tile_counters,
      partials};
  const auto address_bits =
      reinterpret_cast<uintptr_t>(problem.a) | reinterpret_cast<uintptr_t>(problem.weight);
  // K < 2^32: the vector loads add a 32-bit k offset to each row pointer.
  const bool vector =
      problem.k % 8 == 0 && problem.k < (int64_t{1} << 32) && address_bits % 16 == 0;
  // Warp grid and stages per tile: warps of 16-64 x 16-32 outputs; stages as
  // deep as the occupancy each tile is meant for allows (mma_kernels.h).
  switch (tile) {
    case mma_tile::m16n32:
      return launch_shape<mma_tile::m16n32, 1, 2, 6>(args, vector, stream);
    case mma_tile::m16n64:
      return launch_shape<mma_tile::m16n64, 1, 4, 6>(args, vector, stream);
    case mma_tile::m16n128:
      return launch_shape<mma_tile::m16n128, 1, 4, 5>(args, vector, stream);
    case mma_tile::m32n64:
      return launch_shape<mma_tile::m32n64, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n32:
      return launch_shape<mma_tile::m64n32, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n64:
      return launch_shape<mma_tile::m64n64, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n64s6:
      return launch_shape<mma_tile::m64n64s6, 2, 2, 6>(args, vector, stream);
    case mma_tile::m64n64w8:
      return launch_shape<mma_tile::m64n64w8, 4, 2, 6>(args, vector, stream);
    case mma_tile::m64n128:
      return launch_shape<mma_tile::m64n128, 2, 4, 4>(args, vector, stream);
    case mma_tile::m64n128s8:
      return launch_shape<mma_tile::m64n128s8, 2, 4, 8>(args, vector, stream);
    case mma_tile::m128n128:
      return launch_shape<mma_tile::m128n128, 2, 4, 4>(args, vector, stream);
    // 128-wide k-tiles: 256 contiguous bytes per W row per stage, half the barriers.
    case mma_tile::m16n64k128:
      return launch_shape<mma_tile::m16n64k128, 1, 4, 4, 128>(args, vector, stream);
    case mma_tile::m32n64k128:
      return launch_shape<mma_tile::m32n64k128, 2, 2, 4, 128>(args, vector, stream);
    case mma_tile::m64n64k128:
      return launch_shape<mma_tile::m64n64k128, 2, 2, 3, 128>(args, vector, stream);
    // In-block split: 4 warp groups of 2 x 2 (1 x 2, 1 x 4) warps, one per segment,
    // each with 48 KB of stages: 192 KB, one 512-thread block per SM.
    case mma_tile::m16n32g4:
      return launch_shape<mma_tile::m16n32g4, 1, 2, 8>(args, vector, stream);
    case mma_tile::m16n64g4:
      return launch_shape<mma_tile::m16n64g4, 1, 4, 4>(args, vector, stream);
    case mma_tile::m32n32g4:
      return launch_shape<mma_tile::m32n32g4, 2, 2, 6>(args, vector, stream);
    case mma_tile::m32n64g4:
      return launch_shape<mma_tile::m32n64g4, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n32g4:
      return launch_shape<mma_tile::m64n32g4, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n64g4:
      return launch_shape<mma_tile::m64n64g4, 2, 2, 3>(args, vector, stream);
    case mma_tile::m32n96g4:
      return launch_shape<mma_tile::m32n96g4, 2, 2, 3>(args, vector, stream);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace samplecheck::matmul
