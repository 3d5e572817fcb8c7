#include "kernels/cpu/sampler_core.h"

#include <atomic>
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <numeric>

#include "kernels/abi_error.h"
#include "reference/numeric.h"

namespace samplecheck::cpu {
namespace {

constexpr auto& fail = report_error;

// Checks everything a call promises before anything is written, so a refused call
// leaves the caller's buffers as they were.
sc_status check_batch(const subject_spec& spec, const sc_sample_batch* b, char* error, size_t size) {
  const char* name = spec.name;
  if (b == nullptr) return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: batch is NULL", name);
  if (b->abi_version.major != SC_ABI_VERSION_MAJOR)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                "%s: batch abi_version.major = %u, this subject implements %u", name,
                b->abi_version.major, static_cast<unsigned>(SC_ABI_VERSION_MAJOR));
  if (b->reserved0 != 0 || b->flags != 0)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: batch reserved0 and flags must be 0",
                name);
  if (b->vocab_size <= 0)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: vocab_size = %lld must be positive", name,
                static_cast<long long>(b->vocab_size));
  if (b->vocab_size > INT32_MAX)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                "%s: vocab_size = %lld does not fit the int32 token ids", name,
                static_cast<long long>(b->vocab_size));
  if (spec.max_vocab_size > 0 && b->vocab_size > spec.max_vocab_size)
    return fail(SC_ERR_UNSUPPORTED, error, size,
                "%s: vocab_size = %lld exceeds %lld, the bound its philox_outputs_per_call covers",
                name, static_cast<long long>(b->vocab_size),
                static_cast<long long>(spec.max_vocab_size));
  if (b->num_input_rows < 0 || b->num_output_rows < 0)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                "%s: num_input_rows = %lld and num_output_rows = %lld must not be negative", name,
                static_cast<long long>(b->num_input_rows),
                static_cast<long long>(b->num_output_rows));
  if (b->input_dtype != SC_DTYPE_F32 && b->input_dtype != SC_DTYPE_BF16 &&
      b->input_dtype != SC_DTYPE_F16)
    return fail(SC_ERR_UNSUPPORTED, error, size, "%s: input_dtype = %d is not f32, bf16 or f16", name,
                b->input_dtype);
  if (b->num_output_rows == 0) return SC_OK;
  if (b->input == nullptr && b->num_input_rows > 0)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: input is NULL", name);
  const struct {
    const void* pointer;
    const char* field;
  } required[] = {{b->seed, "seed"}, {b->offset, "offset"}, {b->out_token, "out_token"},
                  {b->out_valid, "out_valid"}};
  for (const auto& r : required)
    if (r.pointer == nullptr)
      return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: %s is NULL", name, r.field);
  if (b->row_index == nullptr && b->num_output_rows != b->num_input_rows)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                "%s: row_index is NULL but num_output_rows = %lld differs from num_input_rows = %lld",
                name, static_cast<long long>(b->num_output_rows),
                static_cast<long long>(b->num_input_rows));
  if (b->row_index != nullptr)
    for (int64_t r = 0; r < b->num_output_rows; ++r)
      if (b->row_index[r] < 0 || b->row_index[r] >= b->num_input_rows)
        return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: output row %lld: row_index = %d is outside [0, %lld)", name,
                    static_cast<long long>(r), b->row_index[r],
                    static_cast<long long>(b->num_input_rows));

  const bool logits = spec.input_kind == SC_INPUT_LOGITS;
  for (int64_t i = 0; i < b->num_input_rows; ++i) {
    const long long row = static_cast<long long>(i);
    if (b->top_k != nullptr) {
      if (b->top_k[i] < 0)
        return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: input row %lld: top_k = %d is negative",
                    name, row, b->top_k[i]);
      if (b->top_k[i] > 0 && b->top_k[i] < b->vocab_size && !(spec.filters & SC_FILTER_TOP_K))
        return fail(SC_ERR_UNSUPPORTED, error, size, "%s: input row %lld: top_k = %d, a filter it does not implement",
                    name, row, b->top_k[i]);
    }
    if (b->top_p != nullptr) {
      const float p = b->top_p[i];
      if (!(p > 0.0f && p <= 1.0f))
        return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: input row %lld: top_p = %g is outside (0, 1]", name, row, p);
      if (p < 1.0f && !(spec.filters & SC_FILTER_TOP_P))
        return fail(SC_ERR_UNSUPPORTED, error, size,
                    "%s: input row %lld: top_p = %g, a filter it does not implement", name, row, p);
    }
    if (b->min_p != nullptr) {
      const float p = b->min_p[i];
      if (!(p >= 0.0f && p <= 1.0f))
        return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: input row %lld: min_p = %g is outside [0, 1]", name, row, p);
      if (p > 0.0f && !(spec.filters & SC_FILTER_MIN_P))
        return fail(SC_ERR_UNSUPPORTED, error, size,
                    "%s: input row %lld: min_p = %g, a filter it does not implement", name, row, p);
    }
    if (b->temperature != nullptr) {
      const float t = b->temperature[i];
      if (!(t >= 0.0f) || std::isinf(t))
        return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: input row %lld: temperature = %g must be finite and >= 0", name, row, t);
      if (t != 1.0f && !(logits && (spec.filters & SC_FILTER_TEMPERATURE)))
        return fail(SC_ERR_UNSUPPORTED, error, size,
                    "%s: input row %lld: temperature = %g, a filter it does not implement", name, row,
                    t);
    }
  }
  return SC_OK;
}

row_params params_of(const sc_sample_batch& b, int64_t i) {
  row_params p;
  if (b.top_k) p.top_k = b.top_k[i];
  if (b.top_p) p.top_p = b.top_p[i];
  if (b.min_p) p.min_p = b.min_p[i];
  if (b.temperature) p.temperature = b.temperature[i];
  return p;
}

// Decodes input row `i` and says whether it can be sampled at all.
bool decode_row(const sc_sample_batch& b, int64_t i, int32_t input_kind, defect planted,
                std::vector<float>& row) {
  const auto type = static_cast<storage_type>(b.input_dtype);
  const auto* base = static_cast<const unsigned char*>(b.input) + i * b.vocab_size * storage_bytes(type);
  row.resize(static_cast<size_t>(b.vocab_size));
  for (int64_t t = 0; t < b.vocab_size; ++t) row[t] = load_element(base, type, t);
  if (planted == defect::S13) {
    // S13: fast-math FTZ/DAZ at the load. Subnormal in the storage type: for f16 that
    // is everything below 2^-14 (6.1e-5), real mass on a long tail; for f32 and bf16
    // only masses below FLT_MIN, which matter on rows that carry little total mass.
    const float smallest_normal = type == storage_type::f16 ? 6.103515625e-05f : FLT_MIN;
    for (float& v : row)
      if (v != 0.0f && std::fabs(v) < smallest_normal) v = std::copysign(0.0f, v);
  }
  if (input_kind == SC_INPUT_LOGITS) {
    bool any_finite = false;
    for (const float z : row) {
      if (std::isnan(z) || z == INFINITY) return false;
      any_finite |= std::isfinite(z);
    }
    return any_finite;
  }
  double total = 0.0;
  for (const float p : row) {
    if (!std::isfinite(p) || p < 0.0f) return false;
    total += p;
  }
  // Above FLT_MAX the float prefix sums of the GPU-style subjects would overflow.
  return total > 0.0 && total <= FLT_MAX;
}

struct stream_key {
  uint64_t seed, subsequence, offset;
};

// The stream of output row r. The correct rule is the header's: seed[r],
// subsequence[r], offset[r]. Each mutant below breaks it the way its bug did.
stream_key stream_for(const sc_sample_batch& b, int64_t r, int64_t first_output_of_input,
                      defect planted, uint64_t hidden_call) {
  int64_t source = r;
  if (planted == defect::S03) source = 0;
  // S10: one draw per input row, broadcast to every output that shares the row.
  if (planted == defect::S10) source = first_output_of_input;
  stream_key key{b.seed[source], b.subsequence ? b.subsequence[source] : 0, b.offset[source]};
  if (planted == defect::S02) key.offset = 0;  // frozen at "capture"
  if (planted == defect::S04) key.subsequence = static_cast<uint64_t>(r);
  // X01: a generator state of the subject's own (a global torch.Generator, say) moves
  // on every call, so the caller's (seed, subsequence, offset) no longer decide the draw.
  if (planted == defect::X01) key.offset += hidden_call * 4096;
  if (planted == defect::S14) {
    // The real kernel forms subsequence * vocab_size in 32 bits (wraps at 2^32); the
    // mutant wraps at 2^20 so that at V = 32768 the streams repeat every 32 rows
    // instead of every 131072, where a quick budget can see the collisions.
    const uint32_t product = static_cast<uint32_t>(key.subsequence * static_cast<uint64_t>(b.vocab_size));
    key.subsequence = product & ((uint32_t{1} << 20) - 1);
  }
  return key;
}

void sample_rows(const subject_context& subject, const sc_sample_batch& b) {
  const int64_t rows = b.num_output_rows;
  const defect planted = subject.planted;
  static std::atomic<uint64_t> hidden_calls{0};
  const uint64_t hidden_call = planted == defect::X01 ? hidden_calls.fetch_add(1) : 0;
  std::vector<int64_t> input_of(rows), params_of_row(rows);
  std::vector<int64_t> first_output(static_cast<size_t>(b.num_input_rows), -1);
  for (int64_t r = 0; r < rows; ++r) {
    input_of[r] = b.row_index ? b.row_index[r] : r;
    // S09: parameters read by output row. An output row past the last input row wraps
    // rather than reading past the caller's array (the GPU bug reads garbage there).
    params_of_row[r] = planted == defect::S09 ? r % b.num_input_rows : input_of[r];
    if (first_output[input_of[r]] < 0) first_output[input_of[r]] = r;
  }
  // Output rows that share an input row and a parameter set share one prepare().
  std::vector<int64_t> order(rows);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    return std::pair(input_of[x], params_of_row[x]) < std::pair(input_of[y], params_of_row[y]);
  });

  auto sampler = subject.make(planted);
  std::vector<float> row;
  for (size_t g = 0; g < order.size();) {
    const int64_t input_row = input_of[order[g]], param_row = params_of_row[order[g]];
    size_t end = g;
    while (end < order.size() && input_of[order[end]] == input_row &&
           params_of_row[order[end]] == param_row)
      ++end;
    const bool usable = decode_row(b, input_row, subject.spec.input_kind, planted, row) &&
                        sampler->prepare(row, params_of(b, param_row));
    for (; g < end; ++g) {
      const int64_t r = order[g];
      draw_result result{-1, false};
      if (usable) {
        const stream_key key = stream_for(b, r, first_output[input_row], planted, hidden_call);
        philox_stream stream(key.seed, key.subsequence, key.offset);
        result = sampler->draw(stream);
      } else if (planted == defect::S08) {
        result = {0, true};  // S08: the degenerate row passes as token 0
      }
      b.out_token[r] = result.token;
      b.out_valid[r] = result.valid ? 1 : 0;
    }
  }
}

}  // namespace

sc_status run_batch(const subject_context& subject, const sc_sample_batch* batch, char* error,
                    size_t error_size) noexcept {
  try {
    if (const sc_status status = check_batch(subject.spec, batch, error, error_size); status != SC_OK)
      return status;
    if (batch->num_output_rows > 0) sample_rows(subject, *batch);
    if (error != nullptr && error_size > 0) error[0] = '\0';
    return SC_OK;
  } catch (const std::exception& e) {
    return fail(SC_ERR_INTERNAL, error, error_size, "%s: %s", subject.spec.name, e.what());
  } catch (...) {
    return fail(SC_ERR_INTERNAL, error, error_size, "%s: unknown exception", subject.spec.name);
  }
}

}  // namespace samplecheck::cpu
