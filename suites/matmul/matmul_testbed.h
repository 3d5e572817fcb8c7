// One testbed per (subject, shape, bias, seed), CUTLASS style: it generates the
// operands (one Philox stream per operand), runs the subject and compares. A
// test is a configuration plus one of the checks below.
//
// Every comparison is bitwise (memcmp of bf16 bits), never a tolerance, except
// accuracy, whose tolerance is stated there. Checks refuse trivial data: an
// all-zero or unwritten reference output is a harness error, not a pass.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "suites/matmul/matmul_fixture.h"
#include "suites/matmul/matmul_runner.h"

namespace samplecheck::matmul_suite {

struct check_result {
  std::string check;  // "batch_invariance", ... (mutant_catalog's killing_check names)
  bool passed = false;
  int64_t trials = 0;    // batch sizes, configurations or repeats compared
  int64_t failures = 0;  // of those, how many differed
  std::string summary;   // one line; on failure names the first diverging (M, row, column)
  // On failure: the configuration and the first divergence as data (shape, n, k,
  // columns, bias, seed, m, row, column, expected and actual bits), for repro files.
  nlohmann::json evidence;
};

// Host runs compute the first 16 output columns of each layer. Every output column
// has its own reduction, and the order inside it does not depend on N, so a slice
// checks the same arithmetic at 1/256 to 1/1536 of the cost. (What a slice cannot
// exercise: a launch table's N > 8192 branch; device runs use the full widths.)
inline constexpr int64_t kHostColumns = 16;

// bf16 bits as integers ordered like the values: the ULP distance is their difference.
int64_t bf16_ulp_distance(uint16_t a, uint16_t b);

struct testbed_config {
  matmul_shape shape;
  int64_t columns = 0;  // output columns actually used (<= shape.n): CPU runs use a slice
  bool bias = false;
  uint64_t seed = 1;
  int64_t max_m = 1;  // largest batch any check of this testbed will build
};

class matmul_testbed {
 public:
  matmul_testbed(matmul_runner& runner, const testbed_config& config);

  // Probe rows at batch positions first, middle and last of every size in
  // `sizes` must equal, bit for bit, the same rows computed alone (M = 1).
  // With every_row, the filler rows are compared too (each computed alone
  // once): a bf16 output hides most fp32 order changes (a flip needs the fp32
  // difference to cross a rounding boundary, about 1 output in 10^3), so narrow
  // CPU slices compare every row to see enough outputs.
  check_result batch_invariance(const std::vector<int64_t>& sizes, int32_t launch_config = -1,
                                bool every_row = false);
  // `repeats` launches of the same batch give the same bits.
  check_result run_to_run(int64_t m, int repeats);
  // Every launch configuration (tiles, split and unsplit) gives the table's bits.
  check_result launch_config_independence(const std::vector<int64_t>& sizes);
  // ||out - ref||_F / ||ref||_F < 1% against the fp64 reference.
  check_result accuracy(int64_t m);
  // All-ones operands: every output is exactly bf16(K (+ b with bias)). The bias b is
  // bf16(K), not 1: bf16(K + 1) == bf16(K) for K >= 512, which would hide a dropped bias.
  check_result all_ones(int64_t m);
  // The same bits as another subject (a CUDA kernel against its CPU emulation).
  check_result same_bits_as(matmul_runner& other, int64_t m);

  const matmul_operands& operands() const { return operands_; }
  std::string describe() const;  // "cpu.segmented qwen3_8b.o (n 16 of 4096, k 4096, bias)"

 private:
  std::vector<int32_t> batch_rows(int64_t m) const;  // filler rows, no probes
  // Records the first divergence (m, batch row, column, both bit patterns) as evidence.
  void note_divergence(check_result& result, int64_t m, int64_t row, int64_t column,
                       uint16_t expected, uint16_t actual) const;
  check_result finish(check_result result) const;

  matmul_runner& runner_;
  testbed_config config_;
  matmul_operands operands_;
};

}  // namespace samplecheck::matmul_suite
