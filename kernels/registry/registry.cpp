#include "kernels/registry/registry.h"

#include <dlfcn.h>

#include <fmt/format.h>

#ifdef SAMPLECHECK_REGISTRY_HAS_CPU
#include "kernels/cpu/cpu_samplers.h"
#endif
#ifdef SAMPLECHECK_REGISTRY_HAS_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_samplers.h"
#endif
#ifdef SAMPLECHECK_REGISTRY_HAS_MATMUL_CPU
#include "kernels/matmul/cpu_matmuls.h"
#endif
#ifdef SAMPLECHECK_REGISTRY_HAS_MATMUL_CUDA
#include "kernels/matmul/cuda_matmuls.h"
#endif

namespace samplecheck::registry {

const std::vector<const sc_sampler*>& in_tree_samplers() {
  static const std::vector<const sc_sampler*> all = [] {
    std::vector<const sc_sampler*> list;
#ifdef SAMPLECHECK_REGISTRY_HAS_CPU
    for (const sc_sampler* s : samplecheck::cpu_samplers()) list.push_back(s);
#endif
#ifdef SAMPLECHECK_REGISTRY_HAS_CUDA
    for (const sc_sampler* s : samplecheck::cuda_samplers()) list.push_back(s);
#endif
    return list;
  }();
  return all;
}

const std::vector<const sc_matmul*>& in_tree_matmuls() {
  static const std::vector<const sc_matmul*> all = [] {
    std::vector<const sc_matmul*> list;
#ifdef SAMPLECHECK_REGISTRY_HAS_MATMUL_CPU
    for (const sc_matmul* m : samplecheck::matmul::cpu_matmuls()) list.push_back(m);
#endif
#ifdef SAMPLECHECK_REGISTRY_HAS_MATMUL_CUDA
    for (const sc_matmul* m : samplecheck::matmul::cuda_matmuls()) list.push_back(m);
#endif
    return list;
  }();
  return all;
}

const sc_sampler* find_sampler(std::string_view name) {
  for (const sc_sampler* s : in_tree_samplers())
    if (s->name != nullptr && name == s->name) return s;
  return nullptr;
}

const sc_matmul* find_matmul(std::string_view name) {
  for (const sc_matmul* m : in_tree_matmuls())
    if (m->name != nullptr && name == m->name) return m;
  return nullptr;
}

bool cuda_device_present() {
#ifdef SAMPLECHECK_REGISTRY_HAS_CUDA
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) return false;
  return devices > 0;
#else
  return false;
#endif
}

plugin_library::~plugin_library() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::vector<const sc_sampler*> plugin_library::samplers() const {
  std::vector<const sc_sampler*> list;
  for (int32_t i = 0; i < plugin_->num_samplers; ++i) list.push_back(&plugin_->samplers[i]);
  return list;
}

const sc_sampler* plugin_library::find_sampler(std::string_view name) const {
  for (const sc_sampler* s : samplers())
    if (s->name != nullptr && name == s->name) return s;
  return nullptr;
}

std::string validate_sampler(const sc_sampler& s) {
  const std::string name = s.name != nullptr ? s.name : "(unnamed)";
  if (s.abi_version.major != SC_ABI_VERSION_MAJOR)
    return fmt::format("sampler {}: field abi_version.major is {}, samplecheck speaks {}", name,
                       s.abi_version.major, SC_ABI_VERSION_MAJOR);
  if (s.name == nullptr || s.name[0] == '\0') return "sampler: field name is NULL or empty";
  if (s.sample == nullptr) return fmt::format("sampler {}: field sample is NULL", name);
  if (s.memory_space != SC_MEMORY_HOST && s.memory_space != SC_MEMORY_CUDA &&
      s.memory_space != SC_MEMORY_HIP)
    return fmt::format("sampler {}: field memory_space has unknown value {}", name, s.memory_space);
  if (s.input_kind != SC_INPUT_PROBS && s.input_kind != SC_INPUT_LOGITS)
    return fmt::format("sampler {}: field input_kind has unknown value {}", name, s.input_kind);
  if ((s.input_dtypes & (SC_DTYPE_BIT(SC_DTYPE_F32) | SC_DTYPE_BIT(SC_DTYPE_BF16) |
                         SC_DTYPE_BIT(SC_DTYPE_F16))) == 0)
    return fmt::format("sampler {}: field input_dtypes names no known dtype", name);
  if (s.tie_policy != SC_TIE_KEEP_TIES && s.tie_policy != SC_TIE_LOWEST_INDEX)
    return fmt::format("sampler {}: field tie_policy has unknown value {}", name, s.tie_policy);
  if ((s.filters & SC_FILTER_TOP_K) && (s.filters & SC_FILTER_TOP_P) &&
      s.filter_order != SC_ORDER_TOP_K_FIRST && s.filter_order != SC_ORDER_JOINT)
    return fmt::format("sampler {}: field filter_order has unknown value {}", name, s.filter_order);
  return {};
}

struct plugin_loader {
  static plugin_load_result load(const std::string& path) {
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      return {nullptr, fmt::format("plugin {}: dlopen failed: {}", path, why ? why : "unknown")};
    }
    auto fail = [&](std::string message) {
      dlclose(handle);
      return plugin_load_result{nullptr, std::move(message)};
    };
    auto entry = reinterpret_cast<sc_plugin_entry>(dlsym(handle, SC_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr)
      return fail(fmt::format("plugin {}: exports no symbol '{}'", path, SC_PLUGIN_ENTRY_SYMBOL));
    const sc_plugin* plugin = entry();
    if (plugin == nullptr) return fail(fmt::format("plugin {}: {}() returned NULL", path, SC_PLUGIN_ENTRY_SYMBOL));
    if (plugin->abi_version.major != SC_ABI_VERSION_MAJOR)
      return fail(fmt::format(
          "plugin {}: ABI version mismatch: the plugin was built against samplecheck ABI {}.{}, "
          "this samplecheck speaks ABI {}.{} (the major versions must be equal; rebuild the "
          "plugin against kernels/samplecheck_plugin.h)",
          path, plugin->abi_version.major, plugin->abi_version.minor, SC_ABI_VERSION_MAJOR,
          SC_ABI_VERSION_MINOR));
    if (plugin->num_samplers < 0 || (plugin->num_samplers > 0 && plugin->samplers == nullptr))
      return fail(fmt::format("plugin {}: field num_samplers is {} but samplers is {}", path,
                              plugin->num_samplers, plugin->samplers ? "set" : "NULL"));
    for (int32_t i = 0; i < plugin->num_samplers; ++i)
      if (std::string why = validate_sampler(plugin->samplers[i]); !why.empty())
        return fail(fmt::format("plugin {}: samplers[{}]: {}", path, i, why));
    return {std::shared_ptr<plugin_library>(new plugin_library(path, handle, plugin)), {}};
  }
};

plugin_load_result load_plugin(const std::string& path) { return plugin_loader::load(path); }

}  // namespace samplecheck::registry
