// stream_agreement: the third part of the stream contract. Where a subject
// declares the rule that turns its uniforms into a token (sc_sampler.uniform_rule), its
// tokens are compared exactly with the same rule evaluated on the reference Philox stream
// (reference/philox.h), at scattered (seed, subsequence, offset) with subsequences and
// offsets past 2^32. A subject that reads other outputs than the rule names (X07), or
// computes its stream position wrongly, draws a perfect sample of the right distribution
// and passes every statistical check; here it disagrees on most draws.
//
// The rule is written here, from the header's words, and shares no code with kernels/.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "reference/philox.h"
#include "reference/uniform.h"
#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"
#include "suites/checks/collision_helpers.h"

namespace samplecheck::checks {
namespace {

using fixtures::shape;

// Unfiltered rows only: the declared rule speaks of the row as given, and a filtered call
// (top-k, top-p, min-p, a temperature) follows whatever order of work the subject chose.
// Every shape with a token structure of its own: flat (V boundaries 1/V apart), a peaked
// head, Zipf, a tail of 1e-9 tokens, tie groups, a padded (zero) tail, and the subnormal
// row that does not sum to 1 (to a subject that renormalises).
const std::vector<shape> kShapes{shape::flat,      shape::peaked,      shape::zipf,
                                 shape::tiny_tail, shape::tied_groups, shape::padded_tail,
                                 shape::subnormal};

// Draws per row: enough to see a disagreement rate of the budget's support_rate with
// probability 0.99 (the exact checks' per-row target), before ambiguous draws are skipped.
uint64_t draws_per_row(const battery::check_context& ctx) {
  return static_cast<uint64_t>(
      std::ceil(std::log(1.0 - ctx.budget.power) / std::log1p(-ctx.budget.support_rate)));
}

std::vector<judged_row> agreement_rows(const battery::check_context& ctx, uint64_t seed) {
  return grid_rows(ctx.subj, ctx.budget, seed, {}, kShapes);
}

// A planned stream: what the battery addresses (seed, subsequence, offset).
struct draw_position {
  uint64_t seed, subsequence, offset;
};

// Draw j's position, from the check's own stream (seed, 1, 4j) so that it depends only on
// the seed and j. Subsequences: small, just past 2^32, or any 64 bits; offsets: small
// (every residue mod 4: mid-block starts), straddling 2^32 (outputs 2^32 - 1 and 2^32),
// past 2^32, or up to 2^62 (the 64-bit position, away from the wrap of the counter).
draw_position position_of(uint64_t seed, uint64_t j) {
  philox_stream pick(seed, 1, 4 * j);
  const uint64_t a = pick.next(), b = pick.next();
  const uint64_t wide = (a << 32) | b;
  draw_position p{seed + pick.next(), 0, 0};
  switch (j % 3) {
    case 0:
      p.subsequence = a % 1024;
      break;
    case 1:
      p.subsequence = (uint64_t{1} << 32) + a % 4096;
      break;
    default:
      p.subsequence = wide;
      break;
  }
  const uint64_t c = pick.next();
  switch ((j / 3) % 4) {
    case 0:
      p.offset = c % 64;
      break;
    case 1:
      p.offset = (uint64_t{1} << 32) - 1 - c % 2;
      break;
    case 2:
      p.offset = (uint64_t{1} << 32) + c % 4096;
      break;
    default:
      p.offset = (wide ^ (c << 7)) >> 2;
      break;
  }
  return p;
}

// SC_RULE_INVERSE_CDF_U53 on the reference stream: u from the first two outputs, the
// token the first index whose running float64 sum exceeds u * total.
struct rule_draw {
  double u = 0;
  int32_t token = -1;
  bool ambiguous = false;
};

// The running sums of one row, in float64 from token 0 up, and the rounding margin.
struct row_cdf {
  std::vector<double> cdf;
  double margin = 0;
};

// Margin: a subject may sum the row (and form u * total) in float32 rather than float64.
// A summation tree of depth d in float32 is within d * 2^-24 * sum|x| of the exact sum
// (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 4.6); the scans of
// GPU kernels (CUB BlockScan, FlashInfer's) are trees of depth ceil(log2 V). One more 2^-24
// each for rounding u to float32 and for the product u * total: a draw whose u * total lies
// within (ceil(log2 V) + 2) * 2^-24 * total of a running sum might cross the other way in
// such a subject, so it is skipped (ambiguous), never judged. A sequential float32 scan
// (error up to (V - 1) * 2^-24 * total) is not covered: such a subject should not declare
// the rule. float64 summation (cpu.multinomial) is ~2^29 times inside the margin.
row_cdf cdf_of(const std::vector<float>& values) {
  row_cdf r;
  r.cdf.resize(values.size());
  double sum = 0;
  for (size_t i = 0; i < values.size(); ++i) r.cdf[i] = sum += values[i];
  const double depth = std::ceil(std::log2(static_cast<double>(values.size())));
  r.margin = (depth + 2) * 0x1p-24 * sum;
  return r;
}

rule_draw inverse_cdf_u53(const row_cdf& row, uint64_t seed, uint64_t subsequence,
                          uint64_t offset) {
  philox_stream stream(seed, subsequence, offset);
  const uint32_t out0 = stream.next();
  const uint32_t out1 = stream.next();
  rule_draw d;
  d.u = uniform_double(out0, out1);
  const double target = d.u * row.cdf.back();
  const auto hit = std::upper_bound(row.cdf.begin(), row.cdf.end(), target);
  if (hit == row.cdf.end()) {  // only by rounding: within the margin of the total
    d.ambiguous = true;
    return d;
  }
  d.token = static_cast<int32_t>(hit - row.cdf.begin());
  const double below = d.token == 0 ? 0.0 : row.cdf[d.token - 1];
  d.ambiguous = target - below <= row.margin || *hit - target <= row.margin;
  return d;
}

struct agreement_tally {
  uint64_t judged = 0, ambiguous = 0, disagreed = 0;
};

// Judges each output of a call against the rule on the reference stream. Under
// batch_slot the subject keys its stream on (seed sent, slot r, offset): run_call sends
// slot_stream_seed(seed, subsequence), and the reference follows the same mapping. The
// check's first disagreement is its detail and evidence.
void judge_outputs(const harness::sample_call& call, const std::vector<judged_row>& rows,
                   const std::vector<row_cdf>& cdfs, bool slot_keyed, uint64_t seed,
                   agreement_tally& tally, battery::check_outcome& out) {
  for (int64_t r = 0; r < call.num_output_rows(); ++r) {
    const size_t row = static_cast<size_t>(call.row_index[r]);
    const uint64_t stream_seed =
        slot_keyed ? battery::slot_stream_seed(call.seed[r], call.subsequence[r]) : call.seed[r];
    const uint64_t stream_subsequence = slot_keyed ? static_cast<uint64_t>(r) : call.subsequence[r];
    const rule_draw d = inverse_cdf_u53(cdfs[row], stream_seed, stream_subsequence, call.offset[r]);
    if (d.ambiguous) {
      ++tally.ambiguous;
      continue;
    }
    ++tally.judged;
    if (d.token == call.tokens[r]) continue;
    if (++tally.disagreed > 1) continue;
    out.detail = fmt::format(
        "row '{}', seed {}, subsequence {}, offset {}{}: u {:.17g}, reference token {}, "
        "subject token {}",
        rows[row].label, call.seed[r], call.subsequence[r], call.offset[r],
        slot_keyed ? fmt::format(" (sent seed {}, slot {})", stream_seed, r) : std::string(), d.u,
        d.token, call.tokens[r]);
    out.repro = repro_base(seed);
    out.repro.update({{"row", rows[row].label},
                      {"seed", call.seed[r]},
                      {"subsequence", call.subsequence[r]},
                      {"offset", call.offset[r]},
                      {"u", d.u},
                      {"reference_token", d.token},
                      {"subject_token", call.tokens[r]}});
  }
}

}  // namespace

std::string agreement_not_applicable(const battery::subject& s, const battery::subject_lookup&) {
  const auto c = registry::contracts_of(*s.sampler);
  if (c.uniform_rule == SC_RULE_UNDECLARED)
    return "uniform_rule undeclared: the subject does not say how its tokens follow from its "
           "uniforms";
  if (c.rng_policy == SC_RNG_SUBJECT_GENERATOR)
    return "rng_policy subject_generator: the subject draws from its own generator, not the "
           "reference stream";
  return {};
}

uint64_t planned_stream_agreement(const battery::check_context& ctx) {
  return draws_per_row(ctx) * agreement_rows(ctx, ctx.check_seed).size();
}

battery::check_outcome run_stream_agreement(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const auto rows = agreement_rows(ctx, seed);
  if (auto e = reference_errors(rows); !e.empty()) return battery::harness_failure(e);
  std::vector<row_cdf> cdfs;
  std::vector<const judged_row*> ptrs;
  for (const auto& r : rows) {
    cdfs.push_back(cdf_of(r.values));
    ptrs.push_back(&r);
  }
  const bool slot_keyed = registry::contracts_of(*ctx.subj.sampler).rng_policy == SC_RNG_BATCH_SLOT;
  const uint64_t per_row = draws_per_row(ctx);
  const uint64_t total = per_row * rows.size();
  constexpr uint64_t kOutputsPerCall = 1u << 14;
  agreement_tally tally;
  for (uint64_t first = 0; first < total; first += kOutputsPerCall) {
    harness::sample_call call = call_for_rows(ctx.subj, ptrs);
    const uint64_t end = std::min(total, first + kOutputsPerCall);
    for (uint64_t j = first; j < end; ++j) {
      const draw_position p = position_of(seed, j);
      add_output(call, static_cast<int32_t>(j % rows.size()), p.seed, p.subsequence, p.offset);
    }
    const std::string what = fmt::format("outputs {}..{}", first, end - 1);
    if (!run_valid(ctx, call, what, out)) return out;
    judge_outputs(call, rows, cdfs, slot_keyed, seed, tally, out);
  }
  const std::string counts = fmt::format(
      "{} of {} draws judged ({} within the float32 rounding margin of a CDF "
      "boundary, skipped), {} disagreed",
      tally.judged, total, tally.ambiguous, tally.disagreed);
  out.power = exact_power(tally.judged, "disagreement");
  if (tally.disagreed > 0) {
    battery::fail_exactly(out, fmt::format("first disagreement: {}; {}", out.detail, counts));
    out.repro["judged"] = tally.judged;
    out.repro["ambiguous"] = tally.ambiguous;
    out.repro["disagreed"] = tally.disagreed;
    return out;
  }
  out.detail =
      fmt::format("{} rows, rule inverse_cdf_u53{}: {}", rows.size(),
                  slot_keyed ? " (batch_slot: stream (sent seed, slot r, offset))" : "", counts);
  out.repro = repro_base(seed);
  out.repro.update({{"positions",
                     "seed + pick, subsequence small / 2^32 + a / 64-bit, offset "
                     "small / 2^32 - 1 / 2^32 + c / up to 2^62 (pick: stream "
                     "(seed, 1, 4j))"},
                    {"judged", tally.judged},
                    {"ambiguous", tally.ambiguous}});
  return out;
}

}  // namespace samplecheck::checks
