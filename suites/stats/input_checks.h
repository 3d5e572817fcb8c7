// Input checks shared by every statistic: bad input throws std::invalid_argument
// naming the function, the field and the index, so it never crashes and never passes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace samplecheck::stats::detail {

// Throws unless counts and probs have the same non-zero length, every probability is
// finite and >= 0, and they sum to 1 within 1e-6. Returns the probabilities divided
// by their sum (removes the last rounding so that expected counts add up to n exactly).
std::vector<double> checked_probabilities(const char* where, std::span<const uint64_t> counts,
                                          std::span<const double> probs);

// probs divided by their sum, the same arithmetic checked_probabilities does (no checks).
std::vector<double> normalised(std::span<const double> probs);

// Sum of counts; throws if it is zero (no samples cannot pass a check).
uint64_t checked_total(const char* where, std::span<const uint64_t> counts);

// Throws unless 0 < alpha < 1 (an error level, a power target, a confidence).
void check_level(const char* where, const char* field, double value);

}  // namespace samplecheck::stats::detail
