// Draws a peer's N samples from a subject (through the plugin ABI, as the peer's
// test would batch them) or from the exact distribution, and counts them.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kernels/samplecheck_plugin.h"
#include "suites/peers/peer_cases.h"

namespace samplecheck::peers {

struct draw_result {
  sample_tally tally;
  bool unsupported = false;  // the subject answered SC_ERR_UNSUPPORTED: case not applicable
  std::string error;         // any other failed call, with the subject's message; "" if none
};

// N draws of `prepared`'s row. Output r uses Philox stream (seed, r, offset 0):
// one generator for the whole test and a subsequence per draw, which is how the
// peers' kernels key a batch (FlashInfer: curand_init(seed, row, offset)).
// Filter parameters are passed for every row of the batch (input and output), as
// a scalar k or p broadcasts in the peers' APIs.
// All N draws go to the subject in one call (repeated_rows: N input rows).
draw_result draw_from_subject(const sc_sampler& subject, const prepared_case& prepared,
                              int64_t samples, uint64_t seed, batch_layout layout);

// N exact draws from `probs` (inverse CDF in double on Philox uniforms): the
// baseline row of the table, and the "exact sample" of the unit tests.
sample_tally draw_exact(std::span<const double> probs, int64_t samples, uint64_t seed);

}  // namespace samplecheck::peers
