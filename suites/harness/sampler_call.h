// One batched call to a sampler, with host-side buffers: the one ABI-call harness
// that the battery, the peers and the kernel tests use.
//
// run_call() moves the call to the sampler's memory space (CUDA when built with
// SAMPLECHECK_HAVE_CUDA) and back. Outputs are pre-filled with sentinels (Random123's
// habit), so an output row the subject never wrote cannot look like a valid draw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::harness {

// Host copies of every array of an sc_sample_batch. An empty optional array is
// passed as NULL.
struct sample_call {
  int32_t input_dtype = SC_DTYPE_F32;  // TEMPORARY field placement (lead)
  int64_t vocab_size = 0;
  int64_t num_input_rows = 0;
  std::vector<float> input;  // [num_input_rows * vocab_size], float32
  std::vector<int32_t> row_index;
  std::vector<int32_t> top_k;
  std::vector<float> top_p, min_p, temperature;
  std::vector<uint64_t> seed, subsequence, offset;  // seed/offset: one per output row
  // Filled by run_call.
  std::vector<int32_t> tokens;
  std::vector<uint8_t> valid;

  int64_t num_output_rows() const { return static_cast<int64_t>(seed.size()); }
};

// Sentinels written before the call: a token no sampler may return for a valid row,
// and a valid flag that is neither 0 nor 1.
inline constexpr int32_t kUnwrittenToken = INT32_MIN;
inline constexpr uint8_t kUnwrittenValid = 0xA5;

struct call_status {
  sc_status status = SC_OK;
  std::string message;  // the subject's message, or the harness's (CUDA, sentinels)
  bool ok() const { return status == SC_OK; }
};

// Runs the call synchronously. Never throws for subject failures; they come back as
// a status. After SC_OK every valid flag must have been written (else SC_ERR_INTERNAL
// naming the row).
call_status run_call(const sc_sampler& sampler, sample_call& call);

// Device availability for a memory space. Initialises CUDA for CUDA subjects, so the
// battery's parent process never calls it.
bool memory_space_available(int32_t memory_space, std::string* why);

}  // namespace samplecheck::harness

// TEMPORARY (lead): replaced by the harness's own dtype support on merge.
namespace samplecheck::harness {
std::vector<float> round_to_dtype(std::vector<float> values, int32_t dtype);
}
