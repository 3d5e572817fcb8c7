// First GPU check of the tensor-core matmuls (part of matmul_gpu_test, tag
// [mma]): small shapes against the fp64 reference element by element, every
// launch configuration bitwise equal to the table's, rows bitwise equal across
// M, the scalar load path (odd K, misaligned operands), and split launches
// replayed from a CUDA graph (their tile counters must be left zero). Run before the
// suite's long sweeps: a wrong ldmatrix/mma fragment layout fails here in
// seconds with the first bad (row, column) printed.
//
// There is no CPU-emulation comparison for these kernels: an mma's internal
// accumulation of its 16 products is not an IEEE fma sequence a CPU can
// reproduce bit for bit (kernels/matmul/mma_kernels.h).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/matmul/cuda_matmuls.h"
#include "reference/matmul_reference.h"
#include "reference/philox.h"
#include "reference/uniform.h"
#include "suites/harness/matmul_call.h"
#include "suites/matmul/matmul_test_support.h"

using namespace samplecheck::matmul_suite;
using samplecheck::bf16_to_float;
using samplecheck::float_to_bf16;

namespace {

void require_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Device copy of host bits starting `offset` elements into its allocation, so a
// non-zero offset gives a pointer that is not 16-byte aligned.
class device_bits {
 public:
  device_bits(const std::vector<uint16_t>& host, int64_t offset) : offset_(offset) {
    require_cuda(cudaMalloc(&base_, (host.size() + offset + 8) * sizeof(uint16_t)), "cudaMalloc");
    if (!host.empty())
      require_cuda(
          cudaMemcpy(get(), host.data(), host.size() * sizeof(uint16_t), cudaMemcpyHostToDevice),
          "upload");
  }
  ~device_bits() { cudaFree(base_); }
  device_bits(const device_bits&) = delete;
  device_bits& operator=(const device_bits&) = delete;
  uint16_t* get() const { return base_ + offset_; }

 private:
  uint16_t* base_ = nullptr;
  int64_t offset_;
};

std::vector<uint16_t> random_bits(uint64_t stream, int64_t count, float scale) {
  std::vector<uint16_t> v(static_cast<size_t>(count));
  samplecheck::philox_stream s(20261130, stream, 0);
  for (auto& x : v)
    x = float_to_bf16(scale * (2.0f * samplecheck::uniform_open_one(s.next()) - 1.0f));
  return v;
}

// "" when the two outputs (m x n, row-major bf16) are equal bit for bit (memcmp);
// else the count and the first and last differing elements with both bit
// patterns, so a failure names the element, not just the buffer.
std::string bitwise_difference(const std::vector<uint16_t>& want, const std::vector<uint16_t>& got,
                               int64_t n) {
  if (want.size() != got.size())
    return fmt::format("sizes differ: {} vs {}", want.size(), got.size());
  if (std::memcmp(want.data(), got.data(), want.size() * 2) == 0) return {};
  int64_t bad = 0, first = -1, last = -1;
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i]) {
      ++bad;
      if (first < 0) first = static_cast<int64_t>(i);
      last = static_cast<int64_t>(i);
    }
  const auto describe = [&](int64_t i) {
    return fmt::format("(row {}, col {}: want 0x{:04x} {} got 0x{:04x} {})", i / n, i % n, want[i],
                       bf16_to_float(want[i]), got[i], bf16_to_float(got[i]));
  };
  return fmt::format("{} of {} outputs differ bitwise ({:.2f}%); first {}, last {}", bad,
                     want.size(),
                     100.0 * static_cast<double>(bad) / static_cast<double>(want.size()),
                     describe(first), describe(last));
}

// One line per step on stdout, flushed, with the seconds since the test began:
// if the process dies (a signal, a sanitizer's or a wrapper's timeout) the last
// line names the subject, case and config that were running, and the clock
// tells a slow run from a hang.
class progress_log {
 public:
  template <class... Args>
  void line(fmt::format_string<Args...> format, Args&&... args) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::printf("[mma %7.1fs] %s\n", seconds,
                fmt::format(format, std::forward<Args>(args)...).c_str());
    std::fflush(stdout);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

struct small_case {
  int64_t n, k;
  bool bias;
  int64_t misalign;  // elements added to the a and weight pointers (0: aligned)
};

// The operands of one case, on the host and the device, for up to kMaxM rows.
struct case_data {
  static constexpr int64_t kMaxM = 64;
  small_case c;
  std::vector<uint16_t> a, weight, bias;
  device_bits a_dev, weight_dev, bias_dev, out_dev;
  explicit case_data(const small_case& sc)
      : c(sc),
        a(random_bits(0, kMaxM * sc.k, 1.0f)),
        weight(random_bits(1, sc.n * sc.k, 1.0f)),
        bias(sc.bias ? random_bits(2, sc.n, 8.0f) : std::vector<uint16_t>{}),
        a_dev(a, sc.misalign),
        weight_dev(weight, sc.misalign),
        bias_dev(bias, 0),
        out_dev(std::vector<uint16_t>(static_cast<size_t>(kMaxM * sc.n)), 0) {}

  // The first m rows of a, through `subject` with launch config `config`.
  std::vector<uint16_t> run(const sc_matmul& subject, int64_t m, int32_t config) {
    fill_sentinel(m, nullptr);
    enqueue(subject, problem(m, config));
    require_cuda(cudaDeviceSynchronize(), subject.name);
    return download(m);
  }

  // 0xffff (a NaN) in every output, so an unwritten one cannot pass.
  void fill_sentinel(int64_t m, cudaStream_t stream) {
    require_cuda(cudaMemsetAsync(out_dev.get(), 0xff, static_cast<size_t>(m * c.n) * 2, stream),
                 "sentinel fill");
  }

  sc_matmul_problem problem(int64_t m, int32_t config) const {
    return samplecheck::harness::make_problem({m, c.n, c.k, a_dev.get(), weight_dev.get(),
                                               c.bias ? bias_dev.get() : nullptr, out_dev.get(),
                                               config});
  }

  static void enqueue(const sc_matmul& subject, const sc_matmul_problem& p) {
    char error[512] = {};
    if (subject.run(subject.context, &p, error, sizeof error) != SC_OK)
      throw std::runtime_error(std::string(subject.name) + ": " + error);
  }

  std::vector<uint16_t> download(int64_t m) const {
    std::vector<uint16_t> out(static_cast<size_t>(m * c.n));
    require_cuda(cudaMemcpy(out.data(), out_dev.get(), out.size() * 2, cudaMemcpyDeviceToHost),
                 "download");
    return out;
  }

  // "" when every output is within the bound of the fp64 reference; else the
  // count and the first few offenders. Bound: bf16 rounding (2^-8 |ref|) plus
  // 2^-10 sum_k |a w|, far above fp32 accumulation error at K <= 1024 and far
  // below what one misplaced fragment or one dropped k16 step costs.
  std::string compare_to_reference(const std::vector<uint16_t>& out, int64_t m) const {
    const auto ref = samplecheck::matmul_reference(
        std::vector<uint16_t>(a.begin(), a.begin() + m * c.k), weight, bias, m, c.n, c.k);
    int64_t bad = 0;
    std::string first;
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < c.n; ++col) {
        double magnitude = 0.0;
        for (int64_t i = 0; i < c.k; ++i)
          magnitude += std::abs(static_cast<double>(bf16_to_float(a[r * c.k + i])) *
                                bf16_to_float(weight[col * c.k + i]));
        const double want = ref(r, col), got = bf16_to_float(out[r * c.n + col]);
        const double bound = std::ldexp(std::abs(want), -8) + std::ldexp(magnitude, -10);
        if (std::abs(got - want) <= bound) continue;  // a NaN (unwritten 0xffff) fails here
        if (++bad <= 4)
          first += fmt::format(" (row {}, col {}: got {} want {:.6g}, bound {:.3g})", r, col, got,
                               want, bound);
      }
    if (bad == 0) return {};
    return fmt::format("{} of {} outputs off ({:.2f}%):{}", bad, m * c.n, 100.0 * bad / (m * c.n),
                       first);
  }
};

}  // namespace

TEST_CASE("matmul_mma tensor-core kernels against fp64, every config, rows equal across M",
          "[gpu][mma]") {
  // N: a tile multiple, a multiple of 8 but not of 64, and not a multiple of 8.
  // K: one k16 step; K % 16 != 0 (72); 256 (the last single-segment K) and 264
  // (four segments, the third nearly empty, the fourth empty); 320 and 1024
  // (full segments); odd K (scalar path); 1024 with misaligned pointers.
  const std::vector<small_case> cases = {
      {64, 16, false, 0},   {64, 64, true, 0},    {136, 72, true, 0},   {200, 256, false, 0},
      {256, 264, true, 0},  {128, 320, false, 0}, {256, 1024, true, 0}, {96, 97, true, 0},
      {72, 1001, false, 0}, {64, 1024, true, 1}};
  progress_log progress;
  // One section per subject, so a slow tool (racecheck) can run them one at a
  // time: -c cuda.segmented_mma or -c cuda.persistent_mma.
  for (const char* name : {"cuda.segmented_mma", "cuda.persistent_mma"}) DYNAMIC_SECTION(name) {
      const sc_matmul& subject = find_subject(samplecheck::matmul::cuda_matmuls(), name);
      for (const small_case& c : cases) {
        case_data data(c);
        // Batches are prefixes of the same rows: the previous, smaller batch's rows
        // must come back bit for bit.
        std::vector<uint16_t> smaller;
        // 17 and 33: part-filled 16-, 32- and 64-row tiles; 64: two 32-row tiles.
        for (const int64_t m : {int64_t{1}, int64_t{17}, int64_t{33}, int64_t{64}}) {
          CAPTURE(name, c.n, c.k, c.bias, c.misalign, m);
          progress.line("{} n {} k {} bias {} misalign {} m {}: table and {} configs", name, c.n,
                        c.k, c.bias, c.misalign, m, subject.num_launch_configs);
          const std::vector<uint16_t> table = data.run(subject, m, -1);
          const std::string error = data.compare_to_reference(table, m);
          INFO(error);
          REQUIRE(error.empty());
          if (!smaller.empty()) {
            // The first rows of this batch against the whole smaller batch.
            const std::string prefix = bitwise_difference(
                smaller,
                std::vector<uint16_t>(table.begin(),
                                      table.begin() + static_cast<int64_t>(smaller.size())),
                c.n);
            INFO("rows against the smaller batch: " << prefix);
            REQUIRE(prefix.empty());
          }
          smaller = table;
          for (int32_t config = 0; config < subject.num_launch_configs; ++config) {
            INFO("config " << config << " " << subject.launch_config_name(subject.context, config));
            const std::vector<uint16_t> out = data.run(subject, m, config);
            const std::string difference = bitwise_difference(table, out, c.n);
            INFO("against the table config: " << difference);
            REQUIRE(difference.empty());
          }
        }
      }
    }
}

TEST_CASE("matmul_mma split launches replayed from a CUDA graph give the eager bits",
          "[gpu][mma]") {
  // A split launch counts its blocks' arrivals per tile and must leave every
  // counter zero: a replay finding one non-zero would fold no tile and leave the
  // sentinel. Three replays per config, each against the eager table output.
  progress_log progress;
  const sc_matmul& subject =
      find_subject(samplecheck::matmul::cuda_matmuls(), "cuda.segmented_mma");
  case_data data({200, 1024, true, 0});
  const int64_t m = 33;
  const int64_t n = data.c.n;
  const std::vector<uint16_t> eager = data.run(subject, m, -1);
  cudaStream_t stream = nullptr;
  require_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  int32_t split_configs = 0;
  for (int32_t config = 0; config < subject.num_launch_configs; ++config) {
    const std::string name = subject.launch_config_name(subject.context, config);
    if (!name.ends_with(".split")) continue;
    ++split_configs;
    CAPTURE(config, name);
    progress.line("graph replay, config {} {}", config, name);
    // Eager first: the workspace is allocated outside the capture.
    const std::string eager_difference = bitwise_difference(eager, data.run(subject, m, config), n);
    INFO("eager launch against the table config: " << eager_difference);
    REQUIRE(eager_difference.empty());
    sc_matmul_problem p = data.problem(m, config);
    p.stream = stream;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    require_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    case_data::enqueue(subject, p);
    require_cuda(cudaStreamEndCapture(stream, &graph), "end capture");
    require_cuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
    for (int replay = 0; replay < 3; ++replay) {
      data.fill_sentinel(m, stream);
      require_cuda(cudaGraphLaunch(exec, stream), "graph launch");
      require_cuda(cudaStreamSynchronize(stream), "replay");
      const std::string difference = bitwise_difference(eager, data.download(m), n);
      INFO("replay " << replay << " against the eager bits: " << difference);
      REQUIRE(difference.empty());
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(stream);
  REQUIRE(split_configs > 0);
}
