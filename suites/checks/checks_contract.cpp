// The checks that judge the stream contract itself (kernels/samplecheck_plugin.h): a
// call consumes at most philox_outputs_per_call outputs of curand_init(seed,
// subsequence, offset) and draws from no other stream.
//
// round_advancement: calls exactly one declared advance apart, on rows whose filters
// force a rejection sampler through many rounds (offset_advancement's unfiltered row
// is accepted in one round, so a sampler that reads past its declaration passes it).
// stream_position: offsets 2^32..2^62 apart and subsequences 2^32..2^63 apart, where a
// position kept in 32 bits (or any m < 64 bits of the subsequence) maps both members of
// a pair to one stream.
//
// Both are collision tests (stats/collision_test.h): under the contract the two
// members of a pair are independent draws from the row's target q, equal with
// probability sum q^2; any shared uniform shows as excess equal pairs. Each part's
// p-value is the randomised one (collision_helpers.h), the check's is Sidak over its
// parts, so that under the contract it is uniform, not 1 in most runs.
#include <fmt/format.h>

#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/collision_helpers.h"
#include "suites/stats/collision_test.h"
#include "suites/stats/combine.h"
#include "suites/stats/power.h"

namespace samplecheck::checks {
namespace {

using fixtures::filter_setting;
using fixtures::shape;

// Settings that make a rejection sampler reject round after round on the flat row
// (kernels/cpu/dual_pivot.cpp: a round accepts only a token that already satisfies
// every filter, and on a flat row almost none does): top_k 256, top_p 0.01 and min_p
// 0.99 keep 256, ~1% and ~0.5% of the tokens, each alone, and each crossed with
// temperature 0.5 for a logits subject. Measured on cpu.dual_pivot
// (docs/judging-power/new-checks.md): calls 2 outputs apart agree 4.7x (k 64), 10.5x
// (p 0.01) and 10.6x (min_p 0.99) as often as independent calls; on the unfiltered row not
// at all.
std::vector<filter_setting> round_forcing_settings(const battery::subject& s) {
  std::vector<filter_setting> out{filter_setting{}};
  if (s.declares(SC_FILTER_TOP_K)) out.push_back({.top_k = 256});
  if (s.declares(SC_FILTER_TOP_P)) out.push_back({.top_p = 0.01f});
  if (s.declares(SC_FILTER_MIN_P)) out.push_back({.min_p = 0.99f});
  if (s.is_logits() && s.declares(SC_FILTER_TEMPERATURE))
    fixtures::append_tempered(out, 0, out.size(), {0.5f});
  return out;
}

struct pair_verdict {
  double min_p = 1.0;  // the smallest randomised p-value over the parts
  uint64_t parts = 0;
  double power = 0;  // the largest detectable excess collision rate over the tests
  std::string detail;
  nlohmann::json repro;
  // Sidak over the parts. Exact for independent parts (round_advancement's rows lie on
  // disjoint subsequences); stream_position's two parts share the `near` call, but given
  // it they are independent with one law, so P(both p > x) = E[g^2] >= (E g)^2 = (1 - x)^2:
  // still valid, and exact on a flat row.
  double p_value() const { return stats::sidak_combine(min_p, std::max<uint64_t>(parts, 1)); }
};

// One collision test of `first` against `second` (same length): the next part of `v`.
// alpha is the part's level (sidak_level of the check's share), for the stated power.
void fold_collisions(const battery::check_context& ctx, uint64_t seed,
                     const harness::sample_call& first, const harness::sample_call& second,
                     const filtered_distribution& d, double alpha, std::string what,
                     pair_verdict& v) {
  const auto c = stats::collision_test(first.tokens, second.tokens, d.prob);
  v.power = std::max(v.power, stats::detectable_mass_shift(c.pairs, c.collision_prob, 2 * alpha,
                                                           ctx.budget.power));
  const double p = randomized_collision_p(seed, v.parts++, c);
  if (p <= v.min_p) {
    v.min_p = p;
    v.detail = fmt::format(
        "{}: {} equal pairs of {} (expected {:.3g}), P(X >= {}) {:.2e}, randomised p {:.2e}", what,
        c.collisions, c.pairs, c.expected, c.collisions, c.p_value, p);
  }
}

// round_advancement's rows and the pairs each is drawn for; `error` when the reference
// rejected one (nothing is drawn then).
constexpr uint64_t kMaxRoundPairs = 1u << 15;
struct round_plan {
  std::vector<judged_row> rows;
  std::vector<uint64_t> pairs;
  double alpha_row = 0;
  std::string error;
};

round_plan plan_rounds(const battery::check_context& ctx, uint64_t seed) {
  round_plan plan;
  const auto settings = round_forcing_settings(ctx.subj);
  for (size_t i = 0; i < settings.size(); ++i)
    plan.rows.push_back(make_row(ctx.subj, shape::flat,
                                 {.vocab_size = ctx.budget.vocab_size, .seed = seed + i},
                                 settings[i]));
  if (plan.error = reference_errors(plan.rows); !plan.error.empty()) return plan;
  // A row that leaves (nearly) one token says nothing about independence: pairs agree
  // by themselves (sort_filter's lowest_index keeps one token of k 64 + p 0.01 + min_p 0.99).
  constexpr double kMostCollisionProb = 0.25;
  std::erase_if(plan.rows, [&](const judged_row& r) {
    return collision_prob(r.target.distribution()) > kMostCollisionProb;
  });
  plan.alpha_row = stats::sidak_level(ctx.alpha_share, plan.rows.size());
  for (const auto& r : plan.rows)
    plan.pairs.push_back(collision_pairs_for(ctx, collision_prob(r.target.distribution()),
                                             kMaxRoundPairs, plan.alpha_row));
  return plan;
}

// stream_position's row, its pairs and its parts.
struct position_plan {
  judged_row row;
  bool slot_keyed = false;
  double alpha_part = 0;
  uint64_t pairs = 0;
};

position_plan plan_position(const battery::check_context& ctx, uint64_t seed) {
  position_plan plan{
      make_row(ctx.subj, shape::flat, {.vocab_size = ctx.budget.vocab_size, .seed = seed}, {})};
  if (!plan.row.target.ok()) return plan;
  // Under rng_policy batch_slot a subject's subsequence is its slot (below 2^32 in any
  // batch) and the planned subsequence only reaches it through its seed (run_call): the
  // offsets are the only position it keeps, and they are the only part.
  plan.slot_keyed = registry::contracts_of(*ctx.subj.sampler).rng_policy == SC_RNG_BATCH_SLOT;
  plan.alpha_part = stats::sidak_level(ctx.alpha_share, plan.slot_keyed ? 1 : 2);
  plan.pairs = collision_pairs_for(ctx, collision_prob(plan.row.target.distribution()), 1u << 15,
                                   plan.alpha_part);
  return plan;
}

}  // namespace

uint64_t planned_round_advancement(const battery::check_context& ctx) {
  const round_plan plan = plan_rounds(ctx, ctx.check_seed);
  uint64_t n = 0;
  for (const uint64_t pairs : plan.pairs) n += 2 * pairs;
  return n;
}

uint64_t planned_stream_position(const battery::check_context& ctx) {
  const position_plan plan = plan_position(ctx, ctx.check_seed);
  return plan.pairs * (plan.slot_keyed ? 2 : 3);
}

battery::check_outcome run_round_advancement(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const round_plan plan = plan_rounds(ctx, seed);
  if (!plan.error.empty()) return battery::harness_failure(plan.error);
  const auto& rows = plan.rows;
  const double alpha_row = plan.alpha_row;
  const uint64_t advance = ctx.subj.sampler->philox_outputs_per_call;
  const uint64_t start = 4 * advance + 4;
  pair_verdict v;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& d = rows[i].target.distribution();
    constexpr uint64_t kMaxPairs = kMaxRoundPairs;
    const uint64_t pairs = plan.pairs[i];
    // Consecutive calls of one request: offset `start`, then start + the declared advance;
    // row i on subsequences of its own, so that the rows' counts are independent (Sidak).
    const uint64_t base = i * kMaxPairs;
    harness::sample_call first = call_for_rows(ctx.subj, {&rows[i]});
    for (uint64_t j = 0; j < pairs; ++j) add_output(first, 0, seed, base + j, start);
    harness::sample_call second = first;
    for (auto& o : second.offset) o = start + advance;
    const std::string what =
        fmt::format("row '{}', offsets {} and {}", rows[i].label, start, start + advance);
    if (!run_valid(ctx, first, what, out) || !run_valid(ctx, second, what, out)) return out;
    const double before = v.min_p;
    fold_collisions(ctx, seed, first, second, d, alpha_row, what, v);
    if (v.min_p < before || i == 0)
      v.repro = {{"row", rows[i].label},
                 {"params", setting_json(rows[i].setting)},
                 {"seed", seed},
                 {"offsets", {start, start + advance}},
                 {"subsequences", fmt::format("{}..{}", base, base + pairs - 1)}};
  }
  out.p_value = v.p_value();
  out.power = fmt::format("collision rate +{:.1e}", v.power);
  out.detail =
      fmt::format("{} rows (declared advance {}); worst {}", rows.size(), advance, v.detail);
  out.repro = repro_base(seed);
  out.repro.update(v.repro);
  return out;
}

battery::check_outcome run_stream_position(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const position_plan plan = plan_position(ctx, seed);
  const judged_row& row = plan.row;
  if (!row.target.ok()) return battery::harness_failure(reference_errors({row}));
  const auto& d = row.target.distribution();
  const bool slot_keyed = plan.slot_keyed;
  const double alpha_half = plan.alpha_part;
  const uint64_t pairs = plan.pairs;
  // Offsets: pair j is (subsequence j, offset c_j) against (subsequence j, offset c_j +
  // 2^(32 + j % 31)), c_j = j % 7 (not a multiple of 4: mid-block starts too).
  // Subsequences: (j, offset 0) against (j + 2^(32 + j % 32), offset 0).
  harness::sample_call near = call_for_rows(ctx.subj, {&row}), far_offset = near,
                       far_subsequence = near;
  for (uint64_t j = 0; j < pairs; ++j) {
    add_output(near, 0, seed, j, j % 7);
    add_output(far_offset, 0, seed, j, j % 7 + (uint64_t{1} << (32 + j % 31)));
    add_output(far_subsequence, 0, seed, j + (uint64_t{1} << (32 + j % 32)), j % 7);
  }
  if (!run_valid(ctx, near, "offsets c_j", out) ||
      !run_valid(ctx, far_offset, "offsets c_j + 2^(32 + j % 31)", out) ||
      (!slot_keyed && !run_valid(ctx, far_subsequence, "subsequences j + 2^(32 + j % 32)", out)))
    return out;
  pair_verdict v;
  fold_collisions(ctx, seed, near, far_offset, d, alpha_half, "offset c_j vs c_j + 2^(32 + j % 31)",
                  v);
  if (!slot_keyed)
    fold_collisions(ctx, seed, near, far_subsequence, d, alpha_half,
                    "subsequence j vs j + 2^(32 + j % 32)", v);
  out.p_value = v.p_value();
  out.power = fmt::format("collision rate +{:.1e}", v.power);
  out.detail = v.detail;
  if (slot_keyed)
    out.detail +=
        "; subsequences far apart not judged: the subject declares rng_policy "
        "batch_slot (its subsequence is the output row)";
  out.repro = repro_base(seed);
  out.repro.update({{"row", row.label},
                    {"seed", seed},
                    {"pairs", pairs},
                    {"offsets", "j % 7 against j % 7 + 2^(32 + j % 31)"},
                    {"subsequences", "j against j + 2^(32 + j % 32), offset j % 7"}});
  return out;
}

}  // namespace samplecheck::checks
