// Every check states its sample plan before it draws (check_definition::planned_samples),
// and the plan is what it then draws: on a correct subject each check that passes drew
// exactly its planned samples (a sequential check stops early only when it fails), an
// n/a one none. The runner hands the plans to the progress sink before each check.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"

using namespace samplecheck::battery;
using namespace samplecheck::checks;

namespace {
// The check kit's rows in the battery's table before any test plans a run.
[[maybe_unused]] const bool checks_registered = (register_checks(), true);

struct seen_check {
  uint64_t planned = 0, samples = 0;
  bool stated = false;
};

// Runs the battery, keeping each finished check's plan and samples by its Holm name.
std::map<std::string, seen_check> run_with_plans(const subject& s, run_options o,
                                                 const subject_roster& roster,
                                                 battery_report& report) {
  std::map<std::string, seen_check> seen;
  uint64_t total_planned = 0, planned_sum = 0;
  o.progress = [&](const progress_event& e) {
    total_planned = e.total_planned;
    if (!e.finished) return;
    seen[std::string(e.check)] = {e.planned, e.samples, e.plan_stated};
    planned_sum += e.planned;
  };
  report = run_battery(s, o, roster.lookup());
  CHECK(planned_sum == total_planned);  // the battery's total is the sum of its checks' plans
  return seen;
}

}  // namespace

TEST_CASE("every check states its plan", "[plan]") {
  for (const auto& c : all_checks()) {
    CAPTURE(c.name);
    CHECK(static_cast<bool>(c.planned_samples));
  }
}

TEST_CASE("a passing check draws exactly its plan", "[plan]") {
  subject_roster roster;
  roster.add_in_tree();
  struct config {
    const char* subject;
    std::vector<std::string> checks;  // empty: all
  };
  // A sampler with top-k and top-p (ties at the k-th, parameter edges), one without, a
  // matmul on a small selection (every matmul check) and a collective (every collective check).
  const std::vector<config> table{
      {"cpu.multinomial", {}},
      {"cpu.sort_filter",
       {"support", "goodness_of_fit", "ties", "tail", "batch_invariance", "degenerate_rows",
        "parameter_routing"}},
      {"cpu.segmented", {}},
      {"cpu.allreduce.tree", {}},
  };
  for (const auto& t : table) {
    DYNAMIC_SECTION(t.subject) {
      const subject* s = roster.find(t.subject);
      REQUIRE(s != nullptr);
      run_options o;
      o.budget = quick_budget();
      o.checks = t.checks;
      o.matmul.shapes = {{"64x256", 64, 256, "test"}, {"48x33", 48, 33, "test"}};
      o.matmul.batch_sizes = {1, 2, 3, 64, 65};
      battery_report report;
      const auto seen = run_with_plans(*s, o, roster, report);
      REQUIRE(report.passed());
      for (const auto& row : report.checks) {
        if (row.result == verdict::not_applicable) continue;
        const std::string name = row.dtype.empty() ? row.check : row.check + "[" + row.dtype + "]";
        CAPTURE(name, row.detail);
        REQUIRE(seen.count(name) == 1);
        const seen_check& c = seen.at(name);
        CHECK(c.samples == row.samples);
        if (!c.stated) continue;
        CHECK(c.planned > 0);
        CHECK(c.samples == c.planned);
      }
    }
  }
}
