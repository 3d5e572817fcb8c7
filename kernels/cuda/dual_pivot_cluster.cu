// Dual-pivot rejection (the rule of dual_pivot.cu) with one row spread over a
// thread-block cluster: cuda.dual_pivot_cluster (joint filters), and, after their
// preparation on the held row (cluster_prepare.cuh), cuda.dual_pivot_topk_first and
// cuda.dual_pivot_logits.
//
// One block per row streams the whole row through one SM every round (about
// 50-90 us at V = 151,936 on an H200). Here a cluster of C <= 16 blocks on C SMs
// owns a row, each block 12,288 (or, at larger batch, 24,576) tokens held in
// registers from the one read of the row; every later pass is arithmetic on
// registers. A round:
//   1. every block knows each chunk's mass above `low` (from the previous
//      exchange), so all pick the same crossing chunk for u in chunk order;
//   2. the crossing block searches its registers (first token in its scan order
//      whose running mass passes u, with the guards of row_ops.cuh) and publishes
//      (token, p[token]) in its shared memory;
//   3. every block measures its mass and count above both pivots and publishes
//      them; every block reads all C records through distributed shared memory and
//      folds them in chunk order, so all blocks take the same decision.
// Inverse CDF over chunk order, then a fixed permutation inside a chunk, is an
// inverse CDF over a fixed order of the vocabulary: the draw's law is the same.
//
// CUDA only (clusters are sm_90); other GPUs, vocabularies above 16 x 24,576 and
// batches above 65,535 rows fall back to the block-per-row kernel.
#include "kernels/cuda/launch.h"

#if defined(SC_GPU_CUDA) && defined(__CUDACC__)
#include <atomic>

#include "kernels/cuda/cluster_prepare.cuh"
#include "kernels/cuda/cluster_row.cuh"
#include "reference/uniform.h"

namespace samplecheck::cuda {
namespace {

// The crossing token among the held tokens above `low` (row_ops.cuh's guarded
// search), or -1.
template <int Stripes>
__device__ inline int64_t search_held(const float (&x)[held_of<Stripes>], int64_t begin, int64_t v,
                                      float low, float u, cluster_shared& sh) {
  const int position = held_crossing<kClusterThreads>(
      x, low, u, [&](int j) { return held_token<Stripes>(begin, j) < v; }, sh.f, sh.search);
  if (position < 0) return -1;
  const int thread = position / held_of<Stripes>, j = position % held_of<Stripes>;
  return begin + (j / kItems) * (kClusterThreads * kItems) + thread * kItems + j % kItems;
}

// The block's share of the row into x, prepared (Mode), and its chunk record for
// exchange 0: total (mass0), max (mass1) and health (count0) of this thread's tokens.
template <int Stripes, held_preparation Mode>
__device__ __forceinline__ pivot_mass hold_row(cg::cluster_group& cluster, cluster_shared& sh,
                                               int blocks, const device_batch& b, int64_t r,
                                               int64_t in, int64_t begin,
                                               float (&x)[held_of<Stripes>], bool& prepared_ok) {
  pivot_mass mine{0.0f, 0.0f, 0, 0};
  const int64_t v = b.vocab_size;
  const unsigned char* row = row_pointer(b, in);
#pragma unroll
  for (int s = 0; s < Stripes; ++s) {
    float part[kItems];
    load_items(row, b.dtype, v, held_token<Stripes>(begin, s * kItems), part, 0.0f);
#pragma unroll
    for (int j = 0; j < kItems; ++j) x[s * kItems + j] = part[j];
  }
  if constexpr (Mode != held_preparation::none)
    prepared_ok =
        prepare_held<Mode, Stripes>(cluster, sh, blocks, x, begin, v, filters_of(b, r, in));
#pragma unroll
  for (int j = 0; j < held_of<Stripes>; ++j) {
    mine.count0 |= !(x[j] >= 0.0f) || isinf(x[j]);  // NaN fails >=
    mine.mass0 += x[j];
    mine.mass1 = fmaxf(mine.mass1, x[j]);
  }
  return mine;
}

// Steps 1 and 2 of a round: the crossing chunk of u, by the same float sums in
// every block; its block searches and publishes the token and p[token], which every
// block then reads into sh.crossing.
template <int Stripes>
__device__ __forceinline__ void draw_candidate(cg::cluster_group& cluster, cluster_shared& sh,
                                               int slot, int blocks, int rank,
                                               const float (&x)[held_of<Stripes>], int64_t begin,
                                               int64_t v, float low, float u) {
  int crossing = -1, last_with_mass = -1;
  float before = 0.0f, running = 0.0f;
  for (int c = 0; c < blocks; ++c) {
    const float m = sh.chunk_mass[c];
    if (m > 0.0f) {
      last_with_mass = c;
      if (crossing < 0 && running + m > u) crossing = c, before = running;
    }
    running += m;
  }
  if (crossing < 0) crossing = last_with_mass, before = running - sh.chunk_mass[last_with_mass];
  if (rank == crossing) {
    const int64_t t = search_held<Stripes>(x, begin, v, low, fmaxf(u - before, 0.0f), sh);
    if (threadIdx.x == 0) sh.pick[slot] = crossing_pick{static_cast<int>(t), 0.0f};
    __syncthreads();
#pragma unroll
    for (int j = 0; j < held_of<Stripes>; ++j)  // the thread holding the token publishes p[token]
      if (held_token<Stripes>(begin, j) == t) sh.pick[slot].value = x[j];
  }
  cluster.sync();  // also orders the writes above before other blocks' reads
  if (threadIdx.x == 0) sh.crossing = *cluster.map_shared_rank(&sh.pick[slot], crossing);
  __syncthreads();
}

// Step 3: the row's mass and count above both pivots, chunk by chunk, folded in
// chunk order (sh.totals, and each chunk's in sh.above).
template <int Stripes>
__device__ __forceinline__ pivot_mass masses_above(cg::cluster_group& cluster, cluster_shared& sh,
                                                   int slot, int blocks,
                                                   const float (&x)[held_of<Stripes>], float pivot0,
                                                   float pivot1) {
  pivot_mass mine{0.0f, 0.0f, 0, 0};
#pragma unroll
  for (int j = 0; j < held_of<Stripes>; ++j) {
    if (x[j] > pivot0) mine.mass0 += x[j], ++mine.count0;
    if (x[j] > pivot1) mine.mass1 += x[j], ++mine.count1;
  }
  mine = gpu::block_fold<kClusterThreads>(mine, pivot_mass{0.0f, 0.0f, 0, 0},
                                          warp_sum_pivot_masses(), sh.staged);
  if (threadIdx.x == 0) sh.record[slot] = mine;
  cluster.sync();
  fold_records(cluster, sh, slot, blocks, false);
  return sh.totals;
}

// The joint filters' test of a pivot: the count and mass above it, and the pivot
// against min-p's bound. A preparation has applied top-k already (top-k first).
struct pivot_rule {
  bool top_k, top_p, min_p;
  int32_t k;
  float top_p_mass, min_p_value;
  __device__ bool any() const { return top_k || top_p || min_p; }
  __device__ bool accept(float pivot, float above, int count) const {
    return (!top_k || count < k) && (!top_p || above < top_p_mass) &&
           (!min_p || pivot >= min_p_value);
  }
};

// Exchange 0: each chunk's total (mass0), max (mass1) and health (count0), folded
// in chunk order; every chunk's mass above `low` = 0 is its total.
__device__ __forceinline__ pivot_mass exchange_totals(cg::cluster_group& cluster,
                                                      cluster_shared& sh, int blocks,
                                                      pivot_mass mine) {
  const int slot = 0;
  mine = gpu::block_fold<kClusterThreads>(mine, pivot_mass{0.0f, 0.0f, 0, 0}, warp_total_max_bad(),
                                          sh.staged);
  if (threadIdx.x == 0) sh.record[slot] = mine;
  cluster.sync();
  fold_records(cluster, sh, slot, blocks, true);
  const pivot_mass totals = sh.totals;
  if (threadIdx.x < static_cast<unsigned>(blocks))
    sh.chunk_mass[threadIdx.x] = sh.above[0][threadIdx.x];
  return totals;
}

// Step 3 and the decision on the candidate p[token] = pivot0: true when the filters
// keep it; otherwise the search narrows to (pivot0, pivot1] if pivot1 passes, else
// to above pivot1, and every chunk's mass above the new `low` is set.
template <int Stripes>
__device__ __forceinline__ bool judge_pivot(cg::cluster_group& cluster, cluster_shared& sh,
                                            int slot, int blocks,
                                            const float (&x)[held_of<Stripes>],
                                            const pivot_rule& rule, float pivot0, float& low,
                                            float& high, float& mass) {
  const float pivot1 = pivot0 + (high - pivot0) * 0.5f;
  const pivot_mass t = masses_above<Stripes>(cluster, sh, slot, blocks, x, pivot0, pivot1);
  if (rule.accept(pivot0, t.mass0, t.count0)) return true;
  const bool narrow = rule.accept(pivot1, t.mass1, t.count1);  // low = pivot0, high = pivot1
  low = narrow ? pivot0 : pivot1;
  if (narrow) high = pivot1;
  mass = narrow ? t.mass0 : t.mass1;
  if (threadIdx.x < static_cast<unsigned>(blocks))
    sh.chunk_mass[threadIdx.x] = sh.above[narrow ? 0 : 1][threadIdx.x];
  return false;
}

template <int Stripes, held_preparation Mode>
__global__ void __launch_bounds__(kClusterThreads, 1) dual_pivot_cluster_kernel(device_batch b) {
  __shared__ cluster_shared sh;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int blocks = static_cast<int>(cluster.num_blocks());
  const int64_t r = blockIdx.y, v = b.vocab_size, begin = rank * block_tokens<Stripes>;
  check_parameters(b, r, r * blocks + rank, static_cast<int64_t>(gridDim.y) * blocks);
  const int64_t in = input_row_of(b, r);  // the same in every block of the cluster
  float x[held_of<Stripes>];
  pivot_mass mine{0.0f, 0.0f, 0, 0};
  bool prepared_ok = true;
  if (in >= 0) mine = hold_row<Stripes, Mode>(cluster, sh, blocks, b, r, in, begin, x, prepared_ok);
  int slot = 0;
  const pivot_mass totals = exchange_totals(cluster, sh, blocks, mine);
  float mass = totals.mass0, high = totals.mass1;
  const bool bad = totals.count0 != 0;
  const row_filters f = in >= 0 ? filters_of(b, r, in) : row_filters{};
  const bool usable = in >= 0 && !bad && mass > 0.0f && !isinf(mass) && f.usable && prepared_ok;
  const pivot_rule rule{Mode == held_preparation::none && f.top_k_on(v),
                        f.top_p_on(),
                        f.min_p_on(),
                        f.top_k,
                        f.top_p * mass,
                        f.min_p * high};
  philox_stream stream = usable ? stream_of(b, r, in) : philox_stream(0, 0, 0);
  float low = 0.0f;
  int64_t token = -1;
  bool accepted = false;
  for (int round = 0; usable && round < kDualPivotRoundCap && !accepted; ++round) {
    slot ^= 1;
    __syncthreads();  // chunk_mass is written above and at the end of each round
    const float u = uniform_open_one(stream.next()) * mass;
    draw_candidate<Stripes>(cluster, sh, slot, blocks, rank, x, begin, v, low, u);
    token = sh.crossing.token;
    const float pivot0 = sh.crossing.value;
    if (token < 0 || token >= v) break;
    if (!rule.any()) {
      accepted = true;
      break;
    }
    accepted = judge_pivot<Stripes>(cluster, sh, slot, blocks, x, rule, pivot0, low, high, mass);
  }
  if (rank == 0 && threadIdx.x == 0) {
    if (in < 0)
      b.out_valid[r] = 0;
    else
      write_result(b, r, static_cast<int32_t>(token),
                   usable && accepted && token >= 0 && token < v);
  }
  cluster.sync();  // no block leaves while another may still read its shared memory
}

// The launch of `rows` clusters of `blocks` blocks (the attribute lives beside the
// config that points to it, so neither is copied).
struct cluster_launch {
  cudaLaunchAttribute attribute{};
  cudaLaunchConfig_t config{};
  cluster_launch(int blocks, int64_t rows, cudaStream_t stream) {
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = static_cast<unsigned>(blocks);
    attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
    config.gridDim = dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(rows), 1);
    config.blockDim = dim3(kClusterThreads, 1, 1);
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
  }
  cluster_launch(const cluster_launch&) = delete;
  cluster_launch& operator=(const cluster_launch&) = delete;
};

// How many clusters of `blocks` blocks of this kernel the GPU holds at once (0: the
// size does not fit), asked once per size: non-portable sizes above 8 and the
// packing of clusters into GPCs depend on the part.
template <int Stripes, held_preparation Mode>
int active_clusters(int blocks) {
  static std::atomic<int> known[kMaxCluster + 1] = {};  // 0 unknown, -1 none, n > 0
  int state = known[blocks].load();
  if (state == 0) {
    const cluster_launch one(blocks, 1, nullptr);
    int clusters = 0;
    const auto kernel = dual_pivot_cluster_kernel<Stripes, Mode>;
    const bool ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed,
                                         1) == cudaSuccess &&
                    cudaOccupancyMaxActiveClusters(&clusters, kernel, &one.config) == cudaSuccess &&
                    clusters > 0;
    (void)cudaGetLastError();  // a refused size is an answer, not a sticky error
    state = ok ? clusters : -1;
    known[blocks].store(state);
  }
  return state > 0 ? state : 0;
}

template <int Stripes>
int64_t cluster_blocks(int64_t v) {
  return (v + block_tokens<Stripes> - 1) / block_tokens<Stripes>;
}

template <int Stripes, held_preparation Mode>
bool launch_clusters(launch_request& q, int64_t blocks, gpuError_t* status) {
  const cluster_launch launch(static_cast<int>(blocks), q.batch.num_output_rows, q.stream);
  *status = cudaLaunchKernelEx(&launch.config, dual_pivot_cluster_kernel<Stripes, Mode>, q.batch);
  return true;
}

template <held_preparation Mode>
bool launch_with(launch_request& q, gpuError_t* status) {
  const device_batch& b = q.batch;
  const int64_t rows = b.num_output_rows;
  if (rows > 65535) return false;
  // The cluster width follows V alone, never the batch: each width scans the vocabulary
  // in its own order (and one block a row in another), so a width chosen from the batch
  // size made a request's token depend on its batchmates (batch_invariance;
  // docs/h200/2026-12-01.md). Narrow clusters where V fits one, else wide ones, else the
  // block-per-row kernels.
  const int64_t narrow = cluster_blocks<6>(b.vocab_size);
  const int narrow_fit =
      narrow <= kMaxCluster ? active_clusters<6, Mode>(static_cast<int>(narrow)) : 0;
  if (narrow_fit > 0) return launch_clusters<6, Mode>(q, narrow, status);
  if constexpr (Mode == held_preparation::softmax_logits) {
    return false;  // its wide clusters spill (448 bytes a thread)
  } else {
    const int64_t wide = cluster_blocks<12>(b.vocab_size);
    const int wide_fit =
        wide <= kMaxCluster ? active_clusters<12, Mode>(static_cast<int>(wide)) : 0;
    if (wide_fit == 0) return false;
    return launch_clusters<12, Mode>(q, wide, status);
  }
}

}  // namespace

bool launch_dual_pivot_cluster(launch_request& q, gpuError_t* status) {
  switch (q.config->kind) {
    case algorithm::dual_pivot_cluster:
      return launch_with<held_preparation::none>(q, status);
    case algorithm::dual_pivot_topk_first:
      return launch_with<held_preparation::top_k_renorm>(q, status);
    case algorithm::dual_pivot_logits:
      return launch_with<held_preparation::softmax_logits>(q, status);
    default:
      return false;
  }
}

}  // namespace samplecheck::cuda

#else  // HIP: no clusters; the block-per-row kernel serves the subject.

namespace samplecheck::cuda {
bool launch_dual_pivot_cluster(launch_request&, gpuError_t*) { return false; }
}  // namespace samplecheck::cuda

#endif
