// The example plugins as a loader sees them: dlopen, the one exported symbol, the
// version check, and a sampling call through the returned records. This executable
// does not link the CPU samplers, so everything it samples comes from the plugin.
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"

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
    std::vector<int32_t> row_index(1000, 0), tokens(1000, -7);
    std::vector<uint64_t> seeds(1000), offsets(1000, 0);
    std::vector<uint8_t> valid(1000, 0xAA);
    for (size_t r = 0; r < seeds.size(); ++r) seeds[r] = 40 + r;
    sc_sample_batch b{};
    b.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    b.input = row.data();
    b.input_dtype = SC_DTYPE_F32;
    b.num_input_rows = 1;
    b.vocab_size = 4;
    b.num_output_rows = 1000;
    b.row_index = row_index.data();
    b.seed = seeds.data();
    b.offset = offsets.data();
    b.out_token = tokens.data();
    b.out_valid = valid.data();
    char error[256] = "";
    REQUIRE(s.sample(s.context, &b, error, sizeof error) == SC_OK);
    int ones = 0;
    for (size_t r = 0; r < tokens.size(); ++r) {
      REQUIRE(valid[r] == 1);
      REQUIRE((tokens[r] == 1 || tokens[r] == 3));
      ones += tokens[r] == 1;
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
