#include "kernels/cpu/pivot_index.h"

#include <algorithm>

#include "reference/numeric.h"

namespace samplecheck::cpu {
namespace {

// Finite non-negative floats have bit patterns 0 .. 0x7f7fffff; their top 16 bits
// (exponent and 7 mantissa bits) are the bucket.
constexpr uint32_t kBuckets = 0x7f80;

uint32_t bucket_of(float x) { return float_to_bits(x) >> 16; }

}  // namespace

void pivot_index::build(const std::vector<float>& p) {
  p_ = &p;
  start_.assign(kBuckets + 1, 0);
  for (const float v : p)
    if (v > 0.0f) ++start_[bucket_of(v) + 1];
  for (uint32_t b = 0; b < kBuckets; ++b) start_[b + 1] += start_[b];
  by_bucket_.resize(static_cast<size_t>(start_[kBuckets]));
  std::vector<int32_t> next(start_.begin(), start_.end() - 1);
  for (size_t t = 0; t < p.size(); ++t)
    if (p[t] > 0.0f) by_bucket_[next[bucket_of(p[t])]++] = static_cast<int32_t>(t);
  mass_above_.assign(kBuckets, 0.0);
  double above = 0.0;
  for (uint32_t b = kBuckets; b-- > 0;) {
    mass_above_[b] = above;
    double bucket_mass = 0.0;
    for (int32_t i = start_[b]; i < start_[b + 1]; ++i) bucket_mass += p[by_bucket_[i]];
    above += bucket_mass;
  }
}

above_pivot pivot_index::above(float x) const {
  const uint32_t b = bucket_of(x);
  above_pivot result{static_cast<int64_t>(by_bucket_.size()) - start_[b + 1], mass_above_[b]};
  for (int32_t i = start_[b]; i < start_[b + 1]; ++i) {
    const float v = (*p_)[by_bucket_[i]];
    if (v > x) ++result.count, result.mass += v;
  }
  return result;
}

void pivot_index::tokens_above(float x, std::vector<int32_t>& out) const {
  const uint32_t b = bucket_of(x);
  const std::vector<float>& p = *p_;
  if (by_bucket_.size() - static_cast<size_t>(start_[b]) > p.size() / 8) {
    // Many tokens: one pass in token order beats gathering and sorting them.
    out.clear();
    for (size_t t = 0; t < p.size(); ++t)
      if (p[t] > x) out.push_back(static_cast<int32_t>(t));
    return;
  }
  out.assign(by_bucket_.begin() + start_[b + 1], by_bucket_.end());
  for (int32_t i = start_[b]; i < start_[b + 1]; ++i)
    if (p[by_bucket_[i]] > x) out.push_back(by_bucket_[i]);
  std::sort(out.begin(), out.end());
}

}  // namespace samplecheck::cpu
