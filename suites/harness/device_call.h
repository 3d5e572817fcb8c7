// A sample_call in CUDA device memory: run_call's CUDA leg, and the batch a test
// captures in a CUDA graph and replays after rewriting the seed and offset tensors in
// place (Megatron-LM #5697: an offset frozen at capture repeats every decode step).
// Every array is uploaded once; the outputs carry the guard rows of call.h. load() reuses
// the device memory of the previous call where it is large enough: a cudaFree waits for
// the whole device, and a battery makes thousands of calls.
//
// Header-only, no device code; CUDA builds only (device_buffer.h).
#pragma once

#include <string>
#include <vector>

#include "suites/harness/call.h"
#include "suites/harness/device_buffer.h"
#include "suites/harness/host_call.h"

namespace samplecheck::harness {

class device_call {
 public:
  device_call() = default;
  // Uploads the call; throws bad_request (input not representable) or device_error.
  explicit device_call(const sample_call& call) { load(call); }

  // Uploads another call in place of the last (the same rules as the constructor).
  void load(const sample_call& call) {
    shape_ = shape_of(call);
    input_f32_.assign({}), input_16_.assign({});
    if (call.input_dtype == SC_DTYPE_F32)
      input_f32_.assign(call.input);
    else
      input_16_.assign(encode_input(call));
    row_index_.assign(call.row_index), top_k_.assign(call.top_k);
    top_p_.assign(call.top_p), min_p_.assign(call.min_p), temperature_.assign(call.temperature);
    seed_.assign(call.seed), subsequence_.assign(call.subsequence), offset_.assign(call.offset);
    const auto rows = static_cast<size_t>(shape_.num_output_rows);
    token_.resize(rows + kGuardRows), valid_.resize(rows + kGuardRows);
    reset_outputs();
  }

  // The batch over the device arrays, for `stream` (NULL: the default stream).
  sc_sample_batch view(cudaStream_t stream = nullptr) const {
    batch_arrays a;
    a.input = shape_.input_dtype == SC_DTYPE_F32 ? static_cast<const void*>(or_null(input_f32_))
                                                 : or_null(input_16_);
    a.row_index = or_null(row_index_), a.top_k = or_null(top_k_);
    a.top_p = or_null(top_p_), a.min_p = or_null(min_p_), a.temperature = or_null(temperature_);
    a.seed = or_null(seed_), a.subsequence = or_null(subsequence_), a.offset = or_null(offset_);
    a.out_token = token_.get(), a.out_valid = valid_.get();
    return make_batch(shape_, a, stream);
  }

  // Rewrites seeds and offsets in place. Same sizes only: a captured graph holds the
  // addresses, and a new size would have to move them.
  void set_streams(const std::vector<uint64_t>& seed, const std::vector<uint64_t>& offset) {
    if (seed.size() != seed_.size() || offset.size() != offset_.size())
      throw std::invalid_argument(
          "device_call::set_streams: the sizes differ from the uploaded call's");
    seed_.assign(seed), offset_.assign(offset);
  }

  // Sentinels in the output rows and canaries in the guard rows, as before a first call.
  void reset_outputs() {
    const auto rows = static_cast<size_t>(shape_.num_output_rows);
    const auto tokens = guarded_buffer(rows, kUnwrittenToken, kGuardToken);
    const auto valid = guarded_buffer(rows, kUnwrittenValid, kGuardValid);
    token_.upload(tokens.data(), tokens.size()), valid_.upload(valid.data(), valid.size());
  }

  // After the device has finished the call: downloads the outputs into `call` (the
  // request uploaded here) and judges them (finish_call). Throws device_error.
  call_status finish(sc_status returned, const char* message, sample_call& call) const {
    return finish_call(returned, message, call, token_.read(), valid_.read());
  }

 private:
  batch_shape shape_;
  device_buffer<float> input_f32_;
  device_buffer<uint16_t> input_16_;
  device_buffer<int32_t> row_index_, top_k_;
  device_buffer<float> top_p_, min_p_, temperature_;
  device_buffer<uint64_t> seed_, subsequence_, offset_;
  device_buffer<int32_t> token_;
  device_buffer<uint8_t> valid_;
};

// One call of a CUDA subject on `d`, synchronised: fresh sentinels and canaries, the
// call on the default stream, the outputs into `call` and judged. A CUDA failure of
// the harness's own calls comes back as call_fault::device, never as an exception.
inline call_status run_device_call(const sc_sampler& s, device_call& d, sample_call& call) {
  sc_status returned = SC_OK;
  char message[1024] = {0};
  try {
    d.reset_outputs();
    const sc_sample_batch b = d.view();
    returned = s.sample(s.context, &b, message, sizeof message);
    message[sizeof message - 1] = '\0';  // a subject that forgot the NUL cannot overrun us
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after sample");
    return d.finish(returned, message, call);
  } catch (const device_error& e) {
    std::string words = e.what();
    if (returned != SC_OK)
      words += "; the subject had returned status " + std::to_string(returned) + ": " + message;
    return {call_fault::device, returned, std::move(words), -1};
  }
}

}  // namespace samplecheck::harness
