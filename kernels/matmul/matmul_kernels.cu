// The persistent and segmented split-K kernels: SIMT, fp32 fma in the order of
// matmul_plan.h. One reduction group (32 threads, on HIP half a wavefront) owns a
// tile of TM x TN outputs; lane l of the group walks its K chunks for all of them.
#include "kernels/gpu_compat.h"
#include "kernels/matmul/matmul_kernels.h"
#include "reference/numeric.h"

namespace samplecheck::matmul {
namespace {

constexpr int kBlockThreads = 128;
constexpr int kGroupsPerBlock = kBlockThreads / kReductionLanes;

struct kernel_args {
  device_problem problem;
  reduction_plan plan;
  float* workspace;
  bool vector_loads;
};

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Eight consecutive bf16 of a row from element kb, widened exactly; elements at
// or past `valid` read as 0 and are never accumulated.
__device__ __forceinline__ void load_chunk(const uint16_t* row, int64_t kb, int valid,
                                           bool vector_loads, float (&v)[kChunk]) {
  if (vector_loads && valid == kChunk) {
    const uint4 q = *reinterpret_cast<const uint4*>(row + kb);
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = bits_to_float(words[i] << 16);
      v[2 * i + 1] = bits_to_float(words[i] & 0xffff0000u);
    }
  } else {
#pragma unroll
    for (int e = 0; e < kChunk; ++e) v[e] = e < valid ? bf16_to_float(row[kb + e]) : 0.0f;
  }
}

// This lane's fp32 fma sums over its K chunks of [begin, end), in increasing k,
// for every output of the tile.
template <int TM, int TN>
__device__ __forceinline__ void lane_sums(const uint16_t* const (&a_rows)[TM],
                                          const uint16_t* const (&w_rows)[TN], int64_t begin,
                                          int64_t end, int lane, bool vector_loads,
                                          float (&acc)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
#if !defined(__HIPCC__)
#pragma unroll 2
#endif
  for (int64_t kb = begin + static_cast<int64_t>(lane) * kChunk; kb < end; kb += kLaneRound) {
    const int valid = static_cast<int>(min64(kChunk, end - kb));
    float av[TM][kChunk];
    float wv[TN][kChunk];
#pragma unroll
    for (int i = 0; i < TM; ++i) load_chunk(a_rows[i], kb, valid, vector_loads, av[i]);
#pragma unroll
    for (int j = 0; j < TN; ++j) load_chunk(w_rows[j], kb, valid, vector_loads, wv[j]);
      // Fully unrolled with a predicate, never a loop bounded by `valid`: a
      // runtime index would move av and wv to local memory.
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      if (e < valid) {
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i][e], wv[j][e], acc[i][j]);
      }
    }
  }
}

// The group's butterfly over the lanes' sums (every lane gets every sum), added
// to the earlier segments' (copied for the first).
template <int TM, int TN>
__device__ __forceinline__ void fold_segment(const float (&acc)[TM][TN], bool ascending,
                                             bool first_segment, float (&total)[TM][TN]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      float v = acc[i][j];
#pragma unroll
      for (int step = 0; step < 5; ++step) {
        const int distance = ascending ? (1 << step) : (16 >> step);
        v = v + gpu_shfl_xor(v, distance);
      }
      total[i][j] = first_segment ? v : total[i][j] + v;
    }
}

// Every lane holds every total; lane (i * TN + j) % 32 stores element (i, j): the
// output (bias, one rounding) or, split, segment `first`'s partial.
template <int TM, int TN>
__device__ __forceinline__ void store_tile(const kernel_args& args, const float (&total)[TM][TN],
                                           int64_t m0, int64_t n0, int lane, int32_t first) {
  const device_problem& p = args.problem;
  const reduction_plan& plan = args.plan;
  const int64_t plane = p.m * p.n;
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int64_t m = m0 + i, n = n0 + j;
      if ((i * TN + j) % kReductionLanes != lane || m >= p.m || n >= p.n) continue;
      const int64_t index = m * p.n + n;
      float v = total[i][j];
      if (plan.split) {
        if (plan.round_partials) v = bf16_to_float(float_to_bf16(v));
        if (plan.bias_in_partial0 && first == 0 && p.bias != nullptr)
          v = v + bf16_to_float(p.bias[n]);
        if (plan.atomic_reduce)
          atomicAdd(args.workspace + index, v);
        else
          args.workspace[static_cast<int64_t>(first) * plane + index] = v;
      } else {
        if (p.bias != nullptr) v = v + bf16_to_float(p.bias[n]);
        p.out[index] = float_to_bf16(v);
      }
    }
}

template <int TM, int TN>
__global__ void __launch_bounds__(kBlockThreads) tile_kernel(kernel_args args) {
  const device_problem& p = args.problem;
  const reduction_plan& plan = args.plan;
  const int lane = threadIdx.x % kReductionLanes;
  const int group = threadIdx.x / kReductionLanes;
  // Split launches put the segment in the fastest-varying block index, so the
  // programs of one tile run side by side (as SGLang's split launch does).
  const int64_t segments_in_grid = plan.split ? plan.num_segments : 1;
  const int64_t tile_x = static_cast<int64_t>(blockIdx.x) / segments_in_grid;
  const int64_t n0 = (tile_x * kGroupsPerBlock + group) * TN;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * TM;
  if (n0 >= p.n) return;  // the whole group leaves together
  const int32_t first = plan.split ? static_cast<int32_t>(blockIdx.x % segments_in_grid) : 0;
  const int32_t last = plan.split ? first + 1 : plan.num_segments;

  // Rows past the edge read a valid row; their results are never stored.
  const uint16_t* a_rows[TM];
  const uint16_t* w_rows[TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) a_rows[i] = p.a + min64(m0 + i, p.m - 1) * p.k;
#pragma unroll
  for (int j = 0; j < TN; ++j) w_rows[j] = p.weight + min64(n0 + j, p.n - 1) * p.k;

  float acc[TM][TN];
  float total[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = total[i][j] = 0.0f;

  for (int32_t s = first; s < last; ++s) {
    const int64_t begin = min64(static_cast<int64_t>(s) * plan.segment_length, p.k);
    const int64_t end = min64(begin + plan.segment_length, p.k);
    lane_sums<TM, TN>(a_rows, w_rows, begin, end, lane, args.vector_loads, acc);
    fold_segment<TM, TN>(acc, plan.butterfly_ascending, s == first, total);
  }
  store_tile<TM, TN>(args, total, m0, n0, lane, first);
}

// Adds the segment partials in segment order, then the bias, then rounds.
__global__ void segment_reduce_kernel(kernel_args args) {
  const device_problem& p = args.problem;
  const int64_t plane = p.m * p.n;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t index = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; index < plane;
       index += stride) {
    float v = args.workspace[index];
    if (!args.plan.atomic_reduce)
      for (int32_t s = 1; s < args.plan.num_segments; ++s)
        v = v + args.workspace[s * plane + index];
    if (p.bias != nullptr && !args.plan.bias_in_partial0)
      v = v + bf16_to_float(p.bias[index % p.n]);
    p.out[index] = float_to_bf16(v);
  }
}

template <int TM, int TN>
void launch_tiles(const kernel_args& args, gpuStream_t stream) {
  const int64_t groups_n = ceil_div(args.problem.n, TN);
  const int64_t segments_in_grid = args.plan.split ? args.plan.num_segments : 1;
  const dim3 grid(static_cast<unsigned>(ceil_div(groups_n, kGroupsPerBlock) * segments_in_grid),
                  static_cast<unsigned>(ceil_div(args.problem.m, TM)), 1u);
  tile_kernel<TM, TN><<<grid, kBlockThreads, 0, stream>>>(args);
}

}  // namespace

size_t workspace_bytes(const reduction_plan& plan, int64_t m, int64_t n) {
  if (!plan.split) return 0;
  const int64_t planes = plan.atomic_reduce ? 1 : plan.num_segments;
  return static_cast<size_t>(planes * m * n) * sizeof(float);
}

int launch_matmul(const reduction_plan& plan, const launch_config& config,
                  const device_problem& problem, float* workspace, void* stream_handle) {
  const auto stream = static_cast<gpuStream_t>(stream_handle);
  const auto address_bits =
      reinterpret_cast<uintptr_t>(problem.a) | reinterpret_cast<uintptr_t>(problem.weight);
  const kernel_args args{problem, plan, workspace,
                         problem.k % kChunk == 0 && address_bits % 16 == 0};
  if (plan.split && plan.atomic_reduce) {
    if (const gpuError_t e =
            gpuMemsetAsync(workspace, 0, workspace_bytes(plan, problem.m, problem.n), stream);
        e != gpuSuccess)
      return static_cast<int>(e);
  }
  if (config.tile_m == 1 && config.tile_n == 4)
    launch_tiles<1, 4>(args, stream);
  else if (config.tile_m == 1 && config.tile_n == 8)
    launch_tiles<1, 8>(args, stream);
  else if (config.tile_m == 4 && config.tile_n == 8)
    launch_tiles<4, 8>(args, stream);
  else
    launch_tiles<8, 4>(args, stream);
  if (plan.split) {
    const int64_t plane = problem.m * problem.n;
    const unsigned blocks =
        static_cast<unsigned>(ceil_div(plane, 256) < 65535 ? ceil_div(plane, 256) : 65535);
    segment_reduce_kernel<<<blocks, 256, 0, stream>>>(args);
  }
  return static_cast<int>(gpuGetLastError());
}

const char* gpu_error_text(int code) { return gpuGetErrorString(static_cast<gpuError_t>(code)); }

}  // namespace samplecheck::matmul
