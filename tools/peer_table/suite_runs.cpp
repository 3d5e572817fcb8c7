#include "tools/peer_table/suite_runs.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "suites/peers/peer_runner.h"

namespace samplecheck::peer_table {

using namespace samplecheck::peers;

namespace {

// FlashInfer's grid at V = 111 has 24 cases of 5M draws each, too many to run
// whole for every subject and seed on two cores. A run takes `per_family` cases of
// each filter family the subject declares (no filter, top-p, top-k), starting at
// seed_index * per_family within the family, so consecutive seeds move on through
// the grid. vLLM's and PyTorch's grids are small and run whole.
std::vector<const peer_case*> select_cases(const peer_plan& plan, const sc_sampler& subject,
                                           int seed_index, int per_family) {
  std::map<uint32_t, std::vector<const peer_case*>> families;
  for (const peer_case& c : plan.cases)
    if ((c.filters & subject.filters) == c.filters) families[c.filters].push_back(&c);
  std::vector<const peer_case*> chosen;
  for (const auto& [filters, cases] : families) {
    if (plan.peer != peer_kind::flashinfer || static_cast<size_t>(per_family) >= cases.size()) {
      chosen.insert(chosen.end(), cases.begin(), cases.end());
      continue;
    }
    for (int i = 0; i < per_family; ++i)
      chosen.push_back(cases[(static_cast<size_t>(seed_index) * per_family + i) % cases.size()]);
  }
  return chosen;
}

peer_plan plan_for(peer_kind peer, uint64_t seed, const options& opt) {
  switch (peer) {
    case peer_kind::flashinfer:
      return flashinfer_plan(seed, opt.flashinfer_vocab);
    case peer_kind::vllm:
      return vllm_plan(seed);
    case peer_kind::pytorch:
      return pytorch_plan(seed);
  }
  throw std::logic_error("plan_for");
}

}  // namespace

// One run of a peer's suite on one subject at one seed: every selected case must
// pass. subject == nullptr: exact draws from the reference (the rule's own baseline).
suite_outcome run_suite(peer_kind peer, const sc_sampler* subject, const sc_sampler& declared,
                        int seed_index, const options& opt) {
  const uint64_t seed = opt.base_seed + static_cast<uint64_t>(seed_index);
  const peer_plan plan = plan_for(peer, seed, opt);
  suite_outcome out;
  for (const peer_case* c : select_cases(plan, declared, seed_index, opt.flashinfer_cases)) {
    const prepared_case prepared = prepare_case(*c, declared);
    if (!rule_applies(peer, prepared, plan.samples)) continue;
    sample_tally tally;
    if (subject) {
      draw_result drawn = draw_from_subject(*subject, prepared, plan.samples, seed, plan.layout);
      if (drawn.unsupported) continue;
      if (!drawn.error.empty()) {
        out.applicable = true;
        out.passed = false;
        out.failure = fmt::format("{}: {}", c->name, drawn.error);
        return out;
      }
      tally = std::move(drawn.tally);
    } else {
      tally = draw_exact(prepared.reference.prob, plan.samples, seed);
    }
    out.applicable = true;
    ++out.cases_run;
    out.samples += tally.total();
    const peer_verdict v = judge(peer, tally, prepared);
    if (!v.passed) {
      out.passed = false;
      out.failure = fmt::format("{}: {}", c->name, v.reason);
      return out;
    }
  }
  return out;
}

// False-alarm tasks come in seed order; once a (rule, subject) cell has spent
// opt.cell_seconds its later seeds are skipped, so a slow subject (dual pivot in
// vLLM's 50,000-row batches) reports fewer seeds instead of stalling the table.
void run_tasks(std::vector<task>& tasks, int cells, const options& opt) {
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::string first_error;
  std::vector<double> cell_seconds(static_cast<size_t>(cells), 0.0);
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, opt.threads); ++t)
    pool.emplace_back([&] {
      for (size_t i = next++; i < tasks.size(); i = next++) {
        task& k = tasks[i];
        if (k.cell >= 0) {
          std::lock_guard lock(error_mutex);
          if (cell_seconds[static_cast<size_t>(k.cell)] >= opt.cell_seconds) continue;
        }
        const auto started = std::chrono::steady_clock::now();
        try {
          k.result = run_suite(k.peer, k.subject, *k.declared, k.seed_index, opt);
          if (k.cell >= 0) {
            std::lock_guard lock(error_mutex);
            cell_seconds[static_cast<size_t>(k.cell)] +=
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          }
        } catch (const std::exception& e) {  // a harness error, never a verdict
          std::lock_guard lock(error_mutex);
          if (first_error.empty())
            first_error = fmt::format("{} on {} seed {}: {}", to_string(k.peer), k.declared->name,
                                      k.seed_index, e.what());
        }
      }
    });
  for (auto& th : pool) th.join();
  if (!first_error.empty()) throw std::runtime_error(first_error);
}

}  // namespace samplecheck::peer_table
