// The preparations of cuda.dual_pivot_topk_first and cuda.dual_pivot_logits on a
// row held across a cluster (dual_pivot_cluster.cu). CUDA only.
#pragma once

#include "kernels/cuda/cluster_row.cuh"

namespace samplecheck::cuda {

// The preparations of cuda.dual_pivot_topk_first (top_k_renorm_probs) and
// cuda.dual_pivot_logits (top_k_mask_logits, softmax(z / T)) on the held row, by the
// same rules as dual_pivot.cu's prepare_kernel; there one block streams the row
// seven times (about 140 us at V = 151,936), here every pass is on registers and
// each reduction is one exchange through distributed shared memory.
enum class held_preparation { none, top_k_renorm, softmax_logits };

// `value` reduced over the block, then over the cluster in rank order (every block
// gets the same bits). Exchange n writes value[n % 2]: a block rewrites a slot only
// after the next exchange's barrier, which every reader of the slot has passed.
template <typename Op>
__device__ float cluster_reduce(cg::cluster_group& cluster, cluster_shared& sh, int& exchange,
                                int blocks, float value, float identity, Op op) {
  value = cluster_float::reduce(value, op, identity, sh.f);
  const int slot = exchange++ & 1;
  if (threadIdx.x == 0) sh.value[slot] = value;
  cluster.sync();
  if (threadIdx.x < static_cast<unsigned>(blocks))
    sh.gathered[threadIdx.x] = *cluster.map_shared_rank(&sh.value[slot], threadIdx.x);
  __syncthreads();
  float total = identity;
  for (int c = 0; c < blocks; ++c) total = op(total, sh.gathered[c]);
  __syncthreads();  // gathered is rewritten by the next exchange
  return total;
}
struct float_sum {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct float_max {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct float_min {
  __device__ __forceinline__ float operator()(float a, float b) const { return fminf(a, b); }
};

// The k-th largest held value of the row (k >= 1), exactly: radix select over the
// order-preserving bits, 8 bits a pass, each pass's histogram summed over the
// cluster (histogram[pass % 2], by the rule of cluster_reduce).
template <int Stripes>
__device__ float cluster_kth_largest(cg::cluster_group& cluster, cluster_shared& sh, int blocks,
                                     const float (&x)[held_of<Stripes>], int64_t begin, int64_t v,
                                     int32_t k) {
  radix_prefix at{0, k};  // the prefix so far, the rank still to find under it
  uint32_t mask = 0;
  for (int pass = 0, shift = 24; shift >= 0; ++pass, shift -= 8) {
    unsigned* histogram = sh.histogram[pass & 1];
    for (int bin = threadIdx.x; bin < 256; bin += kClusterThreads) histogram[bin] = 0;
    __syncthreads();
#pragma unroll
    for (int j = 0; j < held_of<Stripes>; ++j) {
      const uint32_t o = ordered_bits(x[j]);
      if (held_token<Stripes>(begin, j) < v && (o & mask) == at.prefix)
        atomicAdd(&histogram[(o >> shift) & 0xffu], 1u);
    }
    cluster.sync();
    for (int bin = threadIdx.x; bin < 256; bin += kClusterThreads) {
      unsigned count = 0;
      for (int c = 0; c < blocks; ++c) count += cluster.map_shared_rank(histogram, c)[bin];
      sh.cluster_histogram[bin] = count;
    }
    __syncthreads();
    if (threadIdx.x == 0) sh.found = radix_select_step(sh.cluster_histogram, shift, at);
    __syncthreads();
    at = sh.found;
    mask |= 0xffu << shift;
  }
  return from_ordered_bits(at.prefix);
}

// top_k_renorm: x over the mass kept by top-k (all of it when top-k is off), 0
// below the k-th largest; `ok` turns false when the row's probabilities are unusable.
template <int Stripes>
__device__ __forceinline__ void renormalize_held(cg::cluster_group& cluster, cluster_shared& sh,
                                                 int& exchange, int blocks,
                                                 float (&x)[held_of<Stripes>], int64_t begin,
                                                 int64_t v, const row_filters& f, bool& ok) {
  constexpr int kHeld = held_of<Stripes>;
  float threshold = -INFINITY;
  float sum = 0.0f, lowest = 0.0f;
#pragma unroll
  for (int j = 0; j < kHeld; ++j) sum += x[j], lowest = fminf(lowest, x[j]);  // 0 past the end
  const float total = cluster_reduce(cluster, sh, exchange, blocks, sum, 0.0f, float_sum());
  // A NaN or +Inf spoils the total, a negative entry the minimum (NaN fails >=).
  lowest = cluster_reduce(cluster, sh, exchange, blocks, lowest, 0.0f, float_min());
  ok = ok && lowest >= 0.0f && total > 0.0f && !isinf(total);
  float kept = total;
  if (ok && f.top_k_on(v)) {
    threshold = cluster_kth_largest<Stripes>(cluster, sh, blocks, x, begin, v, f.top_k);
    float partial = 0.0f;
#pragma unroll
    for (int j = 0; j < kHeld; ++j) partial += x[j] >= threshold ? x[j] : 0.0f;
    kept = cluster_reduce(cluster, sh, exchange, blocks, partial, 0.0f, float_sum());
  }
  const float scale = ok ? 1.0f / kept : 0.0f;
#pragma unroll
  for (int j = 0; j < kHeld; ++j) x[j] = x[j] >= threshold ? x[j] * scale : 0.0f;
}

// logits: softmax(x / T) over the top-k survivors, or one-hot on the lowest index of
// the maximum at T = 0; `ok` turns false on a NaN or +Inf logit.
template <int Stripes>
__device__ __forceinline__ void softmax_held(cg::cluster_group& cluster, cluster_shared& sh,
                                             int& exchange, int blocks,
                                             float (&x)[held_of<Stripes>], int64_t begin, int64_t v,
                                             const row_filters& f, bool& ok) {
  constexpr int kHeld = held_of<Stripes>;
  float threshold = -INFINITY;
  float max = -INFINITY, best = INFINITY;
  bool bad = false;
#pragma unroll
  for (int j = 0; j < kHeld; ++j) {
    const int64_t t = held_token<Stripes>(begin, j);
    if (t >= v) x[j] = -INFINITY;  // past the end: never kept, never the maximum
    bad |= !(x[j] < INFINITY);     // NaN or +Inf
    if (x[j] > max || (x[j] == max && static_cast<float>(t) < best))
      max = x[j], best = static_cast<float>(t);
  }
  const float row_max = cluster_reduce(cluster, sh, exchange, blocks, max, -INFINITY, float_max());
  // The lowest index holding the maximum (indices below 2^24 are exact floats).
  const float greedy = cluster_reduce(cluster, sh, exchange, blocks,
                                      max == row_max ? best : INFINITY, INFINITY, float_min());
  const float any_bad =
      cluster_reduce(cluster, sh, exchange, blocks, bad ? 1.0f : 0.0f, 0.0f, float_max());
  ok = ok && any_bad == 0.0f && isfinite(row_max);
  if (ok && f.top_k_on(v))
    threshold = cluster_kth_largest<Stripes>(cluster, sh, blocks, x, begin, v, f.top_k);
  float shift = row_max, scale = 1.0f;
  if (ok && f.temperature > 0.0f) {
    scale = 1.0f / f.temperature;
    float partial = 0.0f;
#pragma unroll
    for (int j = 0; j < kHeld; ++j)
      partial += x[j] >= threshold ? expf((x[j] - shift) * scale) : 0.0f;
    const float denominator =
        cluster_reduce(cluster, sh, exchange, blocks, partial, 0.0f, float_sum());
    shift += logf(denominator) / scale;  // p = exp((z - max) / T) / denominator
  }
#pragma unroll
  for (int j = 0; j < kHeld; ++j) {
    const float t = static_cast<float>(held_token<Stripes>(begin, j));
    if (!ok)
      x[j] = 0.0f;
    else if (f.temperature == 0.0f)
      x[j] = t == greedy ? 1.0f : 0.0f;
    else
      x[j] = x[j] >= threshold ? expf((x[j] - shift) * scale) : 0.0f;
  }
}

// Replaces the held inputs by the row's sampling distribution; false when the row
// cannot be sampled (then every value is 0). Every block of the cluster calls it.
template <held_preparation Mode, int Stripes>
__device__ bool prepare_held(cg::cluster_group& cluster, cluster_shared& sh, int blocks,
                             float (&x)[held_of<Stripes>], int64_t begin, int64_t v,
                             const row_filters& f) {
  int exchange = 0;
  bool ok = f.usable;
  if constexpr (Mode == held_preparation::top_k_renorm)
    renormalize_held<Stripes>(cluster, sh, exchange, blocks, x, begin, v, f, ok);
  else
    softmax_held<Stripes>(cluster, sh, exchange, blocks, x, begin, v, f, ok);
  if (!ok)
#pragma unroll
    for (int j = 0; j < held_of<Stripes>; ++j) x[j] = 0.0f;
  return ok;
}

}  // namespace samplecheck::cuda
