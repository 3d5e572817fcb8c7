// Known answers for the stream contract, computed here from reference/philox.h by
// the plain rule. The Gumbel subjects skip the logarithm for tokens that provably
// cannot win; the plain loop (every token, every logarithm) must pick the same token
// on every row, so the skipping changes no argmax.
#include <cfloat>

#include "kernels/cpu/tests/batch_harness.h"
#include "reference/philox.h"
#include "reference/uniform.h"

using namespace samplecheck;
using namespace samplecheck::cpu_test;

namespace {

int32_t plain_probs(const std::vector<float>& p, uint64_t seed) {
  philox_stream stream(seed, 0, 0);
  int32_t best = -1;
  float best_key = 0.0f;
  for (size_t i = 0; i < p.size(); ++i) {
    const float q = std::fmax(-std::log1p(-uniform_fine_near_zero(stream.next())), FLT_MIN);
    if (p[i] / q > best_key) best_key = p[i] / q, best = static_cast<int32_t>(i);
  }
  return best;
}

int32_t plain_logits(const std::vector<float>& z, float temperature, uint64_t seed) {
  philox_stream stream(seed, 0, 0);
  int32_t best = -1;
  float best_key = -INFINITY, max_z = -INFINITY;
  for (const float x : z) max_z = std::fmax(max_z, x);
  for (size_t i = 0; i < z.size(); ++i) {
    const float key = (z[i] - max_z) / temperature -
                      std::log(-std::log1p(-uniform_fine_near_zero(stream.next())));
    if (key > best_key) best_key = key, best = static_cast<int32_t>(i);
  }
  return best;
}

// Rows from peaked to flat, with zeros, over 2000 tokens.
std::vector<std::vector<float>> rows() {
  std::vector<std::vector<float>> out;
  for (int r = 0; r < 64; ++r) {
    std::vector<float> row(2000);
    const double exponent = 0.2 * (r % 16);  // 0 = flat, 3 = very peaked
    double sum = 0.0;
    for (int i = 0; i < 2000; ++i)
      sum += row[i] = (i * 13 + r) % 29 == 0
                          ? 0.0f
                          : static_cast<float>(std::pow(1.0 + (i * 7919 + r) % 2000, -exponent));
    for (float& p : row) p = static_cast<float>(p / sum);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

TEST_CASE("gumbel_probs picks what the plain loop picks") {
  const auto all = rows();
  call c = rows_of(all, 1000);
  c.sample(sampler_named("cpu.gumbel_probs"));
  for (size_t r = 0; r < all.size(); ++r) {
    CAPTURE(r);
    REQUIRE(c.tokens[r] == plain_probs(all[r], 1000 + r));
  }
}

TEST_CASE("gumbel_logits picks what the plain loop picks, at several temperatures") {
  const auto all = rows();
  std::vector<std::vector<float>> logits;
  for (const auto& row : all) logits.push_back(log_of(row));  // zeros become -inf
  for (const float temperature : {0.05f, 0.7f, 1.0f, 3.0f}) {
    CAPTURE(temperature);
    call c = rows_of(logits, 5000);
    c.temperature.assign(logits.size(), temperature);
    c.sample(sampler_named("cpu.gumbel_logits"));
    for (size_t r = 0; r < logits.size(); ++r) {
      CAPTURE(r);
      REQUIRE(c.tokens[r] == plain_logits(logits[r], temperature, 5000 + r));
    }
  }
}

TEST_CASE("multinomial draws u from outputs offset and offset + 1 of its own stream") {
  // The RNG contract, checked by hand: output r uses philox_stream(seed[r],
  // subsequence[r], offset[r]) and nothing else, so the token is the inverse CDF at
  // uniform_double(out[offset], out[offset + 1]).
  const std::vector<float> row{0.125f, 0.0f, 0.5f, 0.25f, 0.125f};
  call c = draws_of(row, 256, 900);
  for (uint64_t r = 0; r < 256; ++r) {
    c.subsequence.push_back(r * 977);
    c.offset[r] = 2 * r + 1;  // odd offsets start mid-block
  }
  c.sample(sampler_named("cpu.multinomial"));
  for (uint64_t r = 0; r < 256; ++r) {
    philox_stream stream(900 + r, r * 977, 2 * r + 1);
    const uint32_t hi = stream.next();
    const double u = uniform_double(hi, stream.next());
    double cumulative = 0.0;
    int32_t expected = -1;
    for (size_t t = 0; t < row.size() && expected < 0; ++t)
      if ((cumulative += row[t]) > u) expected = static_cast<int32_t>(t);
    CAPTURE(r, u);
    REQUIRE(c.tokens[r] == expected);
  }
}
