// The checks that judge rows one by one: degenerate_rows, parameter_routing.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/philox.h"
#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/report_evidence.h"
#include "suites/checks/zero_rule.h"

namespace samplecheck::checks {
namespace {

using fixtures::shape;

struct degenerate_case {
  std::string label;
  std::vector<float> values;
};

// Rows a sampler must refuse row by row. For a logits subject, -inf everywhere is
// the all-zero row, and "everything filtered" has no other spelling: under the ABI's
// parameter rules (top_k >= 1, top_p > 0, min_p <= 1) every filter keeps the argmax.
std::vector<degenerate_case> degenerate_cases(const battery::subject& s, int64_t V, uint64_t seed) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  std::vector<float> base = fixtures::make_probs(shape::zipf, {.vocab_size = V, .seed = seed});
  if (s.is_logits()) base = fixtures::probs_to_logits(base);
  base = harness::round_to_dtype(std::move(base), s.input_dtype);
  std::vector<degenerate_case> cases;
  auto with = [&](std::string label, int64_t token, float value) {
    degenerate_case c{std::move(label), base};
    c.values[static_cast<size_t>(token)] = value;
    cases.push_back(std::move(c));
  };
  with("NaN at token 7", 7, nan);
  with(fmt::format("+Inf at token {}", V / 2), V / 2, inf);
  if (s.is_logits()) {
    cases.push_back({"every logit -Inf", std::vector<float>(static_cast<size_t>(V), -inf)});
    with("NaN at the last token", V - 1, nan);
  } else {
    with("-0.25 at token 3", 3, -0.25f);
    cases.push_back({"all zero", std::vector<float>(static_cast<size_t>(V), 0.0f)});
    with("-Inf at the last token", V - 1, -inf);
  }
  return cases;
}

// The degenerate rows as judged rows; an error when the reference accepts one.
std::string degenerate_rows_of(const battery::subject& s, const std::vector<degenerate_case>& cases,
                               std::vector<judged_row>& bad) {
  for (const auto& c : cases) {
    judged_row r;
    r.label = c.label;
    r.values = c.values;
    r.target = reference_for(s, r.values, {});
    if (r.target.ok())
      return fmt::format("harness: the reference accepts degenerate row '{}'", c.label);
    bad.push_back(std::move(r));
  }
  return {};
}

// Invalid parameters a subject must refuse with a message (those of its declared filters).
struct bad_param {
  uint32_t filter;
  std::string field;
  fixtures::filter_setting setting;
};

std::vector<bad_param> bad_params(const battery::subject& s) {
  std::vector<bad_param> all{
      {SC_FILTER_TOP_K, "top_k = -1", {.top_k = -1}},
      {SC_FILTER_TOP_P, "top_p = 0", {.top_p = 0.0f}},
      {SC_FILTER_TOP_P, "top_p = 1.5", {.top_p = 1.5f}},
      {SC_FILTER_TOP_P, "top_p = NaN", {.top_p = std::numeric_limits<float>::quiet_NaN()}},
      {SC_FILTER_MIN_P, "min_p = -0.5", {.min_p = -0.5f}},
      {SC_FILTER_MIN_P, "min_p = 2", {.min_p = 2.0f}}};
  if (s.is_logits())
    all.push_back({SC_FILTER_TEMPERATURE, "temperature = -1", {.temperature = -1.0f}});
  std::erase_if(all, [&](const bad_param& b) { return !s.declares(b.filter); });
  return all;
}

// Outputs per input row of parameter_routing: a misrouted row draws an OUT token at
// the support rate, so ln(100) / rate outputs see one with probability 0.99.
constexpr int64_t kRoutingInputRows = 8;
uint64_t routing_outputs_per_row(const battery::check_context& ctx) {
  return static_cast<uint64_t>(std::ceil(std::log(100.0) / ctx.budget.support_rate));
}

// The good rows around the degenerate ones' slots: [good, bad, good, bad, ..., good].
std::vector<judged_row> good_neighbours(const battery::check_context& ctx, size_t cases) {
  std::vector<row_spec> specs;
  for (size_t i = 0; i <= cases; ++i)
    specs.push_back({i % 2 ? shape::peaked : shape::flat,
                     {.vocab_size = ctx.budget.vocab_size, .seed = ctx.check_seed + 100 + i},
                     {}});
  return make_rows(ctx.subj, specs);
}

}  // namespace

// Its good rows built as the run builds them (a row built ahead is its run's: rows_ahead.h).
uint64_t planned_degenerate_rows(const battery::check_context& ctx) {
  const size_t cases = degenerate_cases(ctx.subj, ctx.budget.vocab_size, ctx.check_seed).size();
  (void)good_neighbours(ctx, cases);
  // The mixed batch and the filled one ([good, bad, ..., good] each), then 2 outputs a
  // bad parameter.
  return 2 * (2 * cases + 1) + 2 * bad_params(ctx.subj).size() + zero_rule_outputs(ctx.subj, cases);
}

uint64_t planned_parameter_routing(const battery::check_context& ctx) {
  return routing_outputs_per_row(ctx) * kRoutingInputRows;
}

namespace {

// The batch with degenerate rows against the one with good rows in their slots: each bad
// row by the declared contract (valid = 0, or treat_as_zero's rule), each good row unchanged.
// False (with `out` the exact failure) at the first row that is not.
bool judge_mixed(const std::vector<const judged_row*>& mixed, const harness::sample_call& with_bad,
                 const harness::sample_call& only_good, const battery::subject& s,
                 battery::check_outcome& out) {
  const int64_t V = with_bad.vocab_size;
  const bool zero_contract = treats_as_zero(s);
  for (size_t i = 0; i < mixed.size(); ++i) {
    const bool is_bad = !mixed[i]->target.ok();
    const int32_t t = with_bad.tokens[i];
    const std::string zero_breach =
        is_bad && zero_contract ? zero_rule_breach(s, *mixed[i], with_bad.valid[i] != 0, t) : "";
    if (!zero_breach.empty()) {
      battery::fail_exactly(
          out,
          fmt::format("row {} ('{}', degenerate_rows treat_as_zero) {}", i, mixed[i]->label,
                      zero_breach),
          {{"row", i}, {"row_label", mixed[i]->label}, {"subsequence", 1000 + i}, {"offset", 8}});
      out.repro.update(zero_rule_evidence(s, *mixed[i], i, 1, with_bad.valid[i] != 0, t));
      return false;
    }
    if (is_bad && !zero_contract && with_bad.valid[i]) {
      const auto& e = mixed[i]->target.error();
      battery::fail_exactly(
          out,
          fmt::format("row {} ('{}': reference error field {} index {}: {}) came back valid = 1 "
                      "with token {}",
                      i, mixed[i]->label, e.field, e.index, e.message, t),
          {{"row", i}, {"row_label", mixed[i]->label}, {"subsequence", 1000 + i}, {"offset", 8}});
      return false;
    }
    if (!is_bad) {
      const size_t g = i;  // the same slot of the batch with good fillers
      const bool in_range = t >= 0 && t < V;
      if (!with_bad.valid[i] || !in_range || t != only_good.tokens[g]) {
        battery::fail_exactly(
            out,
            fmt::format(
                "good row {} ('{}') next to degenerate rows: valid {} token {}; with good rows in "
                "their slots: valid {} token {}",
                i, mixed[i]->label, static_cast<int>(with_bad.valid[i]), t,
                static_cast<int>(only_good.valid[g]), only_good.tokens[g]));
        out.repro.update(
            {{"row", i}, {"row_label", mixed[i]->label}, {"subsequence", 1000 + i}, {"offset", 8}});
        return false;
      }
    }
  }
  return true;
}

// Invalid parameters must be refused with a message, never sampled and never a crash; so
// must bad shapes. False (with `out` the exact failure) at the first that is not.
bool judge_refusals(const battery::check_context& ctx, const judged_row& good, uint64_t seed,
                    int& refused, battery::check_outcome& out) {
  // Invalid parameters must be refused with a message, never sampled and never a crash.
  for (const auto& bp : bad_params(ctx.subj)) {
    judged_row r = good;
    r.setting = bp.setting;
    harness::sample_call call = call_for_rows(ctx.subj, {&good, &r});
    add_output(call, 0, seed, 1, 0);
    add_output(call, 1, seed, 2, 0);
    const harness::call_status s = run_call(ctx.subj, call);
    out.samples += 2;
    if (s.ok() && call.valid[1]) {
      battery::fail_exactly(
          out,
          fmt::format("input row 1 with {} was sampled (valid = 1, token {}) instead of refused",
                      bp.field, call.tokens[1]),
          {{"row", 1}, {"params", setting_json(bp.setting)}});
      return false;
    }
    if (!s.ok() && s.fault != harness::call_fault::subject_status) {
      battery::fail_exactly(out, fmt::format("input row 1 with {}: {}", bp.field, s.describe()));
      return false;
    }
    if (!s.ok() && s.message.empty()) {
      battery::fail_exactly(
          out, fmt::format("{} refused with status {} but no message", bp.field, s.status));
      return false;
    }
    ++refused;
  }
  // Bad shapes: an empty vocabulary and a row_index past the input rows.
  for (int which = 0; which < 2; ++which) {
    harness::sample_call call = call_for_rows(ctx.subj, {&good});
    add_output(call, which == 0 ? 0 : 1, seed, 0, 0);
    if (which == 0) call.vocab_size = 0;
    const harness::call_status s = run_call(ctx.subj, call);
    const char* what = which == 0 ? "vocab_size = 0" : "row_index[0] = 1 with one input row";
    if (s.ok() || s.fault != harness::call_fault::subject_status) {
      battery::fail_exactly(out, s.ok() ? fmt::format("{} was accepted", what)
                                        : fmt::format("{}: {}", what, s.describe()));
      return false;
    }
  }
  return true;
}

}  // namespace

battery::check_outcome run_degenerate_rows(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const int64_t V = ctx.budget.vocab_size;
  const auto cases = degenerate_cases(ctx.subj, V, seed);
  const bool zero_contract = treats_as_zero(ctx.subj);
  const std::vector<judged_row> good = good_neighbours(ctx, cases.size());
  if (auto e = reference_errors(good); !e.empty()) return battery::harness_failure(e);
  std::vector<judged_row> bad;
  if (auto e = degenerate_rows_of(ctx.subj, cases, bad); !e.empty())
    return battery::harness_failure(e);
  // The same batch with a good filler row in each degenerate row's slot: every good row
  // keeps its slot and its stream, so this holds for slot-keyed streams too.
  std::vector<const judged_row*> mixed, filled;
  for (size_t i = 0; i < good.size(); ++i) {
    mixed.push_back(&good[i]);
    filled.push_back(&good[i]);
    if (i < bad.size()) mixed.push_back(&bad[i]);
    if (i < bad.size()) filled.push_back(&good[0]);
  }
  harness::sample_call with_bad = call_for_rows(ctx.subj, mixed),
                       only_good = call_for_rows(ctx.subj, filled);
  for (size_t i = 0; i < mixed.size(); ++i)
    add_output(with_bad, static_cast<int32_t>(i), seed, 1000 + i, 8);
  for (size_t i = 0; i < filled.size(); ++i)
    add_output(only_good, static_cast<int32_t>(i), seed, 1000 + i, 8);
  const harness::call_status st = run_call(ctx.subj, with_bad);
  const harness::call_status st_good = run_call(ctx.subj, only_good);
  out.samples = static_cast<uint64_t>(with_bad.num_output_rows() + only_good.num_output_rows());
  out.repro = repro_base(seed);
  if (!st.ok() || !st_good.ok()) {
    // Say what the subject did: a refused batch, or a contract broken inside it.
    const harness::call_status& bad_call = st.ok() ? st_good : st;
    const char* which = st.ok() ? "the batch of good rows only" : "the batch with degenerate rows";
    battery::fail_exactly(
        out, bad_call.fault == harness::call_fault::subject_status
                 ? fmt::format("{} must be sampled row by row, but {}", which, bad_call.describe())
                 : fmt::format("{}: {}", which, bad_call.describe()));
    return out;
  }
  // The rule's own calls first: they reach every route (zero_rule.h), the mixed batch one.
  if (zero_contract && !judge_zero_rule(ctx, bad, seed, out)) return out;
  if (!judge_mixed(mixed, with_bad, only_good, ctx.subj, out)) return out;
  int refused = 0;
  if (!judge_refusals(ctx, good.front(), seed, refused, out)) return out;
  out.power = "exact (every row compared)";
  out.detail = fmt::format(
      "{} degenerate rows {}, {} good neighbours unchanged; {} invalid parameters "
      "and 2 bad shapes refused",
      bad.size(), zero_contract ? zero_rule_kept(ctx.subj) : "gave valid = 0", good.size(),
      refused);
  out.repro = nullptr;
  return out;
}

std::string routing_not_applicable(const battery::subject& s, const battery::subject_lookup&) {
  const uint32_t routed = SC_FILTER_TOP_K | SC_FILTER_TOP_P | SC_FILTER_MIN_P |
                          (s.is_logits() ? SC_FILTER_TEMPERATURE : 0u);
  return (s.sampler->filters & routed) ? "" : "the subject declares no per-row parameter to route";
}

namespace {

// The routing check's input rows: one peaked row per mixed parameter setting.
std::vector<judged_row> routing_rows(const battery::check_context& ctx, uint64_t seed) {
  const auto settings = fixtures::mixed_row_parameters(
      ctx.subj.sampler->filters & (ctx.subj.is_logits() ? ~0u : ~SC_FILTER_TEMPERATURE),
      kRoutingInputRows);
  std::vector<row_spec> specs;
  for (int64_t i = 0; i < kRoutingInputRows; ++i)
    specs.push_back({shape::peaked,
                     {.vocab_size = ctx.budget.vocab_size, .seed = seed + i},
                     settings[static_cast<size_t>(i)]});
  return make_rows(ctx.subj, specs);
}

// Outputs map to input rows in a shuffled order, so output r's own index points at a
// different input row (with a different setting) most of the time.
std::vector<int32_t> shuffled_routing(uint64_t per_row, uint64_t seed) {
  std::vector<int32_t> map;
  for (uint64_t j = 0; j < per_row; ++j)
    for (int32_t i = 0; i < kRoutingInputRows; ++i) map.push_back(i);
  philox_stream pick(seed, 3, 0);
  for (size_t i = map.size() - 1; i > 0; --i) std::swap(map[i], map[pick.next() % (i + 1)]);
  return map;
}

}  // namespace

battery::check_outcome run_parameter_routing(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const std::vector<judged_row> rows = routing_rows(ctx, seed);
  if (auto e = reference_errors(rows); !e.empty()) return battery::harness_failure(e);
  const std::vector<int32_t> map = shuffled_routing(routing_outputs_per_row(ctx), seed);
  std::vector<const judged_row*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  harness::sample_call call = call_for_rows(ctx.subj, ptrs);
  for (size_t r = 0; r < map.size(); ++r) add_output(call, map[r], seed, r, 0);
  const harness::call_status st = run_call(ctx.subj, call);
  out.samples = map.size();
  out.repro = repro_base(seed);
  if (!st.ok()) {
    battery::fail_exactly(out, fmt::format("on a valid batch: {}", st.describe()));
    return out;
  }
  for (size_t r = 0; r < map.size(); ++r) {
    const judged_row& row = rows[static_cast<size_t>(map[r])];
    const int32_t t = call.tokens[r];
    const auto& d = row.target.distribution();
    const bool in_range = t >= 0 && t < ctx.budget.vocab_size;
    if (!call.valid[r] || !in_range || d.status[static_cast<size_t>(t)] == membership::out) {
      battery::fail_exactly(
          out,
          fmt::format("output row {} -> input row {} ({}): valid {} token {} is {} under that "
                      "row's parameters "
                      "(seed {}, subsequence {})",
                      r, map[r], row.setting.label(), static_cast<int>(call.valid[r]), t,
                      in_range ? to_string(d.status[static_cast<size_t>(t)]) : "out of range", seed,
                      r),
          {{"output_row", r},
           {"input_row", map[r]},
           {"token", t},
           {"params", setting_json(row.setting)},
           {"seed", seed},
           {"subsequence", r},
           {"first_subsequence", r},
           {"offset", 0}});
      // The input row with its own parameters, for a standalone script (repro-script) that
      // draws the output's request from that row alone: draws = the row's outputs here.
      out.repro["row_data"] =
          row_data(row, static_cast<size_t>(map[r]), routing_outputs_per_row(ctx));
      return out;
    }
  }
  out.power = exact_power(out.samples, "misrouted OUT");
  out.detail = fmt::format(
      "{} outputs over {} input rows with mixed parameters, every token allowed by its own row",
      map.size(), kRoutingInputRows);
  out.repro = nullptr;
  return out;
}

}  // namespace samplecheck::checks
