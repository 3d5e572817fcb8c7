#include "suites/battery/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <utility>

#include "suites/battery/check_run.h"
#include "suites/battery/contracts.h"
#include "suites/battery/platform.h"
#include "suites/battery/rows_ahead.h"
#include "suites/harness/protocol.h"
#include "suites/stats/holm_budget.h"

namespace samplecheck::battery {
namespace {

// After this many hung checks the rest are not run: each hang costs a full timeout.
constexpr int kHangsBeforeStopping = 2;

// One (check, dtype) the run plans: applicability, its Holm id, and what happened.
struct planned_check {
  const check_definition* check;
  subject run_as;  // the subject with the dtype this row sends
  std::string dtype;
  std::string not_applicable{};
  bool selected = true;  // by --checks and --dtype
  int shard = 0;
  bool in_shard = true;  // --shard: the row is this shard's
  int holm_id = -1;
  double holm_weight = 0;
  check_run result{};
  bool ran = false;
  // A row left without its verdict, and why: cut by --time-limit (skipped) or not run after
  // the subject hung in kHangsBeforeStopping checks (FAIL). Empty `why`: not stopped.
  struct stop {
    verdict result = verdict::unavailable;
    std::string why;
  } stopped{};
};

bool selected_by(const run_options& o, std::string_view name) {
  return o.checks.empty() || std::find(o.checks.begin(), o.checks.end(), name) != o.checks.end();
}

// Round robin in plan order, the applicable rows and the n/a rows each on their own
// count, so every shard gets its part of the work and of the table.
void assign_shards(std::vector<planned_check>& plan, const shard_spec& shard) {
  if (shard.count <= 0) return;
  int applicable = 0, not_applicable = 0;
  for (auto& p : plan) {
    p.shard = (p.not_applicable.empty() ? applicable++ : not_applicable++) % shard.count;
    p.in_shard = p.shard == shard.index;
  }
}

std::vector<planned_check> plan_checks(const subject& s, const run_options& o,
                                       const subject_lookup& lookup) {
  // A program that never registered the check kit would judge nothing and call it a pass.
  if (all_checks().empty())
    throw std::logic_error("no checks registered: call register_checks() (suites/checks)");
  std::vector<planned_check> plan;
  std::vector<int32_t> dtypes = declared_dtypes(s);
  if (dtypes.empty()) dtypes.push_back(0);  // a matmul: one row per check, no dtype
  for (const auto& c : all_checks()) {
    if (c.applies_to != s.kind()) continue;
    for (const int32_t dtype : dtypes) {
      planned_check p{.check = &c,
                      .run_as = s,
                      .dtype = dtype != 0 ? dtype_name(dtype) : "",
                      .selected = selected_by(o, c.name)};
      p.selected &= o.dtype.empty() || o.dtype == p.dtype;
      if (dtype != 0) p.run_as.input_dtype = dtype;
      if (o.in_process && p.run_as.in_tree()) p.run_as.process = nullptr;  // --in-process
      p.not_applicable = contract_not_applicable(c.name, p.run_as);
      if (p.not_applicable.empty() && c.not_applicable)
        p.not_applicable = c.not_applicable(p.run_as, lookup);
      plan.push_back(std::move(p));
    }
  }
  assign_shards(plan, o.shard);
  return plan;
}

std::string holm_name(const planned_check& p) {
  return p.dtype.empty() ? std::string(p.check->name)
                         : fmt::format("{}[{}]", p.check->name, p.dtype);
}

// Applicable statistical checks share the budget, each dtype an equal part of its
// check's weight, selected or not, so the shares are fixed before any data is drawn.
void declare_in_budget(std::vector<planned_check>& plan, stats::holm_budget& budget) {
  for (auto& p : plan) {
    if (!p.not_applicable.empty() || p.check->kind != check_kind::statistical) continue;
    size_t dtypes = 0;
    for (const auto& q : plan) dtypes += q.check == p.check ? 1 : 0;
    p.holm_weight = p.check->weight / static_cast<double>(dtypes);
    p.holm_id = budget.declare(holm_name(p), p.holm_weight);
  }
}

// The budget's limit, scaled with V above the budget's own V: a plan's cost grows
// with the row length (the harness builds V-float rows; Gumbel-max draws cost O(V)).
// A matmul check's plan grows with its batch sizes and shapes: 0.1 s per (M, shape)
// allows a 4096 x 24576 launch and its copies many times over.
double check_timeout(const run_options& o, const subject& s) {
  if (o.timeout_s > 0) return o.timeout_s;
  if (s.kind() == subject_kind::matmul) {
    const auto& m = o.matmul;
    const double sizes = m.batch_sizes.empty()
                             ? (s.memory_space() == SC_MEMORY_HOST ? 40.0 : 4096.0)
                             : static_cast<double>(m.batch_sizes.size());
    const double shapes = m.shapes.empty() ? 20.0 : static_cast<double>(m.shapes.size());
    return std::max(o.budget.check_timeout_s, 0.1 * sizes * shapes);
  }
  const auto named = budget_by_name(o.budget.name);
  const double base_v = static_cast<double>(named ? named->vocab_size : o.budget.vocab_size);
  return o.budget.check_timeout_s *
         std::max(1.0, static_cast<double>(o.budget.vocab_size) / base_v);
}

// The check's timeout within what is left of the run's --time-limit (<= 0: nothing left).
double timeout_within_limit(const run_options& o, const subject& s) {
  const double t = check_timeout(o, s);
  return o.stop_at > 0 ? std::min(t, o.stop_at - protocol::now_seconds()) : t;
}

// A check whose subject call the run's time limit cut (not a hang: its timeout was the
// limit's) has no verdict; false for every other check.
bool cut_by_limit(planned_check& p, const run_options& o, double timeout) {
  if (!p.result.timed_out || timeout >= check_timeout(o, p.run_as)) return false;
  p.stopped.why =
      fmt::format("cut at the run's time limit ({:g} s, --time-limit) after {:.1f} s: no verdict",
                  o.time_limit_s, p.result.seconds);
  p.ran = false;
  return true;
}

// What a row gives Holm: a p-value, or (skipped non-empty) why it leaves the family.
struct holm_input {
  double p_value = 1.0;
  std::string skipped;
};

holm_input holm_input_of(const planned_check& p) {
  const auto& r = p.result;
  if (!p.selected || !p.in_shard || !p.ran) return {};  // kept in the family, never rejected
  if (r.outcome.unavailable || !r.outcome.harness_error.empty() ||
      !r.outcome.nothing_to_test.empty())
    return {1.0, "did not run"};
  // A crash, a hang or an exact violation is a failure whatever the statistics say.
  if (r.subject_failed || r.outcome.exact_failure || std::isnan(r.outcome.p_value))
    return {0.0, {}};
  return {std::clamp(r.outcome.p_value, 0.0, 1.0), {}};
}

void record_in_budget(const planned_check& p, stats::holm_budget& budget) {
  if (p.holm_id < 0) return;
  const holm_input in = holm_input_of(p);
  if (in.skipped.empty())
    budget.record(p.holm_id, in.p_value);
  else
    budget.skip(p.holm_id, in.skipped);
}

// The row's verdict is Holm's decision alone: nothing in report_row overrides it.
bool holm_decides(const planned_check& p, const run_options& o) {
  const auto& r = p.result.outcome;
  return p.holm_id >= 0 && p.ran && o.decision_level < 0 && !p.result.subject_failed &&
         !r.exact_failure && !r.unavailable && r.nothing_to_test.empty() && r.harness_error.empty();
}

// The record `samplecheck merge` recomputes the run-wide Holm from: every shard states
// the whole plan (so the files can be compared), and the Holm inputs of its own rows.
nlohmann::json shard_json(const std::vector<planned_check>& plan, const run_options& o) {
  nlohmann::json rows = nlohmann::json::array(), inputs = nlohmann::json::object();
  for (const auto& p : plan) {
    const bool member = p.holm_id >= 0;
    rows.push_back({{"check", p.check->name},
                    {"dtype", p.dtype.empty() ? nlohmann::json() : nlohmann::json(p.dtype)},
                    {"shard", p.shard},
                    {"selected", p.selected},
                    {"holm_weight", member ? nlohmann::json(p.holm_weight) : nlohmann::json()}});
    if (!member || !p.in_shard) continue;
    const holm_input in = holm_input_of(p);
    const bool skipped = !in.skipped.empty();
    inputs[holm_name(p)] = {{"p_value", skipped ? nlohmann::json() : nlohmann::json(in.p_value)},
                            {"skipped", skipped ? nlohmann::json(in.skipped) : nlohmann::json()},
                            {"decides", holm_decides(p, o)}};
  }
  return {
      {"index", o.shard.index}, {"count", o.shard.count}, {"plan", rows}, {"holm_inputs", inputs}};
}

// A statistical check's verdict: Holm's decision over the run, or --decision-level's fixed one.
void decide_by_holm(const planned_check& p, const stats::holm_budget::decision& d,
                    const stats::holm_budget& budget, const run_options& o, check_report& c) {
  c.planning_share = budget.planning_alpha(p.holm_id);
  c.alpha_share = d.alpha_share;
  if (!std::isnan(p.result.outcome.p_value)) c.p_value = p.result.outcome.p_value;
  const double level = o.decision_level >= 0 ? o.decision_level : d.alpha_share;
  c.result = (o.decision_level >= 0 ? c.p_value >= 0 && c.p_value <= level : d.rejected)
                 ? verdict::fail
                 : verdict::pass;
  if (o.decision_level >= 0) c.alpha_share = level;
}

check_report report_row(const planned_check& p,
                        const std::vector<stats::holm_budget::decision>& decisions,
                        const stats::holm_budget& budget, const run_options& o) {
  check_report c;
  c.check = std::string(p.check->name);
  c.dtype = p.dtype;
  if (!p.not_applicable.empty()) {
    c.result = verdict::not_applicable;
    c.detail = p.not_applicable;
    return c;
  }
  const auto& r = p.result;
  c.power = r.outcome.power;
  c.samples = r.outcome.samples;
  c.seconds = r.seconds;
  c.subject_seconds = r.subject_seconds;
  c.judge_seconds = r.seconds - r.subject_seconds;
  c.subject_calls = r.subject_calls;
  c.subject_input_rows = r.subject_input_rows;
  c.detail = r.outcome.detail;
  c.evidence = r.outcome.repro;
  // The judged row's bits, the tail set (a character per token) and a collision check's
  // requests are for the record's standalone script alone: report.json and report.html would
  // carry V values (or pairs of requests) per check for nothing.
  if (c.evidence.is_object())
    for (const char* key : {"row_data", "tail", "requests_u64"}) c.evidence.erase(key);
  if (!p.stopped.why.empty()) {
    c.result = p.stopped.result;
    c.detail = p.stopped.why;
    c.power = "-";
    return c;
  }
  if (p.holm_id >= 0) decide_by_holm(p, decisions[static_cast<size_t>(p.holm_id)], budget, o, c);
  if (r.outcome.exact_failure) c.result = verdict::fail;
  if (r.subject_failed) {
    c.result = r.timed_out ? verdict::timeout : verdict::fail;
    c.detail = r.why;
    c.power = "-";
  } else if (r.outcome.unavailable) {
    c.result = verdict::unavailable;
  } else if (!r.outcome.nothing_to_test.empty()) {
    c.result = verdict::not_applicable;
    c.detail = r.outcome.nothing_to_test;
    c.p_value = c.alpha_share = c.planning_share = -1;
  } else if (!r.outcome.harness_error.empty()) {
    c.result = verdict::error;
    c.detail = r.outcome.harness_error;
  }
  return c;
}

// The check's planned samples, asked before it runs (for the progress line only); a
// plan that cannot be made (a fixture the reference rejects) counts 0: the run says why.
uint64_t planned_samples(const planned_check& p, const check_context& ctx) {
  if (!p.check->planned_samples) return 0;
  try {
    return p.check->planned_samples(ctx);
  } catch (const std::exception&) {
    return 0;
  }
}

// Checks whose rows may wait built ahead of the running one: few enough that a standard
// budget's rows at V = 151,936 (goodness_of_fit's are the largest: a few hundred MB with their
// references) stay within a host's memory, enough to reach past a run of small checks.
constexpr size_t kRowsAheadWindow = 3;

// Rows built ahead (rows_ahead.h) where the options say so, else where the subject draws on a
// device: a host subject's calls keep the host's cores busy, and would compete with them.
bool builds_rows_ahead(const std::vector<planned_check>& plan, const run_options& o) {
  if (o.rows_ahead) return *o.rows_ahead;
  if (plan.empty()) return false;
  const int32_t space = plan.front().run_as.memory_space();
  return space == SC_MEMORY_CUDA || space == SC_MEMORY_HIP;
}

void run_planned(std::vector<planned_check>& plan, const run_options& o,
                 const subject_lookup& lookup, stats::holm_budget& budget) {
  int hangs = 0, index = 0;
  auto context_of = [&](const planned_check& p) {
    const double share = p.holm_id >= 0 ? budget.planning_alpha(p.holm_id) : 0.0;
    return check_context{p.run_as, o.budget, o.seed,        share,
                         lookup,   o.matmul, p.check->name, check_seed(o.seed, p.check->name)};
  };
  std::vector<size_t> runnable;
  for (size_t i = 0; i < plan.size(); ++i)
    if (plan[i].not_applicable.empty() && plan[i].selected && plan[i].in_shard)
      runnable.push_back(i);
  bool all_stated = true;
  for (size_t i : runnable) all_stated &= static_cast<bool>(plan[i].check->planned_samples);
  const rows_ahead::schedule schedule{.keeps_rows = builds_rows_ahead(plan, o),
                                      .window = kRowsAheadWindow,
                                      .counts_all = o.progress && o.progress_plans};
  std::vector<rows_ahead::job> jobs;
  for (size_t i : runnable)
    jobs.push_back({i, [&, i] { return planned_samples(plan[i], context_of(plan[i])); }});
  rows_ahead::builder ahead(std::move(jobs), schedule);
  for (size_t i : runnable) {
    auto& p = plan[i];
    if (hangs >= kHangsBeforeStopping) {
      p.stopped = {verdict::fail,
                   fmt::format("not run: the subject hung in {} checks before this one",
                               kHangsBeforeStopping)};
      continue;
    }
    const double timeout = timeout_within_limit(o, p.run_as);
    if (timeout <= 0) {
      p.stopped.why = fmt::format("not run: the run's time limit ({:g} s, --time-limit) came first",
                                  o.time_limit_s);
      continue;
    }
    const std::string subject_name = p.run_as.name(), name = holm_name(p);
    progress_event event{subject_name, name, ++index, static_cast<int>(runnable.size())};
    event.plan_stated = static_cast<bool>(p.check->planned_samples);
    const double waited = ahead.ready(i);
    event.planned = ahead.planned(i);
    const auto [counted, all_counted] = ahead.total();
    event.total_planned = schedule.counts_all ? counted : 0;
    event.all_planned = all_stated && (all_counted || !schedule.counts_all);
    if (o.progress) o.progress(event);
    p.result = run_check(*p.check, context_of(p), timeout);
    p.result.seconds += waited;
    p.ran = true;
    const bool cut = cut_by_limit(p, o, timeout);
    hangs += p.result.timed_out && !cut ? 1 : 0;
    event.finished = true;
    event.samples = p.result.outcome.samples;
    event.seconds = p.result.seconds;
    event.failed = !cut && (p.result.subject_failed || p.result.outcome.exact_failure);
    if (o.progress) o.progress(event);
  }
}

}  // namespace

const char* to_string(verdict v) {
  switch (v) {
    case verdict::pass:
      return "pass";
    case verdict::fail:
      return "FAIL";
    case verdict::timeout:
      return "TIMEOUT";
    case verdict::not_applicable:
      return "n/a";
    case verdict::unavailable:
      return "skipped";
    case verdict::error:
      return "ERROR";
  }
  return "?";
}

namespace {
// Every applicable check ended in `v`, and at least one check was applicable.
bool all_applicable_are(const std::vector<check_report>& checks, verdict v) {
  bool any = false;
  for (const auto& c : checks) {
    if (c.result == v)
      any = true;
    else if (c.result != verdict::not_applicable)
      return false;
  }
  return any;
}
}  // namespace

bool battery_report::passed() const { return all_applicable_are(checks, verdict::pass); }

bool battery_report::unavailable() const {
  return all_applicable_are(checks, verdict::unavailable);
}

const check_report* battery_report::find(std::string_view check) const {
  for (const auto& c : checks)
    if (c.check == check) return &c;
  return nullptr;
}

bool battery_report::nothing_judged() const {
  return std::all_of(checks.begin(), checks.end(),
                     [](const check_report& c) { return c.result == verdict::not_applicable; });
}

const char* battery_report::verdict_word() const {
  if (missing_shards > 0) return "INCOMPLETE";
  if (passed()) return "PASS";
  const bool any_failed = std::any_of(checks.begin(), checks.end(), [](const check_report& c) {
    return c.failed() || c.result == verdict::error;
  });
  if (cut_checks > 0 && !any_failed) return "INCOMPLETE";
  return unavailable() || nothing_judged() ? "SKIPPED" : "FAIL";
}

// The descriptor as the subject protocol states it.
nlohmann::json descriptor_json(const subject& s) {
  if (s.sampler != nullptr) return protocol::to_json(*s.sampler, "");
  if (s.matmul != nullptr) return protocol::to_json(*s.matmul, "");
  return protocol::to_json(*s.collective, "");
}

// Seconds since `since`, restarting it: the parts of a run outside its checks, in turn.
double lap(std::chrono::steady_clock::time_point& since) {
  const auto now = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(now - std::exchange(since, now)).count();
}

battery_report run_battery(const subject& s, const run_options& o, const subject_lookup& lookup) {
  const auto start = std::chrono::steady_clock::now();
  auto since = start;
  battery_report report;
  report.subject = s.name(), report.kind = to_string(s.kind()), report.plugin = s.plugin_path();
  report.budget = o.budget.name, report.seed = o.seed, report.alpha = o.alpha;
  // The CLI refuses unknown names; a library caller gets an error row naming each.
  for (const auto& name : o.checks)
    if (find_check(name) == nullptr) {
      check_report unknown;
      unknown.check = name;
      unknown.result = verdict::error;
      unknown.detail = "no such check";
      report.checks.push_back(std::move(unknown));
    }
  report.descriptor = descriptor_json(s);
  if (s.process && !s.in_tree()) report.environment = s.process->environment();
  report.platform = platform_json(s);
  auto& outside = report.outside_seconds;
  outside["platform"] = lap(since);
  std::vector<planned_check> plan = plan_checks(s, o, lookup);
  stats::holm_budget budget(o.alpha);
  declare_in_budget(plan, budget);
  outside["plan"] = lap(since);
  run_planned(plan, o, lookup, budget);
  double in_checks = 0;
  for (const auto& p : plan) in_checks += p.result.seconds;  // 0 for a row not started
  outside["between_checks"] = std::max(0.0, lap(since) - in_checks);
  if (s.process) s.process->stop();  // restarted by the next run that calls it
  outside["subject_stop"] = lap(since);
  for (const auto& p : plan) record_in_budget(p, budget);
  const auto decisions = budget.decide();
  if (o.shard.count > 0) report.shard = shard_json(plan, o);
  for (const auto& p : plan) {
    if (!p.selected || !p.in_shard) continue;
    check_report c = report_row(p, decisions, budget, o);
    report.cut_checks += !p.stopped.why.empty() && p.stopped.result == verdict::unavailable;
    if (c.failed()) {
      nlohmann::json evidence = p.result.outcome.repro;
      if (p.result.subject_failed) evidence = {{"crash", p.result.why}};
      if (!evidence.contains("check_seed"))
        evidence["check_seed"] = check_seed(o.seed, p.check->name);
      c.repro = repro_record(p.run_as, o, c, evidence);
      if (!o.repro_dir.empty()) c.repro_path = write_repro_file(o, c, c.repro, s.name());
      if (!o.repro_dir.empty() && c.repro_path.empty())
        c.detail += fmt::format(" (the reproduction file could not be written to {})", o.repro_dir);
    }
    report.samples += c.samples;
    report.checks.push_back(std::move(c));
  }
  outside["records"] = lap(since);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace samplecheck::battery
