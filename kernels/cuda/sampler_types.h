// Plain types shared by the CUDA kernels and their host-side driver (no CUDA here:
// the registry and the bench include it from ordinary C++).
#pragma once

#include <cstdint>

#include "kernels/batch_rules.h"
#include "kernels/defect.h"
#include "kernels/samplecheck_plugin.h"

namespace samplecheck::cuda {

// A parameter the kernels refused, reported as (row, field) to the host.
using bad_field = rules::field;

// Which algorithm a subject runs.
enum class algorithm : int32_t {
  multinomial,            // inverse CDF over the row, one block per row
  multinomial_split,      // inverse CDF, a row split over several blocks
  gumbel_probs,           // argmax p / q, q ~ Exp(1) clamped to FLT_MIN (SGLang v0.5.20)
  gumbel_logits,          // argmax z / T + Gumbel
  sort_filter,            // segmented radix sort, scan, top-k / top-p / min-p, sample
  dual_pivot,             // FlashInfer's sorting-free rejection, joint filters
  dual_pivot_cluster,     // the same rule, a row spread over a thread-block cluster
  dual_pivot_topk_first,  // top-k renorm pass, then dual pivot for top-p / min-p
  dual_pivot_logits,      // top-k mask on logits, softmax, then dual pivot
};

struct subject_config {
  algorithm kind;
  defect planted = defect::none;
  bool deterministic_scan = false;  // dual pivot: thread-serial tile sums, see inverse_cdf.cuh
};

// Stream outputs per call and row (the ABI's philox_outputs_per_call).
inline constexpr uint64_t kGumbelOutputsPerCall = uint64_t{1} << 18;  // one per token, V <= 2^18
inline constexpr int64_t kGumbelMaxVocab = int64_t{1} << 18;
inline constexpr int kDualPivotRoundCap = 320;  // round r takes stream output offset + r

}  // namespace samplecheck::cuda
