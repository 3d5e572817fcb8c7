// Per-call latency of the CUDA samplers over a decode-sized grid: B in {1, 8, 32, 64},
// V in {32768, 151936}; 30 warm-up calls, then 200 timed calls, once measuring the
// host-side call alone and once synchronising the stream; median and interquartile
// range in microseconds. The 200 calls are spread over 8 seed sets (25 calls
// each, after 30 warm-ups each): a rejection sampler's time is its rounds', and
// its rounds depend on the draws, so one fixed seed times one lucky or unlucky
// draw.
//
// Two ways in for each subject:
//   abi    sc_sampler::sample() as the battery calls it. It reads the kernels'
//          argument check back (bad input never passes silently), so it is
//          synchronous: host-side and synchronised times coincide.
//   graph  the same call captured once in a CUDA graph and replayed, as a serving
//          engine runs its decode step; no read-back (capture skips it).
//          graph_host times the host-side launch, graph_sync launch + synchronise,
//          graph_burst the device time per call (CUDA events around 50 replays
//          issued back to back, so launch and synchronise latency are hidden).
// Filters: top_k = 20, top_p = 0.95 (Qwen3's generation_config) on the subjects that
// declare them, temperature 0.6 on logits subjects. The HBM column is the time to
// read the probabilities once at 4.8 TB/s (an H200's datasheet bandwidth); the
// floor.* rows of each (B, V) time what a family of samplers must pay at least
// (floor_kernels.cu): reading the rows once, that plus a Philox output a token,
// one block a row reading its row once, and a device sort of the rows.
// tools/bench/sampler_gpu/torch_samplers.py times torch.multinomial and SGLang's
// Gumbel rule on the same grid, in the same way.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_samplers.h"
#include "kernels/cuda/tests/device_batch_support.h"
#include "tools/bench/sampler_gpu/floor_kernels.h"

using namespace samplecheck::cuda_test;

namespace {

struct spread {
  double median_us, iqr_us;
};

spread summarise(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    const double x = q * (us.size() - 1);
    const size_t i = static_cast<size_t>(x);
    return i + 1 < us.size() ? us[i] + (x - i) * (us[i + 1] - us[i]) : us[i];
  };
  return {at(0.5), at(0.75) - at(0.25)};
}

// Zipf(1.1) rows, each on its own random permutation of the token ids.
std::vector<float> zipf_rows(int64_t rows, int64_t v, std::mt19937_64& rng) {
  std::vector<float> weights(v);
  double total = 0;
  for (int64_t i = 0; i < v; ++i)
    total += weights[i] = static_cast<float>(1.0 / std::pow(i + 1.0, 1.1));
  for (auto& w : weights) w = static_cast<float>(w / total);
  std::vector<float> out(rows * v);
  std::vector<int64_t> perm(v);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < v; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t i = 0; i < v; ++i) out[r * v + perm[i]] = weights[i];
  }
  return out;
}

template <typename Call>
std::vector<double> time_calls(Call&& call, cudaStream_t stream, bool synchronise, int warmup,
                               int calls) {
  for (int i = 0; i < warmup; ++i) call();
  check_cuda(cudaStreamSynchronize(stream), "sync");
  std::vector<double> us;
  us.reserve(calls);
  for (int i = 0; i < calls; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    if (synchronise) check_cuda(cudaStreamSynchronize(stream), "sync");
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  check_cuda(cudaStreamSynchronize(stream), "sync");
  return us;
}

// Device time per call: events around `per_sample` calls issued back to back.
template <typename Call>
std::vector<double> time_burst(Call&& call, cudaStream_t stream, int warmup, int samples,
                               int per_sample) {
  for (int i = 0; i < warmup; ++i) call();
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "event");
  check_cuda(cudaEventCreate(&stop), "event");
  std::vector<double> us;
  for (int s = 0; s < samples; ++s) {
    check_cuda(cudaEventRecord(start, stream), "record");
    for (int i = 0; i < per_sample; ++i) call();
    check_cuda(cudaEventRecord(stop, stream), "record");
    check_cuda(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    us.push_back(1e3 * ms / per_sample);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return us;
}

// `call` captured once into a CUDA graph on `stream`; operator() replays it.
class captured_call {
 public:
  template <typename Call>
  captured_call(Call&& call, cudaStream_t stream) : stream_(stream) {
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    call();
    check_cuda(cudaStreamEndCapture(stream, &graph_), "end capture");
    check_cuda(cudaGraphInstantiate(&exec_, graph_, 0), "instantiate");
  }
  ~captured_call() {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  captured_call(const captured_call&) = delete;
  captured_call& operator=(const captured_call&) = delete;
  void operator()() const { check_cuda(cudaGraphLaunch(exec_, stream_), "graph launch"); }

 private:
  cudaStream_t stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

struct bench_options {
  std::string csv_path;
  std::vector<std::string> only;  // subject name parts; empty: every subject
  int warmup = 30, calls = 200, seed_sets = 8;
  std::vector<int64_t> batches{1, 8, 32, 64}, vocabs{32768, 151936};
  std::string ignored;
};

void add_options(CLI::App& app, bench_options& o) {
  app.add_option("--csv", o.csv_path, "also write the rows as CSV here");
  app.add_option("--warmup", o.warmup);
  app.add_option("--calls", o.calls, "timed calls a row, split evenly over the seed sets");
  app.add_option("--seed-sets", o.seed_sets,
                 "independent seed sets a row is timed over: a rejection sampler's time depends on "
                 "its draws")
      ->check(CLI::PositiveNumber);
  app.add_option("--batches", o.batches);
  app.add_option("--vocabs", o.vocabs);
  app.add_option("--subject", o.only, "only subjects whose name contains one of these");
  app.add_option("--fixtures", o.ignored, "accepted for ctest; unused");
}

// The rows on stdout and in the CSV file, when there is one (floors have B = V = 0).
class result_table {
 public:
  explicit result_table(const std::string& csv_path) {
    if (!csv_path.empty()) {
      csv_.open(csv_path);
      csv_ << "impl,mode,B,V,median_us,iqr_us,hbm_read_us\n";
    }
    std::printf("%-30s %-6s %4s %7s %12s %10s %9s\n", "subject", "mode", "B", "V", "median_us",
                "iqr_us", "hbm_us");
  }

  void row(const std::string& name, const char* mode, int64_t b, int64_t v, const spread& t,
           double hbm_us) {
    std::printf("%-30s %-10s %4lld %7lld %12.1f %10.1f %9.2f\n", name.c_str(), mode,
                static_cast<long long>(b), static_cast<long long>(v), t.median_us, t.iqr_us,
                hbm_us);
    if (csv_.is_open())
      csv_ << name << ',' << mode << ',' << b << ',' << v << ',' << t.median_us << ',' << t.iqr_us
           << ',' << hbm_us << '\n';
  }

 private:
  std::ofstream csv_;
};

// The floor under every row: a 4-byte memset, issued directly and as a one-node
// graph, then synchronised (no sampler call can be cheaper), and empty kernels
// launched directly and as a one-node graph.
void time_launch_floors(result_table& table, const bench_options& o, int sms, cudaStream_t stream) {
  const int warmup = o.warmup, calls = o.calls;
  device_array<uint32_t> word(std::vector<uint32_t>(1, 0));
  auto memset_call = [&] { check_cuda(cudaMemsetAsync(word.get(), 0, 4, stream), "memset"); };
  const captured_call memset_graph(memset_call, stream);
  table.row("floor.memset4", "abi", 0, 0,
            summarise(time_calls(memset_call, stream, true, warmup, calls)), 0.0);
  table.row("floor.memset4", "graph_sync", 0, 0,
            summarise(time_calls(memset_graph, stream, true, warmup, calls)), 0.0);
  for (const unsigned blocks : {1u, 8u * static_cast<unsigned>(sms)}) {
    auto empty = [&] {
      check_cuda(samplecheck::bench::launch_empty(blocks, 256, stream), "empty kernel");
    };
    const spread sync = summarise(time_calls(empty, stream, true, warmup, calls));
    const spread burst = summarise(time_burst(empty, stream, warmup, 20, 50));
    // The same kernel as a one-node graph: the floor of the graph_* rows.
    const captured_call replay(empty, stream);
    const spread graph_sync = summarise(time_calls(replay, stream, true, warmup, calls));
    const spread graph_burst = summarise(time_burst(replay, stream, warmup, 20, 50));
    const std::string name = "floor.empty_kernel_x" + std::to_string(blocks);
    table.row(name, "sync", 0, 0, sync, 0.0);
    table.row(name, "burst", 0, 0, burst, 0.0);
    table.row(name, "graph_sync", 0, 0, graph_sync, 0.0);
    table.row(name, "graph_burst", 0, 0, graph_burst, 0.0);
  }
}

// One (B, V) cell of the grid: the rows, their HBM read time and the stream.
struct grid_cell {
  const device_array<float>& all_rows;
  int64_t b, v;
  double hbm_us;
  cudaStream_t stream;
};

// The floors of this (b, v), each replayed as a one-node graph like the samplers.
void time_read_floors(result_table& table, const bench_options& o, const grid_cell& g) {
  namespace fl = samplecheck::bench;
  const int64_t b = g.b, v = g.v;
  const cudaStream_t stream = g.stream;
  const float* rows = g.all_rows.get();
  const auto floor_rows = [&](const char* name, auto&& call) {
    const captured_call replay(call, stream);
    table.row(name, "graph_sync", b, v,
              summarise(time_calls(replay, stream, true, o.warmup, o.calls)), g.hbm_us);
    table.row(name, "graph_burst", b, v, summarise(time_burst(replay, stream, o.warmup, 20, 50)),
              g.hbm_us);
  };
  device_array<float> out(
      std::vector<float>(std::max(fl::philox_read_outputs(b, v), fl::one_block_read_outputs(b))));
  floor_rows("floor.read_once",
             [&] { check_cuda(fl::launch_read_once(rows, b, v, out.get(), stream), "read once"); });
  floor_rows("floor.philox_read", [&] {
    check_cuda(fl::launch_philox_read(rows, b, v, out.get(), stream), "philox read");
  });
  floor_rows("floor.one_block_read", [&] {
    check_cuda(fl::launch_one_block_read(rows, b, v, out.get(), stream), "one-block read");
  });
  fl::sort_pairs_floor sort(rows, b * v);
  floor_rows("floor.sort_pairs", [&] { check_cuda(sort.launch(stream), "sort pairs"); });
}

bool chosen(const bench_options& o, const std::string& name) {
  return o.only.empty() || std::any_of(o.only.begin(), o.only.end(), [&](const std::string& part) {
           return name.find(part) != std::string::npos;
         });
}

// One batch of the first b rows per seed set, with the filters the subject declares.
std::vector<std::unique_ptr<device_batch>> upload_seed_sets(const sc_sampler& s,
                                                            const std::vector<float>& rows,
                                                            int64_t b, int64_t v, int seed_sets) {
  std::vector<std::unique_ptr<device_batch>> uploaded;
  for (int set = 0; set < seed_sets; ++set) {
    host_batch h;
    h.vocab_size = v;
    h.input.assign(rows.begin(), rows.begin() + b * v);
    distinct_streams(h, b);
    for (auto& seed : h.seed) seed += 1000003ull * static_cast<uint64_t>(set);
    if (s.filters & SC_FILTER_TOP_K) h.top_k.assign(b, 20);
    if (s.filters & SC_FILTER_TOP_P) h.top_p.assign(b, 0.95f);
    if (s.filters & SC_FILTER_TEMPERATURE) h.temperature.assign(b, 0.6f);
    uploaded.push_back(std::make_unique<device_batch>(h));
  }
  return uploaded;
}

// A sampler's four rows at (b, v): through the ABI and as captured graphs.
void time_sampler(result_table& table, const bench_options& o, const sc_sampler* s,
                  const std::vector<float>& rows, const grid_cell& g) {
  const cudaStream_t stream = g.stream;
  const int warmup = o.warmup, seed_sets = o.seed_sets;
  // One batch and one captured graph per seed set.
  const auto uploaded = upload_seed_sets(*s, rows, g.b, g.v, seed_sets);
  std::vector<sc_sample_batch> views;
  for (const auto& batch : uploaded) views.push_back(batch->view(stream));
  char message[512] = "";
  auto abi_call = [&](int set) {
    if (s->sample(s->context, &views[set], message, sizeof message) != SC_OK)
      throw std::runtime_error(std::string(s->name) + ": " + message);
  };
  abi_call(0);  // sizes the scratch before capture
  std::vector<std::unique_ptr<captured_call>> graphs;
  for (int set = 0; set < seed_sets; ++set)
    graphs.push_back(std::make_unique<captured_call>([&] { abi_call(set); }, stream));
  // Each mode's samples, seed set after seed set.
  const int per_set = std::max(1, o.calls / seed_sets), bursts = std::max(2, 20 / seed_sets);
  const auto over_sets = [&](auto&& time_one) {
    std::vector<double> all;
    for (int set = 0; set < seed_sets; ++set) {
      const std::vector<double> us = time_one(set);
      all.insert(all.end(), us.begin(), us.end());
    }
    return all;
  };
  const struct {
    const char* mode;
    std::vector<double> us;
  } runs[] = {
      {"abi", over_sets([&](int set) {
         return time_calls([&] { abi_call(set); }, stream, true, warmup, per_set);
       })},
      {"graph_host", over_sets([&](int set) {
         return time_calls(*graphs[set], stream, false, warmup, per_set);
       })},
      {"graph_sync",
       over_sets([&](int set) { return time_calls(*graphs[set], stream, true, warmup, per_set); })},
      {"graph_burst",
       over_sets([&](int set) { return time_burst(*graphs[set], stream, warmup, bursts, 50); })}};
  for (const auto& run : runs) table.row(s->name, run.mode, g.b, g.v, summarise(run.us), g.hbm_us);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CUDA sampler latency per call"};
  bench_options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIPPED: no CUDA device is present; the bench did not run.\n");
    return 77;
  }
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "properties");
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  result_table table(o.csv_path);
  std::mt19937_64 rng(2026);
  cudaStream_t stream;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  time_launch_floors(table, o, prop.multiProcessorCount, stream);
  for (const int64_t v : o.vocabs) {
    const int64_t max_b = *std::max_element(o.batches.begin(), o.batches.end());
    const std::vector<float> probs = zipf_rows(max_b, v, rng);
    std::vector<float> logits(probs.size());
    for (size_t i = 0; i < probs.size(); ++i) logits[i] = std::log(probs[i]);
    const device_array<float> all_rows(probs);
    for (const int64_t b : o.batches) {
      const grid_cell g{all_rows, b, v, static_cast<double>(b * v * 4) / 4.8e12 * 1e6, stream};
      time_read_floors(table, o, g);
      for (const sc_sampler* s : samplecheck::cuda_samplers()) {
        if (is_mutant(*s) || !chosen(o, s->name)) continue;
        time_sampler(table, o, s, s->input_kind == SC_INPUT_LOGITS ? logits : probs, g);
      }
    }
  }
  cudaStreamDestroy(stream);
  return 0;
}
