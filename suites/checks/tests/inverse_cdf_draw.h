// The fake samplers' one draw (repro_evidence_test, ties_routes_test): output row j's token by
// inverse CDF over a row's cumulative weights, u from the row's own Philox request
// (seed, subsequence or j when the batch has none, offset), so the draws are the check's
// stream and a fake fails only by the weights it planted.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/samplecheck_plugin.h"
#include "reference/philox.h"

namespace samplecheck::testing {

inline int32_t inverse_cdf_draw(const sc_sample_batch* b, int64_t j,
                                const std::vector<double>& cdf) {
  philox_stream s(b->seed[j], b->subsequence != nullptr ? b->subsequence[j] : j, b->offset[j]);
  const double u = (static_cast<double>(s.next()) + 0.5) / 4294967296.0 * cdf.back();
  return static_cast<int32_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
}

}  // namespace samplecheck::testing
