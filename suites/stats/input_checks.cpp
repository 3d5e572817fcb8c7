#include "suites/stats/input_checks.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace samplecheck::stats::detail {

namespace {
[[noreturn]] void fail(const char* where, const std::string& what) {
  throw std::invalid_argument(std::string(where) + ": " + what);
}
}  // namespace

std::vector<double> checked_probabilities(const char* where, std::span<const uint64_t> counts,
                                          std::span<const double> probs) {
  if (probs.empty()) fail(where, "probs is empty");
  if (counts.size() != probs.size())
    fail(where, "counts has " + std::to_string(counts.size()) + " entries but probs has " +
                    std::to_string(probs.size()));
  double sum = 0.0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!std::isfinite(probs[i]) || probs[i] < 0.0)
      fail(where, "probs[" + std::to_string(i) + "] = " + std::to_string(probs[i]) +
                      " is not a probability");
    sum += probs[i];
  }
  // Reference rows are normalised in double; 1e-6 admits float-stored rows of 152k
  // tokens and still rejects a row that lost a token's worth of mass.
  if (!(std::fabs(sum - 1.0) <= 1e-6))
    fail(where, "probs sum to " + std::to_string(sum) + ", expected 1 (tolerance 1e-6)");
  return normalised(probs);
}

std::vector<double> normalised(std::span<const double> probs) {
  double sum = 0.0;
  for (const double p : probs) sum += p;
  std::vector<double> q(probs.begin(), probs.end());
  for (double& x : q) x /= sum;
  return q;
}

uint64_t checked_total(const char* where, std::span<const uint64_t> counts) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) fail(where, "counts are all zero (no samples)");
  return total;
}

void check_level(const char* where, const char* field, double value) {
  if (!(value > 0.0 && value < 1.0))
    fail(where, std::string(field) + " = " + std::to_string(value) + " is not in (0, 1)");
}

}  // namespace samplecheck::stats::detail
