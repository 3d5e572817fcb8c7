// Test support for the CUDA subjects. A batch is a harness::sample_call, and a call
// goes through the harness (suites/harness): device copies, sentinels and guard rows,
// and the same judgement of the outputs the battery makes. A test that captures a call
// in a CUDA graph and replays it after rewriting seeds and offsets in place holds a
// harness::device_call.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cuda/cuda_samplers.h"
#include "kernels/samplecheck_plugin.h"
#include "suites/harness/device_call.h"
#include "suites/harness/sampler_call.h"

namespace samplecheck::cuda_test {

using harness::check_cuda;
using harness::sample_call;

// What one call left: the harness's judgement and the output rows.
struct call_result {
  harness::call_status status;
  std::vector<int32_t> token;
  std::vector<uint8_t> valid;
};

// One synchronous call through the harness, on a copy of `call` (so a batch can be
// sent to a host and its mutant alike). A token outside [0, V) still comes back in
// `token`: the mutant tests count them (S01).
inline call_result run(const sc_sampler& s, sample_call call) {
  call_result r;
  r.status = harness::run_call(s, call);
  r.token = std::move(call.tokens), r.valid = std::move(call.valid);
  return r;
}

// Appends an input row.
inline void add_row(sample_call& call, const std::vector<float>& row) {
  call.vocab_size = static_cast<int64_t>(row.size());
  call.input.insert(call.input.end(), row.begin(), row.end());
  ++call.num_input_rows;
}

// The rows handed over as `dtype`: rounded to it (the harness sends exact values only).
inline void store_as(sample_call& call, int32_t dtype) {
  call.input = harness::round_to_dtype(call.input, dtype);
  call.input_dtype = dtype;
}

inline const sc_sampler& subject(std::string_view name) {
  for (const sc_sampler* s : cuda_samplers())
    if (name == s->name) return *s;
  throw std::runtime_error("no CUDA subject named " + std::string(name));
}

inline bool is_mutant(const sc_sampler& s) {
  return std::string_view(s.name).find(':') != std::string_view::npos;
}

// Seeds 1000 + r, offsets 0: every output row its own request.
inline void distinct_streams(sample_call& h, int64_t outputs) {
  h.seed.resize(outputs), h.offset.assign(outputs, 0);
  for (int64_t r = 0; r < outputs; ++r) h.seed[r] = 1000 + static_cast<uint64_t>(r);
}

// log(p), -inf where p == 0: a logits row whose softmax is p.
inline std::vector<float> logits_of(const std::vector<float>& p) {
  std::vector<float> z(p.size());
  for (size_t i = 0; i < p.size(); ++i) z[i] = p[i] > 0.0f ? std::log(p[i]) : -INFINITY;
  return z;
}

// A smooth row over v tokens (p_i proportional to 1 + (i * 7919 mod 97)), every
// token possible and no two neighbours equal: draws from it rarely collide.
inline std::vector<float> spread_row(int64_t v) {
  std::vector<float> p(v);
  double total = 0;
  for (int64_t i = 0; i < v; ++i) total += p[i] = 1.0f + static_cast<float>((i * 7919) % 97);
  for (auto& x : p) x = static_cast<float>(x / total);
  return p;
}

// `outputs` draws from one spread row of v tokens (its logits for a logits
// subject), each output on its own stream.
inline sample_call one_row(const sc_sampler& s, int64_t v, int64_t outputs) {
  sample_call h;
  const auto p = spread_row(v);
  add_row(h, s.input_kind == SC_INPUT_LOGITS ? logits_of(p) : p);
  h.row_index.assign(outputs, 0);
  distinct_streams(h, outputs);
  return h;
}

// ---------------------------------------------------------------------------
// For tools/bench/sampler_gpu (not this folder's), which still spells a batch as these
// tests once did: rows appended to `input` with num_input_rows left 0. The harness's
// types under the old names; delete once the bench uses sample_call and device_call.
template <class T>
using device_array = harness::device_buffer<T>;
using host_batch = sample_call;
class device_batch : public harness::device_call {
 public:
  explicit device_batch(sample_call h) : device_call(counted(std::move(h))) {}

 private:
  static sample_call counted(sample_call h) {
    if (h.num_input_rows == 0 && h.vocab_size > 0)
      h.num_input_rows = static_cast<int64_t>(h.input.size()) / h.vocab_size;
    return h;
  }
};

}  // namespace samplecheck::cuda_test
