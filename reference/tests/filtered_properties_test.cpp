// Properties every filtered distribution must have, on Philox-drawn rows: the "off"
// settings are the identity, top_k = 1 is the argmax set, relabelling the vocabulary
// relabels the answer, and fp32 / bf16 / fp16 storage of the same values agree bit for bit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "reference/filtered_distribution.h"
#include "reference/philox.h"
#include "reference/uniform.h"

using namespace samplecheck;

namespace {

// Logits on a 1/8 grid in [-8, 0]: exact in fp32, bf16 and fp16, and full of exact ties.
std::vector<float> grid_logits(uint64_t seed, size_t n) {
  philox_stream rng(seed, 0, 0);
  std::vector<float> z(n);
  for (auto& x : z) x = -static_cast<float>(rng.next() % 65u) / 8.0f;
  return z;
}

// Continuous logits (no ties), for the tests where ties would blur the comparison.
std::vector<float> distinct_logits(uint64_t seed, size_t n) {
  philox_stream rng(seed, 1, 0);
  std::vector<float> z(n);
  for (auto& x : z) x = -12.0f * uniform_open_one(rng.next());
  return z;
}

// By value: the result is usually a temporary.
filtered_distribution expect_ok(const reference_result& result) {
  if (!result.ok()) FAIL("unexpected error: " << result.error().message);
  return result.distribution();
}

// Exact for every value that fp16 represents (the round trip is checked by callers).
uint16_t exact_f16(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000u : 0u;
  const float a = std::fabs(x);
  if (a == 0) return sign;
  if (a < 0x1p-14f) return static_cast<uint16_t>(sign | static_cast<uint16_t>(a * 0x1p24f));
  int exponent = 0;
  const float mantissa =
      std::frexp(a, &exponent);  // a = mantissa * 2^exponent, mantissa in [.5, 1)
  const auto bits = static_cast<uint16_t>((exponent + 14) << 10);
  return static_cast<uint16_t>(sign | bits | static_cast<uint16_t>((mantissa * 2 - 1) * 1024));
}

}  // namespace

TEST_CASE("reference: top_k >= V, top_p = 1 and min_p = 0 are each the identity", "[reference]") {
  const size_t n = GENERATE(1, 2, 7, 64, 1000);
  const auto kind = GENERATE(input_kind::logits, input_kind::probs);
  const auto order = GENERATE(filter_order::top_k_first, filter_order::joint);
  const auto ties = GENERATE(tie_policy::keep_ties, tie_policy::lowest_index);
  std::vector<float> row = grid_logits(n, n);
  reference_options options;
  if (kind == input_kind::probs) {
    for (auto& x : row) x = std::exp(x);  // positive weights, divided out in renormalise mode
    options.normalisation = probs_normalisation::renormalise;
  }
  const auto v = static_cast<int64_t>(n);
  CAPTURE(n, static_cast<int>(kind), static_cast<int>(order), static_cast<int>(ties));
  filter_params none;
  none.order = order, none.ties = ties;
  const auto& plain = expect_ok(compute_filtered_distribution(row, kind, none, options));
  CHECK(plain.num_boundary == 0);
  CHECK(plain.num_in == v);
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(plain.status[i] == membership::in);
    REQUIRE(plain.prob[i] == Approx(plain.source[i]).epsilon(4e-16));  // divided by a compensated 1
  }
  // top_k's three spellings of "off" (0, V, > V) agree while top-p and min-p are active.
  filter_params k_zero = none, k_v = none, k_above = none;
  k_zero.top_p = k_v.top_p = k_above.top_p = 0.7;
  k_zero.min_p = k_v.min_p = k_above.min_p = 0.02;
  k_zero.top_k = 0, k_v.top_k = v, k_above.top_k = v + 5;
  const auto& without_k = expect_ok(compute_filtered_distribution(row, kind, k_zero, options));
  for (const auto& params : {k_v, k_above}) {
    const auto& d = expect_ok(compute_filtered_distribution(row, kind, params, options));
    REQUIRE(d.status == without_k.status);
    REQUIRE(d.prob == without_k.prob);
  }
  // min_p = 0 and a min_p below every ratio in the row (>= e^-8 here) agree while
  // top-k and top-p are active.
  filter_params m_zero = k_zero, m_tiny = k_zero;
  m_zero.top_k = m_tiny.top_k = std::max<int64_t>(1, v / 2);
  m_zero.min_p = 0, m_tiny.min_p = 1e-30;
  const auto& a = expect_ok(compute_filtered_distribution(row, kind, m_zero, options));
  const auto& b = expect_ok(compute_filtered_distribution(row, kind, m_tiny, options));
  REQUIRE(a.status == b.status);
  REQUIRE(a.prob == b.prob);
}

TEST_CASE("reference: top_k = 1 keeps the argmax set (keep_ties) or its lowest id", "[reference]") {
  const uint64_t seed = GENERATE(range(1, 41));
  const size_t n = 1 + seed % 23;
  const auto row = grid_logits(seed, n);
  const float top = *std::max_element(row.begin(), row.end());
  for (auto ties : {tie_policy::keep_ties, tie_policy::lowest_index}) {
    filter_params params;
    params.top_k = 1;
    params.ties = ties;
    params.order = seed % 2 ? filter_order::joint : filter_order::top_k_first;
    const auto& d = expect_ok(compute_filtered_distribution(row, input_kind::logits, params));
    const auto first = std::find(row.begin(), row.end(), top) - row.begin();
    for (size_t i = 0; i < n; ++i) {
      const bool argmax =
          row[i] == top && (ties == tie_policy::keep_ties || static_cast<long>(i) == first);
      CAPTURE(seed, i);
      CHECK(d.status[i] == (argmax ? membership::in : membership::out));
    }
  }
}

TEST_CASE("reference: relabelling the vocabulary relabels the distribution", "[reference]") {
  const uint64_t seed = GENERATE(range(1, 31));
  const size_t n = 5 + seed * 7;
  const bool with_ties = seed % 2 == 0;
  const auto row = with_ties ? grid_logits(seed, n) : distinct_logits(seed, n);
  std::vector<size_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  philox_stream rng(seed, 7, 0);
  for (size_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.next() % (i + 1)]);
  std::vector<float> permuted(n);
  for (size_t i = 0; i < n; ++i) permuted[i] = row[perm[i]];

  for (auto ties : {tie_policy::keep_ties, tie_policy::lowest_index}) {
    for (auto order : {filter_order::top_k_first, filter_order::joint}) {
      filter_params params;
      params.ties = ties, params.order = order;
      params.top_k = static_cast<int64_t>(seed % 9);
      params.top_p = seed % 3 == 0 ? 1.0 : 0.5 + 0.01 * static_cast<double>(seed);
      params.min_p = seed % 4 == 0 ? 0.0 : 0.02;
      CAPTURE(seed, static_cast<int>(ties), static_cast<int>(order));
      const auto& a = expect_ok(compute_filtered_distribution(row, input_kind::logits, params));
      const auto& b =
          expect_ok(compute_filtered_distribution(permuted, input_kind::logits, params));
      CHECK(a.num_in == b.num_in);
      CHECK(a.num_boundary == b.num_boundary);
      if (ties == tie_policy::keep_ties || !with_ties) {
        for (size_t i = 0; i < n; ++i) {
          REQUIRE(b.status[i] == a.status[perm[i]]);
          // The normaliser sums the same terms in another order: a few ulp.
          REQUIRE(b.prob[i] == Approx(a.prob[perm[i]]).epsilon(1e-14).margin(1e-300));
        }
      } else {
        // lowest_index decides ties by id, which relabelling changes: only the
        // multiset of kept probabilities is invariant.
        std::vector<double> pa = a.prob, pb = b.prob;
        std::sort(pa.begin(), pa.end()), std::sort(pb.begin(), pb.end());
        for (size_t i = 0; i < n; ++i)
          REQUIRE(pb[i] == Approx(pa[i]).epsilon(1e-14).margin(1e-300));
      }
    }
  }
}

TEST_CASE("reference: fp32, bf16 and fp16 storage of the same values agree exactly",
          "[reference]") {
  const uint64_t seed = GENERATE(range(1, 21));
  const size_t n = 3 + seed * 5;
  const auto kind = seed % 2 ? input_kind::logits : input_kind::probs;
  std::vector<float> row = grid_logits(seed, n);
  reference_options options;
  if (kind == input_kind::probs) {
    // Weights k/64 (exact in both 16-bit formats) and one fp16 subnormal, 2^-20.
    for (auto& x : row) x = (-x * 8.0f) / 64.0f;
    row[0] = 0x1p-20f;
    options.normalisation = probs_normalisation::renormalise;
  }
  std::vector<uint16_t> bf16(n), f16(n);
  for (size_t i = 0; i < n; ++i) {
    bf16[i] = float_to_bf16(row[i]);
    f16[i] = exact_f16(row[i]);
    REQUIRE(bf16_to_float(bf16[i]) == row[i]);
    REQUIRE(f16_to_float(f16[i]) == row[i]);
  }
  filter_params params;
  params.top_k = static_cast<int64_t>(seed % 6);
  params.top_p = 0.8;
  params.min_p = 0.01;
  const auto count = static_cast<int64_t>(n);
  const auto& a = expect_ok(compute_filtered_distribution(
      row_input{row.data(), storage_type::f32, count, kind}, params, options));
  const auto& b = expect_ok(compute_filtered_distribution(
      row_input{bf16.data(), storage_type::bf16, count, kind}, params, options));
  const auto& c = expect_ok(compute_filtered_distribution(
      row_input{f16.data(), storage_type::f16, count, kind}, params, options));
  CHECK(a.status == b.status);
  CHECK(a.status == c.status);
  CHECK(std::memcmp(a.prob.data(), b.prob.data(), n * sizeof(double)) == 0);
  CHECK(std::memcmp(a.prob.data(), c.prob.data(), n * sizeof(double)) == 0);
  CHECK(std::memcmp(a.source.data(), c.source.data(), n * sizeof(double)) == 0);
  if (kind == input_kind::probs) CHECK(a.source[0] > 0);  // the subnormal weight is not flushed
}
