// The checks that judge where draws land: support, goodness_of_fit, ties (tail:
// checks_tail.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/distribution_tests.h"
#include "suites/checks/parallel_for.h"
#include "suites/checks/report_evidence.h"
#include "suites/stats/combine.h"
#include "suites/stats/power.h"
#include "suites/stats/tail_test.h"

namespace samplecheck::checks {
namespace {

using fixtures::shape;

// Two outcomes of one check on disjoint rows and streams, each judged at half its share:
// an exact failure or harness error of either is the outcome; else Sidak over the two
// p-values, exact for independent halves (so uniform under the null, where doubling the
// smaller one is not).
battery::check_outcome combine_halves(battery::check_outcome a, battery::check_outcome b) {
  for (battery::check_outcome* o : {&a, &b})
    if (o->exact_failure || !o->harness_error.empty()) {
      o->samples = a.samples + b.samples;
      return *o;
    }
  battery::check_outcome out = a.p_value <= b.p_value ? a : b;
  out.p_value = stats::sidak_combine(std::min(a.p_value, b.p_value), 2);
  out.samples = a.samples + b.samples;
  out.power = fmt::format("{}; {}", a.power, b.power);
  out.detail = fmt::format("{} | {}", a.detail, b.detail);
  return out;
}

// The first half alone decides the check when it already fails at its own level (its
// Sidak combination with any second p-value is then below the check's share): a
// sequential stop, so a grossly broken subject is not drawn from twice.
bool first_half_decides(const battery::check_outcome& a, double half_share) {
  return a.exact_failure || !a.harness_error.empty() || a.p_value <= half_share;
}

}  // namespace

namespace {
// support's rows and draws: the grid, the parameter edges and V on both sides of 65,536.
struct support_plan {
  std::vector<judged_row> rows;
  size_t edges = 0;
  std::vector<std::vector<judged_row>> wide;
  uint64_t per_row = 0;
  uint64_t samples() const {
    size_t n = rows.size();
    for (const auto& w : wide) n += w.size();
    return n * per_row;
  }
};

support_plan plan_support(const battery::check_context& ctx, uint64_t seed) {
  support_plan plan;
  auto& rows = plan.rows;
  rows = grid_rows(ctx.subj, ctx.budget, seed, {shape::peaked, shape::zipf},
                   {shape::flat, shape::one_hot, shape::subnormal, shape::tiny_tail});
  // A padded vocabulary: masked tokens fill the last tiles (S17), under every setting.
  for (auto& r : grid_rows(ctx.subj, ctx.budget, seed + 1000, {shape::padded_tail}, {}))
    rows.push_back(std::move(r));
  // Every parameter edge of the declared filters (k = 1..V with the powers of two
  // 256..65,536 and their neighbours, p and min_p near 0 and 1), on the peaked shape:
  // 3% of its mass lies past rank 256, so a k moved up draws OUT tokens at 15x the
  // support rate, and a rejection sampler accepts in its first round on most draws (flat
  // and zipf rows cost it several rounds a draw: docs/judging-power.md).
  const auto edges = fixtures::parameter_edges(declared_params(ctx.subj), ctx.budget.vocab_size);
  plan.edges = edges.size();
  for (size_t i = 0; i < edges.size(); ++i)
    rows.push_back(make_row(ctx.subj, shape::peaked,
                            {.vocab_size = ctx.budget.vocab_size, .seed = seed + 3000 + i},
                            edges[i]));
  // top_p = 1 - 1e-7 above where the rows' float cumsums end (the tiny tail's additions,
  // under half an ulp of the running sum, are lost): a search for the first cumsum >= p
  // finds none and returns V (S22). Peaked and tiny-tail rows, counted as edges.
  if (declared_params(ctx.subj) & SC_FILTER_TOP_P) {
    for (const shape sh : {shape::tiny_tail, shape::peaked})
      rows.push_back(make_row(ctx.subj, sh,
                              {.vocab_size = ctx.budget.vocab_size, .seed = seed + 4000},
                              {.top_p = 1.0f - 1e-7f}));
    plan.edges += 2;
  }
  // V on both sides of 65,536 whatever the budget's V: a fast path switched there is reached.
  plan.wide = wide_vocab_rows(ctx, seed);
  // Draws per row: an OUT rate of support_rate is seen with probability 0.99.
  plan.per_row = static_cast<uint64_t>(std::ceil(std::log(100.0) / ctx.budget.support_rate));
  return plan;
}
}  // namespace

uint64_t planned_support(const battery::check_context& ctx) {
  return plan_support(ctx, ctx.check_seed).samples();
}

battery::check_outcome run_support(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const support_plan plan = plan_support(ctx, seed);
  const auto& rows = plan.rows;
  if (auto e = reference_errors(rows); !e.empty()) return battery::harness_failure(e);
  std::vector<uint64_t> draws(rows.size(), plan.per_row);
  drawn_counts drawn;
  if (!draw_and_check_support(ctx, seed, rows, draws, drawn, out)) return out;
  // V on both sides of 65,536 whatever the budget's V: a fast path switched there is reached.
  size_t wide_rows = 0;
  for (const auto& wide : plan.wide) {
    if (auto e = reference_errors(wide); !e.empty()) return battery::harness_failure(e);
    drawn_counts wide_drawn;
    if (!draw_and_check_support(ctx, seed, wide, std::vector<uint64_t>(wide.size(), plan.per_row),
                                wide_drawn, out))
      return out;
    wide_rows += wide.size();
  }
  out.power = exact_power(draws.front(), "OUT") + " per row";
  out.detail = fmt::format(
      "{} rows at V = {} ({} at the parameter edges) and {} at V = 65,535 / 65,537, x {} draws, "
      "every token IN or BOUNDARY",
      rows.size(), ctx.budget.vocab_size, plan.edges, wide_rows, draws.front());
  return out;
}

// Goodness of fit on one list of rows; shared by goodness_of_fit and ties.
//
// Group-sequential: row i's planned draws n_i are drawn in looks; look j holds
// min(n_i, kFirstLook * 4^j) draws of every row (the last look: all of them), on the
// same subsequences a one-shot draw would use, so the looks are fixed by the plan and
// a replay stops where the run stopped. Alpha spending: the last look is tested at
// (1 - kEarlyShare) of the check's level, each of the J - 1 earlier looks at
// kEarlyShare / (J - 1); the check's p-value is min over looks of p_j / w_j
// (Bonferroni over the looks, so its false-alarm probability stays <= its level
// whatever the looks' dependence). The last look's p / (1 - kEarlyShare) would pile
// 1% of null runs at exactly 1; above 1/2 it is mapped linearly onto [1/2, 1] instead
// (stats::weighted_share_p), so the bound holds at every level up to 1/2 and the p-values stay
// uniform. A look whose p_j / w_j is at or below the planning
// share (the smallest level Holm can compare the check with) ends the check: Holm
// rejects it whatever the others do, and the remaining draws are not spent. A correct
// subject loses 1% of its level and nothing else; a gross defect fails at the first
// look (kFirstLook draws a row).
namespace {
constexpr double kEarlyShare = 0.01;
}  // namespace

fit_plan plan_fit(const battery::check_context& ctx, const std::vector<judged_row>& rows) {
  fit_plan plan;
  if (!reference_errors(rows).empty()) return plan;  // fit_rows reports it; nothing is drawn
  for (const auto& r : rows) plan.testable += gof_testable(r) ? 1 : 0;
  const uint64_t tested = std::max<size_t>(plan.testable, 1);
  const auto support_draws =
      static_cast<uint64_t>(std::ceil(std::log(100.0) / ctx.budget.support_rate));
  // The plan before the looks: the last look's level decides the draws.
  const double level_first = ctx.alpha_share * (1.0 - kEarlyShare);
  for (const auto& r : rows) {
    uint64_t n = support_draws;
    if (gof_testable(r)) {
      const auto row_plan =
          plan_gof_draws(r, stats::sidak_level(level_first, tested), ctx.budget.gof_tvd,
                         ctx.budget.power, ctx.budget.max_draws_per_row);
      n = std::max(n, row_plan.draws);
      plan.capped |= row_plan.capped;
    }
    plan.draws.push_back(n);
  }
  return plan;
}

uint64_t fit_plan::samples() const { return total_draws(draws); }

namespace {

// The looks of a plan: the sizes of those before the last, and each look's share of the
// check's level.
struct look_schedule {
  std::vector<uint64_t> sizes_before_last;
  size_t looks = 1;
  double early_weight = 0.0, last_weight = 1.0;

  bool is_last(size_t look) const { return look + 1 == looks; }
  double weight(size_t look) const { return is_last(look) ? last_weight : early_weight; }
  // A row's draws once look `look` is done: all of them at the last.
  uint64_t target(size_t look, uint64_t planned) const {
    return is_last(look) ? planned : std::min(planned, sizes_before_last[look]);
  }
};

look_schedule schedule_looks(uint64_t most_draws) {
  constexpr uint64_t kFirstLook = 256;
  look_schedule s;
  for (uint64_t l = kFirstLook; l < most_draws; l *= 4) s.sizes_before_last.push_back(l);
  s.looks = s.sizes_before_last.size() + 1;
  s.early_weight = s.looks > 1 ? kEarlyShare / static_cast<double>(s.looks - 1) : 0.0;
  s.last_weight = s.looks > 1 ? 1.0 - kEarlyShare : 1.0;
  return s;
}

// One fit_rows in progress: its plan, its looks and what has been drawn so far.
struct fit_run {
  const battery::check_context& ctx;
  const std::vector<judged_row>& rows;
  uint64_t seed;
  fit_plan plan;
  uint64_t tested = 1;  // the testable rows, at least 1 (Sidak's count)
  uint64_t most = 0;    // the most draws any row plans
  look_schedule schedule{};
  std::vector<uint64_t> first{}, done{};  // each row's first subsequence and its draws so far
  drawn_counts drawn{};
  std::vector<std::vector<size_t>> orders{};  // each row's q order, sorted once for all looks
};

fit_run start_fit(const battery::check_context& ctx, const std::vector<judged_row>& rows,
                  uint64_t seed) {
  fit_run f{ctx, rows, seed, plan_fit(ctx, rows)};
  f.tested = std::max<size_t>(f.plan.testable, 1);
  f.most = *std::max_element(f.plan.draws.begin(), f.plan.draws.end());
  f.schedule = schedule_looks(f.most);
  f.first.assign(rows.size(), 0);
  f.done.assign(rows.size(), 0);
  for (size_t i = 1; i < rows.size(); ++i) f.first[i] = f.first[i - 1] + f.plan.draws[i - 1];
  f.drawn = empty_counts(rows);
  f.orders.resize(rows.size());
  parallel_for(rows.size(), [&](size_t i) {
    if (gof_testable(rows[i]) && rows[i].target.distribution().num_in >= 2)
      f.orders[i] = in_probs_order(rows[i]);
  });
  return f;
}

// Draws every row up to its size at `look`; false (`out` failed exactly) when a call
// fails or a row drew an OUT token.
bool draw_look(fit_run& f, size_t look, battery::check_outcome& out) {
  const size_t n = f.rows.size();
  std::vector<uint64_t> from(n), more(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t target = f.schedule.target(look, f.plan.draws[i]);
    from[i] = f.first[i] + f.done[i];
    more[i] = target - f.done[i];
    f.done[i] = target;
  }
  const uint64_t before = f.drawn.samples;
  draw_more(f.ctx.subj, f.rows, from, more, f.seed, f.drawn);
  out.samples += f.drawn.samples - before;
  return !report_support_failure(
      f.rows, f.drawn, f.seed,
      {{"draws_per_row", f.plan.draws},
       {"look", look + 1},
       {"looks", f.schedule.looks},
       {"draws_per_row_at_look", f.done},
       {"subsequences", "row i from the sum of the planned draws of rows < i"}},
      out);
}

// What one look found: its p-value (p / w), the row with the smallest row p-value and its
// detail, and the largest TVD the rows detect (the last look's only).
struct look_result {
  double p_look = 1.0;
  std::string detail;
  size_t row = 0;
  double worst_power = 0.0;
};

look_result judge_look(const fit_run& f, size_t look) {
  // Null replicates per row at the last look (stats/row_tests.h): the row's p-value is
  // exactly uniform above 1 / (B + 1).
  constexpr uint32_t kBodyReplicates = 19;
  const bool last = f.schedule.is_last(look);
  const double weight = f.schedule.weight(look);
  const double alpha_row = stats::sidak_level(f.ctx.alpha_share * weight, f.tested);
  // Row i's randomisation stream 1 + i: independent rows stay independent (Sidak).
  // The body of the p-value matters at the last look only (an earlier look's p / w
  // is 1 above 1%), so only there is it calibrated by Monte Carlo.
  const uint32_t replicates = last ? kBodyReplicates : 0;
  std::vector<std::optional<row_fit>> row_fits(f.rows.size());
  parallel_for(f.rows.size(), [&](size_t i) {
    if (gof_testable(f.rows[i]))
      row_fits[i] = fit_row(f.rows[i], f.drawn.counts[i], alpha_row, f.ctx.budget.power, f.seed,
                            1 + i, replicates, f.orders[i]);
  });
  look_result r;
  double p_min = 1.0;
  std::vector<row_fit> fits;
  for (size_t i = 0; i < f.rows.size(); ++i) {
    if (!row_fits[i]) continue;
    const row_fit& fit = *row_fits[i];
    if (last) r.worst_power = std::max(r.worst_power, fit.detectable_tvd);
    if (fit.p_value <= p_min) {
      p_min = fit.p_value;
      r.detail = fit.detail;
      r.row = i;
    }
    fits.push_back(fit);
  }
  // The last look's rows by one Monte Carlo over them all (exactly uniform above
  // 1 / (B + 1)); an earlier look's p / w matters only far below that, so Sidak.
  const double p_rows =
      last ? combine_last_look(fits, f.seed, 0) : stats::sidak_combine(p_min, f.tested);
  r.p_look = last ? stats::weighted_share_p(p_rows, weight) : std::min(1.0, p_rows / weight);
  return r;
}

// The check's verdict over its looks: the smallest p_look, its row, and where it stopped.
struct fit_verdict {
  double p_check = 1.0, worst_power = 0.0;
  std::string worst_detail;
  size_t worst_row = 0, stop_look = 0;
};

battery::check_outcome fit_outcome(const fit_run& f, const fit_verdict& v,
                                   battery::check_outcome out) {
  const size_t looks = f.schedule.looks;
  const auto& rows = f.rows;
  out.p_value = v.p_check;
  if (v.stop_look < looks) {
    out.power = fmt::format("stopped at look {} of {}", v.stop_look, looks);
  } else {
    out.power = fmt::format("TVD {:.3f}{}", v.worst_power, f.plan.capped ? " (draw cap)" : "");
  }
  out.detail = fmt::format(
      "{} rows ({} tested), look {} of {} ({} draws a row at most of {} planned); worst {}",
      rows.size(), f.plan.testable, std::min(v.stop_look, looks), looks,
      *std::max_element(f.done.begin(), f.done.end()), f.most, v.worst_detail);
  out.repro = repro_base(f.seed);
  out.repro.update(
      {{"row", rows[v.worst_row].label},
       {"params", setting_json(rows[v.worst_row].setting)},
       {"seed", f.seed},
       {"offset", 0},
       {"subsequences", "one per draw; row i from the sum of the planned draws of rows < i"},
       {"draws_per_row", f.plan.draws},
       {"look", std::min(v.stop_look, looks)},
       {"looks", looks},
       {"draws_per_row_at_look", f.done}});
  out.repro["row_data"] = row_data(rows[v.worst_row], v.worst_row, f.done[v.worst_row]);
  if (v.p_check <= kFitEvidenceBelow)
    out.repro["fit"] =
        fit_evidence(rows[v.worst_row], f.drawn.counts[v.worst_row],
                     stats::sidak_level(f.ctx.alpha_share * f.schedule.last_weight, f.tested));
  return out;
}

}  // namespace

battery::check_outcome fit_rows(const battery::check_context& ctx, uint64_t seed,
                                const std::vector<judged_row>& rows) {
  battery::check_outcome out;
  if (auto e = reference_errors(rows); !e.empty()) return battery::harness_failure(e);
  fit_run f = start_fit(ctx, rows, seed);
  fit_verdict v;
  v.stop_look = f.schedule.looks;
  for (size_t look = 0; look < f.schedule.looks; ++look) {
    if (!draw_look(f, look, out)) return out;
    const look_result r = judge_look(f, look);
    if (f.schedule.is_last(look)) v.worst_power = r.worst_power;
    if (r.p_look <= v.p_check) {
      v.p_check = r.p_look;
      v.worst_detail = r.detail;
      v.worst_row = r.row;
    }
    if (!f.schedule.is_last(look) && r.p_look <= ctx.alpha_share) {
      v.stop_look = look + 1;
      break;
    }
  }
  return fit_outcome(f, v, std::move(out));
}

namespace {
std::vector<judged_row> goodness_of_fit_rows(const battery::check_context& ctx, uint64_t seed) {
  auto rows = grid_rows(ctx.subj, ctx.budget, seed, {shape::peaked, shape::zipf}, {shape::flat});
  // Beside the fixed grid, settings drawn from the run seed (CCCL's habit), on zipf.
  const auto drawn = fixtures::drawn_settings(declared_params(ctx.subj), ctx.budget.vocab_size,
                                              seed, ctx.budget.drawn_rows);
  std::vector<row_spec> specs;
  for (size_t i = 0; i < drawn.size(); ++i)
    specs.push_back(
        {shape::zipf, {.vocab_size = ctx.budget.vocab_size, .seed = seed + 5000 + i}, drawn[i]});
  for (auto& row : make_rows(ctx.subj, specs)) rows.push_back(std::move(row));
  return rows;
}

// Half the share on the budget's V, half on V = 65,537 (the other side of 65,536).
battery::check_context half_share(const battery::check_context& ctx) {
  battery::check_context half = ctx;
  half.alpha_share /= 2;
  return half;
}
}  // namespace

uint64_t planned_goodness_of_fit(const battery::check_context& ctx) {
  const uint64_t seed = ctx.check_seed;
  const battery::check_context half = half_share(ctx);
  const auto wide = wide_vocab_rows(ctx, seed);
  return plan_fit(half, goodness_of_fit_rows(ctx, seed)).samples() +
         (wide.empty() ? 0 : plan_fit(half, wide.back()).samples());
}

battery::check_outcome run_goodness_of_fit(const battery::check_context& ctx) {
  const uint64_t seed = ctx.check_seed;
  const auto rows = goodness_of_fit_rows(ctx, seed);
  const battery::check_context half = half_share(ctx);
  battery::check_outcome main = fit_rows(half, seed, rows);
  // Without the wide rows (budget.wide_vocab off) the main half stands alone, at the same
  // half share and combination, so the level is the one the full plan has.
  if (!ctx.budget.wide_vocab || first_half_decides(main, half.alpha_share)) {
    if (!main.exact_failure) main.p_value = stats::sidak_combine(main.p_value, 2);
    return main;
  }
  auto wide = wide_vocab_rows(ctx, seed);
  return combine_halves(std::move(main), fit_rows(half, seed + 1, wide.back()));
}

// Ties apply to every sampler: exact ties must be split evenly whatever it declares.
std::string ties_not_applicable(const battery::subject&, const battery::subject_lookup&) {
  return "";
}

namespace {
std::vector<judged_row> ties_at_k_rows(const battery::check_context& ctx, uint64_t seed) {
  std::vector<judged_row> rows;
  // The tie group of 4 equal values straddles rank k: lowest_index keeps some of it,
  // keep_ties all of it; either way the reference (with the declared policy) knows.
  for (const int32_t k : {2, 3, 5, 9})
    rows.push_back(make_row(ctx.subj, shape::ties_at_k,
                            {.vocab_size = ctx.budget.vocab_size, .seed = seed + k, .tie_k = k},
                            {.top_k = k}));
  return rows;
}
}  // namespace

// Half the share each, with top-k: the tie policy at the k-th and the even split.
uint64_t planned_ties(const battery::check_context& ctx) {
  if (!ctx.subj.declares(SC_FILTER_TOP_K)) return planned_tie_split(ctx, ctx.alpha_share);
  const battery::check_context half = half_share(ctx);
  return planned_tie_split(half, half.alpha_share) +
         plan_fit(half, ties_at_k_rows(half, ctx.check_seed)).samples();
}

battery::check_outcome run_ties(const battery::check_context& ctx) {
  if (!ctx.subj.declares(SC_FILTER_TOP_K)) return run_tie_split(ctx, ctx.alpha_share);
  const battery::check_context half = half_share(ctx);
  return combine_halves(run_tie_split(half, half.alpha_share), run_ties_at_k(half));
}

battery::check_outcome run_ties_at_k(const battery::check_context& ctx) {
  const uint64_t seed = ctx.check_seed;
  std::vector<judged_row> rows = ties_at_k_rows(ctx, seed);
  // A routed subject (ABI 1.5): each row judged by the tie policy of the route it takes.
  if (std::string probe = assign_routes(ctx.subj, rows, seed); !probe.empty())
    return battery::exact_failure(probe);
  return fit_rows(ctx, seed, rows);
}

battery::check_definition support_check() {
  return {"support",
          battery::subject_kind::sampler,
          battery::check_kind::exact,
          0,
          "no OUT token, no id outside [0, V), no valid = 0 on a valid row",
          {},
          run_support,
          planned_support};
}

battery::check_definition goodness_of_fit_check() {
  return {"goodness_of_fit",
          battery::subject_kind::sampler,
          battery::check_kind::statistical,
          4,
          "chi-square, cumulative-mass cuts and single tokens on the IN-conditional distribution, "
          "BOUNDARY count "
          "in range; Sidak-combined, group-sequential looks",
          {},
          run_goodness_of_fit,
          planned_goodness_of_fit};
}

battery::check_definition ties_check() {
  return {"ties",
          battery::subject_kind::sampler,
          battery::check_kind::statistical,
          1,
          "exact ties split evenly among tied tokens in every row; ties at the k-th follow the "
          "declared tie policy",
          ties_not_applicable,
          run_ties,
          planned_ties};
}

}  // namespace samplecheck::checks
