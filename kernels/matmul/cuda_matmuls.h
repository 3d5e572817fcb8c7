// The CUDA matmul subjects (device memory, SC_MEMORY_CUDA):
//   cuda.persistent, cuda.segmented   the batch-invariant kernels of matmul_kernels.cu
//   cuda.segmented:B01 .. :B06        the same kernel with a planted defect
//   cuda.persistent_mma,              the tensor-core (mma.sync) kernels of
//   cuda.segmented_mma                mma_kernels.cu: same segment structure,
//                                     their own order (mma_kernels.h), no CPU twin
//   cuda.cublas                       cublasGemmEx with default heuristics: the
//                                     batch-variant control the suite must catch
// Built only when SAMPLECHECK_CUDA is on.
#pragma once

#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::matmul {

const std::vector<const sc_matmul*>& cuda_matmuls();

}  // namespace samplecheck::matmul
