#include "reference/policy_order.h"

#include "reference/numeric.h"

namespace samplecheck {
namespace {

// Order-preserving 32-bit key, ascending for descending value.
uint32_t descending_key(float value) {
  const uint32_t bits = float_to_bits(value);
  return ~((bits & 0x80000000u) ? ~bits : (bits | 0x80000000u));
}

}  // namespace

float key_value(uint32_t key) {
  const uint32_t ascending = ~key;
  return bits_to_float((ascending & 0x80000000u) ? (ascending & 0x7fffffffu) : ~ascending);
}

// LSD radix sort on the 32-bit key, three 11-bit digits. Each pass is stable, so ids
// stay ascending within a tie: exactly the policy order, O(V) per pass (std::sort of
// 64-bit keys took three times as long at V = 151,936).
policy_order sort_policy_order(const std::vector<float>& values, float cut) {
  policy_order o;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] >= cut)
      o.ids.push_back(static_cast<uint32_t>(i)), o.value_key.push_back(descending_key(values[i]));
  }
  const size_t n = o.ids.size();
  std::vector<uint32_t> ids_tmp(n), key_tmp(n);
  for (int shift = 0; shift < 32 && n > 1; shift += 11) {
    std::vector<uint32_t> start(2049, 0);
    for (uint32_t key : o.value_key) ++start[((key >> shift) & 2047u) + 1];
    if (start[((o.value_key[0] >> shift) & 2047u) + 1] == n) continue;  // one bucket: a no-op pass
    for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
    for (size_t r = 0; r < n; ++r) {
      const uint32_t slot = start[(o.value_key[r] >> shift) & 2047u]++;
      ids_tmp[slot] = o.ids[r], key_tmp[slot] = o.value_key[r];
    }
    o.ids.swap(ids_tmp), o.value_key.swap(key_tmp);
  }
  return o;
}

}  // namespace samplecheck
