// degenerate_rows' treat_as_zero rule (zero_rule.h).
#include "suites/checks/zero_rule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "suites/checks/check_helpers.h"
#include "suites/checks/report_evidence.h"

namespace samplecheck::checks {

namespace {

// The tokens a degenerate row may draw, ascending, with the rule's probability of each;
// none when it is left with no positive mass (then valid = 0).
struct zero_rule {
  std::vector<int32_t> allowed;
  std::vector<double> prob;  // per token: the reference's, over the row as the rule reads it
  std::string reading;       // how the row is read, for the detail line
};

// Draws of each degenerate row a setting: a token that should hold probability 0 but is
// drawn as the row's largest holds at least a few percent of the row, so this many draws
// miss it with a probability far below the check's level.
constexpr uint64_t kZeroRuleDraws = 256;
// The filtered setting's k: within every sampler's top-k range and cake's frozen kernels'.
constexpr int32_t kZeroRuleTopK = 50;

// The row as the contract reads it: its +Inf entries alone (each as 1) if it has any, else
// NaN, negative and -0.0 entries as 0 (all of them fail `> 0`).
std::vector<float> zero_cleaned(const std::vector<float>& values, std::string& reading) {
  std::vector<float> cleaned(values.size(), 0.0f);
  bool has_inf = false;
  for (size_t t = 0; t < values.size(); ++t)
    if (std::isinf(values[t]) && values[t] > 0) cleaned[t] = 1.0f, has_inf = true;
  reading = has_inf ? "drawn uniformly among its +Inf entries"
                    : "NaN and negative entries count as probability 0";
  if (!has_inf)
    for (size_t t = 0; t < values.size(); ++t) cleaned[t] = values[t] > 0 ? values[t] : 0.0f;
  return cleaned;
}

// The reference on the cleaned row at the row's setting, renormalised, every tie at a cut
// kept (which of a tie a sampler keeps is the ties check's question, not this one's).
zero_rule treat_as_zero_rule(const battery::subject& s, const judged_row& row) {
  zero_rule z;
  const std::vector<float> cleaned = zero_cleaned(row.values, z.reading);
  filter_params params = reference_params(s, row.setting);
  params.ties = tie_policy::keep_ties;
  const reference_result target =
      compute_filtered_distribution(std::span<const float>(cleaned), input_kind::probs, params,
                                    {.normalisation = probs_normalisation::renormalise});
  if (!target.ok()) {
    z.reading = "no positive mass left, so valid = 0";
    return z;
  }
  const filtered_distribution& d = target.distribution();
  for (size_t t = 0; t < d.status.size(); ++t)
    if (d.status[t] != membership::out) z.allowed.push_back(static_cast<int32_t>(t));
  z.prob = d.prob;
  if (row.setting.top_k > 0)
    z.reading +=
        fmt::format(", then top_k {} keeps {} tokens", row.setting.top_k, z.allowed.size());
  return z;
}

// Empty when an output keeps the rule `z`; else what broke it.
std::string breach_of(const zero_rule& z, bool valid, int32_t token) {
  if (z.allowed.empty())
    return valid ? fmt::format("came back valid = 1 with token {} ({})", token, z.reading) : "";
  if (!valid)
    return fmt::format("came back valid = 0 although it has positive mass ({})", z.reading);
  if (!std::binary_search(z.allowed.begin(), z.allowed.end(), token))
    return fmt::format("drew token {}, which holds probability 0 under treat_as_zero ({})", token,
                       z.reading);
  return {};
}

// The settings each degenerate row is drawn at: unfiltered, and at top_k = 50 where the
// subject reads top-k (the row's own setting comes first).
std::vector<fixtures::filter_setting> zero_rule_settings(const battery::subject& s) {
  std::vector<fixtures::filter_setting> settings{{}};
  if (s.declares(SC_FILTER_TOP_K)) settings.push_back({.top_k = kZeroRuleTopK});
  return settings;
}

}  // namespace

bool treats_as_zero(const battery::subject& s) {
  return registry::contracts_of(*s.sampler).degenerate_rows == SC_DEGENERATE_TREAT_AS_ZERO;
}

std::string zero_rule_breach(const battery::subject& s, const judged_row& row, bool valid,
                             int32_t token) {
  return breach_of(treat_as_zero_rule(s, row), valid, token);
}

nlohmann::json zero_rule_evidence(const battery::subject& s, const judged_row& row, size_t index,
                                  uint64_t draws, bool valid, int32_t token) {
  const zero_rule z = treat_as_zero_rule(s, row);
  if (z.allowed.empty() || !valid || std::binary_search(z.allowed.begin(), z.allowed.end(), token))
    return nlohmann::json::object();
  std::string status(row.values.size(), 'O');
  for (const int32_t t : z.allowed) status[static_cast<size_t>(t)] = 'I';
  return {{"token", token},
          {"params", setting_json(row.setting)},
          {"row_data", row_data(row, index, draws, status, z.prob)}};
}

uint64_t zero_rule_outputs(const battery::subject& s, size_t cases) {
  return treats_as_zero(s) ? kZeroRuleDraws * cases * zero_rule_settings(s).size() : 0;
}

std::string zero_rule_kept(const battery::subject& s) {
  static_assert(kZeroRuleDraws == 256, "the text states the draws");
  return fmt::format(
      "kept degenerate_rows treat_as_zero over 257 draws each{} (NaN / negative count as 0, "
      "+Inf drawn among the +Inf entries, all-zero valid = 0)",
      zero_rule_settings(s).size() > 1 ? fmt::format(" and 256 more at top_k {}", kZeroRuleTopK)
                                       : "");
}

namespace {

// One call: every row of `rows` drawn kZeroRuleDraws times from subsequence `first` on.
bool judge_zero_rule_call(const battery::check_context& ctx, const std::vector<judged_row>& rows,
                          uint64_t seed, uint64_t first, battery::check_outcome& out) {
  std::vector<const judged_row*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  harness::sample_call call = call_for_rows(ctx.subj, ptrs);
  for (uint64_t j = 0; j < kZeroRuleDraws * rows.size(); ++j)
    add_output(call, static_cast<int32_t>(j % rows.size()), seed, first + j, 8);
  const harness::call_status st = run_call(ctx.subj, call);
  out.samples += static_cast<uint64_t>(call.num_output_rows());
  const std::string setting = rows.front().setting.label();
  if (!st.ok()) {
    out.repro = repro_base(seed);
    battery::fail_exactly(out, fmt::format("degenerate rows drawn {} times each ({}): {}",
                                           kZeroRuleDraws, setting, st.describe()));
    return false;
  }
  // The rule once a row: each is a pass over V entries, and every row is drawn 256 times.
  std::vector<zero_rule> rules;
  for (const judged_row& row : rows) rules.push_back(treat_as_zero_rule(ctx.subj, row));
  for (int64_t r = 0; r < call.num_output_rows(); ++r) {
    const size_t index = static_cast<size_t>(call.row_index[r]);
    const judged_row& row = rows[index];
    const std::string why = breach_of(rules[index], call.valid[r] != 0, call.tokens[r]);
    if (why.empty()) continue;
    out.repro = repro_base(seed);
    battery::fail_exactly(out,
                          fmt::format("row '{}' ({}; degenerate_rows treat_as_zero), output {}: {}",
                                      row.label, setting, r, why),
                          {{"row_label", row.label},
                           {"output", r},
                           {"token", call.tokens[r]},
                           {"subsequence", first + static_cast<uint64_t>(r)},
                           {"offset", 8}});
    out.repro.update(zero_rule_evidence(ctx.subj, row, index, kZeroRuleDraws, call.valid[r] != 0,
                                        call.tokens[r]));
    return false;
  }
  return true;
}

}  // namespace

// Every setting is drawn, so that a route that keeps the rule is seen beside one that does
// not; the check's failure is the first setting's that broke it.
bool judge_zero_rule(const battery::check_context& ctx, const std::vector<judged_row>& bad,
                     uint64_t seed, battery::check_outcome& out) {
  uint64_t first = 5000;
  std::optional<battery::check_outcome> broken;
  std::vector<std::string> kept;  // the settings whose every draw kept the rule
  for (const fixtures::filter_setting& setting : zero_rule_settings(ctx.subj)) {
    std::vector<judged_row> rows = bad;
    for (judged_row& r : rows) r.setting = setting;
    battery::check_outcome drawn;
    if (judge_zero_rule_call(ctx, rows, seed, first, drawn))
      kept.push_back(setting.label());
    else if (!broken)
      broken = drawn;
    out.samples += drawn.samples;
    first += kZeroRuleDraws * rows.size();
  }
  if (!broken) return true;
  broken->samples = out.samples;
  out = std::move(*broken);
  if (!kept.empty())
    out.detail += fmt::format("; {}: every degenerate row kept the rule over {} draws",
                              fmt::join(kept, ", "), kZeroRuleDraws);
  return false;
}

}  // namespace samplecheck::checks
