// The alternatives judging_power_bench plants on a zipf(1.1) row of kV tokens: each
// a reference row q and a planted row p at a target total variation distance.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace samplecheck::power_bench {

constexpr size_t kV = 151936;  // tokens of a row: Qwen's vocabulary

struct alternative {
  std::string name;
  double target_tvd = 0;
  std::string parameter;     // what was planted
  std::vector<double> q, p;  // reference and planted, both over kV tokens
};

double tvd(const std::vector<double>& a, const std::vector<double>& b);

// Every alternative at target TVD tau.
std::vector<alternative> planted(double tau);

}  // namespace samplecheck::power_bench
