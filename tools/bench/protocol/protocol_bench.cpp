// Protocol overhead: draws per second of one kernel called three ways in one run, the
// way the battery's sampling checks call it (one zipf row of V tokens, a call of many
// output rows, each on its own subsequence):
//   in-process  the C ABI called here (harness::run_call), no subject process
//   forked      the same descriptor in a forked subject process (what qualify does)
//   exec        samplecheck-subject-host --in-tree NAME behind --exec (what a foreign
//               subject pays: a separate program, the protocol only)
// Repetitions interleave the three, so a load change on the machine hits them alike;
// each prints the median and the spread (min, max) of its repetitions, and the ratio of
// its median to in-process's.
//
//   protocol_bench [--subject cpu.multinomial] [--vocab-size 151936] [--outputs 65536]
//                  [--calls 4] [--repetitions 11] [--host PATH]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "suites/battery/subject_roster.h"
#include "suites/checks/sampling.h"
#include "suites/harness/subject_server.h"

namespace sb = samplecheck::battery;
namespace checks = samplecheck::checks;
namespace sh = samplecheck::harness;

namespace {

// One way of calling the kernel and the draws per second of each repetition.
struct way {
  const char* label;
  sb::subject subj;
  std::vector<double> rates;
};

// Times `calls` copies of `templ` on `w`; the draws per second, or a negative number
// when a call failed.
double draws_per_second(way& w, const sb::sample_call& templ, int calls, uint64_t outputs) {
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < calls; ++c) {
    sb::sample_call call = templ;
    const sb::call_status st = sb::run_call(w.subj, call);
    if (!st.ok()) {
      std::fprintf(stderr, "protocol_bench: %s: %s\n", w.label, st.describe().c_str());
      return -1;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(outputs) * calls / s;
}

void print_rates(std::vector<way>& ways) {
  std::printf("%-12s %14s %14s %14s %10s\n", "way", "median draws/s", "min", "max", "vs ABI");
  double reference = 0;
  for (auto& w : ways) {
    std::sort(w.rates.begin(), w.rates.end());
    const double median = w.rates[w.rates.size() / 2];
    if (reference == 0) reference = median;
    std::printf("%-12s %14.0f %14.0f %14.0f %9.2fx\n", w.label, median, w.rates.front(),
                w.rates.back(), median / reference);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"subject-process protocol overhead bench"};
  std::string name = "cpu.multinomial", host;
  int64_t vocab = 151936;    // the standard budget's V
  uint64_t outputs = 65536;  // the battery's largest call (sampling.cpp kOutputsPerCall)
  int calls = 4, repetitions = 11;
  app.add_option("--subject", name, "an in-tree sampler");
  app.add_option("--vocab-size", vocab, "V of the row");
  app.add_option("--outputs", outputs, "output rows per call");
  app.add_option("--calls", calls, "calls per repetition");
  app.add_option("--repetitions", repetitions, "repetitions of each way");
  app.add_option("--host", host, "samplecheck-subject-host, for the exec way (default: skipped)");
  CLI11_PARSE(app, argc, argv);

  sb::subject_roster catalog;
  catalog.add_in_tree();
  const sb::subject* in_tree = catalog.find(name);
  if (in_tree == nullptr || in_tree->sampler == nullptr) {
    std::fprintf(stderr, "protocol_bench: no in-tree sampler %s\n", name.c_str());
    return 2;
  }
  std::vector<way> ways;
  ways.push_back({"in-process", *in_tree, {}});
  ways.back().subj.process = nullptr;
  ways.push_back({"forked", *in_tree, {}});
  sb::subject_roster exec_catalog;
  if (!host.empty())
    ways.push_back({"exec", *exec_catalog.add_exec(host + " --in-tree " + name).front(), {}});

  // Both subject processes start before anything here may initialise a device: a
  // process forked after CUDA's initialisation could not use it.
  for (auto& w : ways)
    if (w.subj.process) w.subj.process->descriptors();
  const checks::judged_row row = checks::make_row(*in_tree, samplecheck::fixtures::shape::zipf,
                                                  {.vocab_size = vocab, .seed = 7}, {});
  sb::sample_call templ = checks::call_for_rows(*in_tree, {&row});
  for (uint64_t j = 0; j < outputs; ++j) checks::add_output(templ, 0, 1234, j, 0);
  for (int rep = 0; rep < repetitions + 1; ++rep)  // the first is a warm-up, not counted
    for (auto& w : ways) {
      const double rate = draws_per_second(w, templ, calls, outputs);
      if (rate < 0) return 1;
      if (rep > 0) w.rates.push_back(rate);
    }
  std::printf("subject %s  V %lld  %llu outputs a call  %d calls a repetition  %d repetitions\n",
              name.c_str(), static_cast<long long>(vocab), static_cast<unsigned long long>(outputs),
              calls, repetitions);
  print_rates(ways);
  return 0;
}
