// The bf16 / fp16 encoding the harness hands subjects: every pattern round-trips,
// rounding is to nearest even at every boundary (checked against the compiler's own
// _Float16 conversion and against a rounding done in double), and NaN, Inf and
// subnormals come out as the hardware would make them; the encoder that keeps rows
// between calls gives the same bits.
#include "suites/harness/dtype.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "reference/numeric.h"
#include "suites/harness/host_call.h"

using namespace samplecheck;
using namespace samplecheck::harness;

namespace {

uint32_t bits_of(float f) { return float_to_bits(f); }

uint16_t f16_by_compiler(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

// bf16 nearest to a non-NaN f, rounded in double: the two bf16 neighbours of f by
// truncation, whichever is nearer, the even one on a tie. Magnitudes past the largest
// bf16 by half an ulp or more become Inf.
uint16_t bf16_in_double(float f) {
  const uint32_t b = bits_of(f);
  const auto down = static_cast<uint16_t>(b >> 16);
  if ((b & 0xffffu) == 0) return down;
  const auto up = static_cast<uint16_t>(down + 1);  // the next magnitude, Inf after the largest
  const double x = std::fabs(static_cast<double>(f));
  const double lo = std::fabs(static_cast<double>(bf16_to_float(down)));
  // Past the largest finite bf16 the next step would be 2^128: from halfway there, Inf.
  const double hi =
      (up & 0x7fffu) == 0x7f80u ? 0x1p128 : std::fabs(static_cast<double>(bf16_to_float(up)));
  if (x - lo < hi - x) return down;
  if (hi - x < x - lo) return up;
  return (down & 1u) ? up : down;
}

}  // namespace

TEST_CASE("every finite f16 pattern round-trips through the encoder", "[harness][dtype]") {
  int64_t finite = 0;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float x = f16_to_float(bits);
    if (std::isnan(x)) {
      // Any NaN is representable and stays a NaN of the same sign.
      const auto exact = exact_bits(x, SC_DTYPE_F16);
      REQUIRE(exact);
      REQUIRE(std::isnan(f16_to_float(*exact)));
      REQUIRE((*exact & 0x8000u) == (bits & 0x8000u));
      continue;
    }
    finite += std::isfinite(x);
    INFO("pattern " << h);
    REQUIRE(float_to_f16(x) == bits);
    REQUIRE(exact_bits(x, SC_DTYPE_F16) == bits);
    REQUIRE(bits_of(round_to_dtype({x}, SC_DTYPE_F16).at(0)) == bits_of(x));
  }
  CHECK(finite == 63488);  // 2 signs x 31 exponents x 1024 mantissas
}

TEST_CASE("every bf16 pattern round-trips through the encoder", "[harness][dtype]") {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float x = bf16_to_float(bits);
    INFO("pattern " << h);
    if (std::isnan(x)) {
      REQUIRE(std::isnan(bf16_to_float(*exact_bits(x, SC_DTYPE_BF16))));
      continue;
    }
    REQUIRE(exact_bits(x, SC_DTYPE_BF16) == bits);
    REQUIRE(bits_of(round_to_dtype({x}, SC_DTYPE_BF16).at(0)) == bits_of(x));
  }
}

// Floats on which `encode` and `oracle` disagree: a stride of 1021 (odd, so coprime to
// 2^32) through every pattern, NaN excepted, about 4.2 million of them.
template <class Encode, class Oracle>
std::vector<uint32_t> sweep_disagreements(Encode encode, Oracle oracle) {
  std::vector<uint32_t> differ;
  for (uint64_t i = 0; i < (uint64_t{1} << 32); i += 1021) {
    const float x = bits_to_float(static_cast<uint32_t>(i));
    if (!std::isnan(x) && encode(x) != oracle(x)) differ.push_back(static_cast<uint32_t>(i));
  }
  return differ;
}

TEST_CASE("f16 rounding agrees with the compiler's conversion on a sweep of float patterns",
          "[harness][dtype]") {
  CHECK(sweep_disagreements(float_to_f16, f16_by_compiler).empty());
  // Every boundary: the halfway points between neighbouring f16 values, and just off them.
  std::vector<float> differ;
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const double lo = f16_to_float(static_cast<uint16_t>(h));
    const double hi = h + 1 == 0x7c00u ? 65536.0 : f16_to_float(static_cast<uint16_t>(h + 1));
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact in float
    for (const float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), -mid})
      if (float_to_f16(x) != f16_by_compiler(x)) differ.push_back(x);
  }
  CHECK(differ.empty());
}

TEST_CASE("bf16 rounding agrees with rounding in double on a sweep of float patterns",
          "[harness][dtype]") {
  CHECK(sweep_disagreements(float_to_bf16, bf16_in_double).empty());
  std::vector<float> differ;
  for (uint32_t h = 0; h < 0x7f80u; ++h) {  // the halfway point above every finite bf16
    const float mid = bits_to_float((h << 16) | 0x8000u);
    for (const float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)})
      if (float_to_bf16(x) != bf16_in_double(x)) differ.push_back(x);
  }
  CHECK(differ.empty());
}

TEST_CASE("round_to_dtype: ties to even, overflow to Inf, subnormals, NaN", "[harness][dtype]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto bf16 = [](float x) { return round_to_dtype({x}, SC_DTYPE_BF16).at(0); };
  const auto f16 = [](float x) { return round_to_dtype({x}, SC_DTYPE_F16).at(0); };
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7.
  CHECK(bf16(1.0f + 0x1p-8f) == 1.0f);
  CHECK(bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f);
  CHECK(bf16(0.1f) == 0.10009765625f);
  CHECK(bf16(std::numeric_limits<float>::max()) == INFINITY);
  CHECK(bf16(1e-40f) == bf16_to_float(float_to_bf16(1e-40f)));  // float subnormals are bf16's too
  CHECK(bf16(1e-40f) > 0.0f);
  // f16: 65504 is the largest finite; from 65520 (the tie) up it is Inf.
  CHECK(f16(65519.0f) == 65504.0f);
  CHECK(f16(65520.0f) == INFINITY);
  CHECK(f16(-65520.0f) == -INFINITY);
  // f16 subnormals are multiples of 2^-24; half of the smallest is a tie to 0.
  CHECK(f16(0x1p-25f) == 0.0f);
  CHECK(f16(3 * 0x1p-26f) == 0x1p-24f);
  CHECK(f16(0x1p-15f) == 0x1p-15f);             // subnormal in f16, exact
  CHECK(f16(0x1p-14f - 0x1p-30f) == 0x1p-14f);  // rounds up into the smallest normal
  CHECK(std::signbit(f16(-1e-40f)));            // a float subnormal is -0 in f16, sign kept
  CHECK(f16(-1e-40f) == 0.0f);
  CHECK(std::isnan(f16(nan)));
  CHECK(std::isnan(bf16(nan)));
  CHECK(f16(INFINITY) == INFINITY);
  CHECK(bf16(-INFINITY) == -INFINITY);
  // A signalling NaN whose payload lives only in the low bits stays a NaN, not Inf.
  const float signalling = bits_to_float(0x7f800001u);
  CHECK(std::isnan(f16(signalling)));
  CHECK(std::isnan(bf16(signalling)));
  // f32 is left alone; an unknown dtype is an error, not a silent copy.
  CHECK(round_to_dtype({0.1f}, SC_DTYPE_F32).at(0) == 0.1f);
  CHECK_THROWS_WITH(round_to_dtype({0.1f}, 9),
                    "nearest_bits: unknown dtype 9 is not a 16-bit dtype");
}

TEST_CASE("exact_bits accepts exactly the representable values", "[harness][dtype]") {
  CHECK(exact_bits(0.5f, SC_DTYPE_BF16) == uint16_t{0x3f00});
  CHECK_FALSE(exact_bits(0.1f, SC_DTYPE_BF16));
  CHECK_FALSE(exact_bits(65504.0f, SC_DTYPE_BF16));  // 11 significant bits
  CHECK(exact_bits(65504.0f, SC_DTYPE_F16) == uint16_t{0x7bff});
  CHECK_FALSE(exact_bits(65505.0f, SC_DTYPE_F16));
  CHECK_FALSE(exact_bits(1e-40f, SC_DTYPE_F16));  // would flush to 0
  CHECK(exact_bits(-0.0f, SC_DTYPE_F16) == uint16_t{0x8000});
  CHECK(exact_bits(0x1p-24f, SC_DTYPE_F16) == uint16_t{0x0001});
}

TEST_CASE("plain_bits, the encoder's shortcut, agrees with exact_bits wherever it answers",
          "[harness][dtype]") {
  for (const int32_t dtype : {SC_DTYPE_BF16, SC_DTYPE_F16}) {
    CAPTURE(dtype);
    // Every pattern's value, and its float neighbours, which no 16-bit dtype holds.
    uint64_t answered = 0, finite = 0;
    for (uint32_t h = 0; h <= 0xffffu; ++h) {
      const float x = widen_bits(static_cast<uint16_t>(h), dtype);
      for (const float v : {x, std::nextafter(x, INFINITY), std::nextafter(x, -INFINITY)}) {
        const auto plain = plain_bits(v, dtype);
        if (!plain) continue;
        ++answered;
        const auto exact = exact_bits(v, dtype);
        REQUIRE(exact.has_value());
        CHECK(*plain == *exact);
      }
      if (std::isfinite(x)) {
        ++finite;
        CHECK(plain_bits(x, dtype).has_value());  // the shortcut takes every finite value
      }
    }
    CHECK(finite > 0);
    CHECK(answered >= finite);
    // A sweep of float patterns (NaN, Inf, subnormals and out-of-range exponents included).
    for (uint64_t f = 0; f <= 0xffffffffu; f += 4099) {
      const float v = bits_to_float(static_cast<uint32_t>(f));
      const auto plain = plain_bits(v, dtype);
      if (plain) CHECK(exact_bits(v, dtype) == plain);
    }
  }
}

namespace {
// A bf16-exact row of `V` values, distinct per `seed`.
std::vector<float> exact_row(size_t V, uint32_t seed) {
  std::vector<float> row(V);
  for (size_t i = 0; i < V; ++i) row[i] = static_cast<float>((i * 7 + seed * 13) % 251) / 256.0f;
  return row;
}

samplecheck::harness::sample_call call_of(const std::vector<std::vector<float>>& rows,
                                          int32_t dtype) {
  samplecheck::harness::sample_call call;
  call.input_dtype = dtype;
  call.vocab_size = static_cast<int64_t>(rows.front().size());
  call.num_input_rows = static_cast<int64_t>(rows.size());
  for (const auto& r : rows) call.input.insert(call.input.end(), r.begin(), r.end());
  return call;
}
}  // namespace

TEST_CASE("input_encoder: the rows it keeps give encode_input's bits in any order and company",
          "[harness][dtype]") {
  using namespace samplecheck::harness;
  const size_t V = 1000;
  const std::vector<float> a = exact_row(V, 1), b = exact_row(V, 2), c = exact_row(V, 3);
  // Equal to `a` at every value the encoder's key reads (16 spread over the row), not at 5.
  std::vector<float> a_elsewhere = a;
  a_elsewhere[5] = 0.5f;
  input_encoder encoder;
  for (const int32_t dtype : {SC_DTYPE_BF16, SC_DTYPE_F16}) {
    for (const auto& rows : std::vector<std::vector<std::vector<float>>>{
             {a, b}, {b, a}, {a}, {c, a, b, a}, {a_elsewhere, b}, {a, a_elsewhere}}) {
      const sample_call call = call_of(rows, dtype);
      CHECK(encoder.encode(call) == encode_input(call));
    }
  }
}

TEST_CASE("input_encoder names the row and column it cannot encode, in a kept row's company",
          "[harness][dtype]") {
  using namespace samplecheck::harness;
  const size_t V = 64;
  std::vector<float> bad = exact_row(V, 4);
  bad[9] = 1.0f + 1.0f / 1024.0f;  // not a bf16 value
  input_encoder encoder;
  const sample_call good = call_of({exact_row(V, 5)}, SC_DTYPE_BF16);
  encoder.encode(good);
  const sample_call call = call_of({exact_row(V, 5), bad}, SC_DTYPE_BF16);
  CHECK_THROWS_WITH(encoder.encode(call), Catch::Contains("input row 1, column 9"));
  CHECK(encoder.encode(good) == encode_input(good));  // a refused call leaves nothing behind
  sample_call f64 = good;
  f64.input_dtype = 99;
  CHECK_THROWS_AS(encoder.encode(f64), bad_request);
}
