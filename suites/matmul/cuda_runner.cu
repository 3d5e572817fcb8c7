// The device side of matmul_runner: operands uploaded once, each batch gathered
// from the pool on the device, so a sweep over M = 1..4096 moves only the rows it keeps.
// The output carries guard rows (suites/harness/guard.h), as on the host.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "suites/harness/device_buffer.h"
#include "suites/harness/guard.h"
#include "suites/harness/matmul_call.h"
#include "suites/matmul/matmul_runner.h"

namespace samplecheck::matmul_suite {
namespace {

using harness::device_buffer;

// harness::device_error is a std::runtime_error, as run() promises.
void check(cudaError_t e, const char* what) {
  harness::check_cuda(e, (std::string("cuda runner: ") + what).c_str());
}

__global__ void gather_rows_kernel(const uint16_t* pool, const int32_t* rows, uint16_t* batch,
                                   int64_t m, int64_t k) {
  const int64_t total = m * k;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride)
    batch[i] = pool[rows[i / k] * k + i % k];
}

class cuda_runner final : public matmul_runner {
 public:
  explicit cuda_runner(const sc_matmul& subject) : subject_(subject) {}
  const sc_matmul& subject() const override { return subject_; }

  void load(const matmul_operands& operands) override {
    n_ = operands.n;
    k_ = operands.k;
    pool_rows_ = operands.pool_rows;
    has_bias_ = !operands.bias.empty();
    weight_.assign(operands.weight);
    pool_.assign(operands.pool);
    if (has_bias_) bias_.assign(operands.bias);
  }

  std::vector<uint16_t> run(const std::vector<int32_t>& rows, int32_t launch_config,
                            const std::vector<int64_t>& keep) override {
    const int64_t m = static_cast<int64_t>(rows.size());
    for (const int32_t r : rows)
      if (r < 0 || r >= pool_rows_)
        throw std::out_of_range("cuda runner: pool row " + std::to_string(r) + " out of range");
    const auto cells = static_cast<size_t>(m * n_);
    rows_.assign(rows);
    batch_.resize(static_cast<size_t>(m * k_));
    out_.resize(cells + harness::kGuardRows);
    const int64_t blocks = (m * k_ + 255) / 256;
    gather_rows_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 256>>>(
        pool_.get(), rows_.get(), batch_.get(), m, k_);
    check(cudaGetLastError(), "gather");
    static_assert(kUnwrittenOutput == 0xffff, "the sentinel fill is a byte memset");
    check(cudaMemset(out_.get(), 0xff, cells * sizeof(uint16_t)), "sentinel fill");
    const std::vector<uint16_t> canaries(harness::kGuardRows, harness::kGuardBf16);
    out_.upload(canaries.data(), canaries.size(), cells);
    const sc_matmul_problem p =
        harness::make_problem({m, n_, k_, batch_.get(), weight_.get(),
                               has_bias_ ? bias_.get() : nullptr, out_.get(), launch_config});
    char error[512] = {};
    const sc_status status = subject_.run(subject_.context, &p, error, sizeof error);
    error[sizeof error - 1] = '\0';
    // As on the host: a touched guard row first, then the subject's status, then the device.
    const cudaError_t synced = cudaDeviceSynchronize();
    if (synced == cudaSuccess) {
      std::vector<uint16_t> guards(harness::kGuardRows);
      out_.download(guards.data(), guards.size(), cells);
      const std::string touched = harness::touched_guard(std::span<const uint16_t>(guards), cells,
                                                         harness::kGuardBf16, "out");
      if (!touched.empty()) throw std::runtime_error(std::string(subject_.name) + ": " + touched);
    }
    if (status != SC_OK) throw std::runtime_error(std::string(subject_.name) + " failed: " + error);
    check(synced, subject_.name);
    std::vector<uint16_t> result;
    if (keep.empty()) {
      result.resize(cells);
      out_.download(result.data(), cells);
      return result;
    }
    result.resize(keep.size() * n_);
    for (size_t i = 0; i < keep.size(); ++i)
      out_.download(result.data() + i * n_, static_cast<size_t>(n_),
                    static_cast<size_t>(keep[i] * n_));
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
