// The shared body of both test mains: Catch2's session plus the --fixtures option.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "suites/testing/fixtures.h"

namespace samplecheck::testing {

inline std::string& fixtures_dir_storage() {
  static std::string dir = SAMPLECHECK_FIXTURES_DIR;
  return dir;
}

inline int run_catch_session(int argc, char* argv[]) {
  Catch::Session session;
  using Catch::clara::Opt;
  session.cli(session.cli() |
              Opt(fixtures_dir_storage(), "dir")["--fixtures"]("folder holding the fixture files"));
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  return session.run();
}

}  // namespace samplecheck::testing

const std::string& samplecheck::testing::fixtures_dir() { return fixtures_dir_storage(); }
