// Battery throughput: samples per second of each CPU subject at every fixture V
// (a zipf row, unfiltered and with the subject's first filter setting), drawn the
// way the checks draw them (one output row per draw, its own subsequence).
//
//   battery_bench [--draws N] [--subjects a,b]
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "suites/battery/process_memory.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/sampling.h"

namespace sb = samplecheck::battery;
namespace checks = samplecheck::checks;

int main(int argc, char** argv) {
  samplecheck::battery::keep_freed_memory();
  CLI::App app{"battery throughput bench"};
  uint64_t draws = 4096;
  std::vector<std::string> names;
  app.add_option("--draws", draws, "draws per row and configuration");
  app.add_option("--subjects", names, "subjects (default: every correct cpu.* subject)")
      ->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  sb::subject_roster catalog;
  catalog.add_in_tree();
  if (names.empty())
    for (const auto& s : catalog.all())
      if (s.kind() == sb::subject_kind::sampler && s.name().rfind("cpu.", 0) == 0 &&
          s.name().find(':') == std::string::npos)
        names.push_back(s.name());
  std::printf("%-28s %8s %-12s %10s %12s\n", "subject", "V", "setting", "draws", "samples/s");
  int status = 0;
  for (const auto& name : names) {
    const sb::subject* s = catalog.find(name);
    if (s == nullptr || s->kind() != sb::subject_kind::sampler) {
      std::fprintf(stderr, "battery_bench: no sampler %s\n", name.c_str());
      return 2;
    }
    const auto grid = samplecheck::fixtures::parameter_grid(s->sampler->filters);
    for (const int64_t V : samplecheck::fixtures::vocab_sizes) {
      for (size_t g = 0; g < std::min<size_t>(grid.size(), 2); ++g) {
        const std::vector<checks::judged_row> rows{checks::make_row(
            *s, samplecheck::fixtures::shape::zipf, {.vocab_size = V, .seed = 7}, grid[g])};
        const auto start = std::chrono::steady_clock::now();
        const auto drawn = checks::draw_counts(*s, rows, {draws}, 1234, 0);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!drawn.failure.empty()) {
          std::printf("%-28s %8lld %-12s FAILED: %s\n", name.c_str(), static_cast<long long>(V),
                      grid[g].label().c_str(), drawn.failure.c_str());
          status = 1;
          continue;
        }
        std::printf("%-28s %8lld %-12s %10llu %12.0f\n", name.c_str(), static_cast<long long>(V),
                    grid[g].label().c_str(), static_cast<unsigned long long>(drawn.samples),
                    static_cast<double>(drawn.samples) / seconds);
      }
    }
  }
  return status;
}
