// The harness itself: a crashing, hanging or lazy subject becomes a failed check (the
// run goes on), checks that do not apply say n/a with a reason, failures leave a
// reproduction file, and plugins that cannot be used are refused with a message.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "suites/battery/catalog.h"
#include "suites/battery/distribution_tests.h"
#include "suites/battery/runner.h"
#include "suites/stats/power.h"

using namespace samplecheck::battery;

namespace {

sc_status crash_sample(void*, const sc_sample_batch*, char*, size_t) {
  ::raise(SIGSEGV);
  return SC_OK;
}
sc_status hang_sample(void*, const sc_sample_batch*, char*, size_t) {
  ::sleep(3600);
  return SC_OK;
}
sc_status lazy_sample(void*, const sc_sample_batch*, char*, size_t) { return SC_OK; }
// Always token 0, always valid: outside the support of most fixture rows.
sc_status token_zero_sample(void*, const sc_sample_batch* b, char*, size_t) {
  for (int64_t r = 0; r < b->num_output_rows; ++r) {
    b->out_token[r] = 0;
    b->out_valid[r] = 1;
  }
  return SC_OK;
}

sc_sampler fake(const char* name, sc_status (*fn)(void*, const sc_sample_batch*, char*, size_t)) {
  sc_sampler s{};
  s.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  s.name = name;
  s.memory_space = SC_MEMORY_HOST;
  s.input_kind = SC_INPUT_PROBS;
  s.input_dtypes = SC_DTYPE_BIT(SC_DTYPE_F32);
  s.tie_policy = SC_TIE_LOWEST_INDEX;
  s.filter_order = SC_ORDER_TOP_K_FIRST;
  s.philox_outputs_per_call = 2;
  s.sample = fn;
  return s;
}

const check_report& find(const battery_report& r, const std::string& check) {
  for (const auto& c : r.checks)
    if (c.check == check) return c;
  FAIL("no row for check " << check);
  return r.checks.front();
}

run_options quick(std::vector<std::string> checks) {
  run_options o;
  o.budget = quick_budget();
  o.checks = std::move(checks);
  return o;
}

}  // namespace

TEST_CASE("a crashing subject fails its checks and the run goes on", "[battery][harness]") {
  const sc_sampler s = fake("test.crash", crash_sample);
  const auto report = run_battery({&s, nullptr}, quick({"replay", "batch_reorder"}), {});
  REQUIRE(report.checks.size() == 2);
  for (const auto& c : report.checks) {
    CHECK(c.result == verdict::fail);
    CHECK_THAT(c.detail, Catch::Contains("crashed: signal 11"));
  }
  CHECK_FALSE(report.passed());
}

TEST_CASE("a hanging subject is killed at the per-check timeout", "[battery][harness]") {
  const sc_sampler s = fake("test.hang", hang_sample);
  run_options o = quick({"replay"});
  o.timeout_s = 2;
  const auto report = run_battery({&s, nullptr}, o, {});
  const auto& c = find(report, "replay");
  CHECK(c.result == verdict::fail);
  CHECK_THAT(c.detail, Catch::Contains("timed out after 2 s"));
  CHECK(c.seconds < 10);
}

TEST_CASE("an output row left unwritten is a failure, not a draw", "[battery][harness]") {
  const sc_sampler s = fake("test.lazy", lazy_sample);
  const auto report = run_battery({&s, nullptr}, quick({"support"}), {});
  const auto& c = find(report, "support");
  CHECK(c.result == verdict::fail);
  CHECK_THAT(c.detail, Catch::Contains("never wrote out_valid"));
}

TEST_CASE("an OUT token fails support at once and leaves a reproduction file", "[battery][harness]") {
  const sc_sampler s = fake("test.token_zero", token_zero_sample);
  const auto dir = std::filesystem::temp_directory_path() / ("samplecheck_repro_" + std::to_string(::getpid()));
  run_options o = quick({"support"});
  o.repro_dir = dir.string();
  const auto report = run_battery({&s, nullptr}, o, {});
  const auto& c = find(report, "support");
  CHECK(c.result == verdict::fail);
  CHECK_THAT(c.detail, Catch::Contains("token 0") && Catch::Contains("OUT") && Catch::Contains("seed"));
  REQUIRE_FALSE(c.repro_path.empty());
  std::ifstream f(c.repro_path);
  const auto repro = nlohmann::json::parse(f);
  CHECK(repro.at("subject") == "test.token_zero");
  CHECK(repro.at("check") == "support");
  CHECK(repro.contains("row"));
  CHECK(repro.contains("params"));
  CHECK(repro.at("run_seed") == kDefaultSeed);
  std::filesystem::remove_all(dir);
}

TEST_CASE("checks that do not apply say n/a with the reason, never pass", "[battery][harness]") {
  subject_catalog catalog;
  catalog.add_in_tree();
  const subject* multinomial = catalog.find("cpu.multinomial");
  REQUIRE(multinomial != nullptr);
  const auto report = run_battery(*multinomial, quick({"ties", "parameter_routing", "spelling_agreement"}), catalog.lookup());
  for (const auto& c : report.checks) {
    CAPTURE(c.check);
    CHECK(c.result == verdict::not_applicable);
    CHECK_FALSE(c.detail.empty());
  }
  // Only n/a rows: nothing ran, so nothing passed.
  CHECK_FALSE(report.passed());
}

TEST_CASE("an unknown check name is an error row", "[battery][harness]") {
  const sc_sampler s = fake("test.token_zero", token_zero_sample);
  const auto report = run_battery({&s, nullptr}, quick({"no_such_check"}), {});
  REQUIRE(report.checks.size() == 1);
  CHECK(report.checks[0].result == verdict::error);
  CHECK_FALSE(report.passed());
}

TEST_CASE("plugins that cannot be used are refused with a message", "[battery][harness]") {
  const auto missing = samplecheck::registry::load_plugin("/nonexistent/libnothing.so");
  CHECK_FALSE(missing.ok());
  CHECK_THAT(missing.error, Catch::Contains("/nonexistent/libnothing.so") && Catch::Contains("dlopen failed"));
#ifdef BAD_ABI_PLUGIN_PATH
  const auto bad = samplecheck::registry::load_plugin(BAD_ABI_PLUGIN_PATH);
  CHECK_FALSE(bad.ok());
  CHECK_THAT(bad.error, Catch::Contains("ABI version mismatch") && Catch::Contains("ABI 99."));
#endif
#ifdef EXAMPLE_PLUGIN_PATH
  const auto good = samplecheck::registry::load_plugin(EXAMPLE_PLUGIN_PATH);
  REQUIRE(good.ok());
  CHECK_FALSE(good.library->samplers().empty());
#endif
}

TEST_CASE("a malformed descriptor is named field by field", "[battery][harness]") {
  sc_sampler s = fake("test.bad", lazy_sample);
  s.sample = nullptr;
  CHECK_THAT(samplecheck::registry::validate_sampler(s), Catch::Contains("field sample is NULL"));
  s = fake("test.bad", lazy_sample);
  s.input_kind = 7;
  CHECK_THAT(samplecheck::registry::validate_sampler(s), Catch::Contains("field input_kind has unknown value 7"));
}

TEST_CASE("sample counts come from the power target, not a constant", "[battery][harness]") {
  subject_catalog catalog;
  catalog.add_in_tree();
  const subject* s = catalog.find("cpu.multinomial");
  REQUIRE(s != nullptr);
  const judged_row row = make_row(*s, samplecheck::fixtures::shape::peaked, {.vocab_size = 32000, .seed = 4}, {});
  REQUIRE(row.target.ok());
  const auto coarse = plan_gof_draws(row, 1e-7, 0.1, 0.99, 100000000);
  const auto fine = plan_gof_draws(row, 1e-7, 0.05, 0.99, 100000000);
  CHECK_FALSE(coarse.capped);
  // Noncentrality grows like n * TVD^2 and df grows with n: halving the target TVD
  // needs at least 4x the draws.
  CHECK(fine.draws >= 4 * coarse.draws);
  // And the plan meets its target: the TVD detectable at the planned draws is <= 0.1.
  CHECK(samplecheck::stats::detectable_tvd(coarse.df, 1e-7 / 3, coarse.draws, 0.99) <= 0.1 + 1e-9);
  const auto capped = plan_gof_draws(row, 1e-7, 0.001, 0.99, 5000);
  CHECK(capped.capped);
  CHECK(capped.draws == 5000);
}

