// The floors under the sampler bench's rows: what launching and synchronising cost
// before a kernel reads a byte, and what reading the probabilities once costs. An
// empty kernel on one block, and on as many blocks as the split samplers launch at
// B = 1, so their rows can be read as floor + work; a kernel that only reads every
// row once, in the samplers' 4096-token chunks and 16-byte loads, so a sampler's
// row can be set against the least any one-pass sampler could take. Three more
// floors, each the least one family of samplers must pay whatever its code:
//   philox_read     the read once plus one Philox4x32-10 output a token (a Gumbel
//                   rule draws one number a token) and one division: a Gumbel
//                   sampler without its logarithms, reductions or arrivals;
//   one_block_read  one block a row reading its row once: one pass of the
//                   block-per-row kernels (FlashInfer's structure), which take a
//                   pass or more a rejection round;
//   sort_pairs      CUB's device radix sort of the B x V (value, token) pairs on
//                   32-bit keys: less than any sort-based sampler sorts.
#include <cub/device/device_radix_sort.cuh>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gpu_compat.h"
#include "reference/philox.h"
#include "tools/bench/sampler_gpu/floor_kernels.h"

namespace samplecheck::bench {
namespace {

constexpr int kThreads = 256;
constexpr int kStripes = 4;  // float4 loads a thread: 4096 floats a block

__global__ void empty_kernel() {}

// visit(q, token) for each of this thread's 16-byte stripes of its block's
// 4096-float chunk of row blockIdx.y (token: the stripe's first index in the row).
template <typename Visit>
__device__ __forceinline__ void for_each_stripe(const float* rows, long long v, Visit visit) {
  const long long row = blockIdx.y,
                  first = static_cast<long long>(blockIdx.x) * kThreads * kStripes * 4;
  const float4* x = reinterpret_cast<const float4*>(rows + row * v + first);
#pragma unroll
  for (int s = 0; s < kStripes; ++s) {
    const long long i = (static_cast<long long>(s) * kThreads + threadIdx.x) * 4;
    if (first + i + 4 <= v) visit(x[i / 4], first + i);
  }
}

// Each block sums its chunk and stores the sum, so no load can be dropped.
__global__ void __launch_bounds__(kThreads)
    read_once_kernel(const float* rows, long long v, float* sums) {
  float sum = 0.0f;
  for_each_stripe(rows, v, [&](const float4& q, long long) { sum += (q.x + q.y) + (q.z + q.w); });
  using block = samplecheck::gpu::block_primitives<float, kThreads>;
  __shared__ block::shared_type shared;
  sum = block::sum(sum, shared);
  if (threadIdx.x == 0) sums[blockIdx.y * gridDim.x + blockIdx.x] = sum;
}

// read_once_kernel's loads, each token also drawing its Philox output (stream
// seed = row, offset = token, as the samplers' rows) and keeping the largest p / u.
__global__ void __launch_bounds__(kThreads)
    philox_read_kernel(const float* rows, long long v, float* best) {
  float key = 0.0f;
  for_each_stripe(rows, v, [&](const float4& q, long long token) {
    uint32_t words[4];
    philox_stream(blockIdx.y, 0, static_cast<uint64_t>(token)).next_four(words);
    const float p[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int j = 0; j < 4; ++j)
      key = fmaxf(key, __fdividef(p[j], (words[j] + 0.5f) * 2.3283064365386963e-10f));
  });
  key = gpu_warp_max(key);
  if (threadIdx.x % 32 == 0)
    best[(blockIdx.y * gridDim.x + blockIdx.x) * (kThreads / 32) + threadIdx.x / 32] = key;
}

// One block of 1024 threads reads its row once, in 16-byte loads, and stores the sum.
constexpr int kRowThreads = 1024;
__global__ void __launch_bounds__(kRowThreads)
    one_block_read_kernel(const float* rows, long long v, float* sums) {
  const float4* x = reinterpret_cast<const float4*>(rows + blockIdx.x * v);
  float sum = 0.0f;
  for (long long i = threadIdx.x; i < v / 4; i += kRowThreads) {
    const float4 q = x[i];
    sum += (q.x + q.y) + (q.z + q.w);
  }
  sum = gpu_warp_sum(sum);
  if (threadIdx.x % 32 == 0) sums[blockIdx.x * (kRowThreads / 32) + threadIdx.x / 32] = sum;
}

// The grid of the chunked kernels: one block per chunk of kThreads x kStripes x 4
// floats (x) of each of the b rows (y).
dim3 chunk_grid(long long b, long long v) {
  const long long chunk = kThreads * kStripes * 4;
  return dim3(static_cast<unsigned>((v + chunk - 1) / chunk), static_cast<unsigned>(b));
}

}  // namespace

cudaError_t launch_empty(unsigned blocks, unsigned threads, cudaStream_t stream) {
  empty_kernel<<<blocks, threads, 0, stream>>>();
  return cudaGetLastError();
}

unsigned read_once_blocks(long long b, long long v) {
  const dim3 grid = chunk_grid(b, v);
  return grid.x * grid.y;
}

cudaError_t launch_read_once(const float* rows, long long b, long long v, float* sums,
                             cudaStream_t stream) {
  read_once_kernel<<<chunk_grid(b, v), kThreads, 0, stream>>>(rows, v, sums);
  return cudaGetLastError();
}

unsigned philox_read_outputs(long long b, long long v) {
  return read_once_blocks(b, v) * (kThreads / 32);
}

cudaError_t launch_philox_read(const float* rows, long long b, long long v, float* best,
                               cudaStream_t stream) {
  philox_read_kernel<<<chunk_grid(b, v), kThreads, 0, stream>>>(rows, v, best);
  return cudaGetLastError();
}

unsigned one_block_read_outputs(long long b) {
  return static_cast<unsigned>(b) * (kRowThreads / 32);
}

cudaError_t launch_one_block_read(const float* rows, long long b, long long v, float* sums,
                                  cudaStream_t stream) {
  one_block_read_kernel<<<static_cast<unsigned>(b), kRowThreads, 0, stream>>>(rows, v, sums);
  return cudaGetLastError();
}

sort_pairs_floor::sort_pairs_floor(const float* keys, long long n) : keys_(keys), n_(n) {
  const auto ok = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess)
      throw std::runtime_error(std::string("sort_pairs_floor: ") + what + ": " +
                               cudaGetErrorString(e));
  };
  ok(cudaMalloc(&keys_out_, n * sizeof(float)), "keys");
  ok(cudaMalloc(&tokens_, 2 * n * sizeof(int)), "tokens");
  ok(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes_, keys_, keys_out_, tokens_, tokens_ + n_,
                                     n_),
     "size");
  ok(cudaMalloc(&temp_, temp_bytes_), "temporary storage");
  std::vector<int> ids(n);
  for (long long i = 0; i < n; ++i) ids[i] = static_cast<int>(i);
  ok(cudaMemcpy(tokens_, ids.data(), n * sizeof(int), cudaMemcpyHostToDevice), "token ids");
}

sort_pairs_floor::~sort_pairs_floor() {
  cudaFree(keys_out_);
  cudaFree(tokens_);
  cudaFree(temp_);
}

cudaError_t sort_pairs_floor::launch(cudaStream_t stream) {
  size_t bytes = temp_bytes_;
  return cub::DeviceRadixSort::SortPairs(temp_, bytes, keys_, keys_out_, tokens_, tokens_ + n_, n_,
                                         0, static_cast<int>(8 * sizeof(float)), stream);
}

}  // namespace samplecheck::bench
