// The tail check: the mass a subject draws from far below the top of a row.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/distribution_tests.h"
#include "suites/checks/report_evidence.h"
#include "suites/stats/combine.h"
#include "suites/stats/power.h"
#include "suites/stats/tail_test.h"

namespace samplecheck::checks {

using fixtures::shape;

namespace {
// tail's rows, the mass each holds below the threshold, and the draws each needs.
struct tail_plan {
  std::vector<judged_row> rows;
  std::string error;  // a fixture row the reference rejected: nothing is drawn
  std::vector<double> tail_mass;
  uint64_t tested = 1;
  double alpha_row = 0;
  std::vector<uint64_t> draws;
  bool capped = false;
};

tail_plan plan_tail(const battery::check_context& ctx, uint64_t seed) {
  tail_plan plan;
  plan.rows = grid_rows(ctx.subj, ctx.budget, seed, {}, {shape::tiny_tail, shape::subnormal});
  if (plan.error = reference_errors(plan.rows); !plan.error.empty()) return plan;
  // Sidak over the rows whose tail holds mass: a row without any (an fp16 tail that
  // underflowed) can only fail exactly (a draw there has p 0), and counting it would
  // push every p-value up (p ~ 1 - (1 - p_1)^2: median 0.8 in calibrate).
  for (const auto& r : plan.rows) {
    const auto& d = r.target.distribution();
    double q_tail = 0;
    for (size_t t = 0; t < d.prob.size(); ++t)
      if (d.prob[t] < stats::kDefaultTailThreshold) q_tail += d.prob[t];
    plan.tail_mass.push_back(q_tail);
  }
  const auto& tail_mass = plan.tail_mass;
  plan.tested = static_cast<uint64_t>(std::max<std::ptrdiff_t>(
      1, std::count_if(tail_mass.begin(), tail_mass.end(), [](double m) { return m > 0; })));
  const double alpha_row = plan.alpha_row = stats::sidak_level(ctx.alpha_share, plan.tested);
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    const double q_tail = tail_mass[i];
    // Enough draws that, each with probability 0.99, (a) an excess of tail_shift is
    // detected and (b) a row keeping tail_kept of its tail mass or less is (so losing all
    // of it, S11 and S13, always is: P(count = 0) <= alpha / 2).
    const auto enough = [&](uint64_t n) {
      if (stats::detectable_mass_shift(n, q_tail, alpha_row, ctx.budget.power) >
          ctx.budget.tail_shift)
        return false;
      return q_tail == 0 || stats::detectable_mass_loss(n, q_tail, alpha_row, ctx.budget.power) <=
                                (1 - ctx.budget.tail_kept) * q_tail;
    };
    uint64_t lo = 64, hi = ctx.budget.max_draws_per_row;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (enough(mid))
        hi = mid;
      else
        lo = mid + 1;
    }
    uint64_t n = enough(lo) ? lo : ctx.budget.max_draws_per_row + 1;
    if (n > ctx.budget.max_draws_per_row) {
      n = ctx.budget.max_draws_per_row;
      plan.capped = true;
    }
    plan.draws.push_back(n);
  }
  return plan;
}
}  // namespace

uint64_t planned_tail(const battery::check_context& ctx) {
  return total_draws(plan_tail(ctx, ctx.check_seed).draws);
}

namespace {

// A tail the planned draws could lose entirely without notice gives the check nothing to
// judge: n/a with the reason, never a pass. Empty: the tail is testable.
std::string tail_not_testable(const battery::check_context& ctx, const tail_plan& plan) {
  const auto& tail_mass = plan.tail_mass;
  const auto& draws = plan.draws;
  double min_lossless = 1.0;
  for (size_t i = 0; i < plan.rows.size(); ++i)
    min_lossless =
        std::min(min_lossless, std::exp(static_cast<double>(draws[i]) * std::log1p(-tail_mass[i])));
  const double most = *std::max_element(tail_mass.begin(), tail_mass.end());
  if (most == 0)
    return fmt::format("no token of the tail rows is below {:g} at V = {} in {}",
                       stats::kDefaultTailThreshold, ctx.budget.vocab_size,
                       harness::dtype_name(ctx.subj.input_dtype));
  if (min_lossless > plan.alpha_row / 2)
    return fmt::format(
        "at V = {} the tail rows carry at most {:.2g} of mass below {:g}: {} draws a row (the cap) "
        "could lose it all "
        "unseen",
        ctx.budget.vocab_size, most, stats::kDefaultTailThreshold,
        *std::max_element(draws.begin(), draws.end()));
  return {};
}

// The record: where the draws were, and the worst row with its tail set and its first
// request, for the standalone script (docs/repro-format.md).
nlohmann::json tail_record(const tail_plan& plan, const drawn_counts& drawn, size_t worst,
                           uint64_t seed) {
  const judged_row& row = plan.rows[worst];
  nlohmann::json r = repro_base(seed);
  r.update({{"row", row.label},
            {"params", setting_json(row.setting)},
            {"seed", seed},
            {"offset", 0},
            {"subsequences", "one per draw, from 0 in row order"},
            {"draws_per_row", plan.draws}});
  r["row_data"] = row_data(row, worst, plan.draws[worst]);
  r["first_subsequence"] = first_subsequences(plan.draws)[worst];
  r["tail"] = tail_set(row, stats::tail_test(drawn.counts[worst], row.target.distribution().prob));
  return r;
}

}  // namespace

battery::check_outcome run_tail(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const tail_plan plan = plan_tail(ctx, seed);
  if (!plan.error.empty()) return battery::harness_failure(plan.error);
  const auto& rows = plan.rows;
  const auto& draws = plan.draws;
  const double alpha_row = plan.alpha_row;
  out.nothing_to_test = tail_not_testable(ctx, plan);
  if (!out.nothing_to_test.empty()) return out;
  drawn_counts drawn;
  if (!draw_and_check_support(ctx, seed, rows, draws, drawn, out)) return out;
  double worst_p = 1.0, worst_shift = 0.0, worst_kept = 1.0;
  size_t worst_row = 0;
  nlohmann::json tail_rows = nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& d = rows[i].target.distribution();
    const auto t = stats::tail_test(drawn.counts[i], d.prob);
    tail_rows.push_back(tail_evidence(rows[i], t, alpha_row));
    worst_shift = std::max(worst_shift, stats::detectable_mass_shift(t.n, t.expected_mass,
                                                                     alpha_row, ctx.budget.power));
    if (t.expected_mass > 0)
      worst_kept = std::min(worst_kept, 1 - stats::detectable_mass_loss(
                                                t.n, t.expected_mass, alpha_row, ctx.budget.power) /
                                                t.expected_mass);
    if (t.p_value <= worst_p) {
      worst_p = t.p_value;
      worst_row = i;
      out.detail = fmt::format(
          "row '{}': {} of {} draws on the {} tokens below {:g} (expected mass {:.3g}, seen "
          "{:.3g}), p {:.2e}",
          rows[i].label, t.count, t.n, t.tokens, t.threshold, t.expected_mass, t.observed_fraction,
          t.p_value);
    }
  }
  out.p_value = stats::sidak_combine(worst_p, plan.tested);
  if (!sends_unnormalised_rows(ctx.subj))
    out.detail +=
        "; the subnormal row (FTZ, S13) not sent: the subject declares "
        "probs_normalisation assume_sum_one, and the row sums to ~6e-37";
  // "kept": a row keeping at most this fraction of its tail mass is detected with the
  // budget's power (the worst row; 0 where only losing all of it is certain to be seen).
  out.power = fmt::format("tail +{:.1e}, kept {:.2g}{}", worst_shift, std::max(worst_kept, 0.0),
                          plan.capped ? " (draw cap)" : "");
  out.repro = tail_record(plan, drawn, worst_row, seed);
  out.repro["tail_rows"] = tail_rows;
  return out;
}

}  // namespace samplecheck::checks
