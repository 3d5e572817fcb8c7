// Host entry points of the batch-invariant matmul kernels (CUDA, and HIP through
// kernels/gpu_compat.h). Pointers are device pointers; the reduction order is
// the one matmul_plan.h documents and cpu_emulation.cpp reproduces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul/matmul_plan.h"

namespace samplecheck::matmul {

struct device_problem {
  const uint16_t* a;       // [m, k] bf16
  const uint16_t* weight;  // [n, k] bf16
  const uint16_t* bias;    // [n] bf16 or null
  uint16_t* out;           // [m, n] bf16
  int64_t m, n, k;
};

// Bytes of fp32 workspace a split (or atomic-reduce) launch needs; 0 otherwise.
size_t workspace_bytes(const reduction_plan& plan, int64_t m, int64_t n);

// Enqueues the kernel(s) on `stream` (a cudaStream_t / hipStream_t). Returns the
// runtime's error code (0 = success) of the last launch.
int launch_matmul(const reduction_plan& plan, const launch_config& config,
                  const device_problem& problem, float* workspace, void* stream);

// The runtime's text for an error code of launch_matmul.
const char* gpu_error_text(int code);

}  // namespace samplecheck::matmul
