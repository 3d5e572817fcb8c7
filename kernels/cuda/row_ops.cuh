// Block-per-row building blocks: tile loads, row statistics, FlashInfer's
// inverse-CDF search over vocabulary tiles with early exit and its two guards, a
// deterministic scan, and an exact k-th-largest search (radix select).
//
// One block of kThreads threads owns a row; a tile is kThreads * kItems
// consecutive elements, kItems per thread, so f32 rows load as float4 and 16-bit
// rows as 8-byte words.
#pragma once

#include <cfloat>
#include <climits>
#include <cstdint>

#include "kernels/cuda/device_batch.cuh"
#include "kernels/cuda/float_order.h"
#include "kernels/cuda/radix_select.h"

namespace samplecheck::cuda {

inline constexpr int kThreads = 1024;
inline constexpr int kItems = 4;
inline constexpr int kTile = kThreads * kItems;

using float_block = gpu::block_primitives<float, kThreads>;
using int_block = gpu::block_primitives<int, kThreads>;

// binary16 bits to float: on NVIDIA the hardware conversion, exact like the rebias of
// f16_to_float but without its branches, which made f16 rows the slowest to read.
__device__ __forceinline__ float f16_bits_to_float(uint16_t h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  return f16_to_float(h);
#endif
}

// Elements first .. first + kItems - 1 of a row; `fill` past the end.
__device__ __forceinline__ void load_items(const unsigned char* row, storage_type dtype, int64_t v,
                                           int64_t first, float (&out)[kItems], float fill) {
  const bool whole = first + kItems <= v;
  if (whole && dtype == storage_type::f32 && (reinterpret_cast<uintptr_t>(row) & 15u) == 0) {
    const float4 x = reinterpret_cast<const float4*>(row)[first / 4];
    out[0] = x.x, out[1] = x.y, out[2] = x.z, out[3] = x.w;
    return;
  }
  if (whole && dtype != storage_type::f32 && (reinterpret_cast<uintptr_t>(row) & 7u) == 0) {
    const uint2 x = reinterpret_cast<const uint2*>(row)[first / 4];
    const uint16_t h[4] = {static_cast<uint16_t>(x.x), static_cast<uint16_t>(x.x >> 16),
                           static_cast<uint16_t>(x.y), static_cast<uint16_t>(x.y >> 16)};
    for (int j = 0; j < kItems; ++j)
      out[j] = dtype == storage_type::bf16 ? bf16_to_float(h[j]) : f16_bits_to_float(h[j]);
    return;
  }
  for (int j = 0; j < kItems; ++j)
    out[j] = first + j < v ? load_element(row, dtype, first + j) : fill;
}

__device__ __forceinline__ int64_t tile_first(int64_t tile) {
  return tile * kTile + static_cast<int64_t>(threadIdx.x) * kItems;
}

// f(first, x) for every tile of a row, x holding this thread's elements first ..
// first + kItems - 1 (`fill` past the end). Unrolled 4 ways so each thread keeps
// several 16-byte loads in flight: one block streams a whole row through one SM.
template <typename Visit>
__device__ __forceinline__ void for_each_tile(const unsigned char* row, storage_type dtype,
                                              int64_t v, float fill, Visit&& visit) {
  const int64_t tiles = (v + kTile - 1) / kTile;
#pragma unroll 4
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t first = tile_first(t);
    float x[kItems];
    load_items(row, dtype, v, first, x, fill);
    visit(first, x);
  }
}

// The mass and count of a row's (or chunk's) entries above two pivots: one
// dual-pivot round's measure. Folded field by field: sums over a block, a warp.
struct pivot_mass {
  float mass0, mass1;  // mass above pivot 0 / 1
  int count0, count1;  // count above pivot 0 / 1
};
struct sum_pivot_masses {
  __device__ __forceinline__ pivot_mass operator()(const pivot_mass& a, const pivot_mass& b) const {
    return {a.mass0 + b.mass0, a.mass1 + b.mass1, a.count0 + b.count0, a.count1 + b.count1};
  }
};
struct warp_sum_pivot_masses {  // for gpu::block_fold
  __device__ __forceinline__ pivot_mass operator()(const pivot_mass& m) const {
    return {gpu_warp_sum(m.mass0), gpu_warp_sum(m.mass1), gpu_warp_add(m.count0),
            gpu_warp_add(m.count1)};
  }
};

struct row_shared {
  float_block::shared_type f;
  int_block::shared_type i;
  pivot_mass staged[kThreads / sc_warp_size];  // gpu::block_fold's
  float scan[2][kThreads];                     // the deterministic scan's ping-pong buffers
  int picked;
  int last_valid;
};

// ---------------------------------------------------------------------------
// Statistics of a probability row: its float sum and maximum, and whether it can
// be sampled at all (finite, non-negative, positive finite sum: the ABI's rule).
// ---------------------------------------------------------------------------
struct prob_stats {
  float total;
  float max;
  bool usable;
  bool bad;  // a NaN, infinite or negative entry
};

__device__ inline prob_stats probs_stats(const unsigned char* row, storage_type dtype, int64_t v,
                                         row_shared& sh) {
  float sum = 0.0f, max = 0.0f;
  int bad = 0;
  for_each_tile(row, dtype, v, 0.0f, [&](int64_t, const float(&x)[kItems]) {
    for (int j = 0; j < kItems; ++j) {
      bad |= !(x[j] >= 0.0f) || isinf(x[j]);  // NaN fails >=
      sum += x[j];
      max = fmaxf(max, x[j]);
    }
  });
  prob_stats s;
  s.total = float_block::sum(sum, sh.f);
  s.max = float_block::max(max, sh.f);
  const int any_bad = int_block::max(bad, sh.i);
  s.bad = any_bad != 0;
  s.usable = !s.bad && s.total > 0.0f && !isinf(s.total);
  return s;
}

// ---------------------------------------------------------------------------
// Deterministic inclusive scan: a Hillis-Steele scan over the thread partials in
// shared memory, in one fixed association that depends on neither CUB's version nor
// the warp width (32 on NVIDIA, 64 on gfx90a), so CUDA and HIP builds pick the same
// token bit for bit. Slower than CUB's warp scans (two barriers a step).
// ---------------------------------------------------------------------------
__device__ inline float deterministic_inclusive_sum(float value, float& total, row_shared& sh) {
  int in = 0;
  sh.scan[0][threadIdx.x] = value;
  __syncthreads();
  for (int stride = 1; stride < kThreads; stride *= 2) {
    const float left =
        threadIdx.x >= static_cast<unsigned>(stride) ? sh.scan[in][threadIdx.x - stride] : 0.0f;
    sh.scan[in ^ 1][threadIdx.x] = sh.scan[in][threadIdx.x] + left;
    in ^= 1;
    __syncthreads();
  }
  const float prefix = sh.scan[in][threadIdx.x];
  total = sh.scan[in][kThreads - 1];
  __syncthreads();
  return prefix;
}

// The tile where the running mass passes u: the first token of the set whose running
// sum passes u (guard 1), else the tile's last token with mass (guard 2); unguarded,
// the count of its tokens whose running sum is <= u. m: the tile's items, 0 outside
// the set; prefix: this thread's inclusive scan of `partial` (deterministic only).
__device__ __forceinline__ int32_t pick_in_crossing_tile(const float (&m)[kItems], int64_t first,
                                                         int64_t t, int64_t v, float partial,
                                                         float prefix, float running, float u,
                                                         bool deterministic, bool unguarded,
                                                         bool absorbed, row_shared& sh) {
  if (!deterministic) {
    float ignored;
    prefix = float_block::inclusive_sum(partial, ignored, sh.f);
  }
  if (threadIdx.x == 0) sh.picked = INT_MAX, sh.last_valid = -1;
  __syncthreads();
  // Each thread sums its own items from 0 against what is left of u past the
  // running mass and its exclusive prefix, so a token far below an ulp of the
  // running mass (a tail of 1e-9 tokens behind a head of 0.9995) still moves the
  // sum. Adding each item onto the running mass itself (X09) rounded such tokens
  // away: they were never drawn, and their mass went to the next thread's first.
  const float before = prefix - partial;
  const float left = absorbed ? u : (u - running) - before;
  float c = absorbed ? running + before : 0.0f;
  int below = 0, mine = INT_MAX, my_last = -1;
  for (int j = 0; j < kItems; ++j) {
    c += m[j];
    below += (c <= left && first + j < v);
    if (m[j] > 0.0f) {
      my_last = static_cast<int>(first + j);
      if (c > left && mine == INT_MAX) mine = static_cast<int>(first + j);
    }
  }
  if (unguarded) {
    const int count = int_block::sum(below, sh.i);
    return static_cast<int32_t>(t * kTile + count);
  }
  if (mine != INT_MAX) atomicMin(&sh.picked, mine);
  if (my_last >= 0) atomicMax(&sh.last_valid, my_last);
  __syncthreads();
  const int picked = sh.picked, tile_last = sh.last_valid;
  __syncthreads();
  // The reduce said the tile crosses u but the scan never did: the tile's last
  // positive element (it has mass, so it is in the support).
  return picked != INT_MAX ? picked : tile_last;
}

// ---------------------------------------------------------------------------
// Inverse CDF over {i < v : p_i > low} at u, tile by tile, stopping at the tile
// where the running mass passes u (FlashInfer's SamplingFromProb structure).
//
// Two guards make a float prefix sum that is not monotone harmless (bug catalog
// S01): (1) the crossing is the FIRST element, by index, that is in the set and
// whose running sum exceeds u, so a scan that dips back below u cannot select a
// zero-mass token; (2) when the whole row's float mass falls short of u (the mass
// u was drawn against came from another reduction order), the last element of the
// set is taken instead of the impossible index v. The S01 mutant drops both and
// counts the elements whose running sum is <= u, FlashInfer's pre-#226 rule.
// Returns -1 only when the set is empty.
// ---------------------------------------------------------------------------
__device__ inline int32_t inverse_cdf(const unsigned char* row, storage_type dtype, int64_t v,
                                      float low, float u, bool deterministic, bool unguarded,
                                      row_shared& sh, bool absorbed = false) {
  float running = 0.0f;
  int last_valid = -1;
  const int64_t tiles = (v + kTile - 1) / kTile;
  // The next tile is loaded before this one's block-wide reduction, so its memory
  // latency hides behind the barriers.
  float next[kItems];
  load_items(row, dtype, v, tile_first(0), next, 0.0f);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t first = tile_first(t);
    float x[kItems], m[kItems];
    for (int j = 0; j < kItems; ++j) x[j] = next[j];
    if (t + 1 < tiles) load_items(row, dtype, v, tile_first(t + 1), next, 0.0f);
    float partial = 0.0f;
    for (int j = 0; j < kItems; ++j) {
      m[j] = x[j] > low ? x[j] : 0.0f;
      partial += m[j];
      if (m[j] > 0.0f) last_valid = static_cast<int>(first + j);
    }
    float tile_sum, prefix;
    if (deterministic) {
      prefix = deterministic_inclusive_sum(partial, tile_sum, sh);
    } else {
      // FlashInfer reduces first and scans only the crossing tile: the reduce and
      // the scan associate differently, one source of the non-monotone crossing.
      tile_sum = float_block::sum(partial, sh.f);
      prefix = 0.0f;
    }
    if (running + tile_sum > u)
      return pick_in_crossing_tile(m, first, t, v, partial, prefix, running, u, deterministic,
                                   unguarded, absorbed, sh);
    running += tile_sum;
  }
  if (unguarded) return static_cast<int32_t>(v);
  return int_block::max(last_valid, sh.i);
}

// The same search over the tokens a block holds in registers, Held a thread, in
// scan order (thread, j): the position thread * Held + j of the first token above
// `low` (and in_range(j)) whose running mass passes u, else of the last such token
// (the second guard); -1 when the block holds none.
struct held_search_shared {
  int picked, last_positive;
};

template <int Threads, int Held, typename InRange>
__device__ inline int held_crossing(
    const float (&x)[Held], float low, float u, InRange in_range,
    typename gpu::block_primitives<float, Threads>::shared_type& scan, held_search_shared& sh) {
  float mine = 0.0f;
#pragma unroll
  for (int j = 0; j < Held; ++j) mine += x[j] > low ? x[j] : 0.0f;
  float total;
  const float through = gpu::block_primitives<float, Threads>::inclusive_sum(mine, total, scan);
  if (threadIdx.x == 0) sh.picked = INT_MAX, sh.last_positive = -1;
  __syncthreads();
  float running = through - mine;
  int first = INT_MAX, last = -1;
#pragma unroll
  for (int j = 0; j < Held; ++j) {
    if (!(x[j] > low) || !in_range(j)) continue;
    running += x[j];
    last = static_cast<int>(threadIdx.x) * Held + j;
    if (running > u && first == INT_MAX) first = last;
  }
  if (first != INT_MAX) atomicMin(&sh.picked, first);
  if (last >= 0) atomicMax(&sh.last_positive, last);
  __syncthreads();
  const int position = sh.picked != INT_MAX ? sh.picked : sh.last_positive;
  __syncthreads();
  return position;
}

// S01 draws u against (1 + 2^-10) times the mass, as cpu.dual_pivot:S01 does. The
// real mismatch (a mass from one reduction order, a scan in another, or a row that
// does not sum to the assumed 1: FlashInfer #923) is a few ulps, about 2^-20 of the
// mass at V = 150k; amplified, the unguarded search runs past the row's end and
// returns the impossible id V on about one draw in 1025.
__device__ __forceinline__ float s01_amplified(float u, defect planted) {
  return planted == defect::S01 ? u * 1.0009765625f : u;
}

// ---------------------------------------------------------------------------
// The k-th largest element of a row (k >= 1), exactly, by radix select over the
// order-preserving 32-bit image of the floats (float_order.h): four 8-bit digits, one histogram
// pass each. `fill` pads the last tile and must not be counted (it is -inf or 0
// and never above a real k-th value when k <= v).
// ---------------------------------------------------------------------------

struct select_shared {
  unsigned int histogram[256];
  radix_prefix found;
};

__device__ inline float kth_largest(const unsigned char* row, storage_type dtype, int64_t v,
                                    int32_t k, select_shared& sh) {
  radix_prefix at{0, k};  // the prefix so far, the rank still to find under it
  uint32_t mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += kThreads) sh.histogram[b] = 0;
    __syncthreads();
    for_each_tile(row, dtype, v, 0.0f, [&](int64_t first, const float(&x)[kItems]) {
      for (int j = 0; j < kItems; ++j) {
        if (first + j >= v) continue;
        const uint32_t o = ordered_bits(x[j]);
        if ((o & mask) == at.prefix) atomicAdd(&sh.histogram[(o >> shift) & 0xffu], 1u);
      }
    });
    __syncthreads();
    if (threadIdx.x == 0) sh.found = radix_select_step(sh.histogram, shift, at);
    __syncthreads();
    at = sh.found;
    mask |= 0xffu << shift;
    __syncthreads();
  }
  return from_ordered_bits(at.prefix);
}

}  // namespace samplecheck::cuda
