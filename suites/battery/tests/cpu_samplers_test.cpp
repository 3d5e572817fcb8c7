// Every correct CPU sampler passes the quick battery at the default seed, with the
// run-wide false-alarm budget of 1e-6 (so a correct subject fails with probability
// <= 1e-6 per run; a failure here is a finding, not noise).
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "suites/battery/catalog.h"
#include "suites/battery/runner.h"

using namespace samplecheck::battery;

TEST_CASE("every correct CPU sampler passes the quick battery", "[battery][cpu]") {
  subject_catalog catalog;
  catalog.add_in_tree();
  run_options options;
  options.budget = quick_budget();
  int subjects = 0;
  double seconds = 0;
  uint64_t samples = 0;
  for (const auto& s : catalog.all()) {
    const std::string name = s.name();
    if (s.kind() != subject_kind::sampler || name.rfind("cpu.", 0) != 0 || name.find(':') != std::string::npos)
      continue;
    const battery_report report = run_battery(s, options, catalog.lookup());
    std::fputs(format_report(report, false).c_str(), stdout);
    CAPTURE(name);
    CHECK(report.passed());
    // At least the exact checks and the statistical core must have run, not been n/a.
    for (const auto* check : {"support", "goodness_of_fit", "replay", "tail", "batch_reorder"})
      for (const auto& c : report.checks)
        if (c.check == check) CHECK(c.result == verdict::pass);
    ++subjects;
    seconds += report.seconds;
    samples += report.samples;
  }
  std::printf("CPU battery: %d subjects, %llu samples in %.1f s (%.0f samples/s)\n", subjects,
              static_cast<unsigned long long>(samples), seconds, samples / seconds);
  CHECK(subjects == 6);
}
