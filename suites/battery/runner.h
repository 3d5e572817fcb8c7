// Runs the battery on one subject, a sampler or a matmul: every selected check (for a
// sampler, once per declared dtype) here, against the subject in its subject process and
// within a deadline (the subject's crash or hang is a failed check, not a dead run), one
// run-wide Holm budget over the statistical checks, a report table, and reproduction
// files that replay.
//
// Holm: every applicable statistical check of the subject is declared whether or not
// --checks selects it (an unselected one is recorded as p = 1), so a check's share,
// and with it its sample plan, never depends on the selection.
//
// CUDA: this process never initialises CUDA; the subject process does, so a subject
// process started later never inherits a context it cannot use.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "suites/battery/check.h"

namespace samplecheck::battery {

inline constexpr uint64_t kDefaultSeed = 20261130;
inline constexpr double kDefaultAlpha = 1e-6;
// The ranges a run accepts, from the command line or from a reproduction record alike.
// V below the minimum cannot hold the fixture rows: a head, a tail below 1e-5, tie
// groups, and padded_tail's whole 1024-token tile of padding beside 1024 real tokens.
// A batch above 4096 rows is beyond every plan.
inline constexpr int64_t kMinVocabSize = 2048;
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 24;
inline constexpr double kMaxAlpha = 0.5;
inline constexpr int64_t kMaxBatchSize = 4096;
inline constexpr int64_t kMaxShapeDim = int64_t{1} << 20;

// `text` as one shell word: unchanged when it holds only characters no shell reads
// specially, else in single quotes, so a printed command line can be pasted as is.
std::string shell_quoted(std::string_view text);

// What a run reports while it goes, one event as each check starts and ends (the CLI
// draws them on stderr). Read-only for the sink: no plan ever depends on it.
struct progress_event {
  std::string_view subject, check;  // check as the Holm family names it: "tail[bf16]"
  int index = 0, total = 0;         // the index-th (1-based) of the total checks to run
  bool finished = false;            // false: starting; true: ended
  uint64_t planned = 0;        // the check's planned samples (check_definition::planned_samples)
  bool plan_stated = true;     // false: the check states no plan (planned is 0)
  uint64_t total_planned = 0;  // the planned samples of every check this battery runs
  bool all_planned = true;     // every check of the battery states its plan
  uint64_t samples = 0;        // finished: the check's samples
  double seconds = 0;          // finished: the check's time
  bool failed = false;         // finished: subject process failed, timed out or exact violation
};
using progress_sink = std::function<void(const progress_event&)>;

// --shard i/n: this run judges only the plan rows (check x dtype) assigned to shard i of
// n (0-based). The assignment is a function of the subject's plan alone (round robin over
// the applicable rows in plan order, and apart over the n/a rows), so it depends on
// (subject, seed, i, n) and never on time or host. Every other row stays in the Holm
// family with p = 1, so each row's share, and with it its sample plan, is the unsharded
// run's. count 0: not sharded.
struct shard_spec {
  int index = 0;
  int count = 0;
};

struct run_options {
  budget_settings budget;
  uint64_t seed = kDefaultSeed;
  double alpha = kDefaultAlpha;     // run-wide false-alarm budget (Holm)
  std::vector<std::string> checks;  // empty: all
  std::string dtype;                // samplers: run only this dtype ("bf16"); empty: every declared
  double timeout_s = 0;             // per check; 0: the budget's check_timeout_s, scaled by V
  std::string repro_dir;            // empty: no reproduction files
  // In-tree subjects called in this process, not in their subject process (debugging: a
  // crash ends the run). Plugins and --exec subjects are always in their process.
  bool in_process = false;
  matmul_selection matmul;  // matmul subjects: shapes and batch sizes
  // Replay: decide the one selected check against this Holm level (the level its
  // original run compared it with) instead of its first-step share. < 0: off.
  double decision_level = -1;
  progress_sink progress;  // empty: silent
  shard_spec shard;
  // Progress events carry each check's plan, asked before it runs (its rows' references
  // built once more); off where the sink counts whole batteries (calibrate).
  bool progress_plans = true;
  // Build the next check's rows while a check runs (rows_ahead.h); unset: only where the
  // subject draws on a device.
  std::optional<bool> rows_ahead;
  // qualify --time-limit: no check starts at or after stop_at (protocol::now_seconds()), and
  // a subject call still running then is cut (a subject process's; an in-process subject's
  // call ends first). Such checks have no verdict and the run is INCOMPLETE; every verdict
  // reached stands (the checks left stay in the Holm family with p = 1). 0: no limit.
  double stop_at = 0;
  double time_limit_s = 0;  // the limit as given, for the report's words
};

// timeout: the check's process was killed at its wall-clock limit (a failure).
enum class verdict { pass, fail, timeout, not_applicable, unavailable, error };
const char* to_string(verdict v);

struct check_report {
  std::string check;
  std::string dtype;  // samplers: the input dtype the check ran on ("f32", ...)
  verdict result = verdict::pass;
  double p_value = -1;         // < 0: exact check (no p-value)
  double alpha_share = -1;     // < 0: not in the Holm budget; else the level Holm compared with
  double planning_share = -1;  // the first-step share the samples were planned for
  std::string power;
  uint64_t samples = 0;
  double seconds = 0;               // the check's wall time: subject_seconds + judge_seconds
  double subject_seconds = 0;       // in subject calls, from each request to its reply
  double judge_seconds = 0;         // the rest: plans, references, statistics, copies
  uint64_t subject_calls = 0;       // the calls behind subject_seconds
  uint64_t subject_input_rows = 0;  // the input rows those calls were sent, summed
  std::string detail;               // failure reason, n/a reason, or what was seen
  nlohmann::json
      evidence;            // the check's evidence (check_outcome::repro), pass or fail: report.json
  nlohmann::json repro;    // on failure: the reproduction record (also written to repro_dir)
  std::string repro_path;  // written on failure when repro_dir is set
  bool failed() const { return result == verdict::fail || result == verdict::timeout; }
};

struct battery_report {
  std::string subject;
  std::string kind;    // "sampler", "matmul" or "collective"
  std::string plugin;  // the plugin's path; empty for an in-tree subject
  std::string budget;
  uint64_t seed = 0;
  double alpha = 0;
  std::vector<check_report> checks;
  double seconds = 0;
  uint64_t samples = 0;
  // What was judged and where: the descriptor as the protocol states it (with its declared
  // contracts), what a subject process said of itself (or null), the platform.
  nlohmann::json descriptor, environment, platform;
  // Sharded runs: the whole plan with each row's shard and Holm weight, and this shard's
  // Holm inputs (what `samplecheck merge` recomputes Holm from); a merged report: which
  // shards it holds and which are missing. Null otherwise.
  nlohmann::json shard;
  int missing_shards = 0;  // merged: rows of these shards are not judged (ERROR rows)
  int cut_checks = 0;      // --time-limit: checks left without a verdict (skipped rows)
  // Seconds outside every check, by part (platform, plan, between_checks, subject_stop,
  // records): with the checks' seconds they sum to `seconds`. Null in a merged report.
  nlohmann::json outside_seconds;
  bool passed() const;       // every check pass or n/a, and at least one ran
  bool unavailable() const;  // every applicable check was skipped for a missing device
  // Every check was n/a (or none ran): nothing was judged, so neither PASS nor FAIL.
  bool nothing_judged() const;
  // "PASS", "SKIPPED" (device absent, or nothing judged), "INCOMPLETE" (a merge missing a
  // shard, or checks cut by --time-limit and none failed) or "FAIL".
  const char* verdict_word() const;
  // The first row of this check (of any dtype), or nullptr when the run has none.
  const check_report* find(std::string_view check) const;
};

// options.checks must name checks of all_checks() (the CLI refuses others with exit 2);
// checks of the other subject kind are skipped silently, so one selection can serve a
// sampler and a matmul of one plugin.
battery_report run_battery(const subject& s, const run_options& options,
                           const subject_lookup& lookup);

// Empty when dir can hold reproduction files (created if missing); else why not.
std::string prepare_repro_dir(const std::string& dir);

// Writes `record` to o.repro_dir as SUBJECT.CHECK[.DTYPE].json; its path, or empty when it
// could not be written.
std::string write_repro_file(const run_options& o, const check_report& c,
                             const nlohmann::json& record, const std::string& subject_name);

// The reproduction record of one failed check: everything `samplecheck replay` needs.
nlohmann::json repro_record(const subject& s, const run_options& o, const check_report& c,
                            const nlohmann::json& evidence);

// The table: check, verdict, p-value, alpha share, power, samples, time; then details, each
// cut to kShownDetail bytes (a subject's message may be a whole 1 MiB frame; the report's
// JSON and the reproduction record keep it whole; report.html cuts it alike).
inline constexpr size_t kShownDetail = 1024;
std::string format_report(const battery_report& report, bool verbose);

}  // namespace samplecheck::battery
