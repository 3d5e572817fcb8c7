// peer_table: the peers' acceptance rules (FlashInfer, vLLM, PyTorch) run on every
// CPU sampler mutant and on the correct CPU samplers, each at its own sample count
// on its own kind of inputs. Prints which mutants each rule kills and how often it
// rejects a correct sampler. samplecheck's own column comes from `samplecheck mutants`.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_samplers.h"
#include "kernels/mutant_catalog.h"
#include "suites/peers/peer_cases.h"
#include "tools/peer_table/samplecheck_column.h"
#include "tools/peer_table/suite_runs.h"

using namespace samplecheck;
using namespace samplecheck::peers;
using samplecheck::peer_table::options;
using samplecheck::peer_table::task;

namespace {

constexpr peer_kind kPeers[] = {peer_kind::flashinfer, peer_kind::vllm, peer_kind::pytorch};

const char* peer_title(peer_kind peer) {
  switch (peer) {
    case peer_kind::flashinfer:
      return "FlashInfer (cosine > 0.99, 5M)";
    case peer_kind::vllm:
      return "vLLM (chi2 alpha 1e-6, 50k)";
    case peer_kind::pytorch:
      return "PyTorch (chi2 cells > 5, 10k)";
  }
  return "?";
}

// A table printed either aligned for a terminal or as GitHub Markdown.
void print_table(const std::vector<std::vector<std::string>>& rows, bool markdown) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string line = markdown ? "|" : "";
    for (size_t c = 0; c < rows[i].size(); ++c)
      line += markdown ? fmt::format(" {:<{}} |", rows[i][c], width[c])
                       : fmt::format("{:<{}}  ", rows[i][c], width[c]);
    std::puts(line.c_str());
    if (i == 0 && markdown) {
      std::string rule = "|";
      for (size_t c = 0; c < rows[i].size(); ++c) rule += std::string(width[c] + 2, '-') + "|";
      std::puts(rule.c_str());
    }
  }
  std::puts("");
}

std::string mutant_id(const sc_sampler& s) {
  const std::string name = s.name;
  const auto colon = name.find(':');
  return colon == std::string::npos ? "" : name.substr(colon + 1);
}

// Everything the command line sets: the measuring options and what to print.
struct cli_options {
  options opt;
  bool detail = false;
  bool strict = false;  // --fail-on-false-alarm
  bool with_samplecheck = false;
  std::string samplecheck_budget = "quick";
  int samplecheck_seeds = 1;
};

void add_rule_options(CLI::App& app, options& opt) {
  app.add_option("--seeds", opt.seeds,
                 "false-alarm seeds per correct sampler for the vLLM and PyTorch rules (up to the "
                 "time cap)")
      ->check(CLI::Range(1, 100000));
  app.add_option(
         "--flashinfer-seeds", opt.flashinfer_seeds,
         "false-alarm seeds per correct sampler for the FlashInfer rule (5M draws per case)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--flashinfer-vocab", opt.flashinfer_vocab,
                 "vocabulary of the FlashInfer rows (theirs: 111, 32000, 128256)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  app.add_option("--flashinfer-cases", opt.flashinfer_cases,
                 "FlashInfer cases per filter family per run, rotating through its grid by seed")
      ->check(CLI::Range(1, 100));
  app.add_option("--kill-seeds", opt.kill_seeds,
                 "runs of each rule per mutant (seed indices 0..n-1); killed if any fails")
      ->check(CLI::Range(1, 1000));
  app.add_option("--cell-seconds", opt.cell_seconds,
                 "time cap per (rule, correct sampler): seeds past it are skipped and the cell "
                 "says how many ran")
      ->check(CLI::PositiveNumber);
  app.add_option("--base-seed", opt.base_seed, "seed of seed index 0; index i uses base + i");
  app.add_option("--threads", opt.threads, "worker threads")->check(CLI::Range(1, 64));
  app.add_option("--subjects", opt.subjects,
                 "regular expression on subject names (mutants match by full name)");
}

void add_report_options(CLI::App& app, cli_options& c) {
  app.add_flag("--markdown", c.opt.markdown, "print GitHub Markdown tables");
  app.add_flag(
      "--fail-on-false-alarm", c.strict,
      "exit 3 if a correct sampler fails the FlashInfer or vLLM rule (their false-alarm rates are "
      "below 1e-5 per run; PyTorch's 1e-3 per case is left out)");
  app.add_flag("--detail", c.detail,
               "also print every mutant's verdict and the case that failed it");
  app.add_flag("--samplecheck", c.with_samplecheck,
               "add samplecheck's column: the battery on every mutant and on the correct samplers");
  app.add_option("--samplecheck-budget", c.samplecheck_budget, "battery budget for that column")
      ->check(CLI::IsMember({"quick", "standard"}));
  app.add_option("--samplecheck-seeds", c.samplecheck_seeds,
                 "battery runs per correct sampler (seeds base + i)")
      ->check(CLI::Range(1, 1000));
}

struct subject_lists {
  std::vector<const sc_sampler*> correct, mutants;
};

// The CPU subjects whose names match `subjects`; 0, or the exit status of a usage error.
int select_subjects(const std::string& subjects, subject_lists& out) {
  std::regex pattern;
  try {
    pattern = std::regex(subjects);
  } catch (const std::regex_error& e) {
    std::fprintf(stderr, "peer_table: --subjects '%s' is not a regular expression: %s\n",
                 subjects.c_str(), e.what());
    return 2;
  }
  for (const sc_sampler* s : cpu_samplers()) {
    if (!std::regex_search(std::string(s->name), pattern)) continue;
    (mutant_id(*s).empty() ? out.correct : out.mutants).push_back(s);
  }
  if (out.correct.empty() && out.mutants.empty()) {
    std::fprintf(stderr, "peer_table: no CPU subject matches --subjects '%s'\n", subjects.c_str());
    return 2;
  }
  return 0;
}

// The kill tasks come first, the false-alarm tasks from `first_alarm_task` on.
struct task_plan {
  std::vector<task> tasks;
  size_t first_alarm_task = 0;
};

// Kills: every mutant, every rule, seed indices 0 .. kill_seeds - 1 (a run is one
// pass of the peer's suite). False alarms: every correct sampler and the exact
// baseline, over the seeds, within each cell's time cap.
task_plan plan_tasks(const subject_lists& subjects, const options& opt) {
  task_plan plan;
  std::vector<task>& tasks = plan.tasks;
  for (const sc_sampler* m : subjects.mutants)
    for (peer_kind peer : kPeers)
      for (int s = 0; s < opt.kill_seeds; ++s) tasks.push_back({peer, m, m, s, -1, {}});
  plan.first_alarm_task = tasks.size();
  // The baseline is judged under the declaration with the most filters, so that
  // every case family of every rule gets exact draws too.
  const sc_sampler* baseline_declaration = nullptr;
  for (const sc_sampler* c : subjects.correct)
    if (!baseline_declaration ||
        std::popcount(c->filters) > std::popcount(baseline_declaration->filters))
      baseline_declaration = c;
  for (peer_kind peer : kPeers) {
    const int seeds = peer == peer_kind::flashinfer ? opt.flashinfer_seeds : opt.seeds;
    for (int s = 0; s < seeds; ++s) {
      int cell = static_cast<int>(peer) * static_cast<int>(subjects.correct.size() + 1);
      for (const sc_sampler* c : subjects.correct) tasks.push_back({peer, c, c, s, cell++, {}});
      if (baseline_declaration) tasks.push_back({peer, nullptr, baseline_declaration, s, cell, {}});
    }
  }
  return plan;
}

// Failed runs out of runs: one cell of a kill or false-alarm count.
struct run_count {
  int failed = 0, runs = 0;
};

// samplecheck's column: one battery run per mutant, samplecheck_seeds per correct sampler.
struct battery_column {
  std::map<std::string, peer_table::battery_outcome> kills;
  std::map<std::string, run_count> alarms;  // correct sampler -> runs
};

// The battery forks per check, so it runs after the worker threads have joined.
battery_column run_battery_column(const subject_lists& subjects, const cli_options& c) {
  battery_column column;
  std::vector<std::string> names;
  for (const sc_sampler* m : subjects.mutants) names.push_back(m->name);
  for (auto& o : peer_table::run_battery_on(names, c.samplecheck_budget, c.opt.base_seed))
    column.kills[o.subject] = o;
  names.clear();
  for (const sc_sampler* s : subjects.correct) names.push_back(s->name);
  for (int s = 0; s < c.samplecheck_seeds; ++s)
    for (const auto& o :
         peer_table::run_battery_on(names, c.samplecheck_budget, c.opt.base_seed + s)) {
      auto& cell = column.alarms[o.subject];
      ++cell.runs;
      if (!o.passed) {
        ++cell.failed;
        std::printf("samplecheck false alarm on %s, seed index %d: %s%s\n", o.subject.c_str(), s,
                    o.failed_checks.c_str(), o.error.c_str());
      }
    }
  return column;
}

using table = std::vector<std::vector<std::string>>;

// The header row: `first` columns, then one per rule, then samplecheck's if it ran.
std::vector<std::string> header(std::vector<std::string> first, const cli_options& c) {
  for (peer_kind peer : kPeers) first.push_back(peer_title(peer));
  if (c.with_samplecheck)
    first.push_back(fmt::format("samplecheck (battery, {})", c.samplecheck_budget));
  return first;
}

// "S07 cpu.sort_filter:S07" -> rule -> failed runs of the kill tasks.
using kill_counts = std::map<std::string, std::map<peer_kind, run_count>>;

kill_counts count_kills(const task_plan& plan) {
  kill_counts by_mutant;
  for (size_t i = 0; i < plan.first_alarm_task; ++i) {
    const task& k = plan.tasks[i];
    auto& cell = by_mutant[mutant_id(*k.subject) + " " + k.subject->name][k.peer];
    if (!k.result.applicable) continue;
    ++cell.runs;
    if (!k.result.passed) ++cell.failed;
  }
  return by_mutant;
}

std::string battery_kill_cell(const battery_column& column, const std::string& subject,
                              int& battery_killed) {
  const auto it = column.kills.find(subject);
  if (it == column.kills.end()) return "not run";
  if (!it->second.error.empty()) return "error: " + it->second.error;
  if (it->second.passed) return "survived";
  ++battery_killed;
  return "killed: " + it->second.failed_checks;
}

// Kill table: one row per mutant subject; a cell counts the failed runs.
table kill_table(const task_plan& plan, const cli_options& c, const battery_column& column) {
  const kill_counts by_mutant = count_kills(plan);
  table kills{header({"mutant", "defect", "subject"}, c)};
  int battery_killed = 0;
  std::map<peer_kind, int> killed_total;
  for (const auto& [key, cells] : by_mutant) {
    const std::string id = key.substr(0, key.find(' '));
    const mutant_entry* entry = find_mutant(id);
    std::vector<std::string> row{id, entry ? std::string(entry->slug) : "?",
                                 key.substr(key.find(' ') + 1)};
    for (peer_kind peer : kPeers) {
      const auto it = cells.find(peer);
      if (it == cells.end() || it->second.runs == 0) {
        row.push_back("n/a");
        continue;
      }
      const run_count& k = it->second;
      if (k.failed > 0) ++killed_total[peer];
      const std::string runs =
          c.opt.kill_seeds > 1 ? fmt::format(" ({}/{} runs)", k.failed, k.runs) : "";
      row.push_back((k.failed > 0 ? "killed" : "survived") + runs);
    }
    if (c.with_samplecheck) row.push_back(battery_kill_cell(column, row[2], battery_killed));
    kills.push_back(std::move(row));
  }
  std::vector<std::string> total{"all", "", "mutants killed"};
  for (peer_kind peer : kPeers)
    total.push_back(fmt::format("{}/{}", killed_total[peer], by_mutant.size()));
  if (c.with_samplecheck) total.push_back(fmt::format("{}/{}", battery_killed, by_mutant.size()));
  kills.push_back(std::move(total));
  return kills;
}

// False alarms per correct sampler (and the exact baseline) and rule.
struct alarm_counts {
  std::map<std::string, std::map<peer_kind, run_count>> alarms;  // subject -> rule -> runs
  std::map<std::string, std::string> first_alarm;  // "subject / rule" -> first failing case
};

bool is_exact_baseline(const std::string& who) { return who.rfind("exact", 0) == 0; }

alarm_counts count_alarms(const task_plan& plan) {
  alarm_counts counts;
  for (size_t i = plan.first_alarm_task; i < plan.tasks.size(); ++i) {
    const task& k = plan.tasks[i];
    if (!k.result.applicable) continue;
    const std::string who =
        k.subject ? k.subject->name : fmt::format("exact draws ({} declaration)", k.declared->name);
    auto& cell = counts.alarms[who][k.peer];
    ++cell.runs;
    if (!k.result.passed) {
      ++cell.failed;
      counts.first_alarm.emplace(who + " / " + to_string(k.peer), k.result.failure);
    }
  }
  return counts;
}

table false_alarm_table(const alarm_counts& counts, const cli_options& c,
                        const battery_column& column) {
  table fa{header({"correct sampler"}, c)};
  run_count battery_total;
  std::map<peer_kind, run_count> rule_total;
  for (const auto& [who, cells] : counts.alarms) {
    std::vector<std::string> row{who};
    for (peer_kind peer : kPeers) {
      const auto it = cells.find(peer);
      row.push_back(it == cells.end()
                        ? "n/a"
                        : fmt::format("{}/{} seeds", it->second.failed, it->second.runs));
      if (it != cells.end() && !is_exact_baseline(who)) {
        rule_total[peer].failed += it->second.failed;
        rule_total[peer].runs += it->second.runs;
      }
    }
    if (c.with_samplecheck) {
      const auto it = column.alarms.find(who);
      if (it == column.alarms.end()) {
        row.push_back("n/a");
      } else {
        row.push_back(fmt::format("{}/{} seeds", it->second.failed, it->second.runs));
        battery_total.failed += it->second.failed;
        battery_total.runs += it->second.runs;
      }
    }
    fa.push_back(std::move(row));
  }
  std::vector<std::string> total{"all correct samplers"};
  for (peer_kind peer : kPeers)
    total.push_back(fmt::format("{}/{} runs", rule_total[peer].failed, rule_total[peer].runs));
  if (c.with_samplecheck)
    total.push_back(fmt::format("{}/{} runs", battery_total.failed, battery_total.runs));
  fa.push_back(std::move(total));
  return fa;
}

// --detail: every kill task's verdict and the case that failed it.
table detail_table(const task_plan& plan) {
  table rows{{"mutant subject", "rule", "seed index", "verdict", "draws", "first failing case"}};
  for (size_t i = 0; i < plan.first_alarm_task; ++i) {
    const task& k = plan.tasks[i];
    rows.push_back({k.subject->name, to_string(k.peer), fmt::format("{}", k.seed_index),
                    !k.result.applicable ? "n/a" : (k.result.passed ? "survived" : "KILLED"),
                    fmt::format("{}", k.result.samples), k.result.failure});
  }
  return rows;
}

void print_settings(const cli_options& c, double seconds) {
  const options& opt = c.opt;
  std::printf(
      "%sRules at their own sample counts: FlashInfer 5,000,000 draws per case (%d case(s) per "
      "filter family per run, "
      "V = %lld), vLLM 50,000 (8 cases, V = 32), PyTorch 10,000 (8 cases, V = 32; cases with fewer "
      "than two "
      "cells of expected count > 5 skipped). Runs per mutant: %d. False-alarm seeds: up to %d for "
      "FlashInfer and %d for vLLM and PyTorch, each (rule, sampler) cell capped at %.0f s of "
      "sampling, so a cell "
      "shows the seeds it ran; base seed %llu. samplecheck's column: %s. Wall time %.1f s on %d "
      "threads.\n",
      opt.markdown ? "\n" : "", opt.flashinfer_cases, static_cast<long long>(opt.flashinfer_vocab),
      opt.kill_seeds, opt.flashinfer_seeds, opt.seeds, opt.cell_seconds,
      static_cast<unsigned long long>(opt.base_seed),
      c.with_samplecheck
          ? fmt::format(
                "the battery at the {} budget, every check, one run per mutant (base seed), "
                "{} run(s) per correct sampler",
                c.samplecheck_budget, c.samplecheck_seeds)
                .c_str()
          : "not run here (--samplecheck), see `samplecheck mutants`",
      seconds, opt.threads);
}

// --fail-on-false-alarm: 3 if a correct sampler failed the FlashInfer or vLLM rule.
int false_alarm_status(const alarm_counts& counts) {
  for (const auto& [who, cells] : counts.alarms) {
    if (is_exact_baseline(who)) continue;
    for (peer_kind peer : {peer_kind::flashinfer, peer_kind::vllm}) {
      const auto it = cells.find(peer);
      if (it != cells.end() && it->second.failed > 0) {
        std::fprintf(stderr, "peer_table: correct sampler %s failed the %s rule in %d of %d runs\n",
                     who.c_str(), to_string(peer), it->second.failed, it->second.runs);
        return 3;
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cli_options c;
  CLI::App app{
      "The peers' sampler-test criteria on samplecheck's mutants and correct CPU samplers"};
  add_rule_options(app, c.opt);
  add_report_options(app, c);
  CLI11_PARSE(app, argc, argv);
  if (c.opt.flashinfer_seeds > c.opt.seeds) c.opt.flashinfer_seeds = c.opt.seeds;

  const auto start = std::chrono::steady_clock::now();
  subject_lists subjects;
  if (const int status = select_subjects(c.opt.subjects, subjects); status != 0) return status;
  task_plan plan = plan_tasks(subjects, c.opt);
  try {
    peer_table::run_tasks(plan.tasks, 3 * static_cast<int>(subjects.correct.size() + 1), c.opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peer_table: harness error: %s\n", e.what());
    return 1;
  }
  const battery_column column =
      c.with_samplecheck ? run_battery_column(subjects, c) : battery_column{};
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const alarm_counts alarms = count_alarms(plan);
  std::puts(c.opt.markdown ? "### Mutants killed by the peers' criteria\n"
                           : "Mutants killed by the peers' criteria");
  print_table(kill_table(plan, c, column), c.opt.markdown);
  std::puts(c.opt.markdown ? "### False alarms on correct samplers\n"
                           : "False alarms on correct samplers");
  print_table(false_alarm_table(alarms, c, column), c.opt.markdown);
  if (c.detail) print_table(detail_table(plan), c.opt.markdown);
  for (const auto& [what, why] : alarms.first_alarm)
    std::printf("false alarm %s: %s\n", what.c_str(), why.c_str());
  print_settings(c, seconds);
  return c.strict ? false_alarm_status(alarms) : 0;
}
