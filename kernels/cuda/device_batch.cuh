// What every CUDA sampler kernel shares: the batch as kernel arguments, per-row
// parameter checks (kernels/batch_rules.h) that report (row, field) back to the
// host, the choice of each output row's Philox stream, and the planted-defect
// switch. The stream rule and every mutant's deviation mirror
// kernels/cpu/sampler_core.cpp exactly, so a CPU subject and its GPU twin draw from
// the same numbers.
#pragma once

#include <cfloat>
#include <cstdint>

#include "kernels/cuda/sampler_types.h"
#include "kernels/gpu_compat.h"
#include "reference/numeric.h"
#include "reference/philox.h"

namespace samplecheck::cuda {

// The host's view of one call, passed by value to every kernel.
struct device_batch {
  const unsigned char* input;
  storage_type dtype;
  int32_t input_kind;  // SC_INPUT_*
  int64_t num_input_rows, vocab_size, num_output_rows;
  const int32_t* row_index;
  const int32_t* top_k;
  const float* top_p;
  const float* min_p;
  const float* temperature;
  const uint64_t* seed;
  const uint64_t* subsequence;
  const uint64_t* offset;
  int32_t* out_token;
  uint8_t* out_valid;
  uint32_t filters;  // the subject's SC_FILTER_* bits: a parameter outside them is unsupported
  defect planted;
  unsigned long long* error;  // (row << 8 | field), atomicMin: the lowest bad row wins
};

__device__ __forceinline__ void report(const device_batch& b, int64_t row, bad_field field) {
  atomicMin(b.error, (static_cast<unsigned long long>(row) << 8) | static_cast<unsigned>(field));
}

// Checks the input rows block `rank` of `blocks` is responsible for (a strided share,
// so every input row is checked once per call, whether or not an output reads it),
// and the row_index entry of output row `r`, by kernels/batch_rules.h's rules, the
// ones the CPU subjects apply on the host.
__device__ inline void check_parameters(const device_batch& b, int64_t r, int64_t rank,
                                        int64_t blocks) {
  if (threadIdx.x != 0) return;
  // Every field is loaded before any is checked: the checks' atomics would
  // otherwise order the loads one memory round trip apart, on the path of the
  // block's first barrier.
  const int32_t index = b.row_index != nullptr ? b.row_index[r] : 0;
  for (int64_t i = rank; i < b.num_input_rows; i += blocks) {
    rules::row_values v;
    if (b.top_k != nullptr) v.top_k = b.top_k[i];
    if (b.top_p != nullptr) v.top_p = b.top_p[i];
    if (b.min_p != nullptr) v.min_p = b.min_p[i];
    if (b.temperature != nullptr) v.temperature = b.temperature[i];
    const bad_field bad = rules::row_refusal(v, b.vocab_size, b.input_kind, b.filters);
    if (bad != bad_field::none) report(b, i, bad);
  }
  if (b.row_index != nullptr && !rules::row_index_valid(index, b.num_input_rows))
    report(b, r, bad_field::row_index);
}

// The filters of one row after the checks; off values as in the ABI.
struct row_filters {
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float temperature = 1.0f;
  bool usable = true;  // false: a parameter of this row is invalid (already reported)
  __device__ bool top_k_on(int64_t v) const { return rules::top_k_on(top_k, v); }
  __device__ bool top_p_on() const { return rules::top_p_on(top_p); }
  __device__ bool min_p_on() const { return rules::min_p_on(min_p); }
};

// The input row output `r` samples from, or -1 when row_index[r] is out of range.
__device__ __forceinline__ int64_t input_row_of(const device_batch& b, int64_t r) {
  if (b.row_index == nullptr) return r;
  const int32_t i = b.row_index[r];
  return (i >= 0 && i < b.num_input_rows) ? i : -1;
}

// The opening of a kernel with one block per output row: the block's share of the
// parameter checks, then in `in` the input row output `r` samples from. False (and
// thread 0 has marked the output invalid) when its row_index entry is out of range.
__device__ __forceinline__ bool open_output_row(const device_batch& b, int64_t r, int64_t& in) {
  check_parameters(b, r, r, gridDim.x);
  in = input_row_of(b, r);
  if (in < 0) {
    if (threadIdx.x == 0) b.out_valid[r] = 0;
    return false;
  }
  return true;
}

// Parameters come from the input row (the S09 mutant reads the output row, wrapped
// into range as the CPU mutant does, so the sanitizers stay clean).
__device__ inline row_filters filters_of(const device_batch& b, int64_t r, int64_t input_row) {
  const int64_t i = b.planted == defect::S09 ? r % b.num_input_rows : input_row;
  row_filters f;
  if (b.top_k) f.top_k = b.top_k[i];
  if (b.top_p) f.top_p = b.top_p[i];
  if (b.min_p) f.min_p = b.min_p[i];
  if (b.temperature) f.temperature = b.temperature[i];
  f.usable = rules::row_valid({f.top_k, f.top_p, f.min_p, f.temperature});
  return f;
}

// The stream of output row r: curand_init(seed[r], subsequence[r], offset[r]).
// Each mutant breaks it the way its bug did (see kernels/cpu/sampler_core.cpp).
struct stream_key {
  uint64_t seed, subsequence, offset;
};

__device__ inline stream_key stream_key_of(const device_batch& b, int64_t r, int64_t input_row) {
  int64_t source = r;
  if (b.planted == defect::S03) source = 0;
  if (b.planted == defect::S10) {
    // One draw per input row, broadcast to every output that shares it.
    for (int64_t j = 0; j < r; ++j)
      if (input_row_of(b, j) == input_row) {
        source = j;
        break;
      }
  }
  stream_key key{b.seed[source], b.subsequence ? b.subsequence[source] : 0, b.offset[source]};
  if (b.planted == defect::S02) key.offset = 0;  // frozen at capture
  if (b.planted == defect::S04) key.subsequence = static_cast<uint64_t>(r);
  if (b.planted == defect::S14) {
    // subsequence * vocab formed in 32 bits, wrapped at 2^20 to be visible (CPU twin).
    const uint32_t product =
        static_cast<uint32_t>(key.subsequence * static_cast<uint64_t>(b.vocab_size));
    key.subsequence = product & ((uint32_t{1} << 20) - 1);
  }
  return key;
}

__device__ inline philox_stream stream_of(const device_batch& b, int64_t r, int64_t input_row) {
  const stream_key key = stream_key_of(b, r, input_row);
  return philox_stream(key.seed, key.subsequence, key.offset);
}

__device__ __forceinline__ const unsigned char* row_pointer(const device_batch& b,
                                                            int64_t input_row) {
  return b.input + input_row * b.vocab_size * storage_bytes(b.dtype);
}

// Writes the result of output row r; a degenerate row becomes token 0 marked valid
// under S08 (the bug), valid = 0 otherwise.
__device__ __forceinline__ void write_result(const device_batch& b, int64_t r, int32_t token,
                                             bool valid) {
  if (!valid && b.planted == defect::S08) {
    b.out_token[r] = 0;
    b.out_valid[r] = 1;
    return;
  }
  b.out_token[r] = valid ? token : -1;
  b.out_valid[r] = valid ? 1 : 0;
}

}  // namespace samplecheck::cuda
