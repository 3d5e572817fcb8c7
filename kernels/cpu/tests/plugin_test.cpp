// The plugins as a loader sees them: dlopen, the one exported symbol, the version
// and descriptor checks of registry::load_plugin, the array strides of each ABI
// minor, and calls through the records the loader hands out (and the harness's host
// call). The samplers and matmuls called here are the plugins' own copies (hidden
// symbols): the in-tree ones this executable links through the registry are only
// compared against.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/tests/abi_v1_0.h"
#include "kernels/registry/registry.h"
#include "kernels/samplecheck_plugin.h"
#include "reference/numeric.h"
#include "suites/harness/collective_call.h"
#include "suites/harness/host_call.h"
#include "suites/harness/matmul_call.h"

namespace registry = samplecheck::registry;
using Catch::Matchers::Contains;

namespace {

const sc_plugin* load_raw(const char* path) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  INFO(path << ": " << (library ? "" : dlerror()));
  REQUIRE(library != nullptr);
  const auto entry = reinterpret_cast<sc_plugin_entry>(dlsym(library, SC_PLUGIN_ENTRY_SYMBOL));
  REQUIRE(entry != nullptr);
  const sc_plugin* plugin = entry();
  REQUIRE(plugin != nullptr);
  return plugin;  // left loaded: the records point into the library
}

std::shared_ptr<registry::plugin_library> load_ok(const char* path) {
  const registry::plugin_load_result loaded = registry::load_plugin(path);
  INFO(loaded.error);
  REQUIRE(loaded.ok());
  REQUIRE(loaded.error.empty());
  return loaded.library;
}

// A small problem with bf16 values of every sign and a few magnitudes.
struct matmul_case {
  int64_t m, n, k;
  std::vector<uint16_t> a, weight, bias;
};

matmul_case make_case(int64_t m, int64_t n, int64_t k) {
  matmul_case c{m, n, k, {}, {}, {}};
  uint32_t state = 12345;
  auto next_bf16 = [&] {
    state = state * 1664525u + 1013904223u;
    const float v = static_cast<float>(static_cast<int32_t>(state >> 8) % 2001 - 1000) / 256.0f;
    return samplecheck::float_to_bf16(v);
  };
  for (int64_t i = 0; i < m * k; ++i) c.a.push_back(next_bf16());
  for (int64_t i = 0; i < n * k; ++i) c.weight.push_back(next_bf16());
  for (int64_t i = 0; i < n; ++i) c.bias.push_back(next_bf16());
  return c;
}

// The rule the test plugins implement, written out again: fp32 sum in increasing k,
// the bias, one rounding to bf16.
std::vector<uint16_t> expected_bits(const matmul_case& c) {
  using samplecheck::bf16_to_float;
  std::vector<uint16_t> out(static_cast<size_t>(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      float sum = 0.0f;
      for (int64_t t = 0; t < c.k; ++t)
        sum += bf16_to_float(c.a[i * c.k + t]) * bf16_to_float(c.weight[j * c.k + t]);
      out[i * c.n + j] = samplecheck::float_to_bf16(sum + bf16_to_float(c.bias[j]));
    }
  return out;
}

sc_status run(const sc_matmul& m, const matmul_case& c, int32_t launch_config,
              std::vector<uint16_t>& out, std::string& error) {
  out.assign(static_cast<size_t>(c.m * c.n), 0xDEAD);
  const sc_matmul_problem p = samplecheck::harness::make_problem(
      {c.m, c.n, c.k, c.a.data(), c.weight.data(), c.bias.data(), out.data(), launch_config});
  char message[256] = "";
  const sc_status status = m.run(m.context, &p, message, sizeof message);
  error = message;
  return status;
}

// Both matmuls of the test plugins, read through `library`: the right record at
// each index, its own context (config count and names) and the right bits.
void check_test_matmuls(const registry::plugin_library& library, bool thresholds_declared) {
  const std::vector<const sc_matmul*> matmuls = library.matmuls();
  REQUIRE(matmuls.size() == 2);
  REQUIRE(std::string(matmuls[0]->name) == "test.rows_a");
  REQUIRE(std::string(matmuls[1]->name) == "test.rows_b");
  CHECK(library.find_matmul("test.rows_b") == matmuls[1]);
  CHECK(library.find_matmul("test.rows_c") == nullptr);
  CHECK(matmuls[0]->num_launch_configs == 1);
  CHECK(matmuls[1]->num_launch_configs == 2);
  CHECK(std::string(matmuls[1]->launch_config_name(matmuls[1]->context, 1)) == "rows4");
  CHECK(matmuls[0]->launch_config_name(matmuls[0]->context, 1) == nullptr);
  CHECK(registry::batch_thresholds(*matmuls[0]).empty());
  if (thresholds_declared)
    CHECK(registry::batch_thresholds(*matmuls[1]) == std::vector<int64_t>{4});
  else
    CHECK(registry::batch_thresholds(*matmuls[1]).empty());

  const matmul_case c = make_case(5, 3, 7);
  const std::vector<uint16_t> expected = expected_bits(c);
  std::vector<uint16_t> out;
  std::string error;
  for (const sc_matmul* m : matmuls)
    for (int32_t config = -1; config < m->num_launch_configs; ++config) {
      CAPTURE(m->name, config);
      REQUIRE(run(*m, c, config, out, error) == SC_OK);
      CHECK(out == expected);
    }
  // Entry 0's context has one configuration, so config 1 is out of its range.
  CHECK(run(*matmuls[0], c, 1, out, error) == SC_ERR_INVALID_ARGUMENT);
  CHECK_THAT(error, Contains("launch_config 1 outside [-1, 1)"));
}

}  // namespace

TEST_CASE("the example plugin loads, states ABI major 1 and samples through its records") {
  const sc_plugin* plugin = load_raw(EXAMPLE_PLUGIN_PATH);
  REQUIRE(plugin->abi_version.major == SC_ABI_VERSION_MAJOR);
  REQUIRE(plugin->abi_version.minor == SC_ABI_VERSION_MINOR);
  REQUIRE(plugin->sampler_size == sizeof(sc_sampler));
  REQUIRE(plugin->num_samplers == 2);
  REQUIRE(plugin->num_matmuls == 0);
  REQUIRE(std::string(plugin->samplers[0].name) == "example.multinomial");
  REQUIRE(std::string(plugin->samplers[1].name) == "example.dual_pivot");

  const std::vector<float> row{0.0f, 0.5f, 0.0f, 0.5f};
  for (int i = 0; i < plugin->num_samplers; ++i) {
    const sc_sampler& s = plugin->samplers[i];
    CAPTURE(s.name);
    REQUIRE(s.abi_version.major == SC_ABI_VERSION_MAJOR);
    REQUIRE(s.memory_space == SC_MEMORY_HOST);
    samplecheck::harness::sample_call c;
    c.vocab_size = 4;
    c.num_input_rows = 1;
    c.input = row;
    c.row_index.assign(1000, 0);
    c.offset.assign(1000, 0);
    for (uint64_t r = 0; r < 1000; ++r) c.seed.push_back(40 + r);
    const samplecheck::harness::call_status st = samplecheck::harness::run_host_call(s, c);
    INFO(st.describe());
    REQUIRE(st.ok());
    int ones = 0;
    for (size_t r = 0; r < c.tokens.size(); ++r) {
      REQUIRE(c.valid[r] == 1);
      REQUIRE((c.tokens[r] == 1 || c.tokens[r] == 3));
      ones += c.tokens[r] == 1;
    }
    // Share 1/2 of 1000 draws: sd 16; 400..600 is more than six sd either way.
    REQUIRE(ones > 400);
    REQUIRE(ones < 600);
  }
}

TEST_CASE("the loader accepts the example plugin, whose samplers are its own copies") {
  const auto library = load_ok(EXAMPLE_PLUGIN_PATH);
  const std::vector<const sc_sampler*> samplers = library->samplers();
  REQUIRE(samplers.size() == 2);
  CHECK(library->matmuls().empty());
  const sc_sampler* multinomial = library->find_sampler("example.multinomial");
  REQUIRE(multinomial == samplers[0]);
  CHECK(library->find_sampler("example.dual_pivot") == samplers[1]);
  CHECK(library->find_sampler("cpu.multinomial") == nullptr);
  // Hidden symbols: the plugin calls its own copy, not this executable's.
  const sc_sampler* in_tree = registry::find_sampler("cpu.multinomial");
  REQUIRE(in_tree != nullptr);
  CHECK(multinomial->sample != in_tree->sample);
}

TEST_CASE("the bad-ABI plugin is refused with both versions and its path") {
  REQUIRE(load_raw(BAD_ABI_PLUGIN_PATH)->abi_version.major == 99);
  const registry::plugin_load_result loaded = registry::load_plugin(BAD_ABI_PLUGIN_PATH);
  CHECK_FALSE(loaded.ok());
  CHECK_THAT(loaded.error,
             Contains(std::string("plugin ") + BAD_ABI_PLUGIN_PATH +
                      ": ABI version mismatch: "
                      "the plugin was built against samplecheck ABI 99.") &&
                 Contains("this samplecheck speaks ABI 1." + std::to_string(SC_ABI_VERSION_MINOR)));
}

TEST_CASE("each malformed plugin is refused with a message naming the entry and the field") {
  struct refusal {
    const char* path;
    const char* message;  // after "plugin <path>: "
  };
  const refusal refusals[] = {
      {TEST_PLUGIN_DUPLICATE_NAME,
       "matmuls[1]: field name 'test.multinomial' is already the name of samplers[0] "
       "(samplers, matmuls and collectives share one namespace)"},
      {TEST_PLUGIN_SHADOW,
       "matmuls[1]: field name 'cpu.segmented' shadows the in-tree subject of that name"},
      {TEST_PLUGIN_EMPTY,
       "exports no subject (fields num_samplers, num_matmuls and num_collectives are all 0)"},
      {TEST_PLUGIN_PLUGIN_FLAGS, "field flags is 0x1, must be 0"},
      {TEST_PLUGIN_MATMUL_FLAGS, "matmuls[1]: matmul test.rows_b: field flags is 0x4, must be 0"},
      {TEST_PLUGIN_RESERVED1, "matmuls[1]: matmul test.rows_b: field reserved1 is 7, must be 0"},
      {TEST_PLUGIN_NULL_RUN, "matmuls[1]: matmul test.rows_b: field run is NULL"},
      {TEST_PLUGIN_UNSORTED_THRESHOLDS,
       "matmuls[1]: matmul test.rows_b: field batch_thresholds[1] is 4, not above "
       "batch_thresholds[0] = 8 (must ascend)"},
      {TEST_PLUGIN_NULL_ARRAY, "field matmuls is NULL but num_matmuls is 2"},
      {TEST_PLUGIN_NEGATIVE_COUNT, "field num_samplers is -1, must be >= 0"},
      {TEST_PLUGIN_SMALL_STRIDE,
       "field matmul_size is 40, less than 64, the size of a minor-0 sc_matmul"},
      {TEST_PLUGIN_SHORT_STRIDE,
       "matmuls[0]: field abi_version.minor is 6, whose fields take 80 bytes, more than the "
       "array's stride of 64 bytes (field matmul_size)"},
      {TEST_PLUGIN_COLLECTIVE_WORLD,
       "collectives[0]: collective test.allreduce: field max_world_size is 0, must be >= 1"},
      {TEST_PLUGIN_COLLECTIVE_STRIDE,
       "field collective_size is 40, less than 72, the size of a minor-6 sc_collective"},
  };
  for (const refusal& r : refusals) {
    CAPTURE(r.path);
    // Each variant is well formed but for its one broken rule: the raw record loads.
    REQUIRE(load_raw(r.path)->abi_version.major == SC_ABI_VERSION_MAJOR);
    const registry::plugin_load_result loaded = registry::load_plugin(r.path);
    CHECK_FALSE(loaded.ok());
    CHECK(loaded.library == nullptr);
    CHECK(loaded.error == std::string("plugin ") + r.path + ": " + r.message);
  }
}

TEST_CASE("a minor-6 plugin may export collectives alone; the loader's copy is called") {
  const auto library = load_ok(TEST_PLUGIN_COLLECTIVES_ONLY);
  CHECK(library->samplers().empty());
  CHECK(library->matmuls().empty());
  REQUIRE(library->collectives().size() == 1);
  const sc_collective* c = library->find_collective("test.allreduce");
  REQUIRE(c == library->collectives()[0]);
  CHECK(registry::validate_collective(*c).empty());
  const auto reply = samplecheck::harness::call_collective(*c, {{1.0f, 0.5f}, {2.0f, 0.25f}}, 2);
  REQUIRE(reply.status == SC_OK);
  CHECK(reply.fault.empty());  // both ranks written, with the same bits
  CHECK(reply.out == std::vector<float>{3.0f, 0.75f});
}

TEST_CASE("a plugin laid out as ABI 1.0 is read at the 1.0 stride, without thresholds") {
  const sc_plugin* raw = load_raw(TEST_PLUGIN_MINOR0);
  REQUIRE(raw->abi_version.minor == 0);
  // Indexed at today's 80-byte stride, entry 1 would start inside the 64-byte
  // entry 1 of the plugin, 16 bytes in: on its description, not its version.
  const auto* v1_0 = reinterpret_cast<const sc_plugin_v1_0*>(raw);
  REQUIRE(std::string(v1_0->matmuls[1].name) == "test.rows_b");
  CHECK(std::memcmp(&raw->matmuls[1], &v1_0->matmuls[1], sizeof(sc_abi_version)) != 0);

  const auto library = load_ok(TEST_PLUGIN_MINOR0);
  CHECK(library->samplers().empty());
  for (const sc_matmul* m : library->matmuls()) {
    CHECK(m->abi_version.minor == 0);
    // The copy's fields of minor 1 read 0 / NULL: the 1.0 record has none.
    CHECK(m->num_batch_thresholds == 0);
    CHECK(m->reserved1 == 0);
    CHECK(m->batch_thresholds == nullptr);
  }
  check_test_matmuls(*library, false);
}

TEST_CASE("a plugin of a newer minor is accepted at its strides, its newer fields ignored") {
  const sc_plugin* raw = load_raw(TEST_PLUGIN_FUTURE_MINOR);
  REQUIRE(raw->abi_version.minor == SC_ABI_VERSION_MINOR + 1);
  REQUIRE(raw->matmul_size == sizeof(sc_matmul) + 8);
  const auto library = load_ok(TEST_PLUGIN_FUTURE_MINOR);
  REQUIRE(library->samplers().size() == 1);
  CHECK(std::string(library->samplers()[0]->name) == "test.multinomial");
  check_test_matmuls(*library, true);
}

TEST_CASE("the minor-0 strides are the sizes ABI 1.0 released") {
  CHECK(registry::kMatmulSizeMinor0 == sizeof(sc_matmul_v1_0));
  CHECK(registry::kSamplerSizeMinor0 == 80);
  CHECK(registry::kMatmulSizeMinor0 < sizeof(sc_matmul));
}

namespace {

sc_status never_called(void*, const sc_matmul_problem*, char*, size_t) { return SC_ERR_INTERNAL; }

sc_matmul valid_matmul() {
  static const int64_t thresholds[] = {2, 9, 300};
  sc_matmul m{};
  m.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  m.name = "test.descriptor";
  m.memory_space = SC_MEMORY_HOST;
  m.num_launch_configs = 3;
  m.run = never_called;
  m.num_batch_thresholds = 3;
  m.batch_thresholds = thresholds;
  return m;
}

}  // namespace

TEST_CASE("validate_matmul names the field it refuses") {
  REQUIRE(registry::validate_matmul(valid_matmul()).empty());
  CHECK(registry::batch_thresholds(valid_matmul()) == std::vector<int64_t>{2, 9, 300});
  const int64_t below_two[] = {1, 5};
  const int64_t repeated[] = {3, 3};
  struct mutation {
    void (*apply)(sc_matmul&);
    const char* message;
  };
  static const int64_t* below = below_two;
  static const int64_t* twice = repeated;
  const mutation mutations[] = {
      {[](sc_matmul& m) { m.abi_version.major = 2; },
       "matmul test.descriptor: field abi_version.major is 2, samplecheck speaks 1"},
      {[](sc_matmul& m) { m.name = ""; }, "matmul: field name is NULL or empty"},
      {[](sc_matmul& m) { m.name = nullptr; }, "matmul: field name is NULL or empty"},
      {[](sc_matmul& m) { m.run = nullptr; }, "matmul test.descriptor: field run is NULL"},
      {[](sc_matmul& m) { m.memory_space = 5; },
       "matmul test.descriptor: field memory_space has unknown value 5"},
      {[](sc_matmul& m) { m.num_launch_configs = -1; },
       "matmul test.descriptor: field num_launch_configs is -1, must be >= 0"},
      {[](sc_matmul& m) { m.flags = 0x10; },
       "matmul test.descriptor: field flags is 0x10, must be 0"},
      {[](sc_matmul& m) { m.reserved1 = -3; },
       "matmul test.descriptor: field reserved1 is -3, must be 0"},
      {[](sc_matmul& m) { m.num_batch_thresholds = -1; },
       "matmul test.descriptor: field num_batch_thresholds is -1, must be >= 0"},
      {[](sc_matmul& m) { m.batch_thresholds = nullptr; },
       "matmul test.descriptor: field batch_thresholds is NULL but num_batch_thresholds is 3"},
      {[](sc_matmul& m) {
         m.num_batch_thresholds = 2;
         m.batch_thresholds = below;
       },
       "matmul test.descriptor: field batch_thresholds[0] is 1, must be >= 2"},
      {[](sc_matmul& m) {
         m.num_batch_thresholds = 2;
         m.batch_thresholds = twice;
       },
       "matmul test.descriptor: field batch_thresholds[1] is 3, not above batch_thresholds[0] = "
       "3 (must ascend)"},
  };
  for (const mutation& mu : mutations) {
    sc_matmul m = valid_matmul();
    mu.apply(m);
    CHECK(registry::validate_matmul(m) == mu.message);
  }
}

TEST_CASE("a minor-0 matmul's minor-1 fields are not read, whatever their bytes") {
  sc_matmul m = valid_matmul();
  m.abi_version.minor = 0;
  // What lies past a 1.0 record in memory: the next entry, here as garbage.
  m.num_batch_thresholds = -5;
  m.reserved1 = 0x55;
  m.batch_thresholds = nullptr;
  CHECK(registry::validate_matmul(m).empty());
  CHECK(registry::batch_thresholds(m).empty());
  m.num_batch_thresholds = 3;
  m.batch_thresholds = valid_matmul().batch_thresholds;
  CHECK(registry::batch_thresholds(m).empty());
}

TEST_CASE("validate_sampler refuses non-zero flags, naming the field") {
  const sc_sampler* in_tree = registry::find_sampler("cpu.multinomial");
  REQUIRE(in_tree != nullptr);
  sc_sampler s = *in_tree;
  REQUIRE(registry::validate_sampler(s).empty());
  s.flags = 2;
  CHECK(registry::validate_sampler(s) == "sampler cpu.multinomial: field flags is 0x2, must be 0");
}

TEST_CASE("every in-tree subject passes the checks a plugin's must pass") {
  for (const sc_sampler* s : registry::in_tree_samplers()) {
    CAPTURE(s->name);
    CHECK(registry::validate_sampler(*s).empty());
  }
  for (const sc_matmul* m : registry::in_tree_matmuls()) {
    CAPTURE(m->name);
    CHECK(registry::validate_matmul(*m).empty());
    CHECK(m->abi_version.minor == SC_ABI_VERSION_MINOR);
  }
}
