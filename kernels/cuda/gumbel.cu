// Gumbel-max, both spellings, fused into one pass over the row:
//   probs  (SGLang v0.5.20): argmax p_i / q_i, q_i = Exp(1) = -log1p(-v_i) clamped to FLT_MIN
//   logits:                  argmax z_i / T + g_i, g_i = -log(q_i); T = 0 is greedy
// Token i takes output offset + i of its row's stream, as cpu.gumbel_* do, so the CPU
// and GPU subjects pick the same token from the same numbers (up to float log).
//
// A row is split into 4096-token chunks, one block each (one block per row would
// leave an H200 with 131 of 132 SMs idle at B = 1): each block writes its partial
// (best key, lowest index among equals, mass, flags) to scratch, and the last block
// of the row to arrive combines them. The combination is exact (max with an index
// tie-break), so the result does not depend on arrival order.
#include <algorithm>
#include <cfloat>
#include <climits>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/row_ops.cuh"
#include "reference/uniform.h"

namespace samplecheck::cuda {
namespace {

// A block owns a chunk of 256 threads x Groups 16-byte stripes. Every token costs
// a Philox share, a log and a division, so the chunk size trades latency against
// issue: at small batch one stripe a thread (1024-token chunks) spreads a row over
// the most threads; once the batch fills the GPU, four stripes a thread give each
// thread independent work to overlap and the last blocks fewer partials.
constexpr int kGumbelThreads = 256;
template <int Groups>
constexpr int64_t gumbel_chunk = int64_t{kGumbelThreads} * Groups * kItems;

// A share of one row: the best key (lowest index among equals), and the row's
// health: probs: sum of p and any NaN, Inf or negative; logits: count of finite z
// and any NaN or +Inf. One struct, so one block reduction combines all four.
struct gumbel_partial {
  float key;
  int index;
  float mass;
  int bad;
};
struct partial_op {
  __device__ __forceinline__ gumbel_partial operator()(const gumbel_partial& a, const gumbel_partial& b) const {
    const bool take_a = a.key > b.key || (a.key == b.key && a.index <= b.index);
    return gumbel_partial{take_a ? a.key : b.key, take_a ? a.index : b.index, a.mass + b.mass, a.bad | b.bad};
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

// One instantiation per (stripes, input kind, S05 or not): the per-token code has
// no run-time branch on either, and each kernel carries only its own path. (One
// kernel for all four was 108 KB of SASS; on the H200, stalls on instruction
// fetch were a tenth to a fifth of its cycles.)
template <int Groups, bool Logits, bool PlantedS05>
__global__ void __launch_bounds__(kGumbelThreads)
gumbel_kernel(device_batch b, int splits, gumbel_partial* partials, unsigned int* arrivals) {
  using partial_block = gpu::block_primitives<gumbel_partial, kGumbelThreads>;
  __shared__ typename partial_block::shared_type shared;
  __shared__ bool last_block;

  const int64_t r = blockIdx.x;
  const int split = blockIdx.y;
  check_parameters(b, r, r * splits + split, static_cast<int64_t>(gridDim.x) * splits);
  const int64_t in = input_row_of(b, r);
  gumbel_partial mine{-INFINITY, INT_MAX, 0.0f, 0};
  if (in >= 0) {
    const row_filters f = filters_of(b, r, in);
    const unsigned char* row = row_pointer(b, in);
    const stream_key key = stream_key_of(b, r, in);
    const int64_t begin = split * gumbel_chunk<Groups>;
    float x[Groups][kItems];
#pragma unroll
    for (int g = 0; g < Groups; ++g)
      load_items(row, b.dtype, b.vocab_size, begin + g * (kGumbelThreads * kItems) + threadIdx.x * kItems, x[g],
                 0.0f);
#pragma unroll
    for (int g = 0; g < Groups; ++g) {
      const int64_t i = begin + g * (kGumbelThreads * kItems) + threadIdx.x * kItems;
      // Four consecutive tokens: their stream outputs come from one Philox block
      // (two when offset + i is not a multiple of 4), drawn together.
      uint32_t words[kItems];
      philox_stream(key.seed, key.subsequence, key.offset + static_cast<uint64_t>(i)).next_four(words);
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        const float v = gumbel_fraction<PlantedS05>(words[j]);
        // Past the row's end: predicated, not skipped, so the body stays one
        // straight line (the loads filled x with 0 there).
        const bool inside = i + j < b.vocab_size;
        const float z = x[g][j];
        float k;
        if constexpr (Logits) {
          mine.bad |= inside && (isnan(z) || z == INFINITY);
          mine.mass += inside && isfinite(z) ? 1.0f : 0.0f;
          k = f.temperature == 0.0f ? z : z / f.temperature - logf(-log1pf(-v));
        } else {
          mine.bad |= !(z >= 0.0f) || isinf(z);  // 0 past the end: healthy, no mass
          mine.mass += z;
          k = z / fmaxf(-log1pf(-v), FLT_MIN);
        }
        // As cpu.gumbel_*: a probs key must beat 0 (a zero-mass token never wins, and
        // an all-underflow row comes out invalid), a logits key must beat -inf.
        if (inside && (Logits ? k > -INFINITY : k > 0.0f) && k > mine.key)
          mine.key = k, mine.index = static_cast<int>(i + j);
      }
    }
  }
  mine = partial_block::reduce(mine, partial_op(), shared);

  gumbel_partial* row_partials = partials + r * splits;
  if (threadIdx.x == 0) {
    row_partials[split] = mine;
    last_block = gpu_arrive(&arrivals[r]) == static_cast<unsigned>(splits - 1);
  }
  __syncthreads();  // hands thread 0's acquire to the block (gpu_compat.h)
  if (!last_block) return;
  gumbel_partial all{-INFINITY, INT_MAX, 0.0f, 0};
  for (int s = threadIdx.x; s < splits; s += kGumbelThreads) {
    const volatile gumbel_partial* p = row_partials + s;
    all = partial_op()(all, gumbel_partial{p->key, p->index, p->mass, p->bad});
  }
  all = partial_block::reduce(all, partial_op(), shared);
  if (threadIdx.x == 0) {
    arrivals[r] = 0;  // ready for the next call (and the next graph replay)
    const bool usable = in >= 0 && filters_of(b, r, in).usable && all.bad == 0 && all.mass > 0.0f &&
                        !isinf(all.mass) && all.index != INT_MAX;
    write_result(b, r, all.index, usable);
  }
}

}  // namespace

gpuError_t launch_gumbel(launch_request& q) {
  const device_batch& b = q.batch;
  const int64_t rows = b.num_output_rows;
  // Four stripes a thread once the 4096-token chunks alone make two blocks per SM.
  const bool wide = rows * ((b.vocab_size + gumbel_chunk<4> - 1) / gumbel_chunk<4>) >= 2 * q.scratch->sm_count();
  const int64_t chunk = wide ? gumbel_chunk<4> : gumbel_chunk<1>;
  const int64_t splits = (b.vocab_size + chunk - 1) / chunk;  // V <= 2^18: at most 256
  gumbel_partial* partials = nullptr;
  unsigned int* arrivals = nullptr;
  if (auto e = q.scratch->get(workspace::partials, rows * splits, q.capturing, &partials); e != gpuSuccess) return e;
  if (auto e = q.scratch->get(workspace::counters, rows, q.capturing, &arrivals); e != gpuSuccess) return e;
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(splits));
  using kernel_type = void (*)(device_batch, int, gumbel_partial*, unsigned int*);
  // [wide][logits][S05]
  constexpr kernel_type kernels[2][2][2] = {
      {{gumbel_kernel<1, false, false>, gumbel_kernel<1, false, true>},
       {gumbel_kernel<1, true, false>, gumbel_kernel<1, true, true>}},
      {{gumbel_kernel<4, false, false>, gumbel_kernel<4, false, true>},
       {gumbel_kernel<4, true, false>, gumbel_kernel<4, true, true>}}};
  const kernel_type kernel = kernels[wide][b.input_kind == SC_INPUT_LOGITS][b.planted == defect::S05];
  kernel<<<grid, kGumbelThreads, 0, q.stream>>>(b, static_cast<int>(splits), partials, arrivals);
  return gpuGetLastError();
}

}  // namespace samplecheck::cuda
