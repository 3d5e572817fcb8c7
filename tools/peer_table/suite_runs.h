// The measuring half of peer_table: each rule's suite run on a subject at a seed
// (the peer's cases, drawn the way its test batches them, judged by its rule),
// and a thread pool over those runs with a time cap per false-alarm cell.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"
#include "suites/peers/peer_cases.h"

namespace samplecheck::peer_table {

struct options {
  int seeds = 100;             // false-alarm seeds for vLLM and PyTorch
  int flashinfer_seeds = 100;  // false-alarm seeds for FlashInfer (5M draws per case)
  int64_t flashinfer_vocab = 111;
  int flashinfer_cases =
      1;                    // FlashInfer cases per filter family per run, rotating through its grid
  int kill_seeds = 1;       // runs per mutant and rule; killed = failed in any
  double cell_seconds = 5;  // time cap of one (rule, correct sampler) false-alarm cell
  uint64_t base_seed = 20261130;
  int threads = 2;
  bool markdown = false;
  std::string subjects = ".*";
};

// One run of a peer's suite on one subject at one seed: every selected case must pass.
struct suite_outcome {
  bool applicable = false;  // at least one case ran
  bool passed = true;
  int cases_run = 0;
  int64_t samples = 0;
  std::string failure;  // first failing case and why
};

// subject == nullptr: exact draws from the reference (the rule's own baseline).
// `declared` supplies the filters, order and tie policy that define the target.
suite_outcome run_suite(peers::peer_kind peer, const sc_sampler* subject,
                        const sc_sampler& declared, int seed_index, const options& opt);

struct task {
  peers::peer_kind peer;
  const sc_sampler* subject;  // nullptr: exact baseline
  const sc_sampler* declared;
  int seed_index;
  int cell = -1;  // false-alarm tasks: (rule, subject) cell whose time cap applies; -1 for kills
  suite_outcome result;
};

// Runs every task on opt.threads threads; `cells` is the number of distinct cell ids.
// Throws std::runtime_error on a harness error (never a verdict).
void run_tasks(std::vector<task>& tasks, int cells, const options& opt);

}  // namespace samplecheck::peer_table
