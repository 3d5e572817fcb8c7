#pragma once

#include <cuda_runtime.h>

namespace samplecheck::bench {

// An empty kernel of `blocks` x `threads` on `stream`.
cudaError_t launch_empty(unsigned blocks, unsigned threads, cudaStream_t stream);

}  // namespace samplecheck::bench
