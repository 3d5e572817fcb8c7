// Multinomial by inverse CDF (SGLang v0.5.19's torch.multinomial rule), two layouts:
//   cuda.multinomial        one block per output row: a reduction pass for the row's
//                           mass and health, then FlashInfer's tile-by-tile search
//                           with early exit (row_ops.cuh);
//   cuda.multinomial_split  a row split into 4096-token chunks, one block each (one
//                           block per row leaves most SMs idle at small batch): each
//                           block sums its chunk from registers, the last block of
//                           the row to arrive scans the chunk masses in chunk order,
//                           picks the chunk u falls in and searches it with the same
//                           two guards, in a fixed permutation of the chunk. (A
//                           cluster per row, dual_pivot_cluster.cu's kernel with no
//                           filter, measured slower on the H200 at B = 1 and 8:
//                           16.5 and 20.5 us replayed and synchronised, against
//                           12.8 and 13.6.)
// One stream output per call in both.
#include <algorithm>
#include <climits>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/row_ops.cuh"
#include "reference/uniform.h"

namespace samplecheck::cuda {

namespace {

__global__ void __launch_bounds__(kThreads) multinomial_kernel(device_batch b) {
  __shared__ row_shared sh;
  const int64_t r = blockIdx.x;
  int64_t in;
  if (!open_output_row(b, r, in)) return;
  const row_filters f = filters_of(b, r, in);
  const unsigned char* row = row_pointer(b, in);
  const prob_stats stats = probs_stats(row, b.dtype, b.vocab_size, sh);
  if (!stats.usable || !f.usable) {
    if (threadIdx.x == 0) write_result(b, r, -1, false);
    return;
  }
  philox_stream stream = stream_of(b, r, in);
  const float u = s01_amplified(uniform_open_one(stream.next()) * stats.total, b.planted);
  const int32_t token = inverse_cdf(row, b.dtype, b.vocab_size, 0.0f, u, false,
                                    b.planted == defect::S01, sh, b.planted == defect::X09);
  if (threadIdx.x == 0) write_result(b, r, token, token >= 0);
}

// The split layout: chunks of kChunk tokens, one 256-thread block each. A thread
// holds 16 tokens (four 16-byte loads issued together), so a chunk is read once
// into registers, summed, and searched from those registers when its block turns
// out to hold the crossing; small chunks keep the last block's search to one scan.
constexpr int kSplitThreads = 256;
constexpr int kSplitGroups = 4;                                   // vector loads a thread
constexpr int kSplitItems = kSplitGroups * kItems;                // tokens a thread
constexpr int64_t kChunk = int64_t{kSplitThreads} * kSplitItems;  // 4096

using split_float = gpu::block_primitives<float, kSplitThreads>;
using split_int = gpu::block_primitives<int, kSplitThreads>;

struct chunk_partial {
  float mass;
  int bad;
};
// A chunk's mass and health, folded warp by warp (gpu::block_fold).
struct chunk_health {
  float mass;
  unsigned bad;
};
struct fold_health {
  __device__ __forceinline__ chunk_health operator()(const chunk_health& h) const {
    return {gpu_warp_sum(h.mass), gpu_warp_or(h.bad)};
  }
};

struct split_shared {
  chunk_health staged[kSplitThreads / sc_warp_size];
  split_float::shared_type f;
  split_int::shared_type i;
  bool last_block;
  int crossing;
  held_search_shared search;
  float before;  // mass of the chunks before the crossing chunk
};

// Token j of thread t in chunk `begin`: group g = j / 4 is a block-wide 16-byte
// stripe, so every load is coalesced; the scan order is (thread, j), a fixed
// permutation of the chunk, which an inverse CDF may use as well as index order.
__device__ __forceinline__ int64_t split_token(int64_t begin, int j) {
  return begin + (j / kItems) * (kSplitThreads * kItems) + threadIdx.x * kItems + j % kItems;
}

__device__ __forceinline__ void load_chunk(const unsigned char* row, storage_type dtype, int64_t v,
                                           int64_t begin, float (&x)[kSplitItems]) {
#pragma unroll
  for (int g = 0; g < kSplitGroups; ++g) {
    float part[kItems];
    load_items(row, dtype, v, split_token(begin, g * kItems), part, 0.0f);
#pragma unroll
    for (int j = 0; j < kItems; ++j) x[g * kItems + j] = part[j];
  }
}

// The inverse CDF inside one chunk at u (0 <= u), by row_ops.cuh's guarded search
// over the registers; the token, or -1 when the chunk has no mass.
__device__ inline int64_t search_chunk(const float (&x)[kSplitItems], int64_t begin, int64_t v,
                                       float u, split_shared& sh) {
  const int position = held_crossing<kSplitThreads>(
      x, 0.0f, u, [&](int j) { return split_token(begin, j) < v; }, sh.f, sh.search);
  if (position < 0) return -1;
  const int thread = position / kSplitItems, j = position % kSplitItems;
  return begin + (j / kItems) * (kSplitThreads * kItems) + thread * kItems + j % kItems;
}

// Loads the chunk at `begin` into x; its mass and health (NaN fails >=).
__device__ __forceinline__ chunk_health read_chunk(const unsigned char* row, storage_type dtype,
                                                   int64_t v, int64_t begin,
                                                   float (&x)[kSplitItems]) {
  chunk_health mine{0.0f, 0u};
  load_chunk(row, dtype, v, begin, x);
#pragma unroll
  for (int j = 0; j < kSplitItems; ++j) {
    mine.bad |= !(x[j] >= 0.0f) || isinf(x[j]);  // NaN fails >=
    mine.mass += x[j];
  }
  return mine;
}

// The row's total mass and health from its chunk records, a block of them at a time.
__device__ __forceinline__ chunk_health fold_chunk_records(const chunk_partial* row_partials,
                                                           int splits, split_shared& sh) {
  chunk_health row{0.0f, 0u};
  for (int s0 = 0; s0 < splits; s0 += kSplitThreads) {
    const int s = s0 + static_cast<int>(threadIdx.x);
    chunk_health part{0.0f, 0u};
    if (s < splits) {
      const volatile chunk_partial* p = row_partials + s;
      part = chunk_health{p->mass, static_cast<unsigned>(p->bad)};
    }
    part = gpu::block_fold<kSplitThreads>(part, chunk_health{0.0f, 0u}, fold_health(), sh.staged);
    row.mass += part.mass;
    row.bad |= part.bad;
    __syncthreads();  // the next group rewrites sh.staged
  }
  return row;
}

// The first chunk with mass whose running total, in chunk order, passes u (float
// rounding left u beyond every running total: the last chunk with mass), and in
// `before` the mass of the chunks before it.
__device__ __forceinline__ int crossing_chunk(const chunk_partial* row_partials, int splits,
                                              float u, split_shared& sh, float& before) {
  if (threadIdx.x == 0) sh.crossing = INT_MAX, sh.before = 0.0f;
  __syncthreads();
  float carried = 0.0f;
  int last_with_mass = -1;
  for (int s0 = 0; s0 < splits && sh.crossing == INT_MAX; s0 += kSplitThreads) {
    const int s = s0 + static_cast<int>(threadIdx.x);
    const float mass =
        s < splits ? const_cast<const volatile chunk_partial*>(row_partials)[s].mass : 0.0f;
    float group_total;
    const float through = carried + split_float::inclusive_sum(mass, group_total, sh.f);
    if (mass > 0.0f && through > u) atomicMin(&sh.crossing, s);
    last_with_mass = split_int::max(mass > 0.0f ? s : last_with_mass, sh.i);
    __syncthreads();
    if (s == sh.crossing) sh.before = through - mass;
    carried += group_total;
    __syncthreads();
  }
  const int s = sh.crossing != INT_MAX ? sh.crossing : last_with_mass;
  before = sh.crossing != INT_MAX ? sh.before : carried - row_partials[s].mass;
  __syncthreads();
  return s;
}

__global__ void __launch_bounds__(kSplitThreads)
    multinomial_split_kernel(device_batch b, int splits, chunk_partial* partials,
                             unsigned int* arrivals) {
  __shared__ split_shared sh;
  const int64_t r = blockIdx.x, v = b.vocab_size;
  const int split = blockIdx.y;
  check_parameters(b, r, r * splits + split, static_cast<int64_t>(gridDim.x) * splits);
  const int64_t in = input_row_of(b, r);
  const unsigned char* row = in >= 0 ? row_pointer(b, in) : nullptr;
  float x[kSplitItems];
  chunk_health mine{0.0f, 0u};
  if (in >= 0) mine = read_chunk(row, b.dtype, v, split * kChunk, x);
  const chunk_health chunk =
      gpu::block_fold<kSplitThreads>(mine, chunk_health{0.0f, 0u}, fold_health(), sh.staged);
  chunk_partial* row_partials = partials + r * splits;
  if (threadIdx.x == 0) {
    row_partials[split] = chunk_partial{chunk.mass, chunk.bad != 0 || isinf(chunk.mass)};
    sh.last_block = gpu_arrive(&arrivals[r]) == static_cast<unsigned>(splits - 1);
  }
  // The barrier hands thread 0's acquire to the block: the partials read below
  // happen after every other block's store.
  __syncthreads();
  if (!sh.last_block) return;
  // The row's chunk masses in chunk order: the total, and the first chunk with
  // mass whose running total passes u.
  const row_filters f = in >= 0 ? filters_of(b, r, in) : row_filters{};
  const chunk_health health = fold_chunk_records(row_partials, splits, sh);
  const float total = health.mass;
  if (threadIdx.x == 0) arrivals[r] = 0;  // ready for the next call and graph replay
  if (in < 0 || health.bad != 0 || !(total > 0.0f) || isinf(total) || !f.usable) {
    if (threadIdx.x == 0) {
      if (in < 0)
        b.out_valid[r] = 0;
      else
        write_result(b, r, -1, false);
    }
    return;
  }
  philox_stream stream = stream_of(b, r, in);
  const float u = uniform_open_one(stream.next()) * total;
  float before;
  const int s = crossing_chunk(row_partials, splits, u, sh, before);
  load_chunk(row, b.dtype, v, s * kChunk, x);
  const int64_t token = search_chunk(x, s * kChunk, v, fmaxf(u - before, 0.0f), sh);
  if (threadIdx.x == 0) write_result(b, r, static_cast<int32_t>(token), token >= 0);
}

}  // namespace

gpuError_t launch_multinomial(launch_request& q) {
  const device_batch& b = q.batch;
  const auto rows = static_cast<unsigned>(b.num_output_rows);
  if (q.config->kind == algorithm::multinomial) {
    multinomial_kernel<<<rows, kThreads, 0, q.stream>>>(b);
    return gpuGetLastError();
  }
  const int64_t splits = (b.vocab_size + kChunk - 1) / kChunk;
  if (splits > 65535) return gpuErrorInvalidValue;  // grid y: V up to 2^28 tokens
  chunk_partial* partials = nullptr;
  unsigned int* arrivals = nullptr;
  if (auto e = q.scratch->get(workspace::partials, rows * splits, q.capturing, &partials);
      e != gpuSuccess)
    return e;
  if (auto e = q.scratch->get(workspace::counters, rows, q.capturing, &arrivals); e != gpuSuccess)
    return e;
  multinomial_split_kernel<<<dim3(rows, static_cast<unsigned>(splits)), kSplitThreads, 0,
                             q.stream>>>(b, static_cast<int>(splits), partials, arrivals);
  return gpuGetLastError();
}

}  // namespace samplecheck::cuda
