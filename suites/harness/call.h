// One batched sampling call as the harness sees it: the request (sample_call), how it
// ended (call_status), and the ABI judgement of its outputs, in the words every check
// and test reports.
//
// Outputs are pre-filled with sentinels (Random123's habit), so a row the subject never
// wrote cannot look like a draw, and followed by guard rows (guard.h).
//
// Header-only: the kernel tests and the peers use it without linking the harness.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"
#include "suites/harness/guard.h"

namespace samplecheck::harness {

// Host copies of every array of an sc_sample_batch. An empty optional array is passed
// as NULL. Parameters and streams are passed as they are, even when they break the
// header's rules: the battery's refusal checks send bad calls on purpose.
struct sample_call {
  int64_t vocab_size = 0;
  int64_t num_input_rows = 0;
  std::vector<float> input;  // [num_input_rows * vocab_size], exactly representable in input_dtype
  int32_t input_dtype = SC_DTYPE_F32;  // the subject reads the input encoded to this (dtype.h)
  std::vector<int32_t> row_index;
  std::vector<int32_t> top_k;
  std::vector<float> top_p, min_p, temperature;
  std::vector<uint64_t> seed, subsequence, offset;  // seed/offset: one per output row
  // Filled by the call: the output rows, whatever the subject left in them.
  std::vector<int32_t> tokens;
  std::vector<uint8_t> valid;
  // The route each output row took (ABI 1.5), filled only for a subject that declares routes.
  std::vector<uint8_t> route;

  int64_t num_output_rows() const { return static_cast<int64_t>(seed.size()); }
};

// Sentinels written before the call: a token no sampler may return for a valid row,
// and a valid flag that is neither 0 nor 1.
inline constexpr int32_t kUnwrittenToken = INT32_MIN;
inline constexpr uint8_t kUnwrittenValid = 0xA5;
// Above SC_MAX_ROUTES: no route index a subject may write.
inline constexpr uint8_t kUnwrittenRoute = 0xFF;

enum class call_fault {
  none,
  subject_status,  // the subject returned a status other than SC_OK (status, message say it)
  contract,        // the subject broke the ABI: wrote past an output, or an unreadable out_valid
  out_of_range,    // SC_OK, readable outputs, but a valid row's token is outside [0, vocab_size)
  device,          // a CUDA call of the harness failed (often a fault the subject's kernel left)
  harness,         // the subject was not called: a wrong request (dtype, unrepresentable input)
};

struct call_status {
  call_fault fault = call_fault::none;
  sc_status status = SC_OK;  // what the subject returned; SC_OK when it was not called
  std::string message;       // the subject's message (subject_status), else the harness's words
  int64_t row = -1;          // the output row a contract or out_of_range fault names, else -1
  // The subject's own time in the call: from handing it the batch (or sending the request)
  // to its return (and the device's synchronisation, or the reply); -1 when not measured.
  // The judge's encoding, copies and checks around it are not in it.
  double subject_seconds = -1;
  bool ok() const { return fault == call_fault::none; }
  std::string describe() const;  // one line for a report, naming who did what
};

inline const char* status_name(sc_status s) {
  switch (s) {
    case SC_OK:
      return "SC_OK";
    case SC_ERR_INVALID_ARGUMENT:
      return "SC_ERR_INVALID_ARGUMENT";
    case SC_ERR_UNSUPPORTED:
      return "SC_ERR_UNSUPPORTED";
    case SC_ERR_DEVICE:
      return "SC_ERR_DEVICE";
    case SC_ERR_INTERNAL:
      return "SC_ERR_INTERNAL";
    default:
      return "an unknown status";
  }
}

inline std::string call_status::describe() const {
  switch (fault) {
    case call_fault::none:
      return "the call succeeded";
    case call_fault::subject_status:
      return "the subject returned status " + std::to_string(status) + " (" + status_name(status) +
             "): " + message;
    case call_fault::contract:
      return "the subject broke the ABI contract: " + message;
    case call_fault::out_of_range:
      return "the subject returned a token outside the vocabulary: " + message;
    case call_fault::device:
      return "a CUDA call failed: " + message;
    case call_fault::harness:
      return "the harness did not call the subject: " + message;
  }
  return message;
}

// What is wrong with output row r of a call the subject returned SC_OK for; the fault
// (contract or out_of_range) and the words, or none.
inline call_status judge_row(const sample_call& call, size_t r) {
  const auto row = static_cast<int64_t>(r);
  const uint8_t v = call.valid[r];
  const int32_t t = call.tokens[r];
  char words[160];
  if (v == kUnwrittenValid) {
    std::snprintf(words, sizeof words, "the subject returned SC_OK but never wrote out_valid[%zu]",
                  r);
    return {call_fault::contract, SC_OK, words, row};
  }
  if (v > 1) {
    std::snprintf(words, sizeof words,
                  "out_valid[%zu] = %u: the subject wrote a value other than 0 or 1", r,
                  static_cast<unsigned>(v));
    return {call_fault::contract, SC_OK, words, row};
  }
  if (v == 0) return {};
  if (t == kUnwrittenToken) {
    std::snprintf(words, sizeof words,
                  "output row %zu is valid but the subject never wrote out_token[%zu]", r, r);
    return {call_fault::contract, SC_OK, words, row};
  }
  if (t < 0 || t >= call.vocab_size) {
    std::snprintf(words, sizeof words,
                  "output row %zu is valid but out_token[%zu] = %" PRId32 " is outside [0, %" PRId64
                  ")",
                  r, r, t, call.vocab_size);
    return {call_fault::out_of_range, SC_OK, words, row};
  }
  return {};
}

// Ends a call: copies the output rows out of the guarded buffers into call.tokens and
// call.valid (always, so a test can still look at a faulty call's draws) and judges
// them. Guards are judged whatever the subject returned; the rows only after SC_OK,
// every flag before any token, so a contract fault is never hidden behind a token.
inline call_status finish_call(sc_status returned, const char* message, sample_call& call,
                               const std::vector<int32_t>& token_buffer,
                               const std::vector<uint8_t>& valid_buffer) {
  const auto rows = static_cast<size_t>(call.num_output_rows());
  call.tokens.assign(token_buffer.begin(),
                     token_buffer.begin() + static_cast<std::ptrdiff_t>(rows));
  call.valid.assign(valid_buffer.begin(), valid_buffer.begin() + static_cast<std::ptrdiff_t>(rows));
  for (std::string touched : {touched_guard(token_buffer, rows, kGuardToken, "out_token"),
                              touched_guard(valid_buffer, rows, kGuardValid, "out_valid")})
    if (!touched.empty()) return {call_fault::contract, returned, std::move(touched), -1};
  if (returned != SC_OK) {
    std::string words = message != nullptr ? message : "";
    if (words.empty()) words = "status " + std::to_string(returned) + " with no message";
    return {call_fault::subject_status, returned, std::move(words), -1};
  }
  // Nearly every call is clean: one branch-free (vectorised) pass finds that, and
  // judge_row's row-by-row words are built only for a call with a row to name. A negative
  // token is at least 2^31 unsigned, so one unsigned comparison bounds it on both sides.
  const auto limit =
      static_cast<uint32_t>(std::clamp<int64_t>(call.vocab_size, 0, int64_t{1} << 31));
  uint32_t bad = 0;
  for (size_t r = 0; r < rows; ++r) {
    const uint32_t v = call.valid[r];
    const auto t = static_cast<uint32_t>(call.tokens[r]);
    bad |= static_cast<uint32_t>(v > 1) |
           (static_cast<uint32_t>(v == 1) & static_cast<uint32_t>(t >= limit));
  }
  if (bad == 0) return {};
  call_status first_token_fault;
  for (size_t r = 0; r < rows; ++r) {
    call_status st = judge_row(call, r);
    if (st.fault == call_fault::contract) return st;
    if (st.fault == call_fault::out_of_range && first_token_fault.ok())
      first_token_fault = std::move(st);
  }
  return first_token_fault;
}

}  // namespace samplecheck::harness
