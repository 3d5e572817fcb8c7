#include "tools/samplecheck/command_options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <climits>
#include <filesystem>

#include "tools/samplecheck/report_dir.h"

namespace samplecheck::cli {
namespace {

void add_matmul_options(CLI::App* app, common_options& o) {
  app->add_option("--m", o.m_text,
                  "matmul batch sizes, e.g. 1-4096 or 1,7,4095 (default: every M on a "
                  "device, the CPU subset on the host)")
      ->type_name("LIST");
  app->add_option("--shape", o.shape_text,
                  "matmul shapes NxK instead of the fixture's, e.g. 4096x4096,32x1001")
      ->type_name("LIST");
  app->add_option("--columns", o.columns_text,
                  "matmul output columns computed (default: all on a device, 16 on "
                  "the host)")
      ->type_name("INT");
  app->add_option("--fixtures", o.fixtures_text, "the fixtures folder (default: the source tree's)")
      ->type_name("DIR");
}

// --fixtures is checked whatever the subjects: a typo in it is refused, not ignored.
std::string fixture_path(const common_options& o) {
  if (!o.fixtures_text) return battery::default_matmul_fixture_path();
  std::error_code ec;
  const std::string dir = *o.fixtures_text, file = dir + "/matmul/layer_shapes.txt";
  if (!std::filesystem::is_directory(dir, ec))
    throw usage_error(fmt::format("--fixtures {}: not a directory", printable(dir)));
  if (!std::filesystem::is_regular_file(file, ec))
    throw usage_error(
        fmt::format("--fixtures {}: no matmul/layer_shapes.txt there", printable(dir)));
  return file;
}

battery::matmul_selection convert_matmul(const common_options& o) {
  battery::matmul_selection s;
  s.fixture_path = fixture_path(o);
  if (o.m_text) s.batch_sizes = parse_batch_sizes("--m", *o.m_text, 1, battery::kMaxBatchSize);
  if (o.shape_text)
    for (const auto& sh : parse_shapes("--shape", *o.shape_text))
      s.shapes.push_back({fmt::format("{}x{}", sh.n, sh.k), sh.n, sh.k, "cli"});
  if (o.columns_text) s.columns = parse_count("--columns", *o.columns_text, 1, int64_t{1} << 20);
  return s;
}

bool reachable(int32_t memory_space, std::string* why) {
  if (memory_space == SC_MEMORY_HOST) return true;
#ifdef SAMPLECHECK_HAVE_CUDA
  if (memory_space == SC_MEMORY_CUDA) return true;
#endif
  *why = memory_space == SC_MEMORY_CUDA  ? "this samplecheck was built without CUDA"
         : memory_space == SC_MEMORY_HIP ? "this samplecheck was built without HIP"
                                         : fmt::format("memory space {} is unknown", memory_space);
  return false;
}

std::string names_of(const std::vector<const battery::subject*>& subjects) {
  std::string out;
  for (const auto* s : subjects) out += (out.empty() ? "" : ", ") + s->name();
  return out;
}

// The subjects of a plugin or an --exec command, from its subject process's hello. The
// plugin is loaded in that process, never here: its crash or hang is this error.
std::vector<const battery::subject*> process_subjects(battery::subject_roster& roster,
                                                      const subject_request& r) {
  std::vector<const battery::subject*> all;
  try {
    if (!r.exec.empty()) {
      all = roster.add_exec(r.exec, r.handshake_timeout);
    } else if (!r.connect.empty()) {
      all = roster.add_connect(r.connect, r.handshake_timeout);
    } else {
      // An absolute path, so a reproduction record replays from any folder.
      std::error_code ec;
      const std::filesystem::path absolute = std::filesystem::absolute(r.plugin, ec);
      all = roster.add_plugin(ec ? r.plugin : absolute.lexically_normal().string(),
                              r.handshake_timeout);
    }
  } catch (const harness::subject_failure& f) {
    throw usage_error(f.why);
  }
  if (r.subject.empty()) return all;
  for (const auto* s : all)
    if (s->name() == r.subject) return {s};
  throw usage_error(fmt::format("{} has no subject named '{}' (its subjects: {})",
                                !r.exec.empty()      ? "--exec '" + r.exec + "'"
                                : !r.connect.empty() ? "--connect '" + r.connect + "'"
                                                     : "the plugin " + r.plugin,
                                r.subject, names_of(all)));
}

}  // namespace

void add_matmul_selection(CLI::App* app, common_options& o) { add_matmul_options(app, o); }

void add_common(CLI::App* app, common_options& o, bool matmul) {
  app->add_option("--budget", o.budget, "sample budget: quick (CI) or standard")
      ->check(CLI::IsMember({"quick", "standard"}));
  app->add_option("--seed", o.seed_text,
                  "run seed, decimal or 0x hex: 0x10 is 16; 010 is refused, never read as "
                  "octal (default fixed; pass a fresh one for fresh randomness)")
      ->type_name("UINT");
  app->add_option("--alpha", o.alpha_text, "run-wide false-alarm budget, split by Holm")
      ->type_name("FLOAT");
  app->add_option("--checks", o.checks_text, "comma-separated checks to run (default: all)")
      ->type_name("LIST");
  app->add_option("--repro-dir", o.repro_dir, "write a reproduction JSON per failed check here");
  app->add_option("--report-dir", o.report_dir,
                  "write report.json, junit.xml and report.html here (and the reproduction "
                  "files to DIR/repro unless --repro-dir is given)");
  app->add_flag("-q,--quiet", o.quiet, "no progress on stderr");
  app->add_option("--progress-every", o.progress_every_text,
                  "off a terminal (a log), a line every SECONDS while a check draws, with its "
                  "samples so far (default 60)")
      ->type_name("SECONDS");
  app->add_option("--vocab-size", o.vocab_size_text,
                  "override the budget's V (fixtures: 32000, 32768, 128256, 151936)")
      ->type_name("INT");
  add_run_control(app, o);
  if (matmul) add_matmul_options(app, o);
}

void add_run_control(CLI::App* app, common_options& o) {
  app->add_option("--timeout", o.timeout_text,
                  "per-check wall-clock limit in seconds (default: the budget's, "
                  "scaled with V); a check past it is a TIMEOUT")
      ->type_name("FLOAT");
  app->add_flag("--in-process", o.in_process,
                "call in-tree subjects in this process, not in their subject process "
                "(debugging; a crash kills the run)");
  // The flag's name from when each check ran in a forked child: deprecated, kept (out of
  // --help) so that existing scripts keep working.
  app->add_flag("--no-fork", o.in_process, "deprecated spelling of --in-process")->group("");
  app->add_flag("-v,--verbose", o.verbose, "print every check's detail line");
}

common_options convert(common_options o) {
  if (o.shard_text) {
    const shard_arg shard = parse_shard("--shard", *o.shard_text);
    o.shard = {shard.index, shard.count};
  }
  if (o.seed_text) o.seed = parse_seed("--seed", *o.seed_text);
  if (o.alpha_text) o.alpha = parse_probability("--alpha", *o.alpha_text, 0, 0.5);
  if (o.timeout_text) o.timeout = parse_seconds("--timeout", *o.timeout_text);
  if (o.time_limit_text) o.time_limit = parse_seconds("--time-limit", *o.time_limit_text);
  if (o.progress_every_text)
    o.progress_every = parse_seconds("--progress-every", *o.progress_every_text);
  if (o.vocab_size_text)
    o.vocab_size = parse_count("--vocab-size", *o.vocab_size_text, battery::kMinVocabSize,
                               battery::kMaxVocabSize);
  if (o.checks_text) o.checks = parse_name_list("--checks", *o.checks_text, battery::check_names());
  if (!o.report_dir.empty()) {
    if (const std::string why = prepare_report_dir(o.report_dir); !why.empty())
      throw usage_error(why);
    if (o.repro_dir.empty()) o.repro_dir = o.report_dir + "/repro";
  }
  if (!o.repro_dir.empty())
    if (const std::string why = battery::prepare_repro_dir(o.repro_dir); !why.empty())
      throw usage_error(why);
  o.matmul = convert_matmul(o);
  return o;
}

battery::run_options to_run_options(const common_options& c) {
  battery::run_options o;
  o.budget = *battery::budget_by_name(c.budget);
  if (c.vocab_size > 0) o.budget.vocab_size = c.vocab_size;
  o.seed = c.seed;
  o.alpha = c.alpha;
  o.checks = c.checks;
  o.timeout_s = c.timeout;
  o.repro_dir = c.repro_dir;
  o.in_process = c.in_process;
  o.matmul = c.matmul;
  o.shard = c.shard;
  return o;
}

void add_process_options(CLI::App* app, subject_request& r) {
  auto* plugin =
      app->add_option("--plugin", r.plugin, "a vendor plugin (.so) exporting samplecheck_plugin");
  auto* exec = app->add_option("--exec", r.exec,
                               "a subject process: \"CMD ARGS\", run by /bin/sh, speaking "
                               "docs/subject-protocol.md")
                   ->excludes(plugin);
  app->add_option("--connect", r.connect,
                  "a subject served at this AF_UNIX socket, one forked server per connection "
                  "(docs/subject-protocol.md, \"Connecting\")")
      ->type_name("SOCKET")
      ->excludes(plugin)
      ->excludes(exec);
  app->add_option("--handshake-timeout", r.handshake_timeout_text,
                  "seconds a subject process may take to say hello (default 300)")
      ->type_name("FLOAT");
}

void add_subject_options(CLI::App* app, subject_request& r) {
  app->add_option("--subject", r.subject,
                  "subject name (see --list); with --plugin or --exec, one of its own");
  add_process_options(app, r);
  app->add_option("--kind", r.kind, "only subjects of this kind")
      ->check(CLI::IsMember({"sampler", "matmul", "collective"}));
  app->add_flag("--list", r.list,
                "list the subjects (the plugin's or process's, with --plugin or --exec) and "
                "the checks, then exit");
}

std::vector<const battery::subject*> resolve_subjects(battery::subject_roster& roster,
                                                      subject_request r) {
  if (r.handshake_timeout_text)
    r.handshake_timeout = parse_seconds("--handshake-timeout", *r.handshake_timeout_text);
  roster.add_in_tree();
  std::vector<const battery::subject*> found;
  if (!r.plugin.empty() || !r.exec.empty() || !r.connect.empty()) {
    found = process_subjects(roster, r);
  } else if (!r.subject.empty()) {
    const battery::subject* s = roster.find(r.subject);
    if (s == nullptr)
      throw usage_error(
          fmt::format("no subject named '{}' (see samplecheck qualify --list)", r.subject));
    found = {s};
  } else if (r.list) {
    for (const auto& s : roster.all()) found.push_back(&s);
  } else {
    throw usage_error(
        "give --subject NAME, --plugin lib.so or --exec \"CMD\" (see samplecheck qualify --list)");
  }
  if (!r.kind.empty()) {
    std::erase_if(
        found, [&](const battery::subject* s) { return battery::to_string(s->kind()) != r.kind; });
    if (found.empty())
      throw usage_error(fmt::format("{} has no {} subject",
                                    !r.plugin.empty() ? r.plugin
                                    : !r.exec.empty() ? "--exec '" + r.exec + "'"
                                                      : "the selection",
                                    r.kind));
  }
  if (r.list) return found;
  for (const auto* s : found)
    if (std::string why; !reachable(s->memory_space(), &why))
      throw usage_error(fmt::format("{}: unsupported memory space: {}", s->name(), why));
  return found;
}

void add_calibrate_options(CLI::App* app, calibrate_request& r) {
  app->add_option("--subject", r.subjects, "samplers (default cpu.multinomial)")->delimiter(',');
  app->add_option("--runs", r.runs_text, "runs per subject")->type_name("INT");
  app->add_option("--first-seed", r.first_seed_text, "seed of the first run; run i uses first + i")
      ->type_name("UINT");
  app->add_option("--fail-below", r.fail_below_text,
                  "exit 1 if a false-alarm count or one-sided KS p falls below this (or a median "
                  "p-value is above 0.75)")
      ->type_name("FLOAT");
  app->add_option("--jobs", r.jobs_text,
                  "worker processes sharing the runs (default 1); the result does not depend on it")
      ->type_name("INT");
}

calibrate_request convert(calibrate_request r) {
  if (r.runs_text) r.runs = static_cast<int>(parse_count("--runs", *r.runs_text, 1, INT_MAX));
  if (r.first_seed_text) r.first_seed = parse_seed("--first-seed", *r.first_seed_text);
  if (r.fail_below_text) r.fail_below = parse_probability("--fail-below", *r.fail_below_text, 0, 1);
  if (r.jobs_text) r.jobs = static_cast<int>(parse_count("--jobs", *r.jobs_text, 1, 1024));
  return r;
}

}  // namespace samplecheck::cli
