// The one way an sc_sample_batch is made from a sample_call (make_batch), and the host
// side of a call: the batch over the call's own arrays, the input encoded to its
// declared dtype, the outputs in guarded buffers (call.h). device_call.h is the same
// batch in device memory; run_call (sampler_call.h) picks by the subject's memory space.
//
// Header-only: the kernel tests and the peers use it without linking the harness.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/samplecheck_plugin.h"
#include "suites/harness/call.h"
#include "suites/harness/dtype.h"

namespace samplecheck::harness {

// The request cannot be made as asked: the harness's caller is at fault, not the
// subject (run_call turns it into call_fault::harness).
class bad_request : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The 16-bit patterns of values[0, n) in `dtype`, values[0] being element `first` of a
// call's input of rows of `vocab_size`. Throws bad_request naming the first value the
// dtype cannot hold exactly: rounding here would hand the subject a row the reference
// never saw.
inline std::vector<uint16_t> encode_values(const float* values, size_t n, int32_t dtype,
                                           int64_t vocab_size, size_t first = 0) {
  if (dtype != SC_DTYPE_BF16 && dtype != SC_DTYPE_F16)
    throw bad_request("the harness cannot encode an input as " + dtype_name(dtype));
  std::vector<uint16_t> bits(n);
  for (size_t i = 0; i < n; ++i) {
    if (const std::optional<uint16_t> plain = plain_bits(values[i], dtype)) {
      bits[i] = *plain;
      continue;
    }
    const std::optional<uint16_t> exact = exact_bits(values[i], dtype);
    if (exact) {
      bits[i] = *exact;
      continue;
    }
    const size_t at = first + i;
    char where[64];
    if (vocab_size > 0)
      std::snprintf(where, sizeof where, "input row %lld, column %lld",
                    static_cast<long long>(at / static_cast<size_t>(vocab_size)),
                    static_cast<long long>(at % static_cast<size_t>(vocab_size)));
    else
      std::snprintf(where, sizeof where, "input element %zu", at);
    char words[256];
    std::snprintf(words, sizeof words,
                  "%s: %.9g is not exactly representable in %s (round_to_dtype the row first)",
                  where, static_cast<double>(values[i]), dtype_name(dtype).c_str());
    throw bad_request(words);
  }
  return bits;
}

// The 16-bit patterns of call.input in call.input_dtype; empty for f32, whose floats
// the subject reads as they are.
inline std::vector<uint16_t> encode_input(const sample_call& call) {
  if (call.input_dtype == SC_DTYPE_F32) return {};
  return encode_values(call.input.data(), call.input.size(), call.input_dtype, call.vocab_size);
}

// encode_input for a run of calls. A check sends the same rows call after call, in
// changing company and order (batch_invariance's pool, goodness_of_fit's runs of rows),
// and encoding them was the judge's largest own cost
// (docs/judging-power/judge-time-2026-12-02-to-04.md, the profiles). Each row's encoding
// is kept: found again by a few of its values, confirmed by one memcmp of the whole row.
class input_encoder {
 public:
  const std::vector<uint16_t>& encode(const sample_call& call) {
    static const std::vector<uint16_t> none;
    if (call.input_dtype == SC_DTYPE_F32) return none;  // sent as it is
    if (call.input_dtype != SC_DTYPE_BF16 && call.input_dtype != SC_DTYPE_F16)
      throw bad_request("the harness cannot encode an input as " + dtype_name(call.input_dtype));
    const size_t width = call.vocab_size > 0 ? static_cast<size_t>(call.vocab_size)
                                             : std::max<size_t>(call.input.size(), 1);
    if (call.input_dtype != dtype_ || width != width_) {
      forget();
      dtype_ = call.input_dtype, width_ = width;
    }
    bits_.resize(call.input.size());
    for (size_t first = 0; first < call.input.size(); first += width) {
      const size_t n = std::min(width, call.input.size() - first);
      const std::vector<uint16_t>& row = row_bits(call, first, n);
      std::copy(row.begin(), row.end(), bits_.begin() + static_cast<std::ptrdiff_t>(first));
    }
    return bits_;
  }

 private:
  // At most this many values kept (6 bytes each): about 110 rows of V = 151,936.
  static constexpr size_t kMostKept = size_t{1} << 24;

  struct known_row {
    std::vector<float> values;
    std::vector<uint16_t> bits;
  };

  // Sixteen values spread over the row and its length: rows that differ almost always
  // differ there; the memcmp decides.
  static uint64_t key_of(const float* v, size_t n) {
    uint64_t key = n;
    for (size_t j = 0; j < 16; ++j) {
      uint32_t word;
      std::memcpy(&word, v + j * n / 16, sizeof word);
      key = (key ^ word) * 0x100000001B3ull;
    }
    return key;
  }

  const std::vector<uint16_t>& row_bits(const sample_call& call, size_t first, size_t n) {
    const float* v = call.input.data() + first;
    const uint64_t key = key_of(v, n);
    const auto [from, to] = known_.equal_range(key);
    for (auto it = from; it != to; ++it)
      if (it->second.values.size() == n &&
          std::memcmp(it->second.values.data(), v, n * sizeof(float)) == 0)
        return it->second.bits;
    std::vector<uint16_t> bits = encode_values(v, n, call.input_dtype, call.vocab_size, first);
    if (kept_ + n > kMostKept) forget();
    kept_ += n;
    return known_.emplace(key, known_row{{v, v + n}, std::move(bits)})->second.bits;
  }

  void forget() { known_.clear(), kept_ = 0; }

  std::unordered_multimap<uint64_t, known_row> known_;
  size_t kept_ = 0, width_ = 0;
  int32_t dtype_ = -1;
  std::vector<uint16_t> bits_;
};

// A batch's scalars: the shape and the dtype.
struct batch_shape {
  int64_t vocab_size = 0, num_input_rows = 0, num_output_rows = 0;
  int32_t input_dtype = SC_DTYPE_F32;
};

inline batch_shape shape_of(const sample_call& call) {
  return {call.vocab_size, call.num_input_rows, call.num_output_rows(), call.input_dtype};
}

// Where a batch's arrays live: host vectors or device buffers. A NULL array is NULL.
struct batch_arrays {
  const void* input = nullptr;
  const int32_t* row_index = nullptr;
  const int32_t* top_k = nullptr;
  const float *top_p = nullptr, *min_p = nullptr, *temperature = nullptr;
  const uint64_t *seed = nullptr, *subsequence = nullptr, *offset = nullptr;
  int32_t* out_token = nullptr;
  uint8_t* out_valid = nullptr;
  uint8_t* out_route = nullptr;  // minor 5: only for a subject that declares routes
};

inline sc_sample_batch make_batch(const batch_shape& shape, const batch_arrays& arrays,
                                  void* stream) {
  sc_sample_batch b{};
  b.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  b.input = arrays.input;
  b.input_dtype = shape.input_dtype;
  b.num_input_rows = shape.num_input_rows;
  b.vocab_size = shape.vocab_size;
  b.num_output_rows = shape.num_output_rows;
  b.row_index = arrays.row_index;
  b.top_k = arrays.top_k;
  b.top_p = arrays.top_p;
  b.min_p = arrays.min_p;
  b.temperature = arrays.temperature;
  b.seed = arrays.seed;
  b.subsequence = arrays.subsequence;
  b.offset = arrays.offset;
  b.out_token = arrays.out_token;
  b.out_valid = arrays.out_valid;
  b.out_route = arrays.out_route;
  b.stream = stream;
  return b;
}

template <class T>
const T* or_null(const std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}

// A host subject's view of a call. Parameters and streams are read in place from the
// sample_call, so a test may spoil one after view(); resizing them invalidates the view.
class host_call {
 public:
  explicit host_call(sample_call& call)
      : call_(call),
        bits_(encode_input(call)),
        token_(guarded_buffer(static_cast<size_t>(call.num_output_rows()), kUnwrittenToken,
                              kGuardToken)),
        valid_(guarded_buffer(static_cast<size_t>(call.num_output_rows()), kUnwrittenValid,
                              kGuardValid)) {}
  host_call(const host_call&) = delete;
  host_call& operator=(const host_call&) = delete;

  sc_sample_batch view() {
    const sample_call& c = call_;
    batch_arrays a;
    a.input =
        c.input_dtype == SC_DTYPE_F32 ? static_cast<const void*>(c.input.data()) : bits_.data();
    a.row_index = or_null(c.row_index), a.top_k = or_null(c.top_k);
    a.top_p = or_null(c.top_p), a.min_p = or_null(c.min_p), a.temperature = or_null(c.temperature);
    a.seed = c.seed.data(), a.subsequence = or_null(c.subsequence), a.offset = c.offset.data();
    a.out_token = token_.data(), a.out_valid = valid_.data();
    return make_batch(shape_of(c), a, nullptr);
  }
  // Copies the outputs into the call and judges them (finish_call).
  call_status finish(sc_status returned, const char* message) {
    return finish_call(returned, message, call_, token_, valid_);
  }

 private:
  sample_call& call_;
  std::vector<uint16_t> bits_;
  std::vector<int32_t> token_;
  std::vector<uint8_t> valid_;
};

// The subject is not called for a dtype it does not declare: its answer would say
// nothing about the rows the check meant to send. Returns none when the call may go.
inline call_status refuse_undeclared(const sc_sampler& s, const sample_call& call) {
  if (declares_dtype(s.input_dtypes, call.input_dtype)) return {};
  const int32_t d = call.input_dtype;
  const bool known = d == SC_DTYPE_F32 || d == SC_DTYPE_BF16 || d == SC_DTYPE_F16;
  return {call_fault::harness, SC_OK,
          "the subject does not declare dtype " +
              (known ? dtype_name(d) : std::to_string(d) + " (no SC_DTYPE_* has that value)"),
          -1};
}

// The host leg of run_call, for callers that link no harness library (the peers).
inline call_status run_host_call(const sc_sampler& s, sample_call& call) {
  if (s.memory_space != SC_MEMORY_HOST)
    return {call_fault::harness, SC_OK,
            "run_host_call: memory space " + std::to_string(s.memory_space) + " is not the host's",
            -1};
  if (call_status refused = refuse_undeclared(s, call); !refused.ok()) return refused;
  try {
    host_call h(call);
    sc_sample_batch b = h.view();
    char message[1024] = {0};
    const auto start = std::chrono::steady_clock::now();
    const sc_status st = s.sample(s.context, &b, message, sizeof message);
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    message[sizeof message - 1] = '\0';  // a subject that forgot the NUL cannot overrun us
    call_status judged = h.finish(st, message);
    judged.subject_seconds = seconds.count();
    return judged;
  } catch (const bad_request& e) {
    return {call_fault::harness, SC_OK, e.what(), -1};
  }
}

}  // namespace samplecheck::harness
