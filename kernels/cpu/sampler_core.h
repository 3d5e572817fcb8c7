// What every CPU subject shares: argument checking, row decoding, the choice of each
// output row's Philox stream, and the planted-defect switch. Each subject supplies
// only its per-row arithmetic (a row_sampler).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/batch_rules.h"
#include "kernels/defect.h"
#include "kernels/samplecheck_plugin.h"
#include "reference/philox.h"

namespace samplecheck::cpu {

// The filters of one input row, already checked; a value at its "off" setting means
// off (kernels/batch_rules.h: top_k 0 or >= vocab_size, top_p 1, min_p 0,
// temperature 1; temperature 0 is greedy, for logits subjects).
struct row_params : rules::row_values {
  bool top_k_on(int64_t vocab_size) const { return rules::top_k_on(top_k, vocab_size); }
  bool top_p_on() const { return rules::top_p_on(top_p); }
  bool min_p_on() const { return rules::min_p_on(min_p); }
};

struct draw_result {
  int32_t token;  // may be outside [0, V) only for the S01 mutant, whose escape is the point
  bool valid;
};

// One subject's arithmetic. prepare() sees each (input row, parameter set) once per
// call, so work shared by the outputs of one row is done once; draw() runs once per
// output row on that row's own stream.
class row_sampler {
 public:
  virtual ~row_sampler() = default;
  // `row` is the decoded row (finite, non-negative probabilities with a positive sum,
  // or logits without NaN/+Inf and with one finite entry). False: nothing is left
  // after filtering, so the row is degenerate.
  virtual bool prepare(std::vector<float>& row, const row_params& params) = 0;
  virtual draw_result draw(philox_stream& stream) = 0;

  // Set by the driver before prepare(): the call's output rows (its batch size B), how
  // many calls this process made before it, and whether any row of the call has a filter
  // on. A correct subject reads none of them; the batch-variant (X02, S21) and
  // run-to-run-variant (S16) mutants do, as their kernels' grids, atomics arrival orders
  // and batch-wide code paths follow them.
  int64_t batch_size = 0;
  uint64_t call_number = 0;
  bool batch_filters = false;
};

// The fixed facts of one subject, shared by its sc_sampler and the driver.
struct subject_spec {
  const char* name;
  int32_t input_kind;                // SC_INPUT_*
  uint32_t filters;                  // SC_FILTER_*
  int32_t filter_order;              // SC_ORDER_*
  int32_t tie_policy;                // SC_TIE_*
  uint64_t philox_outputs_per_call;  // the per-row bound the sampler declares
  int64_t max_vocab_size;            // larger rows are SC_ERR_UNSUPPORTED; 0 = any
};

using sampler_factory = std::unique_ptr<row_sampler> (*)(defect planted);

struct subject_context {
  subject_spec spec;
  defect planted;
  sampler_factory make;
};

// The ABI entry point of every CPU subject: checks the whole batch before writing
// anything, then samples every output row. Never throws.
sc_status run_batch(const subject_context& subject, const sc_sample_batch* batch, char* error,
                    size_t error_size) noexcept;

}  // namespace samplecheck::cpu
