// Protocol overhead: draws per second of one kernel called four ways in one run, the
// way the battery's sampling checks call it (zipf rows of V tokens, one by default, a
// call of many output rows shared among them, each on its own subsequence):
//   in-process  the C ABI called here (harness::run_call), no subject process
//   forked      the same descriptor in a forked subject process, one call at a time
//   drawn       the forked process called as the sampling checks call it (checks::
//               draw_more: the next call written and the last one checked and counted
//               while the subject draws), the same draws
//   exec        samplecheck-subject-host --in-tree NAME behind --exec (what a foreign
//               subject pays: a separate program, the protocol only)
// Repetitions interleave the three, so a load change on the machine hits them alike;
// each prints the median and the spread (min, max) of its repetitions, and the ratio of
// its median to in-process's.
//
//   protocol_bench [--subject cpu.multinomial] [--vocab-size 151936] [--outputs 65536]
//                  [--rows 1] [--dtype f32] [--calls 4] [--repetitions 11] [--host PATH]
// --rows and --dtype give a call the shape of the battery's goodness_of_fit calls (a few
// rows, 16-bit inputs), whose per-row and encoding costs one f32 row leaves out.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "suites/battery/process_memory.h"
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
  bool drawn = false;  // through checks::draw_more
};

// The rows every way draws from, and one call of them.
struct bench_call {
  std::vector<checks::judged_row> rows;
  sb::sample_call templ;
};

// `calls` calls' worth of draws through draw_more, each row's in one run of subsequences:
// the draws made, or 0 when a call failed.
uint64_t draw_as_checks_do(way& w, const bench_call& b, int calls, uint64_t outputs) {
  const size_t n = b.rows.size();
  std::vector<uint64_t> draws(n, outputs * static_cast<uint64_t>(calls) / n), first(n, 0);
  for (size_t i = 1; i < n; ++i) first[i] = first[i - 1] + draws[i - 1];
  checks::drawn_counts out = checks::empty_counts(b.rows);
  checks::draw_more(w.subj, b.rows, first, draws, 1234, out);
  if (out.failure.empty()) return out.samples;
  std::fprintf(stderr, "protocol_bench: %s: %s\n", w.label, out.failure.c_str());
  return 0;
}

// `calls` copies of the call, one run_call at a time: the draws made, or 0 when one failed.
uint64_t call_one_at_a_time(way& w, const bench_call& b, int calls, uint64_t outputs) {
  for (int c = 0; c < calls; ++c) {
    sb::sample_call call = b.templ;
    const sb::call_status st = sb::run_call(w.subj, call);
    if (!st.ok()) {
      std::fprintf(stderr, "protocol_bench: %s: %s\n", w.label, st.describe().c_str());
      return 0;
    }
  }
  return outputs * static_cast<uint64_t>(calls);
}

// The draws per second of `w` on `calls` calls' worth of draws, or a negative number when
// a call failed.
double draws_per_second(way& w, const bench_call& b, int calls, uint64_t outputs) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t drawn =
      w.drawn ? draw_as_checks_do(w, b, calls, outputs) : call_one_at_a_time(w, b, calls, outputs);
  if (drawn == 0) return -1;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(drawn) / s;
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

// The call every way is timed on: `rows` zipf rows of V tokens in the subject's input
// dtype, the outputs dealt among them in turn.
bench_call template_call(const sb::subject& judged, int64_t vocab, int rows, uint64_t outputs) {
  bench_call b;
  for (int r = 0; r < rows; ++r)
    b.rows.push_back(checks::make_row(judged, samplecheck::fixtures::shape::zipf,
                                      {.vocab_size = vocab, .seed = 7 + uint64_t(r)}, {}));
  std::vector<const checks::judged_row*> row_pointers;
  for (const auto& r : b.rows) row_pointers.push_back(&r);
  b.templ = checks::call_for_rows(judged, row_pointers);
  for (uint64_t j = 0; j < outputs; ++j)
    checks::add_output(b.templ, static_cast<int32_t>(j % uint64_t(rows)), 1234, j, 0);
  return b;
}

int32_t dtype_named(const std::string& dtype) {
  return dtype == "f32" ? SC_DTYPE_F32 : dtype == "bf16" ? SC_DTYPE_BF16 : SC_DTYPE_F16;
}

}  // namespace

int main(int argc, char** argv) {
  samplecheck::battery::keep_freed_memory();
  CLI::App app{"subject-process protocol overhead bench"};
  std::string name = "cpu.multinomial", host, dtype = "f32";
  int64_t vocab = 151936;    // the standard budget's V
  uint64_t outputs = 65536;  // the battery's largest call (sampling.cpp kOutputsPerCall)
  int calls = 4, repetitions = 11, rows = 1;
  app.add_option("--subject", name, "an in-tree sampler");
  app.add_option("--vocab-size", vocab, "V of the row");
  app.add_option("--rows", rows, "input rows per call, the outputs dealt among them")
      ->check(CLI::Range(1, 4096));
  app.add_option("--dtype", dtype, "the input dtype")->check(CLI::IsMember({"f32", "bf16", "f16"}));
  app.add_option("--outputs", outputs, "output rows per call");
  app.add_option("--calls", calls, "calls per repetition");
  app.add_option("--repetitions", repetitions, "repetitions of each way");
  app.add_option("--host", host, "samplecheck-subject-host, for the exec way (default: skipped)");
  CLI11_PARSE(app, argc, argv);

  sb::subject_roster catalog;
  catalog.add_in_tree();
  const sb::subject* in_tree = catalog.find(name);
  if (in_tree == nullptr || in_tree->sampler == nullptr ||
      !(in_tree->sampler->input_dtypes & SC_DTYPE_BIT(dtype_named(dtype)))) {
    std::fprintf(stderr, "protocol_bench: no in-tree sampler %s of input dtype %s\n", name.c_str(),
                 dtype.c_str());
    return 2;
  }
  std::vector<way> ways;
  ways.push_back({"in-process", *in_tree, {}});
  ways.back().subj.process = nullptr;
  ways.push_back({"forked", *in_tree, {}});
  ways.push_back({"drawn", *in_tree, {}, true});
  sb::subject_roster exec_catalog;
  if (!host.empty())
    ways.push_back({"exec", *exec_catalog.add_exec(host + " --in-tree " + name).front(), {}});
  for (auto& w : ways) w.subj.input_dtype = dtype_named(dtype);

  // Both subject processes start before anything here may initialise a device: a
  // process forked after CUDA's initialisation could not use it.
  for (auto& w : ways)
    if (w.subj.process) w.subj.process->descriptors();
  const bench_call call = template_call(ways.front().subj, vocab, rows, outputs);
  for (int rep = 0; rep < repetitions + 1; ++rep)  // the first is a warm-up, not counted
    for (auto& w : ways) {
      const double rate = draws_per_second(w, call, calls, outputs);
      if (rate < 0) return 1;
      if (rep > 0) w.rates.push_back(rate);
    }
  std::printf("subject %s  V %lld  %s  %d rows  %llu outputs a call  %d calls  %d repetitions\n",
              name.c_str(), static_cast<long long>(vocab), dtype.c_str(), rows,
              static_cast<unsigned long long>(outputs), calls, repetitions);
  print_rates(ways);
  return 0;
}
