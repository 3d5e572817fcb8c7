#include "suites/checks/distribution_tests.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/combine.h"
#include "suites/stats/power.h"
#include "suites/stats/row_tests.h"

namespace samplecheck::checks {
namespace {

// The cells of the finest partition a row allows at n draws (Cochran's E = 5): one per
// token with n q >= 5, plus the pooled rest in pools of expected 5. The plan sizes its draws
// on them, so the directed family's draws do not shrink where the omnibus pools coarser
// (stats::cell_min_expected): fewer cells see a TVD spread over them at fewer draws, and
// the detectable TVD reported is computed on the cells the test used.
int64_t cells_at(const std::vector<double>& q_sorted_desc, double n) {
  int64_t cells = 0;
  double pooled = 0;
  for (const double q : q_sorted_desc) {
    if (q <= 0) break;
    if (n * q >= 5.0)
      ++cells;
    else
      pooled += n * q;
  }
  return std::max<int64_t>(1, cells + static_cast<int64_t>(pooled / 5.0));
}

std::vector<double> in_probs_sorted(const filtered_distribution& d) {
  std::vector<double> q;
  for (size_t t = 0; t < d.status.size(); ++t)
    if (d.status[t] == membership::in) q.push_back(d.source[t] / d.in_source_mass);
  std::sort(q.begin(), q.end(), std::greater<>());
  return q;
}

}  // namespace

bool gof_testable(const judged_row& row) {
  if (!row.target.ok()) return false;
  const auto& d = row.target.distribution();
  return d.num_in >= 2 || d.num_boundary > 0;
}

namespace {
// The BOUNDARY count's share of a row's level where the row also has IN tokens
// (weighted Bonferroni). Its null is composite (any mass in [min, max]), so its p-value
// is 1 in 98% of null rows (cpu.sort_filter, quick budget): an equal Sidak share
// doubled the row's p-value in its body. A BOUNDARY defect is gross (a dropped or
// added boundary token moves the count far outside the range), so 1/20 of the level
// costs it little.
constexpr double kBoundaryWeight = 0.05;

bool has_in_and_boundary(const filtered_distribution& d) {
  return d.num_in >= 2 && d.num_boundary > 0;
}

// The IN part at 1 - kBoundaryWeight of the level and the BOUNDARY count at
// kBoundaryWeight (weighted Bonferroni: valid whatever their dependence); a part alone
// (the other < 0) has the whole level. A row's parts and a check's alike.
double in_and_boundary_p(double p_in, double p_b) {
  if (p_in >= 0 && p_b >= 0)
    return std::min(stats::weighted_share_p(p_in, 1.0 - kBoundaryWeight),
                    std::min(1.0, p_b / kBoundaryWeight));
  return p_in >= 0 ? p_in : p_b >= 0 ? p_b : 1.0;
}
}  // namespace

double pearson_level(const judged_row& row, double alpha) {
  const double in_share =
      has_in_and_boundary(row.target.distribution()) ? alpha * (1.0 - kBoundaryWeight) : alpha;
  return stats::sidak_level(in_share, stats::kRowSubTests);
}

planned_draws plan_gof_draws(const judged_row& row, double alpha, double tvd, double power,
                             uint64_t cap) {
  const auto& d = row.target.distribution();
  const std::vector<double> q = in_probs_sorted(d);
  // The IN share of draws is at least 1 - (largest BOUNDARY target mass).
  const double in_share = std::max(1e-3, 1.0 - d.boundary_target_mass_max);
  const double level = pearson_level(row, alpha);
  planned_draws plan;
  int64_t df = std::max<int64_t>(1, static_cast<int64_t>(q.size()) - 1);
  df = std::min<int64_t>(df, 50);
  uint64_t n_in = 0;
  // df depends on n through the merging; three rounds settle it (cells grow like n).
  for (int round = 0; round < 4; ++round) {
    n_in = stats::samples_for_tvd(df, level, tvd, power);
    df = std::max<int64_t>(1, cells_at(q, static_cast<double>(n_in)) - 1);
  }
  plan.df = df;
  plan.draws = static_cast<uint64_t>(std::ceil(static_cast<double>(n_in) / in_share));
  if (plan.draws > cap) {
    plan.draws = cap;
    plan.capped = true;
  }
  return plan;
}

std::vector<size_t> in_probs_order(const judged_row& row) {
  const auto& d = row.target.distribution();
  return stats::row_order(condition_on_in(d, std::vector<uint64_t>(d.status.size(), 0)).probs);
}

row_fit fit_row(const judged_row& row, const std::vector<uint64_t>& counts, double alpha,
                double power, uint64_t seed, uint64_t stream, uint32_t replicates,
                std::span<const size_t> in_order) {
  const auto& d = row.target.distribution();
  const in_conditional c = condition_on_in(d, counts);
  // The IN part (row_tests) and the BOUNDARY count, combined by in_and_boundary_p.
  row_fit fit;
  double p_in = -1.0, p_b = -1.0;
  std::string stats_text;
  if (d.num_in >= 2 && c.in_count > 0) {
    const auto t = stats::row_tests(c.counts, c.probs, seed, stream, replicates, in_order);
    const auto& gof = t.omnibus;
    // row_tests' p-value is already combined over its sub-tests (Sidak, or calibrated).
    p_in = t.p_value;
    fit.in_observed = t.mc_observed;
    fit.in_replicates = t.mc_replicates;
    fit.detectable_tvd =
        gof.df > 0 ? stats::detectable_tvd(gof.df, pearson_level(row, alpha), c.in_count, power)
                   : 0.0;
    stats_text = fmt::format(
        "X2 {:.1f} df {} p {:.2e}; first {} tokens (mass {:.4g}) drew {:.4g}, {} cuts p {:.2e}; "
        "token {} drew {} (q {:.3g}) p {:.2e}",
        gof.pearson, gof.df, gof.p_pearson, t.worst_cut_tokens, t.worst_cut_mass, t.worst_cut_seen,
        t.cuts, t.p_cumulative, t.worst_token, t.worst_token_count, t.worst_token_q, t.p_token);
  }
  if (d.num_boundary > 0 && c.n > 0) {
    // Any resolution of the BOUNDARY tokens is allowed: the count is judged against
    // the mass in [min, max] that fits it best.
    const double observed = static_cast<double>(c.boundary_count) / static_cast<double>(c.n);
    const double m = std::clamp(observed, d.boundary_target_mass_min, d.boundary_target_mass_max);
    p_b = fit.p_boundary = stats::binomial_two_sided_p(c.boundary_count, c.n, m);
    stats_text += fmt::format("{}boundary {}/{} vs mass [{:.3g}, {:.3g}] p {:.2e}",
                              stats_text.empty() ? "" : "; ", c.boundary_count, c.n,
                              d.boundary_target_mass_min, d.boundary_target_mass_max, p_b);
  }
  fit.p_value = in_and_boundary_p(p_in, p_b);
  fit.detail = fmt::format("row '{}': {}", row.label, stats_text);
  if (fit.p_value <= alpha && c.in_count > 0) {
    const auto bad = stats::deviating_tokens(c.counts, c.probs, alpha, 4);
    for (const auto& t : bad)
      fit.detail += fmt::format(
          "; token {} {}-sampled: {} draws, expected p {:.3g}, Clopper-Pearson [{:.3g}, {:.3g}] at "
          "alpha/V",
          t.token, t.over ? "over" : "under", t.count, t.expected_p, t.lower, t.upper);
  }
  return fit;
}

double combine_last_look(const std::vector<row_fit>& fits, uint64_t seed, uint64_t stream) {
  double in_min = 1.0, boundary_min = 1.0;
  uint64_t in_rows = 0, boundary_rows = 0;
  size_t replicates = 0;
  for (const row_fit& f : fits) {
    if (!f.in_replicates.empty()) {
      in_min = std::min(in_min, f.in_observed);
      replicates = f.in_replicates.size();
      ++in_rows;
    }
    if (f.p_boundary >= 0) boundary_min = std::min(boundary_min, f.p_boundary), ++boundary_rows;
  }
  double p_in = -1.0;
  if (in_rows > 0) {
    uint64_t below = 0, equal = 0;
    for (size_t b = 0; b < replicates; ++b) {
      double m = 1.0;
      for (const row_fit& f : fits)
        if (!f.in_replicates.empty()) m = std::min(m, f.in_replicates.at(b));
      below += m < in_min ? 1 : 0;
      equal += m == in_min ? 1 : 0;
    }
    const double u = stats::randomisation_uniform(seed, stream, uint64_t{1} << 35);
    const double slots = static_cast<double>(replicates) + 1.0;
    const double p_mc =
        std::min(1.0, (static_cast<double>(below) + u * static_cast<double>(equal + 1)) / slots);
    p_in = p_mc > 1.0 / slots ? p_mc : std::min(stats::sidak_combine(in_min, in_rows), 1.0 / slots);
  }
  return in_and_boundary_p(
      p_in, boundary_rows > 0 ? stats::sidak_combine(boundary_min, boundary_rows) : -1.0);
}

}  // namespace samplecheck::checks
