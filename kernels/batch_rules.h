// The argument rules of one sc_sample_batch (kernels/samplecheck_plugin.h), written
// once for every in-tree sampler. The CPU subjects apply all of them on the host;
// the CUDA subjects apply check_shape() on the host and row_refusal() in their
// kernels (device_batch.cuh), and both word a refusal through report_refusal(), so
// a CPU subject and its GPU twin accept, refuse and explain the same calls alike.
//
// Host and device: the predicates are SC_HOST_DEVICE (nvcc and hipcc alike); the
// message functions are host-only.
#pragma once

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

// hipcc defines __host__, __device__ and __forceinline__ (SC_HOST_DEVICE) in its
// runtime header, which nvcc needs no include for; sampler_types.h reaches this
// header before kernels/gpu_compat.h does.
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#endif

#include "kernels/abi_error.h"
#include "kernels/samplecheck_plugin.h"
#include "reference/host_device.h"

namespace samplecheck::rules {

// A refused per-row field. The order is the precedence within one row (the CUDA
// kernels keep the lowest (row << 8 | field) word): a value the ABI forbids comes
// before a filter the subject does not declare.
enum class field : uint32_t {
  none = 0,
  row_index,          // output row: outside [0, num_input_rows)
  top_k,              // input row: negative
  top_p,              // input row: outside (0, 1]
  min_p,              // input row: outside [0, 1]
  temperature,        // input row: negative, NaN or infinite
  top_k_unsupported,  // a filter the subject does not implement
  top_p_unsupported,
  min_p_unsupported,
  temperature_unsupported,
};

// ---------------------------------------------------------------------------
// Per-parameter predicates. "valid": the ABI allows the value. "on": the value asks
// for filtering (off: top_k 0 or >= vocab_size, top_p 1, min_p 0, temperature 1).
// ---------------------------------------------------------------------------
SC_HOST_DEVICE bool top_k_valid(int32_t k) { return k >= 0; }
SC_HOST_DEVICE bool top_p_valid(float p) { return p > 0.0f && p <= 1.0f; }  // false for NaN
SC_HOST_DEVICE bool min_p_valid(float p) { return p >= 0.0f && p <= 1.0f; }
SC_HOST_DEVICE bool temperature_valid(float t) {
  return t >= 0.0f && t <= FLT_MAX;
}  // finite, >= 0

SC_HOST_DEVICE bool top_k_on(int32_t k, int64_t vocab_size) { return k > 0 && k < vocab_size; }
SC_HOST_DEVICE bool top_p_on(float p) { return p < 1.0f; }
SC_HOST_DEVICE bool min_p_on(float p) { return p > 0.0f; }
SC_HOST_DEVICE bool temperature_on(float t) { return t != 1.0f; }

// Whether a subject of `input_kind` declaring `filters` (SC_FILTER_*) implements the
// filter of `f` (either its value field or its _unsupported twin). Temperature is a
// logits filter only, whatever a probs subject declares.
SC_HOST_DEVICE bool declares(field f, int32_t input_kind, uint32_t filters) {
  switch (f) {
    case field::top_k:
    case field::top_k_unsupported:
      return (filters & SC_FILTER_TOP_K) != 0;
    case field::top_p:
    case field::top_p_unsupported:
      return (filters & SC_FILTER_TOP_P) != 0;
    case field::min_p:
    case field::min_p_unsupported:
      return (filters & SC_FILTER_MIN_P) != 0;
    case field::temperature:
    case field::temperature_unsupported:
      return input_kind == SC_INPUT_LOGITS && (filters & SC_FILTER_TEMPERATURE) != 0;
    default:
      return true;
  }
}

// The parameters of one input row; a NULL array reads as its "off" value.
struct row_values {
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float temperature = 1.0f;
};

SC_HOST_DEVICE bool row_valid(const row_values& v) {
  return top_k_valid(v.top_k) && top_p_valid(v.top_p) && min_p_valid(v.min_p) &&
         temperature_valid(v.temperature);
}

// The refusal of one input row, field::none when it is acceptable: the first failing
// field in the enum's order.
SC_HOST_DEVICE field row_refusal(const row_values& v, int64_t vocab_size, int32_t input_kind,
                                 uint32_t filters) {
  if (!top_k_valid(v.top_k)) return field::top_k;
  if (!top_p_valid(v.top_p)) return field::top_p;
  if (!min_p_valid(v.min_p)) return field::min_p;
  if (!temperature_valid(v.temperature)) return field::temperature;
  if (top_k_on(v.top_k, vocab_size) && !declares(field::top_k, input_kind, filters))
    return field::top_k_unsupported;
  if (top_p_on(v.top_p) && !declares(field::top_p, input_kind, filters))
    return field::top_p_unsupported;
  if (min_p_on(v.min_p) && !declares(field::min_p, input_kind, filters))
    return field::min_p_unsupported;
  if (temperature_on(v.temperature) && !declares(field::temperature, input_kind, filters))
    return field::temperature_unsupported;
  return field::none;
}

SC_HOST_DEVICE bool row_index_valid(int32_t index, int64_t num_input_rows) {
  return index >= 0 && index < num_input_rows;
}

// ---------------------------------------------------------------------------
// Host side: the words of a refusal, and the checks that need no device memory.
// ---------------------------------------------------------------------------
inline const char* field_name(field f) {
  switch (f) {
    case field::row_index:
      return "row_index";
    case field::top_k:
    case field::top_k_unsupported:
      return "top_k";
    case field::top_p:
    case field::top_p_unsupported:
      return "top_p";
    case field::min_p:
    case field::min_p_unsupported:
      return "min_p";
    case field::temperature:
    case field::temperature_unsupported:
      return "temperature";
    default:
      return "?";
  }
}

// What the value breaks; row_index's bound is printed as a number in the message.
inline const char* rule_text(field f) {
  switch (f) {
    case field::row_index:
      return "is outside [0, num_input_rows)";
    case field::top_k:
      return "is negative";
    case field::top_p:
      return "is outside (0, 1]";
    case field::min_p:
      return "is outside [0, 1]";
    case field::temperature:
      return "must be finite and >= 0";
    default:
      return "asks for a filter this subject does not implement";
  }
}

inline bool is_unsupported(field f) { return f >= field::top_k_unsupported; }
inline sc_status status_of(field f) {
  return is_unsupported(f) ? SC_ERR_UNSUPPORTED : SC_ERR_INVALID_ARGUMENT;
}
// row_index and top_k hold int32; the other fields float.
inline bool holds_int(field f) {
  return f == field::row_index || f == field::top_k || f == field::top_k_unsupported;
}

// Where the value of `f` for `row` lives in the batch (output row for row_index,
// input row otherwise): host memory for a host subject, device memory for a device one.
inline const void* source_of(const sc_sample_batch& b, field f, int64_t row) {
  switch (f) {
    case field::row_index:
      return b.row_index + row;
    case field::top_k:
    case field::top_k_unsupported:
      return b.top_k + row;
    case field::top_p:
    case field::top_p_unsupported:
      return b.top_p + row;
    case field::min_p:
    case field::min_p_unsupported:
      return b.min_p + row;
    default:
      return b.temperature + row;
  }
}

// "<subject>: input row 1: top_p = 1.5 is outside (0, 1]" (output row for row_index),
// with status_of(f). `value`: the field's 4 bytes in host memory, or NULL when they
// could not be read ("?").
inline sc_status report_refusal(const char* subject, field f, int64_t row, const void* value,
                                int64_t num_input_rows, char* error, size_t size) {
  char text[32] = "?";
  if (value != nullptr) {
    if (holds_int(f)) {
      int32_t v;
      std::memcpy(&v, value, sizeof v);
      std::snprintf(text, sizeof text, "%d", v);
    } else {
      float v;
      std::memcpy(&v, value, sizeof v);
      std::snprintf(text, sizeof text, "%g", static_cast<double>(v));
    }
  }
  const long long r = static_cast<long long>(row);
  if (f == field::row_index)
    return report_error(status_of(f), error, size,
                        "%s: output row %lld: row_index = %s is outside [0, %lld)", subject, r,
                        text, static_cast<long long>(num_input_rows));
  return report_error(status_of(f), error, size, "%s: input row %lld: %s = %s %s", subject, r,
                      field_name(f), text, rule_text(f));
}

// What bounds one subject's calls beyond the ABI.
struct subject_limits {
  const char* name;
  int64_t max_vocab_size =
      0;  // larger rows are SC_ERR_UNSUPPORTED (its philox_outputs_per_call); 0 = any
  int64_t max_output_rows = 0;  // more output rows are SC_ERR_INVALID_ARGUMENT; 0 = any
};

// Everything checkable without reading the batch's arrays: the batch itself, its
// version and reserved words, the shape, the dtype and the required pointers.
// SC_OK also for num_output_rows == 0, which is then a complete, empty call. What is
// left is per row: row_index_valid() for each output row and row_refusal() for each
// input row.
inline sc_status check_shape(const subject_limits& s, const sc_sample_batch* b, char* error,
                             size_t size) {
  const char* name = s.name;
  constexpr sc_status invalid = SC_ERR_INVALID_ARGUMENT;
  if (b == nullptr) return report_error(invalid, error, size, "%s: batch is NULL", name);
  if (b->abi_version.major != SC_ABI_VERSION_MAJOR)
    return report_error(invalid, error, size,
                        "%s: batch abi_version.major = %u, this subject implements %u", name,
                        b->abi_version.major, static_cast<unsigned>(SC_ABI_VERSION_MAJOR));
  if (b->reserved0 != 0 || b->flags != 0)
    return report_error(invalid, error, size, "%s: batch reserved0 and flags must be 0", name);
  if (b->vocab_size <= 0)
    return report_error(invalid, error, size, "%s: vocab_size = %lld must be positive", name,
                        static_cast<long long>(b->vocab_size));
  if (b->vocab_size > INT32_MAX)
    return report_error(invalid, error, size,
                        "%s: vocab_size = %lld does not fit the int32 token ids", name,
                        static_cast<long long>(b->vocab_size));
  if (s.max_vocab_size > 0 && b->vocab_size > s.max_vocab_size)
    return report_error(
        SC_ERR_UNSUPPORTED, error, size,
        "%s: vocab_size = %lld exceeds %lld, the bound its philox_outputs_per_call covers", name,
        static_cast<long long>(b->vocab_size), static_cast<long long>(s.max_vocab_size));
  if (b->num_input_rows < 0 || b->num_output_rows < 0)
    return report_error(invalid, error, size,
                        "%s: num_input_rows = %lld and num_output_rows = %lld must not be negative",
                        name, static_cast<long long>(b->num_input_rows),
                        static_cast<long long>(b->num_output_rows));
  if (s.max_output_rows > 0 && b->num_output_rows > s.max_output_rows)
    return report_error(invalid, error, size,
                        "%s: num_output_rows = %lld exceeds %lld, the most one call takes", name,
                        static_cast<long long>(b->num_output_rows),
                        static_cast<long long>(s.max_output_rows));
  if (b->input_dtype != SC_DTYPE_F32 && b->input_dtype != SC_DTYPE_BF16 &&
      b->input_dtype != SC_DTYPE_F16)
    return report_error(SC_ERR_UNSUPPORTED, error, size,
                        "%s: input_dtype = %d is not f32, bf16 or f16", name, b->input_dtype);
  if (b->num_output_rows == 0) return SC_OK;
  const struct {
    const void* pointer;
    const char* field;
  } required[] = {{b->input, "input"},
                  {b->seed, "seed"},
                  {b->offset, "offset"},
                  {b->out_token, "out_token"},
                  {b->out_valid, "out_valid"}};
  for (const auto& r : required)
    if (r.pointer == nullptr)
      return report_error(invalid, error, size, "%s: %s is NULL", name, r.field);
  if (b->row_index == nullptr && b->num_output_rows != b->num_input_rows)
    return report_error(
        invalid, error, size,
        "%s: row_index is NULL but num_output_rows = %lld differs from num_input_rows = %lld", name,
        static_cast<long long>(b->num_output_rows), static_cast<long long>(b->num_input_rows));
  // Every row_index entry is then out of range, whatever it holds.
  if (b->num_input_rows == 0)
    return report_error(invalid, error, size,
                        "%s: output row 0: row_index points into an empty batch", name);
  return SC_OK;
}

}  // namespace samplecheck::rules
