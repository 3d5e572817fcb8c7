// A sample_call in CUDA device memory: run_call's CUDA leg, the subject host's copy of a
// request's arrays (subject_server.cpp), and the batch a test captures in a CUDA graph
// and replays after rewriting the seed and offset tensors in place (Megatron-LM #5697:
// an offset frozen at capture repeats every decode step). The outputs carry the guard
// rows of call.h. load() reuses the device memory of the previous call where it is
// large enough: a cudaFree waits for the whole device, and a battery makes thousands of
// calls.
//
// Header-only, no device code; CUDA builds only (device_buffer.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "suites/harness/call.h"
#include "suites/harness/device_buffer.h"
#include "suites/harness/host_call.h"

namespace samplecheck::harness {

class device_call {
 public:
  device_call() = default;
  // Uploads the call, with sentinels and canaries in its outputs; throws bad_request
  // (input not representable) or device_error.
  explicit device_call(const sample_call& call) {
    load(call);
    reset_outputs();
  }

  // Uploads another call in place of the last (the same rules as the constructor); its
  // outputs are sized, and run_device_call writes their sentinels before the call. An
  // input the last call also sent is not encoded again.
  void load(const sample_call& call) {
    const std::vector<uint16_t>& bits = encoder_.encode(call);
    shape_ = shape_of(call);
    if (call.input_dtype == SC_DTYPE_F32)
      put(input_, or_null(call.input), call.input.size() * 4);
    else
      put(input_, or_null(bits), bits.size() * 2);
    put(row_index_, call.row_index), put(top_k_, call.top_k), put(top_p_, call.top_p);
    put(min_p_, call.min_p), put(temperature_, call.temperature);
    put(seed_, call.seed), put(subsequence_, call.subsequence), put(offset_, call.offset);
    const auto guarded = static_cast<size_t>(shape_.num_output_rows) + kGuardRows;
    token_.resize(guarded), valid_.resize(guarded), route_.resize(0);
  }

  // Uploads a batch whose arrays are host memory (the subject host's view of the shared
  // region): `input_count` input elements, `params` entries a parameter array (input or
  // output rows, by the subject's parameter_indexing), the outputs with their guard rows.
  // A NULL array stays NULL. Throws device_error.
  void load(const batch_shape& shape, const batch_arrays& host, size_t input_count, size_t params) {
    shape_ = shape;
    const auto rows = static_cast<size_t>(shape.num_output_rows), guarded = rows + kGuardRows;
    put(input_, host.input, input_count * (shape.input_dtype == SC_DTYPE_F32 ? 4 : 2));
    put(row_index_, host.row_index, rows), put(top_k_, host.top_k, params);
    put(top_p_, host.top_p, params), put(min_p_, host.min_p, params);
    put(temperature_, host.temperature, params);
    put(seed_, host.seed, rows), put(subsequence_, host.subsequence, rows);
    put(offset_, host.offset, rows);
    put(token_, host.out_token, guarded), put(valid_, host.out_valid, guarded);
    put(route_, host.out_route, guarded);
  }

  // The outputs, guard rows included, into the host arrays a load() from host memory read.
  void download(const batch_arrays& host) const {
    const auto guarded = static_cast<size_t>(shape_.num_output_rows) + kGuardRows;
    if (host.out_token != nullptr) token_.download(host.out_token, guarded);
    if (host.out_valid != nullptr) valid_.download(host.out_valid, guarded);
    if (host.out_route != nullptr) route_.download(host.out_route, guarded);
  }

  // The batch over the device arrays, for `stream` (NULL: the default stream).
  sc_sample_batch view(cudaStream_t stream = nullptr) const {
    batch_arrays a;
    a.input = or_null(input_);
    a.row_index = or_null(row_index_), a.top_k = or_null(top_k_);
    a.top_p = or_null(top_p_), a.min_p = or_null(min_p_), a.temperature = or_null(temperature_);
    a.seed = or_null(seed_), a.subsequence = or_null(subsequence_), a.offset = or_null(offset_);
    a.out_token = token_.get(), a.out_valid = valid_.get(), a.out_route = or_null(route_);
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
  template <class T>
  static void put(device_buffer<T>& buffer, const T* host, size_t count) {
    if (host == nullptr) return buffer.resize(0);  // NULL stays NULL (or_null)
    buffer.resize(count);
    buffer.upload(host, count);
  }
  template <class T>
  static void put(device_buffer<T>& buffer, const std::vector<T>& host) {
    put(buffer, or_null(host), host.size());
  }
  static void put(device_buffer<uint8_t>& buffer, const void* host, size_t bytes) {
    put(buffer, static_cast<const uint8_t*>(host), bytes);
  }

  batch_shape shape_;
  input_encoder encoder_;         // the last call's input, encoded to its dtype
  device_buffer<uint8_t> input_;  // f32, bf16 or f16 elements, as the batch declares
  device_buffer<int32_t> row_index_, top_k_;
  device_buffer<float> top_p_, min_p_, temperature_;
  device_buffer<uint64_t> seed_, subsequence_, offset_;
  device_buffer<int32_t> token_;
  device_buffer<uint8_t> valid_, route_;  // route_: only for a request that has out_route
};

// The subject's call on d's arrays on the default stream, synchronised. `returned` is set
// before the synchronisation may throw device_error. Returns the seconds from the call to
// the end of the synchronisation: the subject's own time (call_status::subject_seconds).
inline double call_on_device(const sc_sampler& s, const device_call& d, sc_status& returned,
                             char* message, size_t size) {
  const auto start = std::chrono::steady_clock::now();
  const sc_sample_batch b = d.view();
  returned = s.sample(s.context, &b, message, size);
  message[size - 1] = '\0';  // a subject that forgot the NUL cannot overrun us
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after sample");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One call of a CUDA subject on `d`, synchronised: fresh sentinels and canaries, the
// call on the default stream, the outputs into `call` and judged. A CUDA failure of
// the harness's own calls comes back as call_fault::device, never as an exception.
inline call_status run_device_call(const sc_sampler& s, device_call& d, sample_call& call) {
  sc_status returned = SC_OK;
  char message[1024] = {0};
  try {
    d.reset_outputs();
    const double seconds = call_on_device(s, d, returned, message, sizeof message);
    call_status st = d.finish(returned, message, call);
    st.subject_seconds = seconds;
    return st;
  } catch (const device_error& e) {
    std::string words = e.what();
    if (returned != SC_OK)
      words += "; the subject had returned status " + std::to_string(returned) + ": " + message;
    return {call_fault::device, returned, std::move(words), -1};
  }
}

}  // namespace samplecheck::harness
