// `samplecheck replay FILE.json`: a reproduction record (runner.h's repro_record) back
// into the run that wrote it, and the comparison of the new verdict with the old.
//
// A sampler check replays in full: its plan depends only on the descriptor, the budget,
// the seed and V, so the same draws give the same p-value and counts, and the check is
// decided at the Holm level its original run compared it with. A matmul check replays
// on the shape (and batch sizes) of its first divergence: the smallest failing case.
// A collective check replays in full (its plan depends on the seed and the budget alone).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "suites/battery/runner.h"

namespace samplecheck::battery {

struct replay_plan {
  std::string subject;
  std::string plugin;   // empty: in-tree
  std::string exec;     // the --exec command the record names, or empty
  std::string connect;  // the --connect socket the record names, or empty
  run_options options;
};

// Throws std::invalid_argument naming the field of a record that cannot be replayed.
replay_plan plan_replay(const nlohmann::json& record);

struct replay_comparison {
  bool reproduced = false;  // same verdict and, where recorded, the same p-value and samples
  std::string text;         // one line per compared quantity
};
replay_comparison compare_replay(const nlohmann::json& record, const check_report& now);

}  // namespace samplecheck::battery
