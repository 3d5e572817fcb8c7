#include "suites/battery/replay.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace samplecheck::battery {
namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* name) {
  if (!j.contains(name))
    throw std::invalid_argument(fmt::format("the record has no field '{}'", name));
  return j.at(name);
}

template <class T>
T value(const nlohmann::json& j, const char* name) {
  try {
    return field(j, name).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("field '{}': {}", name, e.what()));
  }
}

// A number field of the record in [lo, hi], named when it is not.
template <class T>
T in_range(const nlohmann::json& j, const char* name, T lo, T hi) {
  const nlohmann::json& f = field(j, name);
  const bool integral = std::is_integral_v<T>;
  if (!f.is_number() || (integral && !f.is_number_integer()) ||
      (std::is_unsigned_v<T> && !f.is_number_unsigned()))
    throw std::invalid_argument(fmt::format("field '{}': {} is not {}", name, f.dump(),
                                            integral ? "an integer" : "a number"));
  const T v = f.get<T>();
  if (!(lo <= v && v <= hi))
    throw std::invalid_argument(
        fmt::format("field '{}': {} is outside [{}, {}]", name, f.dump(), lo, hi));
  return v;
}

// The failing case alone: its shape and, for batch invariance, its batch sizes.
matmul_selection smallest_case(const nlohmann::json& record) {
  try {
    matmul_selection s = selection_from_json(field(record, "matmul"));
    const nlohmann::json& e = field(record, "evidence");
    if (e.contains("shape") && e.contains("n") && e.contains("k"))
      s.shapes = {{e.at("shape").get<std::string>(), in_range(e, "n", int64_t{1}, kMaxShapeDim),
                   in_range(e, "k", int64_t{1}, kMaxShapeDim), "replay"}};
    if (e.contains("batch_sizes")) s.batch_sizes = e.at("batch_sizes").get<std::vector<int64_t>>();
    if (e.contains("columns")) s.columns = in_range(e, "columns", int64_t{1}, kMaxShapeDim);
    for (const auto& shape : s.shapes)
      if (shape.n < 1 || shape.n > kMaxShapeDim || shape.k < 1 || shape.k > kMaxShapeDim)
        throw std::invalid_argument(
            fmt::format("field 'matmul': shape {} is outside [1, {}]", shape.name, kMaxShapeDim));
    for (const int64_t m : s.batch_sizes)
      if (m < 1 || m > kMaxBatchSize)
        throw std::invalid_argument(
            fmt::format("field 'batch_sizes': {} is outside [1, {}]", m, kMaxBatchSize));
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("field 'matmul' or 'evidence': {}", e.what()));
  }
}

// The check, its dtype, the Holm level to decide it at and what it found then.
void read_check(const nlohmann::json& record, run_options& o) {
  const std::string check = value<std::string>(record, "check");
  if (find_check(check) == nullptr)
    throw std::invalid_argument(fmt::format("field 'check': no check named '{}'", check));
  o.checks = {check};
  if (record.contains("dtype")) {
    o.dtype = value<std::string>(record, "dtype");
    if (o.dtype != "f32" && o.dtype != "bf16" && o.dtype != "f16")
      throw std::invalid_argument(
          fmt::format("field 'dtype': '{}' is not f32, bf16 or f16", o.dtype));
  }
  if (record.contains("decision_level"))
    o.decision_level = in_range(record, "decision_level", 0.0, kMaxAlpha);
  value<std::string>(record, "verdict");
  if (record.contains("p_value")) in_range(record, "p_value", 0.0, 1.0);
  if (record.contains("samples"))
    in_range(record, "samples", uint64_t{0}, std::numeric_limits<uint64_t>::max());
}

}  // namespace

replay_plan plan_replay(const nlohmann::json& record) {
  if (!record.is_object()) throw std::invalid_argument("the record is not a JSON object");
  if (value<std::string>(record, "format") != "samplecheck-repro")
    throw std::invalid_argument("field 'format' is not \"samplecheck-repro\"");
  if (const auto& v = field(record, "version"); v != 1)
    throw std::invalid_argument(
        fmt::format("field 'version' is {}; this samplecheck reads version 1", v.dump()));
  replay_plan plan;
  plan.subject = value<std::string>(record, "subject");
  if (!field(record, "plugin").is_null()) plan.plugin = value<std::string>(record, "plugin");
  if (record.contains("exec")) plan.exec = value<std::string>(record, "exec");
  if (record.contains("connect")) plan.connect = value<std::string>(record, "connect");
  run_options& o = plan.options;
  const std::string budget = value<std::string>(record, "budget");
  const auto named = budget_by_name(budget);
  if (!named)
    throw std::invalid_argument(fmt::format("field 'budget': no budget named '{}'", budget));
  o.budget = *named;
  o.budget.vocab_size = in_range(record, "vocab_size", kMinVocabSize, kMaxVocabSize);
  o.seed = in_range(record, "seed", uint64_t{0}, std::numeric_limits<uint64_t>::max());
  o.alpha = in_range(record, "alpha", std::numeric_limits<double>::min(), kMaxAlpha);
  read_check(record, o);
  const std::string kind = value<std::string>(record, "kind");
  if (kind != "sampler" && kind != "matmul" && kind != "collective")
    throw std::invalid_argument(
        fmt::format("field 'kind': '{}' is not sampler, matmul or collective", kind));
  if (kind == "matmul") o.matmul = smallest_case(record);
  return plan;
}

replay_comparison compare_replay(const nlohmann::json& record, const check_report& now) {
  replay_comparison c;
  const std::string before = record.value("verdict", "");
  c.reproduced = before == to_string(now.result);
  c.text = fmt::format("verdict: recorded {}, now {}\n", before, to_string(now.result));
  if (record.contains("p_value")) {
    const double p = record.at("p_value").get<double>();
    // The same draws give the same statistic; the JSON round trip keeps 17 digits.
    const bool same = now.p_value >= 0 && std::abs(now.p_value - p) <= 1e-12 * std::max(p, 1e-300);
    c.reproduced &= same;
    c.text += fmt::format("p-value: recorded {:.6e}, now {:.6e}{}\n", p, now.p_value,
                          same ? "" : " (differs)");
  }
  if (record.contains("samples") && record.value("kind", "") == "sampler") {
    const uint64_t n = record.at("samples").get<uint64_t>();
    c.reproduced &= n == now.samples;
    c.text += fmt::format("samples: recorded {}, now {}{}\n", n, now.samples,
                          n == now.samples ? "" : " (differs)");
  }
  c.text += c.reproduced ? "REPRODUCED\n" : "NOT REPRODUCED\n";
  return c;
}

}  // namespace samplecheck::battery
