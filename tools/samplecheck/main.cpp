// samplecheck: qualify a sampler against the battery, or print the mutants' kill matrix.
//
//   samplecheck qualify --subject cpu.dual_pivot [--budget quick|standard] [--seed N]
//                       [--checks a,b] [--alpha A] [--timeout S] [--repro-dir DIR]
//   samplecheck qualify --plugin libvendor.so [--subject NAME]
//   samplecheck qualify --list
//   samplecheck mutants [--budget quick|standard] [--named-only] [--subjects-prefix cpu.]
//   samplecheck calibrate [--subject a,b] [--runs 1000] [--checks ...] [--budget quick]
//
// Exit status: 0 every check passed (or every mutant killed); 1 a check failed (or a
// mutant survived); 2 bad usage or a plugin that cannot be loaded; 77 every check
// was skipped because the subject's device is absent.
#include <climits>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "suites/battery/calibration.h"
#include "suites/battery/catalog.h"
#include "suites/battery/kill_matrix.h"
#include "suites/battery/runner.h"
#include "tools/samplecheck/cli_values.h"

namespace sb = samplecheck::battery;
namespace cli = samplecheck::cli;

namespace {

struct common_options {
  std::string budget = "quick";
  uint64_t seed = sb::kDefaultSeed;
  double alpha = sb::kDefaultAlpha;
  std::vector<std::string> checks;
  double timeout = 0;
  std::string repro_dir;
  bool no_fork = false;
  bool verbose = false;
  int64_t vocab_size = 0;
  // The numeric options as typed (absent: the defaults above); CLI11's own conversions wrap
  // "-1" and read "010" as octal, so convert_common() does it strictly after parsing.
  std::optional<std::string> seed_text, alpha_text, timeout_text, vocab_size_text;
};

// Throws cli::usage_error naming the option and the value it refuses.
void convert_common(common_options& o) {
  if (o.seed_text) o.seed = cli::parse_seed("--seed", *o.seed_text);
  if (o.alpha_text) o.alpha = cli::parse_probability("--alpha", *o.alpha_text, 0, 0.5);
  if (o.timeout_text) o.timeout = cli::parse_seconds("--timeout", *o.timeout_text);
  if (o.vocab_size_text)
    o.vocab_size = cli::parse_count("--vocab-size", *o.vocab_size_text, 16, int64_t{1} << 24);
}

void add_common(CLI::App* app, common_options& o) {
  app->add_option("--budget", o.budget, "sample budget: quick (CI) or standard")
      ->check(CLI::IsMember({"quick", "standard"}));
  app->add_option("--seed", o.seed_text,
                  "run seed (default fixed; pass a fresh one for fresh randomness)")
      ->type_name("UINT");
  app->add_option("--alpha", o.alpha_text, "run-wide false-alarm budget, split by Holm")
      ->type_name("FLOAT");
  app->add_option("--checks", o.checks, "comma-separated checks to run (default: all)")->delimiter(',');
  app->add_option("--timeout", o.timeout_text,
                  "per-check timeout in seconds (default: 4 x the budget's per-check time + 60)")
      ->type_name("FLOAT");
  app->add_option("--repro-dir", o.repro_dir, "write a reproduction JSON per failed check here");
  app->add_option("--vocab-size", o.vocab_size_text,
                  "override the budget's V (fixtures: 32000, 32768, 128256, 151936)")
      ->type_name("INT");
  app->add_flag("--no-fork", o.no_fork, "run checks in-process (debugging; a crash kills the run)");
  app->add_flag("-v,--verbose", o.verbose, "print every check's detail line");
}

sb::run_options to_run_options(const common_options& c) {
  sb::run_options o;
  o.budget = *sb::budget_by_name(c.budget);
  if (c.vocab_size > 0) o.budget.vocab_size = c.vocab_size;
  o.seed = c.seed;
  o.alpha = c.alpha;
  o.checks = c.checks;
  o.timeout_s = c.timeout;
  o.repro_dir = c.repro_dir;
  o.isolate = !c.no_fork;
  return o;
}

void print_list(const sb::subject_catalog& catalog) {
  std::printf("subjects:\n");
  for (const auto& s : catalog.all())
    std::printf("  %-36s %s\n", s.name().c_str(), s.description() ? s.description() : "");
  std::printf("checks:\n");
  for (const auto& c : sb::all_checks())
    std::printf("  %-20s %-11s %s\n", std::string(c.name).c_str(),
                c.kind == sb::check_kind::exact ? "exact" : "statistical", std::string(c.what).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"samplecheck: statistical conformance of LLM token samplers"};
  app.require_subcommand(1);

  common_options q_common;
  std::string subject_name, plugin_path;
  bool list = false;
  auto* qualify = app.add_subcommand("qualify", "run the battery on one subject and print the table");
  qualify->add_option("--subject", subject_name, "subject name (see --list)");
  qualify->add_option("--plugin", plugin_path, "a vendor plugin (.so) exporting samplecheck_plugin");
  qualify->add_flag("--list", list, "list the subjects and checks, then exit");
  add_common(qualify, q_common);

  common_options m_common;
  bool named_only = false;
  std::string prefix;
  auto* mutants = app.add_subcommand("mutants", "run the battery on every mutant and print the kill matrix");
  mutants->add_flag("--named-only", named_only, "run only each mutant's catalog check (faster; the CI proof)");
  mutants->add_option("--subjects-prefix", prefix, "only mutants whose name starts with this (e.g. cpu.)");
  add_common(mutants, m_common);

  common_options c_common;
  std::vector<std::string> calib_subjects;
  int runs = 1000;
  uint64_t first_seed = 1;
  double max_ks_p = 1e-3;
  std::optional<std::string> runs_text, first_seed_text, fail_below_text;  // converted below
  auto* calibrate = app.add_subcommand("calibrate", "many runs with fresh seeds on correct subjects: failure "
                                                    "count vs the budget, uniformity (KS) of each check's p-values");
  calibrate->add_option("--subject", calib_subjects, "subjects (default cpu.multinomial)")->delimiter(',');
  calibrate->add_option("--runs", runs_text, "runs per subject")->type_name("INT");
  calibrate->add_option("--first-seed", first_seed_text,
                        "seed of the first run; run i uses first + i")
      ->type_name("UINT");
  calibrate->add_option("--fail-below", fail_below_text,
                        "exit 1 if a one-sided KS or failure-count p falls below this")
      ->type_name("FLOAT");
  add_common(calibrate, c_common);

  if (const int rc = cli::parse_command_line(app, argc, argv); rc >= 0) return rc;
  try {
    for (common_options* c : {&q_common, &m_common, &c_common}) convert_common(*c);
    if (runs_text) runs = static_cast<int>(cli::parse_count("--runs", *runs_text, 1, INT_MAX));
    if (first_seed_text) first_seed = cli::parse_seed("--first-seed", *first_seed_text);
    if (fail_below_text) max_ks_p = cli::parse_probability("--fail-below", *fail_below_text, 0, 1);
  } catch (const cli::usage_error& e) {
    return cli::usage_failure(app, e.what());
  }

  sb::subject_catalog catalog;
  catalog.add_in_tree();

  if (qualify->parsed()) {
    if (!plugin_path.empty()) {
      auto loaded = samplecheck::registry::load_plugin(plugin_path);
      if (!loaded.ok()) {
        std::fprintf(stderr, "samplecheck: %s\n", loaded.error.c_str());
        return 2;
      }
      catalog.add_plugin(loaded.library);
      if (subject_name.empty()) {
        // Every sampler of the plugin, one run each.
        bool all_passed = true;
        for (const sc_sampler* s : loaded.library->samplers()) {
          const auto report = sb::run_battery(*catalog.find(s->name), to_run_options(q_common), catalog.lookup());
          std::fputs(sb::format_report(report, q_common.verbose).c_str(), stdout);
          all_passed &= report.passed();
        }
        return all_passed ? 0 : 1;
      }
    }
    if (list) {
      print_list(catalog);
      return 0;
    }
    if (subject_name.empty()) {
      std::fprintf(stderr, "samplecheck qualify: give --subject NAME or --plugin lib.so (see --list)\n");
      return 2;
    }
    const sb::subject* s = catalog.find(subject_name);
    if (s == nullptr) {
      std::fprintf(stderr, "samplecheck qualify: no subject named '%s' (see samplecheck qualify --list)\n",
                   subject_name.c_str());
      return 2;
    }
    const auto report = sb::run_battery(*s, to_run_options(q_common), catalog.lookup());
    std::fputs(sb::format_report(report, q_common.verbose).c_str(), stdout);
    if (report.passed()) return 0;
    return report.unavailable() ? 77 : 1;
  }

  if (calibrate->parsed()) {
    if (calib_subjects.empty()) calib_subjects = {"cpu.multinomial"};
    bool ok = true;
    for (const auto& name : calib_subjects) {
      const sb::subject* s = catalog.find(name);
      if (s == nullptr) {
        std::fprintf(stderr, "samplecheck calibrate: no subject named '%s'\n", name.c_str());
        return 2;
      }
      sb::run_options o = to_run_options(c_common);
      const auto summary = sb::calibrate(*s, o, catalog.lookup(), runs, first_seed);
      std::fputs(sb::format_calibration(name, summary).c_str(), stdout);
      ok &= summary.failure_p_value >= max_ks_p;
      for (const auto& [check, u] : summary.checks) ok &= u.ks_lower_p_bound >= max_ks_p;
    }
    return ok ? 0 : 1;
  }

  std::vector<sb::subject> selected;
  for (const auto& s : catalog.all())
    if (s.kind() == sb::subject_kind::sampler && s.name().rfind(prefix, 0) == 0) selected.push_back(s);
  const auto results = sb::run_mutants(selected, to_run_options(m_common), catalog.lookup(), named_only);
  if (m_common.verbose)
    for (const auto& m : results) std::fputs(sb::format_report(m.report, false).c_str(), stdout);
  std::printf("kill matrix (budget %s, seed %llu%s)\n", m_common.budget.c_str(),
              static_cast<unsigned long long>(m_common.seed), named_only ? ", named checks only" : "");
  std::fputs(sb::format_kill_matrix(results).c_str(), stdout);
  if (results.empty()) {
    std::fprintf(stderr, "samplecheck mutants: no mutant subject matches '%s'\n", prefix.c_str());
    return 2;
  }
  bool all_unavailable = true;
  for (const auto& m : results) all_unavailable &= m.unavailable;
  if (all_unavailable) return 77;  // nothing ran: skipped, never passed
  return sb::all_killed(results) ? 0 : 1;
}
