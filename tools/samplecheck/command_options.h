// The options the samplecheck commands share, their strict conversion (cli_values.h),
// and how --subject / --plugin / --kind name the subjects to judge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "tools/samplecheck/cli_values.h"

namespace CLI {
class App;
}

namespace samplecheck::cli {

struct common_options {
  std::string budget = "quick";
  uint64_t seed = battery::kDefaultSeed;
  double alpha = battery::kDefaultAlpha;
  std::vector<std::string> checks;
  double timeout = 0;
  double time_limit = 0;  // qualify --time-limit; 0: none
  std::string repro_dir;
  std::string report_dir;      // report.json, junit.xml, report.html; repro files in DIR/repro
  bool quiet = false;          // no progress on stderr
  double progress_every = 60;  // off a terminal: a line this often while a check draws
  bool in_process = false;     // --in-process (deprecated spelling: --no-fork)
  bool verbose = false;
  int64_t vocab_size = 0;
  battery::shard_spec shard;  // qualify --shard i/n
  std::optional<std::string> shard_text;
  battery::matmul_selection matmul;
  // As typed; convert() refuses what CLI11's own conversions would wrap or misread.
  std::optional<std::string> seed_text, alpha_text, timeout_text, vocab_size_text, checks_text;
  std::optional<std::string> progress_every_text, time_limit_text;
  std::optional<std::string> m_text, shape_text, columns_text, fixtures_text;
};

// Budget, seed, alpha, checks, timeout, repro dir, V, debugging flags; with matmul, also
// --m, --shape, --columns and --fixtures.
void add_common(CLI::App* app, common_options& o, bool matmul);
// --m, --shape, --columns and --fixtures alone (fingerprint takes them without the rest).
void add_matmul_selection(CLI::App* app, common_options& o);
// Only what a replay may change: --timeout, --in-process, --verbose.
void add_run_control(CLI::App* app, common_options& o);
// Converts the typed values; throws usage_error naming the option and value.
common_options convert(common_options o);
battery::run_options to_run_options(const common_options& c);

struct subject_request {
  std::string subject;  // a name; with plugin or exec, one of its subjects
  std::string plugin;   // a .so exporting samplecheck_plugin
  std::string kind;     // "", "sampler" or "matmul"
  bool list = false;
  std::string exec;     // a command speaking docs/subject-protocol.md
  std::string connect;  // an AF_UNIX socket whose server speaks it (subject_socket.h)
  double handshake_timeout = battery::kDefaultHandshakeTimeout_s;
  std::optional<std::string> handshake_timeout_text;
};
// --subject, --plugin, --exec, --kind, --list, --handshake-timeout: every command that
// takes a subject adds these.
void add_subject_options(CLI::App* app, subject_request& r);
// Only where a subject process comes from (--exec, --plugin, --handshake-timeout): for a
// command that reads the subject's name elsewhere (replay reads it from its record).
void add_process_options(CLI::App* app, subject_request& r);

// Adds the in-tree subjects (and the plugin's or the --exec command's, whose process it
// starts) to the roster and returns the subjects the request names, each runnable by
// this build. Throws usage_error when the request names none, an unknown one, one whose
// memory space this build cannot reach, or a subject process without a usable hello.
std::vector<const battery::subject*> resolve_subjects(battery::subject_roster& roster,
                                                      subject_request r);

struct calibrate_request {
  std::vector<std::string> subjects{"cpu.multinomial"};
  int runs = 1000;
  uint64_t first_seed = 1;
  double fail_below = 1e-3;
  int jobs = 1;
  std::optional<std::string> runs_text, first_seed_text, fail_below_text, jobs_text;
};
void add_calibrate_options(CLI::App* app, calibrate_request& r);
calibrate_request convert(calibrate_request r);

}  // namespace samplecheck::cli
