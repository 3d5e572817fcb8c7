#include "suites/battery/runner.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "suites/battery/isolation.h"
#include "suites/stats/holm_budget.h"

namespace samplecheck::battery {
namespace {

std::string write_repro(const run_options& o, const battery_report& r, const check_report& c, nlohmann::json repro) {
  if (o.repro_dir.empty()) return {};
  std::error_code ec;
  std::filesystem::create_directories(o.repro_dir, ec);
  std::string subject = r.subject;
  std::replace_if(subject.begin(), subject.end(), [](char ch) { return ch == ':' || ch == '/'; }, '_');
  const std::string path = fmt::format("{}/{}.{}.json", o.repro_dir, subject, c.check);
  if (!repro.is_object()) repro = nlohmann::json::object();
  repro["subject"] = r.subject;
  repro["check"] = c.check;
  repro["budget"] = r.budget;
  repro["run_seed"] = r.seed;
  repro["alpha"] = r.alpha;
  repro["verdict"] = to_string(c.result);
  repro["detail"] = c.detail;
  if (c.p_value >= 0) repro["p_value"] = c.p_value;
  repro["reproduce"] = fmt::format("samplecheck qualify --subject {} --checks {} --budget {} --seed {} --vocab-size {}",
                                   r.subject, c.check, r.budget, r.seed, o.budget.vocab_size);
  std::ofstream f(path);
  f << repro.dump(2) << "\n";
  return f ? path : std::string{};
}

}  // namespace

const char* to_string(verdict v) {
  switch (v) {
    case verdict::pass: return "pass";
    case verdict::fail: return "FAIL";
    case verdict::not_applicable: return "n/a";
    case verdict::unavailable: return "skipped";
    case verdict::error: return "ERROR";
  }
  return "?";
}

namespace {
// Every applicable check ended in `v`, and at least one check was applicable.
bool all_applicable_are(const std::vector<check_report>& checks, verdict v) {
  bool any = false;
  for (const auto& c : checks) {
    if (c.result == v) any = true;
    else if (c.result != verdict::not_applicable) return false;
  }
  return any;
}
}  // namespace

bool battery_report::passed() const { return all_applicable_are(checks, verdict::pass); }

bool battery_report::unavailable() const { return all_applicable_are(checks, verdict::unavailable); }

battery_report run_battery(const subject& s, const run_options& o, const subject_lookup& lookup) {
  const auto start = std::chrono::steady_clock::now();
  battery_report report{s.name(), o.budget.name, o.seed, o.alpha, {}, 0, 0};
  std::vector<const check_definition*> selected;
  if (o.checks.empty()) {
    for (const auto& c : all_checks()) selected.push_back(&c);
  } else {
    for (const auto& name : o.checks) {
      if (const auto* c = find_check(name)) selected.push_back(c);
      else {
        check_report unknown;
        unknown.check = name;
        unknown.result = verdict::error;
        unknown.detail = "no such check";
        report.checks.push_back(std::move(unknown));
      }
    }
  }
  // Applicability first, from the descriptor alone: only applicable statistical
  // checks share the budget, so their shares are fixed before any data is drawn.
  stats::holm_budget budget(o.alpha);
  struct planned {
    const check_definition* check;
    std::string not_applicable;
    int holm_id = -1;
  };
  std::vector<planned> plan;
  for (const auto* c : selected) {
    planned p{c, c->not_applicable ? c->not_applicable(s, lookup) : std::string{}};
    if (p.not_applicable.empty() && c->kind == check_kind::statistical)
      p.holm_id = budget.declare(std::string(c->name), c->weight);
    plan.push_back(std::move(p));
  }
  std::vector<isolated_result> results(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!plan[i].not_applicable.empty()) continue;
    const double share = plan[i].holm_id >= 0 ? budget.planning_alpha(plan[i].holm_id) : 0.0;
    const check_context ctx{s, o.budget, o.seed, share, lookup};
    // The sampling is time-capped at check_seconds, so a check that runs 4x longer
    // than that plus a minute of fixed work is hung, not slow.
    const double timeout = o.timeout_s > 0 ? o.timeout_s : 4 * o.budget.check_seconds + 60;
    results[i] = run_check(*plan[i].check, ctx, timeout, o.isolate);
    if (plan[i].holm_id < 0) continue;
    const auto& r = results[i];
    if (r.outcome.unavailable || !r.outcome.harness_error.empty()) budget.skip(plan[i].holm_id, "did not run");
    // A crash, a hang or an exact violation is a failure whatever the statistics say.
    else if (r.crashed || r.outcome.exact_failure || std::isnan(r.outcome.p_value)) budget.record(plan[i].holm_id, 0.0);
    else budget.record(plan[i].holm_id, std::clamp(r.outcome.p_value, 0.0, 1.0));
  }
  const auto decisions = budget.decide();
  for (size_t i = 0; i < plan.size(); ++i) {
    check_report c;
    c.check = std::string(plan[i].check->name);
    if (!plan[i].not_applicable.empty()) {
      c.result = verdict::not_applicable;
      c.detail = plan[i].not_applicable;
      report.checks.push_back(std::move(c));
      continue;
    }
    const auto& r = results[i];
    c.power = r.outcome.power;
    c.samples = r.outcome.samples;
    c.seconds = r.seconds;
    c.detail = r.outcome.detail;
    if (plan[i].holm_id >= 0) {
      const auto& d = decisions[static_cast<size_t>(plan[i].holm_id)];
      c.alpha_share = d.alpha_share;
      if (!std::isnan(r.outcome.p_value)) c.p_value = r.outcome.p_value;
      c.result = d.rejected ? verdict::fail : verdict::pass;
    }
    if (r.outcome.exact_failure) c.result = verdict::fail;
    if (r.crashed) {
      c.result = verdict::fail;
      c.detail = r.why;
      c.power = "-";
    } else if (r.outcome.unavailable) {
      c.result = verdict::unavailable;
    } else if (!r.outcome.harness_error.empty()) {
      c.result = verdict::error;
      c.detail = r.outcome.harness_error;
    }
    if (c.result == verdict::fail) {
      nlohmann::json repro = r.outcome.repro;
      if (r.crashed) repro = {{"crash", r.why}};
      c.repro_path = write_repro(o, report, c, repro);
    }
    report.samples += c.samples;
    report.checks.push_back(std::move(c));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

std::string format_report(const battery_report& r, bool verbose) {
  std::string out = fmt::format("subject {}  budget {}  seed {}  alpha {:g} (Holm over the statistical checks)\n",
                                r.subject, r.budget, r.seed, r.alpha);
  out += fmt::format("{:<20} {:<8} {:>9} {:>9} {:<38} {:>9} {:>8}\n", "check", "verdict", "p-value", "alpha", "power (0.99)",
                     "samples", "time");
  for (const auto& c : r.checks) {
    const std::string p = c.p_value >= 0 ? fmt::format("{:.2e}", c.p_value) : (c.result == verdict::not_applicable ? "" : "exact");
    const std::string a = c.alpha_share >= 0 ? fmt::format("{:.1e}", c.alpha_share) : "";
    const std::string t = c.result == verdict::not_applicable ? "" : fmt::format("{:.2f}s", c.seconds);
    const std::string n = c.result == verdict::not_applicable ? "" : fmt::format("{}", c.samples);
    out += fmt::format("{:<20} {:<8} {:>9} {:>9} {:<38} {:>9} {:>8}\n", c.check, to_string(c.result), p, a,
                       c.power.substr(0, 38), n, t);
  }
  for (const auto& c : r.checks) {
    const bool show = verbose || (c.result != verdict::pass);
    if (!show || c.detail.empty()) continue;
    out += fmt::format("  {} [{}]: {}\n", c.check, to_string(c.result), c.detail);
    if (!c.repro_path.empty()) out += fmt::format("    reproduction file: {}\n", c.repro_path);
  }
  const double rate = r.seconds > 0 ? static_cast<double>(r.samples) / r.seconds : 0.0;
  out += fmt::format("{}: {} samples in {:.1f} s ({:.0f} samples/s)\n",
                     r.passed() ? "PASS" : (r.unavailable() ? "SKIPPED" : "FAIL"), r.samples, r.seconds, rate);
  return out;
}

}  // namespace samplecheck::battery
