// The CPU matmul subjects: emulations of the CUDA kernels' reduction order
// (cpu.persistent, cpu.segmented) and the planted defects B01-B06 as
// "cpu.segmented:<id>". All run on host memory and follow the launch table of
// matmul_plan.h, so the whole matmul suite, mutants included, runs in CI.
#pragma once

#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::matmul {

const std::vector<const sc_matmul*>& cpu_matmuls();

}  // namespace samplecheck::matmul
