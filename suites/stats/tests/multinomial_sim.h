// A small multinomial simulator for the statistics tests: inverse CDF by binary search
// on the cumulative sums, driven by std::mt19937_64 with a fixed seed, so every
// calibration figure is reproducible and independent of the samplers under test.
#pragma once

#include <algorithm>
#include <boost/math/distributions/binomial.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace samplecheck::stats::testing {

class multinomial_sim {
 public:
  multinomial_sim(std::span<const double> probs, uint64_t seed) : rng_(seed) {
    double sum = 0.0;
    for (double p : probs) cumulative_.push_back(sum += p);
    for (double& c : cumulative_) c /= sum;
  }
  int32_t draw() {
    const double u = unit_(rng_);
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    return static_cast<int32_t>(std::min<size_t>(it - cumulative_.begin(), cumulative_.size() - 1));
  }
  std::vector<uint64_t> counts(uint64_t n) {
    std::vector<uint64_t> c(cumulative_.size(), 0);
    for (uint64_t j = 0; j < n; ++j) ++c[static_cast<size_t>(draw())];
    return c;
  }
  std::vector<int32_t> stream(uint64_t n) {
    std::vector<int32_t> s(n);
    for (auto& t : s) t = draw();
    return s;
  }
  std::mt19937_64& rng() { return rng_; }
  // How many of `replicates` samples of n draws the test `rejects` (counts -> bool) rejects.
  template <class Rejects>
  uint64_t rejections(uint64_t replicates, uint64_t n, Rejects rejects) {
    uint64_t rejected = 0;
    for (uint64_t r = 0; r < replicates; ++r) rejected += rejects(counts(n)) ? 1 : 0;
    return rejected;
  }

 private:
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  std::vector<double> cumulative_;
};

// Zipf(s) over v tokens: q_i proportional to 1 / (i + 1)^s.
inline std::vector<double> zipf(size_t v, double s) {
  std::vector<double> q(v);
  double sum = 0.0;
  for (size_t i = 0; i < v; ++i) sum += q[i] = std::pow(static_cast<double>(i + 1), -s);
  for (double& x : q) x /= sum;
  return q;
}

// The central band holding `replicates` Bernoulli(rate) outcomes with probability
// 1 - band_alpha: a calibration test fails only if the measured count leaves it.
struct count_band {
  uint64_t low, high;
};
inline count_band binomial_band(uint64_t replicates, double rate, double band_alpha = 1e-3) {
  const boost::math::binomial_distribution<double> d(static_cast<double>(replicates), rate);
  return count_band{
      static_cast<uint64_t>(boost::math::quantile(d, band_alpha / 2)),
      static_cast<uint64_t>(boost::math::quantile(boost::math::complement(d, band_alpha / 2)))};
}

}  // namespace samplecheck::stats::testing
