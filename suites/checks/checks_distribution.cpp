// The checks that judge where draws land: support, goodness_of_fit, ties (tail:
// checks_tail.cpp; the fit on rows that goodness_of_fit and ties share: fit_rows.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
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
  // and zipf rows cost it several rounds a draw: docs/judging-power/new-checks.md).
  const auto edges = fixtures::parameter_edges(declared_params(ctx.subj), ctx.budget.vocab_size);
  std::vector<row_spec> edge_rows;  // built together on the host's cores (make_rows)
  for (size_t i = 0; i < edges.size(); ++i)
    edge_rows.push_back(
        {shape::peaked, {.vocab_size = ctx.budget.vocab_size, .seed = seed + 3000 + i}, edges[i]});
  // top_p = 1 - 1e-7 above where the rows' float cumsums end (the tiny tail's additions,
  // under half an ulp of the running sum, are lost): a search for the first cumsum >= p
  // finds none and returns V (S22). Peaked and tiny-tail rows, counted as edges.
  if (declared_params(ctx.subj) & SC_FILTER_TOP_P)
    for (const shape sh : {shape::tiny_tail, shape::peaked})
      edge_rows.push_back({sh,
                           {.vocab_size = ctx.budget.vocab_size, .seed = seed + 4000},
                           {.top_p = 1.0f - 1e-7f}});
  plan.edges = edge_rows.size();
  for (auto& r : make_rows(ctx.subj, edge_rows)) rows.push_back(std::move(r));
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
  // A top-p pivot finer than a search can resolve: at p = 0.99 the exact rule keeps ~78% of
  // the long tail's ~4.6% (tokens at ~1.4e-6), below max / 2^19; a pivot bisected 18 times
  // between min and max (S24, vLLM's Triton top-p) ends above the tail and keeps the head.
  if (declared_params(ctx.subj) & SC_FILTER_TOP_P)
    specs.push_back({shape::long_tail,
                     {.vocab_size = ctx.budget.vocab_size, .seed = seed + 6000},
                     {.top_p = 0.99f}});
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
  const auto rows = ties_at_k_rows(half, ctx.check_seed);
  const route_buckets buckets = bucket_by_route(ctx.subj, rows);
  return planned_tie_split(half, half.alpha_share) + plan_fit(half, rows, &buckets).samples();
}

battery::check_outcome run_ties(const battery::check_context& ctx) {
  if (!ctx.subj.declares(SC_FILTER_TOP_K)) return run_tie_split(ctx, ctx.alpha_share);
  const battery::check_context half = half_share(ctx);
  return combine_halves(run_tie_split(half, half.alpha_share), run_ties_at_k(half));
}

battery::check_outcome run_ties_at_k(const battery::check_context& ctx) {
  const uint64_t seed = ctx.check_seed;
  const std::vector<judged_row> rows = ties_at_k_rows(ctx, seed);
  // A routed subject (ABI 1.5): each draw judged by the tie policy of its call's route.
  const route_buckets buckets = bucket_by_route(ctx.subj, rows);
  return fit_rows(ctx, seed, rows, &buckets);
}

}  // namespace samplecheck::checks
