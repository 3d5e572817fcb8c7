// Calibration and sequential stopping on the CPU subjects, fast enough for CI:
//  - 100 fresh-seed runs of cpu.multinomial's statistical checks (V = 2,048, the quick
//    budget's targets, run-wide alpha 0.05 so that false alarms are expected and
//    countable): no excess of false alarms, and every check's p-values uniform
//    (Anderson-Darling, the median in its band): the collision checks' randomised ones
//    (round_advancement and stream_position Sidak over their parts), ties' Sidak over
//    its groups, goodness_of_fit's rows with the Monte Carlo body (stats/row_tests.h);
//  - ties' large groups (tie_splits.h): the Sidak of a group's 7 dyadic splits uniform
//    over 2,000 simulated null groups, and the halves plan's exact power;
//  - goodness_of_fit's looks: a gross mutant (S07, S15) fails at the first look with
//    a small fraction of the planned draws and its record names the look; a correct
//    subject spends its whole plan; the replay stops at the same look.
#include "suites/campaigns/calibration.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "suites/battery/forked_children.h"
#include "suites/battery/replay.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"
#include "suites/checks/distribution_tests.h"
#include "suites/checks/tie_splits.h"
#include "suites/stats/combine.h"
#include "suites/stats/uniformity.h"

using namespace samplecheck::battery;
using namespace samplecheck::checks;
using namespace samplecheck::campaigns;

namespace {
// The check kit's rows in the battery's table before any test plans a run.
[[maybe_unused]] const bool checks_registered = (register_checks(), true);
run_options in_process_quick() {
  run_options o;
  o.budget = quick_budget();
  o.in_process = true;
  o.dtype = "f32";
  return o;
}

// cpu.multinomial at V = 2,048 and run-wide alpha 0.05, where false alarms are expected
// and countable.
struct calibration_bed {
  subject_roster roster;
  const subject* s = nullptr;
  run_options o = in_process_quick();
  explicit calibration_bed(std::vector<std::string> checks) {
    roster.add_in_tree();
    s = roster.find("cpu.multinomial");
    o.budget.vocab_size = 2048;
    o.alpha = 0.05;
    o.checks = std::move(checks);
  }
};
}  // namespace

TEST_CASE("calibrate: no excess of false alarms, p-values not piled at 1",
          "[battery][calibration]") {
  calibration_bed bed({"goodness_of_fit", "offset_advancement", "per_request_seeds",
                       "parallel_samples", "round_advancement", "stream_position", "ties"});
  REQUIRE(bed.s != nullptr);
  const calibration_summary c = calibrate(*bed.s, bed.o, bed.roster.lookup(), 100, 1, 2);
  std::fputs(format_calibration(bed.s->name(), c).c_str(), stdout);
  REQUIRE(c.checks.size() == 7);
  CHECK(c.failure_p_value >= 1e-3);
  CHECK(c.acceptable(1e-3));
  for (const auto& [name, u] : c.checks) {
    CAPTURE(name, u.false_alarms, u.expected_false_alarms, u.uniformity.median, u.uniformity.ad_p);
    CHECK(u.p_values.size() == 100);
    CHECK(u.false_alarm_p >= 1e-3);
    // Not piled at 1: the old Bonferroni-and-bounds p-values had a median of 1.0.
    CHECK(u.uniformity.median <= kMaxMedianP);
    CHECK(u.uniformity.ks_lower_p >= 1e-3);
    // Uniform, not merely below the pile: before, goodness_of_fit's median was 0.671
    // (AD p 2.8e-4) and ties' Bonferroni put about half its p-values at exactly 1.
    CHECK(u.uniformity.ad_p >= 1e-3);
    CHECK(u.uniformity.median >= u.uniformity.median_low);
    CHECK(u.uniformity.median <= u.uniformity.median_high);
  }
}

TEST_CASE("calibrate's worker processes give the runs of one process, in order",
          "[battery][calibration]") {
  calibration_bed bed({"goodness_of_fit", "per_request_seeds"});
  REQUIRE(bed.s != nullptr);
  const auto run = [&](int runs, int jobs) {
    return calibrate(*bed.s, bed.o, bed.roster.lookup(), runs, 40, jobs);
  };
  const calibration_summary one = run(7, 1);
  const calibration_summary three = run(7, 3);
  REQUIRE(one.checks.size() == 2);
  CHECK(three.failed_runs == one.failed_runs);
  for (const auto& [name, u] : one.checks) {
    CAPTURE(name);
    REQUIRE(three.checks.count(name) == 1);
    CHECK(three.checks.at(name).p_values == u.p_values);  // bit for bit, run by run
    CHECK(three.checks.at(name).false_alarms == u.false_alarms);
  }
  // More workers than runs: one run each.
  CHECK(run(2, 8).checks.at("goodness_of_fit[f32]").p_values ==
        std::vector<double>(one.checks.at("goodness_of_fit[f32]").p_values.begin(),
                            one.checks.at("goodness_of_fit[f32]").p_values.begin() + 2));
}

TEST_CASE("forked children: every value reaches the parent in order; a child's failure is named",
          "[battery][calibration]") {
  std::vector<std::vector<int>> got(3);
  run_forked_children(
      3,
      [](int w, const json_sender& send) {
        for (int i = 0; i < 100; ++i) send({w, i});
      },
      [&](int w, nlohmann::json v) {
        CHECK(v.at(0).get<int>() == w);
        got.at(static_cast<size_t>(w)).push_back(v.at(1).get<int>());
      });
  for (const auto& values : got) {
    REQUIRE(values.size() == 100);
    CHECK(std::is_sorted(values.begin(), values.end()));
  }
  const auto fails = [](int w, const json_sender&) {
    if (w == 1) throw std::runtime_error("planted");
  };
  CHECK_THROWS_WITH(run_forked_children(2, fails, [](int, nlohmann::json) {}),
                    Catch::Contains("child 2 of 2 died (exit 4)"));
}

TEST_CASE("combine_last_look: uniform over exchangeable rows, the Sidak bound for a deviant one",
          "[battery][calibration]") {
  // Null checks of 24 rows whose IN statistic and 19 replicates are exchangeable, each a
  // conservative bound as a row's Sidak over dependent sub-tests is (sqrt of a uniform:
  // P(S <= x) = x^2): the check's p-value is uniform all the same, where the rule row by
  // row (each row capped at 1/20, then Sidak over the rows) leans to 1: median 0.71 here
  // in a simulation of it, cpu.sort_filter's check medians 0.58-0.60.
  std::vector<double> p;
  const auto bound = [](uint64_t k, uint64_t row, uint64_t b) {
    return std::sqrt(samplecheck::stats::randomisation_uniform(k, 100 + row, b));
  };
  for (uint64_t k = 0; k < 2000; ++k) {
    std::vector<row_fit> fits(24);
    for (size_t i = 0; i < fits.size(); ++i) {
      fits[i].in_observed = bound(k, i, 0);
      for (uint64_t b = 1; b <= 19; ++b) fits[i].in_replicates.push_back(bound(k, i, b));
    }
    p.push_back(combine_last_look(fits, k, 0));
  }
  const auto u = samplecheck::stats::uniformity(p);
  CAPTURE(u.median, u.ad_p, u.ks_p);
  CHECK(u.ad_p >= 1e-3);
  CHECK(u.median >= u.median_low);
  CHECK(u.median <= u.median_high);
  // One row far out: below 1/20 the Sidak bound over the rows decides.
  std::vector<row_fit> fits(12);
  for (auto& f : fits) f.in_observed = 0.5, f.in_replicates.assign(19, 0.25);
  fits[3].in_observed = 1e-12;
  CHECK(combine_last_look(fits, 1, 0) == Approx(samplecheck::stats::sidak_combine(1e-12, 12)));
  // A BOUNDARY count far out takes 1/20 of the level; one inside its range costs nothing.
  fits[3].in_observed = 0.5;
  fits[5].p_boundary = 1e-9;
  CHECK(combine_last_look(fits, 1, 0) == Approx(1e-9 / 0.05));
  fits[5].p_boundary = 1.0;
  CHECK(combine_last_look(fits, 1, 0) > 0.5);
}

TEST_CASE("goodness_of_fit stops a gross mutant at its first look and replays there",
          "[battery][sequential]") {
  subject_roster roster;
  roster.add_in_tree();
  run_options o = in_process_quick();
  o.checks = {"goodness_of_fit"};
  const subject* correct = roster.find("cpu.sort_filter");
  REQUIRE(correct != nullptr);
  const battery_report pass = run_battery(*correct, o, roster.lookup());
  REQUIRE(pass.checks.size() == 1);
  const check_report& full = pass.checks.front();
  CAPTURE(full.detail);
  CHECK(full.result == verdict::pass);
  CHECK_THAT(full.detail, Catch::Contains("look 5 of 5"));
  for (const char* name : {"cpu.sort_filter:S07", "cpu.gumbel_logits:S15"}) {
    const subject* mutant = roster.find(name);
    REQUIRE(mutant != nullptr);
    const battery_report r = run_battery(*mutant, o, roster.lookup());
    REQUIRE(r.checks.size() == 1);
    const check_report& c = r.checks.front();
    CAPTURE(name, c.detail, c.samples, full.samples);
    std::printf(
        "%s: goodness_of_fit failed after %llu draws (the correct cpu.sort_filter spends %llu)\n",
        name, static_cast<unsigned long long>(c.samples),
        static_cast<unsigned long long>(full.samples));
    CHECK(c.result == verdict::fail);
    CHECK_THAT(c.detail, Catch::Contains("look 1 of"));
    // Look 1: 256 draws on each of the quick budget's rows, 18 for cpu.sort_filter's filters
    // (the long_tail top-p row the 18th).
    CHECK(c.samples <= 18 * 256);
    CHECK(c.samples * 10 < full.samples);
    REQUIRE(c.repro.contains("evidence"));
    CHECK(c.repro["evidence"]["look"] == 1);
    // The record replays to the same look, p-value and draws.
    const replay_plan plan = plan_replay(c.repro);
    const subject* again = roster.find(plan.subject);
    REQUIRE(again != nullptr);
    run_options ro = plan.options;
    ro.in_process = true;
    const battery_report replayed = run_battery(*again, ro, roster.lookup());
    REQUIRE(replayed.checks.size() == 1);
    const replay_comparison cmp = compare_replay(c.repro, replayed.checks.front());
    CAPTURE(cmp.text);
    CHECK(cmp.reproduced);
    CHECK(replayed.checks.front().repro["evidence"]["look"] == 1);
  }
}

namespace {
// A group's p-value as the ties check forms it: Sidak over its splits.
double group_p(const std::vector<uint64_t>& counts, uint64_t seed) {
  double p_min = 1;
  for (const auto& s : dyadic_splits(counts, seed, 0)) p_min = std::min(p_min, s.p_value);
  return samplecheck::stats::sidak_combine(p_min, kSplitsPerGroup);
}
}  // namespace

TEST_CASE("ties' dyadic splits: uniform p-values over null groups, the lower ids seen",
          "[battery][calibration]") {
  // 2,000 null groups of 1,001 tied tokens (odd: unequal halves at every level), each
  // 2,000 draws from the equal-cell multinomial.
  std::mt19937_64 rng(2026);
  std::uniform_int_distribution<size_t> token(0, 1000);
  std::vector<double> p;
  for (uint64_t k = 0; k < 2000; ++k) {
    std::vector<uint64_t> counts(1001, 0);
    for (int d = 0; d < 2000; ++d) ++counts[token(rng)];
    p.push_back(group_p(counts, k));
  }
  const auto u = samplecheck::stats::uniformity(p);
  const auto below =
      static_cast<uint64_t>(std::count_if(p.begin(), p.end(), [](double x) { return x <= 0.05; }));
  // P(X >= below) for X ~ Binomial(2000, 0.05): an excess of small p-values.
  const double excess_p =
      samplecheck::stats::binomial_randomized_upper_tail(below - 1, 2000, 0.05, 0.0);
  CAPTURE(u.median, u.median_low, u.median_high, u.ad_p, below, excess_p);
  CHECK(u.median >= u.median_low);
  CHECK(u.median <= u.median_high);
  CHECK(u.ad_p >= 1e-3);
  CHECK(excess_p >= 1e-3);
  // The lower half of a group of 64 taking 52% of 20,000 draws (halves ratio 1.083) is
  // far out at the root split; the same counts mirrored are just as far.
  std::vector<uint64_t> biased(64, 0);
  for (size_t t = 0; t < 64; ++t) biased[t] = t < 32 ? 325 : 300;
  const auto splits = dyadic_splits(biased, 1, 0);
  CHECK(splits.front().lower == 10400);
  CHECK(splits.front().p_value < 1e-7);
  std::reverse(biased.begin(), biased.end());
  CHECK(dyadic_splits(biased, 1, 0).front().p_value < 1e-7);
  CHECK_THROWS(dyadic_splits(std::vector<uint64_t>(7, 1), 1, 0));
}

TEST_CASE("ties' halves plan: a 1% bias between halves is seen with probability 0.99",
          "[battery][calibration]") {
  // The standard budget's ratio (0.01) over the test levels the plan meets (its Sidak
  // level over up to ~40 tests of a run-wide 1e-6: about 1e-9), and the quick one's.
  for (const double ratio : {standard_budget().tie_halves_ratio, quick_budget().tie_halves_ratio})
    for (const double alpha : {1e-3, 1e-6, 1e-9, 1e-11}) {
      const uint64_t n = halves_draws(ratio, alpha, 0.99);
      const double power = halves_power(n, ratio, alpha);
      CAPTURE(ratio, alpha, n, power);
      std::printf("halves ratio 1 + %g at level %g: %llu draws, exact power %.4f\n", ratio, alpha,
                  static_cast<unsigned long long>(n), power);
      CHECK(power >= 0.99);
      // Not oversized: 5% fewer draws fall short.
      CHECK(halves_power(n - n / 20, ratio, alpha) < 0.99);
      CHECK(halves_ratio_seen(n, alpha, 0.99) <= ratio * 1.001);
    }
}
