// The ABI entry of every CUDA subject: checks what the host can see (shapes,
// pointers, versions), launches, then reads back the kernels' per-row parameter
// check and turns it into SC_ERR_INVALID_ARGUMENT naming the row and the field.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <exception>

#include "kernels/abi_error.h"
#include "kernels/cuda/launch.h"

namespace samplecheck::cuda {

workspace::~workspace() {
  for (void* p : buffer_)
    if (p != nullptr) (void)gpuFree(p);
  if (host_error_ != nullptr) (void)gpuFreeHost(host_error_);
}

gpuError_t workspace::get(slot which, size_t bytes, bool capturing, void** out) {
  bytes = std::max<size_t>(bytes, 16);
  if (size_[which] < bytes) {
    if (capturing) return gpuErrorStreamCaptureUnsupported;
    if (buffer_[which] != nullptr) {
      // Earlier calls were synchronous, so nothing in flight still reads it.
      if (gpuError_t e = gpuFree(buffer_[which]); e != gpuSuccess) return e;
      buffer_[which] = nullptr;
      size_[which] = 0;
    }
    const size_t grown = bytes + bytes / 4;
    if (gpuError_t e = gpuMalloc(&buffer_[which], grown); e != gpuSuccess) return e;
    // Zeroed once: the gumbel arrival counters rely on it, then keep themselves at 0.
    if (gpuError_t e = gpuMemset(buffer_[which], 0, grown); e != gpuSuccess) return e;
    if (gpuError_t e = gpuDeviceSynchronize(); e != gpuSuccess) return e;
    size_[which] = grown;
  }
  *out = buffer_[which];
  return gpuSuccess;
}

unsigned long long* workspace::host_error() {
  if (host_error_ == nullptr && gpuMallocHost(reinterpret_cast<void**>(&host_error_), sizeof *host_error_) != gpuSuccess)
    host_error_ = nullptr;
  return host_error_;
}

int workspace::sm_count() {
  if (sm_count_ == 0) {
    int device = 0;
    if (gpuGetDevice(&device) != gpuSuccess ||
        gpuDeviceGetAttribute(&sm_count_, gpuDevAttrMultiProcessorCount, device) != gpuSuccess)
      sm_count_ = 1;
  }
  return sm_count_;
}

namespace {

constexpr auto& fail = report_error;

const char* field_name(bad_field f) {
  switch (f) {
    case bad_field::row_index: return "row_index";
    case bad_field::top_k: case bad_field::top_k_unsupported: return "top_k";
    case bad_field::top_p: case bad_field::top_p_unsupported: return "top_p";
    case bad_field::min_p: case bad_field::min_p_unsupported: return "min_p";
    case bad_field::temperature: case bad_field::temperature_unsupported: return "temperature";
    default: return "?";
  }
}

const char* rule_of(bad_field f) {
  switch (f) {
    case bad_field::row_index: return "is outside [0, num_input_rows)";
    case bad_field::top_k: return "is negative";
    case bad_field::top_p: return "is outside (0, 1]";
    case bad_field::min_p: return "is outside [0, 1]";
    case bad_field::temperature: return "must be finite and >= 0";
    default: return "asks for a filter this subject does not implement";
  }
}

// Turns the kernels' (row, field) record into a message with the offending value.
sc_status report_bad_parameter(const char* name, const sc_sample_batch& b, unsigned long long word, char* error,
                               size_t size) {
  const auto field = static_cast<bad_field>(word & 0xffu);
  const long long row = static_cast<long long>(word >> 8);
  const void* source = nullptr;
  switch (field) {
    case bad_field::row_index: source = b.row_index + row; break;
    case bad_field::top_k: case bad_field::top_k_unsupported: source = b.top_k + row; break;
    case bad_field::top_p: case bad_field::top_p_unsupported: source = b.top_p + row; break;
    case bad_field::min_p: case bad_field::min_p_unsupported: source = b.min_p + row; break;
    default: source = b.temperature + row; break;
  }
  char value[32] = "?";
  uint32_t raw = 0;
  if (gpuMemcpy(&raw, source, 4, gpuMemcpyDeviceToHost) == gpuSuccess) {
    if (field == bad_field::row_index || field == bad_field::top_k || field == bad_field::top_k_unsupported)
      std::snprintf(value, sizeof value, "%d", static_cast<int32_t>(raw));
    else
      std::snprintf(value, sizeof value, "%g", static_cast<double>(bits_to_float(raw)));
  }
  const bool unsupported = field >= bad_field::top_k_unsupported;
  return fail(unsupported ? SC_ERR_UNSUPPORTED : SC_ERR_INVALID_ARGUMENT, error, size, "%s: %s row %lld: %s = %s %s",
              name, field == bad_field::row_index ? "output" : "input", row, field_name(field), value,
              rule_of(field));
}

// What the host can check without reading device memory (as cpu.* check it).
sc_status check_shape(const sc_sampler& s, int64_t max_vocab, const sc_sample_batch* b, char* error, size_t size) {
  const char* name = s.name;
  if (b == nullptr) return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: batch is NULL", name);
  if (b->abi_version.major != SC_ABI_VERSION_MAJOR)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: batch abi_version.major = %u, this subject implements %u",
                name, b->abi_version.major, static_cast<unsigned>(SC_ABI_VERSION_MAJOR));
  if (b->reserved0 != 0 || b->flags != 0)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: batch reserved0 and flags must be 0", name);
  if (b->vocab_size <= 0 || b->vocab_size > INT32_MAX)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: vocab_size = %lld is outside [1, 2^31)", name,
                static_cast<long long>(b->vocab_size));
  if (max_vocab > 0 && b->vocab_size > max_vocab)
    return fail(SC_ERR_UNSUPPORTED, error, size,
                "%s: vocab_size = %lld exceeds %lld, the bound its philox_outputs_per_call covers", name,
                static_cast<long long>(b->vocab_size), static_cast<long long>(max_vocab));
  if (b->num_input_rows < 0 || b->num_output_rows < 0 || b->num_output_rows > INT32_MAX)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: num_input_rows = %lld, num_output_rows = %lld", name,
                static_cast<long long>(b->num_input_rows), static_cast<long long>(b->num_output_rows));
  if (b->input_dtype != SC_DTYPE_F32 && b->input_dtype != SC_DTYPE_BF16 && b->input_dtype != SC_DTYPE_F16)
    return fail(SC_ERR_UNSUPPORTED, error, size, "%s: input_dtype = %d is not f32, bf16 or f16", name,
                b->input_dtype);
  if (b->num_output_rows == 0) return SC_OK;
  if (b->num_input_rows == 0)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: output row 0: row_index points into an empty batch", name);
  const struct {
    const void* pointer;
    const char* field;
  } required[] = {{b->input, "input"}, {b->seed, "seed"}, {b->offset, "offset"}, {b->out_token, "out_token"},
                  {b->out_valid, "out_valid"}};
  for (const auto& r : required)
    if (r.pointer == nullptr) return fail(SC_ERR_INVALID_ARGUMENT, error, size, "%s: %s is NULL", name, r.field);
  if (b->row_index == nullptr && b->num_output_rows != b->num_input_rows)
    return fail(SC_ERR_INVALID_ARGUMENT, error, size,
                "%s: row_index is NULL but num_output_rows = %lld differs from num_input_rows = %lld", name,
                static_cast<long long>(b->num_output_rows), static_cast<long long>(b->num_input_rows));
  return SC_OK;
}

}  // namespace

sc_status run_subject(const sc_sampler& s, const subject_config& config, workspace& scratch,
                      const sc_sample_batch* b, char* error, size_t size) noexcept {
  try {
    const int64_t max_vocab = (config.kind == algorithm::gumbel_probs || config.kind == algorithm::gumbel_logits)
                                  ? kGumbelMaxVocab
                                  : 0;
    if (sc_status st = check_shape(s, max_vocab, b, error, size); st != SC_OK || b->num_output_rows == 0) return st;
    if (config.kind == algorithm::sort_filter && b->num_input_rows * b->vocab_size > INT32_MAX)
      return fail(SC_ERR_UNSUPPORTED, error, size, "%s: num_input_rows * vocab_size = %lld exceeds the sort's int32",
                  s.name, static_cast<long long>(b->num_input_rows * b->vocab_size));
    std::lock_guard<std::mutex> hold(scratch.lock());
    const auto stream = static_cast<gpuStream_t>(b->stream);
    gpuStreamCaptureStatus capture = gpuStreamCaptureStatusNone;
    if (gpuError_t e = gpuStreamIsCapturing(stream, &capture); e != gpuSuccess)
      return fail(SC_ERR_DEVICE, error, size, "%s: %s", s.name, gpuGetErrorString(e));
    const bool capturing = capture != gpuStreamCaptureStatusNone;
    unsigned long long* error_word = nullptr;
    gpuError_t e = scratch.get(workspace::error_word, 1, capturing, &error_word);
    // Reset only when it will be read back: a graph never reads it, and a memset node
    // would cost every replay.
    if (e == gpuSuccess && !capturing) e = gpuMemsetAsync(error_word, 0xff, sizeof *error_word, stream);
    launch_request request{&config,
                           device_batch{static_cast<const unsigned char*>(b->input),
                                        static_cast<storage_type>(b->input_dtype), s.input_kind, b->num_input_rows,
                                        b->vocab_size, b->num_output_rows, b->row_index, b->top_k, b->top_p,
                                        b->min_p, b->temperature, b->seed, b->subsequence, b->offset, b->out_token,
                                        b->out_valid, s.filters, config.planted, error_word},
                           &scratch, stream, capturing};
    if (e == gpuSuccess) {
      switch (config.kind) {
        case algorithm::multinomial:
        case algorithm::multinomial_split: e = launch_multinomial(request); break;
        case algorithm::gumbel_probs:
        case algorithm::gumbel_logits: e = launch_gumbel(request); break;
        case algorithm::sort_filter: e = launch_sort_filter(request); break;
        default: e = launch_dual_pivot(request); break;
      }
    }
    if (e == gpuErrorStreamCaptureUnsupported)
      return fail(SC_ERR_UNSUPPORTED, error, size,
                  "%s: its scratch must grow for this batch, which a graph capture cannot do: make one uncaptured "
                  "call of this shape first", s.name);
    if (e != gpuSuccess) return fail(SC_ERR_DEVICE, error, size, "%s: launch: %s", s.name, gpuGetErrorString(e));
    if (capturing) return SC_OK;
    unsigned long long* word = scratch.host_error();
    if (word == nullptr) return fail(SC_ERR_DEVICE, error, size, "%s: no pinned host memory", s.name);
    e = gpuMemcpyAsync(word, error_word, sizeof *word, gpuMemcpyDeviceToHost, stream);
    if (e == gpuSuccess) e = gpuStreamSynchronize(stream);
    if (e != gpuSuccess) return fail(SC_ERR_DEVICE, error, size, "%s: %s", s.name, gpuGetErrorString(e));
    if (*word != ~0ull) return report_bad_parameter(s.name, *b, *word, error, size);
    if (error != nullptr && size > 0) error[0] = '\0';
    return SC_OK;
  } catch (const std::exception& ex) {
    return fail(SC_ERR_INTERNAL, error, size, "%s: %s", s.name, ex.what());
  } catch (...) {
    return fail(SC_ERR_INTERNAL, error, size, "%s: unknown exception", s.name);
  }
}

}  // namespace samplecheck::cuda
