// The dual-pivot accept rules ask, for a pivot x, how many tokens lie above x and how
// much mass they carry. A pass over the row answers in O(V); this index answers from
// one bucket. Tokens are bucketed by the top 16 bits of their float, which for
// non-negative floats order like the values (a counting sort, built in O(V)).
//
// The mass is defined by this layout and by nothing else (bucket masses in token
// order, accumulated from the top bucket down, plus the pivot's own bucket in token
// order), so a row's answers never depend on how the batch around it was shaped.
#pragma once

#include <cstdint>
#include <vector>

namespace samplecheck::cpu {

struct above_pivot {
  int64_t count = 0;
  double mass = 0.0;
};

class pivot_index {
 public:
  // Indexes the tokens of `p` with p > 0; `p` must outlive the index's use.
  void build(const std::vector<float>& p);
  // Count and mass of the tokens with p > x, for finite x >= 0.
  above_pivot above(float x) const;
  // The tokens with p > x, in token order.
  void tokens_above(float x, std::vector<int32_t>& out) const;

 private:
  const std::vector<float>* p_ = nullptr;
  std::vector<int32_t> start_;      // bucket b holds by_bucket_[start_[b], start_[b + 1])
  std::vector<int32_t> by_bucket_;  // token ids, grouped by bucket, token order inside
  std::vector<double> mass_above_;  // mass of the buckets above b
};

}  // namespace samplecheck::cpu
