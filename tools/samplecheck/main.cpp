// samplecheck: qualify a sampler or a matmul, replay a failed check, print the mutants'
// kill matrix, or measure false-alarm rates.
//
//   samplecheck qualify --subject cpu.dual_pivot [--budget quick|standard] [--seed N]
//                       [--checks a,b] [--alpha A] [--timeout S] [--repro-dir DIR]
//                       [--report-dir DIR] [--quiet]
//   samplecheck qualify --subject cuda.segmented_mma [--m 1-4096] [--shape 4096x4096]
//   samplecheck qualify --plugin libvendor.so [--subject NAME] [--kind sampler|matmul|collective]
//   samplecheck qualify --exec "python3 my_subject.py" [--subject NAME] [--handshake-timeout S]
//   samplecheck qualify --list [--plugin libvendor.so]
//   samplecheck qualify ... --shard I/N [--report-dir DIR]
//   samplecheck merge SHARD0/report.json SHARD1/report.json ... [--report-dir DIR]
//   samplecheck replay FILE.json [--exec "CMD" | --plugin lib.so | --trust-record]
//   samplecheck mutants [--budget quick|standard] [--named-only] [--subjects-prefix cpu.]
//   samplecheck calibrate [--subject a,b] [--runs 1000] [--checks ...] [--budget quick]
//   samplecheck fingerprint --subject NAME | --plugin lib.so | --exec CMD [--subject N] -o F.json
//   samplecheck fingerprint --compare A.json B.json
//   samplecheck repro-script FILE.json [-o OUT.py]
//   samplecheck bisect --good REV --bad REV --build "CMD" --check "samplecheck ..." [--repo DIR]
//
// Every subject runs in a subject process (docs/subject-protocol.md); the checks and
// verdicts run here. Exit status: 0 every check passed (or every mutant killed); 1 a
// check failed (or a mutant survived); 2 bad usage, or a plugin or --exec process with
// no usable hello (refused, crashed or hung before it, a descriptor the ABI refuses); 77 nothing
// was judged: every check was skipped because the subject's device is absent, or was n/a. A replay
// exits with its check's verdict and prints REPRODUCED or NOT REPRODUCED.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>

#include "suites/battery/process_memory.h"
#include "suites/battery/replay.h"
#include "suites/campaigns/calibration.h"
#include "suites/campaigns/kill_matrix.h"
#include "suites/checks/checks.h"
#include "suites/harness/protocol.h"
#include "tools/samplecheck/command_options.h"
#include "tools/samplecheck/ctest_resources.h"
#include "tools/samplecheck/determinism_commands.h"
#include "tools/samplecheck/merge_command.h"
#include "tools/samplecheck/progress.h"
#include "tools/samplecheck/record_file.h"
#include "tools/samplecheck/report_dir.h"
#include "tools/samplecheck/report_json.h"
#include "tools/samplecheck/repro_script_command.h"
#include "tools/samplecheck/version.h"

namespace sb = samplecheck::battery;
namespace campaigns = samplecheck::campaigns;
namespace cli = samplecheck::cli;

namespace {

std::vector<std::string> command_line;  // argv, for report.json

sb::report_header header(const char* command, int exit_status) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const std::time_t now = std::time(nullptr);
  char when[32] = {};
  std::tm utc{};
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
  return {command, command_line, exit_status, cli::version_json(), host, when};
}

void print_list(const std::vector<const sb::subject*>& subjects) {
  std::printf("subjects:\n");
  for (const sb::subject* s : subjects)
    std::printf("  %-36s %-7s %s\n", s->name().c_str(), sb::to_string(s->kind()),
                s->description() ? s->description() : "");
  std::printf("checks:\n");
  for (const auto& c : sb::all_checks())
    std::printf("  %-27s %-7s %-11s %s\n", std::string(c.name).c_str(), sb::to_string(c.applies_to),
                c.kind == sb::check_kind::exact ? "exact" : "statistical",
                std::string(c.what).c_str());
}

// 0 when every report passed, 77 when none judged anything (every check skipped for a
// missing device, or n/a), else 1.
int exit_status(const std::vector<sb::battery_report>& reports) {
  bool all_skipped = !reports.empty(), all_passed = !reports.empty();
  for (const auto& r : reports) {
    const bool skipped = r.cut_checks == 0 && (r.unavailable() || r.nothing_judged());
    all_skipped &= skipped;
    all_passed &= r.passed() || skipped;
  }
  if (all_skipped) return 77;
  return all_passed ? 0 : 1;
}

// --require-device: a subject whose device is absent fails the run instead of skipping.
int device_required(const std::vector<sb::battery_report>& reports, int status) {
  for (const auto& r : reports)
    if (r.unavailable()) {
      std::printf("FAIL: %s: device absent, and --require-device makes that a failure\n",
                  r.subject.c_str());
      return 1;
    }
  return status;
}

int run_qualify(const cli::subject_request& request, const cli::common_options& common,
                bool require_device) {
  sb::subject_roster roster;
  const auto subjects = cli::resolve_subjects(roster, request);
  if (request.list) {
    print_list(subjects);
    return 0;
  }
  sb::run_options options = cli::to_run_options(common);
  options.time_limit_s = common.time_limit;
  if (common.time_limit > 0)
    options.stop_at = samplecheck::protocol::now_seconds() + common.time_limit;
  const auto progress = cli::make_progress(common.quiet, common.progress_every);
  if (progress) options.progress = progress->sink();
  std::vector<sb::battery_report> reports;
  for (const sb::subject* s : subjects) {
    sb::battery_report report = sb::run_battery(*s, options, roster.lookup());
    if (report.checks.empty()) {  // --checks named only checks of the other kind
      std::printf("subject %s: none of the selected checks applies to it\n", s->name().c_str());
      continue;
    }
    std::fputs(sb::format_report(report, common.verbose).c_str(), stdout);
    std::fflush(stdout);
    reports.push_back(std::move(report));
  }
  if (reports.empty())
    throw cli::usage_error("none of the selected checks applies to the selected subjects");
  int status = exit_status(reports);
  if (require_device) status = device_required(reports, status);
  if (!common.report_dir.empty())
    cli::write_report_dir(common.report_dir,
                          sb::qualify_report(header("qualify", status), reports));
  return status;
}

// The merged table and report of `qualify --shard` runs; a missing shard fails the run.
int run_merge(const cli::merge_request& r) {
  if (!r.report_dir.empty())
    if (const std::string why = cli::prepare_report_dir(r.report_dir); !why.empty())
      throw cli::usage_error(why);
  const auto reports = cli::merge_shards(r.files);
  bool missing = false;
  for (const auto& report : reports) {
    std::fputs(sb::format_report(report, r.verbose).c_str(), stdout);
    for (const auto& s : report.shard.at("missing"))
      std::printf("merge: %s: shard %d/%zu missing: its checks are not judged\n",
                  report.subject.c_str(), s.get<int>(), report.shard.at("count").get<size_t>());
    missing |= report.missing_shards > 0;
  }
  const int status = missing ? 1 : exit_status(reports);
  if (!r.report_dir.empty())
    cli::write_report_dir(r.report_dir, sb::qualify_report(header("merge", status), reports));
  return status;
}

// The subject process a replay starts: the command line's --exec / --plugin, else the
// record's own only with --trust-record; the record's is printed in every case.
cli::subject_request replay_subject(const std::string& path, const sb::replay_plan& plan,
                                    const cli::subject_request& given, bool trust) {
  cli::subject_request request = given;
  request.subject = plan.subject;
  const std::string recorded = cli::recorded_process(plan.plugin, plan.exec, plan.connect);
  if (recorded.empty()) return request;
  if (!given.exec.empty() || !given.plugin.empty() || !given.connect.empty()) {
    std::printf("replay: the record names %s; running the one given: %s\n", recorded.c_str(),
                cli::recorded_process(given.plugin, given.exec, given.connect).c_str());
    return request;
  }
  if (!trust) throw cli::usage_error(cli::untrusted_process("replay", path, recorded));
  std::printf("replay: running the process the record names (--trust-record): %s\n",
              recorded.c_str());
  request.plugin = plan.plugin, request.exec = plan.exec, request.connect = plan.connect;
  return request;
}

struct replay_request {
  std::string file;
  cli::subject_request source;  // --exec / --plugin given here
  bool trust_record = false;
  cli::common_options common;  // --timeout, --in-process, --verbose
};

CLI::App* add_replay(CLI::App& app, replay_request& r) {
  auto* replay = app.add_subcommand("replay", "re-run a failed check from its reproduction file");
  replay->add_option("file", r.file, "a .json file written by --repro-dir")->required();
  cli::add_run_control(replay, r.common);
  cli::add_process_options(replay, r.source);
  cli::add_trust_record(replay, r.trust_record);
  return replay;
}

int run_replay(const replay_request& r) {
  const std::string& path = r.file;
  const cli::common_options common = cli::convert(r.common);
  const nlohmann::json record = cli::read_record_file("replay", path);
  sb::replay_plan plan;
  try {
    plan = sb::plan_replay(record);
  } catch (const std::invalid_argument& e) {
    throw cli::usage_error(fmt::format("replay: '{}': {}", cli::printable(path), e.what()));
  }
  sb::subject_roster roster;
  const cli::subject_request request = replay_subject(path, plan, r.source, r.trust_record);
  const auto subjects = cli::resolve_subjects(roster, request);
  plan.options.timeout_s = common.timeout;
  plan.options.in_process = common.in_process;
  const auto report = sb::run_battery(*subjects.front(), plan.options, roster.lookup());
  std::fputs(sb::format_report(report, true).c_str(), stdout);
  if (report.checks.size() != 1)
    throw cli::usage_error("replay: the record's check did not run exactly once");
  const auto comparison = sb::compare_replay(record, report.checks.front());
  std::fputs(comparison.text.c_str(), stdout);
  // The check's own verdict, as qualify gives it, so a replay is a `git bisect run` script.
  return exit_status({report});
}

int run_mutants(const std::string& prefix, bool named_only, const cli::common_options& common) {
  sb::subject_roster roster;
  roster.add_in_tree();
  std::vector<sb::subject> selected;
  for (const auto& s : roster.all())
    if (s.name().rfind(prefix, 0) == 0) selected.push_back(s);
  sb::run_options options = cli::to_run_options(common);
  const auto progress = cli::make_progress(common.quiet, common.progress_every, "mutant");
  if (progress) options.progress = progress->sink();
  const auto results = campaigns::run_mutants(selected, options, roster.lookup(), named_only);
  if (results.empty())
    throw cli::usage_error(fmt::format("mutants: no mutant subject matches '{}'", prefix));
  if (common.verbose)
    for (const auto& m : results) std::fputs(sb::format_report(m.report, false).c_str(), stdout);
  std::printf("kill matrix (budget %s, seed %llu%s)\n", common.budget.c_str(),
              static_cast<unsigned long long>(common.seed),
              named_only ? ", named checks only" : "");
  std::fputs(campaigns::format_kill_matrix(results).c_str(), stdout);
  // Nothing judged (no device, or no named check ran): skipped, never passed.
  const int status =
      campaigns::none_judged(results) ? 77 : (campaigns::all_killed(results) ? 0 : 1);
  if (!common.report_dir.empty())
    cli::write_report_dir(common.report_dir,
                          sb::mutants_report(header("mutants", status), results));
  return status;
}

int run_calibrate(const cli::calibrate_request& request, const cli::common_options& common) {
  sb::subject_roster roster;
  roster.add_in_tree();
  bool ok = true;
  std::vector<std::pair<std::string, campaigns::calibration_summary>> summaries;
  const auto progress =
      cli::make_progress(common.quiet, common.progress_every, "run",
                         request.runs * static_cast<int>(request.subjects.size()));
  sb::run_options options = cli::to_run_options(common);
  if (progress) options.progress = progress->sink();
  options.progress_plans = false;  // the line counts runs, not samples
  for (const auto& name : request.subjects) {
    const sb::subject* s = roster.find(name);
    if (s == nullptr) throw cli::usage_error(fmt::format("calibrate: no subject named '{}'", name));
    if (s->kind() != sb::subject_kind::sampler)
      throw cli::usage_error(fmt::format("calibrate: {} is a {}; its checks are exact", name,
                                         sb::to_string(s->kind())));
    const auto summary = campaigns::calibrate(*s, options, roster.lookup(), request.runs,
                                              request.first_seed, request.jobs);
    std::fputs(campaigns::format_calibration(name, summary).c_str(), stdout);
    ok &= summary.acceptable(request.fail_below);
    summaries.emplace_back(name, summary);
  }
  if (!common.report_dir.empty())
    cli::write_report_dir(common.report_dir, sb::calibration_report(header("calibrate", ok ? 0 : 1),
                                                                    summaries, request.fail_below));
  return ok ? 0 : 1;
}

// Every subcommand's options, filled in as CLI11 parses the command line.
struct command_requests {
  cli::common_options q_common, m_common, c_common;
  cli::subject_request request;
  bool require_device = false;
  replay_request replay_args;
  bool named_only = false;
  std::string prefix;
  cli::calibrate_request calib;
  cli::fingerprint_request fingerprint_args;
  cli::repro_script_request script_args;
  cli::bisect_request bisect_args;
  cli::merge_request merge_args;
};

struct subcommands {
  CLI::App *qualify, *replay, *mutants, *calibrate, *fingerprint, *repro_script, *bisect, *merge;
};

subcommands add_subcommands(CLI::App& app, command_requests& r) {
  subcommands c{};
  c.qualify = app.add_subcommand(
      "qualify", "run the battery on a subject (sampler or matmul), print the table");
  cli::add_subject_options(c.qualify, r.request);
  cli::add_common(c.qualify, r.q_common, /*matmul=*/true);
  c.qualify->add_flag("--require-device", r.require_device,
                      "a subject whose device is absent fails (exit 1) instead of skipping (77)");
  c.qualify
      ->add_option("--time-limit", r.q_common.time_limit_text,
                   "the whole run's wall-clock limit: no check starts past it and a subject "
                   "process's call still running is cut; those checks are reported not run, "
                   "the run INCOMPLETE (exit 1) unless a check failed, every verdict kept")
      ->type_name("SECONDS");
  c.qualify
      ->add_option("--shard", r.q_common.shard_text,
                   "judge only shard i (0-based) of n; `samplecheck merge` joins the shards' "
                   "report.json files (docs/sharding.md)")
      ->type_name("I/N");
  c.replay = add_replay(app, r.replay_args);
  c.merge = app.add_subcommand(
      "merge",
      "join the report.json files of qualify --shard i/n into one report: Holm over every "
      "shard's p-values, a missing shard not judged");
  cli::add_merge_options(c.merge, r.merge_args);
  c.mutants =
      app.add_subcommand("mutants", "run the battery on every mutant and print the kill matrix");
  c.mutants->add_flag("--named-only", r.named_only,
                      "run only each mutant's catalog check (faster; the CI proof)");
  c.mutants->add_option("--subjects-prefix", r.prefix,
                        "only mutants whose name starts with this (e.g. cpu.)");
  cli::add_common(c.mutants, r.m_common, /*matmul=*/true);
  c.calibrate = app.add_subcommand("calibrate",
                                   "many runs with fresh seeds on correct samplers: failure "
                                   "count vs the budget, uniformity (KS) of each check's p-values");
  cli::add_calibrate_options(c.calibrate, r.calib);
  cli::add_common(c.calibrate, r.c_common, /*matmul=*/false);
  c.fingerprint = app.add_subcommand(
      "fingerprint", "hash a subject's outputs over a fixed plan into a manifest, or compare two");
  cli::add_fingerprint_options(c.fingerprint, r.fingerprint_args);
  c.repro_script = app.add_subcommand(
      "repro-script",
      "write a standalone Python script that reproduces a failed check's record with the "
      "subject's own package (numpy, torch), without samplecheck");
  cli::add_repro_script_options(c.repro_script, r.script_args);
  c.bisect = app.add_subcommand(
      "bisect",
      "git bisect run with a build command and a samplecheck check; names the first "
      "bad commit and its smallest failing case");
  cli::add_bisect_options(c.bisect, r.bisect_args);
  return c;
}

int run_parsed(const subcommands& c, command_requests& r) {
  if (c.qualify->parsed())
    return run_qualify(r.request, cli::convert(r.q_common), r.require_device);
  if (c.replay->parsed()) return run_replay(r.replay_args);
  if (c.merge->parsed()) return run_merge(r.merge_args);
  if (c.repro_script->parsed()) return cli::run_repro_script(r.script_args);
  if (c.mutants->parsed()) return run_mutants(r.prefix, r.named_only, cli::convert(r.m_common));
  if (c.fingerprint->parsed()) {
    r.fingerprint_args.command_line = command_line;
    return cli::run_fingerprint(r.fingerprint_args);
  }
  if (c.bisect->parsed()) return cli::run_bisect(r.bisect_args);
  return run_calibrate(cli::convert(r.calib), cli::convert(r.c_common));
}

}  // namespace

int main(int argc, char** argv) {
  samplecheck::battery::keep_freed_memory();
  command_line.assign(argv, argv + argc);
  samplecheck::checks::register_checks();  // the check kit's rows, before --checks is read against
                                           // them
  cli::use_ctest_gpus();                   // before any child initialises CUDA
  CLI::App app{
      "samplecheck: statistical conformance of LLM token samplers and batch-invariant matmuls"};
  app.require_subcommand(1);
  app.set_version_flag("--version", cli::version_text(),
                       "print the version, revision, ABI and protocol");
  command_requests requests;
  const subcommands commands = add_subcommands(app, requests);
  if (const int rc = cli::parse_command_line(app, argc, argv); rc >= 0) return rc;
  try {
    return run_parsed(commands, requests);
  } catch (const cli::usage_error& e) {
    return cli::usage_failure(app, e.what());
  }
}
