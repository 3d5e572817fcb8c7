// Neumaier's compensated sum: the error stays at a few ulps of the total however many
// terms are added, so prefix masses over 150k tokens are exact to double precision
// (a plain double loop would drift by up to V * 2^-53 relative).
#pragma once

#include <cmath>

namespace samplecheck {

class compensated_sum {
 public:
  void add(double x) {
    const double t = sum_ + x;
    if (std::fabs(sum_) >= std::fabs(x)) {
      compensation_ += (sum_ - t) + x;
    } else {
      compensation_ += (x - t) + sum_;
    }
    sum_ = t;
  }
  double value() const { return sum_ + compensation_; }

 private:
  double sum_ = 0;
  double compensation_ = 0;
};

}  // namespace samplecheck
