/* sc_sampler.sample for the llama.cpp subjects: checks the batch against the ABI (the
 * header's rules for sc_sample_batch), then draws every output (draw.c). */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "llamacpp_subjects.h"

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static sc_status
report(sc_status status, char* error, size_t size, const char* format, ...) {
  if (error != NULL && size > 0) {
    va_list args;
    va_start(args, format);
    vsnprintf(error, size, format, args);
    va_end(args);
  }
  return status;
}

/* The fields of the batch as a whole (the header's rules for sc_sample_batch). */
static sc_status check_batch(const char* name, const sc_sample_batch* b, char* error, size_t size) {
  if (b == NULL) return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: batch is NULL", name);
  if (b->abi_version.major != SC_ABI_VERSION_MAJOR)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field abi_version.major = %u, this sampler implements %d",
                  name, b->abi_version.major, SC_ABI_VERSION_MAJOR);
  if (b->reserved0 != 0 || b->flags != 0)
    return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: sc_sample_batch field %s is not 0",
                  name, b->reserved0 != 0 ? "reserved0" : "flags");
  if (b->input_dtype != SC_DTYPE_F32)
    return report(SC_ERR_UNSUPPORTED, error, size,
                  "%s: sc_sample_batch field input_dtype = %d: llama.cpp's logits are f32 only",
                  name, b->input_dtype);
  if (b->vocab_size <= 0 || b->vocab_size > INT32_MAX)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field vocab_size = %" PRId64
                  " is outside [1, 2^31 - 1] (llama_token is int32)",
                  name, b->vocab_size);
  if (b->num_input_rows < 0 || b->num_output_rows < 0)
    return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: sc_sample_batch field %s is negative",
                  name, b->num_input_rows < 0 ? "num_input_rows" : "num_output_rows");
  if (b->num_output_rows == 0) return SC_OK;
  if (b->input == NULL || b->seed == NULL || b->offset == NULL || b->out_token == NULL ||
      b->out_valid == NULL)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field input, seed, offset, out_token or out_valid is NULL",
                  name);
  if (b->row_index == NULL && b->num_output_rows != b->num_input_rows)
    return report(SC_ERR_INVALID_ARGUMENT, error, size,
                  "%s: sc_sample_batch field row_index is NULL, so num_output_rows = %" PRId64
                  " must equal num_input_rows = %" PRId64,
                  name, b->num_output_rows, b->num_input_rows);
  for (int64_t r = 0; b->row_index != NULL && r < b->num_output_rows; ++r)
    if (b->row_index[r] < 0 || b->row_index[r] >= b->num_input_rows)
      return report(SC_ERR_INVALID_ARGUMENT, error, size,
                    "%s: output row %" PRId64 ": field row_index = %d is outside [0, %" PRId64 ")",
                    name, r, b->row_index[r], b->num_input_rows);
  return SC_OK;
}

lc_params lc_params_of(const sc_sample_batch* b, int64_t i) {
  lc_params p = {0, 1.0f, 0.0f, 1.0f};
  if (b->top_k != NULL) p.top_k = b->top_k[i];
  if (b->top_p != NULL) p.top_p = b->top_p[i];
  if (b->min_p != NULL) p.min_p = b->min_p[i];
  if (b->temperature != NULL) p.temperature = b->temperature[i];
  return p;
}

/* Input row i's parameters: invalid values, then filters the subject does not declare. */
static sc_status check_params(const lc_subject* s, const sc_sample_batch* b, int64_t i, char* error,
                              size_t size) {
  const lc_params p = lc_params_of(b, i);
  const char* invalid = p.top_k < 0                                        ? "top_k < 0"
                        : !(p.top_p > 0.0f && p.top_p <= 1.0f)             ? "top_p outside (0, 1]"
                        : !(p.min_p >= 0.0f && p.min_p <= 1.0f)            ? "min_p outside [0, 1]"
                        : !(p.temperature >= 0.0f) || isinf(p.temperature) ? "temperature < 0"
                                                                           : NULL;
  if (invalid != NULL)
    return report(SC_ERR_INVALID_ARGUMENT, error, size, "%s: input row %" PRId64 ": %s", s->name, i,
                  invalid);
  const uint32_t used = (p.top_k > 0 && p.top_k < b->vocab_size ? SC_FILTER_TOP_K : 0u) |
                        (p.top_p < 1.0f ? SC_FILTER_TOP_P : 0u) |
                        (p.min_p > 0.0f ? SC_FILTER_MIN_P : 0u) |
                        (p.temperature != 1.0f ? SC_FILTER_TEMPERATURE : 0u);
  if ((used & ~s->filters) != 0)
    return report(SC_ERR_UNSUPPORTED, error, size,
                  "%s: input row %" PRId64 ": a filter it does not declare (SC_FILTER_* bits %#x)",
                  s->name, i, (unsigned)(used & ~s->filters));
  return SC_OK;
}

sc_status lc_sample(void* context, const sc_sample_batch* b, char* error, size_t size) {
  const lc_subject* s = (const lc_subject*)context;
  sc_status status = check_batch(s->name, b, error, size);
  for (int64_t i = 0; status == SC_OK && i < b->num_input_rows; ++i)
    status = check_params(s, b, i, error, size);
  if (status != SC_OK || b->num_output_rows == 0) return status;
  const int drawn = s->whole_chain ? lc_draw_whole(s, b) : lc_draw_split(s, b);
  if (drawn < 0)
    return report(SC_ERR_INTERNAL, error, size,
                  "%s: no memory for a row of %" PRId64 " tokens, or llama.cpp built no sampler",
                  s->name, b->vocab_size);
  if (error != NULL && size > 0) error[0] = '\0';
  return SC_OK;
}
