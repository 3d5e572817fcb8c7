#include "suites/battery/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "suites/stats/binomial_intervals.h"

namespace samplecheck::battery {

calibration_summary calibrate(const subject& s, run_options options, const subject_lookup& lookup,
                              int runs, uint64_t first_seed) {
  calibration_summary out;
  out.runs = runs;
  out.alpha = options.alpha;
  for (int i = 0; i < runs; ++i) {
    options.seed = first_seed + static_cast<uint64_t>(i);
    const battery_report r = run_battery(s, options, lookup);
    out.failed_runs += r.passed() ? 0 : 1;
    for (const auto& c : r.checks) {
      if (c.p_value < 0) continue;
      auto& u = out.checks[c.dtype.empty() ? c.check : c.check + "[" + c.dtype + "]"];
      u.p_values.push_back(c.p_value);
      u.false_alarms += c.failed() ? 1 : 0;
      u.expected_false_alarms += std::max(c.alpha_share, 0.0);
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

}  // namespace samplecheck::battery
