// The truth for the matmul checks: out = a . weight^T (+ bias) in fp64 (Eigen),
// from the same bf16 operands the subjects see (widened exactly).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/numeric.h"

namespace samplecheck {

using matmul_reference_matrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

inline matmul_reference_matrix bf16_matrix_to_double(const std::vector<uint16_t>& bits,
                                                     int64_t rows, int64_t cols, const char* what) {
  if (rows <= 0 || cols <= 0 || static_cast<int64_t>(bits.size()) < rows * cols)
    throw std::invalid_argument(std::string("matmul reference: ") + what + " holds " +
                                std::to_string(bits.size()) + " elements, needs " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  matmul_reference_matrix out(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out(r, c) = bf16_to_float(bits[static_cast<size_t>(r * cols + c)]);
  return out;
}

// [m, n] in fp64; `bias` empty means none. a is [m, k], weight is [n, k].
inline matmul_reference_matrix matmul_reference(const std::vector<uint16_t>& a,
                                                const std::vector<uint16_t>& weight,
                                                const std::vector<uint16_t>& bias, int64_t m,
                                                int64_t n, int64_t k) {
  const matmul_reference_matrix a_d = bf16_matrix_to_double(a, m, k, "a");
  const matmul_reference_matrix w_d = bf16_matrix_to_double(weight, n, k, "weight");
  matmul_reference_matrix out = a_d * w_d.transpose();
  if (!bias.empty()) {
    if (static_cast<int64_t>(bias.size()) != n)
      throw std::invalid_argument("matmul reference: bias holds " + std::to_string(bias.size()) +
                                  " elements, needs n = " + std::to_string(n));
    for (int64_t c = 0; c < n; ++c)
      out.col(c).array() += static_cast<double>(bf16_to_float(bias[c]));
  }
  return out;
}

}  // namespace samplecheck
