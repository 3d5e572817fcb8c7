// report.json and junit.xml: what a run's table shows and the evidence behind it, in the
// versioned schema of docs/report-schema.json (docs/reports.md), and one JUnit testcase
// per check for CI dashboards. report.html is rendered from report.json alone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "suites/battery/runner.h"
#include "suites/campaigns/calibration.h"
#include "suites/campaigns/fingerprint.h"
#include "suites/campaigns/kill_matrix.h"

namespace samplecheck::battery {

inline constexpr int kReportVersion = 1;

// The fields every report starts with; `runs`, `mutants`, `calibration` or `comparison` follow.
struct report_header {
  std::string command;  // "qualify", "mutants", "calibrate" or "fingerprint" (--compare)
  std::vector<std::string> command_line;  // argv as given
  int exit_status = 0;
  nlohmann::json samplecheck;       // version, revision, plugin ABI, protocol (the CLI's)
  std::string hostname, timestamp;  // where and when (UTC, ISO 8601); empty: not stated
};

nlohmann::json run_json(const battery_report& r);
// A row of run_json's "checks" read back (samplecheck merge); throws nlohmann::json's
// errors or std::invalid_argument on a missing field, a wrong type or an unknown verdict.
check_report check_from_json(const nlohmann::json& j);
nlohmann::json qualify_report(const report_header& h, const std::vector<battery_report>& runs);
nlohmann::json mutants_report(const report_header& h,
                              const std::vector<campaigns::mutant_result>& results);
nlohmann::json calibration_report(
    const report_header& h,
    const std::vector<std::pair<std::string, campaigns::calibration_summary>>& s,
    double fail_below);

// fingerprint --compare: the two manifests (suites/campaigns/fingerprint.h) and what
// comparing them found; detail is the first diverging element as re-run here, or why
// it could not be, empty when the manifests agree or were not re-run.
struct manifest_comparison {
  std::string a_path, b_path;
  const nlohmann::json* a = nullptr;
  const nlohmann::json* b = nullptr;
  const campaigns::fingerprint_comparison* result = nullptr;
  std::string detail;
};
nlohmann::json comparison_report(const report_header& h, const manifest_comparison& c);

// JUnit XML from a report.json document: a testsuite per run (a testcase per check;
// n/a and skipped as <skipped/>, FAIL and TIMEOUT as <failure/>, ERROR as <error/>),
// a testcase per mutant (survived: failure), or per calibrated check; for a comparison
// one testcase (differ: failure, incomparable: error).
std::string junit_xml(const nlohmann::json& report);

}  // namespace samplecheck::battery
