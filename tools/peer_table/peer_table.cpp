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

}  // namespace

int main(int argc, char** argv) {
  options opt;
  bool detail = false;
  CLI::App app{
      "The peers' sampler-test criteria on samplecheck's mutants and correct CPU samplers"};
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
  app.add_flag("--markdown", opt.markdown, "print GitHub Markdown tables");
  bool strict = false;
  app.add_flag(
      "--fail-on-false-alarm", strict,
      "exit 3 if a correct sampler fails the FlashInfer or vLLM rule (their false-alarm rates are "
      "below 1e-5 per run; PyTorch's 1e-3 per case is left out)");
  app.add_flag("--detail", detail, "also print every mutant's verdict and the case that failed it");
  bool with_samplecheck = false;
  std::string samplecheck_budget = "quick";
  int samplecheck_seeds = 1;
  app.add_flag("--samplecheck", with_samplecheck,
               "add samplecheck's column: the battery on every mutant and on the correct samplers");
  app.add_option("--samplecheck-budget", samplecheck_budget, "battery budget for that column")
      ->check(CLI::IsMember({"quick", "standard"}));
  app.add_option("--samplecheck-seeds", samplecheck_seeds,
                 "battery runs per correct sampler (seeds base + i)")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  if (opt.flashinfer_seeds > opt.seeds) opt.flashinfer_seeds = opt.seeds;

  const auto start = std::chrono::steady_clock::now();
  std::regex pattern;
  try {
    pattern = std::regex(opt.subjects);
  } catch (const std::regex_error& e) {
    std::fprintf(stderr, "peer_table: --subjects '%s' is not a regular expression: %s\n",
                 opt.subjects.c_str(), e.what());
    return 2;
  }
  std::vector<const sc_sampler*> correct, mutants;
  for (const sc_sampler* s : cpu_samplers()) {
    if (!std::regex_search(std::string(s->name), pattern)) continue;
    (mutant_id(*s).empty() ? correct : mutants).push_back(s);
  }
  if (correct.empty() && mutants.empty()) {
    std::fprintf(stderr, "peer_table: no CPU subject matches --subjects '%s'\n",
                 opt.subjects.c_str());
    return 2;
  }

  // Kills: every mutant, every rule, seed indices 0 .. kill_seeds - 1 (a run is one
  // pass of the peer's suite). False alarms: every correct sampler and the exact
  // baseline, over the seeds, within each cell's time cap.
  std::vector<task> tasks;
  for (const sc_sampler* m : mutants)
    for (peer_kind peer : kPeers)
      for (int s = 0; s < opt.kill_seeds; ++s) tasks.push_back({peer, m, m, s, -1, {}});
  const size_t first_alarm_task = tasks.size();
  // The baseline is judged under the declaration with the most filters, so that
  // every case family of every rule gets exact draws too.
  const sc_sampler* baseline_declaration = nullptr;
  for (const sc_sampler* c : correct)
    if (!baseline_declaration ||
        std::popcount(c->filters) > std::popcount(baseline_declaration->filters))
      baseline_declaration = c;
  for (peer_kind peer : kPeers) {
    const int seeds = peer == peer_kind::flashinfer ? opt.flashinfer_seeds : opt.seeds;
    for (int s = 0; s < seeds; ++s) {
      int cell = static_cast<int>(peer) * static_cast<int>(correct.size() + 1);
      for (const sc_sampler* c : correct) tasks.push_back({peer, c, c, s, cell++, {}});
      if (baseline_declaration) tasks.push_back({peer, nullptr, baseline_declaration, s, cell, {}});
    }
  }
  try {
    peer_table::run_tasks(tasks, 3 * static_cast<int>(correct.size() + 1), opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peer_table: harness error: %s\n", e.what());
    return 1;
  }
  // The battery forks per check, so it runs after the worker threads have joined.
  std::map<std::string, peer_table::battery_outcome> battery_kills;
  std::map<std::string, std::pair<int, int>> battery_alarms;  // subject -> (failed, runs)
  if (with_samplecheck) {
    std::vector<std::string> names;
    for (const sc_sampler* m : mutants) names.push_back(m->name);
    for (auto& o : peer_table::run_battery_on(names, samplecheck_budget, opt.base_seed))
      battery_kills[o.subject] = o;
    names.clear();
    for (const sc_sampler* c : correct) names.push_back(c->name);
    for (int s = 0; s < samplecheck_seeds; ++s)
      for (const auto& o :
           peer_table::run_battery_on(names, samplecheck_budget, opt.base_seed + s)) {
        auto& cell = battery_alarms[o.subject];
        ++cell.second;
        if (!o.passed) {
          ++cell.first;
          std::printf("samplecheck false alarm on %s, seed index %d: %s%s\n", o.subject.c_str(), s,
                      o.failed_checks.c_str(), o.error.c_str());
        }
      }
  }
  const std::string battery_title = fmt::format("samplecheck (battery, {})", samplecheck_budget);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // Kill table: one row per mutant subject; a cell counts the failed runs.
  struct kill_cell {
    int failed = 0, runs = 0;
  };
  std::map<std::string, std::map<peer_kind, kill_cell>>
      by_mutant;  // "S07 cpu.sort_filter:S07" -> peer -> runs
  for (size_t i = 0; i < first_alarm_task; ++i) {
    const task& k = tasks[i];
    auto& cell = by_mutant[mutant_id(*k.subject) + " " + k.subject->name][k.peer];
    if (!k.result.applicable) continue;
    ++cell.runs;
    if (!k.result.passed) ++cell.failed;
  }
  std::vector<std::vector<std::string>> kills{{"mutant", "defect", "subject"}};
  for (peer_kind peer : kPeers) kills[0].push_back(peer_title(peer));
  if (with_samplecheck) kills[0].push_back(battery_title);
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
      const kill_cell& c = it->second;
      if (c.failed > 0) ++killed_total[peer];
      const std::string runs =
          opt.kill_seeds > 1 ? fmt::format(" ({}/{} runs)", c.failed, c.runs) : "";
      row.push_back((c.failed > 0 ? "killed" : "survived") + runs);
    }
    if (with_samplecheck) {
      const auto it = battery_kills.find(row[2]);
      if (it == battery_kills.end() || !it->second.error.empty()) {
        row.push_back(it == battery_kills.end() ? "not run" : "error: " + it->second.error);
      } else if (it->second.passed) {
        row.push_back("survived");
      } else {
        ++battery_killed;
        row.push_back("killed: " + it->second.failed_checks);
      }
    }
    kills.push_back(std::move(row));
  }
  std::vector<std::string> total{"all", "", "mutants killed"};
  for (peer_kind peer : kPeers)
    total.push_back(fmt::format("{}/{}", killed_total[peer], by_mutant.size()));
  if (with_samplecheck) total.push_back(fmt::format("{}/{}", battery_killed, by_mutant.size()));
  kills.push_back(std::move(total));

  // False alarms per correct sampler.
  std::map<std::string, std::map<peer_kind, std::pair<int, int>>>
      alarms;  // subject -> peer -> (failed, runs)
  std::map<std::string, std::string> first_alarm;
  for (size_t i = first_alarm_task; i < tasks.size(); ++i) {
    const task& k = tasks[i];
    if (!k.result.applicable) continue;
    const std::string who =
        k.subject ? k.subject->name : fmt::format("exact draws ({} declaration)", k.declared->name);
    auto& cell = alarms[who][k.peer];
    ++cell.second;
    if (!k.result.passed) {
      ++cell.first;
      first_alarm.emplace(who + " / " + to_string(k.peer), k.result.failure);
    }
  }
  std::vector<std::vector<std::string>> fa{{"correct sampler"}};
  for (peer_kind peer : kPeers) fa[0].push_back(peer_title(peer));
  if (with_samplecheck) fa[0].push_back(battery_title);
  std::pair<int, int> battery_fa_total{0, 0};
  std::map<peer_kind, std::pair<int, int>> fa_total;
  for (const auto& [who, cells] : alarms) {
    std::vector<std::string> row{who};
    for (peer_kind peer : kPeers) {
      const auto it = cells.find(peer);
      row.push_back(it == cells.end()
                        ? "n/a"
                        : fmt::format("{}/{} seeds", it->second.first, it->second.second));
      if (it != cells.end() && who.rfind("exact", 0) != 0) {
        fa_total[peer].first += it->second.first;
        fa_total[peer].second += it->second.second;
      }
    }
    if (with_samplecheck) {
      const auto it = battery_alarms.find(who);
      if (it == battery_alarms.end()) {
        row.push_back("n/a");
      } else {
        row.push_back(fmt::format("{}/{} seeds", it->second.first, it->second.second));
        battery_fa_total.first += it->second.first;
        battery_fa_total.second += it->second.second;
      }
    }
    fa.push_back(std::move(row));
  }
  std::vector<std::string> fa_row{"all correct samplers"};
  for (peer_kind peer : kPeers)
    fa_row.push_back(fmt::format("{}/{} runs", fa_total[peer].first, fa_total[peer].second));
  if (with_samplecheck)
    fa_row.push_back(fmt::format("{}/{} runs", battery_fa_total.first, battery_fa_total.second));
  fa.push_back(std::move(fa_row));

  std::puts(opt.markdown ? "### Mutants killed by the peers' criteria\n"
                         : "Mutants killed by the peers' criteria");
  print_table(kills, opt.markdown);
  std::puts(opt.markdown ? "### False alarms on correct samplers\n"
                         : "False alarms on correct samplers");
  print_table(fa, opt.markdown);
  if (detail) {
    std::vector<std::vector<std::string>> rows{
        {"mutant subject", "rule", "seed index", "verdict", "draws", "first failing case"}};
    for (size_t i = 0; i < first_alarm_task; ++i) {
      const task& k = tasks[i];
      rows.push_back({k.subject->name, to_string(k.peer), fmt::format("{}", k.seed_index),
                      !k.result.applicable ? "n/a" : (k.result.passed ? "survived" : "KILLED"),
                      fmt::format("{}", k.result.samples), k.result.failure});
    }
    print_table(rows, opt.markdown);
  }
  for (const auto& [what, why] : first_alarm)
    std::printf("false alarm %s: %s\n", what.c_str(), why.c_str());
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
      with_samplecheck
          ? fmt::format(
                "the battery at the {} budget, every check, one run per mutant (base seed), "
                "{} run(s) per correct sampler",
                samplecheck_budget, samplecheck_seeds)
                .c_str()
          : "not run here (--samplecheck), see `samplecheck mutants`",
      seconds, opt.threads);
  if (strict) {
    for (const auto& [who, cells] : alarms) {
      if (who.rfind("exact", 0) == 0) continue;
      for (peer_kind peer : {peer_kind::flashinfer, peer_kind::vllm}) {
        const auto it = cells.find(peer);
        if (it != cells.end() && it->second.first > 0) {
          std::fprintf(stderr,
                       "peer_table: correct sampler %s failed the %s rule in %d of %d runs\n",
                       who.c_str(), to_string(peer), it->second.first, it->second.second);
          return 3;
        }
      }
    }
  }
  return 0;
}
