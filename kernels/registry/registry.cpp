#include "kernels/registry/registry.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>
#include <map>

#include "kernels/registry/plugin_collectives.h"

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
  for (const sc_sampler& s : samplers_) list.push_back(&s);
  return list;
}

std::vector<const sc_matmul*> plugin_library::matmuls() const {
  std::vector<const sc_matmul*> list;
  for (const sc_matmul& m : matmuls_) list.push_back(&m);
  return list;
}

const sc_sampler* plugin_library::find_sampler(std::string_view name) const {
  for (const sc_sampler& s : samplers_)
    if (s.name != nullptr && name == s.name) return &s;
  return nullptr;
}

const sc_matmul* plugin_library::find_matmul(std::string_view name) const {
  for (const sc_matmul& m : matmuls_)
    if (m.name != nullptr && name == m.name) return &m;
  return nullptr;
}

namespace {

bool known_memory_space(int32_t space) {
  return space == SC_MEMORY_HOST || space == SC_MEMORY_CUDA || space == SC_MEMORY_HIP;
}

// The fields a descriptor of `minor` has, in bytes, as far as this host knows them.
size_t sampler_bytes(uint32_t minor) {
  if (minor >= 5) return sizeof(sc_sampler);
  if (minor >= 3) return kSamplerSizeMinor4;
  return minor == 2 ? kSamplerSizeMinor2 : kSamplerSizeMinor1;
}
size_t matmul_bytes(uint32_t minor) { return minor >= 1 ? sizeof(sc_matmul) : kMatmulSizeMinor0; }

std::string check_thresholds(const std::string& name, const sc_matmul& m) {
  if (m.reserved1 != 0)
    return fmt::format("matmul {}: field reserved1 is {}, must be 0", name, m.reserved1);
  if (m.num_batch_thresholds < 0)
    return fmt::format("matmul {}: field num_batch_thresholds is {}, must be >= 0", name,
                       m.num_batch_thresholds);
  if (m.num_batch_thresholds > 0 && m.batch_thresholds == nullptr)
    return fmt::format("matmul {}: field batch_thresholds is NULL but num_batch_thresholds is {}",
                       name, m.num_batch_thresholds);
  for (int32_t i = 0; i < m.num_batch_thresholds; ++i) {
    const int64_t t = m.batch_thresholds[i];
    // M = 1 is where every choice starts, so a change can only happen at M >= 2.
    if (t < 2)
      return fmt::format("matmul {}: field batch_thresholds[{}] is {}, must be >= 2", name, i, t);
    if (i > 0 && t <= m.batch_thresholds[i - 1])
      return fmt::format(
          "matmul {}: field batch_thresholds[{}] is {}, not above batch_thresholds[{}] = {} "
          "(must ascend)",
          name, i, t, i - 1, m.batch_thresholds[i - 1]);
  }
  return {};
}

// The values minor 5 added, refused by name in a descriptor of an older minor (its writer
// could not have meant them).
std::string check_minor5_values(const std::string& name, const sc_sampler& s) {
  if (s.abi_version.minor >= 5) return {};
  if (s.rng_policy == SC_RNG_REQUEST_KEYED)
    return fmt::format(
        "sampler {}: field rng_policy is request_keyed ({}), a value of minor 5; "
        "the descriptor states minor {}",
        name, s.rng_policy, s.abi_version.minor);
  if (s.degenerate_rows == SC_DEGENERATE_TREAT_AS_ZERO)
    return fmt::format(
        "sampler {}: field degenerate_rows is treat_as_zero ({}), a value of minor "
        "5; the descriptor states minor {}",
        name, s.degenerate_rows, s.abi_version.minor);
  return {};
}

// The route table of minor 5: at most SC_MAX_ROUTES routes, each named once, each with a
// known tie policy; routes only where top-k has a boundary for them to act at.
std::string check_routes(const std::string& name, const sc_sampler& s) {
  if (s.reserved3 != 0)
    return fmt::format("sampler {}: field reserved3 is {}, must be 0", name, s.reserved3);
  if (s.num_routes == 0) return {};
  if (s.num_routes < 0 || s.num_routes > SC_MAX_ROUTES)
    return fmt::format("sampler {}: field num_routes is {}, must be 0..{}", name, s.num_routes,
                       SC_MAX_ROUTES);
  if (s.routes == nullptr)
    return fmt::format("sampler {}: field routes is NULL but num_routes is {}", name, s.num_routes);
  if ((s.filters & SC_FILTER_TOP_K) == 0)
    return fmt::format(
        "sampler {}: field num_routes is {}, but routes state tie policies, which "
        "act only at top-k's boundary, and the sampler does not declare top_k",
        name, s.num_routes);
  for (int32_t i = 0; i < s.num_routes; ++i) {
    const sc_route& r = s.routes[i];
    const size_t length = r.name != nullptr ? std::strlen(r.name) : 0;
    if (length == 0 || length > 64)
      return fmt::format("sampler {}: field routes[{}].name is {}, must be 1 to 64 bytes", name, i,
                         length == 0 ? "NULL or empty" : fmt::format("{} bytes", length));
    for (int32_t j = 0; j < i; ++j)
      if (std::strcmp(s.routes[j].name, r.name) == 0)
        return fmt::format("sampler {}: field routes[{}].name '{}' repeats routes[{}]'s", name, i,
                           r.name, j);
    if (r.tie_policy != SC_TIE_KEEP_TIES && r.tie_policy != SC_TIE_LOWEST_INDEX)
      return fmt::format("sampler {}: field routes[{}].tie_policy has unknown value {}", name, i,
                         r.tie_policy);
    if (r.reserved0 != 0)
      return fmt::format("sampler {}: field routes[{}].reserved0 is {}, must be 0", name, i,
                         r.reserved0);
  }
  return {};
}

// Pairings a minor-5 value does not allow.
std::string check_minor5_pairings(const std::string& name, const sc_sampler& s) {
  if (s.rng_policy == SC_RNG_REQUEST_KEYED && s.abi_version.minor >= 3 && s.uniform_rule != 0)
    return fmt::format(
        "sampler {}: field uniform_rule is inverse_cdf_u53, which is stated on the Philox stream; "
        "rng_policy request_keyed draws no Philox stream",
        name);
  if (s.degenerate_rows == SC_DEGENERATE_TREAT_AS_ZERO && s.input_kind != SC_INPUT_PROBS)
    return fmt::format(
        "sampler {}: field degenerate_rows is treat_as_zero, which needs input_kind probs (it "
        "says which probabilities count as zero)",
        name);
  if (s.abi_version.minor >= 5) return check_routes(name, s);
  return check_minor5_values(name, s);
}

// The declared contracts of minors 2 to 5: 0 (the default) or a known value each.
std::string check_contracts(const std::string& name, const sc_sampler& s) {
  const struct {
    int32_t value, last;
    const char* field;
  } fields[] = {
      {s.rng_policy, SC_RNG_REQUEST_KEYED, "rng_policy"},
      {s.parameter_indexing, SC_PARAMS_BY_OUTPUT_ROW, "parameter_indexing"},
      {s.degenerate_rows, SC_DEGENERATE_TREAT_AS_ZERO, "degenerate_rows"},
      {s.probs_normalisation, SC_PROBS_ASSUME_SUM_ONE, "probs_normalisation"},
      // Appended in minor 3: a minor-2 struct has no such word, so it reads 0 there.
      {s.abi_version.minor >= 3 ? s.uniform_rule : 0, SC_RULE_INVERSE_CDF_U53, "uniform_rule"},
      {s.abi_version.minor >= 4 ? s.inputs : 0, SC_INPUTS_MUTATED, "inputs"}};
  for (const auto& f : fields)
    if (f.value < 0 || f.value > f.last)
      return fmt::format("sampler {}: field {} has unknown value {}", name, f.field, f.value);
  if (s.abi_version.minor < 3 && s.probs_normalisation != 0)
    return fmt::format("sampler {}: field reserved1 is {}, must be 0 in minor {}", name,
                       s.probs_normalisation, s.abi_version.minor);
  if (s.abi_version.minor == 3 && s.inputs != 0)
    return fmt::format("sampler {}: field reserved2 is {}, must be 0 in minor 3", name, s.inputs);
  if (s.abi_version.minor >= 3 && s.uniform_rule == SC_RULE_INVERSE_CDF_U53 &&
      s.input_kind != SC_INPUT_PROBS)
    return fmt::format(
        "sampler {}: field uniform_rule is inverse_cdf_u53, which needs input_kind probs (the "
        "rule inverts the running sum of the row as given)",
        name);
  if (s.probs_normalisation == SC_PROBS_ASSUME_SUM_ONE &&
      (s.input_kind != SC_INPUT_PROBS || s.input_dtypes != SC_DTYPE_BIT(SC_DTYPE_F32)))
    return fmt::format(
        "sampler {}: field probs_normalisation is assume_sum_one, which needs input_kind probs "
        "and input_dtypes f32 only (a row rounded to bf16 or fp16 does not sum to 1)",
        name);
  return check_minor5_pairings(name, s);
}

}  // namespace

std::string validate_sampler(const sc_sampler& s) {
  const std::string name = s.name != nullptr ? s.name : "(unnamed)";
  if (s.abi_version.major != SC_ABI_VERSION_MAJOR)
    return fmt::format("sampler {}: field abi_version.major is {}, samplecheck speaks {}", name,
                       s.abi_version.major, SC_ABI_VERSION_MAJOR);
  if (s.name == nullptr || s.name[0] == '\0') return "sampler: field name is NULL or empty";
  if (s.sample == nullptr) return fmt::format("sampler {}: field sample is NULL", name);
  if (!known_memory_space(s.memory_space))
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
  if (s.flags != 0)
    return fmt::format("sampler {}: field flags is {:#x}, must be 0", name, s.flags);
  if (s.abi_version.minor >= 2) return check_contracts(name, s);
  return {};
}

std::string validate_matmul(const sc_matmul& m) {
  const std::string name = m.name != nullptr ? m.name : "(unnamed)";
  if (m.abi_version.major != SC_ABI_VERSION_MAJOR)
    return fmt::format("matmul {}: field abi_version.major is {}, samplecheck speaks {}", name,
                       m.abi_version.major, SC_ABI_VERSION_MAJOR);
  if (m.name == nullptr || m.name[0] == '\0') return "matmul: field name is NULL or empty";
  if (m.run == nullptr) return fmt::format("matmul {}: field run is NULL", name);
  if (!known_memory_space(m.memory_space))
    return fmt::format("matmul {}: field memory_space has unknown value {}", name, m.memory_space);
  if (m.num_launch_configs < 0)
    return fmt::format("matmul {}: field num_launch_configs is {}, must be >= 0", name,
                       m.num_launch_configs);
  if (m.flags != 0) return fmt::format("matmul {}: field flags is {:#x}, must be 0", name, m.flags);
  if (m.abi_version.minor >= 1) return check_thresholds(name, m);
  return {};
}

std::vector<int64_t> batch_thresholds(const sc_matmul& m) {
  if (m.abi_version.minor < 1 || m.num_batch_thresholds <= 0 || m.batch_thresholds == nullptr)
    return {};
  return {m.batch_thresholds, m.batch_thresholds + m.num_batch_thresholds};
}

// Reads a plugin's descriptor, checking each field before anything relies on it.
// Every message starts "plugin <path>: " and names the array, index and field.
struct plugin_loader {
  static plugin_load_result load(const std::string& path) {
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      return {nullptr, fmt::format("plugin {}: dlopen failed: {}", path, why ? why : "unknown")};
    }
    auto fail = [&](const std::string& message) {
      dlclose(handle);
      return plugin_load_result{nullptr, fmt::format("plugin {}: {}", path, message)};
    };
    auto entry = reinterpret_cast<sc_plugin_entry>(dlsym(handle, SC_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr && dlsym(handle, SC_PLUGIN_MANGLED_SYMBOL) != nullptr)
      return fail(fmt::format(
          "exports '{}' only as the C++-mangled symbol '{}': give it C linkage (declare it "
          "with SC_PLUGIN_EXPORT, or extern \"C\")",
          SC_PLUGIN_ENTRY_SYMBOL, SC_PLUGIN_MANGLED_SYMBOL));
    if (entry == nullptr)
      return fail(fmt::format(
          "exports no symbol '{}' (define it with SC_PLUGIN_EXPORT: C linkage and default "
          "visibility)",
          SC_PLUGIN_ENTRY_SYMBOL));
    const sc_plugin* plugin = entry();
    if (plugin == nullptr) return fail(fmt::format("{}() returned NULL", SC_PLUGIN_ENTRY_SYMBOL));
    std::vector<sc_sampler> samplers;
    std::vector<sc_matmul> matmuls;
    std::vector<sc_collective> collectives;
    if (std::string why = read(*plugin, samplers, matmuls); !why.empty()) return fail(why);
    if (std::string why = detail::read_collectives(*plugin, collectives); !why.empty())
      return fail(why);
    if (std::string why = check_names(samplers, matmuls, collectives); !why.empty())
      return fail(why);
    std::shared_ptr<plugin_library> library(new plugin_library(path, handle, plugin));
    library->samplers_ = std::move(samplers);
    library->matmuls_ = std::move(matmuls);
    library->collectives_ = std::move(collectives);
    return {std::move(library), {}};
  }

 private:
  // The stride of a plugin array and where it came from, for messages.
  struct stride {
    uint64_t bytes;
    std::string from;
  };

  // The plugin's subjects in the host's layout, or why they cannot be used.
  static std::string read(const sc_plugin& plugin, std::vector<sc_sampler>& samplers,
                          std::vector<sc_matmul>& matmuls) {
    if (std::string why = check_plugin(plugin); !why.empty()) return why;
    stride sampler_stride{kSamplerSizeMinor0, "the minor-0 size: the plugin states minor 0"};
    stride matmul_stride{kMatmulSizeMinor0, sampler_stride.from};
    if (plugin.abi_version.minor >= 1) {
      sampler_stride = {plugin.sampler_size, "field sampler_size"};
      matmul_stride = {plugin.matmul_size, "field matmul_size"};
      if (std::string why = check_stride(plugin.sampler_size, kSamplerSizeMinor0,
                                         alignof(sc_sampler), "sampler_size", "sc_sampler");
          !why.empty())
        return why;
      if (std::string why = check_stride(plugin.matmul_size, kMatmulSizeMinor0, alignof(sc_matmul),
                                         "matmul_size", "sc_matmul");
          !why.empty())
        return why;
    }
    if (std::string why = copy_entries(plugin.samplers, plugin.num_samplers, sampler_stride,
                                       sampler_bytes, "samplers", samplers);
        !why.empty())
      return why;
    if (std::string why = copy_entries(plugin.matmuls, plugin.num_matmuls, matmul_stride,
                                       matmul_bytes, "matmuls", matmuls);
        !why.empty())
      return why;
    for (size_t i = 0; i < samplers.size(); ++i)
      if (std::string why = validate_sampler(samplers[i]); !why.empty())
        return fmt::format("samplers[{}]: {}", i, why);
    for (size_t i = 0; i < matmuls.size(); ++i)
      if (std::string why = validate_matmul(matmuls[i]); !why.empty())
        return fmt::format("matmuls[{}]: {}", i, why);
    return {};
  }

  // The sc_plugin fields of minor 0, which every plugin has.
  static std::string check_plugin(const sc_plugin& plugin) {
    if (plugin.abi_version.major != SC_ABI_VERSION_MAJOR)
      return fmt::format(
          "ABI version mismatch: the plugin was built against samplecheck ABI {}.{}, this "
          "samplecheck speaks ABI {}.{} (the major versions must be equal; rebuild the plugin "
          "against kernels/samplecheck_plugin.h)",
          plugin.abi_version.major, plugin.abi_version.minor, SC_ABI_VERSION_MAJOR,
          SC_ABI_VERSION_MINOR);
    if (plugin.flags != 0) return fmt::format("field flags is {:#x}, must be 0", plugin.flags);
    if (std::string why = check_array(plugin.num_samplers, plugin.samplers, "samplers");
        !why.empty())
      return why;
    if (std::string why = check_array(plugin.num_matmuls, plugin.matmuls, "matmuls"); !why.empty())
      return why;
    if (std::string why = detail::check_plugin_collectives(plugin); !why.empty()) return why;
    if (plugin.num_samplers == 0 && plugin.num_matmuls == 0 &&
        (plugin.abi_version.minor < 6 || plugin.num_collectives == 0))
      return "exports no subject (fields num_samplers, num_matmuls and num_collectives are all 0)";
    return {};
  }

  static std::string check_array(int32_t count, const void* array, const char* field) {
    if (count < 0) return fmt::format("field num_{} is {}, must be >= 0", field, count);
    if (count > 0 && array == nullptr)
      return fmt::format("field {} is NULL but num_{} is {}", field, field, count);
    return {};
  }

  static std::string check_stride(uint64_t size, size_t minor0_size, size_t alignment,
                                  const char* field, const char* type) {
    if (size < minor0_size)
      return fmt::format("field {} is {}, less than {}, the size of a minor-0 {}", field, size,
                         minor0_size, type);
    if (size % alignment != 0)
      return fmt::format("field {} is {}, not a multiple of alignof({}) = {}", field, size, type,
                         alignment);
    return {};
  }

  // Copies each entry of a plugin array into the host's layout. The entry's own
  // minor says which fields it has; the rest of the copy stays zero (0 / NULL),
  // and fields newer than this host are left behind.
  template <class T>
  static std::string copy_entries(const void* array, int32_t count, const stride& step,
                                  size_t (*bytes_of_minor)(uint32_t), const char* field,
                                  std::vector<T>& out) {
    const auto* base = static_cast<const unsigned char*>(array);
    out.assign(static_cast<size_t>(count), T{});
    for (int32_t i = 0; i < count; ++i) {
      const unsigned char* entry = base + static_cast<uint64_t>(i) * step.bytes;
      sc_abi_version version;
      std::memcpy(&version, entry, sizeof version);  // every minor starts with it
      const size_t bytes = bytes_of_minor(version.minor);
      if (bytes > step.bytes)
        return fmt::format(
            "{}[{}]: field abi_version.minor is {}, whose fields take {} bytes, more than the "
            "array's stride of {} bytes ({})",
            field, i, version.minor, bytes, step.bytes, step.from);
      std::memcpy(&out[static_cast<size_t>(i)], entry, bytes);
    }
    return {};
  }

  // Samplers, matmuls and collectives share one namespace, with each other and with the
  // in-tree subjects: a name picks one subject wherever it is used.
  static std::string check_names(const std::vector<sc_sampler>& samplers,
                                 const std::vector<sc_matmul>& matmuls,
                                 const std::vector<sc_collective>& collectives) {
    std::map<std::string_view, std::string> seen;
    auto check = [&](const char* name, std::string where) -> std::string {
      if (registry::find_sampler(name) != nullptr || registry::find_matmul(name) != nullptr ||
          registry::find_collective(name) != nullptr)
        return fmt::format("{}: field name '{}' shadows the in-tree subject of that name", where,
                           name);
      if (const auto it = seen.find(name); it != seen.end())
        return fmt::format(
            "{}: field name '{}' is already the name of {} (samplers, matmuls and "
            "collectives share one namespace)",
            where, name, it->second);
      seen.emplace(name, std::move(where));
      return {};
    };
    for (size_t i = 0; i < samplers.size(); ++i)
      if (std::string why = check(samplers[i].name, fmt::format("samplers[{}]", i)); !why.empty())
        return why;
    for (size_t i = 0; i < matmuls.size(); ++i)
      if (std::string why = check(matmuls[i].name, fmt::format("matmuls[{}]", i)); !why.empty())
        return why;
    for (size_t i = 0; i < collectives.size(); ++i)
      if (std::string why = check(collectives[i].name, fmt::format("collectives[{}]", i));
          !why.empty())
        return why;
    return {};
  }
};

plugin_load_result load_plugin(const std::string& path) { return plugin_loader::load(path); }

}  // namespace samplecheck::registry
