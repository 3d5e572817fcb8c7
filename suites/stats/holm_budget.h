// One false-alarm budget per run, split across every check by the weighted Holm
// step-down (Holm 1979, section 4, weighted form).
//
// Family-wise error: P(any true null rejected) <= total_alpha, for any dependence
// between the checks' p-values, provided each p-value is valid (P(p <= u) <= u under
// its null).
//
// Procedure: with R the set of checks not yet rejected and W_R the sum of their
// weights, take the check in R with the smallest p_i / w_i; reject it if
// p_i <= w_i / W_R * total_alpha, and repeat; at the first failure stop and reject
// nothing more. The first step compares every check with its Bonferroni share
// w_i / W * total_alpha (planning_alpha), so sample sizes planned against that share
// are safe: later steps only raise the level.
//
// A check that could not run (the subject lacks the feature) is skip()ped before
// decide(): it leaves the family, which stays valid because the skip does not look at
// data; it is reported with rejected = false and skipped = true.
#pragma once

#include <string>
#include <vector>

namespace samplecheck::stats {

class holm_budget {
 public:
  explicit holm_budget(double total_alpha = 1e-6);

  // Declares a check; weight > 0 and finite; names must be unique. Returns its id.
  int declare(std::string name, double weight = 1.0);
  // weight_i / sum(weights) * total_alpha over every declared check.
  double planning_alpha(int id) const;
  // p in [0, 1]; each id is recorded (or skipped) exactly once.
  void record(int id, double p_value);
  void skip(int id, std::string reason);

  struct decision {
    std::string name;
    double p_value;      // NaN when skipped
    double alpha_share;  // the level Holm compared it with (for checks after the stop:
                         // the level they would have met at the stopping step)
    bool rejected;
    bool skipped = false;
    std::string skip_reason;
  };
  // In declaration order. Throws std::logic_error naming any check neither recorded
  // nor skipped.
  std::vector<decision> decide() const;

  double total_alpha() const { return total_alpha_; }
  int size() const { return static_cast<int>(checks_.size()); }

 private:
  struct check {
    std::string name;
    double weight;
    double p_value;
    bool recorded = false;
    bool skipped = false;
    std::string skip_reason;
  };
  const check& at(int id, const char* where) const;

  double total_alpha_;
  std::vector<check> checks_;
};

}  // namespace samplecheck::stats
