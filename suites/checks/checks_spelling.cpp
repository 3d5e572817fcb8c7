// spelling_agreement: two subjects that claim one rule on the same random numbers (the
// Gumbel-max sampler on probabilities and on logits) pick the same token.
#include <fmt/format.h>

#include <utility>

#include "suites/checks/check_helpers.h"
#include "suites/checks/checks.h"

namespace samplecheck::checks {
namespace {

using fixtures::shape;

// Outputs a subject: enough that a different rule or a different use of the stream
// disagrees on many of them, few enough that the rounding of near-ties (well under 1 in
// 1,024) stays inside the tolerance; two shapes, T = 1 so both spellings target p.
constexpr int kSpellingOutputs = 1024;

}  // namespace

uint64_t planned_spelling_agreement(const battery::check_context&) { return 2 * kSpellingOutputs; }

std::string spelling_partner_name(const battery::subject& s) {
  std::string name = s.name();
  name = name.substr(0, name.find(':'));  // a mutant is judged against its host's partner
  for (const auto& [a, b] : {std::pair<std::string, std::string>{"gumbel_probs", "gumbel_logits"},
                             std::pair<std::string, std::string>{"gumbel_logits", "gumbel_probs"}})
    if (const auto at = name.find(a); at != std::string::npos) return name.replace(at, a.size(), b);
  return {};
}

std::string spelling_not_applicable(const battery::subject& s,
                                    const battery::subject_lookup& lookup) {
  const std::string partner = spelling_partner_name(s);
  if (partner.empty()) return "no second subject claims the same rule on the same random numbers";
  if (!lookup || lookup(partner) == nullptr)
    return fmt::format("its partner {} is not loaded", partner);
  // One spelling gets p, the other log p: both round to one distribution only in f32.
  if (s.input_dtype != SC_DTYPE_F32)
    return "probs and log-probs rows hold one distribution only in f32";
  return {};
}

battery::check_outcome run_spelling_agreement(const battery::check_context& ctx) {
  battery::check_outcome out;
  const uint64_t seed = ctx.check_seed;
  const battery::subject* partner = ctx.lookup(spelling_partner_name(ctx.subj));
  constexpr int kOutputs = kSpellingOutputs;
  std::vector<harness::sample_call> calls;
  for (const battery::subject* s : {&ctx.subj, partner}) {
    std::vector<judged_row> rows;
    for (const auto sh : {shape::flat, shape::zipf})
      rows.push_back(make_row(
          *s, sh, {.vocab_size = ctx.budget.vocab_size, .seed = seed + static_cast<int>(sh)}, {}));
    std::vector<const judged_row*> ptrs{&rows[0], &rows[1]};
    harness::sample_call call = call_for_rows(*s, ptrs);
    for (int j = 0; j < kOutputs; ++j) add_output(call, j % 2, seed, static_cast<uint64_t>(j), 0);
    const harness::call_status st = run_call(*s, call);
    out.samples += kOutputs;
    if (!st.ok()) {
      battery::fail_exactly(out, fmt::format("{}: {}", s->name(), st.describe()));
      return out;
    }
    calls.push_back(std::move(call));
  }
  int disagree = 0, first = -1;
  for (int j = 0; j < kOutputs; ++j)
    if (calls[0].tokens[j] != calls[1].tokens[j] || calls[0].valid[j] != calls[1].valid[j]) {
      ++disagree;
      if (first < 0) first = j;
    }
  // Same u, same rule: only float rounding of a near-tie between the two best keys
  // can flip a row (expected well under 1 in 1,024); a different rule or a different
  // use of the stream disagrees on most rows. Tolerance: 1 row in 1,000.
  const int allowed = kOutputs / 1000;
  out.detail = fmt::format("{} vs {}: {} of {} rows disagree (allowed {})", ctx.subj.name(),
                           partner->name(), disagree, kOutputs, allowed);
  if (disagree > allowed) {
    out.repro = repro_base(seed);
    battery::fail_exactly(
        out,
        out.detail + fmt::format("; first at output {} (seed {}, subsequence {}): {} vs {}", first,
                                 seed, first, calls[0].tokens[first], calls[1].tokens[first]),
        {{"partner", partner->name()}, {"subsequence", first}, {"offset", 0}});
  }
  out.power = "exact (every row compared)";
  return out;
}

}  // namespace samplecheck::checks
