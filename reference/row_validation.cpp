#include "reference/row_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/compensated_sum.h"

namespace samplecheck {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;  // float32 u

row_error scalar_error(const char* field, std::string message) {
  return row_error{field, -1, std::move(message)};
}

const char* kind_name(input_kind kind) { return kind == input_kind::probs ? "probs" : "logits"; }

std::optional<row_error> check_probs(const std::vector<float>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const float x = values[i];
    const char* what = std::isnan(x)   ? "is NaN"
                       : std::isinf(x) ? "is infinite"
                       : x < 0         ? "is negative"
                                       : nullptr;
    if (what) {
      return row_error{"probs", static_cast<int64_t>(i),
                       fmt::format("probs[{}] = {} {}", i, x, what)};
    }
  }
  return std::nullopt;
}

std::optional<row_error> check_logits(const std::vector<float>& values) {
  bool any_finite = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const float x = values[i];
    if (std::isnan(x) || x == std::numeric_limits<float>::infinity()) {
      return row_error{
          "logits", static_cast<int64_t>(i),
          fmt::format("logits[{}] = {} {}", i, x, std::isnan(x) ? "is NaN" : "is +Inf")};
    }
    any_finite = any_finite || std::isfinite(x);
  }
  if (!any_finite) {
    return row_error{"logits", -1,
                     "logits: every one of the row's logits is -Inf (all tokens masked)"};
  }
  return std::nullopt;
}

std::variant<source_row, row_error> probs_source(source_row row, const reference_options& options) {
  compensated_sum total;
  for (float x : row.values) total.add(x);
  const double sum = total.value();
  if (!(sum > 0)) return scalar_error("probs", "probs: every probability of the row is zero");
  if (options.normalisation == probs_normalisation::strict &&
      std::fabs(sum - 1) > options.sum_tolerance) {
    return scalar_error("probs", fmt::format("probs sum to {:.9g}, more than {} away from 1", sum,
                                             options.sum_tolerance));
  }
  row.sum = sum;
  row.value_max = *std::max_element(row.values.begin(), row.values.end());
  row.source.resize(row.values.size());
  for (size_t i = 0; i < row.values.size(); ++i) row.source[i] = row.source_of(row.values[i]);
  row.error_base = kUnitRoundoff;
  // A strict row may reach a kernel undivided, which then sees mass S, not 1. A row
  // declared as weights (renormalise) must be divided by every kernel.
  row.common_error =
      options.normalisation == probs_normalisation::strict ? std::fabs(sum - 1) : 0.0;
  return row;
}

std::variant<source_row, row_error> logits_source(source_row row, double temperature) {
  const size_t n = row.values.size();
  row.logits = true;
  row.value_max = *std::max_element(row.values.begin(), row.values.end());
  row.temperature = temperature;
  row.source.assign(n, 0.0);
  if (temperature == 0) {
    row.greedy = true;
    const auto ties = std::count(row.values.begin(), row.values.end(), row.value_max);
    for (size_t i = 0; i < n; ++i) {
      if (row.values[i] == row.value_max) row.source[i] = 1.0 / static_cast<double>(ties);
    }
    return row;
  }
  row.error_base =
      kUnitRoundoff * (6 + 4 * std::fabs(static_cast<double>(row.value_max) / temperature));
  row.error_slope = kUnitRoundoff * 6 / temperature;
  // Weights first with sum = 1, then divided: source_of(value) reproduces source[i]
  // bit for bit (z_max - z_i is exact in double for floats of like magnitude).
  compensated_sum total;
  for (size_t i = 0; i < n; ++i) {
    row.source[i] = row.source_of(row.values[i]);  // exp(-inf) == 0 for masked tokens
    total.add(row.source[i]);
  }
  row.sum = total.value();  // >= 1: the max token contributes exp(0)
  for (double& s : row.source) s /= row.sum;
  return row;
}

}  // namespace

std::optional<row_error> validate_params(const filter_params& params) {
  if (params.top_k < 0)
    return scalar_error("top_k", fmt::format("top_k = {} is negative", params.top_k));
  if (!(params.top_p > 0 && params.top_p <= 1)) {
    return scalar_error("top_p", fmt::format("top_p = {} is outside (0, 1]", params.top_p));
  }
  if (!(params.min_p >= 0 && params.min_p <= 1)) {
    return scalar_error("min_p", fmt::format("min_p = {} is outside [0, 1]", params.min_p));
  }
  if (!(params.temperature >= 0) || std::isinf(params.temperature)) {
    return scalar_error("temperature", fmt::format("temperature = {} is not a finite number >= 0",
                                                   params.temperature));
  }
  return std::nullopt;
}

std::variant<source_row, row_error> decode_source(const row_input& input,
                                                  const filter_params& params,
                                                  const reference_options& options) {
  if (input.vocab_size <= 0 || input.data == nullptr) {
    return scalar_error("vocab_size",
                        fmt::format("vocab_size = {} with {} data: the row is empty",
                                    input.vocab_size, input.data ? "non-null" : "null"));
  }
  if (input.type != storage_type::f32 && input.type != storage_type::bf16 &&
      input.type != storage_type::f16) {
    return scalar_error(kind_name(input.kind),
                        fmt::format("{}: unknown storage type {}", kind_name(input.kind),
                                    static_cast<int32_t>(input.type)));
  }
  if (auto bad = validate_params(params)) return *bad;
  source_row row;
  row.values.resize(static_cast<size_t>(input.vocab_size));
  for (int64_t i = 0; i < input.vocab_size; ++i) {
    const float x = load_element(input.data, input.type, i);
    row.values[static_cast<size_t>(i)] = x == 0 ? 0.0f : x;
  }
  if (input.kind == input_kind::probs) {
    if (auto bad = check_probs(row.values)) return *bad;
    return probs_source(std::move(row), options);
  }
  if (auto bad = check_logits(row.values)) return *bad;
  return logits_source(std::move(row), params.temperature);
}

}  // namespace samplecheck
