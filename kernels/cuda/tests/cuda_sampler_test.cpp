// The CUDA subjects against the ABI's promises: descriptors, replay, exact support on
// small rows, degenerate rows, and argument errors that name the row and the field.
// The statistical battery (suites/battery) judges their distributions.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <set>

#include "kernels/cuda/tests/device_batch_support.h"
#include "kernels/mutant_catalog.h"

using namespace samplecheck::cuda_test;
namespace sc = samplecheck;

namespace {

struct setting {
  int32_t top_k = 0;
  float top_p = 1.0f, min_p = 0.0f, temperature = 1.0f;
};

// The tokens a subject may return for `p` (already decoded from the storage type),
// and each one's target probability, in double. The rows used here have no ties, so
// the tie policy does not matter; the filter order does.
std::vector<double> target_of(const std::vector<float>& p, const setting& s, int32_t order) {
  const size_t v = p.size();
  std::vector<size_t> rank(v);
  std::iota(rank.begin(), rank.end(), 0);
  std::stable_sort(rank.begin(), rank.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  double total = 0;
  for (float x : p) total += x;
  std::vector<bool> keep(v, false);
  const size_t k = (s.top_k > 0 && s.top_k < static_cast<int64_t>(v)) ? s.top_k : v;
  if (order == SC_ORDER_JOINT) {
    double above = 0;
    for (size_t i = 0; i < v; ++i) {
      keep[rank[i]] = i < k && above < s.top_p * total;
      above += p[rank[i]];
    }
  } else {
    double top_k_mass = 0, above = 0;
    for (size_t i = 0; i < k; ++i) top_k_mass += p[rank[i]];
    for (size_t i = 0; i < k; ++i) {
      keep[rank[i]] = above < s.top_p * top_k_mass;
      above += p[rank[i]];
    }
  }
  const float max = p[rank[0]];
  std::vector<double> target(v, 0.0);
  double kept = 0;
  for (size_t i = 0; i < v; ++i)
    if (keep[i] && p[i] > 0.0f && p[i] >= s.min_p * max) kept += target[i] = p[i];
  for (auto& t : target) t /= kept;
  return target;
}

// 37 tokens (an odd size: the scalar tail of every tile loop runs), seven of them
// impossible, the rest with distinct weights 1..37.
std::vector<float> small_row() {
  std::vector<float> p(37);
  double total = 0;
  for (int i = 0; i < 37; ++i)
    total += p[i] = i % 5 == 3 ? 0.0f : static_cast<float>((i * 17) % 37 + 1);
  for (auto& x : p) x = static_cast<float>(x / total);
  return p;
}

std::vector<setting> settings_for(const sc_sampler& s) {
  std::vector<setting> out{{}};
  if (s.filters & SC_FILTER_TOP_K) out.push_back({5, 1.0f, 0.0f, 1.0f});
  if (s.filters & SC_FILTER_TOP_P) out.push_back({0, 0.5f, 0.0f, 1.0f});
  if (s.filters & SC_FILTER_MIN_P) out.push_back({0, 1.0f, 0.5f, 1.0f});
  if ((s.filters & SC_FILTER_TOP_K) && (s.filters & SC_FILTER_TOP_P))
    out.push_back({8, 0.45f, 0.0f, 1.0f});
  if (s.filters & SC_FILTER_TEMPERATURE) out.push_back({0, 1.0f, 0.0f, 0.0f});  // greedy
  return out;
}

}  // namespace

TEST_CASE("every CUDA subject declares the ABI it implements", "[abi]") {
  std::set<std::string> names;
  int correct = 0;
  for (const sc_sampler* s : sc::cuda_samplers()) {
    INFO(s->name);
    CHECK(s->abi_version.major == SC_ABI_VERSION_MAJOR);
    CHECK(s->memory_space == SC_MEMORY_CUDA);
    CHECK(s->sample != nullptr);
    CHECK(s->philox_outputs_per_call >= 1);
    CHECK(names.insert(s->name).second);
    const std::string name = s->name;
    if (const auto colon = name.find(':'); colon != std::string::npos) {
      CHECK(sc::find_mutant(name.substr(colon + 1)) != nullptr);
      CHECK(names.count(name.substr(0, colon)) == 1);  // the host subject came first
    } else {
      ++correct;
    }
  }
  CHECK(correct == 10);
}

TEST_CASE("replay: the same seed and offset give the same tokens, a new offset new ones",
          "[replay]") {
  const int64_t v = 4096, outputs = 64;
  for (const sc_sampler* s : sc::cuda_samplers()) {
    if (is_mutant(*s)) continue;
    INFO(s->name);
    sample_call h;
    const auto p = spread_row(v);
    for (int row = 0; row < 4; ++row)
      add_row(h, s->input_kind == SC_INPUT_LOGITS ? logits_of(p) : p);
    for (int64_t r = 0; r < outputs; ++r) h.row_index.push_back(static_cast<int32_t>(r % 4));
    distinct_streams(h, outputs);
    const call_result first = run(*s, h), again = run(*s, h);
    INFO(first.status.describe());
    REQUIRE(first.status.ok());
    CHECK(first.token == again.token);
    CHECK(std::count(first.valid.begin(), first.valid.end(), 1) == outputs);
    for (auto& o : h.offset) o += s->philox_outputs_per_call;
    const call_result next = run(*s, h);
    INFO(next.status.describe());
    REQUIRE(next.status.ok());
    int64_t changed = 0;
    for (int64_t r = 0; r < outputs; ++r) changed += next.token[r] != first.token[r];
    // Two independent draws from a 4096-token row agree with probability < 1/2000;
    // 8 agreements out of 64 would happen by chance with probability < 1e-18.
    CHECK(changed >= outputs - 8);
  }
}

TEST_CASE("support: small rows never yield a filtered or impossible token", "[support]") {
  const int64_t outputs = 4000;
  const auto probs = small_row();
  for (const sc_sampler* s : sc::cuda_samplers()) {
    if (is_mutant(*s)) continue;
    for (const int32_t dtype : {SC_DTYPE_F32, SC_DTYPE_BF16}) {
      for (const setting& f : settings_for(*s)) {
        INFO(s->name << " dtype " << dtype << " top_k " << f.top_k << " top_p " << f.top_p
                     << " min_p " << f.min_p << " T " << f.temperature);
        sample_call h;
        const bool logits = s->input_kind == SC_INPUT_LOGITS;
        add_row(h, logits ? logits_of(probs) : probs);
        store_as(h, dtype);
        std::vector<float> as_probs(h.input);  // the values the subject decodes
        if (logits) {
          double total = 0;
          for (auto& z : as_probs) total += z = std::exp(z);
          for (auto& x : as_probs) x = static_cast<float>(x / total);
        }
        std::vector<double> target = target_of(as_probs, f, s->filter_order);
        if (f.temperature == 0.0f) {
          const auto best = std::max_element(as_probs.begin(), as_probs.end()) - as_probs.begin();
          std::fill(target.begin(), target.end(), 0.0);
          target[best] = 1.0;
        }
        if (s->filters & SC_FILTER_TOP_K) h.top_k = {f.top_k};
        if (s->filters & SC_FILTER_TOP_P) h.top_p = {f.top_p};
        if (s->filters & SC_FILTER_MIN_P) h.min_p = {f.min_p};
        if (s->filters & SC_FILTER_TEMPERATURE) h.temperature = {f.temperature};
        h.row_index.assign(outputs, 0);
        distinct_streams(h, outputs);
        const call_result got = run(*s, h);
        INFO(got.status.describe());
        REQUIRE(got.status.ok());
        std::vector<int64_t> count(probs.size(), 0);
        for (int64_t r = 0; r < outputs; ++r) {
          REQUIRE(got.valid[r] == 1);
          REQUIRE(got.token[r] >= 0);
          REQUIRE(got.token[r] < h.vocab_size);
          INFO("output row " << r << " token " << got.token[r]);
          REQUIRE(target[got.token[r]] > 0.0);
          ++count[got.token[r]];
        }
        // A token with target >= 1% misses 4000 draws with probability < 1e-17.
        for (size_t t = 0; t < probs.size(); ++t)
          if (target[t] >= 0.01) CHECK(count[t] > 0);
      }
    }
  }
}

// An unnormalised row is legal as long as its sum is a float. One entry near
// FLT_MAX carries all but 1e-38 of the mass, so every draw must pick it; its
// Gumbel key p / q overflows to inf for most q, and a skip bound computed from
// such a p must not skip it (gumbel_bounds.cuh clamps the bound at FLT_MAX).
TEST_CASE("a row whose one entry near FLT_MAX carries the mass picks that entry", "[degenerate]") {
  const int64_t v = 300, outputs = 64, heavy = 123;
  auto row = spread_row(v);
  row[heavy] = 3e38f;
  for (const sc_sampler* s : sc::cuda_samplers()) {
    if (is_mutant(*s) || s->input_kind == SC_INPUT_LOGITS) continue;
    INFO(s->name);
    sample_call h;
    add_row(h, row);
    h.row_index.assign(outputs, 0);
    distinct_streams(h, outputs);
    const call_result got = run(*s, h);
    INFO(got.status.describe());
    REQUIRE(got.status.ok());
    int picked = 0;
    for (int64_t r = 0; r < outputs; ++r) picked += got.valid[r] == 1 && got.token[r] == heavy;
    CHECK(picked == outputs);
  }
}

TEST_CASE("degenerate rows get valid = 0 and leave their neighbours alone", "[degenerate]") {
  const int64_t v = 300;
  const auto good = spread_row(v);
  for (const sc_sampler* s : sc::cuda_samplers()) {
    if (is_mutant(*s)) continue;
    INFO(s->name);
    const bool logits = s->input_kind == SC_INPUT_LOGITS;
    const auto clean = logits ? logits_of(good) : good;
    std::vector<std::vector<float>> rows{clean};
    auto nan_row = clean;
    nan_row[123] = NAN;
    auto inf_row = clean;
    inf_row[7] = INFINITY;
    rows.push_back(nan_row), rows.push_back(clean), rows.push_back(inf_row);
    if (logits) {
      rows.push_back(std::vector<float>(v, -INFINITY));
    } else {
      rows.push_back(std::vector<float>(v, 0.0f));
      auto negative = clean;
      negative[299] = -1e-3f;
      rows.push_back(negative);
      // Finite entries whose sum passes FLT_MAX: the row's mass is not a float.
      auto overflowing = clean;
      overflowing[10] = overflowing[200] = 2e38f;
      rows.push_back(overflowing);
    }
    rows.push_back(clean);
    sample_call h;
    for (const auto& row : rows) add_row(h, row);
    distinct_streams(h, static_cast<int64_t>(rows.size()));
    const call_result got = run(*s, h);
    INFO(got.status.describe());
    REQUIRE(got.status.ok());
    for (size_t r = 0; r < rows.size(); ++r) {
      const bool healthy = rows[r] == clean;
      INFO("row " << r);
      CHECK(got.valid[r] == (healthy ? 1 : 0));
      if (!healthy) continue;
      // The same request alone in its batch picks the same token.
      sample_call alone;
      add_row(alone, clean);
      alone.seed = {h.seed[r]};
      alone.offset = {h.offset[r]};
      CHECK(run(*s, alone).token[0] == got.token[r]);
    }
  }
}

TEST_CASE("bad arguments return an error naming the row and the field", "[arguments]") {
  const int64_t v = 64;
  const auto p = spread_row(v);
  auto base = [&](const sc_sampler& s) {
    sample_call h;
    for (int row = 0; row < 4; ++row) add_row(h, p);
    distinct_streams(h, 4);
    return h;
  };
  struct bad_field {
    void (*spoil)(sample_call&);
    const char* row;
    const char* field;
  };
  const bad_field bad_fields[] = {
      {[](sample_call& h) {
         h.top_k = {0, 0, -1, 0};
       },
       "input row 2", "top_k = -1"},
      {[](sample_call& h) {
         h.top_p = {1.0f, 1.5f, 1.0f, 1.0f};
       },
       "input row 1", "top_p = 1.5"},
      {[](sample_call& h) {
         h.row_index = {0, 1, 2, 9};
       },
       "output row 3", "row_index = 9"},
      {[](sample_call& h) {
         h.temperature = {1.0f, 1.0f, 1.0f, -2.0f};
       },
       "input row 3", "temperature = -2"},
  };
  for (const sc_sampler* s : sc::cuda_samplers()) {
    if (is_mutant(*s)) continue;
    INFO(s->name);
    // One bad field a batch: the row and the field (with its value) the error names.
    for (const bad_field& c : bad_fields) {
      INFO(c.field);
      sample_call bad = base(*s);
      c.spoil(bad);
      const call_result got = run(*s, bad);
      CHECK(got.status.status == SC_ERR_INVALID_ARGUMENT);
      CHECK_THAT(got.status.message, Catch::Contains(c.row) && Catch::Contains(c.field));
    }
    sample_call h = base(*s);
    if (!(s->filters & SC_FILTER_TOP_K)) {
      h.top_k = {5, 0, 0, 0};
      CHECK(run(*s, h).status.status == SC_ERR_UNSUPPORTED);
      h = base(*s);
    }
    h.seed.clear();
    h.seed.resize(4);
    const samplecheck::harness::device_call d(h);
    sc_sample_batch b = d.view();
    b.seed = nullptr;
    char message[256] = "";
    CHECK(s->sample(s->context, &b, message, sizeof message) == SC_ERR_INVALID_ARGUMENT);
    CHECK_THAT(std::string(message), Catch::Contains("seed is NULL"));
  }
}

// One small mixed batch through every subject, mutants included, so that one run
// under compute-sanitizer (memcheck, racecheck) covers every kernel: two tiles plus
// a ragged tail, bf16 storage, a row-index map with shared rows, per-row filters.
TEST_CASE("every subject samples a small mixed batch", "[sanitize]") {
  const int64_t v = 2 * 4096 + 37, outputs = 6;
  const auto p = spread_row(v);
  for (const sc_sampler* s : sc::cuda_samplers()) {
    for (const int32_t dtype : {SC_DTYPE_F32, SC_DTYPE_BF16}) {
      INFO(s->name << " dtype " << dtype);
      sample_call h;
      const auto row = s->input_kind == SC_INPUT_LOGITS ? logits_of(p) : p;
      for (int i = 0; i < 3; ++i) add_row(h, row);
      store_as(h, dtype);
      h.row_index = {2, 0, 0, 1, 2, 1};
      if (s->filters & SC_FILTER_TOP_K) h.top_k = {20, 0, 1};
      if (s->filters & SC_FILTER_TOP_P) h.top_p = {0.9f, 0.5f, 1.0f};
      if (s->filters & SC_FILTER_MIN_P) h.min_p = {0.0f, 0.1f, 0.0f};
      if (s->filters & SC_FILTER_TEMPERATURE) h.temperature = {0.7f, 1.0f, 0.0f};
      distinct_streams(h, outputs);
      const call_result got = run(*s, h);
      INFO(got.status.describe());
      REQUIRE(got.status.ok());
      for (int64_t r = 0; r < outputs; ++r) CHECK(got.valid[r] == 1);
    }
  }
}
