// The ABI entry of every CUDA subject: checks what the host can see (shapes,
// pointers, versions: rules::check_shape), launches, then reads back the kernels'
// per-row parameter check (rules::row_refusal) and words it as rules::report_refusal
// does for the CPU subjects, naming the row, the field and its value.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <exception>

#include "kernels/abi_error.h"
#include "kernels/batch_rules.h"
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
  if (host_error_ == nullptr &&
      gpuMallocHost(reinterpret_cast<void**>(&host_error_), sizeof *host_error_) != gpuSuccess)
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

// Turns the kernels' (row, field) record into kernels/batch_rules.h's message, with
// the offending value read back from the caller's device array.
sc_status report_bad_parameter(const char* name, const sc_sample_batch& b, unsigned long long word,
                               char* error, size_t size) {
  const auto field = static_cast<rules::field>(word & 0xffu);
  const auto row = static_cast<int64_t>(word >> 8);
  uint32_t raw = 0;
  const bool read = gpuMemcpy(&raw, rules::source_of(b, field, row), sizeof raw,
                              gpuMemcpyDeviceToHost) == gpuSuccess;
  return rules::report_refusal(name, field, row, read ? &raw : nullptr, b.num_input_rows, error,
                               size);
}

// What the host can check before a launch (rules::check_shape, the sort's int32
// indices); SC_OK also for an empty batch, which then launches nothing.
sc_status check_batch(const sc_sampler& s, const subject_config& config, const sc_sample_batch* b,
                      char* error, size_t size) {
  const int64_t max_vocab =
      (config.kind == algorithm::gumbel_probs || config.kind == algorithm::gumbel_logits)
          ? kGumbelMaxVocab
          : 0;
  // One block (or cluster) per output row: a grid dimension holds at most 2^31 - 1.
  const rules::subject_limits limits{s.name, max_vocab, INT32_MAX};
  if (sc_status st = rules::check_shape(limits, b, error, size);
      st != SC_OK || b->num_output_rows == 0)
    return st;
  if (config.kind == algorithm::sort_filter && b->num_input_rows * b->vocab_size > INT32_MAX)
    return fail(SC_ERR_UNSUPPORTED, error, size,
                "%s: num_input_rows * vocab_size = %lld exceeds the sort's int32", s.name,
                static_cast<long long>(b->num_input_rows * b->vocab_size));
  return SC_OK;
}

gpuError_t launch_kind(launch_request& request) {
  switch (request.config->kind) {
    case algorithm::multinomial:
    case algorithm::multinomial_split:
      return launch_multinomial(request);
    case algorithm::gumbel_probs:
    case algorithm::gumbel_logits:
      return launch_gumbel(request);
    case algorithm::sort_filter:
      return launch_sort_filter(request);
    default:
      return launch_dual_pivot(request);
  }
}

// After an uncaptured launch: waits for the stream and reads back the kernels'
// parameter check (all ones: no row refused).
sc_status read_back_refusal(const sc_sampler& s, const sc_sample_batch* b, workspace& scratch,
                            const unsigned long long* error_word, gpuStream_t stream, char* error,
                            size_t size) {
  unsigned long long* word = scratch.host_error();
  if (word == nullptr) return fail(SC_ERR_DEVICE, error, size, "%s: no pinned host memory", s.name);
  gpuError_t e = gpuMemcpyAsync(word, error_word, sizeof *word, gpuMemcpyDeviceToHost, stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(stream);
  if (e != gpuSuccess)
    return fail(SC_ERR_DEVICE, error, size, "%s: %s", s.name, gpuGetErrorString(e));
  if (*word != ~0ull) return report_bad_parameter(s.name, *b, *word, error, size);
  if (error != nullptr && size > 0) error[0] = '\0';
  return SC_OK;
}

}  // namespace

sc_status run_subject(const sc_sampler& s, const subject_config& config, workspace& scratch,
                      const sc_sample_batch* b, char* error, size_t size) noexcept {
  try {
    if (sc_status st = check_batch(s, config, b, error, size);
        st != SC_OK || b->num_output_rows == 0)
      return st;
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
    if (e == gpuSuccess && !capturing)
      e = gpuMemsetAsync(error_word, 0xff, sizeof *error_word, stream);
    launch_request request{
        &config,
        device_batch{static_cast<const unsigned char*>(b->input),
                     static_cast<storage_type>(b->input_dtype), s.input_kind, b->num_input_rows,
                     b->vocab_size, b->num_output_rows, b->row_index, b->top_k, b->top_p, b->min_p,
                     b->temperature, b->seed, b->subsequence, b->offset, b->out_token, b->out_valid,
                     s.filters, config.planted, error_word},
        &scratch, stream, capturing};
    if (e == gpuSuccess) e = launch_kind(request);
    if (e == gpuErrorStreamCaptureUnsupported)
      return fail(SC_ERR_UNSUPPORTED, error, size,
                  "%s: its scratch must grow for this batch, which a graph capture cannot do: make "
                  "one uncaptured "
                  "call of this shape first",
                  s.name);
    if (e != gpuSuccess)
      return fail(SC_ERR_DEVICE, error, size, "%s: launch: %s", s.name, gpuGetErrorString(e));
    if (capturing) return SC_OK;
    return read_back_refusal(s, b, scratch, error_word, stream, error, size);
  } catch (const std::exception& ex) {
    return fail(SC_ERR_INTERNAL, error, size, "%s: %s", s.name, ex.what());
  } catch (...) {
    return fail(SC_ERR_INTERNAL, error, size, "%s: unknown exception", s.name);
  }
}

}  // namespace samplecheck::cuda
