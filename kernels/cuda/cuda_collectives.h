// The in-tree CUDA all-reduce (ABI minor 6, kernels/samplecheck_plugin.h "Collectives"),
// memory space SC_MEMORY_CUDA: every rank's input and output is a device pointer on the one
// current GPU, and the problem's stream is a cudaStream_t (NULL: the default stream).
//   cuda.allreduce.fixed_order      every element summed in rank order 0, 1, ..., w - 1 by
//                                   one kernel, which writes the sum to every rank: what a
//                                   fixed-order all-reduce over w GPUs computes, emulated on
//                                   one (declares size and run invariance)
//   cuda.allreduce.fixed_order:X13  the planted defect (kernels/defect.h), as on the CPU
// float32 only. Building the list touches no GPU; a call is synchronous on its stream.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck {

const std::vector<const sc_collective*>& cuda_collectives();

// The most ranks one call takes: the kernel receives the rank pointers as one argument.
inline constexpr int32_t kCudaCollectiveMaxWorldSize = 64;

}  // namespace samplecheck
