// The tie-split half of the ties check: exact ties inside the support must be split
// evenly among the tied tokens, in every row a sampler takes (unfiltered, top-k, top-p,
// min-p, temperature, and logits at large magnitudes), whatever it declares.
//
// A group is the IN tokens of a row that hold one exact input value. Given n_g draws in
// the group, their counts are multinomial with equal cells under the null.
//  - Small groups (2 to 16 tokens: the pair and the quartet of the tied_groups rows): the
//    Pearson statistic, chi-square with m - 1 degrees of freedom. A pair whose shares
//    stand in the ratio 1 + r (the budget's tie_ratio) moves the cells by about r / (2m)
//    of 1/m each, non-centrality n_g r^2 / (2m); n_g = 2m lambda* / r^2 reaches power
//    0.99 at the test's level (stats::noncentrality_for_power).
//  - Large groups (more than 16, up to the whole row: the flat tail of V - 6 tokens of
//    the tied_groups rows, and a flat row of tie_flat_vocab equal values): 7 dyadic
//    splits of the group's ids (tie_splits.h), each a randomised binomial test. The flat
//    row is sized so that halves in the ratio 1 + tie_halves_ratio are detected with
//    probability 0.99, drawn in copies of at most the per-row cap whose counts are
//    pooled; the tails are judged at the draws their rows have.
// A tied row is sized on its most probable small group. Every Pearson statistic and
// every split is one test of the check's Sidak: given every group's total the groups'
// splits are independent multinomials (within a row; rows are drawn apart), and given a
// node's count its splits are independent binomials, so the level is shared evenly, a
// large group taking 7 tests' worth of it and a small group one (cpu.gumbel_logits in
// f32: 4 tied rows of a pair, a quartet and a tail, and the flat row: 8 + 35 = 43 tests,
// the large groups 35/43 of the share). Bonferroni's tests * min p piled the p-values at
// 1 (median 0.66); Sidak is exact.
//
// A routed subject (ABI 1.5) may take routes of different tie policies for one row, call by
// call (the route follows what else the call holds). Each draw is judged by the route its
// own call reported: a row whose routes' policies give it different references is judged as
// one bucket per reference (bucket_by_route), each draw counted in its route's bucket, each
// bucket's groups against its own reference (a token OUT under its route's policy fails
// exactly). The routes follow the calls' inputs, not their draws, so given each bucket's
// total the buckets are independent multinomials and the Sidak above stays exact over every
// bucket's groups; the family is every bucket's groups, fixed from the rows before drawing
// (a bucket no draw reaches keeps its share and shows nothing). A row drawn on one route
// only is sized for that route's bucket (each row's draws are the most its buckets need).
//
// What a quantised or absorbed noise does (S19, X05, X10): keys of tied tokens coincide
// and the comparison hands the tie to one side, so one id of a small group wins too
// often, and in a large group the lower ids do. X10 (Gumbel noise rounded to bf16) ties
// the top two keys of the flat row on a few percent of draws, a halves ratio of about
// 1.03: the quick budget's tie_halves_ratio is set to catch it (its p-values and the
// command: docs/mutants.md, docs/judging-power/new-checks.md).
#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/report_evidence.h"
#include "suites/checks/tie_splits.h"
#include "suites/stats/combine.h"
#include "suites/stats/power.h"

namespace samplecheck::checks {
namespace {

using fixtures::shape;

constexpr size_t kLargestSmallGroup = 16;

struct tie_group {
  std::vector<int32_t> tokens;  // ascending id
  double mass = 0;              // target probability of the group
  bool large() const { return tokens.size() > kLargestSmallGroup; }
  uint64_t tests() const { return large() ? kSplitsPerGroup : 1; }
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
    if (g.tokens.size() >= 2) out.push_back(std::move(g));
  return out;
}

// Probabilities `probs` as the subject sees them (logits: their logs, shifted by
// `magnitude`: the same softmax, raw logits are seldom log-probabilities).
judged_row subject_row(const battery::subject& s, std::vector<float> probs,
                       const fixtures::filter_setting& setting, float magnitude,
                       std::string label) {
  judged_row row;
  row.values = std::move(probs);
  if (s.is_logits()) {
    row.values = fixtures::probs_to_logits(row.values);
    for (float& z : row.values) z += magnitude;
  }
  row.values = harness::round_to_dtype(std::move(row.values), s.input_dtype);
  row.setting = setting;
  row.label = std::move(label);
  row.target = reference_for(s, row.values, setting);
  return row;
}

// The tied_groups shape, logits shifted by `magnitude`.
judged_row tied_row(const battery::subject& s, int64_t V, uint64_t seed,
                    const fixtures::filter_setting& setting, float magnitude) {
  return subject_row(s, fixtures::make_probs(shape::tied_groups, {.vocab_size = V, .seed = seed}),
                     setting, magnitude,
                     magnitude == 0
                         ? fmt::format("tied_groups {}", setting.label())
                         : fmt::format("tied_groups logits + {:g} {}", magnitude, setting.label()));
}

// Logit magnitudes: log-probabilities, raw-logit scale (bf16 ulp 1 there), and 2^24
// (float32 ulp 1-2: Gumbel noise added unshifted is absorbed), where the dtype holds it.
std::vector<float> magnitudes(const battery::subject& s) {
  if (!s.is_logits()) return {0.0f};
  if (s.input_dtype == SC_DTYPE_F32) return {0.0f, 160.0f, 16777216.0f};
  return {0.0f, 160.0f};
}

double tie_ratio_seen(int64_t m, double lambda, double n_g) {
  return n_g > 0 ? std::sqrt(2.0 * static_cast<double>(m) * lambda / n_g) : INFINITY;
}

// Draws that give the small group `g` its planned power at the test level alpha_test.
double group_draws(const tie_group& g, const battery::budget_settings& b, double alpha_test) {
  const auto m = static_cast<int64_t>(g.tokens.size());
  const double lambda = stats::noncentrality_for_power(m - 1, alpha_test, b.power);
  return 2.0 * static_cast<double>(m) * lambda / (b.tie_ratio * b.tie_ratio);
}

// The tied rows, their buckets (bucket_by_route), each bucket's IN tie groups and each
// row's draws at level alpha.
struct tie_split_plan {
  std::vector<judged_row> rows;
  route_buckets buckets;
  std::string error;  // a fixture row the reference rejected: nothing is drawn
  std::vector<std::vector<tie_group>> groups;  // per bucket
  uint64_t tests = 0;                          // Pearson statistics and splits judged
  double alpha_test = 0;
  std::vector<uint64_t> draws;  // per row
  bool capped = false;
  // The flat row at budget.tie_flat_vocab, one group of all its tokens, drawn in as many
  // copies as the per-row cap needs (their counts pooled), on the subsequences after the
  // tied rows' (its own list: a call holds one V). Unfiltered, so every route's reference
  // is the same: one bucket a copy.
  std::vector<judged_row> flat_rows;
  route_buckets flat_buckets;
  std::vector<uint64_t> flat_draws;
  tie_group flat_group;
};

// The flat row's copies and draws: halves in the ratio 1 + tie_halves_ratio detected.
void plan_flat(const battery::check_context& ctx, tie_split_plan& plan) {
  const uint64_t n = halves_draws(ctx.budget.tie_halves_ratio, plan.alpha_test, ctx.budget.power);
  const uint64_t cap = ctx.budget.max_draws_per_row;
  const uint64_t copies = (n + cap - 1) / cap;
  const int64_t V = ctx.budget.tie_flat_vocab;
  for (uint64_t c = 0; c < copies; ++c) {
    plan.flat_rows.push_back(subject_row(
        ctx.subj, std::vector<float>(static_cast<size_t>(V), 1.0f / static_cast<float>(V)), {},
        0.0f, fmt::format("flat, {} equal values, copy {} of {}", V, c + 1, copies)));
    plan.flat_draws.push_back(n / copies + (c < n % copies ? 1 : 0));
  }
  plan.flat_buckets = bucket_by_route(ctx.subj, plan.flat_rows);
  if (plan.flat_buckets.rows.size() != plan.flat_rows.size())
    plan.error = "harness: the flat row's routes gave it more than one reference";
}

// Each row's draws: the most any of its buckets needs, so that a row whose draws all take
// one route has that bucket's planned power there (the support rate's draws at least).
void plan_row_draws(const battery::check_context& ctx, tie_split_plan& plan) {
  const auto support_draws =
      static_cast<uint64_t>(std::ceil(std::log(100.0) / ctx.budget.support_rate));
  plan.draws.assign(plan.rows.size(), support_draws);
  for (size_t b = 0; b < plan.buckets.rows.size(); ++b) {
    const auto& gs = plan.groups[b];
    // Sized on the most probable small group (a tail is judged at the draws this gives).
    const auto top = std::max_element(gs.begin(), gs.end(), [](auto& x, auto& y) {
      return (x.large() ? 0.0 : x.mass) < (y.large() ? 0.0 : y.mass);
    });
    if (top == gs.end() || top->large()) continue;
    const auto n = static_cast<uint64_t>(
        std::ceil(group_draws(*top, ctx.budget, plan.alpha_test) / top->mass));
    uint64_t& row = plan.draws[plan.buckets.input[b]];
    row = std::max(row, n);
  }
  for (uint64_t& n : plan.draws)
    if (n > ctx.budget.max_draws_per_row) n = ctx.budget.max_draws_per_row, plan.capped = true;
}

// The family is every bucket's groups and the flat row's, fixed by the rows before any draw:
// a bucket no draw reaches adds no evidence but keeps its share of the level.
tie_split_plan plan_tie_split(const battery::check_context& ctx, double alpha, uint64_t seed) {
  tie_split_plan plan;
  const int64_t V = ctx.budget.vocab_size;
  const uint32_t filters =
      ctx.subj.sampler->filters & (ctx.subj.is_logits() ? ~0u : ~SC_FILTER_TEMPERATURE);
  auto& rows = plan.rows;
  for (const float c : magnitudes(ctx.subj))
    for (const auto& setting : fixtures::tied_boundaries(c == 0 ? filters : 0u))
      rows.push_back(tied_row(ctx.subj, V, seed + rows.size(), setting, c));
  if (plan.error = reference_errors(rows); !plan.error.empty()) return plan;
  plan.buckets = bucket_by_route(ctx.subj, rows);
  if (plan.error = reference_errors(plan.buckets.rows); !plan.error.empty()) return plan;
  for (const auto& r : plan.buckets.rows)
    for (const auto& g : plan.groups.emplace_back(tied_in_groups(r))) plan.tests += g.tests();
  // The whole row one tie group, where keys of a quantised noise collide most.
  for (int32_t t = 0; t < ctx.budget.tie_flat_vocab; ++t) plan.flat_group.tokens.push_back(t);
  plan.flat_group.mass = 1.0;
  plan.tests += plan.flat_group.tests();
  plan.alpha_test = stats::sidak_level(alpha, plan.tests);
  plan_flat(ctx, plan);
  if (!plan.error.empty()) return plan;
  if (plan.error = reference_errors(plan.flat_rows); !plan.error.empty()) return plan;
  plan_row_draws(ctx, plan);
  return plan;
}

// One group's verdict: its smallest p-value (Pearson, or the worst split), what shows it,
// and its cells against the even split for the report's plot (tie_cell).
struct group_verdict {
  double p = 1;
  std::string detail;
  nlohmann::json cells = nlohmann::json::array();
};

// A small group's cells are its tokens, each with an interval at level alpha_test / m.
group_verdict judge_small_group(const tie_group& g, const std::vector<uint64_t>& counts,
                                double alpha_test) {
  const auto m = static_cast<int64_t>(g.tokens.size());
  uint64_t n_g = 0;
  for (const int32_t t : g.tokens) n_g += counts[static_cast<size_t>(t)];
  if (n_g == 0) return {};
  const double e = static_cast<double>(n_g) / static_cast<double>(m);
  double x2 = 0;
  std::string cells;
  for (const int32_t t : g.tokens) {
    const double c = static_cast<double>(counts[static_cast<size_t>(t)]);
    x2 += (c - e) * (c - e) / e;
    cells += fmt::format("{}{}:{}", cells.empty() ? "" : " ", t, counts[static_cast<size_t>(t)]);
  }
  const double p = boost::math::cdf(
      boost::math::complement(boost::math::chi_squared(static_cast<double>(m - 1)), x2));
  nlohmann::json plotted = nlohmann::json::array();
  for (const int32_t t : g.tokens)
    plotted.push_back(tie_cell(fmt::format("id {}", t), counts[static_cast<size_t>(t)], n_g,
                               1.0 / static_cast<double>(m), alpha_test / static_cast<double>(m)));
  return {p,
          fmt::format("{} tied tokens (token:count {}), {} draws in the group, X2 {:.1f} on {} "
                      "df, p {:.2e}",
                      m, cells, n_g, x2, m - 1, p),
          std::move(plotted)};
}

// A large group's cells are the two sides of its worst split, at level alpha_test.
group_verdict judge_large_group(const tie_group& g, const std::vector<uint64_t>& counts,
                                uint64_t seed, uint64_t stream, double alpha_test) {
  std::vector<uint64_t> in_group;
  for (const int32_t t : g.tokens) in_group.push_back(counts[static_cast<size_t>(t)]);
  const auto splits = dyadic_splits(in_group, seed, stream);
  const auto worst = std::min_element(splits.begin(), splits.end(),
                                      [](auto& a, auto& b) { return a.p_value < b.p_value; });
  const auto ids = [&](size_t a, size_t e) {
    return fmt::format("ids {}-{}", g.tokens[a], g.tokens[e - 1]);
  };
  const double lower_share = static_cast<double>(worst->middle - worst->first) /
                             static_cast<double>(worst->end - worst->first);
  nlohmann::json cells = {tie_cell(ids(worst->first, worst->middle), worst->lower, worst->total,
                                   lower_share, alpha_test),
                          tie_cell(ids(worst->middle, worst->end), worst->total - worst->lower,
                                   worst->total, 1.0 - lower_share, alpha_test)};
  return {
      worst->p_value,
      fmt::format("{} tied tokens, {} draws in the group, worst of {} splits: {}", g.tokens.size(),
                  splits.front().total, splits.size(), format_split(*worst, g.tokens)),
      std::move(cells)};
}

// The power string: the tie ratio of the small groups and the halves ratio of the flat
// row detected with probability 0.99 at the test level, each bucket at the draws it got
// (the tied rows' tails get what their rows' draws give, reported in the detail).
std::string tie_split_power(const tie_split_plan& plan, const drawn_counts& drawn,
                            const battery::budget_settings& b) {
  double small = INFINITY;
  for (size_t i = 0; i < plan.buckets.rows.size(); ++i) {
    const double n = static_cast<double>(total_draws(drawn.counts[i]));
    for (const auto& g : plan.groups[i]) {
      if (g.large()) continue;
      const auto m = static_cast<int64_t>(g.tokens.size());
      const double lambda = stats::noncentrality_for_power(m - 1, plan.alpha_test, b.power);
      small = std::min(small, tie_ratio_seen(m, lambda, n * g.mass));
    }
  }
  const double halves = halves_ratio_seen(total_draws(plan.flat_draws), plan.alpha_test, b.power);
  return fmt::format("tie ratio {:.3f}, halves ratio {:.3f} (flat V {}){}", 1.0 + small,
                     1.0 + halves, b.tie_flat_vocab, plan.capped ? " (draw cap)" : "");
}
}  // namespace

uint64_t planned_tie_split(const battery::check_context& ctx, double alpha) {
  const auto plan = plan_tie_split(ctx, alpha, battery::check_seed(ctx.seed, "ties.split"));
  return total_draws(plan.draws) + total_draws(plan.flat_draws);
}

namespace {
// The exact failure of a drawing failure or an OUT token (of a bucket's reference: its
// route's tie policy); false when the draws are clean. `draws` per input row, drawn from
// subsequence `base` on (the flat copies after the tied rows).
bool tie_split_exact_failure(const route_buckets& buckets, const std::vector<uint64_t>& draws,
                             uint64_t base, const drawn_counts& drawn, uint64_t seed,
                             battery::check_outcome& out) {
  if (!drawn.failure.empty()) {
    battery::fail_exactly(out, drawn.failure);
    out.repro.update(drawn.repro);
    return true;
  }
  const auto& rows = buckets.rows;
  for (size_t i = 0; i < rows.size(); ++i)
    if (auto bad = first_out_token(rows[i], drawn.counts[i], drawn.first_out[i], seed)) {
      battery::fail_exactly(out, *bad,
                            {{"row", rows[i].label},
                             {"params", setting_json(rows[i].setting)},
                             {"token", drawn.first_out[i].token},
                             {"subsequence", drawn.first_out[i].subsequence},
                             {"offset", 0},
                             {"draws_per_row", draws}});
      // The input row's index: its requests' subsequences follow the earlier input rows'
      // (from `base`: a flat copy's follow the tied rows', which draws_per_row does not hold).
      const size_t input = buckets.input[i];
      out.repro["row_data"] = row_data(rows[i], input, draws[input]);
      out.repro["first_subsequence"] = first_subsequences(draws, base)[input];
      return true;
    }
  return false;
}

// The groups judged so far: the worst one's p-value, and every group's cells for the plot.
struct group_findings {
  double worst_p = 1.0;
  std::vector<std::pair<double, nlohmann::json>> plotted;  // (p-value, the group's evidence)

  // The kTieEvidenceGroups groups with the smallest p-values, the smallest first.
  nlohmann::json shown() {
    std::stable_sort(plotted.begin(), plotted.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    nlohmann::json groups = nlohmann::json::array();
    for (size_t i = 0; i < std::min(plotted.size(), kTieEvidenceGroups); ++i)
      groups.push_back(plotted[i].second);
    return groups;
  }
};

// Where a group was drawn: its row (index among the rows drawn together), the row's draws and,
// where they are all this row's (one bucket), the first request's subsequence (one per draw).
struct drawn_row {
  const judged_row& row;
  size_t index;
  uint64_t draws;
  std::optional<uint64_t> first_subsequence;
};

// Bucket i's first subsequence where it holds every draw of its input row (its draws are one
// subsequence each, from 0 in input-row order); none where the row's draws took several routes.
std::optional<uint64_t> first_subsequence(const tie_split_plan& plan, size_t i) {
  if (!holds_whole_row(&plan.buckets, i)) return std::nullopt;
  const auto before = plan.draws.begin() + static_cast<std::ptrdiff_t>(plan.buckets.input[i]);
  return std::accumulate(plan.draws.begin(), before, uint64_t{0});
}

// Notes a group's cells and, when it is the worst so far, what shows it and where it was drawn
// (with the row and the group, for the standalone script).
void note_group(const group_verdict& v, const drawn_row& at, const tie_group& g,
                const tie_split_plan& plan, uint64_t seed, group_findings& found,
                battery::check_outcome& out) {
  const judged_row& row = at.row;
  if (v.detail.empty()) return;
  uint64_t drawn = 0;  // a group no draw reached shows nothing (its splits' p-values are u)
  for (const auto& cell : v.cells) drawn += cell["observed"].get<uint64_t>();
  if (drawn > 0)
    found.plotted.emplace_back(v.p, nlohmann::json{{"row", row.label},
                                                   {"group_size", g.tokens.size()},
                                                   {"p_value", v.p},
                                                   {"cells", v.cells}});
  if (v.p > found.worst_p) return;
  found.worst_p = v.p;
  out.detail = fmt::format("row '{}': {}", row.label, v.detail);
  out.repro = repro_base(seed);
  out.repro.update({{"row", row.label},
                    {"params", setting_json(row.setting)},
                    {"group_size", g.tokens.size()},
                    {"tokens", g.large() ? std::vector<int32_t>{} : g.tokens},
                    {"subsequences", "one per draw, from 0 in row order, the flat copies last"},
                    {"offset", 0},
                    {"draws_per_row", plan.draws},
                    {"flat_draws", plan.flat_draws}});
  out.repro["row_data"] = row_data(row, at.index, at.draws);
  out.repro["tie_group"] = {{"first", g.tokens.front()}, {"size", g.tokens.size()}};
  if (at.first_subsequence) out.repro["first_subsequence"] = *at.first_subsequence;
}
}  // namespace

battery::check_outcome run_tie_split(const battery::check_context& ctx, double alpha) {
  battery::check_outcome out;
  const uint64_t seed = battery::check_seed(ctx.seed, "ties.split");
  const tie_split_plan plan = plan_tie_split(ctx, alpha, seed);
  if (!plan.error.empty()) return battery::harness_failure(plan.error);
  const drawn_counts drawn = draw_counts(ctx.subj, plan.rows, plan.draws, seed, 0, &plan.buckets);
  out.samples = drawn.samples;
  out.repro = repro_base(seed);
  if (tie_split_exact_failure(plan.buckets, plan.draws, 0, drawn, seed, out)) return out;
  const drawn_counts flat = draw_counts(ctx.subj, plan.flat_rows, plan.flat_draws, seed,
                                        total_draws(plan.draws), &plan.flat_buckets);
  out.samples += flat.samples;
  if (tie_split_exact_failure(plan.flat_buckets, plan.flat_draws, total_draws(plan.draws), flat,
                              seed, out))
    return out;
  group_findings found;
  const auto& buckets = plan.buckets.rows;
  for (size_t i = 0; i < buckets.size(); ++i)
    for (size_t j = 0; j < plan.groups[i].size(); ++j) {
      const tie_group& g = plan.groups[i][j];
      // Randomisation stream of group j of bucket i: the splits' u, apart from every draw.
      note_group(g.large()
                     ? judge_large_group(g, drawn.counts[i], seed, 64 * i + j, plan.alpha_test)
                     : judge_small_group(g, drawn.counts[i], plan.alpha_test),
                 {buckets[i], i, plan.draws[plan.buckets.input[i]], first_subsequence(plan, i)}, g,
                 plan, seed, found, out);
    }
  std::vector<uint64_t> pooled(plan.flat_group.tokens.size(), 0);
  for (const auto& counts : flat.counts)
    for (size_t t = 0; t < pooled.size(); ++t) pooled[t] += counts[t];
  note_group(judge_large_group(plan.flat_group, pooled, seed, 64 * buckets.size(), plan.alpha_test),
             {plan.flat_rows.front(), 0, total_draws(plan.flat_draws), total_draws(plan.draws)},
             plan.flat_group, plan, seed, found, out);
  out.p_value = stats::sidak_combine(found.worst_p, plan.tests);
  out.repro["tie_groups"] = found.shown();
  out.repro["tie_groups_judged"] = found.plotted.size();
  out.repro["tie_level"] = plan.alpha_test;  // a group whose p-value is at most this fails
  out.power = tie_split_power(plan, drawn, ctx.budget);
  const auto drawn_buckets = std::count_if(drawn.counts.begin(), drawn.counts.end(),
                                           [](const auto& c) { return total_draws(c) > 0; });
  out.detail = fmt::format(
      "{} tied rows ({} buckets, {} drawn) and the flat row ({} draws), {} tests (Pearson or "
      "split); worst {}",
      plan.rows.size(), buckets.size(), drawn_buckets, total_draws(plan.flat_draws), plan.tests,
      out.detail);
  return out;
}

}  // namespace samplecheck::checks
