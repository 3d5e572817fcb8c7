// The row arithmetic of each CPU subject, built with its planted defect (none for
// the correct subjects). registry.cpp pairs each with its subject_spec.
#pragma once

#include <memory>

#include "kernels/cpu/sampler_core.h"

namespace samplecheck::cpu {

std::unique_ptr<row_sampler> make_multinomial(defect planted);
std::unique_ptr<row_sampler> make_sort_filter(defect planted);
std::unique_ptr<row_sampler> make_gumbel_probs(defect planted);
std::unique_ptr<row_sampler> make_gumbel_logits(defect planted);
std::unique_ptr<row_sampler> make_dual_pivot(defect planted);
std::unique_ptr<row_sampler> make_dual_pivot_topk_first(defect planted);

// Gumbel subjects take one stream output per token; this is the largest vocabulary
// their declared philox_outputs_per_call (1 << 18) covers.
inline constexpr int64_t kGumbelMaxVocab = int64_t{1} << 18;
// Dual-pivot rounds are capped (dual_pivot.cpp says why the cap is never reached);
// round r takes stream output offset + r.
inline constexpr int kDualPivotRoundCap = 320;

}  // namespace samplecheck::cpu
