// A row held across a thread-block cluster (dual_pivot_cluster.cu): the sizes, the
// shared state each block publishes to the others, and the fold of the blocks'
// records. CUDA only (clusters are sm_90).
#pragma once

#include <cooperative_groups.h>

#include "kernels/cuda/row_ops.cuh"

namespace samplecheck::cuda {

namespace cg = cooperative_groups;

constexpr int kClusterThreads = 512;
// Stripes (16-byte loads) a thread holds: 6 (12,288 tokens a block, 13 blocks a
// row at V = 151,936) or, at larger batch, 12 (24,576 a block, 7 a row). The H200
// holds only 7 clusters of 13 at once (Nsight Compute), so B = 64 queued for about
// ten waves; clusters of 7 hold about twice as many rows.
template <int Stripes>
constexpr int held_of = Stripes* kItems;  // tokens a thread holds
template <int Stripes>
constexpr int64_t block_tokens = int64_t{kClusterThreads} * held_of<Stripes>;
constexpr int kMaxCluster = 16;  // non-portable size: the launcher opts in

using cluster_float = gpu::block_primitives<float, kClusterThreads>;

// What a block publishes to the rest of its cluster is a pivot_mass (row_ops.cuh):
// round 0's holds the chunk's total (mass0), max (mass1) and any bad entry
// (count0). Two of each, so that one cluster barrier per exchange suffices (a slot
// is rewritten only after every block has passed the barrier that follows its
// reading).
struct total_max_bad {
  __device__ __forceinline__ pivot_mass operator()(const pivot_mass& a, const pivot_mass& b) const {
    return {a.mass0 + b.mass0, fmaxf(a.mass1, b.mass1), a.count0 | b.count0, 0};
  }
};
// Round 0's fold over one warp, for gpu::block_fold.
struct warp_total_max_bad {
  __device__ __forceinline__ pivot_mass operator()(const pivot_mass& r) const {
    return {gpu_warp_sum(r.mass0), gpu_warp_max(r.mass1),
            static_cast<int>(gpu_warp_or(static_cast<unsigned>(r.count0))), 0};
  }
};

// The crossing token and p[token], one 8-byte word: one remote load reads both.
struct alignas(8) crossing_pick {
  int token;
  float value;
};

struct cluster_shared {
  cluster_float::shared_type f;
  pivot_mass staged[kClusterThreads / sc_warp_size];  // gpu::block_fold's
  pivot_mass record[2];                               // published: this block's chunk record
  crossing_pick pick[2];                              // published by the crossing block
  pivot_mass fetched[kMaxCluster];  // every block's record of this exchange, in chunk order
  pivot_mass totals;                // the cluster's fold, read by thread 0
  float above[2][kMaxCluster];      // each chunk's mass above pivot 0 / 1
  float chunk_mass[kMaxCluster];    // each chunk's mass above the current `low`
  crossing_pick crossing;           // this round's, read from the crossing block
  held_search_shared search;
  // The preparation's exchanges (double-buffered like `record`).
  float value[2];
  float gathered[kMaxCluster];
  unsigned histogram[2][256];
  unsigned cluster_histogram[256];
  radix_prefix found;
};

// The cluster's records of `slot` folded in chunk order (so every block gets the
// same floats) into sh.totals and sh.above; `round0` folds (total, max, bad)
// instead of sums. Thread c reads block c's record (the C remote reads overlap,
// where one reader would pay C round trips), then thread 0 folds them locally.
__device__ inline void fold_records(cg::cluster_group& cluster, cluster_shared& sh, int slot,
                                    int blocks, bool round0) {
  if (threadIdx.x < static_cast<unsigned>(blocks))
    sh.fetched[threadIdx.x] = *cluster.map_shared_rank(&sh.record[slot], threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) {
    pivot_mass t{0.0f, 0.0f, 0, 0};
    for (int c = 0; c < blocks; ++c) {
      const pivot_mass r = sh.fetched[c];
      sh.above[0][c] = r.mass0;
      sh.above[1][c] = r.mass1;
      t = round0 ? total_max_bad()(t, r) : sum_pivot_masses()(t, r);
    }
    sh.totals = t;
  }
  __syncthreads();
}

template <int Stripes>
__device__ __forceinline__ int64_t held_token(int64_t begin, int j) {
  return begin + (j / kItems) * (kClusterThreads * kItems) + threadIdx.x * kItems + j % kItems;
}

}  // namespace samplecheck::cuda
