// Random123's Philox4x32-10 known answers (fixtures/philox4x32_10_kat.txt), read by
// one harness for every Philox a test holds to them: the reference's and a vendor's.
#pragma once

#include <array>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace samplecheck::testing {

struct philox_kat {
  std::array<uint32_t, 4> counter;
  std::array<uint32_t, 2> key;
  std::array<uint32_t, 4> expected;
};

// Lines "philox4x32 10 ctr[4] key[2] expected[4]" in hex; '#' starts a comment, other
// generators and round counts are skipped. Throws naming the line that does not parse.
inline std::vector<philox_kat> read_philox_kats(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<philox_kat> rows;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    int rounds = 0;
    fields >> name >> std::dec >> rounds >> std::hex;
    if (name != "philox4x32" || rounds != 10) continue;
    philox_kat row{};
    for (auto& w : row.counter) fields >> w;
    for (auto& w : row.key) fields >> w;
    for (auto& w : row.expected) fields >> w;
    if (fields.fail())
      throw std::runtime_error(path + ":" + std::to_string(number) + ": not a known-answer row");
    rows.push_back(row);
  }
  return rows;
}

}  // namespace samplecheck::testing
