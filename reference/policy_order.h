// The policy order of a row: value descending, then token id ascending. Sorting is the
// reference's only super-linear step, so it sorts only the tokens that can matter.
#pragma once

#include <cstdint>
#include <vector>

namespace samplecheck {

struct policy_order {
  std::vector<uint32_t> ids;        // ids[r]: the token at position r
  std::vector<uint32_t> value_key;  // key of position r's value; equal keys are exact ties
};

// The value a key was made from (the key is a bijection on float bit patterns).
float key_value(uint32_t key);

// The tokens whose value is >= cut, in policy order: a prefix of the whole row's order
// (ties at the cut included). -0 must already be folded into +0.
policy_order sort_policy_order(const std::vector<float>& values, float cut);

}  // namespace samplecheck
