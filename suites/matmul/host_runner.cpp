#include <algorithm>
#include <stdexcept>
#include <string>

#include "suites/harness/guard.h"
#include "suites/harness/matmul_call.h"
#include "suites/matmul/matmul_runner.h"

namespace samplecheck::matmul_suite {
namespace {

class host_runner final : public matmul_runner {
 public:
  explicit host_runner(const sc_matmul& subject) : subject_(subject) {}
  const sc_matmul& subject() const override { return subject_; }
  void load(const matmul_operands& operands) override { operands_ = &operands; }

  std::vector<uint16_t> run(const std::vector<int32_t>& rows, int32_t launch_config,
                            const std::vector<int64_t>& keep) override {
    if (operands_ == nullptr) throw std::logic_error("host runner: run() before load()");
    const int64_t m = static_cast<int64_t>(rows.size()), n = operands_->n, k = operands_->k;
    batch_.resize(static_cast<size_t>(m * k));
    for (int64_t r = 0; r < m; ++r) {
      if (rows[r] < 0 || rows[r] >= operands_->pool_rows)
        throw std::out_of_range("host runner: pool row " + std::to_string(rows[r]) +
                                " out of range");
      std::copy_n(operands_->pool.begin() + rows[r] * k, k, batch_.begin() + r * k);
    }
    const auto cells = static_cast<size_t>(m * n);
    out_ = harness::guarded_buffer(cells, kUnwrittenOutput, harness::kGuardBf16);
    const sc_matmul_problem p = harness::make_problem(
        {m, n, k, batch_.data(), operands_->weight.data(),
         operands_->bias.empty() ? nullptr : operands_->bias.data(), out_.data(), launch_config});
    char error[512] = {};
    const sc_status status = subject_.run(subject_.context, &p, error, sizeof error);
    error[sizeof error - 1] = '\0';
    // A touched guard row first: a subject that wrote past `out` and then failed did both.
    const std::string touched = harness::touched_guard(out_, cells, harness::kGuardBf16, "out");
    if (!touched.empty()) throw std::runtime_error(std::string(subject_.name) + ": " + touched);
    if (status != SC_OK) throw std::runtime_error(std::string(subject_.name) + " failed: " + error);
    out_.resize(cells);
    if (keep.empty()) return out_;
    std::vector<uint16_t> kept;
    kept.reserve(keep.size() * n);
    for (const int64_t r : keep)
      kept.insert(kept.end(), out_.begin() + r * n, out_.begin() + (r + 1) * n);
    return kept;
  }

 private:
  const sc_matmul& subject_;
  const matmul_operands* operands_ = nullptr;
  std::vector<uint16_t> batch_, out_;
};

}  // namespace

std::unique_ptr<matmul_runner> make_host_runner(const sc_matmul& subject) {
  return std::make_unique<host_runner>(subject);
}

std::unique_ptr<matmul_runner> make_runner(const sc_matmul& subject) {
#ifdef SAMPLECHECK_HAVE_CUDA
  if (subject.memory_space == SC_MEMORY_CUDA) return make_cuda_runner(subject);
#endif
  if (subject.memory_space == SC_MEMORY_HOST) return make_host_runner(subject);
  throw std::runtime_error(std::string(subject.name) + ": memory space " +
                           std::to_string(subject.memory_space) + " has no runner in this build");
}

}  // namespace samplecheck::matmul_suite
