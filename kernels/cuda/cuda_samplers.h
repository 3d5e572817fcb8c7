// The CUDA subjects (memory space SC_MEMORY_CUDA: every pointer of a batch is a
// device pointer, `stream` a cudaStream_t), and their mutants.
//
// Building the list touches no GPU (the descriptors are static data; device scratch
// is allocated on a subject's first call), so a caller may fork before CUDA starts.
//
// Calls are synchronous unless the stream is being captured: a call launches, then
// reads back the kernels' argument check and returns SC_ERR_INVALID_ARGUMENT naming
// the row and field. Under capture that read-back is skipped (a graph cannot wait on
// the host); bad rows still come out valid = 0. Capture a call only after one
// uncaptured call with the same shapes (the subject's scratch must not grow inside a
// graph). A subject serialises its own calls; it is not meant for several streams at
// once.
#pragma once

#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck {

// The correct subjects first (cuda.multinomial, cuda.multinomial_split, cuda.gumbel_probs,
// cuda.gumbel_logits, cuda.sort_filter, cuda.dual_pivot, cuda.dual_pivot_deterministic,
// cuda.dual_pivot_topk_first, cuda.dual_pivot_logits), then the mutants
// "<subject>:<id>" for S01, S02, S03, S04, S05, S08, S09, S10, S14.
const std::vector<const sc_sampler*>& cuda_samplers();

}  // namespace samplecheck
