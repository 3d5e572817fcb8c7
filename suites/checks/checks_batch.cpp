// The sampler checks of deterministic inference: batch_invariance (a request's token
// for its stream is the same whatever the batch size, slot and batchmates) and
// run_to_run (the same call twice gives the same bits). Both exact, on the request
// grid of sampler_batches.h; a failure names the batch size, slot and request.
#include <fmt/format.h>

#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/report_evidence.h"
#include "suites/checks/sampler_batches.h"

namespace samplecheck::checks {
namespace {

// Runs a call; a refusal or a broken contract is an exact failure (degenerate rows
// must come back valid = 0, never make the subject refuse the batch).
bool run_batch(const battery::check_context& ctx, harness::sample_call& call, std::string_view what,
               battery::check_outcome& out) {
  const harness::call_status st = run_call(ctx.subj, call);
  out.samples += static_cast<uint64_t>(call.num_output_rows());
  if (st.ok()) return true;
  battery::fail_exactly(out, fmt::format("{}: {}", what, st.describe()));
  return false;
}

std::string slot_text(const harness::sample_call& call, size_t s) {
  return call.valid[s] == 1 ? fmt::format("token {}", call.tokens[s]) : std::string("valid 0");
}

bool same_slot(const harness::sample_call& a, size_t i, const harness::sample_call& b, size_t j) {
  return a.valid[i] == b.valid[j] && slot_token(a, i) == slot_token(b, j);
}

// The failure's record: the first diverging (batch size, slot), its request and the batch's
// requests as the subject was sent them (requests_u64: seed, subsequence, offset a slot).
nlohmann::json divergence(const battery::check_context& ctx, const sampler_pool& pool,
                          const harness::sample_call& call, size_t slot, int32_t request,
                          const std::string& expected, const std::string& actual) {
  nlohmann::json j = repro_base(ctx.check_seed);
  j.update({{"batch_size", call.seed.size()},
            {"slot", slot},
            {"expected", expected},
            {"actual", actual}});
  j.update(request_json(pool, request));
  // The request's row, for a standalone script (samplecheck repro-script) that calls the
  // subject on it alone and in a batch; the batchmates' keys, so that a subject whose token
  // follows its batchmates' keys (jax's rbg draws a vmapped batch from its first key) draws
  // in the script what it drew in the check.
  const auto row = static_cast<size_t>(pool.requests[static_cast<size_t>(request)].row);
  j["row_data"] = row_data(pool.rows[row], row, 1);
  std::vector<uint64_t> words;
  for (size_t r = 0; r < call.seed.size(); ++r)
    words.insert(words.end(), {battery::sent_seed(ctx.subj, call.seed[r], call.subsequence[r]),
                               call.subsequence[r], call.offset[r]});
  j["requests_u64"] = base64_words(words);
  return j;
}

}  // namespace

// Every request alone, then one batch of each size. The plan builds the pool's rows as the
// run does (a row built ahead of the check is its run's: rows_ahead.h).
uint64_t planned_sampler_batch_invariance(const battery::check_context& ctx) {
  (void)make_sampler_pool(ctx.subj, ctx.budget.vocab_size, ctx.check_seed);
  uint64_t n = kPoolRequests;
  for (const int64_t B : sampler_batch_sizes()) n += static_cast<uint64_t>(B);
  return n;
}

battery::check_outcome run_sampler_batch_invariance(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const sampler_pool pool = make_sampler_pool(ctx.subj, ctx.budget.vocab_size, seed);
  std::vector<judged_row> valid_rows;
  for (const auto& r : pool.rows)
    if (r.target.ok()) valid_rows.push_back(r);
  if (auto e = reference_errors(valid_rows); !e.empty()) return battery::harness_failure(e);
  // Every request alone (B = 1) is the reference its every later slot must equal.
  std::vector<harness::sample_call> alone;
  for (int32_t q = 0; q < static_cast<int32_t>(pool.requests.size()); ++q) {
    alone.push_back(batch_call(ctx.subj, pool, {q}));
    if (!run_batch(ctx, alone.back(), fmt::format("request {} alone", q), out)) return out;
    std::vector<float>().swap(alone.back().input);  // only its token is kept (512 rows of V)
  }
  const auto sizes = sampler_batch_sizes();
  int64_t differing_sizes = 0, differing_slots = 0, slots_compared = 0;
  for (const int64_t B : sizes) {
    const auto slots = batch_slots(pool, B);
    harness::sample_call call = batch_call(ctx.subj, pool, slots);
    if (!run_batch(ctx, call, fmt::format("the batch of {}", B), out)) return out;
    bool differs = false;
    for (size_t s = 0; s < slots.size(); ++s) {
      ++slots_compared;
      const harness::sample_call& ref = alone[static_cast<size_t>(slots[s])];
      if (same_slot(ref, 0, call, s)) continue;
      differs = true;
      ++differing_slots;
      if (out.repro.is_null())
        out.repro = divergence(ctx, pool, call, s, slots[s], slot_text(ref, 0), slot_text(call, s));
    }
    differing_sizes += differs ? 1 : 0;
  }
  out.power = fmt::format("exact (bitwise, {} batch sizes {}-{})", sizes.size(), sizes.front(),
                          sizes.back());
  if (differing_sizes == 0) {
    out.detail = fmt::format("{} slots over {} batch sizes: every request's token as alone",
                             slots_compared, sizes.size());
    return out;
  }
  const auto& r = out.repro;
  battery::fail_exactly(
      out,
      fmt::format("{} of {} batch sizes differ from B = 1 ({} of {} slots); first at "
                  "batch size {}, slot {}: "
                  "request {} (row '{}', seed {}, subsequence {}, offset {}) gave {} "
                  "alone, {} in the batch",
                  differing_sizes, sizes.size(), differing_slots, slots_compared,
                  r["batch_size"].get<int64_t>(), r["slot"].get<size_t>(), r["request"].get<int>(),
                  r["row"].get<std::string>(), r["seed"].get<uint64_t>(),
                  r["subsequence"].get<uint64_t>(), r["offset"].get<uint64_t>(),
                  r["expected"].get<std::string>(), r["actual"].get<std::string>()));
  out.repro["batch_sizes"] = sizes;
  return out;
}

namespace {
constexpr int kRunToRunCalls = 3;
}

// kRunToRunCalls calls of the largest batch (its pool's rows built as the run builds them).
uint64_t planned_sampler_run_to_run(const battery::check_context& ctx) {
  const int64_t B = sampler_batch_sizes().back();
  (void)make_sampler_pool(ctx.subj, ctx.budget.vocab_size, ctx.check_seed, static_cast<int>(B));
  return kRunToRunCalls * static_cast<uint64_t>(B);
}

battery::check_outcome run_sampler_run_to_run(const battery::check_context& ctx) {
  constexpr int kRepeats = kRunToRunCalls;
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const int64_t B = sampler_batch_sizes().back();
  // Every slot its own stream: B draws, not R repeated ones.
  const sampler_pool pool =
      make_sampler_pool(ctx.subj, ctx.budget.vocab_size, seed, static_cast<int>(B));
  const auto slots = batch_slots(pool, B);
  harness::sample_call first = batch_call(ctx.subj, pool, slots);
  if (!run_batch(ctx, first, "call 1", out)) return out;
  int differing_calls = 0;
  for (int repeat = 2; repeat <= kRepeats; ++repeat) {
    harness::sample_call again = batch_call(ctx.subj, pool, slots);
    if (!run_batch(ctx, again, fmt::format("call {}", repeat), out)) return out;
    int64_t differing = 0;
    for (size_t s = 0; s < slots.size(); ++s) {
      if (same_slot(first, s, again, s)) continue;
      if (differing++ == 0 && out.repro.is_null()) {
        out.repro =
            divergence(ctx, pool, first, s, slots[s], slot_text(first, s), slot_text(again, s));
        out.repro["repeat"] = repeat;
        out.detail = fmt::format(
            "call {} differs from call 1 at slot {} of the batch of {}: request {} (row '{}', seed "
            "{}, "
            "subsequence {}, offset {}) gave {}, then {}",
            repeat, s, B, slots[s], pool.rows[pool.requests[slots[s]].row].label,
            pool.requests[slots[s]].seed, pool.requests[slots[s]].subsequence,
            pool.requests[slots[s]].offset, slot_text(first, s), slot_text(again, s));
      }
    }
    if (differing > 0) {
      ++differing_calls;
      out.detail += fmt::format(" (call {}: {} of {} slots differ)", repeat, differing, B);
    }
  }
  out.power = fmt::format("exact (bitwise, {} calls of {} slots)", kRepeats, B);
  out.exact_failure = differing_calls > 0;
  if (!out.exact_failure) out.detail = fmt::format("{} identical calls of {} slots", kRepeats, B);
  return out;
}

// The same names as the matmul checks below: one meaning (bitwise the same whatever
// the batch; the same call twice), one spelling in --checks for both kinds.

}  // namespace samplecheck::checks
