// The floors under the sampler bench's rows: what launching and synchronising cost
// before a kernel reads a byte. An empty kernel on one block, and on as many blocks
// as the split samplers launch at B = 1, so their rows can be read as floor + work.
#include "tools/bench/sampler_gpu/floor_kernels.h"

namespace samplecheck::bench {
namespace {
__global__ void empty_kernel() {}
}  // namespace

cudaError_t launch_empty(unsigned blocks, unsigned threads, cudaStream_t stream) {
  empty_kernel<<<blocks, threads, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace samplecheck::bench
