// The tie-split half of the ties check: exact ties inside the support must be split
// evenly among the tied tokens, in every row a sampler takes (unfiltered, top-k, top-p,
// min-p, temperature, and logits at large magnitudes), whatever it declares.
//
// A group is the IN tokens of a row that hold one exact input value (2 to 16 of them):
// equal source, so equal target whatever the rest of the row does. Given n_g draws in
// the group, their counts are multinomial with equal cells under the null, and the
// Pearson statistic is chi-square with m - 1 degrees of freedom. The plan: a pair whose
// shares stand in the ratio 1 + r (the budget's tie_ratio) moves the cells by about
// r / (2m) of 1/m each, non-centrality n_g r^2 / (2m); n_g = 2m lambda* / r^2 reaches
// power 0.99 at the group's level (stats::noncentrality_for_power), sized on the row's
// most probable group. Groups are combined by Sidak: given every group's total the
// splits are independent multinomials (within a row; rows are drawn apart), so it is
// exact, where Bonferroni's tests * min p piled the p-values at 1 (median 0.66, 1 in
// about half the runs of calibrate on cpu.multinomial).
//
// What a quantised or absorbed noise does (S19, X05): keys of tied tokens coincide and
// the comparison hands the tie to one side, so one id of the group wins too often.
#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>
#include <map>

#include "suites/battery/check_helpers.h"
#include "suites/battery/checks.h"
#include "suites/stats/combine.h"
#include "suites/stats/power.h"

namespace samplecheck::battery {
namespace {

using fixtures::shape;

constexpr size_t kLargestGroup = 16;

struct tie_group {
  std::vector<int32_t> tokens;
  double mass = 0;  // target probability of the group
};

std::vector<tie_group> tied_in_groups(const judged_row& row) {
  const auto& d = row.target.distribution();
  std::map<float, tie_group> by_value;
  for (size_t t = 0; t < row.values.size(); ++t)
    if (d.status[t] == membership::in) {
      auto& g = by_value[row.values[t]];
      g.tokens.push_back(static_cast<int32_t>(t));
      g.mass += d.prob[t];
    }
  std::vector<tie_group> out;
  for (auto& [value, g] : by_value)
    if (g.tokens.size() >= 2 && g.tokens.size() <= kLargestGroup) out.push_back(std::move(g));
  return out;
}

// The tied_groups shape as the subject sees it, logits shifted by `magnitude` (the same
// softmax: raw logits are seldom log-probabilities).
judged_row tied_row(const subject& s, int64_t V, uint64_t seed,
                    const fixtures::filter_setting& setting, float magnitude) {
  judged_row row;
  row.values = fixtures::make_probs(shape::tied_groups, {.vocab_size = V, .seed = seed});
  if (s.is_logits()) {
    row.values = fixtures::probs_to_logits(row.values);
    for (float& z : row.values) z += magnitude;
  }
  row.values = harness::round_to_dtype(std::move(row.values), s.input_dtype);
  row.setting = setting;
  row.label = magnitude == 0
                  ? fmt::format("tied_groups {}", setting.label())
                  : fmt::format("tied_groups logits + {:g} {}", magnitude, setting.label());
  row.target = reference_for(s, row.values, setting);
  return row;
}

// Logit magnitudes: log-probabilities, raw-logit scale (bf16 ulp 1 there), and 2^24
// (float32 ulp 1-2: Gumbel noise added unshifted is absorbed), where the dtype holds it.
std::vector<float> magnitudes(const subject& s) {
  if (!s.is_logits()) return {0.0f};
  if (s.input_dtype == SC_DTYPE_F32) return {0.0f, 160.0f, 16777216.0f};
  return {0.0f, 160.0f};
}

double tie_ratio_seen(int64_t m, double lambda, double n_g) {
  return n_g > 0 ? std::sqrt(2.0 * static_cast<double>(m) * lambda / n_g) : INFINITY;
}

}  // namespace

namespace {
// The tied rows, their IN tie groups and each row's draws at level alpha.
struct tie_split_plan {
  std::vector<judged_row> rows;
  std::string error;  // a fixture row the reference rejected: nothing is drawn
  std::vector<std::vector<tie_group>> groups;
  size_t tests = 0;  // tie groups judged
  double alpha_group = 0;
  std::vector<uint64_t> draws;
  bool capped = false;
};

tie_split_plan plan_tie_split(const check_context& ctx, double alpha, uint64_t seed) {
  tie_split_plan plan;
  const int64_t V = ctx.budget.vocab_size;
  const uint32_t filters =
      ctx.subj.sampler->filters & (ctx.subj.is_logits() ? ~0u : ~SC_FILTER_TEMPERATURE);
  auto& rows = plan.rows;
  for (const float c : magnitudes(ctx.subj))
    for (const auto& setting : fixtures::tied_boundaries(c == 0 ? filters : 0u))
      rows.push_back(tied_row(ctx.subj, V, seed + rows.size(), setting, c));
  if (plan.error = reference_errors(rows); !plan.error.empty()) return plan;
  for (const auto& r : rows) plan.tests += plan.groups.emplace_back(tied_in_groups(r)).size();
  if (plan.tests == 0) return plan;  // nothing to judge, nothing drawn
  const double alpha_group = plan.alpha_group = stats::sidak_level(alpha, plan.tests);
  const auto support_draws =
      static_cast<uint64_t>(std::ceil(std::log(100.0) / ctx.budget.support_rate));
  for (const auto& gs : plan.groups) {
    uint64_t n = support_draws;
    for (const auto& g : gs) {
      const auto m = static_cast<int64_t>(g.tokens.size());
      const double lambda = stats::noncentrality_for_power(m - 1, alpha_group, ctx.budget.power);
      const double n_g =
          2.0 * static_cast<double>(m) * lambda / (ctx.budget.tie_ratio * ctx.budget.tie_ratio);
      if (g.mass == std::max_element(gs.begin(), gs.end(), [](auto& a, auto& b) {
                      return a.mass < b.mass;
                    })->mass)
        n = std::max(n, static_cast<uint64_t>(std::ceil(n_g / g.mass)));
    }
    if (n > ctx.budget.max_draws_per_row) n = ctx.budget.max_draws_per_row, plan.capped = true;
    plan.draws.push_back(n);
  }
  return plan;
}
}  // namespace

uint64_t planned_tie_split(const check_context& ctx, double alpha) {
  return total_draws(plan_tie_split(ctx, alpha, check_seed(ctx.seed, "ties.split")).draws);
}

check_outcome run_tie_split(const check_context& ctx, double alpha) {
  check_outcome out;
  const uint64_t seed = check_seed(ctx.seed, "ties.split");
  const tie_split_plan plan = plan_tie_split(ctx, alpha, seed);
  if (!plan.error.empty()) return harness_failure(plan.error);
  const auto& rows = plan.rows;
  const auto& groups = plan.groups;
  const size_t tests = plan.tests;
  if (tests == 0) {
    out.nothing_to_test = "no tie group is IN in any tied row";
    return out;
  }
  const double alpha_group = plan.alpha_group;
  const auto& draws = plan.draws;
  const bool capped = plan.capped;
  const drawn_counts drawn = draw_counts(ctx.subj, rows, draws, seed, 0);
  out.samples = drawn.samples;
  out.repro = repro_base(seed);
  if (!drawn.failure.empty()) {
    out.exact_failure = true;
    out.detail = drawn.failure;
    out.repro.update(drawn.repro);
    return out;
  }
  for (size_t i = 0; i < rows.size(); ++i)
    if (auto bad = first_out_token(rows[i], drawn.counts[i], drawn.first_out[i], seed)) {
      out.exact_failure = true;
      out.detail = *bad;
      out.repro.update({{"row", rows[i].label},
                        {"params", setting_json(rows[i].setting)},
                        {"token", drawn.first_out[i].token},
                        {"subsequence", drawn.first_out[i].subsequence},
                        {"offset", 0},
                        {"draws_per_row", draws}});
      return out;
    }
  double worst_p = 1.0, best_ratio = INFINITY;
  for (size_t i = 0; i < rows.size(); ++i)
    for (const auto& g : groups[i]) {
      const auto m = static_cast<int64_t>(g.tokens.size());
      uint64_t n_g = 0;
      for (const int32_t t : g.tokens) n_g += drawn.counts[i][static_cast<size_t>(t)];
      const double lambda = stats::noncentrality_for_power(m - 1, alpha_group, ctx.budget.power);
      best_ratio =
          std::min(best_ratio, tie_ratio_seen(m, lambda, static_cast<double>(draws[i]) * g.mass));
      if (n_g == 0) continue;
      const double e = static_cast<double>(n_g) / static_cast<double>(m);
      double x2 = 0;
      std::string cells;
      for (const int32_t t : g.tokens) {
        const double c = static_cast<double>(drawn.counts[i][static_cast<size_t>(t)]);
        x2 += (c - e) * (c - e) / e;
        cells += fmt::format("{}{}:{}", cells.empty() ? "" : " ", t,
                             drawn.counts[i][static_cast<size_t>(t)]);
      }
      const double p = boost::math::cdf(
          boost::math::complement(boost::math::chi_squared(static_cast<double>(m - 1)), x2));
      if (p <= worst_p) {
        worst_p = p;
        out.detail = fmt::format(
            "row '{}': {} tied tokens (token:count {}), {} draws in the group, X2 {:.1f} on {} df, "
            "p {:.2e}",
            rows[i].label, m, cells, n_g, x2, m - 1, p);
        out.repro = repro_base(seed);
        out.repro.update({{"row", rows[i].label},
                          {"params", setting_json(rows[i].setting)},
                          {"tokens", g.tokens},
                          {"subsequences", "one per draw, from 0 in row order"},
                          {"offset", 0},
                          {"draws_per_row", draws}});
      }
    }
  out.p_value = stats::sidak_combine(worst_p, tests);
  out.power = fmt::format("tie ratio {:.3f}{}", 1.0 + best_ratio, capped ? " (draw cap)" : "");
  out.detail = fmt::format("{} tied rows, {} tie groups; worst {}", rows.size(), tests, out.detail);
  return out;
}

}  // namespace samplecheck::battery
