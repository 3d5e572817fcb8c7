// The vendor example plugin, built out of tree by examples_plugin_build, as the
// host sees it: loaded through registry::load_plugin, its matmul's bits against
// the rule written out here, its samplers on one-hot rows, degenerate rows,
// refused calls, and streams keyed by output row (checked against the reference
// Philox).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "kernels/registry/registry.h"
#include "reference/numeric.h"
#include "reference/philox.h"
#include "reference/uniform.h"
#include "suites/harness/matmul_call.h"

namespace registry = samplecheck::registry;
using Catch::Matchers::Contains;

namespace {

const registry::plugin_library& vendor() {
  static const registry::plugin_load_result loaded = registry::load_plugin(VENDOR_PLUGIN_PATH);
  INFO(loaded.error);
  REQUIRE(loaded.ok());
  return *loaded.library;
}

const sc_sampler& sampler(const char* name) {
  const sc_sampler* s = vendor().find_sampler(name);
  REQUIRE(s != nullptr);
  return *s;
}

const sc_matmul& rowwise() {
  const sc_matmul* m = vendor().find_matmul("vendor.rowwise");
  REQUIRE(m != nullptr);
  return *m;
}

// ---- matmul ---------------------------------------------------------------

struct problem_data {
  int64_t m, n, k;
  std::vector<uint16_t> a, weight, bias;
};

problem_data make_problem(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  problem_data d{m, n, k, {}, {}, {}};
  samplecheck::philox_stream stream(seed, 0, 0);
  // Mixed signs and magnitudes over 2^-8 .. 2^8, so the fp32 sums round.
  auto value = [&] {
    const uint32_t x = stream.next();
    const float v = std::ldexp(static_cast<float>(x % 1000) + 1.0f, static_cast<int>(x >> 28) - 12);
    return samplecheck::float_to_bf16((x >> 10) & 1 ? -v : v);
  };
  for (int64_t i = 0; i < m * k; ++i) d.a.push_back(value());
  for (int64_t i = 0; i < n * k; ++i) d.weight.push_back(value());
  for (int64_t i = 0; i < n; ++i) d.bias.push_back(value());
  return d;
}

// The plugin's rule, straightforwardly: fp32 sum in increasing k, + bias, bf16 RNE.
std::vector<uint16_t> expected_bits(const problem_data& d, bool with_bias) {
  using samplecheck::bf16_to_float;
  std::vector<uint16_t> out;
  for (int64_t i = 0; i < d.m; ++i)
    for (int64_t j = 0; j < d.n; ++j) {
      float sum = 0.0f;
      for (int64_t t = 0; t < d.k; ++t)
        sum += bf16_to_float(d.a[i * d.k + t]) * bf16_to_float(d.weight[j * d.k + t]);
      if (with_bias) sum += bf16_to_float(d.bias[j]);
      out.push_back(samplecheck::float_to_bf16(sum));
    }
  return out;
}

sc_matmul_problem problem_of(const problem_data& d, bool with_bias, uint16_t* out) {
  return samplecheck::harness::make_problem(
      {d.m, d.n, d.k, d.a.data(), d.weight.data(), with_bias ? d.bias.data() : nullptr, out});
}

// ---- samplers -------------------------------------------------------------

// One sampling call's buffers; the outputs start at values no sampler writes.
struct sample_call {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  int64_t vocab = 0, input_rows = 0;
  std::vector<int32_t> row_index, top_k;
  std::vector<float> top_p;
  std::vector<uint64_t> seed, subsequence, offset;
  std::vector<int32_t> tokens;
  std::vector<uint8_t> valid;

  void outputs(size_t n) {
    seed.resize(n);
    for (size_t r = 0; r < n; ++r) seed[r] = 1000 + r;
    subsequence.assign(n, 0);
    offset.assign(n, 0);
    tokens.assign(n, -7);
    valid.assign(n, 0xAA);
  }

  sc_status run(const sc_sampler& s, std::string* error = nullptr) {
    sc_sample_batch b{};
    b.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    b.input = f32.empty() ? static_cast<const void*>(bf16.data()) : f32.data();
    b.input_dtype = f32.empty() ? SC_DTYPE_BF16 : SC_DTYPE_F32;
    b.num_input_rows = input_rows;
    b.vocab_size = vocab;
    b.num_output_rows = static_cast<int64_t>(seed.size());
    b.row_index = row_index.empty() ? nullptr : row_index.data();
    b.top_k = top_k.empty() ? nullptr : top_k.data();
    b.top_p = top_p.empty() ? nullptr : top_p.data();
    b.seed = seed.data();
    b.subsequence = subsequence.data();
    b.offset = offset.data();
    b.out_token = tokens.data();
    b.out_valid = valid.data();
    char message[256] = "unwritten";
    const sc_status status = s.sample(s.context, &b, message, sizeof message);
    if (error != nullptr) *error = message;
    return status;
  }
};

// Row 0 one-hot at `hot`, row 1 with a NaN: a degenerate row beside a good one.
sample_call one_hot_and_nan(int64_t vocab, int64_t hot, bool bf16) {
  sample_call c;
  c.vocab = vocab;
  c.input_rows = 2;
  std::vector<float> rows(static_cast<size_t>(2 * vocab), 0.0f);
  rows[hot] = 1.0f;
  rows[vocab] = std::numeric_limits<float>::quiet_NaN();
  rows[vocab + 1] = 1.0f;
  if (bf16)
    for (const float v : rows) c.bf16.push_back(samplecheck::float_to_bf16(v));
  else
    c.f32 = rows;
  c.row_index = {0, 1, 0, 0, 1, 0};
  c.outputs(c.row_index.size());
  return c;
}

void check_one_hot(const sample_call& c, int32_t hot) {
  for (size_t r = 0; r < c.tokens.size(); ++r) {
    CAPTURE(r);
    if (c.row_index[r] == 0) {
      CHECK(c.valid[r] == 1);
      CHECK(c.tokens[r] == hot);
    } else {
      CHECK(c.valid[r] == 0);
    }
  }
}

}  // namespace

TEST_CASE("the vendor plugin loads with its two samplers and its matmul") {
  const registry::plugin_library& library = vendor();
  CHECK(library.plugin().abi_version.major == SC_ABI_VERSION_MAJOR);
  REQUIRE(library.samplers().size() == 2);
  REQUIRE(library.matmuls().size() == 1);
  CHECK(std::string(library.samplers()[0]->name) == "vendor.inverse_cdf");
  CHECK(std::string(library.samplers()[1]->name) == "vendor.inverse_cdf_bf16");
  const sc_sampler& f32 = sampler("vendor.inverse_cdf");
  CHECK(f32.input_dtypes == SC_DTYPE_BIT(SC_DTYPE_F32));
  CHECK(f32.filters == (SC_FILTER_TOP_K | SC_FILTER_TOP_P));
  CHECK(f32.filter_order == SC_ORDER_TOP_K_FIRST);
  CHECK(f32.tie_policy == SC_TIE_KEEP_TIES);
  const sc_sampler& bf16 = sampler("vendor.inverse_cdf_bf16");
  CHECK(bf16.input_dtypes == SC_DTYPE_BIT(SC_DTYPE_BF16));
  CHECK(bf16.filters == 0);
  const sc_matmul& m = rowwise();
  CHECK(m.memory_space == SC_MEMORY_HOST);
  REQUIRE(m.num_launch_configs == 2);
  CHECK(std::string(m.launch_config_name(m.context, 0)) == "rows1");
  CHECK(std::string(m.launch_config_name(m.context, 1)) == "rows4");
  CHECK(m.launch_config_name(m.context, 2) == nullptr);
  CHECK(registry::batch_thresholds(m) == std::vector<int64_t>{4});
}

TEST_CASE("vendor.rowwise gives the fp32 rule's bits, the same in every configuration") {
  const sc_matmul& m = rowwise();
  for (const int64_t rows : {1, 2, 3, 4, 5, 7, 8, 9})
    for (const bool with_bias : {true, false}) {
      const problem_data d = make_problem(rows, 3, 37, static_cast<uint32_t>(rows));
      const std::vector<uint16_t> expected = expected_bits(d, with_bias);
      for (const int32_t config : {-1, 0, 1}) {
        CAPTURE(rows, with_bias, config);
        std::vector<uint16_t> out(expected.size(), 0xDEAD);
        sc_matmul_problem p = problem_of(d, with_bias, out.data());
        p.launch_config = config;
        char error[256] = "unwritten";
        REQUIRE(m.run(m.context, &p, error, sizeof error) == SC_OK);
        CHECK(std::string(error).empty());
        CHECK(out == expected);
      }
    }
}

TEST_CASE("vendor.rowwise refuses a bad problem naming the field, writing nothing") {
  const sc_matmul& m = rowwise();
  const problem_data d = make_problem(2, 2, 4, 9);
  struct spoil {
    void (*apply)(sc_matmul_problem&);
    const char* message;
  };
  const spoil spoils[] = {
      {[](sc_matmul_problem& p) { p.m = 0; }, "field m = 0 must be positive"},
      {[](sc_matmul_problem& p) { p.k = -3; }, "field k = -3 must be positive"},
      {[](sc_matmul_problem& p) { p.weight = nullptr; }, "field weight is NULL"},
      {[](sc_matmul_problem& p) { p.launch_config = 2; },
       "field launch_config = 2 is outside [-1, 2)"},
      {[](sc_matmul_problem& p) { p.reserved0 = 1; }, "field reserved0 = 1, must be 0"},
      {[](sc_matmul_problem& p) { p.flags = 8; }, "field flags = 0x8, must be 0"},
      {[](sc_matmul_problem& p) { p.abi_version.major = 7; }, "field abi_version.major = 7"},
  };
  for (const spoil& s : spoils) {
    std::vector<uint16_t> out(4, 0xDEAD);
    sc_matmul_problem p = problem_of(d, true, out.data());
    s.apply(p);
    char error[256] = "";
    CHECK(m.run(m.context, &p, error, sizeof error) == SC_ERR_INVALID_ARGUMENT);
    CHECK_THAT(error, Contains("vendor.rowwise: sc_matmul_problem ") && Contains(s.message));
    CHECK(out == std::vector<uint16_t>(4, 0xDEAD));
  }
  CHECK(m.run(m.context, nullptr, nullptr, 0) == SC_ERR_INVALID_ARGUMENT);
}

TEST_CASE("the vendor samplers return the one-hot token and flag only the NaN row") {
  sample_call f32 = one_hot_and_nan(8, 3, false);
  REQUIRE(f32.run(sampler("vendor.inverse_cdf")) == SC_OK);
  check_one_hot(f32, 3);
  // The filters cannot remove the only token with mass.
  sample_call filtered = one_hot_and_nan(8, 3, false);
  filtered.top_k = {1, 2};
  filtered.top_p = {0.25f, 1.0f};
  REQUIRE(filtered.run(sampler("vendor.inverse_cdf")) == SC_OK);
  check_one_hot(filtered, 3);

  sample_call bf16 = one_hot_and_nan(8, 5, true);
  REQUIRE(bf16.run(sampler("vendor.inverse_cdf_bf16")) == SC_OK);
  check_one_hot(bf16, 5);
}

TEST_CASE("the vendor samplers refuse what they do not declare and invalid parameters") {
  std::string error;
  // Each sampler takes one dtype.
  sample_call f32 = one_hot_and_nan(8, 3, false);
  CHECK(f32.run(sampler("vendor.inverse_cdf_bf16"), &error) == SC_ERR_UNSUPPORTED);
  CHECK_THAT(error, Contains("field input_dtype = 1: this sampler takes bf16"));
  sample_call bf16 = one_hot_and_nan(8, 5, true);
  CHECK(bf16.run(sampler("vendor.inverse_cdf"), &error) == SC_ERR_UNSUPPORTED);
  // The bf16 sampler has no filters.
  bf16.top_k = {0, 2};
  CHECK(bf16.run(sampler("vendor.inverse_cdf_bf16"), &error) == SC_ERR_UNSUPPORTED);
  CHECK_THAT(error, Contains("input row 1: field top_k = 2, a filter it does not declare"));

  sample_call bad = one_hot_and_nan(8, 3, false);
  bad.top_p = {1.0f, 0.0f};
  CHECK(bad.run(sampler("vendor.inverse_cdf"), &error) == SC_ERR_INVALID_ARGUMENT);
  CHECK(error == "vendor.inverse_cdf: input row 1: field top_p = 0 is outside (0, 1]");
  bad.top_p = {1.5f, 1.0f};
  CHECK(bad.run(sampler("vendor.inverse_cdf"), &error) == SC_ERR_INVALID_ARGUMENT);
  CHECK_THAT(error, Contains("input row 0: field top_p = 1.5 is outside (0, 1]"));
  bad.top_p.clear();
  bad.top_k = {-1, 0};
  CHECK(bad.run(sampler("vendor.inverse_cdf"), &error) == SC_ERR_INVALID_ARGUMENT);
  CHECK(error == "vendor.inverse_cdf: input row 0: field top_k = -1 is negative");
  // A refused call writes nothing.
  CHECK(bad.tokens == std::vector<int32_t>(bad.tokens.size(), -7));
  CHECK(bad.valid == std::vector<uint8_t>(bad.valid.size(), 0xAA));
}

TEST_CASE("each output row draws from curand_init(seed[r], subsequence[r], offset[r])") {
  const sc_sampler& s = sampler("vendor.inverse_cdf");
  REQUIRE(s.philox_outputs_per_call == 2);
  // A uniform row over 64 tokens, unfiltered: the draw for a 53-bit u is
  // floor(64 u) exactly, so each token follows from the reference stream.
  sample_call c;
  c.vocab = 64;
  c.input_rows = 1;
  c.f32.assign(64, 1.0f / 64.0f);
  c.outputs(2000);
  c.row_index.assign(2000, 0);
  for (size_t r = 0; r < 2000; ++r) {
    c.subsequence[r] = r % 3 == 0 ? 0 : (uint64_t{1} << 40) + r;
    c.offset[r] = r % 7;  // offsets that are not whole Philox blocks
  }
  REQUIRE(c.run(s) == SC_OK);
  std::set<int32_t> seen;
  for (size_t r = 0; r < 2000; ++r) {
    samplecheck::philox_stream stream(c.seed[r], c.subsequence[r], c.offset[r]);
    const uint32_t hi = stream.next();
    const double u = samplecheck::uniform_double(hi, stream.next());
    CAPTURE(r);
    REQUIRE(c.valid[r] == 1);
    CHECK(c.tokens[r] == static_cast<int32_t>(std::floor(u * 64.0)));
    seen.insert(c.tokens[r]);
  }
  CHECK(seen.size() == 64);  // 2000 draws leave a token out with probability < 1e-12

  // The same streams at other positions of the batch give the same tokens.
  sample_call reversed = c;
  std::reverse(reversed.seed.begin(), reversed.seed.end());
  std::reverse(reversed.subsequence.begin(), reversed.subsequence.end());
  std::reverse(reversed.offset.begin(), reversed.offset.end());
  REQUIRE(reversed.run(s) == SC_OK);
  for (size_t r = 0; r < 2000; ++r) CHECK(reversed.tokens[1999 - r] == c.tokens[r]);
}
