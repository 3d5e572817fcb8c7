#include "suites/checks/check_helpers.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>

#include "suites/checks/report_evidence.h"

namespace samplecheck::checks {

std::vector<judged_row> grid_rows(const battery::subject& s, const battery::budget_settings& b,
                                  uint64_t seed, const std::vector<fixtures::shape>& filtered,
                                  const std::vector<fixtures::shape>& unfiltered) {
  std::vector<row_spec> specs;
  const auto grid = fixtures::parameter_grid(s.sampler->filters);
  uint64_t shape_seed = seed;
  for (const auto sh : filtered)
    for (const auto& setting : grid)
      specs.push_back({sh, {.vocab_size = b.vocab_size, .seed = ++shape_seed}, setting});
  for (const auto sh : unfiltered) {
    ++shape_seed;
    if (sh == fixtures::shape::subnormal && !sends_unnormalised_rows(s)) continue;
    specs.push_back({sh, {.vocab_size = b.vocab_size, .seed = shape_seed}, {}});
  }
  return make_rows(s, specs);
}

uint32_t declared_params(const battery::subject& s) {
  return s.sampler->filters & (s.is_logits() ? ~0u : ~SC_FILTER_TEMPERATURE);
}

std::vector<std::vector<judged_row>> wide_vocab_rows(const battery::check_context& ctx,
                                                     uint64_t seed) {
  using fixtures::shape;
  std::vector<std::vector<judged_row>> out;
  if (!ctx.budget.wide_vocab) return out;
  for (const int64_t V : {int64_t{65535}, int64_t{65537}}) {
    std::vector<row_spec> specs{{shape::peaked, {.vocab_size = V, .seed = seed + V}, {}}};
    for (const auto& f : fixtures::drawn_settings(declared_params(ctx.subj), V, seed + V, 1))
      specs.push_back({shape::peaked, {.vocab_size = V, .seed = seed + V + 1}, f});
    // Above 65,536 the peaked rows rarely put mass on an id past 65,535 (at 65,537 only id
    // 65,536 is past it, a tail token unless the permutation puts a head token there). A
    // 16-bit id store (X11) moves such an id to id & 0xFFFF: the high_ids row gives V - 1
    // the top token's mass (goodness_of_fit sees it move), and at k = 8 its wrapped id 0 is
    // OUT (support fails exactly).
    if (V > 65536) {
      specs.push_back({shape::high_ids, {.vocab_size = V, .seed = seed + V + 2}, {}});
      if (declared_params(ctx.subj) & SC_FILTER_TOP_K)
        specs.push_back({shape::high_ids, {.vocab_size = V, .seed = seed + V + 3}, {.top_k = 8}});
    }
    out.push_back(make_rows(ctx.subj, specs));
  }
  return out;
}

bool sends_unnormalised_rows(const battery::subject& s) {
  return s.is_logits() ||
         registry::contracts_of(*s.sampler).probs_normalisation != SC_PROBS_ASSUME_SUM_ONE;
}

std::string reference_errors(const std::vector<judged_row>& rows) {
  for (const auto& r : rows)
    if (!r.target.ok())
      return fmt::format("harness: the reference rejected fixture row '{}': field {} index {}: {}",
                         r.label, r.target.error().field, r.target.error().index,
                         r.target.error().message);
  return {};
}

nlohmann::json repro_base(uint64_t check_seed) { return {{"check_seed", check_seed}}; }

uint64_t total_draws(const std::vector<uint64_t>& draws_per_row) {
  return std::accumulate(draws_per_row.begin(), draws_per_row.end(), uint64_t{0});
}

std::string exact_power(uint64_t draws, std::string_view what) {
  if (draws == 0) return "-";
  const double rate = -std::expm1(std::log(0.01) / static_cast<double>(draws));
  return fmt::format("{} rate {:.1e}", what, rate);
}

// A drawing failure (a refused or broken call) or the first OUT token of any row, as the
// check's exact failure; `where` adds what locates the draws (their plan, the look).
bool report_support_failure(const std::vector<judged_row>& rows, const drawn_counts& drawn,
                            uint64_t seed, const nlohmann::json& where,
                            const std::vector<uint64_t>& first, const route_buckets* buckets,
                            battery::check_outcome& out) {
  if (!drawn.failure.empty()) {
    out.repro = repro_base(seed);
    battery::fail_exactly(out, drawn.failure);
    out.repro.update(drawn.repro);
    return true;
  }
  for (size_t i = 0; i < rows.size(); ++i)
    if (auto bad = first_out_token(rows[i], drawn.counts[i], drawn.first_out[i], seed)) {
      out.repro = repro_base(seed);
      battery::fail_exactly(out, *bad,
                            {{"row", rows[i].label},
                             {"params", setting_json(rows[i].setting)},
                             {"token", drawn.first_out[i].token},
                             {"subsequence", drawn.first_out[i].subsequence},
                             {"offset", drawn.first_out[i].offset}});
      out.repro.update(where);
      const size_t input = input_of(buckets, i);
      out.repro["row_data"] = row_data(rows[i], input, drawn.counts[i]);
      out.repro["first_subsequence"] = first[input];
      return true;
    }
  return false;
}

// Draws, then the first OUT token of any row (an exact failure).
bool draw_and_check_support(const battery::check_context& ctx, uint64_t seed,
                            const std::vector<judged_row>& rows, const std::vector<uint64_t>& draws,
                            drawn_counts& drawn, battery::check_outcome& out) {
  drawn = draw_counts(ctx.subj, rows, draws, seed, 0);
  out.samples += drawn.samples;
  return !report_support_failure(
      rows, drawn, seed,
      {{"draws_per_row", draws}, {"subsequences", "one per draw, from 0 in row order"}},
      first_subsequences(draws), nullptr, out);
}

}  // namespace samplecheck::checks
