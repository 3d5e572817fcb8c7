#include "suites/battery/calibration.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "suites/stats/binomial_intervals.h"

namespace samplecheck::battery {

calibration_summary calibrate(const subject& s, run_options options, const subject_lookup& lookup, int runs,
                              uint64_t first_seed) {
  calibration_summary out;
  out.runs = runs;
  out.alpha = options.alpha;
  for (int i = 0; i < runs; ++i) {
    options.seed = first_seed + static_cast<uint64_t>(i);
    const battery_report r = run_battery(s, options, lookup);
    out.failed_runs += r.passed() ? 0 : 1;
    for (const auto& c : r.checks)
      if (c.p_value >= 0)
        out.checks[c.dtype.empty() ? c.check : c.check + "[" + c.dtype + "]"].p_values.push_back(c.p_value);
  }
  out.failure_p_value = stats::binomial_upper_tail(static_cast<uint64_t>(out.failed_runs), static_cast<uint64_t>(runs), out.alpha);
  for (auto& [name, u] : out.checks) {
    std::vector<double> p = u.p_values;
    std::sort(p.begin(), p.end());
    const double n = static_cast<double>(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      const double above = static_cast<double>(i + 1) / n - p[i];  // F_n(p_i) - p_i
      const double below = p[i] - static_cast<double>(i) / n;
      u.ks_lower_distance = std::max(u.ks_lower_distance, above);
      u.ks_distance = std::max({u.ks_distance, above, below});
    }
    u.ks_p_bound = std::min(1.0, 2 * std::exp(-2 * n * u.ks_distance * u.ks_distance));
    u.ks_lower_p_bound = std::min(1.0, std::exp(-2 * n * u.ks_lower_distance * u.ks_lower_distance));
  }
  return out;
}

std::string format_calibration(const std::string& subject, const calibration_summary& s) {
  std::string out = fmt::format("calibration of {}: {} runs with fresh seeds, alpha {:g}: {} failed runs "
                                "(expected <= {:.3g}; P(X >= {}) = {:.3g})\n",
                                subject, s.runs, s.alpha, s.failed_runs, s.runs * s.alpha, s.failed_runs,
                                s.failure_p_value);
  out += fmt::format("  {:<20} {:>6} {:>8} {:>10} {:>8} {:>10} {:>9} {:>9}\n", "check", "n", "KS D", "DKW p<=", "D-",
                     "p<=", "min p", "median p");
  for (const auto& [name, u] : s.checks) {
    std::vector<double> p = u.p_values;
    std::sort(p.begin(), p.end());
    out += fmt::format("  {:<20} {:>6} {:>8.4f} {:>10.3g} {:>8.4f} {:>10.3g} {:>9.2e} {:>9.3f}\n", name, p.size(),
                       u.ks_distance, u.ks_p_bound, u.ks_lower_distance, u.ks_lower_p_bound,
                       p.empty() ? 1.0 : p.front(), p.empty() ? 1.0 : p[p.size() / 2]);
  }
  return out;
}

}  // namespace samplecheck::battery
