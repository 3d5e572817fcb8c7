// CPU emulation of the batch-invariant matmul kernels: the reduction order of
// matmul_plan.h, operation for operation, so cpu.<kernel> and cuda.<kernel>
// produce the same bits.
#pragma once

#include <cstdint>

#include "kernels/matmul/matmul_plan.h"

namespace samplecheck::matmul {

// out[m, n] = bf16(fold of segment sums (+ bias)) for row-major bf16 operands
// (a [m, k], weight [n, k], bias [n] or null, out [m, n]). `arrival_seed` picks
// the order in which an atomic reduce (B06) sees the partials: the emulation of
// a race, so the caller passes a fresh value per call.
void emulate_matmul(const reduction_plan& plan, int64_t m, int64_t n, int64_t k, const uint16_t* a,
                    const uint16_t* weight, const uint16_t* bias, uint16_t* out,
                    uint64_t arrival_seed);

}  // namespace samplecheck::matmul
