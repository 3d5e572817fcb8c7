// Runs the battery on one subject: every selected check in its own forked child with
// a timeout (a crash or a hang is a failed check, not a dead run), one run-wide Holm
// budget over the statistical checks, a report table, and reproduction files.
//
// CUDA: the parent never initialises CUDA; each child does so itself after fork().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "suites/battery/check.h"

namespace samplecheck::battery {

inline constexpr uint64_t kDefaultSeed = 20261130;
inline constexpr double kDefaultAlpha = 1e-6;

struct run_options {
  budget_settings budget;
  uint64_t seed = kDefaultSeed;
  double alpha = kDefaultAlpha;      // run-wide false-alarm budget (Holm)
  std::vector<std::string> checks;   // empty: all
  double timeout_s = 0;              // per check; 0: 4 x the budget's check_seconds + 60 s
  std::string repro_dir;             // empty: no reproduction files
  bool isolate = true;               // fork per check (false: in-process, for debugging)
};

enum class verdict { pass, fail, not_applicable, unavailable, error };
const char* to_string(verdict v);

struct check_report {
  std::string check;
  verdict result = verdict::pass;
  double p_value = -1;      // < 0: exact check (no p-value)
  double alpha_share = -1;  // < 0: not in the Holm budget
  std::string power;
  uint64_t samples = 0;
  double seconds = 0;
  std::string detail;       // failure reason, n/a reason, or what was seen
  std::string repro_path;   // written on failure when repro_dir is set
};

struct battery_report {
  std::string subject;
  std::string budget;
  uint64_t seed = 0;
  double alpha = 0;
  std::vector<check_report> checks;
  double seconds = 0;
  uint64_t samples = 0;
  bool passed() const;       // every check pass or n/a, and at least one ran
  bool unavailable() const;  // every applicable check was skipped for a missing device
};

// Unknown check names in options.checks come back as `error` rows naming them.
battery_report run_battery(const subject& s, const run_options& options, const subject_lookup& lookup);

// The table: check, verdict, p-value, alpha share, power, samples, time; then details.
std::string format_report(const battery_report& report, bool verbose);

}  // namespace samplecheck::battery
