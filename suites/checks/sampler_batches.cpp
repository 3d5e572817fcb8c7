#include "suites/checks/sampler_batches.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace samplecheck::checks {
namespace {

using fixtures::shape;

constexpr int64_t kLargestBatch = 4096;

judged_row degenerate_row(const battery::subject& s, std::string label, std::vector<float> values) {
  judged_row r;
  r.label = std::move(label);
  r.values = harness::round_to_dtype(std::move(values), s.input_dtype);
  r.target = reference_for(s, r.values, {});
  return r;
}

}  // namespace

std::vector<int64_t> sampler_batch_sizes() {
  std::vector<int64_t> sizes{1, 2, 3};
  for (int64_t p = 4; p <= kLargestBatch; p *= 2)
    for (const int64_t b : {p - 1, p, p + 1})
      if (b <= kLargestBatch) sizes.push_back(b);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

namespace {

// A NaN row and an empty one (all zero, or every logit -Inf).
void add_degenerate_rows(const battery::subject& s, int64_t V, uint64_t seed, sampler_pool& pool) {
  std::vector<float> nan_row = fixtures::make_probs(shape::zipf, {.vocab_size = V, .seed = seed});
  if (s.is_logits()) nan_row = fixtures::probs_to_logits(nan_row);
  nan_row[7] = std::numeric_limits<float>::quiet_NaN();
  pool.rows.push_back(degenerate_row(s, "NaN at token 7", std::move(nan_row)));
  const float empty = s.is_logits() ? -std::numeric_limits<float>::infinity() : 0.0f;
  pool.rows.push_back(degenerate_row(s, s.is_logits() ? "every logit -Inf" : "all zero",
                                     std::vector<float>(static_cast<size_t>(V), empty)));
}

}  // namespace

sampler_pool make_sampler_pool(const battery::subject& s, int64_t V, uint64_t seed, int requests) {
  sampler_pool pool;
  const auto grid = fixtures::parameter_grid(s.sampler->filters);
  const shape shapes[] = {shape::flat,      shape::zipf, shape::peaked, shape::tiny_tail,
                          shape::ties_at_k, shape::flat, shape::zipf,   shape::peaked};
  uint64_t shape_seed = seed;
  std::vector<row_spec> specs;
  for (size_t i = 0; i < std::size(shapes); ++i)
    specs.push_back({shapes[i], {.vocab_size = V, .seed = ++shape_seed}, grid[i % grid.size()]});
  // A renormalisation over half the vocabulary: the kept mass is a long float sum.
  fixtures::filter_setting half{};
  if (s.declares(SC_FILTER_TOP_K)) half.top_k = static_cast<int32_t>(V / 2);
  for (const shape sh : {shape::flat, shape::zipf})
    specs.push_back({sh, {.vocab_size = V, .seed = ++shape_seed}, half});
  pool.rows = make_rows(s, specs);
  // Degenerate batchmates only where the subject promises valid = 0 for them (ABI 1.2).
  if (registry::contracts_of(*s.sampler).degenerate_rows == SC_DEGENERATE_VALID_FLAG)
    add_degenerate_rows(s, V, seed, pool);
  const uint64_t advance = std::max<uint64_t>(1, s.sampler->philox_outputs_per_call);
  for (int q = 0; q < requests; ++q)
    pool.requests.push_back({static_cast<int32_t>(q % pool.rows.size()), seed + 1 + q,
                             static_cast<uint64_t>(q) * 7 + 1, advance * (q % 3)});
  return pool;
}

std::vector<int32_t> batch_slots(const sampler_pool& pool, int64_t B) {
  const auto R = static_cast<int64_t>(pool.requests.size());
  std::vector<int32_t> slots(static_cast<size_t>(B));
  for (int64_t slot = 0; slot < B; ++slot) slots[slot] = static_cast<int32_t>((slot + B) % R);
  return slots;
}

harness::sample_call batch_call(const battery::subject& s, const sampler_pool& pool,
                                const std::vector<int32_t>& slots) {
  std::vector<int32_t> input_of(pool.rows.size(), -1);
  std::vector<const judged_row*> rows;
  for (const int32_t q : slots) {
    const int32_t r = pool.requests[q].row;
    if (input_of[r] < 0) {
      input_of[r] = static_cast<int32_t>(rows.size());
      rows.push_back(&pool.rows[r]);
    }
  }
  harness::sample_call call = call_for_rows(s, rows);
  for (const int32_t q : slots) {
    const sampler_request& req = pool.requests[q];
    add_output(call, input_of[req.row], req.seed, req.subsequence, req.offset);
  }
  return call;
}

nlohmann::json request_json(const sampler_pool& pool, int32_t q) {
  const sampler_request& req = pool.requests[q];
  const judged_row& row = pool.rows[req.row];
  return {{"request", q},
          {"row", row.label},
          {"params", setting_json(row.setting)},
          {"seed", req.seed},
          {"subsequence", req.subsequence},
          {"offset", req.offset}};
}

}  // namespace samplecheck::checks
