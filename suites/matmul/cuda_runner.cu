// The device side of matmul_runner: operands uploaded once, each batch gathered
// from the pool on the device, so a sweep over M = 1..4096 moves only the rows it keeps.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "suites/matmul/matmul_runner.h"

namespace samplecheck::matmul_suite {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda runner: ") + what + ": " + cudaGetErrorString(e));
}

__global__ void gather_rows_kernel(const uint16_t* pool, const int32_t* rows, uint16_t* batch, int64_t m, int64_t k) {
  const int64_t total = m * k;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride)
    batch[i] = pool[rows[i / k] * k + i % k];
}

template <typename T>
struct device_buffer {
  T* data = nullptr;
  size_t count = 0;
  void reserve(size_t n) {
    if (n <= count) return;
    if (data != nullptr) cudaFree(data);
    data = nullptr;
    count = 0;
    check(cudaMalloc(&data, n * sizeof(T)), "cudaMalloc");
    count = n;
  }
  ~device_buffer() {
    if (data != nullptr) cudaFree(data);
  }
};

class cuda_runner final : public matmul_runner {
 public:
  explicit cuda_runner(const sc_matmul& subject) : subject_(subject) {}
  const sc_matmul& subject() const override { return subject_; }

  void load(const matmul_operands& operands) override {
    n_ = operands.n;
    k_ = operands.k;
    pool_rows_ = operands.pool_rows;
    has_bias_ = !operands.bias.empty();
    weight_.reserve(operands.weight.size());
    pool_.reserve(operands.pool.size());
    check(cudaMemcpy(weight_.data, operands.weight.data(), operands.weight.size() * 2, cudaMemcpyHostToDevice), "weight");
    check(cudaMemcpy(pool_.data, operands.pool.data(), operands.pool.size() * 2, cudaMemcpyHostToDevice), "pool");
    if (has_bias_) {
      bias_.reserve(operands.bias.size());
      check(cudaMemcpy(bias_.data, operands.bias.data(), operands.bias.size() * 2, cudaMemcpyHostToDevice), "bias");
    }
  }

  std::vector<uint16_t> run(const std::vector<int32_t>& rows, int32_t launch_config,
                            const std::vector<int64_t>& keep) override {
    const int64_t m = static_cast<int64_t>(rows.size());
    for (const int32_t r : rows)
      if (r < 0 || r >= pool_rows_) throw std::out_of_range("cuda runner: pool row " + std::to_string(r) + " out of range");
    rows_.reserve(rows.size());
    batch_.reserve(static_cast<size_t>(m * k_));
    out_.reserve(static_cast<size_t>(m * n_));
    check(cudaMemcpy(rows_.data, rows.data(), rows.size() * sizeof(int32_t), cudaMemcpyHostToDevice), "rows");
    const int64_t blocks = (m * k_ + 255) / 256;
    gather_rows_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 256>>>(pool_.data, rows_.data,
                                                                                          batch_.data, m, k_);
    check(cudaGetLastError(), "gather");
    check(cudaMemset(out_.data, 0xff, static_cast<size_t>(m * n_) * 2), "sentinel fill");
    sc_matmul_problem p{};
    p.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    p.m = m;
    p.n = n_;
    p.k = k_;
    p.a = batch_.data;
    p.weight = weight_.data;
    p.bias = has_bias_ ? bias_.data : nullptr;
    p.out = out_.data;
    p.launch_config = launch_config;
    char error[512] = {};
    if (subject_.run(subject_.context, &p, error, sizeof error) != SC_OK)
      throw std::runtime_error(std::string(subject_.name) + " failed: " + error);
    check(cudaDeviceSynchronize(), subject_.name);
    std::vector<uint16_t> result;
    if (keep.empty()) {
      result.resize(static_cast<size_t>(m * n_));
      check(cudaMemcpy(result.data(), out_.data, result.size() * 2, cudaMemcpyDeviceToHost), "download");
      return result;
    }
    result.resize(keep.size() * n_);
    for (size_t i = 0; i < keep.size(); ++i)
      check(cudaMemcpy(result.data() + i * n_, out_.data + keep[i] * n_, n_ * 2, cudaMemcpyDeviceToHost), "download");
    return result;
  }

 private:
  const sc_matmul& subject_;
  int64_t n_ = 0, k_ = 0, pool_rows_ = 0;
  bool has_bias_ = false;
  device_buffer<uint16_t> weight_, bias_, pool_, batch_, out_;
  device_buffer<int32_t> rows_;
};

}  // namespace

std::unique_ptr<matmul_runner> make_cuda_runner(const sc_matmul& subject) {
  return std::make_unique<cuda_runner>(subject);
}

}  // namespace samplecheck::matmul_suite
