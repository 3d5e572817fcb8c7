#include "suites/battery/replay.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

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

// The failing case alone: its shape and, for batch invariance, its batch sizes.
matmul_selection smallest_case(const nlohmann::json& record) {
  matmul_selection s = selection_from_json(field(record, "matmul"));
  const nlohmann::json& e = field(record, "evidence");
  if (e.contains("shape") && e.contains("n") && e.contains("k"))
    s.shapes = {{e.at("shape").get<std::string>(), e.at("n").get<int64_t>(),
                 e.at("k").get<int64_t>(), "replay"}};
  if (e.contains("batch_sizes")) s.batch_sizes = e.at("batch_sizes").get<std::vector<int64_t>>();
  if (e.contains("columns")) s.columns = e.at("columns").get<int64_t>();
  return s;
}

}  // namespace

replay_plan plan_replay(const nlohmann::json& record) {
  if (value<std::string>(record, "format") != "samplecheck-repro")
    throw std::invalid_argument("field 'format' is not \"samplecheck-repro\"");
  if (const int v = value<int>(record, "version"); v != 1)
    throw std::invalid_argument(
        fmt::format("field 'version' is {}; this samplecheck reads version 1", v));
  replay_plan plan;
  plan.subject = value<std::string>(record, "subject");
  if (!field(record, "plugin").is_null()) plan.plugin = value<std::string>(record, "plugin");
  if (record.contains("exec")) plan.exec = value<std::string>(record, "exec");
  run_options& o = plan.options;
  const std::string budget = value<std::string>(record, "budget");
  const auto named = budget_by_name(budget);
  if (!named)
    throw std::invalid_argument(fmt::format("field 'budget': no budget named '{}'", budget));
  o.budget = *named;
  o.budget.vocab_size = value<int64_t>(record, "vocab_size");
  o.seed = value<uint64_t>(record, "seed");
  o.alpha = value<double>(record, "alpha");
  const std::string check = value<std::string>(record, "check");
  if (find_check(check) == nullptr)
    throw std::invalid_argument(fmt::format("field 'check': no check named '{}'", check));
  o.checks = {check};
  if (record.contains("dtype")) o.dtype = value<std::string>(record, "dtype");
  if (record.contains("decision_level")) o.decision_level = value<double>(record, "decision_level");
  if (value<std::string>(record, "kind") == "matmul") o.matmul = smallest_case(record);
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
