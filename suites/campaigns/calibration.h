// Calibration: many battery runs with fresh seeds on correct subjects. Under the
// null every statistical check's p-value should be close to uniform and a check fails
// with probability <= its Holm level; this measures both: per check the false alarms
// against their expectation (exact binomial tail), and the uniformity of its p-values
// (Kolmogorov-Smirnov, Anderson-Darling, the median against its band; stats/uniformity.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "suites/battery/runner.h"
#include "suites/stats/uniformity.h"

namespace samplecheck::campaigns {

// `calibrate` fails a check whose false alarms exceed their expectation, whose
// p-values hold too many small values (one-sided KS), or whose median p-value is above
// this (piled at 1: samples spent for nothing, as Bonferroni over bounds gives:
// docs/judging-power/calibration.md). Anderson-Darling and the sign test
// are reported beside them: conservative-by-design parts (a BOUNDARY mass range,
// Sidak over dependent sub-tests) shift a check's p-values up a little, which they
// detect over many runs.
inline constexpr double kMaxMedianP = 0.75;

struct calibration_summary {
  int runs = 0;
  int failed_runs = 0;
  double alpha = 0;
  // Exact one-sided binomial P(X >= failed_runs | runs, alpha): small = too many failures.
  double failure_p_value = 1;
  struct check_uniformity {
    std::vector<double> p_values;
    uint64_t false_alarms = 0;
    double expected_false_alarms = 0;  // the sum of the runs' Holm levels
    double false_alarm_p = 1;          // P(X >= false_alarms), X ~ Binomial(n, mean level)
    stats::uniformity_result uniformity;
  };
  std::map<std::string, check_uniformity> checks;
  // Every check: false_alarm_p and the one-sided KS p >= fail_below, median <= kMaxMedianP.
  bool acceptable(double fail_below) const;
};

// runs x run_battery(s, options with seed = first_seed + i). jobs > 1: the runs are
// shared among that many forked worker processes (run i in worker i % jobs), and the
// summary is the same as with one (each run depends only on its seed; the parent takes
// the runs in order). options.progress hears of each run as it ends, in the parent.
calibration_summary calibrate(const battery::subject& s, battery::run_options options,
                              const battery::subject_lookup& lookup, int runs, uint64_t first_seed,
                              int jobs = 1);
std::string format_calibration(const std::string& subject, const calibration_summary& summary);

}  // namespace samplecheck::campaigns
