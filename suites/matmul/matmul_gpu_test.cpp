// GPU half of the matmul suite (H200): the CUDA kernels across every batch size
// 1..4096, the SIMT kernels bit for bit against their CPU emulations, every
// launch configuration, the cuBLAS control that must be caught, and the GPU
// mutants. The tensor-core kernels (cuda.*_mma) take every check except the
// CPU comparison: an mma's internal accumulation is not an IEEE fma sequence
// the CPU can reproduce (kernels/matmul/mma_kernels.h); matmul_mma_test.cpp
// holds their fp64 self-test.
#include <algorithm>
#include <cstdio>
#include <numeric>

#include "kernels/matmul/cpu_matmuls.h"
#include "kernels/matmul/cuda_matmuls.h"
#include "kernels/mutant_catalog.h"
#include "suites/matmul/matmul_test_support.h"

using namespace samplecheck::matmul_suite;
using samplecheck::matmul::cpu_matmuls;
using samplecheck::matmul::cuda_matmuls;

namespace {

constexpr uint64_t kSeed = 20261130;

// Every batch-invariant CUDA subject: the SIMT kernels and the tensor-core ones.
constexpr const char* kInvariantSubjects[] = {"cuda.segmented", "cuda.persistent",
                                              "cuda.segmented_mma", "cuda.persistent_mma"};

std::vector<int64_t> every_m(int64_t last) {
  std::vector<int64_t> sizes(static_cast<size_t>(last));
  std::iota(sizes.begin(), sizes.end(), int64_t{1});
  return sizes;
}

// The CPU list plus the top of the range, for the shapes that do not get every M.
std::vector<int64_t> spot_sizes() {
  std::vector<int64_t> sizes = shapes_fixture().sizes("cpu");
  for (const int64_t m : {2047, 2048, 3000, 4095, 4096}) sizes.push_back(m);
  return sizes;
}

int64_t largest(const std::vector<int64_t>& sizes) {
  return *std::max_element(sizes.begin(), sizes.end());
}

testbed_config full_width(const char* shape, bool bias, int64_t max_m) {
  const matmul_shape& s = shapes_fixture().shape(shape);
  return {s, s.n, bias, kSeed, max_m};
}

// Every M = 1..4096 of `subject` on `shape`, probe rows against M = 1.
void sweep_every_m(const char* subject, const char* shape, int64_t last_m) {
  auto runner = make_runner(find_subject(cuda_matmuls(), subject));
  CAPTURE(subject, shape, last_m);
  matmul_testbed testbed(*runner, full_width(shape, false, last_m));
  const check_result r = testbed.batch_invariance(every_m(last_m));
  std::printf("%s\n", r.summary.c_str());
  std::fflush(stdout);
  require_pass(r);
}

}  // namespace

TEST_CASE("matmul_gpu tensor-core kernels: bitwise batch invariance for every M = 1..4096",
          "[gpu][sweep][mma_sweep]") {
  // The mma kernels run a 4096-row batch in about cuBLAS time, so both get the
  // whole range, the segmented one on O and on down (K = 12288, segments of 3072).
  sweep_every_m("cuda.segmented_mma", "qwen3_8b.o", 4096);
  sweep_every_m("cuda.segmented_mma", "qwen3_8b.down", 4096);
  sweep_every_m("cuda.persistent_mma", "qwen3_8b.o", 4096);
}

TEST_CASE("matmul_gpu bitwise batch invariance for every M = 1..4096", "[gpu][sweep]") {
  // Every M on the layers the cuBLAS control is judged on; probes only (first,
  // middle, last row), 12,288 outputs per M at N = 4096. The SIMT kernels take
  // about as long per row as cuBLAS takes per 100, so the full 1..4096 range
  // runs for the segmented kernel on O, and 1..1024 for the rest (the range
  // where the table switches tiles and split/unsplit); the spot sizes of the
  // next test cover the rest up to 4096.
  struct sweep {
    const char* subject;
    const char* shape;
    int64_t last_m;
  };
  for (const sweep& s :
       {sweep{"cuda.segmented", "qwen3_8b.o", 4096}, sweep{"cuda.segmented", "qwen3_8b.down", 1024},
        sweep{"cuda.persistent", "qwen3_8b.o", 1024}}) {
    sweep_every_m(s.subject, s.shape, s.last_m);
  }
}

TEST_CASE("matmul_gpu bitwise batch invariance on every fixture shape, with and without bias",
          "[gpu]") {
  const std::vector<int64_t> sizes = spot_sizes();
  for (const char* subject : kInvariantSubjects) {
    auto runner = make_runner(find_subject(cuda_matmuls(), subject));
    for (const auto& shape : shapes_fixture().shapes)
      for (const bool bias : {false, true}) {
        CAPTURE(subject, shape.name, bias);
        matmul_testbed testbed(*runner, {shape, shape.n, bias, kSeed, largest(sizes)});
        require_pass(testbed.batch_invariance(sizes));
      }
  }
}

TEST_CASE("matmul_gpu kernels give the bits of their CPU emulation", "[gpu]") {
  // SIMT only: the mma kernels have no CPU emulation (see the top of the file).
  for (const auto& [gpu, cpu] : {std::pair{"cuda.segmented", "cpu.segmented"},
                                 std::pair{"cuda.persistent", "cpu.persistent"}}) {
    auto device = make_runner(find_subject(cuda_matmuls(), gpu));
    auto host = make_runner(find_subject(cpu_matmuls(), cpu));
    for (const auto& shape : shapes_fixture().shapes) {
      // Full width at small M (the CPU pays N x K per row), then a 64-column
      // slice at large M, where the table switches to unsplit 8x4 tiles.
      const int64_t m = shape.n * shape.k > 40'000'000 ? 9 : 33;
      CAPTURE(gpu, shape.name, m);
      matmul_testbed wide(*device, {shape, shape.n, true, kSeed, m});
      require_pass(wide.same_bits_as(*host, m));
      matmul_testbed tall(*device, {shape, std::min<int64_t>(64, shape.n), true, kSeed, 1025});
      require_pass(tall.same_bits_as(*host, 1025));
    }
  }
}

TEST_CASE("matmul_gpu launch configuration independence, split vs unsplit", "[gpu]") {
  const auto& sizes = shapes_fixture().sizes("configs");
  for (const char* subject : kInvariantSubjects) {
    auto runner = make_runner(find_subject(cuda_matmuls(), subject));
    for (const auto& shape : shapes_fixture().shapes) {
      CAPTURE(subject, shape.name);
      matmul_testbed testbed(*runner, {shape, shape.n, true, kSeed, largest(sizes)});
      require_pass(testbed.launch_config_independence(sizes));
    }
  }
}

TEST_CASE("matmul_gpu run-to-run, accuracy and all-ones", "[gpu]") {
  for (const char* subject : kInvariantSubjects) {
    auto runner = make_runner(find_subject(cuda_matmuls(), subject));
    for (const auto& shape : shapes_fixture().shapes) {
      CAPTURE(subject, shape.name);
      matmul_testbed testbed(*runner, {shape, shape.n, true, kSeed, 1025});
      require_pass(testbed.run_to_run(shape.tag == "layer" ? 1025 : 33, 5));
      require_pass(testbed.accuracy(17));
      require_pass(testbed.all_ones(5));
    }
  }
}

TEST_CASE("matmul_gpu cuBLAS control is reported batch-variant", "[gpu][control]") {
  // The checker must be able to fail on a real vendor kernel: cuBLAS picks its
  // algorithm (split-K, tiles) from M, so rows change bits with the batch size.
  auto runner = make_runner(find_subject(cuda_matmuls(), "cuda.cublas"));
  for (const char* shape : {"qwen3_8b.o", "qwen3_8b.down"}) {
    CAPTURE(shape);
    matmul_testbed testbed(*runner, full_width(shape, false, 4096));
    const check_result r = testbed.batch_invariance(every_m(4096));
    std::printf("%s\n", r.summary.c_str());
    std::fflush(stdout);
    require_fail(r);
    // And it is accurate: variance, not error, is what is being caught.
    require_pass(testbed.accuracy(17));
  }
}

TEST_CASE("matmul_gpu every B mutant is killed by its catalog check", "[gpu][mutation]") {
  struct mutant_case {
    const char* id;
    const char* shape;
    bool bias;
    std::vector<int64_t> sizes;
  };
  const std::vector<mutant_case> cases = {
      {"B01", "qwen3_8b.o", false, {1, 2, 64, 65, 129, 1000}},
      {"B02", "k2880", false, {9}},
      {"B03", "qwen3_8b.o", false, {1, 63, 64, 65, 129, 1000}},
      {"B04", "short_k128", false, {1, 3, 33, 129}},
      {"B05", "qwen3_8b.o", true, {1, 2, 1024, 1025, 1500}},
      {"B06", "qwen3_8b.o", false, {64}},
      {"B07", "qwen3_8b.o", false, {1, 2047, 2048, 2049}},
      {"B08", "qwen3_8b.o", false, {1, 264, 265, 1000}},
  };
  for (const auto& c : cases) {
    const std::string check(samplecheck::find_mutant(c.id)->killing_check);
    CAPTURE(c.id, check, c.shape);
    auto mutant = make_runner(find_subject(cuda_matmuls(), std::string("cuda.segmented:") + c.id));
    matmul_testbed testbed(*mutant, full_width(c.shape, c.bias, largest(c.sizes)));
    check_result r;
    // Every row compared, not just the probes: see matmul_testbed.h.
    if (check == "batch_invariance")
      r = testbed.batch_invariance(c.sizes, -1, true);
    else if (check == "accuracy")
      r = testbed.accuracy(c.sizes.front());
    else if (check == "launch_config_independence")
      r = testbed.launch_config_independence(c.sizes);
    else
      r = testbed.run_to_run(c.sizes.front(), 30);
    std::printf("%s\n", r.summary.c_str());
    require_fail(r);
  }
}

TEST_CASE("matmul_gpu small odd problems for compute-sanitizer", "[gpu][sanitizer]") {
  // Odd K (vector loads off), a column count that is no multiple of any tile,
  // split and unsplit, bias, atomics (B06) and cuBLAS: small enough for memcheck.
  // The mma kernels also take K = 2880 (cp.async path, the last segment shorter
  // than the rest), since odd K sends them down their scalar load path.
  const matmul_shape& odd = shapes_fixture().shape("odd_k1001");
  const matmul_shape& k2880 = shapes_fixture().shape("k2880");
  struct sanitizer_case {
    const char* subject;
    const matmul_shape& shape;
  };
  const std::vector<sanitizer_case> cases = {
      {"cuda.segmented", odd},       {"cuda.persistent", odd},      {"cuda.segmented:B06", odd},
      {"cuda.cublas", odd},          {"cuda.segmented_mma", odd},   {"cuda.persistent_mma", odd},
      {"cuda.segmented_mma", k2880}, {"cuda.persistent_mma", k2880}};
  for (const sanitizer_case& c : cases) {
    auto runner = make_runner(find_subject(cuda_matmuls(), c.subject));
    CAPTURE(c.subject, c.shape.name);
    matmul_testbed testbed(*runner, {c.shape, 37, true, kSeed, 130});
    require_pass(testbed.accuracy(130));
    if (runner->subject().num_launch_configs > 0 &&
        std::string(c.subject).find(':') == std::string::npos)
      require_pass(testbed.launch_config_independence({1, 5, 130}));
  }
}
