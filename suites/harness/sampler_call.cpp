#include "suites/harness/sampler_call.h"

#include <fmt/format.h>

#include "reference/numeric.h"

#ifdef SAMPLECHECK_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace samplecheck::harness {
namespace {

template <class T>
const T* or_null(const std::vector<T>& v) {
  return v.empty() ? nullptr : v.data();
}

sc_sample_batch host_batch(sample_call& c) {
  sc_sample_batch b{};
  b.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  b.input = c.input.data();
  b.input_dtype = SC_DTYPE_F32;
  b.num_input_rows = c.num_input_rows;
  b.vocab_size = c.vocab_size;
  b.num_output_rows = c.num_output_rows();
  b.row_index = or_null(c.row_index);
  b.top_k = or_null(c.top_k);
  b.top_p = or_null(c.top_p);
  b.min_p = or_null(c.min_p);
  b.temperature = or_null(c.temperature);
  b.seed = c.seed.data();
  b.subsequence = or_null(c.subsequence);
  b.offset = c.offset.data();
  b.out_token = c.tokens.data();
  b.out_valid = c.valid.data();
  return b;
}

#ifdef SAMPLECHECK_HAVE_CUDA
// Device copies of every array of a call; freed on scope exit.
class device_batch {
 public:
  ~device_batch() {
    for (void* p : owned_) cudaFree(p);
  }
  template <class T>
  const T* upload(const T* host, size_t count) {
    if (host == nullptr || count == 0) return nullptr;
    void* d = nullptr;
    check(cudaMalloc(&d, count * sizeof(T)), "cudaMalloc");
    owned_.push_back(d);
    check(cudaMemcpy(d, host, count * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to device");
    return static_cast<const T*>(d);
  }
  template <class T>
  T* output(size_t count) {
    void* d = nullptr;
    check(cudaMalloc(&d, count * sizeof(T)), "cudaMalloc");
    owned_.push_back(d);
    return static_cast<T*>(d);
  }
  void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess && error_.empty()) error_ = fmt::format("{}: {}", what, cudaGetErrorString(e));
  }
  const std::string& error() const { return error_; }

 private:
  std::vector<void*> owned_;
  std::string error_;
};

call_status run_cuda(const sc_sampler& s, sample_call& c, sc_sample_batch& h) {
  device_batch d;
  const size_t in_rows = static_cast<size_t>(c.num_input_rows);
  const size_t out_rows = static_cast<size_t>(c.num_output_rows());
  sc_sample_batch b = h;
  b.input = d.upload(c.input.data(), c.input.size());
  b.row_index = d.upload(h.row_index, c.row_index.size());
  b.top_k = d.upload(h.top_k, c.top_k.empty() ? 0 : in_rows);
  b.top_p = d.upload(h.top_p, c.top_p.empty() ? 0 : in_rows);
  b.min_p = d.upload(h.min_p, c.min_p.empty() ? 0 : in_rows);
  b.temperature = d.upload(h.temperature, c.temperature.empty() ? 0 : in_rows);
  b.seed = d.upload(h.seed, out_rows);
  b.subsequence = d.upload(h.subsequence, c.subsequence.size());
  b.offset = d.upload(h.offset, out_rows);
  b.out_token = d.output<int32_t>(out_rows);
  b.out_valid = d.output<uint8_t>(out_rows);
  d.check(cudaMemcpy(b.out_token, c.tokens.data(), out_rows * sizeof(int32_t), cudaMemcpyHostToDevice), "cudaMemcpy");
  d.check(cudaMemcpy(b.out_valid, c.valid.data(), out_rows, cudaMemcpyHostToDevice), "cudaMemcpy");
  if (!d.error().empty()) return {SC_ERR_DEVICE, d.error()};
  char message[1024] = {0};
  const sc_status st = s.sample(s.context, &b, message, sizeof message);
  d.check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after sample");
  d.check(cudaMemcpy(c.tokens.data(), b.out_token, out_rows * sizeof(int32_t), cudaMemcpyDeviceToHost), "cudaMemcpy tokens");
  d.check(cudaMemcpy(c.valid.data(), b.out_valid, out_rows, cudaMemcpyDeviceToHost), "cudaMemcpy valid");
  if (st != SC_OK) return {st, message};
  if (!d.error().empty()) return {SC_ERR_DEVICE, d.error()};
  return {};
}
#endif

}  // namespace

bool memory_space_available(int32_t memory_space, std::string* why) {
  switch (memory_space) {
    case SC_MEMORY_HOST: return true;
    case SC_MEMORY_CUDA: {
#ifdef SAMPLECHECK_HAVE_CUDA
      int devices = 0;
      if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return true;
      if (why) *why = "no CUDA device is present";
#else
      if (why) *why = "this samplecheck was built without CUDA";
#endif
      return false;
    }
    default:
      if (why) *why = fmt::format("memory space {} is not supported by this samplecheck", memory_space);
      return false;
  }
}

call_status run_call(const sc_sampler& s, sample_call& c) {
  const size_t out_rows = static_cast<size_t>(c.num_output_rows());
  c.tokens.assign(out_rows, kUnwrittenToken);
  c.valid.assign(out_rows, kUnwrittenValid);
  sc_sample_batch b = host_batch(c);
  call_status result;
  if (s.memory_space == SC_MEMORY_HOST) {
    char message[1024] = {0};
    const sc_status st = s.sample(s.context, &b, message, sizeof message);
    result = {st, message};
  } else {
#ifdef SAMPLECHECK_HAVE_CUDA
    if (s.memory_space == SC_MEMORY_CUDA) result = run_cuda(s, c, b);
    else
#endif
      return {SC_ERR_UNSUPPORTED, fmt::format("memory space {} is not available", s.memory_space)};
  }
  if (!result.ok()) {
    if (result.message.empty()) result.message = fmt::format("status {} with no message", result.status);
    return result;
  }
  for (size_t r = 0; r < out_rows; ++r)
    if (c.valid[r] > 1)
      return {SC_ERR_INTERNAL, fmt::format("subject returned SC_OK but never wrote out_valid[{}]", r)};
  return result;
}

}  // namespace samplecheck::harness

// TEMPORARY (lead): replaced by the harness's own dtype support on merge.
namespace samplecheck::harness {
std::vector<float> round_to_dtype(std::vector<float> values, int32_t dtype) {
  if (dtype == SC_DTYPE_BF16)
    for (auto& v : values) v = bf16_to_float(float_to_bf16(v));
  return values;
}
}  // namespace samplecheck::harness
