// Test support for the CUDA subjects: a batch described on the host, copied into
// device buffers that stay put (so a captured graph can be replayed after the seed
// and offset tensors are rewritten in place), and one call through the ABI.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cuda/cuda_samplers.h"
#include "kernels/samplecheck_plugin.h"
#include "reference/numeric.h"

namespace samplecheck::cuda_test {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

template <typename T>
class device_array {
 public:
  device_array() = default;
  explicit device_array(const std::vector<T>& host) { assign(host); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  ~device_array() {
    if (data_ != nullptr) cudaFree(data_);
  }
  // Same size: rewritten in place (the address a graph captured stays valid).
  void assign(const std::vector<T>& host) {
    if (host.size() != size_) {
      if (data_ != nullptr) cudaFree(data_);
      data_ = nullptr;
      size_ = host.size();
      if (size_ > 0) check_cuda(cudaMalloc(&data_, size_ * sizeof(T)), "cudaMalloc");
    }
    if (size_ > 0) check_cuda(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<T> read() const {
    std::vector<T> host(size_);
    if (size_ > 0) check_cuda(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return host;
  }
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// A batch as the host writes it. Empty parameter vectors mean NULL (filter off).
struct host_batch {
  int64_t vocab_size = 0;
  int32_t dtype = SC_DTYPE_F32;
  std::vector<float> input;  // [input rows * vocab], stored as `dtype` on the device
  std::vector<int32_t> row_index, top_k;
  std::vector<float> top_p, min_p, temperature;
  std::vector<uint64_t> seed, subsequence, offset;
  int64_t input_rows() const { return static_cast<int64_t>(input.size()) / vocab_size; }
  int64_t output_rows() const { return static_cast<int64_t>(seed.size()); }
};

struct call_result {
  sc_status status = SC_OK;
  std::string message;
  std::vector<int32_t> token;
  std::vector<uint8_t> valid;
};

class device_batch {
 public:
  explicit device_batch(const host_batch& h) { upload(h); }
  void upload(const host_batch& h) {
    host_ = h;
    if (h.dtype == SC_DTYPE_F32) {
      input_f32_.assign(h.input);
    } else {
      std::vector<uint16_t> bits(h.input.size());
      for (size_t i = 0; i < bits.size(); ++i) bits[i] = float_to_bf16(h.input[i]);
      input_16_.assign(bits);
    }
    row_index_.assign(h.row_index), top_k_.assign(h.top_k), top_p_.assign(h.top_p);
    min_p_.assign(h.min_p), temperature_.assign(h.temperature);
    seed_.assign(h.seed), subsequence_.assign(h.subsequence), offset_.assign(h.offset);
    const std::vector<int32_t> tokens(h.seed.size(), -7);
    const std::vector<uint8_t> valid(h.seed.size(), 7);
    token_.assign(tokens), valid_.assign(valid);
  }
  // Rewrites seeds and offsets in place.
  void set_streams(const std::vector<uint64_t>& seed, const std::vector<uint64_t>& offset) {
    seed_.assign(seed), offset_.assign(offset);
    host_.seed = seed, host_.offset = offset;
  }
  sc_sample_batch view(cudaStream_t stream = nullptr) const {
    sc_sample_batch b{};
    b.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    b.input = host_.dtype == SC_DTYPE_F32 ? static_cast<const void*>(input_f32_.get()) : input_16_.get();
    b.input_dtype = host_.dtype;
    b.num_input_rows = host_.input_rows();
    b.vocab_size = host_.vocab_size;
    b.num_output_rows = host_.output_rows();
    b.row_index = row_index_.get(), b.top_k = top_k_.get(), b.top_p = top_p_.get();
    b.min_p = min_p_.get(), b.temperature = temperature_.get();
    b.seed = seed_.get(), b.subsequence = subsequence_.get(), b.offset = offset_.get();
    b.out_token = token_.get(), b.out_valid = valid_.get();
    b.stream = stream;
    return b;
  }
  call_result run(const sc_sampler& s) const {
    call_result r;
    char message[512] = "";
    const sc_sample_batch b = view();
    r.status = s.sample(s.context, &b, message, sizeof message);
    r.message = message;
    check_cuda(cudaDeviceSynchronize(), "sync");
    r.token = token_.read(), r.valid = valid_.read();
    return r;
  }
  std::vector<int32_t> tokens() const { return token_.read(); }

 private:
  host_batch host_;
  device_array<float> input_f32_;
  device_array<uint16_t> input_16_;
  device_array<int32_t> row_index_, top_k_;
  device_array<float> top_p_, min_p_, temperature_;
  device_array<uint64_t> seed_, subsequence_, offset_;
  device_array<int32_t> token_;
  device_array<uint8_t> valid_;
};

inline const sc_sampler& subject(std::string_view name) {
  for (const sc_sampler* s : cuda_samplers())
    if (name == s->name) return *s;
  throw std::runtime_error("no CUDA subject named " + std::string(name));
}

inline bool is_mutant(const sc_sampler& s) { return std::string_view(s.name).find(':') != std::string_view::npos; }

// Seeds 1000 + r, offsets 0: every output row its own request.
inline void distinct_streams(host_batch& h, int64_t outputs) {
  h.seed.resize(outputs), h.offset.assign(outputs, 0);
  for (int64_t r = 0; r < outputs; ++r) h.seed[r] = 1000 + static_cast<uint64_t>(r);
}

// log(p), -inf where p == 0: a logits row whose softmax is p.
inline std::vector<float> logits_of(const std::vector<float>& p) {
  std::vector<float> z(p.size());
  for (size_t i = 0; i < p.size(); ++i) z[i] = p[i] > 0.0f ? std::log(p[i]) : -INFINITY;
  return z;
}

// A smooth row over v tokens (p_i proportional to 1 + (i * 7919 mod 97)), every
// token possible and no two neighbours equal: draws from it rarely collide.
inline std::vector<float> spread_row(int64_t v) {
  std::vector<float> p(v);
  double total = 0;
  for (int64_t i = 0; i < v; ++i) total += p[i] = 1.0f + static_cast<float>((i * 7919) % 97);
  for (auto& x : p) x = static_cast<float>(x / total);
  return p;
}

// `outputs` draws from one spread row of v tokens (its logits for a logits
// subject), each output on its own stream.
inline host_batch one_row(const sc_sampler& s, int64_t v, int64_t outputs) {
  host_batch h;
  h.vocab_size = v;
  const auto p = spread_row(v);
  h.input = s.input_kind == SC_INPUT_LOGITS ? logits_of(p) : p;
  h.row_index.assign(outputs, 0);
  distinct_streams(h, outputs);
  return h;
}

}  // namespace samplecheck::cuda_test
