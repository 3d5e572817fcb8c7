// The contract values ABI 1.5 added, as registry::validate_sampler and contracts_of read them:
// known in a minor-5 descriptor, refused by name in an older one (its writer could not have
// meant them), and refused in the pairings their rules exclude.
#include <catch2/catch.hpp>
#include <string>

#include "kernels/cpu/tests/host_descriptor.h"
#include "kernels/registry/registry.h"
#include "kernels/samplecheck_plugin.h"

namespace registry = samplecheck::registry;

namespace {

sc_sampler minor5_sampler() { return samplecheck::testing::host_descriptor("test.minor5", 5); }

}  // namespace

TEST_CASE("rng_policy request_keyed of ABI 1.5 follows the versioning rule") {
  sc_sampler s = minor5_sampler();
  s.rng_policy = SC_RNG_REQUEST_KEYED;
  REQUIRE(registry::validate_sampler(s).empty());
  CHECK(registry::contracts_of(s).rng_policy == SC_RNG_REQUEST_KEYED);
  sc_sampler minor4 = s;
  minor4.abi_version.minor = 4;
  CHECK(registry::validate_sampler(minor4) ==
        "sampler test.minor5: field rng_policy is request_keyed (4), a value of minor 5; the "
        "descriptor states minor 4");
  s.uniform_rule = SC_RULE_INVERSE_CDF_U53;
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field uniform_rule is inverse_cdf_u53, which is stated on the "
        "Philox stream; rng_policy request_keyed draws no Philox stream");
  s.rng_policy = SC_RNG_REQUEST_KEYED + 1;
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field rng_policy has unknown value 5");
}

TEST_CASE("degenerate_rows treat_as_zero of ABI 1.5 follows the versioning rule") {
  sc_sampler s = minor5_sampler();
  s.degenerate_rows = SC_DEGENERATE_TREAT_AS_ZERO;
  REQUIRE(registry::validate_sampler(s).empty());
  CHECK(registry::contracts_of(s).degenerate_rows == SC_DEGENERATE_TREAT_AS_ZERO);
  sc_sampler minor2 = s;
  minor2.abi_version.minor = 2;
  CHECK(registry::validate_sampler(minor2) ==
        "sampler test.minor5: field degenerate_rows is treat_as_zero (4), a value of minor 5; "
        "the descriptor states minor 2");
  s.input_kind = SC_INPUT_LOGITS;
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field degenerate_rows is treat_as_zero, which needs input_kind "
        "probs (it says which probabilities count as zero)");
  s.input_kind = SC_INPUT_PROBS;
  s.degenerate_rows = SC_DEGENERATE_TREAT_AS_ZERO + 1;
  CHECK(registry::validate_sampler(s) ==
        "sampler test.minor5: field degenerate_rows has unknown value 5");
}

// Routes (ABI 1.5): a table the host checks entry by entry, read only from a minor-5 struct.
TEST_CASE("the routes of ABI 1.5 are checked field by field") {
  CHECK(registry::kSamplerSizeMinor4 == 104);
  CHECK(sizeof(sc_sampler) == 120);
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
