// Device time per call of the persistent and segmented split-K matmuls (SIMT
// and tensor-core) and cuBLAS on the Qwen3-8B layers, side by side in one run
// (docs/h200.md's matmul table), then every launch configuration of the segmented
// and mma kernels at the --config-m sizes: the data the launch tables are set from.
//
// How a cell is timed, the same for every column (cuBLAS included): after
// warm-up, one sample is cudaEventRecord(start), C calls of the ABI's run back
// to back, cudaEventRecord(stop); per-call time = elapsed / C. The median and
// IQR are over --repeats samples. Back to back, each launch is queued while the
// previous kernel runs, so the host's launch latency is not in the number unless
// the kernel is shorter than it: such a cell is marked '*' (enqueuing took >= 90%
// of the elapsed time, so it is a launch rate, not a kernel time). C is --calls,
// fewer (down to 1) for kernels over --sample-ms / --calls, so the SIMT kernels at
// large M finish. Each call reads a different one of --weight-copies copies of W,
// so W comes from HBM every call, as in a model whose layers' weights together
// exceed the L2 (O's W alone, 32 MB, would mostly stay in an H200's L2 between
// calls); A is shared, as activations in L2 would be.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
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

#define BENCH_CHECK(call)                                                                        \
  do {                                                                                           \
    if (const cudaError_t e = (call); e != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

// Uniform [-1, 1) bf16 from Philox stream (seed, operand), as the suite's operands.
void fill_device(uint16_t* device, int64_t count, uint64_t seed, uint64_t operand) {
  std::vector<uint16_t> host(static_cast<size_t>(count));
  samplecheck::philox_stream s(seed, operand, 0);
  for (auto& v : host)
    v = samplecheck::float_to_bf16(2.0f * samplecheck::uniform_open_one(s.next()) - 1.0f);
  BENCH_CHECK(cudaMemcpy(device, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
}

struct bench_options {
  int warmup = 3;          // untimed calls per cell
  int repeats = 15;        // timed samples per cell
  int calls = 20;          // calls per sample (at most)
  double sample_ms = 5.0;  // fewer calls per sample for kernels over sample_ms / calls
};

// One layer's operands on the device: A for the largest M, `weights` copies of W.
struct layer_operands {
  uint16_t* a = nullptr;
  std::vector<uint16_t*> weights;
  uint16_t* out = nullptr;
};

struct timing {
  double median_us = 0, q1_us = 0, q3_us = 0;
  int calls = 0;
  bool host_bound = false;
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
}

class cell_timer {
 public:
  cell_timer() {
    BENCH_CHECK(cudaEventCreate(&start_));
    BENCH_CHECK(cudaEventCreate(&stop_));
  }
  ~cell_timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  cell_timer(const cell_timer&) = delete;
  cell_timer& operator=(const cell_timer&) = delete;

  timing time(const sc_matmul& sub, int64_t m, const matmul_shape& shape, const layer_operands& ops,
              int32_t config, const bench_options& o) {
    sc_matmul_problem p{};
    p.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    p.m = m;
    p.n = shape.n;
    p.k = shape.k;
    p.a = ops.a;
    p.out = ops.out;
    p.launch_config = config;
    for (int i = 0; i < o.warmup; ++i) sample(sub, p, ops, 1);
    // One call alone sizes the sample: a launch-latency-inclusive upper bound.
    const double single_ms = std::max(sample(sub, p, ops, 1).elapsed_ms, 1e-3);
    const int calls = std::clamp(static_cast<int>(o.sample_ms / single_ms), 1, o.calls);
    std::vector<double> per_call_us, host_share;
    for (int r = 0; r < o.repeats; ++r) {
      const sample_time t = sample(sub, p, ops, calls);
      per_call_us.push_back(1000.0 * t.elapsed_ms / calls);
      host_share.push_back(t.host_ms / t.elapsed_ms);
    }
    return {quantile(per_call_us, 0.5), quantile(per_call_us, 0.25), quantile(per_call_us, 0.75),
            calls, quantile(host_share, 0.5) >= 0.9};
  }

 private:
  struct sample_time {
    double elapsed_ms, host_ms;  // device time between the events; host time spent enqueuing
  };

  sample_time sample(const sc_matmul& sub, sc_matmul_problem& p, const layer_operands& ops,
                     int calls) {
    char error[512] = {};
    BENCH_CHECK(cudaEventRecord(start_));
    const auto host_start = std::chrono::steady_clock::now();
    for (int c = 0; c < calls; ++c) {
      p.weight = ops.weights[next_weight_++ % ops.weights.size()];
      if (sub.run(sub.context, &p, error, sizeof error) != SC_OK) {
        std::fprintf(stderr, "%s failed: %s\n", sub.name, error);
        std::exit(1);
      }
    }
    const std::chrono::duration<double, std::milli> host =
        std::chrono::steady_clock::now() - host_start;
    BENCH_CHECK(cudaEventRecord(stop_));
    BENCH_CHECK(cudaEventSynchronize(stop_));
    float elapsed = 0;
    BENCH_CHECK(cudaEventElapsedTime(&elapsed, start_, stop_));
    return {elapsed, host.count()};
  }

  cudaEvent_t start_, stop_;
  size_t next_weight_ = 0;
};

std::string cell(const timing& x) {
  if (x.median_us <= 0) return fmt::format("{:>8}", "-");
  return fmt::format("{:8.1f} [{:.1f}-{:.1f}]{}", x.median_us, x.q1_us, x.q3_us,
                     x.host_bound ? "*" : "");
}

const sc_matmul& subject(const char* name) {
  for (const sc_matmul* s : samplecheck::matmul::cuda_matmuls())
    if (std::string(name) == s->name) return *s;
  std::fprintf(stderr, "no subject %s\n", name);
  std::exit(1);
}

// A for max_m rows, W (up to `copies` copies, as many as fit in 80% of the free
// memory, at least one) and the output.
layer_operands allocate_layer(const matmul_shape& shape, int64_t max_m, int copies) {
  layer_operands ops;
  const size_t weight_bytes = static_cast<size_t>(shape.n * shape.k) * 2;
  BENCH_CHECK(cudaMalloc(&ops.a, max_m * shape.k * 2));
  BENCH_CHECK(cudaMalloc(&ops.out, max_m * shape.n * 2));
  fill_device(ops.a, max_m * shape.k, 1, 0);
  size_t free_bytes = 0, total_bytes = 0;
  BENCH_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const auto fit =
      static_cast<int>(0.8 * static_cast<double>(free_bytes) / static_cast<double>(weight_bytes));
  copies = std::max(1, std::min(copies, fit));
  for (int c = 0; c < copies; ++c) {
    uint16_t* w = nullptr;
    BENCH_CHECK(cudaMalloc(&w, weight_bytes));
    // Same bits in every copy: only where W is read from differs.
    if (c == 0)
      fill_device(w, shape.n * shape.k, 1, 1);
    else
      BENCH_CHECK(cudaMemcpy(w, ops.weights[0], weight_bytes, cudaMemcpyDeviceToDevice));
    ops.weights.push_back(w);
  }
  return ops;
}

void free_layer(layer_operands& ops) {
  cudaFree(ops.a);
  cudaFree(ops.out);
  for (uint16_t* w : ops.weights) cudaFree(w);
  ops = {};
}

// The command line beside bench_options.
struct run_options {
  std::string fixtures = SAMPLECHECK_FIXTURES_DIR;
  int weight_copies = 4;
  std::vector<int64_t> batch_sizes = {1, 16, 32, 64, 256, 1024, 4096};
  std::vector<int64_t> config_sizes = {1, 16, 32, 64};
  std::string csv;
  bool skip_simt = false;
  std::string only_layer;
};

void add_options(CLI::App& app, bench_options& o, run_options& r) {
  app.add_option("--fixtures", r.fixtures, "fixture folder (layer_shapes.txt under matmul/)");
  app.add_option("--warmup", o.warmup, "untimed calls per cell")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", o.repeats, "timed samples per cell (median and IQR over them)")
      ->check(CLI::PositiveNumber);
  app.add_option("--calls", o.calls, "back-to-back calls per sample, at most")
      ->check(CLI::PositiveNumber);
  app.add_option("--sample-ms", o.sample_ms,
                 "fewer calls per sample for kernels longer than this / --calls")
      ->check(CLI::PositiveNumber);
  app.add_option("--weight-copies", r.weight_copies,
                 "copies of W the calls rotate over (W from HBM each call)")
      ->check(CLI::PositiveNumber);
  app.add_option("--m", r.batch_sizes, "batch sizes");
  app.add_option(
      "--config-m", r.config_sizes,
      "batch sizes at which every launch config of the segmented and mma kernels is timed");
  app.add_option("--csv", r.csv, "also write the table and the config times as CSV here");
  app.add_flag("--skip-simt", r.skip_simt,
               "leave out the SIMT kernels (slow at large M): '-' in their columns");
  app.add_option("--layer", r.only_layer,
                 "only the layer whose fixture name contains this (e.g. qwen3_8b.o)");
}

// Column order of the table; the SIMT kernels are the first two.
constexpr int kSubjects = 5;
constexpr const char* kSubjectNames[kSubjects] = {"cuda.persistent", "cuda.segmented",
                                                  "cuda.persistent_mma", "cuda.segmented_mma",
                                                  "cuda.cublas"};

// Times cells and writes each to the CSV file, when there is one.
class bench_run {
 public:
  bench_run(const bench_options& o, const run_options& r) : o_(o), r_(r) {
    if (r.csv.empty()) return;
    csv_out_.open(r.csv);
    csv_out_ << "layer,n,k,m,subject,config,median_us,q1_us,q3_us,calls_per_sample,host_bound\n";
  }

  timing time(const matmul_shape& shape, int64_t m, const layer_operands& ops, const char* name,
              int32_t config, const char* config_name) {
    const timing t = timer_.time(subject(name), m, shape, ops, config, o_);
    if (csv_out_)
      csv_out_ << shape.name << ',' << shape.n << ',' << shape.k << ',' << m << ',' << name << ','
               << config_name << ',' << t.median_us << ',' << t.q1_us << ',' << t.q3_us << ','
               << t.calls << ',' << t.host_bound << '\n';
    return t;
  }

  // One line of the table: every subject at its launch table's config.
  void table_row(const matmul_shape& shape, int64_t m, const layer_operands& ops) {
    timing t[kSubjects];
    for (int s = 0; s < kSubjects; ++s) {
      if (r_.skip_simt && s < 2) continue;
      t[s] = time(shape, m, ops, kSubjectNames[s], -1, "table");
    }
    const std::string simt_ratio =
        r_.skip_simt ? "-" : fmt::format("{:.2f}x", t[1].median_us / t[4].median_us);
    std::printf("%-18s %5lld | %-23s | %-23s | %-23s | %-23s | %-23s | %-10s | %.2fx\n",
                fmt::format("{} {}x{}", shape.name.substr(9), shape.n, shape.k).c_str(),
                static_cast<long long>(m), cell(t[0]).c_str(), cell(t[1]).c_str(),
                cell(t[2]).c_str(), cell(t[3]).c_str(), cell(t[4]).c_str(), simt_ratio.c_str(),
                t[3].median_us / t[4].median_us);
    std::fflush(stdout);
  }

  // Every launch configuration of one kernel at M: the data behind its launch table
  // (all give the same bits; only time differs). The fastest first.
  void config_line(const matmul_shape& shape, int64_t m, const layer_operands& ops,
                   const char* name) {
    const sc_matmul& kernel = subject(name);
    std::string line;
    double best = 0;
    std::string best_name;
    for (int32_t c = 0; c < kernel.num_launch_configs; ++c) {
      const char* config = kernel.launch_config_name(kernel.context, c);
      const timing x = time(shape, m, ops, name, c, config);
      line += fmt::format(" {} {:.1f}{}", config, x.median_us, x.host_bound ? "*" : "");
      if (best_name.empty() || x.median_us < best) {
        best = x.median_us;
        best_name = config;
      }
    }
    std::printf("  %s %s M = %-4lld: best %s %.1f |%s\n", shape.name.substr(9).c_str(),
                std::string(name).substr(5).c_str(), static_cast<long long>(m), best_name.c_str(),
                best, line.c_str());
    std::fflush(stdout);
  }

 private:
  const bench_options& o_;
  const run_options& r_;
  std::ofstream csv_out_;
  cell_timer timer_;
};

void print_header(const bench_options& o, int weight_copies) {
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf(
      "device: %s; device time per call, us: median [IQR] of %d samples, each %d (fewer for long "
      "kernels) "
      "calls back to back between two events / calls, after %d warm-up calls; W rotated over %d "
      "copies; "
      "'*' = host-bound (a launch rate, not a kernel time)\n",
      prop.name, o.repeats, o.calls, o.warmup, weight_copies);
  std::printf("%-18s %5s | %-23s | %-23s | %-23s | %-23s | %-23s | %-10s | %s\n", "layer (N x K)",
              "M", "persistent", "segmented", "persistent_mma", "segmented_mma", "cuBLAS",
              "seg/cuBLAS", "seg_mma/cuBLAS");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Batch-invariant matmul device time per call on the Qwen3-8B layers"};
  bench_options o;
  run_options r;
  add_options(app, o, r);
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device is present; the matmul bench did not run.\n");
    return 77;
  }
  const auto fixture =
      samplecheck::matmul_suite::read_matmul_fixture(r.fixtures + "/matmul/layer_shapes.txt");
  const int64_t max_m = std::max(*std::max_element(r.batch_sizes.begin(), r.batch_sizes.end()),
                                 *std::max_element(r.config_sizes.begin(), r.config_sizes.end()));
  print_header(o, r.weight_copies);
  bench_run run(o, r);
  for (const matmul_shape& shape : fixture.shapes) {
    if (shape.tag != "layer" || shape.name.find(r.only_layer) == std::string::npos) continue;
    layer_operands ops = allocate_layer(shape, max_m, r.weight_copies);
    if (static_cast<int>(ops.weights.size()) < r.weight_copies)
      std::printf("%s: only %zu copies of W fit in memory\n", shape.name.c_str(),
                  ops.weights.size());
    for (const int64_t m : r.batch_sizes) run.table_row(shape, m, ops);
    for (const char* name : {"cuda.segmented", "cuda.segmented_mma", "cuda.persistent_mma"}) {
      if (r.skip_simt && std::string(name) == "cuda.segmented") continue;
      for (const int64_t m : r.config_sizes) run.config_line(shape, m, ops, name);
    }
    free_layer(ops);
  }
  return 0;
}
