#pragma once

#include <cuda_runtime.h>

namespace samplecheck::bench {

// An empty kernel of `blocks` x `threads` on `stream`.
cudaError_t launch_empty(unsigned blocks, unsigned threads, cudaStream_t stream);

// Reads b rows of v floats (16-byte aligned, v a multiple of 4) once, writing one
// float per 4096-float chunk to `sums` (read_once_blocks(b, v) of them).
unsigned read_once_blocks(long long b, long long v);
cudaError_t launch_read_once(const float* rows, long long b, long long v, float* sums, cudaStream_t stream);

}  // namespace samplecheck::bench
