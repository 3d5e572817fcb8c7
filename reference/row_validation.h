// Validation of a row and its parameters, and the row's pre-filter distribution.
// Invalid input is a typed error naming the field and the first offending index;
// nothing invalid ever reaches the filters.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <variant>
#include <vector>

#include "reference/filtered_distribution.h"

namespace samplecheck {

// The row decoded and softmaxed, with the rounding allowance of a float32 kernel.
// Source probability, error and float interval are functions of a token's value, so
// the filters can evaluate them at a value (the k-th largest) without its token.
struct source_row {
  std::vector<float> values;  // decoded input (probs or logits), -0 folded into +0
  std::vector<double>
      source;              // pre-filter distribution, sums to 1; source[i] == source_of(values[i])
  float value_max = 0;     // largest value (z_max for logits)
  double sum = 1;          // probs: the row's sum; logits: sum of exp((z - z_max) / T)
  double temperature = 1;  // logits only
  bool logits = false;
  bool greedy = false;  // logits with T == 0: source is uniform on the argmax set
  // e(value) = error_base + error_slope * (value_max - value): affine in the distance
  // from the max logit (probs: slope 0).
  double error_base = 0, error_slope = 0;
  double common_error = 0;  // |c - 1| of the common factor, before the float sum's gamma_n

  double source_of(float value) const {
    if (!logits) return value / sum;
    return std::exp(-((static_cast<double>(value_max) - value) / temperature)) / sum;
  }
  double relative_error(float value) const {
    return error_base + error_slope * (static_cast<double>(value_max) - value);
  }
  // The interval of a float32 kernel's value (0 for a zero-probability token, whose
  // error, at z = -Inf, is infinite).
  double high_of(float value) const {
    const double p = source_of(value);
    return p > 0 ? p * (1 + relative_error(value)) : 0.0;
  }
  double low_of(float value) const {
    const double p = source_of(value);
    return p > 0 ? std::max(0.0, p * (1 - relative_error(value))) : 0.0;
  }
  // The same, for token i, without recomputing its exp.
  double high(size_t i) const {
    return source[i] > 0 ? source[i] * (1 + relative_error(values[i])) : 0.0;
  }
  double low(size_t i) const {
    return source[i] > 0 ? std::max(0.0, source[i] * (1 - relative_error(values[i]))) : 0.0;
  }
};

std::optional<row_error> validate_params(const filter_params& params);

std::variant<source_row, row_error> decode_source(const row_input& row, const filter_params& params,
                                                  const reference_options& options);

}  // namespace samplecheck
