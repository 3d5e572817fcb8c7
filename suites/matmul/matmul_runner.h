// Runs an sc_matmul subject on batches assembled from a pool of input rows, in
// whatever memory space the subject declares. The checks only see host vectors.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::matmul_suite {

// Operands that stay fixed while the batch changes. bf16 bits, row-major.
struct matmul_operands {
  int64_t n = 0, k = 0;
  std::vector<uint16_t> weight;  // [n, k]
  std::vector<uint16_t> bias;    // [n], or empty for none
  std::vector<uint16_t> pool;    // [pool_rows, k]: rows a batch is assembled from
  int64_t pool_rows = 0;
};

// What an unwritten output reads as (a bf16 NaN): outputs are pre-filled with it.
inline constexpr uint16_t kUnwrittenOutput = 0xffff;

class matmul_runner {
 public:
  virtual ~matmul_runner() = default;
  virtual const sc_matmul& subject() const = 0;
  virtual void load(const matmul_operands& operands) = 0;
  // Runs a batch whose row r is pool row rows[r]. Returns the output rows at the
  // batch positions `keep` ([keep.size(), n]); all rows when keep is empty.
  // Throws std::runtime_error with the subject's message when it fails.
  virtual std::vector<uint16_t> run(const std::vector<int32_t>& rows, int32_t launch_config,
                                    const std::vector<int64_t>& keep) = 0;
};

std::unique_ptr<matmul_runner> make_host_runner(const sc_matmul& subject);
#ifdef SAMPLECHECK_HAVE_CUDA
std::unique_ptr<matmul_runner> make_cuda_runner(const sc_matmul& subject);
#endif
// The runner for the subject's memory space.
std::unique_ptr<matmul_runner> make_runner(const sc_matmul& subject);

}  // namespace samplecheck::matmul_suite
