// Every correct CPU sampler passes the quick battery at the default seed, with the
// run-wide false-alarm budget of 1e-6 (so a correct subject fails with probability
// <= 1e-6 per run; a failure here is a finding, not noise). One section a subject, so
// ctest runs them side by side (`-c <subject>`).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"

using namespace samplecheck::battery;
using namespace samplecheck::checks;

namespace {
// The check kit's rows in the battery's table before any test plans a run.
[[maybe_unused]] const bool checks_registered = (register_checks(), true);

const char* const kCorrectCpuSamplers[] = {"cpu.multinomial",   "cpu.gumbel_probs",
                                           "cpu.gumbel_logits", "cpu.sort_filter",
                                           "cpu.dual_pivot",    "cpu.dual_pivot_topk_first"};

bool is_correct_cpu_sampler(const subject& s) {
  const std::string name = s.name();
  return s.kind() == subject_kind::sampler && name.rfind("cpu.", 0) == 0 &&
         name.find(':') == std::string::npos;
}

}  // namespace

TEST_CASE("the table lists every correct CPU sampler of the registry", "[battery][cpu]") {
  subject_roster roster;
  roster.add_in_tree();
  size_t correct = 0;
  for (const auto& s : roster.all()) {
    if (!is_correct_cpu_sampler(s)) continue;
    ++correct;
    CAPTURE(s.name());
    CHECK(std::find(std::begin(kCorrectCpuSamplers), std::end(kCorrectCpuSamplers), s.name()) !=
          std::end(kCorrectCpuSamplers));
  }
  CHECK(correct == std::size(kCorrectCpuSamplers));
}

TEST_CASE("every correct CPU sampler passes the quick battery on every declared dtype",
          "[battery][cpu]") {
  subject_roster roster;
  roster.add_in_tree();
  run_options options;
  options.budget = quick_budget();
  for (const char* name : kCorrectCpuSamplers) {
    DYNAMIC_SECTION(name) {
      const subject* s = roster.find(name);
      REQUIRE(s != nullptr);
      const battery_report report = run_battery(*s, options, roster.lookup());
      std::fputs(format_report(report, false).c_str(), stdout);
      CHECK(report.passed());
      // The exact checks and the statistical core must have run on every dtype, not been
      // n/a; only a probs subject's tail may be n/a in fp16, whose tail rows hold no token
      // below 1e-5 (the float32 tails underflow, the fp16 subnormal row's sit above it).
      for (const auto* check : {"support", "goodness_of_fit", "replay", "tail", "batch_reorder"})
        for (const auto& c : report.checks)
          if (c.check == check) {
            CAPTURE(c.check, c.dtype, c.detail);
            const bool f16_tail = c.check == "tail" && c.dtype == "f16";
            CHECK((c.result == verdict::pass || (f16_tail && c.result == verdict::not_applicable)));
          }
      std::printf("%s: %llu samples in %.1f s\n", name,
                  static_cast<unsigned long long>(report.samples), report.seconds);
    }
  }
}

// stream_agreement (part (c) of the stream contract): the one CPU subject that declares its
// uniform_rule (cpu.multinomial, inverse_cdf_u53) agrees with the rule on the reference stream in
// every dtype; every other correct CPU subject declares none and gets n/a with that reason.
TEST_CASE("stream_agreement: cpu.multinomial agrees and the other CPU samplers are n/a",
          "[battery][cpu]") {
  subject_roster roster;
  roster.add_in_tree();
  run_options options;
  options.budget = quick_budget();
  options.checks = {"stream_agreement"};
  for (const char* name : kCorrectCpuSamplers) {
    const subject* s = roster.find(name);
    REQUIRE(s != nullptr);
    const battery_report report = run_battery(*s, options, roster.lookup());
    CAPTURE(name, format_report(report, false));
    REQUIRE(!report.checks.empty());
    for (const auto& c : report.checks) {
      CAPTURE(c.dtype, c.detail);
      if (std::string(name) == "cpu.multinomial") {
        CHECK(c.result == verdict::pass);
        CHECK(c.detail.find("0 disagreed") != std::string::npos);
      } else {
        CHECK(c.result == verdict::not_applicable);
        CHECK(c.detail.find("uniform_rule undeclared") != std::string::npos);
      }
    }
  }
}
