// Gumbel-max, both spellings, fused into one pass over the row:
//   probs  (SGLang v0.5.20): argmax p_i / q_i, q_i = Exp(1) = -log1p(-v_i) clamped to FLT_MIN
//   logits:                  argmax (z_i - max z) / T + g_i, g_i = -log(q_i); T = 0 is greedy
// (the shift by the row's largest logit, from a pre-pass, keeps g_i from being absorbed
// in float32 at large logits: at |z| = 2^24 the ulp is 2, and tied logits would go to
// one id. S19 is the unshifted z_i / T + g_i.)
// Token i takes output offset + i of its row's stream, as cpu.gumbel_* do, so the CPU
// and GPU subjects pick the same token from the same numbers (up to float log).
//
// A row is split into 1024- or 4096-token chunks over several blocks (one block per
// row would leave an H200 with 131 of 132 SMs idle at B = 1). Each block folds its
// (best key, lowest index among equals) into one 64-bit word whose larger value is
// the better pair, and its health, then adds them to the row's accumulator with
// atomics (max, add, or); the last block of the row to arrive reads the result,
// writes the token and zeroes the accumulator for the next call. The max is exact,
// so the token does not depend on arrival order. (Writing each block's partial and
// folding them in the last block cost 3.0 of the 7.2 us a call took at B = 1 on the
// H200: two block-wide reductions, and a last block that loads every partial.)
#include <algorithm>
#include <cfloat>
#include <climits>

#include "kernels/cuda/gumbel_bounds.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/row_ops.cuh"
#include "reference/uniform.h"

namespace samplecheck::cuda {
namespace {

// A chunk is 256 threads x Groups 16-byte stripes. Every token costs a Philox
// share, and a bound (probs; few then cost a log and a division, see key_floor)
// or a log (logits), so the chunk size trades latency against issue: at small
// batch one stripe a thread (1024-token chunks) spreads a row over the most
// threads; once the batch fills the GPU, four stripes a thread give each thread
// independent work to overlap and a row fewer blocks to combine.
constexpr int kGumbelThreads = 256;
template <int Groups>
constexpr int64_t gumbel_chunk = int64_t{kGumbelThreads} * Groups* kItems;

// The row's accumulator (one per output row, in the workspace; all zero between
// calls). `mass` is a double sum of the blocks' float sums, added in arrival order:
// only its sign and whether it passes FLT_MAX are read, and a double sum of at
// most 256 floats is exact enough for both.
struct row_best {
  unsigned long long best;  // pack_best of the row's best pair; 0: none yet
  double mass;              // probs: sum of p; logits: count of finite z
  unsigned bad;             // probs: any NaN, Inf or negative p; logits: NaN or +Inf
  unsigned arrivals;
};

// A block's share of its row: best pair, mass and health, folded warp by warp.
struct block_share {
  unsigned long long best;
  float mass;
  unsigned bad;
};
struct fold_shares {
  __device__ __forceinline__ block_share operator()(const block_share& s) const {
    return {gpu_warp_max(s.best), gpu_warp_sum(s.mass), gpu_warp_or(s.bad)};
  }
};

// v = 1 - u, with q = -log1p(-v) ~ Exp(1): as kernels/cpu/gumbel.cpp (reference/uniform.h
// says why not -log(u)).
template <bool PlantedS05>
__device__ __forceinline__ float gumbel_fraction(uint32_t bits) {
  // S05: curand_uniform's (0, 1] with nothing guarding u = 1. Its real rate is 2^-25
  // per token (bits >= 0xffffff80); amplified to 2^-10 exactly as cpu.gumbel_*:S05
  // does it (top 10 bits all set -> 0xffffffff), so the two mutants agree token for
  // token. The mechanism is the real one: -log(1) = 0 gives one token a huge key.
  if constexpr (!PlantedS05) return uniform_fine_near_zero(bits);
  if ((bits >> 22) == 0x3ffu) bits = 0xffffffffu;
  return 1.0f - curand_uniform_from_bits(bits);
}

// What a thread carries from chunk to chunk of its block: its best key (lowest
// index among equals), the row's health so far (probs: sum and smallest p; logits:
// count of finite z and any NaN or +Inf), and (probs) the largest key estimate its
// warp has seen (see key_floor).
struct gumbel_carry {
  float key = -INFINITY;
  int index = INT_MAX;
  float mass = 0.0f;
  int bad = 0;
  float lowest = 0.0f;
  float estimate = 0.0f;
};

// Token 0 of this thread's stripe g of the chunk at `begin`.
__device__ __forceinline__ int64_t stripe_token(int64_t begin, int g) {
  return begin + g * (kGumbelThreads * kItems) + threadIdx.x * kItems;
}

// The row's health (the ABI's rule): probs: sum and minimum (a NaN or +Inf spoils
// the sum, a negative entry the minimum); logits: count of finite z and any NaN or +Inf.
template <int Groups, bool Logits>
__device__ __forceinline__ void add_health(const float (&x)[Groups][kItems], gumbel_carry& c) {
#pragma unroll
  for (int g = 0; g < Groups; ++g)
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const float z = x[g][j];
      if constexpr (Logits) {
        c.bad |= !(z < INFINITY);
        c.mass += z > -INFINITY && z < INFINITY ? 1.0f : 0.0f;
      } else {
        c.mass += z;
        c.lowest = fminf(c.lowest, z);
      }
    }
}

// Greedy (logits at T = 0): the largest logit, no randomness.
template <int Groups>
__device__ __forceinline__ void take_largest(const float (&x)[Groups][kItems], int64_t begin,
                                             gumbel_carry& c) {
#pragma unroll
  for (int g = 0; g < Groups; ++g) {
    const int64_t i = stripe_token(begin, g);
#pragma unroll
    for (int j = 0; j < kItems; ++j)
      if (x[g][j] > -INFINITY && x[g][j] > c.key)
        c.key = x[g][j], c.index = static_cast<int>(i + j);
  }
}

// The fractions v of the chunk's tokens and (probs) this thread's key estimate.
template <int Groups, bool Logits, bool PlantedS05>
__device__ __forceinline__ void draw_fractions(const float (&x)[Groups][kItems],
                                               const stream_key& key, int64_t begin,
                                               float (&v)[Groups][kItems], gumbel_carry& c) {
#pragma unroll
  for (int g = 0; g < Groups; ++g) {
    // Four consecutive tokens: their stream outputs come from one Philox block
    // (two when offset + i is not a multiple of 4), drawn together.
    const int64_t i = stripe_token(begin, g);
    uint32_t words[kItems];
    philox_stream(key.seed, key.subsequence, key.offset + static_cast<uint64_t>(i))
        .next_four(words);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      v[g][j] = gumbel_fraction<PlantedS05>(words[j]);
      if constexpr (!Logits)
        c.estimate = fmaxf(c.estimate, key_floor_estimate<PlantedS05>(x[g][j], v[g][j]));
    }
  }
}

// One chunk of a row: 256 threads x Groups stripes of 4 consecutive tokens.
template <int Groups, bool Logits, bool PlantedS05>
__device__ __forceinline__ void visit_chunk(const device_batch& b, const row_filters& f,
                                            const unsigned char* row, const stream_key& key,
                                            int64_t begin, float shift, gumbel_carry& c) {
  // Past the row's end: probs 0 (no mass, a key of 0 never wins), logits -inf
  // (not finite, never wins), so the body needs no test of the row's end.
  float x[Groups][kItems];
#pragma unroll
  for (int g = 0; g < Groups; ++g)
    load_items(row, b.dtype, b.vocab_size, stripe_token(begin, g), x[g], Logits ? -INFINITY : 0.0f);
  add_health<Groups, Logits>(x, c);
  if (Logits && f.temperature == 0.0f) {
    take_largest<Groups>(x, begin, c);
    return;
  }
  float v[Groups][kItems];
  draw_fractions<Groups, Logits, PlantedS05>(x, key, begin, v, c);
  if constexpr (!Logits) c.estimate = gpu_warp_max(c.estimate);
  const key_bounds bounds(key_floor(c.estimate));
#pragma unroll
  for (int g = 0; g < Groups; ++g) {
    const int64_t i = stripe_token(begin, g);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const float z = x[g][j];
      if (!Logits && bounds.below(z, v[g][j])) continue;
      const float k = gumbel_key<Logits>(Logits ? z - shift : z, v[g][j], f.temperature);
      // As cpu.gumbel_*: a probs key must beat 0 (a zero-mass token never wins, and
      // an all-underflow row comes out invalid), a logits key must beat -inf.
      if ((Logits ? k > -INFINITY : k > 0.0f) && k > c.key)
        c.key = k, c.index = static_cast<int>(i + j);
    }
  }
}

// One instantiation per (stripes, input kind, S05 or not): the per-token code has
// no run-time branch on either, and each kernel carries only its own path. (One
// kernel for all four was 108 KB of SASS; on the H200, stalls on instruction
// fetch were a tenth to a fifth of its cycles.) Block y of a row visits chunks y,
// y + splits, ...: a block's set-up, reduction and arrival are paid once for
// several chunks, and its later chunks skip against the earlier ones' bound.
// Three blocks an SM for the wide kernels (at most 85 registers): uncapped, the
// logits one took 110 (two blocks an SM) and measured 77.4 rather than 66.2 us at
// B = 64; a cap of four (64 registers) spilled and lost on both kinds. Logits keep
// two stripes a thread, which fit the cap without spilling.
// The largest finite logit of each output row's input row (0 when none is finite, or
// for S19, whose keys are unshifted): one block a row, before gumbel_kernel.
__global__ void __launch_bounds__(kGumbelThreads) row_max_kernel(device_batch b, float* row_max) {
  __shared__ float staged[kGumbelThreads / sc_warp_size];
  const int64_t r = blockIdx.x;
  const int64_t in = input_row_of(b, r);
  float m = -INFINITY;
  if (in >= 0) {
    const unsigned char* row = row_pointer(b, in);
    for (int64_t i = static_cast<int64_t>(threadIdx.x) * kItems; i < b.vocab_size;
         i += int64_t{kGumbelThreads} * kItems) {
      float x[kItems];
      load_items(row, b.dtype, b.vocab_size, i, x, -INFINITY);
#pragma unroll
      for (int j = 0; j < kItems; ++j)
        if (x[j] < INFINITY)
          m = fmaxf(m, x[j]);  // fmaxf drops NaN; +Inf makes the row invalid anyway
    }
  }
  m = gpu_warp_max(m);
  if (threadIdx.x % sc_warp_size == 0) staged[threadIdx.x / sc_warp_size] = m;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < kGumbelThreads / sc_warp_size; ++w) m = fmaxf(m, staged[w]);
  row_max[r] = b.planted == defect::S19 || !(m > -INFINITY) ? 0.0f : m;
}

template <int Groups, bool Logits, bool PlantedS05>
__global__ void __launch_bounds__(kGumbelThreads, Groups > 1 ? 3 : 1)
    gumbel_kernel(device_batch b, int splits, int chunks, row_best* accumulators,
                  const float* row_max) {
  __shared__ block_share staged[kGumbelThreads / sc_warp_size];

  const int64_t r = blockIdx.x;
  const int split = blockIdx.y;
  check_parameters(b, r, r * splits + split, static_cast<int64_t>(gridDim.x) * splits);
  const int64_t in = input_row_of(b, r);
  gumbel_carry c;
  if (in >= 0) {
    const row_filters f = filters_of(b, r, in);
    const unsigned char* row = row_pointer(b, in);
    const stream_key key = stream_key_of(b, r, in);
    const float shift = Logits ? row_max[r] : 0.0f;
    for (int chunk = split; chunk < chunks; chunk += splits)
      visit_chunk<Groups, Logits, PlantedS05>(b, f, row, key, chunk * gumbel_chunk<Groups>, shift,
                                              c);
    if constexpr (!Logits) c.bad = !(c.lowest >= 0.0f);
  }
  const block_share share = gpu::block_fold<kGumbelThreads>(
      block_share{pack_best(c.key, c.index), c.mass, static_cast<unsigned>(c.bad)},
      block_share{0ull, 0.0f, 0u}, fold_shares(), staged);
  if (threadIdx.x != 0) return;

  row_best& row = accumulators[r];
  atomicMax(&row.best, share.best);
  atomicAdd(&row.mass, static_cast<double>(share.mass));
  if (share.bad != 0) atomicOr(&row.bad, share.bad);
  if (gpu_arrive(&row.arrivals) != static_cast<unsigned>(splits - 1)) return;
  // The last block: every other block's atomics happened before its arrival.
  const volatile row_best& seen = row;
  const unsigned long long row_best_pair = seen.best;
  const double row_mass = seen.mass;
  const unsigned row_bad = seen.bad;
  row.best = 0, row.mass = 0.0, row.bad = 0, row.arrivals = 0;
  const int index = index_of_best(row_best_pair);
  const bool usable = in >= 0 && filters_of(b, r, in).usable && row_bad == 0 && row_mass > 0.0 &&
                      row_mass <= FLT_MAX && index >= 0 && index < b.vocab_size;
  write_result(b, r, index, usable);
}

}  // namespace

gpuError_t launch_gumbel(launch_request& q) {
  const device_batch& b = q.batch;
  const int64_t rows = b.num_output_rows;
  const bool logits = b.input_kind == SC_INPUT_LOGITS;
  // Four stripes a thread (two for logits) once the 4096-token chunks alone make
  // two blocks per SM.
  const bool wide =
      rows * ((b.vocab_size + gumbel_chunk<4> - 1) / gumbel_chunk<4>) >= 2 * q.scratch->sm_count();
  const int64_t chunk = !wide ? gumbel_chunk<1> : logits ? gumbel_chunk<2> : gumbel_chunk<4>;
  const int64_t chunks = (b.vocab_size + chunk - 1) / chunk;  // V <= 2^18: at most 256
  // Chunks per block, strided (H200, V = 151,936, device time per call): paying a
  // block's set-up and arrival once for several chunks pays once the batch fills
  // the GPU (probs, 3 a block: B = 32 25.5 -> 22.5 us, B = 64 39.6 -> 34.6; logits,
  // 2 a block: B = 32 37.6 -> 33.1, B = 64 66.9 -> 57.9) and costs below that
  // (B = 8, 3 a block: probs 12.6 -> 17.2 us).
  const int64_t per_block =
      wide ? std::clamp<int64_t>(rows * chunks / (3 * q.scratch->sm_count()), 1, logits ? 2 : 3)
           : 1;
  const int64_t splits = (chunks + per_block - 1) / per_block;
  row_best* accumulators = nullptr;
  if (auto e = q.scratch->get(workspace::partials, rows, q.capturing, &accumulators);
      e != gpuSuccess)
    return e;
  float* row_max = nullptr;
  if (logits) {
    if (auto e = q.scratch->get(workspace::row_stats, rows, q.capturing, &row_max); e != gpuSuccess)
      return e;
    row_max_kernel<<<static_cast<unsigned>(rows), kGumbelThreads, 0, q.stream>>>(b, row_max);
    if (auto e = gpuGetLastError(); e != gpuSuccess) return e;
  }
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(splits));
  using kernel_type = void (*)(device_batch, int, int, row_best*, const float*);
  // [wide][logits][S05]
  constexpr kernel_type kernels[2][2][2] = {
      {{gumbel_kernel<1, false, false>, gumbel_kernel<1, false, true>},
       {gumbel_kernel<1, true, false>, gumbel_kernel<1, true, true>}},
      {{gumbel_kernel<4, false, false>, gumbel_kernel<4, false, true>},
       {gumbel_kernel<2, true, false>, gumbel_kernel<2, true, true>}}};
  const kernel_type kernel = kernels[wide][logits][b.planted == defect::S05];
  kernel<<<grid, kGumbelThreads, 0, q.stream>>>(b, static_cast<int>(splits),
                                                static_cast<int>(chunks), accumulators, row_max);
  return gpuGetLastError();
}

}  // namespace samplecheck::cuda
