// The contract fields ABI minors 2 to 5 added, as registry::validate_sampler and contracts_of
// read them: each value known in a descriptor of its minor, refused by name in an older one
// where its writer could not have meant it (or not read at all where the older struct ends
// before the field), refused when unknown, and refused in the pairings its rules exclude.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/tests/host_descriptor.h"
#include "kernels/registry/registry.h"
#include "kernels/samplecheck_plugin.h"

namespace registry = samplecheck::registry;

namespace {

sc_sampler minor5_sampler() { return samplecheck::testing::host_descriptor("test.minor5", 5); }

sc_sampler valid_sampler() {
  return samplecheck::testing::host_descriptor("test.contracts", SC_ABI_VERSION_MINOR);
}

// One contract value and how each minor's host reads it.
struct versioning_case {
  const char* field;
  int32_t sc_sampler::*member;
  int32_t registry::sampler_contracts::*contract;
  int32_t value;  // a value of the minor that added it
  // A struct of an older minor, `older_bytes` long, stating `value` where it can: its refusal,
  // or "" where the host reads no such value there and the contract stays the default.
  uint32_t older;
  size_t older_bytes;
  const char* older_refusal;
  std::vector<int32_t> unknown;  // values no minor defines
  void (*exclude)(sc_sampler&);  // a pairing the rules refuse beside `value`, or nullptr
  const char* excluded;          // its refusal
};

void with_bf16(sc_sampler& s) { s.input_dtypes |= SC_DTYPE_BIT(SC_DTYPE_BF16); }
void with_logits(sc_sampler& s) { s.input_kind = SC_INPUT_LOGITS; }
void with_inverse_cdf(sc_sampler& s) { s.uniform_rule = SC_RULE_INVERSE_CDF_U53; }

// Packed by hand, a case to a few lines in the struct's order.
// clang-format off
const versioning_case kCases[] = {
    // ABI 1.2: the declared contracts, read from a minor-2 sampler only.
    {"rng_policy", &sc_sampler::rng_policy, &registry::sampler_contracts::rng_policy,
     SC_RNG_BATCH_SLOT, 1, registry::kSamplerSizeMinor1, "", {9}, nullptr, ""},
    {"parameter_indexing", &sc_sampler::parameter_indexing,
     &registry::sampler_contracts::parameter_indexing, SC_PARAMS_BY_OUTPUT_ROW, 1,
     registry::kSamplerSizeMinor1, "", {9}, nullptr, ""},
    {"degenerate_rows", &sc_sampler::degenerate_rows, &registry::sampler_contracts::degenerate_rows,
     SC_DEGENERATE_UNDEFINED, 1, registry::kSamplerSizeMinor1, "", {9}, nullptr, ""},
    // ABI 1.3: probs_normalisation takes minor 2's reserved word, which had to be 0 there; a
    // sampler that assumes its rows sum to 1 can only be sent float32 probs.
    {"probs_normalisation", &sc_sampler::probs_normalisation,
     &registry::sampler_contracts::probs_normalisation, SC_PROBS_ASSUME_SUM_ONE, 2,
     registry::kSamplerSizeMinor2, "field reserved1 is 2, must be 0 in minor 2", {9}, with_bf16,
     "field probs_normalisation is assume_sum_one, which needs input_kind probs and input_dtypes "
     "f32 only (a row rounded to bf16 or fp16 does not sum to 1)"},
    // ABI 1.3 also appended uniform_rule: a minor-2 struct ends before it.
    {"uniform_rule", &sc_sampler::uniform_rule, &registry::sampler_contracts::uniform_rule,
     SC_RULE_INVERSE_CDF_U53, 2, registry::kSamplerSizeMinor2, "", {2, -1}, with_logits,
     "field uniform_rule is inverse_cdf_u53, which needs input_kind probs (the rule inverts the "
     "running sum of the row as given)"},
    // ABI 1.4: inputs takes minor 3's reserved2, which had to be 0 there.
    {"inputs", &sc_sampler::inputs, &registry::sampler_contracts::inputs, SC_INPUTS_MUTATED, 3,
     registry::kSamplerSizeMinor4, "field reserved2 is 2, must be 0 in minor 3", {3}, nullptr, ""},
    // ABI 1.5: values added to minor-2 fields, refused in a descriptor of an older minor.
    {"rng_policy", &sc_sampler::rng_policy, &registry::sampler_contracts::rng_policy,
     SC_RNG_REQUEST_KEYED, 4, registry::kSamplerSizeMinor4,
     "field rng_policy is request_keyed (4), a value of minor 5; the descriptor states minor 4",
     {5}, with_inverse_cdf,
     "field uniform_rule is inverse_cdf_u53, which is stated on the Philox stream; rng_policy "
     "request_keyed draws no Philox stream"},
    {"degenerate_rows", &sc_sampler::degenerate_rows, &registry::sampler_contracts::degenerate_rows,
     SC_DEGENERATE_TREAT_AS_ZERO, 2, registry::kSamplerSizeMinor2,
     "field degenerate_rows is treat_as_zero (4), a value of minor 5; the descriptor states minor 2",
     {5}, with_logits,
     "field degenerate_rows is treat_as_zero, which needs input_kind probs (it says which "
     "probabilities count as zero)"},
};
// clang-format on

std::string refusal(const std::string& why) { return "sampler test.contracts: " + why; }

// `s` as a struct of `minor`: every byte past its `bytes` set to a pattern no field accepts,
// which the host must not read.
sc_sampler older_struct(sc_sampler s, uint32_t minor, size_t bytes) {
  s.abi_version.minor = minor;
  std::memset(reinterpret_cast<char*>(&s) + bytes, 0x5A, sizeof(s) - bytes);
  return s;
}

}  // namespace

TEST_CASE("each contract value follows the versioning rule") {
  const versioning_case& c = GENERATE(from_range(std::begin(kCases), std::end(kCases)));
  CAPTURE(c.field, c.value);
  const int32_t fallback = registry::sampler_contracts{}.*c.contract;
  sc_sampler s = valid_sampler();
  REQUIRE(registry::validate_sampler(s).empty());
  CHECK(registry::contracts_of(s).*c.contract == fallback);
  s.*c.member = c.value;
  REQUIRE(registry::validate_sampler(s).empty());
  CHECK(registry::contracts_of(s).*c.contract == c.value);
  sc_sampler older = older_struct(s, c.older, c.older_bytes);
  if (*c.older_refusal != '\0') {
    CHECK(registry::validate_sampler(older) == refusal(c.older_refusal));
    older.*c.member = 0;  // 0: the older minor's own value, or "not declared"
  }
  CHECK(registry::validate_sampler(older).empty());
  CHECK(registry::contracts_of(older).*c.contract == fallback);
  if (c.exclude != nullptr) {
    sc_sampler excluded = s;
    c.exclude(excluded);
    CHECK(registry::validate_sampler(excluded) == refusal(c.excluded));
  }
  for (const int32_t unknown : c.unknown) {
    s.*c.member = unknown;
    CHECK(
        registry::validate_sampler(s) ==
        refusal("field " + std::string(c.field) + " has unknown value " + std::to_string(unknown)));
  }
}

TEST_CASE("each minor's sampler struct ends where that minor released it") {
  CHECK(registry::kSamplerSizeMinor1 == 80);
  CHECK(registry::kSamplerSizeMinor2 == 96);
  CHECK(registry::kSamplerSizeMinor4 == 104);
  CHECK(sizeof(sc_sampler) == 120);
}

// Routes (ABI 1.5): a table the host checks entry by entry, read only from a minor-5 struct.
TEST_CASE("the routes of ABI 1.5 are checked field by field") {
  sc_sampler s = minor5_sampler();
  s.filters = SC_FILTER_TOP_K;
  sc_route routes[2] = {{"sort", SC_TIE_LOWEST_INDEX, 0}, {"fallback", SC_TIE_KEEP_TIES, 0}};
  s.num_routes = 2;
  s.routes = routes;
  REQUIRE(registry::validate_sampler(s).empty());
  CHECK(registry::routes_of(s).size() == 2);
  // A minor-4 struct ends before num_routes: whatever lies there is not read.
  sc_sampler minor4 = s;
  minor4.abi_version.minor = 4;
  CHECK(registry::validate_sampler(minor4).empty());
  CHECK(registry::routes_of(minor4).empty());
  routes[1].name = "sort";
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field routes[1].name 'sort' repeats routes[0]'s");
  routes[1] = {"fallback", 7, 0};
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field routes[1].tie_policy has unknown value 7");
  routes[1] = {"fallback", SC_TIE_KEEP_TIES, 1};
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field routes[1].reserved0 is 1, must be 0");
  routes[1].reserved0 = 0;
  s.num_routes = SC_MAX_ROUTES + 1;
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field num_routes is 17, must be 0..16");
  s.num_routes = 2;
  s.routes = nullptr;
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field routes is NULL but num_routes is 2");
  s.routes = routes;
  s.filters = 0;
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field num_routes is 2, but routes state tie policies, which act only "
        "at top-k's boundary, and the sampler does not declare top_k");
  s.filters = SC_FILTER_TOP_K;
  s.reserved3 = 3;
  CHECK(registry::validate_sampler(s) == "sampler test.minor5: field reserved3 is 3, must be 0");
}

// An ABI 1.4 plugin still loads: its samplers are read at its 104-byte stride, and the copies
// the host hands out have no routes.
TEST_CASE("a plugin laid out as ABI 1.4 loads at the 1.4 stride, without routes") {
  const registry::plugin_load_result loaded = registry::load_plugin(TEST_PLUGIN_MINOR4);
  INFO(loaded.error);
  REQUIRE(loaded.ok());
  CHECK(loaded.library->plugin().sampler_size == registry::kSamplerSizeMinor4);
  const auto samplers = loaded.library->samplers();
  REQUIRE(samplers.size() == 2);
  CHECK(std::string(samplers[0]->name) == "test.multinomial");
  CHECK(std::string(samplers[1]->name) == "test.multinomial_b");
  for (const sc_sampler* s : samplers) {
    CHECK(s->abi_version.minor == 4);
    CHECK(s->num_routes == 0);
    CHECK(s->routes == nullptr);
    CHECK(registry::routes_of(*s).empty());
  }
}
