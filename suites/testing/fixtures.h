// Where the fixture files are: ctest passes `--fixtures DIR` to every test
// executable (Random123's lesson: paths come from the harness, not the environment).
#pragma once

#include <string>

namespace samplecheck::testing {

const std::string& fixtures_dir();
inline std::string fixture_path(const std::string& name) { return fixtures_dir() + "/" + name; }

}  // namespace samplecheck::testing
