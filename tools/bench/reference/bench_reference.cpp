// Wall time of compute_filtered_distribution on one row of Qwen3's vocabulary
// (151,936 tokens) with top-k + top-p + min-p, on one core. Goal: at most 20 ms.
// Usage: bench_reference [runs] [vocab_size]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <numeric>
#include <vector>

#include "reference/filtered_distribution.h"
#include "reference/philox.h"
#include "reference/uniform.h"

using namespace samplecheck;

namespace {

// A language-model-like row: logit -1.1 ln(rank) (Zipf, exponent ~1.1 after the
// softmax) plus Gaussian noise of sd 0.5, ranks shuffled over the ids. Fixed seed.
std::vector<float> zipf_logits(int64_t vocab_size) {
  philox_stream rng(20261130, 0, 0);
  std::vector<int64_t> rank(static_cast<size_t>(vocab_size));
  std::iota(rank.begin(), rank.end(), 1);
  for (size_t i = rank.size() - 1; i > 0; --i) std::swap(rank[i], rank[rng.next() % (i + 1)]);
  std::vector<float> z(rank.size());
  for (size_t i = 0; i < z.size(); ++i) {
    const double u1 = uniform_open_both(rng.next()), u2 = uniform_open_one(rng.next());
    const double noise = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);  // Box-Muller
    z[i] = static_cast<float>(-1.1 * std::log(static_cast<double>(rank[i])) + 0.5 * noise + 12.0);
  }
  return z;
}

// CPU time of this thread: on a shared machine the wall clock also counts the time
// other processes hold the core, so both are printed.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

struct summary {
  double median, q1, q3, min, max;
};

double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

summary summarise(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {quantile(ms, .5), quantile(ms, .25), quantile(ms, .75), ms.front(), ms.back()};
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 50;
  const int64_t vocab_size = argc > 2 ? std::atoll(argv[2]) : 151936;
  if (runs < 1 || vocab_size < 1) {
    fmt::print(stderr, "usage: bench_reference [runs >= 1] [vocab_size >= 1]\n");
    return 2;
  }
  const auto row = zipf_logits(vocab_size);
  struct config {
    const char* name;
    filter_params params;
  };
  const config configs[] = {
      {"T 0.7, top_k 50, top_p 0.9, min_p 0.05, top_k_first",
       {0.7, 50, 0.9, 0.05, filter_order::top_k_first, tie_policy::keep_ties}},
      {"T 1.0, top_k 1000, top_p 0.95, min_p 0.001, joint",
       {1.0, 1000, 0.95, 0.001, filter_order::joint, tie_policy::lowest_index}},
      // No top-k or min-p: nothing is certainly dropped before the sort, the worst case.
      {"T 1.0, top_p 0.95 only (full sort)",
       {1.0, 0, 0.95, 0.0, filter_order::joint, tie_policy::keep_ties}},
  };
  fmt::print("bench_reference: V = {}, {} runs per configuration, one thread\n", vocab_size, runs);
  for (const auto& c : configs) {
    std::vector<double> ms, cpu_ms;
    int64_t num_in = 0, num_boundary = 0;
    double boundary_mass = 0;
    for (int run = 0; run < runs; ++run) {
      const double cpu_start = thread_cpu_ms();
      const auto start = std::chrono::steady_clock::now();
      const auto result = compute_filtered_distribution(row, input_kind::logits, c.params);
      const auto stop = std::chrono::steady_clock::now();
      cpu_ms.push_back(thread_cpu_ms() - cpu_start);
      if (!result.ok()) {
        fmt::print(stderr, "error: {}\n", result.error().message);
        return 1;
      }
      num_in = result.distribution().num_in, num_boundary = result.distribution().num_boundary;
      boundary_mass = result.distribution().boundary_source_mass;
      ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    fmt::print("{}: IN {}, BOUNDARY {} (source mass {:.2g})\n", c.name, num_in, num_boundary,
               boundary_mass);
    for (const auto& [clock, sample] : {std::pair{"wall", ms}, std::pair{"cpu ", cpu_ms}}) {
      const auto s = summarise(sample);
      fmt::print(
          "  {} median {:.2f} ms, IQR [{:.2f}, {:.2f}] ms ({:.0f}% of median), min {:.2f} ms, max "
          "{:.2f} ms\n",
          clock, s.median, s.q1, s.q3, 100 * (s.q3 - s.q1) / s.median, s.min, s.max);
    }
  }
  return 0;
}
