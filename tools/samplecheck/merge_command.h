// samplecheck merge A.json B.json ...: the report.json files of `qualify --shard i/n` joined
// into one run per subject, with Holm recomputed over every shard's p-values as the
// unsharded run computes it (docs/sharding.md). A shard with no file is not judged: its
// rows are ERROR rows naming it and the run is INCOMPLETE, never PASS. Files that disagree
// on what was run (subject, seed, budget, alpha, shard count, plan, samplecheck version),
// two files of one shard, or a malformed file are a usage error naming the file and field.
#pragma once

#include <string>
#include <vector>

#include "suites/battery/runner.h"

namespace CLI {
class App;
}

namespace samplecheck::cli {

struct merge_request {
  std::vector<std::string> files;
  std::string report_dir;
  bool verbose = false;
};
void add_merge_options(CLI::App* app, merge_request& r);

// One merged report per subject, in the first file's order; throws usage_error.
std::vector<battery::battery_report> merge_shards(const std::vector<std::string>& files);

}  // namespace samplecheck::cli
