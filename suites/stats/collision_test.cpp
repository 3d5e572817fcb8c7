#include "suites/stats/collision_test.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::stats {

collision_result collision_test(std::span<const int32_t> a, std::span<const int32_t> b,
                                std::span<const double> probs) {
  if (a.size() != b.size() || a.empty())
    throw std::invalid_argument("collision_test: streams have lengths " + std::to_string(a.size()) +
                                " and " + std::to_string(b.size()) + ", expected equal and > 0");
  const std::vector<uint64_t> no_counts(probs.size(), 0);
  const std::vector<double> q = detail::checked_probabilities("collision_test", no_counts, probs);
  const int64_t vocab = static_cast<int64_t>(q.size());
  auto check_token = [&](const char* stream, size_t j, int32_t token) {
    if (token < 0 || token >= vocab)
      throw std::invalid_argument("collision_test: stream " + std::string(stream) + "[" +
                                  std::to_string(j) + "] = " + std::to_string(token) +
                                  " is outside [0, " + std::to_string(vocab) + ")");
  };
  collision_result r{};
  r.pairs = a.size();
  for (size_t j = 0; j < a.size(); ++j) {
    check_token("a", j, a[j]);
    check_token("b", j, b[j]);
    if (a[j] == b[j]) ++r.collisions;
  }
  for (double qi : q) r.collision_prob += qi * qi;
  r.collision_prob = std::min(r.collision_prob, 1.0);
  r.expected = static_cast<double>(r.pairs) * r.collision_prob;
  r.p_value = binomial_upper_tail(r.collisions, r.pairs, r.collision_prob);
  return r;
}

}  // namespace samplecheck::stats
