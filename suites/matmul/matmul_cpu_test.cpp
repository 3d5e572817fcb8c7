// CPU (CI) half of the matmul suite: the emulations of the CUDA kernels must be
// bitwise batch-invariant, launch-configuration independent, run-to-run stable
// and accurate on every fixture shape (as a 16-column slice: matmul_test_support.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "kernels/matmul/cpu_matmuls.h"
#include "kernels/matmul/mma_kernels.h"
#include "suites/matmul/matmul_test_support.h"

using namespace samplecheck::matmul_suite;
using samplecheck::matmul::cpu_matmuls;

namespace {

struct cpu_case {
  const char* shape;
  const char* sizes;  // fixture batch_sizes list
};

// Which batch-size list each shape sweeps on CPU. qkv and gate/up share K with o
// (only N differs, and a slice removes N), so they take the short list.
const cpu_case kInvarianceCases[] = {{"qwen3_8b.o", "cpu"},
                                     {"qwen3_8b.down", "cpu_long_k"},
                                     {"qwen3_8b.qkv", "configs"},
                                     {"qwen3_8b.gate_up", "configs"},
                                     {"k2880", "cpu"},
                                     {"n32", "configs"},
                                     {"odd_k1001", "cpu"},
                                     {"odd_k4097", "configs"},
                                     {"short_k96", "cpu"},
                                     {"short_k128", "cpu"},
                                     {"short_k192", "cpu"},
                                     {"short_k256", "cpu"},
                                     {"short_k512", "cpu"}};

int64_t largest(const std::vector<int64_t>& sizes) {
  return *std::max_element(sizes.begin(), sizes.end());
}

testbed_config config_for(const matmul_shape& shape, bool bias, int64_t max_m) {
  return {shape, std::min(kHostColumns, shape.n), bias, 20261130, max_m};
}

}  // namespace

TEST_CASE("matmul_cpu bitwise batch invariance of the emulated kernels", "[cpu]") {
  const auto& fixture = shapes_fixture();
  for (const char* subject_name : {"cpu.persistent", "cpu.segmented"}) {
    auto runner = make_runner(find_subject(cpu_matmuls(), subject_name));
    for (const auto& c : kInvarianceCases) {
      const auto& sizes = fixture.sizes(c.sizes);
      for (const bool bias : {false, true}) {
        CAPTURE(subject_name, c.shape, bias);
        matmul_testbed testbed(*runner, config_for(fixture.shape(c.shape), bias, largest(sizes)));
        require_pass(testbed.batch_invariance(sizes, -1, true));
      }
    }
  }
}

TEST_CASE("matmul_cpu launch configuration independence, split vs unsplit", "[cpu]") {
  const auto& fixture = shapes_fixture();
  const auto& sizes = fixture.sizes("configs");
  for (const char* subject_name : {"cpu.persistent", "cpu.segmented"}) {
    auto runner = make_runner(find_subject(cpu_matmuls(), subject_name));
    for (const auto& shape : fixture.shapes) {
      CAPTURE(subject_name, shape.name);
      matmul_testbed testbed(*runner, config_for(shape, true, largest(sizes)));
      require_pass(testbed.launch_config_independence(sizes));
    }
  }
}

TEST_CASE("matmul_cpu accuracy against fp64 and all-ones inputs", "[cpu]") {
  const auto& fixture = shapes_fixture();
  for (const char* subject_name : {"cpu.persistent", "cpu.segmented"}) {
    auto runner = make_runner(find_subject(cpu_matmuls(), subject_name));
    for (const auto& shape : fixture.shapes)
      for (const bool bias : {false, true}) {
        CAPTURE(subject_name, shape.name, bias);
        matmul_testbed testbed(*runner, config_for(shape, bias, 33));
        require_pass(testbed.accuracy(33));
        require_pass(testbed.all_ones(5));
      }
  }
}

TEST_CASE("matmul_cpu run-to-run bitwise equality", "[cpu]") {
  const auto& fixture = shapes_fixture();
  for (const char* subject_name : {"cpu.persistent", "cpu.segmented"}) {
    auto runner = make_runner(find_subject(cpu_matmuls(), subject_name));
    for (const char* shape : {"qwen3_8b.o", "k2880", "short_k128"}) {
      CAPTURE(subject_name, shape);
      matmul_testbed testbed(*runner, config_for(fixture.shape(shape), true, 9));
      require_pass(testbed.run_to_run(9, 5));
    }
  }
}

TEST_CASE("matmul_cpu short K (<= 256) takes the persistent kernel's bits", "[cpu]") {
  // K <= 256 stays on the persistent kernel: there each segment would be one block,
  // and split and unsplit launches would round differently (kSegmentMinK, mutant B04).
  const auto& fixture = shapes_fixture();
  auto segmented = make_runner(find_subject(cpu_matmuls(), "cpu.segmented"));
  auto persistent = make_runner(find_subject(cpu_matmuls(), "cpu.persistent"));
  for (const char* shape : {"short_k96", "short_k128", "short_k192", "short_k256"}) {
    CAPTURE(shape);
    matmul_testbed testbed(*segmented, config_for(fixture.shape(shape), true, 65));
    require_pass(testbed.same_bits_as(*persistent, 65));
  }
  // Above 256 the segments change the order, so the bits differ: the comparison can fail.
  const matmul_shape& k512 = fixture.shape("short_k512");
  matmul_testbed testbed(*segmented, {k512, 512, false, 20261130, 65});
  require_fail(testbed.same_bits_as(*persistent, 65));
}

namespace {

// A subject that writes zeros: the checks must refuse it rather than pass.
sc_status write_zeros(void*, const sc_matmul_problem* p, char*, size_t) {
  std::fill_n(p->out, p->m * p->n, uint16_t{0});
  return SC_OK;
}

}  // namespace

TEST_CASE("matmul_cpu checks refuse all-zero outputs", "[cpu]") {
  sc_matmul zeros{};
  zeros.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  zeros.name = "test.zeros";
  zeros.memory_space = SC_MEMORY_HOST;
  zeros.run = write_zeros;
  auto runner = make_runner(zeros);
  matmul_testbed testbed(*runner, config_for(shapes_fixture().shape("qwen3_8b.o"), false, 4));
  const check_result invariance = testbed.batch_invariance({1, 2, 4});
  require_fail(invariance);
  CHECK(invariance.summary.find("trivial") != std::string::npos);
  require_fail(testbed.run_to_run(4, 2));
  require_fail(testbed.accuracy(4));
  require_fail(testbed.all_ones(4));
}

TEST_CASE("matmul_cpu a divergence report names M, row, column, bits and ULPs", "[cpu]") {
  // B01 changes the order only above M = 64: M = 2 must match, the others not.
  auto runner = make_runner(find_subject(cpu_matmuls(), "cpu.segmented:B01"));
  const matmul_shape& shape = shapes_fixture().shape("qwen3_8b.o");
  matmul_testbed testbed(*runner, {shape, 256, false, 20261130, 257});
  const check_result r = testbed.batch_invariance({2, 129, 257}, -1, true);
  require_fail(r);
  INFO(r.summary);
  CHECK(r.trials == 3);
  CHECK(r.summary.find("first divergence at M = 129, batch row ") != std::string::npos);
  CHECK(r.summary.find("), column ") != std::string::npos);
  CHECK(r.summary.find("expected 0x") != std::string::npos);
  CHECK(r.summary.find(" ULP)") != std::string::npos);
}

TEST_CASE("matmul_cpu bf16 ULP distance orders values across zero", "[cpu]") {
  CHECK(bf16_ulp_distance(0x3f80, 0x3f80) == 0);
  CHECK(bf16_ulp_distance(0x3f80, 0x3f81) == 1);
  CHECK(bf16_ulp_distance(0x0001, 0x8001) == 2);  // smallest subnormals either side of zero
  CHECK(bf16_ulp_distance(0x0000, 0x8000) == 0);  // +0 and -0 are the same value, 0 ULP apart
  CHECK(bf16_ulp_distance(0xbf80, 0xbf81) == 1);
}

TEST_CASE("matmul_cpu fixture reader names the line and field of a bad record", "[cpu]") {
  const std::string path = "matmul_bad_fixture.txt";
  {
    std::ofstream out(path);
    out << "# comment\nshape ok 4 8 edge\nshape broken 4 -8 edge\n";
  }
  try {
    read_matmul_fixture(path);
    FAIL("a negative k was accepted");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("line 3: field k") != std::string::npos);
  }
  std::remove(path.c_str());
  const auto& fixture = shapes_fixture();
  CHECK(fixture.shape("qwen3_8b.down").k == 12288);
  CHECK(fixture.shape("qwen3_8b.gate_up").n == 24576);
}

// The tensor-core kernels run only on a GPU, but their launch tables and segment
// plans are host code: a table entry past the config list would be an
// out-of-bounds read in the ABI call, and a segment that is not a whole number of
// k-tiles would straddle two tiles. Checked here, for every fixture shape and M.
namespace {

// The first table entry, over every fixture shape and M = 1..4096, that names no
// config of `count`; "" when there is none.
template <typename Table>
std::string bad_table_entry(Table table, int32_t count) {
  for (const matmul_shape& shape : shapes_fixture().shapes)
    for (int64_t m = 1; m <= 4096; ++m)
      if (const int32_t c = table(m, shape.n); c < 0 || c >= count)
        return fmt::format("{} at M = {}: config {} of {}", shape.name, m, c, count);
  return {};
}

// What is wrong with a segment plan for K, or "".
std::string bad_segment_plan(const samplecheck::matmul::reduction_plan& plan, int64_t k) {
  using namespace samplecheck::matmul;
  if (k <= kSegmentMinK)
    return plan.num_segments == 1 && plan.segment_length == k ? ""
                                                              : "K <= 256 is not one segment of K";
  if (plan.num_segments != kSegments) return "not 4 segments";
  if (plan.segment_length % kMmaKTile != 0) return "a segment is not whole 64-wide k-tiles";
  if (plan.segment_length * kSegments < k) return "the segments do not cover K";
  return {};
}

}  // namespace

TEST_CASE("matmul_cpu the mma launch tables and segment plans are well formed", "[cpu]") {
  using namespace samplecheck::matmul;
  CHECK(bad_table_entry(segmented_mma_table_config, kNumSegmentedMmaConfigs) == "");
  CHECK(bad_table_entry(persistent_mma_table_config, kNumPersistentMmaConfigs) == "");
  for (const matmul_shape& shape : shapes_fixture().shapes)
    for (const bool split : {false, true}) {
      CAPTURE(shape.name, split);
      CHECK(bad_segment_plan(segmented_mma_plan(shape.k, split), shape.k) == "");
    }
  // Negative controls: a table entry one past the list at M = 4096, and segments of
  // 1025 elements (a k-tile straddling two), are caught.
  const auto past_the_list = [](int64_t m, int64_t n) {
    return m == 4096 ? kNumSegmentedMmaConfigs : segmented_mma_table_config(m, n);
  };
  CHECK(bad_table_entry(past_the_list, kNumSegmentedMmaConfigs) != "");
  reduction_plan straddling = segmented_mma_plan(4096, true);
  straddling.segment_length = 1025;
  CHECK(bad_segment_plan(straddling, 4096) != "");
}
