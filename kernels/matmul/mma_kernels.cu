// The tensor-core batch-invariant matmul: mma.sync m16n8k16 bf16 -> fp32, fed by
// ldmatrix from a multi-stage shared-memory pipeline (cp.async or TMA). The reduction
// order, and why it does not depend on M or on the launch, is in mma_kernels.h.
//
// A block owns a BM x BN output tile and one segment (split) or all of them
// (unsplit); in a split launch the last of a tile's blocks to finish folds the
// tile, so every launch is one kernel. Its WARPS_M x WARPS_N warps own (BM /
// WARPS_M) x (BN / WARPS_N) outputs each, as MI x NI mma tiles of 16 x 8. The
// block streams the BK-wide k-tiles (64 or 128) of A [BM, BK] and W [BN, BK] of
// its segments, one segment after the other, through STAGES shared slots as one
// sequence; each segment's sum starts afresh from +0 (seed 003's design note).
//
// Synchronization, all of it: (1) a slot is refilled (cp.async or scalar
// stores) only after the __syncthreads that follows every warp's last ldmatrix
// of it: iteration g refills the slot tile g - 1 used, after the barrier of
// iteration g; (2) cp.async.wait_group STAGES - 2 then __syncthreads before a
// tile is read: groups are committed one per prologue step and one per
// iteration (empty ones too), so group g holds tile g of the sequence whatever
// the segments' tile counts; (3) split: every thread stores its partials, a
// barrier, then thread 0 counts the block with one acq_rel atomic (gpu_arrive:
// its release is cumulative, so it publishes the stores the barrier ordered
// before it); in the block that completes the count the barrier hands thread
// 0's acquire to every thread, which reads every plane from L2.
// TMA tiles replace (1) and (2) by the copy engine: thread 0 refills tile g - 1's
// slot after the barrier of iteration g (all ldmatrix reads of it done), arming
// the slot's mbarrier with the stage's byte count; every thread waits on that
// mbarrier's phase (the slot's fill count, mod 2) before reading the tile.
// In-block split (GROUPS = 4): each warp group runs (1) and (2) on its own
// slots and mbarriers with its own named barrier (1 + group) in place of
// __syncthreads; then a block barrier (every group past its last tile), groups
// 1.. store their sums in their own slots, a block barrier, group 0 folds.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <climits>

#include "kernels/gpu_compat.h"
#include "kernels/matmul/mma_kernels.h"
#include "kernels/matmul/mma_tile.cuh"
#include "reference/numeric.h"

namespace samplecheck::matmul {
namespace {

static_assert(kMmaKTile == 64, "the 128-wide k-tiles rely on segments being multiples of 64");

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, int BK, bool Tma, int GROUPS,
          load_path Path>
__global__ void __launch_bounds__(
    GROUPS* WARPS_M* WARPS_N * 32,
    (tile_shape<BM, BN, WARPS_M, WARPS_N, STAGES, BK, Tma, GROUPS>::kMinBlocks))
    mma_tile_kernel(const __grid_constant__ mma_args args) {
  using block_type = mma_block<BM, BN, WARPS_M, WARPS_N, STAGES, BK, Tma, GROUPS, Path>;
  extern __shared__ __align__(128)
      uint16_t shared[];  // per group: STAGES x (A [BM][BK], W [BN][BK])
  __shared__ uint64_t
      stage_full[block_type::kCopyEngine ? GROUPS * STAGES : 1];  // TMA: a stage's tile has landed
  block_type k(args, static_cast<uint32_t>(__cvta_generic_to_shared(shared)),
               static_cast<uint32_t>(__cvta_generic_to_shared(stage_full)));
  typename block_type::fragments total;
  k.sum_segments(total);
  if constexpr (GROUPS > 1)
    if (!k.fold_groups(total, shared)) return;
  typename block_type::fragments part;  // the split fold's scratch
  if (!args.split) {
    k.write_outputs(total, part);
    return;
  }
  if (!k.publish_plane(total, part)) return;
  k.fold_planes(total, part);
  k.write_outputs(total, part);
}

// The driver's tensor-map encoder, found once through the runtime (no link to
// libcuda); null when the driver has none.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto encoder = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      function = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  return encoder;
}

// A [rows][k] bf16 operand as 64-column x box_rows boxes in the 128-byte swizzle
// of `swizzle` above; zeros past its rows and columns.
bool encode_operand(CUtensorMap& map, const uint16_t* base, int64_t rows, int64_t k, int box_rows) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t row_bytes[1] = {static_cast<cuuint64_t>(k) * 2};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kMmaKTile), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t steps[2] = {1, 1};
  return tensor_map_encoder()(
             &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<uint16_t*>(base), dims,
             row_bytes, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The tile's rows and columns come from mma_tile_dims, the table the workspace
// size is computed from, so the two cannot disagree.
template <mma_tile Tile, int WARPS_M, int WARPS_N, int STAGES, int BK = 64>
cudaError_t launch_shape(mma_args args, bool vector, cudaStream_t stream) {
  constexpr int BM = mma_tile_dims(Tile).rows, BN = mma_tile_dims(Tile).cols;
  constexpr bool kTma = mma_tile_uses_tma(Tile);
  constexpr int G = mma_tile_groups(Tile);
  using Shape = tile_shape<BM, BN, WARPS_M, WARPS_N, STAGES, BK, kTma, G>;
  using kernel_type = void (*)(mma_args);
  constexpr load_path kEngine =
      kTma ? load_path::tma : load_path::cp_async;  // no TMA kernel for the other tiles
  const kernel_type kernels[3] = {
      mma_tile_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, BK, kTma, G, load_path::scalar>,
      mma_tile_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, BK, kTma, G, load_path::cp_async>,
      mma_tile_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, BK, kTma, G, kEngine>};
  // Above 48 KiB of dynamic shared memory needs an opt-in, once per kernel.
  const auto opt_in = [](kernel_type kernel) {
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                int{Shape::kSharedBytes});
  };
  static const cudaError_t opt_ins[3] = {opt_in(kernels[0]), opt_in(kernels[1]),
                                         opt_in(kernels[2])};
  const device_problem& p = args.p;
  constexpr int64_t kCoordinateLimit = int64_t{1} << 31;  // TMA box coordinates are int32
  const bool tma = kTma && vector && p.m < kCoordinateLimit && p.n < kCoordinateLimit &&
                   p.k < kCoordinateLimit && tensor_map_encoder() != nullptr &&
                   encode_operand(args.map_a, p.a, p.m, p.k, BM) &&
                   encode_operand(args.map_w, p.weight, p.n, p.k, BN);
  const int path = tma ? 2 : vector ? 1 : 0;
  if (opt_ins[path] != cudaSuccess) return opt_ins[path];
  const int64_t blocks =
      ceil_div(p.m, BM) * ceil_div(p.n, BN) * (args.split ? args.num_segments : 1);
  if (blocks > INT_MAX) return cudaErrorInvalidConfiguration;  // gridDim.x's limit, 2^31 - 1
  kernels
      [path]<<<static_cast<unsigned>(blocks), Shape::kBlockThreads, Shape::kSharedBytes, stream>>>(
          args);
  return cudaGetLastError();
}

// The launch of one tile configuration: warp grid and stages per tile, warps of
// 16-64 x 16-32 outputs; stages as deep as the occupancy each tile is meant for
// allows (mma_kernels.h).
cudaError_t launch_tile(mma_tile tile, const mma_args& args, bool vector, cudaStream_t stream) {
  switch (tile) {
    case mma_tile::m16n32:
      return launch_shape<mma_tile::m16n32, 1, 2, 6>(args, vector, stream);
    case mma_tile::m16n64:
      return launch_shape<mma_tile::m16n64, 1, 4, 6>(args, vector, stream);
    case mma_tile::m16n128:
      return launch_shape<mma_tile::m16n128, 1, 4, 5>(args, vector, stream);
    case mma_tile::m32n64:
      return launch_shape<mma_tile::m32n64, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n32:
      return launch_shape<mma_tile::m64n32, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n64:
      return launch_shape<mma_tile::m64n64, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n64s6:
      return launch_shape<mma_tile::m64n64s6, 2, 2, 6>(args, vector, stream);
    case mma_tile::m64n64w8:
      return launch_shape<mma_tile::m64n64w8, 4, 2, 6>(args, vector, stream);
    case mma_tile::m64n128:
      return launch_shape<mma_tile::m64n128, 2, 4, 4>(args, vector, stream);
    case mma_tile::m64n128s8:
      return launch_shape<mma_tile::m64n128s8, 2, 4, 8>(args, vector, stream);
    case mma_tile::m128n128:
      return launch_shape<mma_tile::m128n128, 2, 4, 4>(args, vector, stream);
    // 128-wide k-tiles: 256 contiguous bytes per W row per stage, half the barriers.
    case mma_tile::m16n64k128:
      return launch_shape<mma_tile::m16n64k128, 1, 4, 4, 128>(args, vector, stream);
    case mma_tile::m32n64k128:
      return launch_shape<mma_tile::m32n64k128, 2, 2, 4, 128>(args, vector, stream);
    case mma_tile::m64n64k128:
      return launch_shape<mma_tile::m64n64k128, 2, 2, 3, 128>(args, vector, stream);
    // In-block split: 4 warp groups of 2 x 2 (1 x 2, 1 x 4) warps, one per segment,
    // each with 48 KB of stages: 192 KB, one 512-thread block per SM.
    case mma_tile::m16n32g4:
      return launch_shape<mma_tile::m16n32g4, 1, 2, 8>(args, vector, stream);
    case mma_tile::m16n64g4:
      return launch_shape<mma_tile::m16n64g4, 1, 4, 4>(args, vector, stream);
    case mma_tile::m32n32g4:
      return launch_shape<mma_tile::m32n32g4, 2, 2, 6>(args, vector, stream);
    case mma_tile::m32n64g4:
      return launch_shape<mma_tile::m32n64g4, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n32g4:
      return launch_shape<mma_tile::m64n32g4, 2, 2, 4>(args, vector, stream);
    case mma_tile::m64n64g4:
      return launch_shape<mma_tile::m64n64g4, 2, 2, 3>(args, vector, stream);
    case mma_tile::m32n96g4:
      return launch_shape<mma_tile::m32n96g4, 2, 2, 3>(args, vector, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

int launch_mma_matmul(const reduction_plan& plan, mma_tile tile, const device_problem& problem,
                      uint32_t* tile_counters, float* partials, void* stream_handle) {
  const mma_args args{
      {},      {}, problem, plan.segment_length, plan.num_segments, mma_splits(plan), tile_counters,
      partials};
  const auto address_bits =
      reinterpret_cast<uintptr_t>(problem.a) | reinterpret_cast<uintptr_t>(problem.weight);
  // K < 2^32: the vector loads add a 32-bit k offset to each row pointer.
  const bool vector =
      problem.k % 8 == 0 && problem.k < (int64_t{1} << 32) && address_bits % 16 == 0;
  return static_cast<int>(
      launch_tile(tile, args, vector, static_cast<cudaStream_t>(stream_handle)));
}

}  // namespace samplecheck::matmul
