#include "suites/campaigns/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "suites/battery/forked_children.h"
#include "suites/stats/binomial_intervals.h"

namespace samplecheck::campaigns {

namespace {

// What calibrate keeps of one run's battery_report.
struct run_record {
  bool passed = true;
  uint64_t samples = 0;
  double seconds = 0;
  struct entry {
    std::string name;  // check[dtype]
    double p_value = 1;
    bool failed = false;
    double alpha_share = 0;
  };
  std::vector<entry> checks;
};

run_record record_of(const battery::battery_report& r) {
  run_record out{r.passed(), r.samples, r.seconds, {}};
  for (const auto& c : r.checks)
    if (c.p_value >= 0)
      out.checks.push_back({c.dtype.empty() ? c.check : c.check + "[" + c.dtype + "]", c.p_value,
                            c.failed(), std::max(c.alpha_share, 0.0)});
  return out;
}

nlohmann::json to_json(const run_record& r) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks) checks.push_back({c.name, c.p_value, c.failed, c.alpha_share});
  return {{"passed", r.passed}, {"samples", r.samples}, {"seconds", r.seconds}, {"checks", checks}};
}

run_record from_json(const nlohmann::json& j) {
  run_record r{j.at("passed"), j.at("samples"), j.at("seconds"), {}};
  for (const auto& c : j.at("checks")) r.checks.push_back({c.at(0), c.at(1), c.at(2), c.at(3)});
  return r;
}

void tell_progress(const battery::progress_sink& sink, const std::string& subject,
                   const run_record& r) {
  if (!sink) return;
  battery::progress_event e{.subject = subject, .check = "", .index = 1, .total = 1};
  e.plan_stated = e.all_planned = false;
  sink(e);
  e.finished = true;
  e.samples = r.samples;
  e.seconds = r.seconds;
  e.failed = !r.passed;
  sink(e);
}

// Child w of `jobs`: runs w, w + jobs, ..., each sent as [run, record].
std::vector<run_record> run_in_workers(const battery::subject& s, battery::run_options options,
                                       const battery::subject_lookup& lookup, int runs,
                                       uint64_t first_seed, int jobs) {
  std::vector<std::optional<run_record>> got(static_cast<size_t>(runs));
  const auto progress = options.progress;
  options.progress = nullptr;
  battery::run_forked_children(
      jobs,
      [&](int w, const battery::json_sender& send) {
        for (int i = w; i < runs; i += jobs) {
          options.seed = first_seed + static_cast<uint64_t>(i);
          send(nlohmann::json::array({i, to_json(record_of(run_battery(s, options, lookup)))}));
        }
      },
      [&](int, nlohmann::json line) {
        auto& slot = got.at(line.at(0).get<size_t>());
        slot = from_json(line.at(1));
        tell_progress(progress, s.name(), *slot);
      });
  std::vector<run_record> out;
  for (int i = 0; i < runs; ++i) {
    if (!got[static_cast<size_t>(i)])
      throw std::runtime_error(fmt::format("calibrate: run {} never reported", i + 1));
    out.push_back(std::move(*got[static_cast<size_t>(i)]));
  }
  return out;
}

}  // namespace

calibration_summary calibrate(const battery::subject& s, battery::run_options options,
                              const battery::subject_lookup& lookup, int runs, uint64_t first_seed,
                              int jobs) {
  std::vector<run_record> records;
  if (jobs > 1) {
    records = run_in_workers(s, options, lookup, runs, first_seed, std::min(jobs, runs));
  } else {
    for (int i = 0; i < runs; ++i) {
      options.seed = first_seed + static_cast<uint64_t>(i);
      records.push_back(record_of(battery::run_battery(s, options, lookup)));
    }
  }
  calibration_summary out;
  out.runs = runs;
  out.alpha = options.alpha;
  for (const run_record& r : records) {
    out.failed_runs += r.passed ? 0 : 1;
    for (const auto& c : r.checks) {
      auto& u = out.checks[c.name];
      u.p_values.push_back(c.p_value);
      u.false_alarms += c.failed ? 1 : 0;
      u.expected_false_alarms += c.alpha_share;
    }
  }
  out.failure_p_value = stats::binomial_upper_tail(static_cast<uint64_t>(out.failed_runs),
                                                   static_cast<uint64_t>(runs), out.alpha);
  for (auto& [name, u] : out.checks) {
    const auto n = static_cast<uint64_t>(u.p_values.size());
    u.false_alarm_p = stats::binomial_upper_tail(
        u.false_alarms, n, std::min(1.0, u.expected_false_alarms / static_cast<double>(n)));
    u.uniformity = stats::uniformity(u.p_values);
  }
  return out;
}

bool calibration_summary::acceptable(double fail_below) const {
  bool ok = failure_p_value >= fail_below;
  for (const auto& [name, u] : checks)
    ok &= u.false_alarm_p >= fail_below && u.uniformity.ks_lower_p >= fail_below &&
          u.uniformity.median <= kMaxMedianP;
  return ok;
}

std::string format_calibration(const std::string& subject, const calibration_summary& s) {
  std::string out = fmt::format(
      "calibration of {}: {} runs with fresh seeds, alpha {:g}: {} failed runs "
      "(expected <= {:.3g}; P(X >= {}) = {:.3g})\n",
      subject, s.runs, s.alpha, s.failed_runs, s.runs * s.alpha, s.failed_runs, s.failure_p_value);
  out += fmt::format(
      "  {:<26} {:>5} {:>6} {:>8} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7} {:<15} {:>9} {:>9}\n",
      "check", "n", "alarms", "expected", "P(>=)", "KS D", "KS p", "AD A2", "AD p", "median",
      "band (99.9%)", "sign p", "D- p");
  for (const auto& [name, u] : s.checks) {
    const auto& f = u.uniformity;
    out += fmt::format(
        "  {:<26} {:>5} {:>6} {:>8.3g} {:>9.3g} {:>7.4f} {:>9.3g} {:>7.3f} {:>9.3g} {:>7.3f} "
        "[{:.3f}, {:.3f}]  {:>9.3g} {:>9.3g}\n",
        name, f.n, u.false_alarms, u.expected_false_alarms, u.false_alarm_p, f.ks_distance, f.ks_p,
        f.ad_statistic, f.ad_p, f.median, f.median_low, f.median_high, f.sign_p, f.ks_lower_p);
  }
  return out;
}

}  // namespace samplecheck::campaigns
