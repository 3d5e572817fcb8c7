// Gumbel-max, both spellings, fused into one pass over the row:
//   probs  (SGLang v0.5.20): argmax p_i / q_i, q_i = Exp(1) = -log1p(-v_i) clamped to FLT_MIN
//   logits:                  argmax z_i / T + g_i, g_i = -log(q_i); T = 0 is greedy
// Token i takes output offset + i of its row's stream, as cpu.gumbel_* do, so the CPU
// and GPU subjects pick the same token from the same numbers (up to float log).
//
// A row is split over several blocks when the batch is small (one block per row
// leaves an H200 with 131 of 132 SMs idle at B = 1): each block writes its partial
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

constexpr int kGumbelThreads = 256;

struct best_key {
  float key;
  int index;
};
struct best_op {
  __device__ __forceinline__ best_key operator()(const best_key& a, const best_key& b) const {
    if (a.key > b.key) return a;
    if (b.key > a.key) return b;
    return a.index <= b.index ? a : b;
  }
};

// A block's share of one row.
struct gumbel_partial {
  best_key best;
  float mass;     // probs: sum of p; logits: count of finite z (as float)
  int bad;        // probs: NaN, Inf or negative; logits: NaN or +Inf
};

// v = 1 - u, with q = -log1p(-v) ~ Exp(1): as kernels/cpu/gumbel.cpp (reference/uniform.h
// says why not -log(u)).
__device__ __forceinline__ float gumbel_fraction(uint32_t bits, defect planted) {
  // S05: curand_uniform's (0, 1] with nothing guarding u = 1. Its real rate is 2^-25
  // per token (bits >= 0xffffff80); amplified to 2^-10 exactly as cpu.gumbel_*:S05
  // does it (top 10 bits all set -> 0xffffffff), so the two mutants agree token for
  // token. The mechanism is the real one: -log(1) = 0 gives one token a huge key.
  if (planted != defect::S05) return uniform_fine_near_zero(bits);
  if ((bits >> 22) == 0x3ffu) bits = 0xffffffffu;
  return 1.0f - curand_uniform_from_bits(bits);
}

__global__ void __launch_bounds__(kGumbelThreads)
gumbel_kernel(device_batch b, int splits, int64_t chunk, gumbel_partial* partials, unsigned int* arrivals) {
  using pair_block = gpu::block_primitives<best_key, kGumbelThreads>;
  using float_blk = gpu::block_primitives<float, kGumbelThreads>;
  using int_blk = gpu::block_primitives<int, kGumbelThreads>;
  __shared__ typename pair_block::shared_type pair_shared;
  __shared__ typename float_blk::shared_type float_shared;
  __shared__ typename int_blk::shared_type int_shared;
  __shared__ bool last_block;

  const int64_t r = blockIdx.x;
  const int split = blockIdx.y;
  check_parameters(b, r, r * splits + split, static_cast<int64_t>(gridDim.x) * splits);
  const int64_t in = input_row_of(b, r);
  const bool logits = b.input_kind == SC_INPUT_LOGITS;
  best_key best{-INFINITY, INT_MAX};
  float mass = 0.0f;
  int bad = 0;
  if (in >= 0) {
    const row_filters f = filters_of(b, r, in);
    const unsigned char* row = row_pointer(b, in);
    const stream_key key = stream_key_of(b, r, in);
    const int64_t begin = split * chunk, end = begin + chunk < b.vocab_size ? begin + chunk : b.vocab_size;
    // Four consecutive tokens a thread: one vector load, and their four stream
    // outputs come from one Philox block (two when offset + i is not a multiple of 4).
    for (int64_t i = begin + 4 * static_cast<int64_t>(threadIdx.x); i < end; i += 4 * kGumbelThreads) {
      float x[kItems];
      load_items(row, b.dtype, b.vocab_size, i, x, 0.0f);
      philox_stream numbers(key.seed, key.subsequence, key.offset + static_cast<uint64_t>(i));
      for (int j = 0; j < kItems; ++j) {
        const float v = gumbel_fraction(numbers.next(), b.planted);
        if (i + j >= end) break;
        float key;
        if (logits) {
          bad |= isnan(x[j]) || x[j] == INFINITY;
          mass += isfinite(x[j]) ? 1.0f : 0.0f;
          key = f.temperature == 0.0f ? x[j] : x[j] / f.temperature - logf(-log1pf(-v));
        } else {
          bad |= !(x[j] >= 0.0f) || isinf(x[j]);
          mass += x[j];
          key = x[j] / fmaxf(-log1pf(-v), FLT_MIN);
        }
        // As cpu.gumbel_*: a probs key must beat 0 (a zero-mass token never wins, and
        // an all-underflow row comes out invalid), a logits key must beat -inf.
        if (logits ? key > -INFINITY : key > 0.0f) best = best_op()(best, best_key{key, static_cast<int>(i + j)});
      }
    }
  }
  best = pair_block::reduce(best, best_op(), pair_shared);
  mass = float_blk::sum(mass, float_shared);
  bad = int_blk::max(bad, int_shared);

  gumbel_partial* row_partials = partials + r * splits;
  if (threadIdx.x == 0) {
    row_partials[split] = gumbel_partial{best, mass, bad};
    __threadfence();
    last_block = atomicAdd(&arrivals[r], 1u) == static_cast<unsigned>(splits - 1);
  }
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  best = best_key{-INFINITY, INT_MAX};
  mass = 0.0f;
  bad = 0;
  for (int s = threadIdx.x; s < splits; s += kGumbelThreads) {
    const volatile gumbel_partial* p = row_partials + s;
    best = best_op()(best, best_key{p->best.key, p->best.index});
    mass += p->mass;
    bad |= p->bad;
  }
  best = pair_block::reduce(best, best_op(), pair_shared);
  mass = float_blk::sum(mass, float_shared);
  bad = int_blk::max(bad, int_shared);
  if (threadIdx.x == 0) {
    arrivals[r] = 0;  // ready for the next call (and the next graph replay)
    const bool usable = in >= 0 && filters_of(b, r, in).usable && bad == 0 && mass > 0.0f && !isinf(mass) &&
                        best.index != INT_MAX;
    write_result(b, r, best.index, usable);
  }
}

}  // namespace

gpuError_t launch_gumbel(launch_request& q) {
  const device_batch& b = q.batch;
  const int64_t rows = b.num_output_rows;
    // Eight 256-thread blocks per SM (a full H200 SM), none under 1024 tokens; chunks
  // are whole groups of four so that vector loads stay aligned.
  const int64_t target = 8 * static_cast<int64_t>(q.scratch->sm_count());
  int64_t splits = (target + rows - 1) / rows;
  splits = std::max<int64_t>(1, std::min<int64_t>(splits, (b.vocab_size + 1023) / 1024));
  const int64_t chunk = ((b.vocab_size + splits - 1) / splits + 3) / 4 * 4;
  gumbel_partial* partials = nullptr;
  unsigned int* arrivals = nullptr;
  if (auto e = q.scratch->get(workspace::partials, rows * splits, q.capturing, &partials); e != gpuSuccess) return e;
  if (auto e = q.scratch->get(workspace::counters, rows, q.capturing, &arrivals); e != gpuSuccess) return e;
  gumbel_kernel<<<dim3(static_cast<unsigned>(rows), static_cast<unsigned>(splits)), kGumbelThreads, 0, q.stream>>>(
      b, static_cast<int>(splits), chunk, partials, arrivals);
  return gpuGetLastError();
}

}  // namespace samplecheck::cuda
