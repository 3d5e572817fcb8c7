// Rows built ahead of their check (suites/battery/rows_ahead.h, suites/checks/row_cache.h)
// change nothing but when they are built: a row is taken only by the run it was built for
// and only where everything that makes it matches, and a battery judged with them gives
// every check the outcome it gives without them.
#include "suites/battery/rows_ahead.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"
#include "suites/checks/row_cache.h"

using namespace samplecheck;
namespace ahead = battery::rows_ahead;

namespace {
[[maybe_unused]] const bool checks_registered = (checks::register_checks(), true);

checks::row_spec zipf_spec(uint64_t seed) {
  return {fixtures::shape::zipf, {.vocab_size = 4096, .seed = seed}, {.top_k = 50, .top_p = 0.9f}};
}

// Builds `specs` as the helper thread builds them for run `generation`.
void build_ahead(const battery::subject& s, const std::vector<checks::row_spec>& specs,
                 uint64_t generation) {
  ahead::building = generation;
  (void)checks::make_rows(s, specs);
  ahead::building = 0;
}

bool same_row(const checks::judged_row& a, const checks::judged_row& b) {
  return a.label == b.label && a.values == b.values && a.target.ok() && b.target.ok() &&
         a.target.distribution().prob == b.target.distribution().prob &&
         a.target.distribution().status == b.target.distribution().status;
}
}  // namespace

TEST_CASE("a row built ahead is taken only by its run, and only where all that makes it matches",
          "[rows_ahead]") {
  battery::subject_roster roster;
  roster.add_in_tree();
  battery::subject f32 = *roster.find("cpu.sort_filter");
  f32.process = nullptr;
  battery::subject bf16 = f32;
  bf16.input_dtype = SC_DTYPE_BF16;
  const uint64_t generation = ahead::next_generation();
  build_ahead(f32, {zipf_spec(7)}, generation);
  REQUIRE(checks::rows_ahead_kept() == 1);
  const uint64_t taken_before = checks::rows_ahead_taken();
  const checks::judged_row fresh = checks::make_rows(f32, {zipf_spec(7)}).front();
  CHECK(checks::rows_ahead_taken() == taken_before);  // no run: built afresh, nothing taken

  ahead::running = generation;
  CHECK(same_row(checks::make_rows(bf16, {zipf_spec(7)}).front(),
                 checks::make_rows(bf16, {zipf_spec(7)}).front()));  // another dtype: built
  CHECK(!checks::make_rows(f32, {zipf_spec(8)}).empty());            // another seed: built
  CHECK(checks::rows_ahead_taken() == taken_before);
  CHECK(same_row(
      checks::make_row(f32, fixtures::shape::zipf, zipf_spec(7).options, zipf_spec(7).setting),
      fresh));
  CHECK(checks::rows_ahead_taken() == taken_before + 1);
  CHECK(checks::rows_ahead_kept() == 0);  // taken once

  build_ahead(f32, {zipf_spec(9)}, ahead::next_generation());
  ahead::running = ahead::next_generation();  // a later run: the row was not built for it
  (void)checks::make_rows(f32, {zipf_spec(9)});
  CHECK(checks::rows_ahead_taken() == taken_before + 1);
  CHECK(checks::rows_ahead_kept() == 0);  // an earlier run's rows are dropped
  ahead::running = 0;
}

TEST_CASE("a battery judged with rows built ahead gives each check the same outcome",
          "[rows_ahead]") {
  battery::subject_roster roster;
  roster.add_in_tree();
  const battery::subject* s = roster.find("cpu.sort_filter");
  REQUIRE(s != nullptr);
  battery::run_options o;
  o.budget = battery::quick_budget();
  o.checks = {"support", "goodness_of_fit", "ties", "replay", "tail", "round_advancement"};
  o.rows_ahead = false;
  const battery::battery_report without = battery::run_battery(*s, o, roster.lookup());
  o.rows_ahead = true;
  const uint64_t taken_before = checks::rows_ahead_taken();
  const battery::battery_report with = battery::run_battery(*s, o, roster.lookup());
  CHECK(checks::rows_ahead_taken() > taken_before);
  REQUIRE(with.checks.size() == without.checks.size());
  for (size_t i = 0; i < with.checks.size(); ++i) {
    const auto &a = with.checks[i], &b = without.checks[i];
    CAPTURE(a.check, a.dtype, a.detail);
    CHECK(a.result == b.result);
    CHECK(a.p_value == b.p_value);
    CHECK(a.samples == b.samples);
    CHECK(a.detail == b.detail);
    CHECK(a.power == b.power);
  }
}
