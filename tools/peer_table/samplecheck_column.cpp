#include "tools/peer_table/samplecheck_column.h"

#include <fmt/format.h>

#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"

namespace samplecheck::peer_table {

std::vector<battery_outcome> run_battery_on(const std::vector<std::string>& subjects,
                                            const std::string& budget, uint64_t seed) {
  namespace sb = samplecheck::battery;
  std::vector<battery_outcome> out;
  const auto settings = sb::budget_by_name(budget);
  sb::subject_roster catalog;
  catalog.add_in_tree();
  checks::register_checks();
  for (const std::string& name : subjects) {
    battery_outcome o;
    o.subject = name;
    const sb::subject* s = catalog.find(name);
    if (!settings || !s) {
      o.passed = false;
      o.error =
          !settings ? fmt::format("unknown budget '{}'", budget) : "not in the battery's catalog";
      out.push_back(std::move(o));
      continue;
    }
    sb::run_options options;
    options.budget = *settings;
    options.seed = seed;
    const sb::battery_report report = sb::run_battery(*s, options, catalog.lookup());
    o.passed = report.passed();
    o.samples = report.samples;
    o.seconds = report.seconds;
    for (const sb::check_report& c : report.checks) {
      if (!c.failed() && c.result != sb::verdict::error) continue;
      if (!o.failed_checks.empty()) o.failed_checks += ", ";
      o.failed_checks += fmt::format("{}{} ({} draws)", c.check,
                                     c.result == sb::verdict::error ? " [error]" : "", c.samples);
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace samplecheck::peer_table
