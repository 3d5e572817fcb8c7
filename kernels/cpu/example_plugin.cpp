// A vendor-style plugin: a shared library whose only export is samplecheck_plugin().
// It re-exports two in-tree CPU samplers, so `samplecheck qualify --plugin` can be
// exercised end to end (dlopen, version check, sampling) without a vendor library.
// Built twice: as samplecheck_example_plugin, and with SAMPLECHECK_PLUGIN_ABI_MAJOR=99
// as samplecheck_bad_abi_plugin, which a loader must refuse.
#include <string_view>

#include "kernels/cpu/cpu_samplers.h"

#ifndef SAMPLECHECK_PLUGIN_ABI_MAJOR
#define SAMPLECHECK_PLUGIN_ABI_MAJOR SC_ABI_VERSION_MAJOR
#endif

namespace {

constexpr std::string_view kExported[] = {"cpu.multinomial", "cpu.dual_pivot"};

struct example_plugin {
  sc_sampler samplers[std::size(kExported)];
  sc_plugin plugin{};

  example_plugin() {
    int32_t n = 0;
    for (const std::string_view name : kExported)
      for (const sc_sampler* s : samplecheck::cpu_samplers())
        if (name == s->name) samplers[n++] = *s;
    plugin.abi_version = {SAMPLECHECK_PLUGIN_ABI_MAJOR, SC_ABI_VERSION_MINOR};
    plugin.name = SAMPLECHECK_PLUGIN_ABI_MAJOR == SC_ABI_VERSION_MAJOR ? "samplecheck example plugin"
                                                                       : "samplecheck bad-ABI plugin";
    plugin.num_samplers = n;
    plugin.num_matmuls = 0;
    plugin.samplers = samplers;
    plugin.matmuls = nullptr;
    plugin.flags = 0;
  }
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin(void) {
  static const example_plugin instance;
  return &instance.plugin;
}
