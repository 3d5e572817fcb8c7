#pragma once

#include <cuda_runtime.h>

namespace samplecheck::bench {

// An empty kernel of `blocks` x `threads` on `stream`.
cudaError_t launch_empty(unsigned blocks, unsigned threads, cudaStream_t stream);

// Reads b rows of v floats (16-byte aligned, v a multiple of 4) once, writing one
// float per 4096-float chunk to `sums` (read_once_blocks(b, v) of them).
unsigned read_once_blocks(long long b, long long v);
cudaError_t launch_read_once(const float* rows, long long b, long long v, float* sums,
                             cudaStream_t stream);

// read_once with one Philox output and one division a token; philox_read_outputs
// floats in `best` (one a warp).
unsigned philox_read_outputs(long long b, long long v);
cudaError_t launch_philox_read(const float* rows, long long b, long long v, float* best,
                               cudaStream_t stream);

// One 1024-thread block a row reads it once; one_block_read_outputs(b) floats in `sums`.
unsigned one_block_read_outputs(long long b);
cudaError_t launch_one_block_read(const float* rows, long long b, long long v, float* sums,
                                  cudaStream_t stream);

// CUB's device radix sort of n (float key, int token) pairs; the buffers are made
// once, so launch() is capturable.
class sort_pairs_floor {
 public:
  sort_pairs_floor(const float* keys, long long n);
  ~sort_pairs_floor();
  sort_pairs_floor(const sort_pairs_floor&) = delete;
  sort_pairs_floor& operator=(const sort_pairs_floor&) = delete;
  cudaError_t launch(cudaStream_t stream);

 private:
  const float* keys_;
  long long n_;
  float* keys_out_ = nullptr;
  int* tokens_ = nullptr;
  void* temp_ = nullptr;
  size_t temp_bytes_ = 0;
};

}  // namespace samplecheck::bench
