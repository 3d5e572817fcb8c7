// One sampling call's buffers for the CPU sampler tests, with the outputs pre-filled
// with sentinels (Random123's habit) so a row the subject never wrote cannot pass.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/cpu_samplers.h"

namespace samplecheck::cpu_test {

inline constexpr int32_t kTokenSentinel = -7;
inline constexpr uint8_t kValidSentinel = 0xAA;

inline const sc_sampler& sampler_named(std::string_view name) {
  const sc_sampler* found = nullptr;
  for (const sc_sampler* s : cpu_samplers())
    if (name == s->name) found = s;
  if (found == nullptr) FAIL("no CPU sampler named " << name);
  return *found;
}

struct call {
  int32_t dtype = SC_DTYPE_F32;
  std::vector<float> input;     // f32 rows
  std::vector<uint16_t> input16;  // bf16/f16 rows, used when dtype is not f32
  int64_t vocab = 0;
  int64_t num_input = 0;
  std::vector<int32_t> row_index, top_k;  // empty: NULL
  std::vector<float> top_p, min_p, temperature;
  std::vector<uint64_t> seed, subsequence, offset;
  std::vector<int32_t> token;
  std::vector<uint8_t> valid;
  std::string error;

  sc_sample_batch view() {
    token.assign(seed.size(), kTokenSentinel);
    valid.assign(seed.size(), kValidSentinel);
    sc_sample_batch b{};
    b.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    b.input = dtype == SC_DTYPE_F32 ? static_cast<const void*>(input.data()) : input16.data();
    b.input_dtype = dtype;
    b.num_input_rows = num_input;
    b.vocab_size = vocab;
    b.num_output_rows = static_cast<int64_t>(seed.size());
    b.row_index = row_index.empty() ? nullptr : row_index.data();
    b.top_k = top_k.empty() ? nullptr : top_k.data();
    b.top_p = top_p.empty() ? nullptr : top_p.data();
    b.min_p = min_p.empty() ? nullptr : min_p.data();
    b.temperature = temperature.empty() ? nullptr : temperature.data();
    b.seed = seed.data();
    b.subsequence = subsequence.empty() ? nullptr : subsequence.data();
    b.offset = offset.data();
    b.out_token = token.data();
    b.out_valid = valid.data();
    return b;
  }

  sc_status run(const sc_sampler& s, const sc_sample_batch& b) {
    char buffer[512] = "untouched";
    const sc_status status = s.sample(s.context, &b, buffer, sizeof buffer);
    error = buffer;
    return status;
  }

  // Runs and requires success with every row written.
  void sample(const sc_sampler& s) {
    const sc_sample_batch b = view();
    const sc_status status = run(s, b);
    INFO(s.name << ": " << error);
    REQUIRE(status == SC_OK);
    for (size_t r = 0; r < token.size(); ++r) REQUIRE(valid[r] != kValidSentinel);
  }
};

// `draws` outputs of one row through the row-index map, each with its own seed.
inline call draws_of(const std::vector<float>& row, int64_t draws, uint64_t first_seed = 1) {
  call c;
  c.input = row;
  c.vocab = static_cast<int64_t>(row.size());
  c.num_input = 1;
  c.row_index.assign(draws, 0);
  for (int64_t r = 0; r < draws; ++r) c.seed.push_back(first_seed + r);
  c.offset.assign(draws, 0);
  return c;
}

// Several rows, output r on input row r (row_index NULL), seed first_seed + r.
inline call rows_of(const std::vector<std::vector<float>>& rows, uint64_t first_seed = 1) {
  call c;
  c.vocab = static_cast<int64_t>(rows.at(0).size());
  c.num_input = static_cast<int64_t>(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) {
    c.input.insert(c.input.end(), rows[r].begin(), rows[r].end());
    c.seed.push_back(first_seed + r);
  }
  c.offset.assign(rows.size(), 0);
  return c;
}

// Tokens per id; an id outside [0, V) lands in the extra last cell.
inline std::vector<int64_t> histogram(const call& c) {
  std::vector<int64_t> counts(static_cast<size_t>(c.vocab) + 1, 0);
  for (size_t r = 0; r < c.token.size(); ++r) {
    REQUIRE(c.valid[r] == 1);
    const int32_t t = c.token[r];
    ++counts[t >= 0 && t < c.vocab ? t : c.vocab];
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
