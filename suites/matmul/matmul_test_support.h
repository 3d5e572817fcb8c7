// Shared by the matmul test executables: subjects by name, the fixture, and the
// column slice the CPU runs use.
#pragma once

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"
#include "suites/matmul/matmul_fixture.h"
#include "suites/matmul/matmul_testbed.h"
#include "suites/testing/fixtures.h"

namespace samplecheck::matmul_suite {

inline const sc_matmul& find_subject(const std::vector<const sc_matmul*>& subjects,
                                     const std::string& name) {
  for (const sc_matmul* s : subjects)
    if (name == s->name) return *s;
  throw std::runtime_error("no matmul subject named " + name);
}

inline const matmul_fixture& shapes_fixture() {
  static const matmul_fixture fixture =
      read_matmul_fixture(testing::fixture_path("matmul/layer_shapes.txt"));
  return fixture;
}

// REQUIREs a pass and prints the one-line summary either way.
inline void require_pass(const check_result& r) {
  INFO(r.summary);
  CHECK(r.trials > 0);
  REQUIRE(r.passed);
}

inline void require_fail(const check_result& r) {
  INFO(r.summary);
  REQUIRE_FALSE(r.passed);
  REQUIRE(r.failures > 0);
}

}  // namespace samplecheck::matmul_suite
