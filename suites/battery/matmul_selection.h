// What the matmul checks run on: the shapes (the fixture's, or --shape NxK) and the
// batch sizes (--m, or the default for the subject's memory space).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "suites/matmul/matmul_fixture.h"

namespace samplecheck::battery {

struct matmul_selection {
  std::vector<matmul_suite::matmul_shape> shapes;  // empty: every shape of the fixture file
  std::vector<int64_t> batch_sizes;                // empty: default_batch_sizes()
  std::string fixture_path;                        // fixtures/matmul/layer_shapes.txt
  int64_t columns = 0;  // output columns computed; 0: all on a device, 16 on the host
};

// The fixture file beside the sources (SAMPLECHECK_FIXTURES_DIR) unless overridden.
std::string default_matmul_fixture_path();

// The selection as a repro records it, and back.
nlohmann::json selection_json(const matmul_selection& s);
matmul_selection selection_from_json(const nlohmann::json& j);

}  // namespace samplecheck::battery
