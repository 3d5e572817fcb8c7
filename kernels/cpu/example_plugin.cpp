// A vendor-style plugin: a shared library whose only export is samplecheck_plugin().
// It re-exports two in-tree CPU samplers under names of its own (a plugin may not
// shadow an in-tree subject), so `samplecheck qualify --plugin` can be exercised end
// to end (dlopen, version check, sampling) without a vendor library.
// Built twice: as samplecheck_example_plugin, and with SAMPLECHECK_PLUGIN_ABI_MAJOR=99
// as samplecheck_bad_abi_plugin, which a loader must refuse.
#include <iterator>
#include <string_view>

#include "kernels/cpu/cpu_samplers.h"

#ifndef SAMPLECHECK_PLUGIN_ABI_MAJOR
#define SAMPLECHECK_PLUGIN_ABI_MAJOR SC_ABI_VERSION_MAJOR
#endif

namespace {

struct reexport {
  std::string_view in_tree;
  const char* exported;
};
constexpr reexport kExported[] = {{"cpu.multinomial", "example.multinomial"},
                                  {"cpu.dual_pivot", "example.dual_pivot"}};

struct example_plugin {
  sc_sampler samplers[std::size(kExported)];
  sc_plugin plugin{};

  example_plugin() {
    int32_t n = 0;
    for (const reexport& r : kExported)
      for (const sc_sampler* s : samplecheck::cpu_samplers())
        if (r.in_tree == s->name) {
          samplers[n] = *s;
          samplers[n++].name = r.exported;
        }
    plugin.abi_version = {SAMPLECHECK_PLUGIN_ABI_MAJOR, SC_ABI_VERSION_MINOR};
    plugin.name = SAMPLECHECK_PLUGIN_ABI_MAJOR == SC_ABI_VERSION_MAJOR
                      ? "samplecheck example plugin"
                      : "samplecheck bad-ABI plugin";
    plugin.num_samplers = n;
    plugin.num_matmuls = 0;
    plugin.samplers = samplers;
    plugin.matmuls = nullptr;
    plugin.flags = 0;
    plugin.sampler_size = sizeof(sc_sampler);
    plugin.matmul_size = sizeof(sc_matmul);
  }
};

}  // namespace

SC_PLUGIN_EXPORT const sc_plugin* samplecheck_plugin(void) {
  static const example_plugin instance;
  return &instance.plugin;
}
