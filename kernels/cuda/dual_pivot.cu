// Sorting-free dual-pivot rejection sampling in FlashInfer's structure (seed 002):
// one block per output row; each round draws u against the mass above `low`, finds
// the token by the tile-by-tile inverse CDF (early exit, non-monotone guard), then
// one full pass measures mass and count above pivot_0 = p[token] and
// pivot_1 = (pivot_0 + high) / 2:
//   f(pivot_0) holds           -> accept the token
//   f(pivot_1) holds           -> low = pivot_0, high = pivot_1
//   neither                    -> low = pivot_1
// f(x) = (top-k off or count(p > x) < k) and (top-p off or mass(p > x) < top_p * mass)
//        and (min-p off or x >= min_p * max p): the joint order, ties at the k-th
// value kept. Round r takes stream output offset + r; kDualPivotRoundCap bounds it
// (the interval halves every round, so the cap is never met on finite rows).
//
// The top_k_first and logits subjects run a preparation kernel first that writes
// each output row's renormalised top-k probabilities (FlashInfer's top_k_renorm_probs)
// or its top-k-masked softmax (top_k_mask_logits, then softmax(z / T)) to scratch,
// and then this sampler with top-p / min-p on those rows.
#include <algorithm>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/row_ops.cuh"
#include "reference/uniform.h"

namespace samplecheck::cuda {
namespace {

// The most scratch the prepared rows of one chunk of output rows may take.
constexpr size_t kPreparedBytes = size_t{2} << 30;

struct min_index {
  __device__ __forceinline__ int operator()(int a, int c) const { return a < c ? a : c; }
};

__device__ inline pivot_mass mass_above(const unsigned char* row, storage_type dtype, int64_t v,
                                        float pivot0, float pivot1, row_shared& sh) {
  float s0 = 0.0f, s1 = 0.0f;
  int c0 = 0, c1 = 0;
  for_each_tile(row, dtype, v, 0.0f, [&](int64_t, const float(&x)[kItems]) {
    for (int j = 0; j < kItems; ++j) {
      if (x[j] > pivot0) s0 += x[j], ++c0;
      if (x[j] > pivot1) s1 += x[j], ++c1;
    }
  });
  const pivot_mass m = gpu::block_fold<kThreads>(
      pivot_mass{s0, s1, c0, c1}, pivot_mass{0.0f, 0.0f, 0, 0}, warp_sum_pivot_masses(), sh.staged);
  __syncthreads();  // sh.staged is rewritten by the next fold
  return m;
}

// Whether a row's filters accept a pivot, given the mass and count of the tokens above it.
struct pivot_rule {
  bool top_k = false, top_p = false, min_p = false;
  int32_t k = 0;
  float top_p_mass = 0.0f, min_p_value = 0.0f;
  __device__ bool any() const { return top_k || top_p || min_p; }
  __device__ bool accepts(float pivot, float mass, int count) const {
    return (!top_k || count < k) && (!top_p || mass < top_p_mass) &&
           (!min_p || pivot >= min_p_value);
  }
};

struct pivot_draw {
  int32_t token = -1;
  bool accepted = false;
};

// The rounds of one row: draw against the mass above `low`, then narrow [low, high].
__device__ pivot_draw pivot_rounds(const unsigned char* row, storage_type dtype, int64_t v,
                                   const pivot_rule& rule, float high, float mass,
                                   philox_stream& stream, bool deterministic, defect planted,
                                   row_shared& sh) {
  const bool s01 = planted == defect::S01;
  float low = 0.0f;
  pivot_draw d;
  for (int round = 0; round < kDualPivotRoundCap && !d.accepted; ++round) {
    const float u = s01_amplified(uniform_open_one(stream.next()) * mass, planted);
    d.token = inverse_cdf(row, dtype, v, low, u, deterministic, s01, sh, planted == defect::X09);
    if (d.token < 0 || d.token >= v) break;  // S01's escape: reported as drawn
    if (!rule.any()) {
      d.accepted = true;
      break;
    }
    const float pivot0 = load_element(row, dtype, d.token);
    const float pivot1 = pivot0 + (high - pivot0) * 0.5f;  // no overflow near FLT_MAX
    const pivot_mass m = mass_above(row, dtype, v, pivot0, pivot1, sh);
    if (rule.accepts(pivot0, m.mass0, m.count0)) {
      d.accepted = true;
    } else if (rule.accepts(pivot1, m.mass1, m.count1)) {
      low = pivot0, high = pivot1, mass = m.mass0;
    } else {
      low = pivot1, mass = m.mass1;
    }
  }
  return d;
}

// Rows to sample: the caller's input (prepared == nullptr) or prepared f32 rows for
// output rows first_row + blockIdx.x, with row_ok saying which preparations succeeded.
__global__ void __launch_bounds__(kThreads)
    dual_pivot_kernel(device_batch b, bool deterministic, const float* prepared,
                      const uint8_t* row_ok, int64_t first_row) {
  __shared__ row_shared sh;
  const int64_t r = first_row + blockIdx.x;
  if (prepared == nullptr) check_parameters(b, r, r, gridDim.x);
  const int64_t in = input_row_of(b, r);
  if (in < 0) {
    if (threadIdx.x == 0) b.out_valid[r] = 0;
    return;
  }
  const row_filters f = filters_of(b, r, in);
  const int64_t v = b.vocab_size;
  const unsigned char* row = prepared
                                 ? reinterpret_cast<const unsigned char*>(prepared + blockIdx.x * v)
                                 : row_pointer(b, in);
  const storage_type dtype = prepared ? storage_type::f32 : b.dtype;
  const prob_stats stats = probs_stats(row, dtype, v, sh);
  if (!stats.usable || !f.usable || (row_ok && !row_ok[blockIdx.x])) {
    if (threadIdx.x == 0) write_result(b, r, -1, false);
    return;
  }
  const pivot_rule rule{prepared == nullptr && f.top_k_on(v),
                        f.top_p_on(),
                        f.min_p_on(),
                        f.top_k,
                        f.top_p * stats.total,
                        f.min_p * stats.max};
  philox_stream stream = stream_of(b, r, in);
  // S16: the sampler draws u against the total 1 a renormalised row is meant to have
  // (as FlashInfer's sampling_from_probs does), so the renorm total's ulps reach tokens.
  const bool unit_total = prepared != nullptr && b.planted == defect::S16;
  const pivot_draw d = pivot_rounds(row, dtype, v, rule, stats.max, unit_total ? 1.0f : stats.total,
                                    stream, deterministic, b.planted, sh);
  if (threadIdx.x == 0) {
    if (d.token >= v || d.token < 0)
      write_result(b, r, d.token, d.token >= 0 && b.planted == defect::S01);
    else
      write_result(b, r, d.token, d.accepted);
  }
}

// How a prepared row is written from its input: p = x * scale for probabilities,
// exp((z - shift) * scale) for logits, zero below threshold; greedy_index for T = 0.
struct row_transform {
  bool ok = true;
  float threshold = -INFINITY, shift = 0.0f, scale = 1.0f;
  int greedy_index = -1;
};

// S16 (FlashInfer #5034): the kept mass summed with float atomicAdd, each kept
// probability added as its thread gets to it, so the additions happen in the
// warps' arrival order, which changes from launch to launch.
__device__ float kept_mass_by_atomics(const unsigned char* row, storage_type dtype, int64_t v,
                                      float threshold) {
  __shared__ float atomic_kept;
  if (threadIdx.x == 0) atomic_kept = 0.0f;
  __syncthreads();
#if defined(SC_GPU_CUDA)
  // One block's warps are scheduled nearly alike launch after launch, where the
  // real multi-CTA kernel's blocks arrive from different SMs: a clock-derived
  // pause before each warp's additions stands in for that arrival jitter.
  __nanosleep(static_cast<unsigned>(clock64() & 1023));
#endif
  const int64_t tiles = (v + kTile - 1) / kTile;
  for (int64_t t = 0; t < tiles; ++t) {
    float x[kItems];
    load_items(row, dtype, v, tile_first(t), x, 0.0f);
    for (int j = 0; j < kItems; ++j)
      if (x[j] >= threshold && x[j] > 0.0f) atomicAdd(&atomic_kept, x[j]);
  }
  __syncthreads();
  return atomic_kept;
}

// Probabilities: the top-k threshold and 1 / kept mass.
__device__ row_transform probs_transform(const device_batch& b, const row_filters& f,
                                         const unsigned char* row, row_shared& sh,
                                         select_shared& sel) {
  const int64_t v = b.vocab_size, tiles = (v + kTile - 1) / kTile;
  const prob_stats stats = probs_stats(row, b.dtype, v, sh);
  row_transform t;
  t.ok = f.usable && stats.usable;
  float kept = stats.total;
  if (t.ok && f.top_k_on(v)) {
    t.threshold = kth_largest(row, b.dtype, v, f.top_k, sel);
    float partial = 0.0f;
    for (int64_t i = 0; i < tiles; ++i) {
      float x[kItems];
      load_items(row, b.dtype, v, tile_first(i), x, 0.0f);
      for (int j = 0; j < kItems; ++j) partial += x[j] >= t.threshold ? x[j] : 0.0f;
    }
    kept = float_block::sum(partial, sh.f);
    if (b.planted == defect::S16) kept = kept_mass_by_atomics(row, b.dtype, v, t.threshold);
  }
  t.scale = t.ok ? 1.0f / kept : 0.0f;
  return t;
}

// Logits: the row's maximum (and its lowest index), the top-k threshold, and the
// shift that folds the softmax denominator in.
__device__ row_transform logits_transform(const device_batch& b, const row_filters& f,
                                          const unsigned char* row, row_shared& sh,
                                          select_shared& sel) {
  const int64_t v = b.vocab_size, tiles = (v + kTile - 1) / kTile;
  float max = -INFINITY;
  int bad = 0, best = INT_MAX;
  for (int64_t i = 0; i < tiles; ++i) {
    const int64_t first = tile_first(i);
    float x[kItems];
    load_items(row, b.dtype, v, first, x, -INFINITY);
    for (int j = 0; j < kItems; ++j) {
      bad |= isnan(x[j]) || x[j] == INFINITY;
      if (x[j] > max) max = x[j], best = static_cast<int>(first + j);
    }
  }
  const float row_max = float_block::max(max, sh.f);
  bad = int_block::max(bad, sh.i);
  row_transform t;
  t.ok = f.usable && bad == 0 && isfinite(row_max);
  t.greedy_index = int_block::reduce(max == row_max ? best : INT_MAX, min_index(), INT_MAX, sh.i);
  if (t.ok && f.top_k_on(v)) t.threshold = kth_largest(row, b.dtype, v, f.top_k, sel);
  t.shift = row_max;
  if (t.ok && f.temperature > 0.0f) {
    t.scale = 1.0f / f.temperature;
    float partial = 0.0f;
    for (int64_t i = 0; i < tiles; ++i) {
      float x[kItems];
      load_items(row, b.dtype, v, tile_first(i), x, -INFINITY);
      for (int j = 0; j < kItems; ++j)
        partial += x[j] >= t.threshold ? expf((x[j] - t.shift) * t.scale) : 0.0f;
    }
    const float denominator = float_block::sum(partial, sh.f);
    t.shift += logf(denominator) / t.scale;  // p = exp((z - max) / T) / denominator
  }
  return t;
}

// Writes output row first_row + blockIdx.x's sampling distribution to
// prepared[blockIdx.x]: the top-k renormalised probabilities (probs subjects) or
// softmax of the top-k-masked logits at temperature T (T = 0: one-hot at the
// lowest-index maximum).
__global__ void __launch_bounds__(kThreads)
    prepare_kernel(device_batch b, float* prepared, uint8_t* row_ok, int64_t first_row) {
  __shared__ row_shared sh;
  __shared__ select_shared sel;
  const int64_t r = first_row + blockIdx.x;
  check_parameters(b, r, r, b.num_output_rows);
  const int64_t in = input_row_of(b, r);
  const int64_t v = b.vocab_size;
  float* out = prepared + blockIdx.x * v;
  if (in < 0) {
    if (threadIdx.x == 0) row_ok[blockIdx.x] = 0;
    return;
  }
  const row_filters f = filters_of(b, r, in);
  const unsigned char* row = row_pointer(b, in);
  const bool logits = b.input_kind == SC_INPUT_LOGITS;
  const row_transform t =
      logits ? logits_transform(b, f, row, sh, sel) : probs_transform(b, f, row, sh, sel);
  const int64_t tiles = (v + kTile - 1) / kTile;
  for (int64_t i = 0; i < tiles; ++i) {
    const int64_t first = tile_first(i);
    float x[kItems];
    load_items(row, b.dtype, v, first, x, logits ? -INFINITY : 0.0f);
    for (int j = 0; j < kItems; ++j) {
      if (first + j >= v) continue;
      float p = 0.0f;
      if (!t.ok)
        p = 0.0f;
      else if (!logits)
        p = x[j] >= t.threshold ? x[j] * t.scale : 0.0f;
      else if (f.temperature == 0.0f)
        p = first + j == t.greedy_index ? 1.0f : 0.0f;
      else
        p = x[j] >= t.threshold ? expf((x[j] - t.shift) * t.scale) : 0.0f;
      out[first + j] = p;
    }
  }
  if (threadIdx.x == 0) row_ok[blockIdx.x] = t.ok ? 1 : 0;
}

}  // namespace

gpuError_t launch_dual_pivot(launch_request& q) {
  const auto rows = static_cast<size_t>(q.batch.num_output_rows);
  const bool deterministic = q.config->deterministic_scan;
  // The cluster kernel where it fits (it returns false for the other kinds).
  // (Not S16: its atomic renorm is planted in the one-block-per-row preparation.)
  if (gpuError_t status = gpuSuccess;
      q.batch.planted != defect::S16 && launch_dual_pivot_cluster(q, &status))
    return status;
  if (q.config->kind == algorithm::dual_pivot || q.config->kind == algorithm::dual_pivot_cluster) {
    dual_pivot_kernel<<<static_cast<unsigned>(rows), kThreads, 0, q.stream>>>(
        q.batch, deterministic, nullptr, nullptr, 0);
    return gpuGetLastError();
  }
  // Output rows are prepared and sampled a chunk at a time, so the scratch stays under
  // kPreparedBytes whatever the batch (one row per output row outgrew the device).
  const auto v = static_cast<size_t>(q.batch.vocab_size);
  const size_t chunk =
      std::max<size_t>(1, std::min<size_t>(rows, kPreparedBytes / (std::max<size_t>(v, 1) * 4)));
  float* prepared = nullptr;
  uint8_t* row_ok = nullptr;
  if (auto e = q.scratch->get(workspace::rows, chunk * v, q.capturing, &prepared); e != gpuSuccess)
    return e;
  if (auto e = q.scratch->get(workspace::row_stats, chunk, q.capturing, &row_ok); e != gpuSuccess)
    return e;
  for (size_t first = 0; first < rows; first += chunk) {
    const auto n = static_cast<unsigned>(std::min(chunk, rows - first));
    const auto first_row = static_cast<int64_t>(first);
    prepare_kernel<<<n, kThreads, 0, q.stream>>>(q.batch, prepared, row_ok, first_row);
    if (auto e = gpuGetLastError(); e != gpuSuccess) return e;
    dual_pivot_kernel<<<n, kThreads, 0, q.stream>>>(q.batch, deterministic, prepared, row_ok,
                                                    first_row);
    if (auto e = gpuGetLastError(); e != gpuSuccess) return e;
  }
  return gpuSuccess;
}

}  // namespace samplecheck::cuda
