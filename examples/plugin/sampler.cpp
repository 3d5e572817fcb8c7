// vendor.inverse_cdf and vendor.inverse_cdf_bf16: inverse-CDF sampling in double
// over a row's kept tokens (filters.h), one 53-bit uniform per output row.
//
// The header's rules for a batch, which everything below follows:
//   output row r samples input row row_index[r] (r itself when row_index is NULL);
//   filter parameters belong to the distribution: indexed by INPUT row;
//   randomness belongs to the request: output row r draws from the stream
//   curand_init(seed[r], subsequence[r], offset[r]), whatever its place in the batch;
//   a degenerate row gets out_valid = 0 and leaves every other row alone;
//   a refused call writes nothing.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <exception>
#include <numeric>
#include <vector>

#include "bf16.h"
#include "filters.h"
#include "philox.h"
#include "report.h"
#include "vendor.h"

namespace vendor {
namespace {

struct sampler_kind {
  const char* name;
  int32_t dtype;  // the one input dtype it declares
  const char* dtype_name;
  bool filters;  // declares top-k and top-p
};
constexpr sampler_kind kF32{"vendor.inverse_cdf", SC_DTYPE_F32, "f32 (SC_DTYPE_F32)", true};
constexpr sampler_kind kBf16{"vendor.inverse_cdf_bf16", SC_DTYPE_BF16, "bf16 (SC_DTYPE_BF16)",
                             false};

// The fields of the batch as a whole.
sc_status check_batch(const sampler_kind& kind, const sc_sample_batch* b, char* error,
                      size_t size) {
  const char* name = kind.name;
  if (b == nullptr) return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: batch is NULL", name);
  if (b->abi_version.major != SC_ABI_VERSION_MAJOR)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field abi_version.major = %u, this sampler implements %d",
                  name, b->abi_version.major, SC_ABI_VERSION_MAJOR);
  if (b->reserved0 != 0)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field reserved0 = %d, must be 0", name, b->reserved0);
  if (b->flags != 0)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field flags = %#" PRIx64 ", must be 0", name, b->flags);
  if (b->input_dtype != kind.dtype)
    return report(SC_ERR_UNSUPPORTED, error, size,
                  "%s: sc_sample_batch field input_dtype = %d: this sampler takes %s only", name,
                  b->input_dtype, kind.dtype_name);
  if (b->vocab_size <= 0 || b->vocab_size > INT32_MAX)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field vocab_size = %" PRId64
                  " is outside [1, 2^31 - 1] (token ids are int32)",
                  name, b->vocab_size);
  if (b->num_input_rows < 0 || b->num_output_rows < 0)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field %s = %" PRId64 " is negative", name,
                  b->num_input_rows < 0 ? "num_input_rows" : "num_output_rows",
                  b->num_input_rows < 0 ? b->num_input_rows : b->num_output_rows);
  if (b->num_input_rows > 0 && b->input == nullptr)
    return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: sc_sample_batch field input is NULL",
                  name);
  if (b->num_output_rows == 0) return SC_OK;
  const struct {
    const void* pointer;
    const char* field;
  } required[] = {{b->seed, "seed"},
                  {b->offset, "offset"},
                  {b->out_token, "out_token"},
                  {b->out_valid, "out_valid"}};
  for (const auto& r : required)
    if (r.pointer == nullptr)
      return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: sc_sample_batch field %s is NULL",
                    name, r.field);
  if (b->row_index == nullptr && b->num_output_rows != b->num_input_rows)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field row_index is NULL, so num_output_rows = %" PRId64
                  " must equal num_input_rows = %" PRId64,
                  name, b->num_output_rows, b->num_input_rows);
  if (b->row_index != nullptr)
    for (int64_t r = 0; r < b->num_output_rows; ++r)
      if (b->row_index[r] < 0 || b->row_index[r] >= b->num_input_rows)
        return report(SC_ERR_INVALID_ARGUMENT, error, size,
                      "%s: output row %" PRId64 ": field row_index = %d is outside [0, %" PRId64
                      ")",
                      name, r, b->row_index[r], b->num_input_rows);
  return SC_OK;
}

// The parameters of input row i: invalid values first, then filters not declared.
sc_status check_row_params(const sampler_kind& kind, const sc_sample_batch& b, int64_t i,
                           char* error, size_t size) {
  const char* name = kind.name;
  if (b.top_k != nullptr) {
    const int32_t k = b.top_k[i];
    if (k < 0)
      return report(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: input row %" PRId64 ": field top_k = %d is negative", name, i, k);
    if (!kind.filters && k > 0 && k < b.vocab_size)
      return report(SC_ERR_UNSUPPORTED, error, size,
                    "%s: input row %" PRId64 ": field top_k = %d, a filter it does not declare",
                    name, i, k);
  }
  if (b.top_p != nullptr) {
    const float p = b.top_p[i];
    if (!(p > 0.0f && p <= 1.0f))
      return report(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: input row %" PRId64 ": field top_p = %g is outside (0, 1]", name, i, p);
    if (!kind.filters && p < 1.0f)
      return report(SC_ERR_UNSUPPORTED, error, size,
                    "%s: input row %" PRId64 ": field top_p = %g, a filter it does not declare",
                    name, i, p);
  }
  if (b.min_p != nullptr) {
    const float p = b.min_p[i];
    if (!(p >= 0.0f && p <= 1.0f))
      return report(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: input row %" PRId64 ": field min_p = %g is outside [0, 1]", name, i, p);
    if (p > 0.0f)
      return report(SC_ERR_UNSUPPORTED, error, size,
                    "%s: input row %" PRId64 ": field min_p = %g, a filter it does not declare",
                    name, i, p);
  }
  if (b.temperature != nullptr) {
    const float t = b.temperature[i];
    if (!(t >= 0.0f) || std::isinf(t))
      return report(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: input row %" PRId64 ": field temperature = %g must be finite and >= 0",
                    name, i, t);
    // The rows are probabilities already: a temperature is for logits subjects.
    if (t != 1.0f)
      return report(SC_ERR_UNSUPPORTED, error, size,
                    "%s: input row %" PRId64
                    ": field temperature = %g, which a probs sampler does not apply",
                    name, i, t);
  }
  return SC_OK;
}

// Input row i as doubles; false when it is no distribution (NaN, infinity, a
// negative value, or no mass at all).
bool decode_row(const sampler_kind& kind, const sc_sample_batch& b, int64_t i,
                std::vector<double>& row) {
  const size_t vocab = static_cast<size_t>(b.vocab_size);
  row.resize(vocab);
  if (kind.dtype == SC_DTYPE_F32) {
    const float* values = static_cast<const float*>(b.input) + static_cast<size_t>(i) * vocab;
    for (size_t t = 0; t < vocab; ++t) row[t] = values[t];
  } else {
    const uint16_t* bits = static_cast<const uint16_t*>(b.input) + static_cast<size_t>(i) * vocab;
    for (size_t t = 0; t < vocab; ++t) row[t] = bf16_to_float(bits[t]);
  }
  double total = 0.0;
  for (const double p : row) {
    if (!std::isfinite(p) || p < 0.0) return false;
    total += p;
  }
  return total > 0.0;
}

kept_tokens prepare_row(const sampler_kind& kind, const sc_sample_batch& b, int64_t i,
                        std::vector<double>& row) {
  if (!decode_row(kind, b, i, row)) return {};
  const int32_t top_k = b.top_k != nullptr ? b.top_k[i] : 0;
  const double top_p = b.top_p != nullptr ? b.top_p[i] : 1.0;
  return filter_row(row, top_k, top_p);
}

void sample_rows(const sampler_kind& kind, const sc_sample_batch& b) {
  const int64_t outputs = b.num_output_rows;
  auto input_of = [&](int64_t r) -> int64_t { return b.row_index ? b.row_index[r] : r; };
  // Output rows that share an input row share one decode and one filter pass.
  std::vector<int64_t> order(static_cast<size_t>(outputs));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return input_of(x) < input_of(y); });
  std::vector<double> row;
  kept_tokens kept;
  int64_t prepared = -1;
  for (const int64_t r : order) {
    if (input_of(r) != prepared) {
      prepared = input_of(r);
      kept = prepare_row(kind, b, prepared, row);
    }
    if (kept.empty()) {  // degenerate, or nothing survived the filters
      b.out_token[r] = -1;
      b.out_valid[r] = 0;
      continue;
    }
    philox_stream stream(b.seed[r], b.subsequence ? b.subsequence[r] : 0, b.offset[r]);
    b.out_token[r] = invert_cdf(kept, next_unit_double(stream));
    b.out_valid[r] = 1;
  }
}

sc_status sample(const sampler_kind& kind, const sc_sample_batch* b, char* error,
                 size_t size) noexcept {
  try {
    if (const sc_status s = check_batch(kind, b, error, size); s != SC_OK) return s;
    for (int64_t i = 0; i < b->num_input_rows; ++i)
      if (const sc_status s = check_row_params(kind, *b, i, error, size); s != SC_OK) return s;
    if (b->num_output_rows > 0) sample_rows(kind, *b);
    return succeed(error, size);
  } catch (const std::exception& e) {  // std::bad_alloc for a huge row: no exception crosses
    return report(SC_ERR_INTERNAL, error, size, "%s: %s", kind.name, e.what());
  }
}

}  // namespace
}  // namespace vendor

extern "C" sc_status vendor_sample_f32(void*, const sc_sample_batch* batch, char* error,
                                       size_t error_size) {
  return vendor::sample(vendor::kF32, batch, error, error_size);
}

extern "C" sc_status vendor_sample_bf16(void*, const sc_sample_batch* batch, char* error,
                                        size_t error_size) {
  return vendor::sample(vendor::kBf16, batch, error, error_size);
}
