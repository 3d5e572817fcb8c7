// Calibration: many battery runs with fresh seeds on correct subjects. Under the
// null every statistical check's p-value is (super-)uniform and a run fails with
// probability <= alpha; this measures both.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "suites/battery/runner.h"

namespace samplecheck::battery {

struct calibration_summary {
  int runs = 0;
  int failed_runs = 0;
  double alpha = 0;
  // Exact one-sided binomial P(X >= failed_runs | runs, alpha): small = too many failures.
  double failure_p_value = 1;
  struct check_uniformity {
    std::vector<double> p_values;
    double ks_distance = 0;   // sup |F_n(x) - x|
    double ks_p_bound = 1;    // Massart's DKW bound 2 exp(-2 n D^2) (valid for any n)
    // p-values are discrete for count statistics and conservative by design (Cantelli,
    // clamped boundary ranges), so the one-sided D- = sup (F_n(x) - x) is what matters:
    // too many small p-values. Its bound exp(-2 n D-^2).
    double ks_lower_distance = 0, ks_lower_p_bound = 1;
  };
  std::map<std::string, check_uniformity> checks;
};

// runs x run_battery(s, options with seed = first_seed + i), checks in-process.
calibration_summary calibrate(const subject& s, run_options options, const subject_lookup& lookup, int runs,
                              uint64_t first_seed);
std::string format_calibration(const std::string& subject, const calibration_summary& summary);

}  // namespace samplecheck::battery
