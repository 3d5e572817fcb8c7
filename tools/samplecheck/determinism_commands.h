// The two commands for determinism regressions: `fingerprint` (take a manifest of
// order-aware hashes, or compare two) and `bisect` (drive git bisect run with a build
// command and a samplecheck check, then name the first bad commit and its smallest
// failing case). docs/bisect.md is their user's page.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/samplecheck/command_options.h"

namespace samplecheck::cli {

struct fingerprint_request {
  subject_request subject;
  common_options common;  // --seed, --budget, --vocab-size and the matmul selection
  std::string output;
  std::vector<std::string> compare;  // two manifests
  bool no_rerun = false;
  bool trust_record = false;  // --compare: re-run the plugins or commands the manifests name
  std::optional<std::string> repeat_text;  // take it this many times in this process
  std::string report_dir;                  // --compare: the comparison's report.json and the rest
  std::vector<std::string> command_line;   // argv, for report.json
};
void add_fingerprint_options(CLI::App* app, fingerprint_request& r);
// 0: written, or identical; 1: manifests differ (or the subject failed a call); 2: bad
// usage, an unreadable manifest, or incomparable plans; 77: the subject's device is absent.
int run_fingerprint(fingerprint_request r);

struct bisect_request {
  std::string good, bad, build, check, repo = ".";
  std::string work_dir;          // logs and reproduction records; default a temporary folder
  double step_timeout_s = 3600;  // the build's limit at one commit, and then the check's
  std::optional<std::string> step_timeout_text;
};
void add_bisect_options(CLI::App* app, bisect_request& r);
// 0: a first bad commit was found (and its failing case printed); 1: none could be named
// (only skipped commits left); 2: bad usage, an end that is not what it says (good does
// not build and pass, bad does not build and fail), or a step whose check judged nothing
// (exit 2, 77, 126, 127, a signal, the step timeout); 130: interrupted.
int run_bisect(bisect_request r);

}  // namespace samplecheck::cli
