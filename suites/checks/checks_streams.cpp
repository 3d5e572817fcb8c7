// The checks that judge randomness ownership: replay, offset_advancement,
// per_request_seeds, batch_reorder, parallel_samples.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "reference/philox.h"
#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/collision_helpers.h"
#include "suites/checks/report_evidence.h"
#include "suites/stats/collision_test.h"
#include "suites/stats/combine.h"
#include "suites/stats/power.h"

namespace samplecheck::checks {
namespace {

using fixtures::shape;

// The flat row: sum q^2 ~ 1/V, so independent draws almost never collide and any
// sharing of random numbers shows as a flood of collisions.
judged_row flat_row(const battery::check_context& ctx, uint64_t seed) {
  return make_row(ctx.subj, shape::flat, {.vocab_size = ctx.budget.vocab_size, .seed = seed}, {});
}

// A collision check's flat row and the pairs it compares (at most max_pairs).
struct collision_plan {
  judged_row row;
  uint64_t pairs = 0;
};
collision_plan plan_collisions(const battery::check_context& ctx, uint64_t seed,
                               uint64_t max_pairs) {
  collision_plan plan{flat_row(ctx, seed)};
  if (plan.row.target.ok())
    plan.pairs = collision_pairs_for(ctx, collision_prob(plan.row.target.distribution()), max_pairs,
                                     ctx.alpha_share);
  return plan;
}
// A collision check's plan: both members of each pair.
uint64_t planned_collisions(const battery::check_context& ctx, uint64_t max_pairs) {
  return 2 * plan_collisions(ctx, ctx.check_seed, max_pairs).pairs;
}
constexpr uint64_t kOffsetPairs = 1u << 16, kSeedPairs = 1u << 15, kParallelPairs = 1u << 16;
constexpr uint64_t kSameSeedOutputs = 64;  // per_request_seeds' [a, a, ...] call

}  // namespace

uint64_t collision_pairs_for(const battery::check_context& ctx, double s, uint64_t max_pairs,
                             double alpha) {
  uint64_t lo = 16, hi = max_pairs;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (stats::detectable_mass_shift(mid, s, 2 * alpha, ctx.budget.power) <=
        ctx.budget.collision_shift)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

double collision_prob(const filtered_distribution& d) {
  double s = 0;
  for (const double p : d.prob) s += p * p;
  return s;
}

// Runs a call; any error or invalid output of a valid row is an exact failure.
bool run_valid(const battery::check_context& ctx, harness::sample_call& call, std::string_view what,
               battery::check_outcome& out) {
  const harness::call_status st = run_call(ctx.subj, call);
  out.samples += static_cast<uint64_t>(call.num_output_rows());
  if (!st.ok()) {
    battery::fail_exactly(out, fmt::format("{}: on a valid batch: {}", what, st.describe()));
    return false;
  }
  const int64_t V = call.vocab_size;
  for (int64_t r = 0; r < call.num_output_rows(); ++r)
    if (!call.valid[r] || call.tokens[r] < 0 || call.tokens[r] >= V) {
      battery::fail_exactly(
          out,
          fmt::format("{}: output row {} (seed {}, subsequence {}, offset {}): valid {} token {}",
                      what, r, call.seed[r], call.subsequence.empty() ? 0 : call.subsequence[r],
                      call.offset[r], static_cast<int>(call.valid[r]), call.tokens[r]));
      return false;
    }
  return true;
}

double randomized_collision_p(uint64_t seed, uint64_t part, const stats::collision_result& c) {
  return stats::binomial_randomized_upper_tail(c.collisions, c.pairs, c.collision_prob,
                                               stats::randomisation_uniform(seed, 0, part));
}

namespace {

// A check of one collision test: its randomised p-value (part 0).
void collision_outcome(const battery::check_context& ctx, uint64_t seed,
                       const stats::collision_result& c, std::string_view what,
                       battery::check_outcome& out) {
  out.p_value = randomized_collision_p(seed, 0, c);
  out.power = fmt::format("collision rate +{:.1e}",
                          stats::detectable_mass_shift(c.pairs, c.collision_prob,
                                                       2 * ctx.alpha_share, ctx.budget.power));
  out.detail = fmt::format(
      "{}: {} equal pairs of {} (expected {:.3g}), P(X >= {}) {:.2e}, randomised p {:.2e}", what,
      c.collisions, c.pairs, c.expected, c.collisions, c.p_value, out.p_value);
}

// What a collision check's standalone script draws again (repro-script): the flat row, the
// collision probability the test assumed, and the compared requests as the subject was sent
// them, three words each (seed, subsequence, offset): the pairs' first members, then their
// second members, as the calls (their sizes in order) held them.
void collision_repro(const battery::check_context& ctx, const judged_row& row,
                     const stats::collision_result& c,
                     std::initializer_list<const harness::sample_call*> calls,
                     battery::check_outcome& out) {
  std::vector<uint64_t> words, sizes;
  for (const harness::sample_call* call : calls) {
    sizes.push_back(call->seed.size());
    for (size_t r = 0; r < call->seed.size(); ++r)
      words.insert(words.end(), {battery::sent_seed(ctx.subj, call->seed[r], call->subsequence[r]),
                                 call->subsequence[r], call->offset[r]});
  }
  out.repro.update({{"pairs", c.pairs},
                    {"collisions", c.collisions},
                    {"calls", sizes},
                    {"collision_prob", c.collision_prob},
                    {"requests_u64", base64_words(words)},
                    {"params", setting_json(row.setting)},
                    {"row_data", row_data(row, 0, 2 * c.pairs)}});
}

}  // namespace

namespace {
// Eight outputs per row at scattered seeds, subsequences and non-zero offsets, called twice.
constexpr size_t kReplayOutputsPerRow = 8;
std::vector<judged_row> replay_rows(const battery::check_context& ctx, uint64_t seed) {
  return grid_rows(ctx.subj, ctx.budget, seed, {shape::peaked, shape::zipf}, {shape::flat});
}
}  // namespace

uint64_t planned_replay(const battery::check_context& ctx) {
  return 2 * kReplayOutputsPerRow * replay_rows(ctx, ctx.check_seed).size();
}

battery::check_outcome run_replay(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const auto rows = replay_rows(ctx, seed);
  if (auto e = reference_errors(rows); !e.empty()) return battery::harness_failure(e);
  std::vector<const judged_row*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  harness::sample_call call = call_for_rows(ctx.subj, ptrs);
  philox_stream pick(seed, 1, 0);
  for (size_t i = 0; i < rows.size() * kReplayOutputsPerRow; ++i)
    add_output(call, static_cast<int32_t>(i % rows.size()), seed + pick.next(), pick.next(),
               uint64_t{4} * pick.next());
  harness::sample_call again = call;
  if (!run_valid(ctx, call, "first call", out) || !run_valid(ctx, again, "second call", out))
    return out;
  for (int64_t r = 0; r < call.num_output_rows(); ++r)
    if (call.tokens[r] != again.tokens[r]) {
      out.repro = repro_base(seed);
      battery::fail_exactly(
          out,
          fmt::format(
              "output row {} (row '{}', seed {}, subsequence {}, offset {}): token {} then {}", r,
              rows[call.row_index[r]].label, call.seed[r], call.subsequence[r], call.offset[r],
              call.tokens[r], again.tokens[r]),
          {{"row", rows[call.row_index[r]].label},
           {"seed", call.seed[r]},
           {"subsequence", call.subsequence[r]},
           {"offset", call.offset[r]}});
      return out;
    }
  out.power = "exact (every output compared)";
  out.detail = fmt::format("{} outputs identical on replay", call.num_output_rows());
  return out;
}

uint64_t planned_offset_advancement(const battery::check_context& ctx) {
  return planned_collisions(ctx, kOffsetPairs);
}

battery::check_outcome run_offset_advancement(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const auto [row, pairs] = plan_collisions(ctx, seed, kOffsetPairs);
  if (!row.target.ok()) return battery::harness_failure(reference_errors({row}));
  // Under request_keyed the offset is the request's position: the next token is position + 1,
  // and its key must differ from this one's, so the step is 1 whatever the declaration.
  const bool keyed = registry::contracts_of(*ctx.subj.sampler).rng_policy == SC_RNG_REQUEST_KEYED;
  const uint64_t advance = keyed ? 1 : ctx.subj.sampler->philox_outputs_per_call;
  // Two consecutive calls: the second at offset + the declared advance must draw
  // numbers the first never used, so its tokens are independent of the first's.
  harness::sample_call first = call_for_rows(ctx.subj, {&row});
  const uint64_t start = 4 * advance + 4;
  for (uint64_t j = 0; j < pairs; ++j) add_output(first, 0, seed, j, start);
  harness::sample_call second = first;
  for (auto& o : second.offset) o = start + advance;
  if (!run_valid(ctx, first, "call at offset " + std::to_string(start), out) ||
      !run_valid(ctx, second, "call at offset " + std::to_string(start + advance), out))
    return out;
  const auto c = stats::collision_test(first.tokens, second.tokens, row.target.distribution().prob);
  collision_outcome(
      ctx, seed, c,
      keyed
          ? fmt::format("positions {} and {} (rng_policy request_keyed: offset = position)", start,
                        start + advance)
          : fmt::format("offsets {} and {} (declared advance {})", start, start + advance, advance),
      out);
  out.repro = repro_base(seed);
  out.repro.update(
      {{"offsets", {start, start + advance}}, {"row", row.label}, {"subsequences", "0..n-1"}});
  collision_repro(ctx, row, c, {&first, &second}, out);
  return out;
}

uint64_t planned_per_request_seeds(const battery::check_context& ctx) {
  return planned_collisions(ctx, kSeedPairs) + kSameSeedOutputs;
}

battery::check_outcome run_per_request_seeds(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const auto [row, pairs] = plan_collisions(ctx, seed, kSeedPairs);
  if (!row.target.ok()) return battery::harness_failure(reference_errors({row}));
  // Requests [a, b, c, ...]: distinct seeds, the same subsequence and offset. The
  // two halves are independent requests, so equal tokens are chance collisions.
  harness::sample_call distinct = call_for_rows(ctx.subj, {&row});
  for (uint64_t j = 0; j < 2 * pairs; ++j) add_output(distinct, 0, seed + 1 + j, 0, 0);
  // Requests [a, a, a, ...]: one stream, so every token must be the same.
  harness::sample_call same = call_for_rows(ctx.subj, {&row});
  for (uint64_t j = 0; j < kSameSeedOutputs; ++j) add_output(same, 0, seed + 1, 0, 0);
  if (!run_valid(ctx, distinct, "seeds [a, b, ...]", out) ||
      !run_valid(ctx, same, "seeds [a, a, ...]", out))
    return out;
  for (int64_t r = 1; r < same.num_output_rows(); ++r)
    if (same.tokens[r] != same.tokens[0]) {
      out.repro = repro_base(seed);
      battery::fail_exactly(
          out,
          fmt::format("seeds [a, a, ...] (a = {}): output 0 drew {} but output {} drew {}",
                      seed + 1, same.tokens[0], r, same.tokens[r]),
          {{"row", row.label},
           {"seed", seed + 1},
           {"subsequence", 0},
           {"offset", 0},
           {"outputs", {0, r}},
           {"tokens", {same.tokens[0], same.tokens[r]}},
           {"batch_size", same.num_output_rows()},
           {"params", setting_json(row.setting)}});
      out.repro["row_data"] = row_data(row, 0, 1);  // for a standalone script (repro-script)
      return out;
    }
  const std::span<const int32_t> t(distinct.tokens);
  const auto c = stats::collision_test(t.first(pairs), t.subspan(pairs, pairs),
                                       row.target.distribution().prob);
  collision_outcome(ctx, seed, c, "seeds [a, b, ...], first half vs second half", out);
  out.repro = repro_base(seed);
  out.repro.update({{"seeds", fmt::format("{} + 1 + j", seed)}, {"offset", 0}, {"subsequence", 0}});
  collision_repro(ctx, row, c, {&distinct}, out);
  return out;
}

namespace {
// Distinct rows per request (capped: each row is V floats).
// Each request holds a V-float row, twice (in order and permuted): at most 2^26
// floats a batch keeps the harness's own cost bounded at large V.
int64_t reorder_requests(const battery::check_context& ctx) {
  return std::max<int64_t>(4, std::min<int64_t>({ctx.budget.batch_rows, 64,
                                                 (int64_t{1} << 26) / ctx.budget.vocab_size}));
}
}  // namespace

namespace {

// The requests' rows, flat and zipf in turn over the parameter grid. Tokens are compared
// between two batches of the same requests: no distribution needed.
std::vector<judged_row> reorder_rows(const battery::check_context& ctx, uint64_t seed) {
  const int64_t requests = reorder_requests(ctx);
  const auto settings = fixtures::parameter_grid(ctx.subj.sampler->filters);
  std::vector<row_spec> specs;
  for (int64_t i = 0; i < requests; ++i)
    specs.push_back({i % 2 ? shape::flat : shape::zipf,
                     {.vocab_size = ctx.budget.vocab_size, .seed = seed + static_cast<uint64_t>(i)},
                     settings[static_cast<size_t>(i) % settings.size()],
                     false});
  return make_rows(ctx.subj, specs);
}

}  // namespace

// Each request in order, then permuted (its rows built as the run builds them).
uint64_t planned_batch_reorder(const battery::check_context& ctx) {
  (void)reorder_rows(ctx, ctx.check_seed);
  return 2 * static_cast<uint64_t>(reorder_requests(ctx));
}

battery::check_outcome run_batch_reorder(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const std::vector<judged_row> rows = reorder_rows(ctx, seed);
  std::vector<size_t> perm(rows.size());
  std::iota(perm.begin(), perm.end(), 0);
  philox_stream pick(seed, 2, 0);
  for (size_t i = perm.size() - 1; i > 0; --i) std::swap(perm[i], perm[pick.next() % (i + 1)]);
  std::vector<uint64_t> seeds, subs, offs;
  for (size_t i = 0; i < rows.size(); ++i) {
    seeds.push_back(seed + pick.next());
    subs.push_back(pick.next());
    offs.push_back(uint64_t{4} * pick.next());
  }
  auto build = [&](const std::vector<size_t>& order) {
    std::vector<const judged_row*> ptrs;
    for (size_t i : order) ptrs.push_back(&rows[i]);
    harness::sample_call call = call_for_rows(ctx.subj, ptrs);
    for (size_t pos = 0; pos < order.size(); ++pos)
      add_output(call, static_cast<int32_t>(pos), seeds[order[pos]], subs[order[pos]],
                 offs[order[pos]]);
    return call;
  };
  std::vector<size_t> identity(rows.size());
  std::iota(identity.begin(), identity.end(), 0);
  harness::sample_call in_order = build(identity), permuted = build(perm);
  if (!run_valid(ctx, in_order, "batch in order", out) ||
      !run_valid(ctx, permuted, "permuted batch", out))
    return out;
  for (size_t pos = 0; pos < perm.size(); ++pos) {
    const size_t req = perm[pos];
    if (permuted.tokens[pos] != in_order.tokens[req]) {
      out.repro = repro_base(seed);
      battery::fail_exactly(
          out,
          fmt::format("request {} (row '{}', seed {}, subsequence {}, offset {}) drew {} "
                      "at batch position {} "
                      "but {} at position {}",
                      req, rows[req].label, seeds[req], subs[req], offs[req], in_order.tokens[req],
                      req, permuted.tokens[pos], pos),
          {{"row", rows[req].label},
           {"seed", seeds[req]},
           {"subsequence", subs[req]},
           {"offset", offs[req]},
           {"positions", {req, pos}},
           {"tokens", {in_order.tokens[req], permuted.tokens[pos]}},
           {"batch_size", rows.size()},
           {"params", setting_json(rows[req].setting)}});
      out.repro["row_data"] = row_data(rows[req], req, 1);  // for a standalone script
      return out;
    }
  }
  out.power = "exact (every request compared)";
  out.detail = fmt::format("{} requests: permuting the batch permuted their tokens", rows.size());
  return out;
}

uint64_t planned_parallel_samples(const battery::check_context& ctx) {
  return planned_collisions(ctx, kParallelPairs);
}

battery::check_outcome run_parallel_samples(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const auto [row, pairs] = plan_collisions(ctx, seed, kParallelPairs);
  if (!row.target.ok()) return battery::harness_failure(reference_errors({row}));
  // n parallel samples of one request: one input row, one seed, distinct
  // subsequences. Pair i is (i, i + 2^w) with w = 16..63 in turn: a subsequence
  // computed modulo 2^m for any m <= 63 (S14's 32-bit product) maps both members of
  // every pair with w >= m to one stream. All 2n subsequences are distinct.
  harness::sample_call call = call_for_rows(ctx.subj, {&row});
  for (uint64_t i = 0; i < pairs; ++i) add_output(call, 0, seed, i, 0);
  for (uint64_t i = 0; i < pairs; ++i)
    add_output(call, 0, seed, i + (uint64_t{1} << (16 + i % 48)), 0);
  if (!run_valid(ctx, call, "parallel samples", out)) return out;
  const std::span<const int32_t> t(call.tokens);
  const auto c = stats::collision_test(t.first(pairs), t.subspan(pairs, pairs),
                                       row.target.distribution().prob);
  collision_outcome(ctx, seed, c,
                    "outputs sharing one input row, subsequence i vs i + 2^(16 + i % 48)", out);
  out.repro = repro_base(seed);
  out.repro.update({{"seed", seed},
                    {"offset", 0},
                    {"row", row.label},
                    {"subsequences", "i and i + 2^(16 + i % 48), i < pairs"}});
  collision_repro(ctx, row, c, {&call}, out);
  return out;
}

}  // namespace samplecheck::checks
