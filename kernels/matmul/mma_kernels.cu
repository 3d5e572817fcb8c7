// The tensor-core batch-invariant matmul: mma.sync m16n8k16 bf16 -> fp32, fed by
// ldmatrix from a cp.async multi-stage shared-memory pipeline. The reduction
// order, and why it does not depend on M or on the launch, is in mma_kernels.h.
//
// A block owns a BM x BN output tile and one segment (split) or all of them
// (unsplit); in a split launch the last of a tile's blocks to finish folds the
// tile, so every launch is one kernel. Its warps form a WARPS_M x WARPS_N grid; a warp owns (BM / WARPS_M)
// x (BN / WARPS_N) outputs as MI x NI mma tiles of 16 x 8. Per segment the block
// streams BK-wide k-tiles (64 or 128) of A [BM, BK] and W [BN, BK] through STAGES
// shared slots; the pipeline starts afresh at each segment (seed 003's design
// note: no pipelining across segments).
//
// Synchronization, all of it: (1) a slot is refilled (cp.async or scalar
// stores) only after the __syncthreads that follows every warp's last ldmatrix
// of it: iteration t refills the slot tile t - 1 used, after the barrier of
// iteration t; (2) cp.async.wait_group STAGES - 2 then __syncthreads before a
// tile is read: groups are committed one per prologue step and one per
// iteration (empty ones too), so group t holds tile t whatever the segment's
// tile count; (3) wait_group 0 and a barrier end each segment, before the next
// prologue reuses the slots; (4) split: every thread stores its partials and
// fences, a barrier, then thread 0 fences and counts the block (release); the
// block that completes the count fences (acquire) and reads the other blocks'
// planes from L2. The folding block's own plane comes from registers.
#include "kernels/matmul/mma_kernels.h"

#include <cuda_runtime.h>

#include <climits>

#include "reference/numeric.h"

namespace samplecheck::matmul {
namespace {

static_assert(kMmaKTile == 64, "the 128-wide k-tiles rely on segments being multiples of 64");

struct mma_args {
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
__device__ __forceinline__ int swizzle(int row, int chunk) { return row * BK + ((chunk ^ (row & 7)) << 3); }

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1 (W is read once); src_bytes = 0 fills zeros.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
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
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// BK: the k-tile width, 64 or 128 elements. It changes what one pipeline stage
// holds (128: 256 contiguous bytes per W row instead of 128), not the order:
// the k16 steps, their k0 and the segment ends are the same (mma_kernels.h).
template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, int BK>
struct tile_shape {
  static constexpr int kBK = BK;
  static constexpr int kRowChunks = BK / 8;  // 16-byte chunks in one k-tile row
  static constexpr int kThreads = WARPS_M * WARPS_N * 32;
  static constexpr int kWarpM = BM / WARPS_M, kWarpN = BN / WARPS_N;
  static constexpr int MI = kWarpM / 16, NI = kWarpN / 8;
  static constexpr int kStageElements = (BM + BN) * kBK;
  static constexpr size_t kSharedBytes = size_t{STAGES} * kStageElements * sizeof(uint16_t);
  static constexpr int kLoadsPerThread = (BM + BN) * kRowChunks / kThreads;
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0, "B fragments are loaded 16 columns (two n8 tiles) at a time");
  static_assert((BM * kRowChunks) % kThreads == 0 && (BN * kRowChunks) % kThreads == 0,
                "each load round is all A or all W, so the branch folds at compile time");
  static_assert(STAGES >= 2);
  static_assert(BK == 64 || BK == 128, "segments are multiples of 64: a tile may overhang the segment end by 64 at most");
};

// Where load j of this thread goes: row `row` of the stage (A rows first, then
// W rows), 16-byte chunk `chunk`; `source` is the global row (valid rows only).
struct chunk_slot {
  const uint16_t* source;
  uint16_t* destination;
  bool row_valid;
  int chunk;
};

template <class Shape, int BM>
__device__ __forceinline__ chunk_slot slot_of(const device_problem& p, uint16_t* stage, int64_t m0, int64_t n0,
                                              int j) {
  const int index = static_cast<int>(threadIdx.x) + j * Shape::kThreads;
  const int row = index / Shape::kRowChunks, chunk = index % Shape::kRowChunks;
  const bool is_a = row < BM;
  const int tile_row = is_a ? row : row - BM;
  const int64_t global_row = (is_a ? m0 : n0) + tile_row;
  const bool row_valid = global_row < (is_a ? p.m : p.n);
  const uint16_t* source = (is_a ? p.a : p.weight) + (row_valid ? global_row : 0) * p.k;
  return {source, stage + (is_a ? 0 : BM * Shape::kBK) + swizzle<Shape::kBK>(tile_row, chunk), row_valid, chunk};
}

// Copies k-tile [k0, k0 + BK) of A rows m0.. and W rows n0.. into one stage;
// elements at or past `k_end` (the segment end), rows past M or N, are zeros.
// Vector: cp.async of 16 bytes (aligned operands, K % 8 == 0); otherwise scalar
// loads and a shared-memory store of the same tile contents.
template <class Shape, int BM, bool Vector>
__device__ __forceinline__ void load_k_tile(const device_problem& p, uint16_t* stage, int64_t m0, int64_t n0,
                                            int64_t k0, int64_t k_end) {
  if constexpr (Vector) {
#pragma unroll
    for (int j = 0; j < Shape::kLoadsPerThread; ++j) {
      const chunk_slot c = slot_of<Shape, BM>(p, stage, m0, n0, j);
      const int64_t k = k0 + c.chunk * 8;
      // K % 8 == 0 and k_end is K or a multiple of 64: a chunk is all in or all out
      // (a 128-wide tile past the segment end gets zeros, and no mma reads them).
      const bool valid = c.row_valid && k < k_end;
      cp_async_16(shared_address(c.destination), valid ? c.source + k : p.a, valid ? 16 : 0);
    }
  } else {
    // One chunk at a time: unrolled, the scalar loads of every chunk would be
    // in flight together and spill.
#pragma unroll 1
    for (int j = 0; j < Shape::kLoadsPerThread; ++j) {
      const chunk_slot c = slot_of<Shape, BM>(p, stage, m0, n0, j);
      const int64_t k = k0 + c.chunk * 8;
      uint32_t words[4];
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t lo = c.row_valid && k + 2 * w < k_end ? c.source[k + 2 * w] : 0u;
        const uint32_t hi = c.row_valid && k + 2 * w + 1 < k_end ? c.source[k + 2 * w + 1] : 0u;
        words[w] = lo | (hi << 16);
      }
      *reinterpret_cast<uint4*>(c.destination) = make_uint4(words[0], words[1], words[2], words[3]);
    }
  }
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, int BK, bool Vector>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32) mma_tile_kernel(mma_args args) {
  using Shape = tile_shape<BM, BN, WARPS_M, WARPS_N, STAGES, BK>;
  constexpr int kBK = BK;
  constexpr int MI = Shape::MI, NI = Shape::NI;
  extern __shared__ __align__(128) uint16_t shared[];  // STAGES x (A [BM][BK], W [BN][BK])

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
  const int32_t first = args.split ? static_cast<int32_t>(block / m_tiles % segments_in_grid) : 0;
  const int32_t last = args.split ? first + 1 : args.num_segments;
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int warp_row = (warp / WARPS_N) * Shape::kWarpM, warp_col = (warp % WARPS_N) * Shape::kWarpN;

  float total[MI][NI][4];
  for (int32_t s = first; s < last; ++s) {
    const int64_t begin = min64(static_cast<int64_t>(s) * args.segment_length, p.k);
    const int64_t end = min64(begin + args.segment_length, p.k);
    const int tiles = static_cast<int>((end - begin + kBK - 1) / kBK);
    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

    // Not unrolled: each unrolled copy would keep its own load addresses live.
#pragma unroll 1
    for (int t = 0; t < STAGES - 1; ++t) {
      if (t < tiles) load_k_tile<Shape, BM, Vector>(p, shared + t * Shape::kStageElements, m0, n0,
                                               begin + static_cast<int64_t>(t) * kBK, end);
      cp_async_commit();  // empty groups keep the wait count uniform
    }
    for (int t = 0; t < tiles; ++t) {
      cp_async_wait<STAGES - 2>();  // tile t has landed (scalar stores: already there)
      __syncthreads();
      // Refill the slot tile t - 1 used: every thread is past its compute.
      if (const int next = t + STAGES - 1; next < tiles)
        load_k_tile<Shape, BM, Vector>(p, shared + (next % STAGES) * Shape::kStageElements, m0, n0,
                                       begin + static_cast<int64_t>(next) * kBK, end);
      cp_async_commit();
      const uint16_t* a_tile = shared + (t % STAGES) * Shape::kStageElements;
      const uint16_t* w_tile = a_tile + BM * kBK;
      const int64_t tile_k = begin + static_cast<int64_t>(t) * kBK;
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        // The segment's k16 steps end at its end: a step wholly past K is not
        // an mma, whatever the k-tile width (the order in mma_kernels.h).
        if (tile_k + kk * 16 >= end) break;
        uint32_t a_frag[MI][4];
        uint32_t b_frag[NI][2];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
          // Lanes 0-15: rows 0-15 at k 0-7 (a0, a1); lanes 16-31: the same rows at k 8-15 (a2, a3).
          ldmatrix_x4(shared_address(a_tile + swizzle<kBK>(warp_row + mi * 16 + (lane & 15), kk * 2 + (lane >> 4))),
                      a_frag[mi]);
#pragma unroll
        for (int nj = 0; nj < NI / 2; ++nj) {
          // Matrix q = lane / 8: n rows 0-7 (q 0, 1) or 8-15 (q 2, 3), k 0-7 (q even) or 8-15 (q odd),
          // i.e. b0, b1 of n-tile 2 nj, then b0, b1 of n-tile 2 nj + 1.
          const int q = lane >> 3;
          uint32_t r[4];
          ldmatrix_x4(shared_address(w_tile + swizzle<kBK>(warp_col + nj * 16 + (lane & 7) + ((q >> 1) << 3),
                                                      kk * 2 + (q & 1))),
                      r);
          b_frag[2 * nj][0] = r[0];
          b_frag[2 * nj][1] = r[1];
          b_frag[2 * nj + 1][0] = r[2];
          b_frag[2 * nj + 1][1] = r[3];
        }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int ni = 0; ni < NI; ++ni) mma_bf16(acc[mi][ni], a_frag[mi], b_frag[ni][0], b_frag[ni][1]);
      }
    }
    // The next segment's prologue reuses every slot.
    cp_async_wait<0>();
    __syncthreads();
    // ((p0 + p1) + p2) + p3: the first segment is copied, not added to +0.
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) total[mi][ni][e] = s == first ? acc[mi][ni][e] : total[mi][ni][e] + acc[mi][ni][e];
  }

  // c0, c1: row lane / 4, columns 2 (lane % 4) + 0, 1; c2, c3: the row 8 below.
  const auto row_of = [&](int mi, int e) { return m0 + warp_row + mi * 16 + (lane >> 2) + (e >> 1) * 8; };
  const auto column_of = [&](int ni, int e) { return n0 + warp_col + ni * 8 + (lane & 3) * 2 + (e & 1); };
  // The end of every order: bias once in fp32, one rounding.
  const auto write_output = [&](int64_t m, int64_t n, float v) {
    if (p.bias != nullptr) v = v + bf16_to_float(p.bias[n]);
    p.out[m * p.n + n] = float_to_bf16(v);
  };
  // f(m, n, this thread's sum for (m, n)) for each of its outputs inside the problem.
  const auto for_each_output = [&](auto&& f) {
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int64_t m = row_of(mi, e), n = column_of(ni, e);
          if (m < p.m && n < p.n) f(m, n, total[mi][ni][e]);
        }
  };
  if (!args.split) {
    for_each_output(write_output);
    return;
  }

  for_each_output([&](int64_t m, int64_t n, float v) {
    args.partials[(static_cast<int64_t>(first) * p.m + m) * p.n + n] = v;
  });
  // Publish this block's plane before counting it (release). Every thread
  // fences its own stores, then the barrier: thread 0 counts only once all of
  // the block's warps have stored and fenced. (Without the barrier warp 0 could
  // count while another warp's stores were still to come, and the folding block
  // read that warp's slots of the plane before they were written: the race a
  // changed warp schedule, e.g. under racecheck, can expose.)
  __threadfence();
  __syncthreads();
  const uint32_t tile = block % m_tiles + block / m_tiles / segments_in_grid * m_tiles;
  bool folds_tile = false;
  if (threadIdx.x == 0) {
    __threadfence();  // cumulative: the block's stores, ordered before it by the barrier
    folds_tile = atomicAdd(args.tile_counters + tile, 1u) == static_cast<uint32_t>(args.num_segments - 1);
    // Every block of the tile has counted, so nothing else touches it in this
    // launch; zero it for the next launch or graph replay (stream order).
    if (folds_tile) atomicExch(args.tile_counters + tile, 0u);
    __threadfence();  // acquire, before the barrier hands the result to the block
  }
  if (!__syncthreads_or(folds_tile)) return;
  __threadfence();  // acquire: the other blocks' planes, published before their counts
  // ((p0 + p1) + p2) + p3 as the unsplit fold: p_first from registers, the
  // others from L2 (__ldcg: this SM's L1 is not coherent with their stores).
  for_each_output([&](int64_t m, int64_t n, float own) {
    float v = 0.0f;
    for (int32_t s = 0; s < args.num_segments; ++s) {
      const float part = s == first ? own : __ldcg(args.partials + (static_cast<int64_t>(s) * p.m + m) * p.n + n);
      v = s == 0 ? part : v + part;
    }
    write_output(m, n, v);
  });
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, int BK, bool Vector>
cudaError_t launch_tile(const mma_args& args, cudaStream_t stream) {
  using Shape = tile_shape<BM, BN, WARPS_M, WARPS_N, STAGES, BK>;
  const auto kernel = mma_tile_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, BK, Vector>;
  // Above 48 KiB of dynamic shared memory needs an opt-in, once per kernel.
  static const cudaError_t opt_in =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Shape::kSharedBytes));
  if (opt_in != cudaSuccess) return opt_in;
  const int64_t blocks = ceil_div(args.p.m, BM) * ceil_div(args.p.n, BN) * (args.split ? args.num_segments : 1);
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;  // gridDim.x's limit, 2^31 - 1
  kernel<<<static_cast<unsigned>(blocks), Shape::kThreads, Shape::kSharedBytes, stream>>>(args);
  return cudaGetLastError();
}

// The tile's rows and columns come from mma_tile_dims, the table the workspace
// size is computed from, so the two cannot disagree.
template <mma_tile Tile, int WARPS_M, int WARPS_N, int STAGES, int BK = 64>
cudaError_t launch_shape(const mma_args& args, bool vector, cudaStream_t stream) {
  constexpr int BM = mma_tile_dims(Tile).rows, BN = mma_tile_dims(Tile).cols;
  return vector ? launch_tile<BM, BN, WARPS_M, WARPS_N, STAGES, BK, true>(args, stream)
                : launch_tile<BM, BN, WARPS_M, WARPS_N, STAGES, BK, false>(args, stream);
}

bool splits(const reduction_plan& plan) { return plan.split && plan.num_segments > 1; }

}  // namespace

size_t mma_counter_bytes(const reduction_plan& plan, mma_tile tile, int64_t m, int64_t n) {
  if (!splits(plan)) return 0;
  const mma_tile_size dims = mma_tile_dims(tile);
  // Rounded to 256 bytes so partials placed right after start aligned.
  return static_cast<size_t>(round_up(ceil_div(m, dims.rows) * ceil_div(n, dims.cols) * 4, 256));
}

size_t mma_partial_bytes(const reduction_plan& plan, int64_t m, int64_t n) {
  return splits(plan) ? static_cast<size_t>(plan.num_segments * m * n) * sizeof(float) : 0;
}

int launch_mma_matmul(const reduction_plan& plan, mma_tile tile, const device_problem& problem,
                      uint32_t* tile_counters, float* partials, void* stream_handle) {
  const auto stream = static_cast<cudaStream_t>(stream_handle);
  const mma_args args{problem, plan.segment_length, plan.num_segments, splits(plan), tile_counters, partials};
  const auto address_bits = reinterpret_cast<uintptr_t>(problem.a) | reinterpret_cast<uintptr_t>(problem.weight);
  const bool vector = problem.k % 8 == 0 && address_bits % 16 == 0;
  // Warp grid and stages per tile: warps of 16-32 x 16-32 outputs; stages as
  // deep as the occupancy each tile is meant for allows (mma_kernels.h).
  switch (tile) {
    case mma_tile::m16n32: return launch_shape<mma_tile::m16n32, 1, 2, 6>(args, vector, stream);
    case mma_tile::m16n64: return launch_shape<mma_tile::m16n64, 1, 4, 6>(args, vector, stream);
    case mma_tile::m16n128: return launch_shape<mma_tile::m16n128, 1, 4, 5>(args, vector, stream);
    case mma_tile::m32n64: return launch_shape<mma_tile::m32n64, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n32: return launch_shape<mma_tile::m64n32, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n64: return launch_shape<mma_tile::m64n64, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n64s6: return launch_shape<mma_tile::m64n64s6, 2, 2, 6>(args, vector, stream);
    case mma_tile::m64n128: return launch_shape<mma_tile::m64n128, 2, 4, 4>(args, vector, stream);
    case mma_tile::m64n128s8: return launch_shape<mma_tile::m64n128s8, 2, 4, 8>(args, vector, stream);
    case mma_tile::m128n128: return launch_shape<mma_tile::m128n128, 2, 4, 4>(args, vector, stream);
    // 128-wide k-tiles: 256 contiguous bytes per W row per stage, half the barriers.
    case mma_tile::m16n64k128: return launch_shape<mma_tile::m16n64k128, 1, 4, 4, 128>(args, vector, stream);
    case mma_tile::m32n64k128: return launch_shape<mma_tile::m32n64k128, 2, 2, 4, 128>(args, vector, stream);
    case mma_tile::m64n64k128: return launch_shape<mma_tile::m64n64k128, 2, 2, 3, 128>(args, vector, stream);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace samplecheck::matmul
