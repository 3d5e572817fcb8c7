// The floors under the sampler bench's rows: what launching and synchronising cost
// before a kernel reads a byte, and what reading the probabilities once costs. An
// empty kernel on one block, and on as many blocks as the split samplers launch at
// B = 1, so their rows can be read as floor + work; a kernel that only reads every
// row once, in the samplers' 4096-token chunks and 16-byte loads, so a sampler's
// row can be set against the least any one-pass sampler could take.
#include "tools/bench/sampler_gpu/floor_kernels.h"

namespace samplecheck::bench {
namespace {

constexpr int kThreads = 256;
constexpr int kStripes = 4;  // float4 loads a thread: 4096 floats a block

__global__ void empty_kernel() {}

// Each block sums its chunk and stores the sum, so no load can be dropped.
__global__ void __launch_bounds__(kThreads) read_once_kernel(const float* rows, long long v, float* sums) {
  const long long row = blockIdx.y, first = static_cast<long long>(blockIdx.x) * kThreads * kStripes * 4;
  const float4* x = reinterpret_cast<const float4*>(rows + row * v + first);
  float sum = 0.0f;
#pragma unroll
  for (int s = 0; s < kStripes; ++s) {
    const long long i = (static_cast<long long>(s) * kThreads + threadIdx.x) * 4;
    if (first + i + 4 <= v) {
      const float4 q = x[i / 4];
      sum += (q.x + q.y) + (q.z + q.w);
    }
  }
  for (int lanes = 16; lanes > 0; lanes /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, lanes);
  __shared__ float warps[kThreads / 32];
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) sum += warps[w];
    sums[row * gridDim.x + blockIdx.x] = sum;
  }
}

}  // namespace

cudaError_t launch_empty(unsigned blocks, unsigned threads, cudaStream_t stream) {
  empty_kernel<<<blocks, threads, 0, stream>>>();
  return cudaGetLastError();
}

unsigned read_once_blocks(long long b, long long v) {
  const long long chunk = kThreads * kStripes * 4;
  return static_cast<unsigned>(b * ((v + chunk - 1) / chunk));
}

cudaError_t launch_read_once(const float* rows, long long b, long long v, float* sums, cudaStream_t stream) {
  const long long chunk = kThreads * kStripes * 4;
  const dim3 grid(static_cast<unsigned>((v + chunk - 1) / chunk), static_cast<unsigned>(b));
  read_once_kernel<<<grid, kThreads, 0, stream>>>(rows, v, sums);
  return cudaGetLastError();
}

}  // namespace samplecheck::bench
