// Rows built ahead of their check (suites/battery/rows_ahead.h, suites/checks/row_cache.h)
// change nothing but when they are built: a row is taken only by the run it was built for
// and only where everything that makes it matches, and a battery judged with them gives
// every check the outcome it gives without them. The progress line's plans are counted by
// the same helper beside the checks.
#include "suites/battery/rows_ahead.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
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

// The progress line's plans are counted on the helper's thread, in plan order, beside the
// checks: the first check waits for its own count alone, and the total says when it is whole.
TEST_CASE("plans are counted beside the checks, each check waiting only for its own",
          "[rows_ahead]") {
  std::mutex gate;
  std::condition_variable opened;
  bool second_may_count = false;
  std::vector<std::thread::id> counted_on;
  std::vector<ahead::job> jobs;
  jobs.push_back({1, [&] {
                    counted_on.push_back(std::this_thread::get_id());
                    return uint64_t{10};
                  }});
  jobs.push_back({4, [&] {
                    std::unique_lock lock(gate);
                    opened.wait(lock, [&] { return second_may_count; });
                    return uint64_t{32};
                  }});
  ahead::builder counter(std::move(jobs), {.counts_all = true});
  CHECK(counter.ready(0) == 0.0);  // a row with no job does not wait
  (void)counter.ready(1);
  CHECK(counter.planned(1) == 10);
  REQUIRE(counted_on.size() == 1);
  CHECK(counted_on.front() != std::this_thread::get_id());
  CHECK(counter.total() == std::pair<uint64_t, bool>{10, false});  // row 4 is still counting
  {
    const std::lock_guard lock(gate);
    second_may_count = true;
  }
  opened.notify_all();
  (void)counter.ready(4);
  CHECK(counter.planned(4) == 32);
  CHECK(counter.total() == std::pair<uint64_t, bool>{42, true});

  bool ran = false;
  std::vector<ahead::job> idle_jobs{{0, [&] { return ran = true, uint64_t{1}; }}};
  ahead::builder idle(std::move(idle_jobs), {});  // neither rows nor counts: nothing runs
  CHECK(idle.ready(0) == 0.0);
  CHECK(idle.total() == std::pair<uint64_t, bool>{0, true});
  CHECK(!ran);
}

// Where rows are kept, one helper both builds and counts: a check inside the window has its
// plan run once, keeping rows, and its count comes from that build; a check beyond it is
// counted (keeping nothing) only once the window is built, and built when the window reaches
// it. So no plan runs twice at once, and none inside the window runs twice.
TEST_CASE("one helper builds the window's rows and counts the plans beyond it", "[rows_ahead]") {
  std::mutex log_mutex;
  std::vector<std::pair<size_t, bool>> log;  // (check, rows kept)
  std::vector<ahead::job> jobs;
  for (size_t check = 0; check < 6; ++check)
    jobs.push_back({check, [&, check] {
                      const std::lock_guard lock(log_mutex);
                      log.emplace_back(check, ahead::building != 0);
                      return uint64_t{check + 1};
                    }});
  ahead::builder helper(std::move(jobs), {.keeps_rows = true, .window = 1, .counts_all = true});
  (void)helper.ready(0);
  CHECK(ahead::running != 0);  // check 0 takes the rows built for it
  while (!helper.total().second) std::this_thread::yield();
  CHECK(helper.total().first == 1 + 2 + 3 + 4 + 5 + 6);
  for (size_t check = 1; check < 6; ++check) {
    (void)helper.ready(check);
    CHECK(helper.planned(check) == check + 1);
  }
  const std::lock_guard lock(log_mutex);
  const std::vector<std::pair<size_t, bool>> expected{
      {0, true},  {1, true}, {2, false}, {3, false}, {4, false},
      {5, false}, {2, true}, {3, true},  {4, true},  {5, true}};
  CHECK(log == expected);
}
