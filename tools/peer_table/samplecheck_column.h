// samplecheck's own column of the peer table: the battery (suites/battery) on the
// same mutants and correct samplers, through its public runner API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace samplecheck::peer_table {

struct battery_outcome {
  std::string subject;
  bool passed = true;
  std::string failed_checks;  // "support (1,024 draws), ties (...)"; "" when it passed
  uint64_t samples = 0;       // draws of the whole run
  double seconds = 0;
  std::string error;  // the battery could not run the subject; "" otherwise
};

// One battery run per subject at `budget` ("quick" or "standard") and `seed`.
// Forks per check: call it with no other thread running.
std::vector<battery_outcome> run_battery_on(const std::vector<std::string>& subjects,
                                            const std::string& budget, uint64_t seed);

}  // namespace samplecheck::peer_table
