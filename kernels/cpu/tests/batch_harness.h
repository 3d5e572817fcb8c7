// One sampling call for the CPU sampler tests, through the harness's own buffers
// (suites/harness/host_call.h): sentinels in the outputs (Random123's habit) so a row
// the subject never wrote cannot pass, guard rows after them, the input encoded to
// its dtype, and the same judgement of the outputs the battery makes.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/cpu_samplers.h"
#include "suites/harness/host_call.h"

namespace samplecheck::cpu_test {

using harness::call_fault;
using harness::kUnwrittenToken;
using harness::kUnwrittenValid;

inline const sc_sampler& sampler_named(std::string_view name) {
  const sc_sampler* found = nullptr;
  for (const sc_sampler* s : cpu_samplers())
    if (name == s->name) found = s;
  if (found == nullptr) FAIL("no CPU sampler named " << name);
  return *found;
}

// A harness::sample_call plus what the last run left: the subject's message and the
// harness's judgement. Copies never share buffers; a copy starts with no view.
struct call : harness::sample_call {
  std::string error;            // the subject's message buffer after the call
  harness::call_status status;  // the harness's judgement of the last run

  call() = default;
  call(const call& o) : sample_call(o), error(o.error), status(o.status) {}
  call& operator=(const call& o) {
    sample_call::operator=(o), error = o.error, status = o.status, host_.reset();
    return *this;
  }

  // The batch over this call's arrays and fresh guarded outputs; a test may spoil a
  // field of it, or of this call's arrays, before run().
  sc_sample_batch view() {
    host_ = std::make_unique<harness::host_call>(*this);
    return host_->view();
  }

  // Calls the subject on `b` (from view()), copies the outputs into tokens / valid and
  // judges them. Returns what the subject returned.
  sc_status run(const sc_sampler& s, const sc_sample_batch& b) {
    REQUIRE(host_ != nullptr);
    char buffer[512] = "untouched";
    const sc_status returned = s.sample(s.context, &b, buffer, sizeof buffer);
    error = buffer;
    status = host_->finish(returned, buffer);
    return returned;
  }

  // Runs and requires a sound call: SC_OK, no guard row touched, every flag 0 or 1. A
  // token outside [0, V) is let through for the mutant tests to count (S01).
  void sample(const sc_sampler& s) {
    status = harness::run_host_call(s, *this);
    error = status.message;
    INFO(s.name << ": " << status.describe());
    REQUIRE((status.ok() || status.fault == call_fault::out_of_range));
  }

 private:
  std::unique_ptr<harness::host_call> host_;
};

// `draws` outputs of one row through the row-index map, each with its own seed.
inline call draws_of(const std::vector<float>& row, int64_t draws, uint64_t first_seed = 1) {
  call c;
  c.input = row;
  c.vocab_size = static_cast<int64_t>(row.size());
  c.num_input_rows = 1;
  c.row_index.assign(draws, 0);
  for (int64_t r = 0; r < draws; ++r) c.seed.push_back(first_seed + r);
  c.offset.assign(draws, 0);
  return c;
}

// Several rows, output r on input row r (row_index NULL), seed first_seed + r.
inline call rows_of(const std::vector<std::vector<float>>& rows, uint64_t first_seed = 1) {
  call c;
  c.vocab_size = static_cast<int64_t>(rows.at(0).size());
  c.num_input_rows = static_cast<int64_t>(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    c.input.insert(c.input.end(), rows[r].begin(), rows[r].end());
    c.seed.push_back(first_seed + r);
  }
  c.offset.assign(rows.size(), 0);
  return c;
}

// Runs the same call on the host and on its mutant (the mutants tests).
struct pair_run {
  call host, mutant;
  pair_run(const call& c, const char* host_name, const char* id) : host(c), mutant(c) {
    host.sample(sampler_named(host_name));
    mutant.sample(sampler_named(std::string(host_name) + ":" + id));
  }
};

inline int equal_rows(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  int same = 0;
  for (size_t r = 0; r < a.size(); ++r) same += a[r] == b[r];
  return same;
}

// Tokens per id; an id outside [0, V) lands in the extra last cell.
inline std::vector<int64_t> histogram(const call& c) {
  std::vector<int64_t> counts(static_cast<size_t>(c.vocab_size) + 1, 0);
  for (size_t r = 0; r < c.tokens.size(); ++r) {
    REQUIRE(c.valid[r] == 1);
    const int32_t t = c.tokens[r];
    ++counts[t >= 0 && t < c.vocab_size ? t : c.vocab_size];
  }
  return counts;
}

// Logits whose softmax is `probs` (zero probability -> -inf).
inline std::vector<float> log_of(const std::vector<float>& probs) {
  std::vector<float> z;
  for (const float p : probs) z.push_back(std::log(p));
  return z;
}

inline bool is_logits(const sc_sampler& s) { return s.input_kind == SC_INPUT_LOGITS; }

// The six correct subjects (names without a ':').
inline std::vector<const sc_sampler*> correct_samplers() {
  std::vector<const sc_sampler*> out;
  for (const sc_sampler* s : cpu_samplers())
    if (std::string_view(s->name).find(':') == std::string_view::npos) out.push_back(s);
  return out;
}

}  // namespace samplecheck::cpu_test
