// Kernel time of the persistent, segmented split-K and cuBLAS matmuls on the
// Qwen3-8B layers, side by side (seed 003's table). Each launch is timed alone
// with CUDA events after warm-up; the table gives the median and the IQR.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/matmul/cuda_matmuls.h"
#include "reference/numeric.h"
#include "reference/philox.h"
#include "reference/uniform.h"
#include "suites/matmul/matmul_fixture.h"

namespace {

using samplecheck::matmul_suite::matmul_shape;

#define BENCH_CHECK(call)                                                                   \
  do {                                                                                      \
    if (const cudaError_t e = (call); e != cudaSuccess) {                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// Uniform [-1, 1) bf16 from Philox stream (seed, operand), as the suite's operands.
void fill_device(uint16_t* device, int64_t count, uint64_t seed, uint64_t operand) {
  std::vector<uint16_t> host(static_cast<size_t>(count));
  samplecheck::philox_stream s(seed, operand, 0);
  for (auto& v : host) v = samplecheck::float_to_bf16(2.0f * samplecheck::uniform_open_one(s.next()) - 1.0f);
  BENCH_CHECK(cudaMemcpy(device, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
}

struct timing {
  double median_us = 0, q1_us = 0, q3_us = 0;
};

timing summarize(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) { return 1000.0 * ms[static_cast<size_t>(q * (ms.size() - 1) + 0.5)]; };
  return {at(0.5), at(0.25), at(0.75)};
}

timing time_launches(const sc_matmul& sub, int64_t m, const matmul_shape& shape, const uint16_t* a,
                     const uint16_t* w, uint16_t* out, int32_t config, int warmup, int repeats, cudaEvent_t start,
                     cudaEvent_t stop) {
  sc_matmul_problem p{};
  p.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  p.m = m;
  p.n = shape.n;
  p.k = shape.k;
  p.a = a;
  p.weight = w;
  p.out = out;
  p.launch_config = config;
  char error[512] = {};
  std::vector<float> ms;
  for (int r = 0; r < warmup + repeats; ++r) {
    BENCH_CHECK(cudaEventRecord(start));
    if (sub.run(sub.context, &p, error, sizeof error) != SC_OK) {
      std::fprintf(stderr, "%s failed: %s\n", sub.name, error);
      std::exit(1);
    }
    BENCH_CHECK(cudaEventRecord(stop));
    BENCH_CHECK(cudaEventSynchronize(stop));
    float elapsed = 0;
    BENCH_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
    if (r >= warmup) ms.push_back(elapsed);
  }
  return summarize(ms);
}

const sc_matmul& subject(const char* name) {
  for (const sc_matmul* s : samplecheck::matmul::cuda_matmuls())
    if (std::string(name) == s->name) return *s;
  std::fprintf(stderr, "no subject %s\n", name);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Batch-invariant matmul kernel times on the Qwen3-8B layers"};
  std::string fixtures = SAMPLECHECK_FIXTURES_DIR;
  int warmup = 5, repeats = 30;
  std::vector<int64_t> batch_sizes = {1, 64, 256, 512, 1024, 4096};
  std::vector<int64_t> config_sizes = {1, 64};
  std::string csv;
  app.add_option("--fixtures", fixtures, "fixture folder (layer_shapes.txt under matmul/)");
  app.add_option("--warmup", warmup, "untimed launches before timing")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", repeats, "timed launches per cell")->check(CLI::PositiveNumber);
  app.add_option("--m", batch_sizes, "batch sizes");
  app.add_option("--config-m", config_sizes, "batch sizes at which every segmented launch config is timed");
  app.add_option("--csv", csv, "also write the table as CSV here");
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device is present; the matmul bench did not run.\n");
    return 77;
  }
  const auto fixture = samplecheck::matmul_suite::read_matmul_fixture(fixtures + "/matmul/layer_shapes.txt");
  const char* names[] = {"cuda.persistent", "cuda.segmented", "cuda.cublas"};
  const int64_t max_m = *std::max_element(batch_sizes.begin(), batch_sizes.end());

  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s; %d warm-up + %d timed launches per cell; kernel time in us, median [IQR]\n", prop.name,
              warmup, repeats);
  std::printf("%-18s %5s | %-22s | %-22s | %-22s | %s\n", "layer (N x K)", "M", "persistent", "segmented", "cuBLAS",
              "seg/cuBLAS");
  std::ofstream csv_out;
  if (!csv.empty()) {
    csv_out.open(csv);
    csv_out << "layer,n,k,m,subject,median_us,q1_us,q3_us\n";
  }
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  for (const matmul_shape& shape : fixture.shapes) {
    if (shape.tag != "layer") continue;
    uint16_t *a = nullptr, *w = nullptr, *out = nullptr;
    BENCH_CHECK(cudaMalloc(&a, max_m * shape.k * 2));
    BENCH_CHECK(cudaMalloc(&w, shape.n * shape.k * 2));
    BENCH_CHECK(cudaMalloc(&out, max_m * shape.n * 2));
    fill_device(a, max_m * shape.k, 1, 0);
    fill_device(w, shape.n * shape.k, 1, 1);
    for (const int64_t m : batch_sizes) {
      timing t[3];
      for (int s = 0; s < 3; ++s) {
        t[s] = time_launches(subject(names[s]), m, shape, a, w, out, -1, warmup, repeats, start, stop);
        if (csv_out)
          csv_out << shape.name << ',' << shape.n << ',' << shape.k << ',' << m << ',' << names[s] << ','
                  << t[s].median_us << ',' << t[s].q1_us << ',' << t[s].q3_us << '\n';
      }
      const auto cell = [](const timing& x) { return fmt::format("{:8.1f} [{:.1f}-{:.1f}]", x.median_us, x.q1_us, x.q3_us); };
      std::printf("%-18s %5lld | %-22s | %-22s | %-22s | %.2fx\n",
                  fmt::format("{} {}x{}", shape.name.substr(9), shape.n, shape.k).c_str(), static_cast<long long>(m),
                  cell(t[0]).c_str(), cell(t[1]).c_str(), cell(t[2]).c_str(), t[1].median_us / t[2].median_us);
      std::fflush(stdout);
    }
    // Every launch configuration of the segmented kernel at decode sizes: the
    // data behind the launch table (all give the same bits; only time differs).
    const sc_matmul& segmented = subject("cuda.segmented");
    for (const int64_t m : config_sizes) {
      if (m > max_m) continue;
      std::string line = fmt::format("  segmented configs M = {:<4}:", m);
      for (int32_t c = 0; c < segmented.num_launch_configs; ++c) {
        const timing x = time_launches(segmented, m, shape, a, w, out, c, warmup, repeats, start, stop);
        line += fmt::format(" {} {:.1f}", segmented.launch_config_name(segmented.context, c), x.median_us);
      }
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
    cudaFree(a);
    cudaFree(w);
    cudaFree(out);
  }
  return 0;
}
