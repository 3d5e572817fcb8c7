// The example plugins as a loader sees them: dlopen, the one exported symbol, the
// version check, and a sampling call through the returned records (and the harness's
// host call). This executable does not link the CPU samplers, so everything it samples
// comes from the plugin.
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"
#include "suites/harness/host_call.h"

namespace {

const sc_plugin* load(const char* path) {
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  INFO(path << ": " << (library ? "" : dlerror()));
  REQUIRE(library != nullptr);
  const auto entry = reinterpret_cast<sc_plugin_entry>(dlsym(library, SC_PLUGIN_ENTRY_SYMBOL));
  REQUIRE(entry != nullptr);
  const sc_plugin* plugin = entry();
  REQUIRE(plugin != nullptr);
  return plugin;  // left loaded: the records point into the library
}

}  // namespace

TEST_CASE("the example plugin loads, states ABI major 1 and samples through its records") {
  const sc_plugin* plugin = load(EXAMPLE_PLUGIN_PATH);
  REQUIRE(plugin->abi_version.major == SC_ABI_VERSION_MAJOR);
  REQUIRE(plugin->num_samplers == 2);
  REQUIRE(plugin->num_matmuls == 0);
  REQUIRE(std::string(plugin->samplers[0].name) == "cpu.multinomial");
  REQUIRE(std::string(plugin->samplers[1].name) == "cpu.dual_pivot");

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

TEST_CASE("the bad-ABI plugin declares major 99, which a loader must refuse") {
  const sc_plugin* plugin = load(BAD_ABI_PLUGIN_PATH);
  REQUIRE(plugin->abi_version.major == 99);
  REQUIRE(plugin->abi_version.major != SC_ABI_VERSION_MAJOR);
}
