// The collectives' part of the registry (ABI minor 6): the in-tree ones, their descriptor
// rules, and the plugin loader's reading of sc_plugin.collectives.
#include <fmt/format.h>

#include <cstring>

#include "kernels/registry/plugin_collectives.h"
#include "kernels/registry/registry.h"
#ifdef SAMPLECHECK_REGISTRY_HAS_COLLECTIVE_CPU
#include "kernels/collective/cpu_collectives.h"
#endif
#ifdef SAMPLECHECK_REGISTRY_HAS_CUDA
#include "kernels/cuda/cuda_collectives.h"
#endif

namespace samplecheck::registry {

const std::vector<const sc_collective*>& in_tree_collectives() {
  static const std::vector<const sc_collective*> all = [] {
    std::vector<const sc_collective*> list;
#ifdef SAMPLECHECK_REGISTRY_HAS_COLLECTIVE_CPU
    for (const sc_collective* c : samplecheck::collective::cpu_collectives()) list.push_back(c);
#endif
#ifdef SAMPLECHECK_REGISTRY_HAS_CUDA
    for (const sc_collective* c : samplecheck::cuda_collectives()) list.push_back(c);
#endif
    return list;
  }();
  return all;
}

const sc_collective* find_collective(std::string_view name) {
  for (const sc_collective* c : in_tree_collectives())
    if (c->name != nullptr && name == c->name) return c;
  return nullptr;
}

std::vector<const sc_collective*> plugin_library::collectives() const {
  std::vector<const sc_collective*> list;
  for (const sc_collective& c : collectives_) list.push_back(&c);
  return list;
}

const sc_collective* plugin_library::find_collective(std::string_view name) const {
  for (const sc_collective& c : collectives_)
    if (c.name != nullptr && name == c.name) return &c;
  return nullptr;
}

std::string validate_collective(const sc_collective& c) {
  const std::string name = c.name != nullptr ? c.name : "(unnamed)";
  if (c.abi_version.major != SC_ABI_VERSION_MAJOR)
    return fmt::format("collective {}: field abi_version.major is {}, samplecheck speaks {}", name,
                       c.abi_version.major, SC_ABI_VERSION_MAJOR);
  if (c.abi_version.minor < 6)
    return fmt::format(
        "collective {}: field abi_version.minor is {}, but collectives begin at minor 6", name,
        c.abi_version.minor);
  if (c.name == nullptr || c.name[0] == '\0') return "collective: field name is NULL or empty";
  if (c.run == nullptr) return fmt::format("collective {}: field run is NULL", name);
  if (c.memory_space != SC_MEMORY_HOST && c.memory_space != SC_MEMORY_CUDA &&
      c.memory_space != SC_MEMORY_HIP)
    return fmt::format("collective {}: field memory_space has unknown value {}", name,
                       c.memory_space);
  constexpr uint32_t kKnownDtypes = SC_DTYPE_BIT(SC_DTYPE_F32) | SC_DTYPE_BIT(SC_DTYPE_BF16);
  if (c.dtypes == 0 || (c.dtypes & ~kKnownDtypes) != 0)
    return fmt::format("collective {}: field dtypes is {:#x}, must name f32 and/or bf16 only", name,
                       c.dtypes);
  if (c.reduce_op != SC_REDUCE_SUM)
    return fmt::format("collective {}: field reduce_op has unknown value {}", name, c.reduce_op);
  if (c.max_world_size < 1)
    return fmt::format("collective {}: field max_world_size is {}, must be >= 1", name,
                       c.max_world_size);
  if ((c.invariants & ~(SC_INVARIANT_SIZE | SC_INVARIANT_RUN | SC_INVARIANT_TREE)) != 0)
    return fmt::format("collective {}: field invariants is {:#x}, holds unknown bits", name,
                       c.invariants);
  if (c.reserved0 != 0)
    return fmt::format("collective {}: field reserved0 is {}, must be 0", name, c.reserved0);
  if (c.flags != 0)
    return fmt::format("collective {}: field flags is {:#x}, must be 0", name, c.flags);
  return {};
}

namespace detail {

std::string check_plugin_collectives(const sc_plugin& p) {
  if (p.abi_version.minor < 6) return {};
  if (p.reserved0 != 0) return fmt::format("field reserved0 is {}, must be 0", p.reserved0);
  if (p.num_collectives < 0)
    return fmt::format("field num_collectives is {}, must be >= 0", p.num_collectives);
  if (p.num_collectives > 0 && p.collectives == nullptr)
    return fmt::format("field collectives is NULL but num_collectives is {}", p.num_collectives);
  if (p.num_collectives > 0 && p.collective_size < kCollectiveSizeMinor6)
    return fmt::format("field collective_size is {}, less than {}, the size of a minor-6 {}",
                       p.collective_size, kCollectiveSizeMinor6, "sc_collective");
  if (p.num_collectives > 0 && p.collective_size % alignof(sc_collective) != 0)
    return fmt::format("field collective_size is {}, not a multiple of alignof(sc_collective) = {}",
                       p.collective_size, alignof(sc_collective));
  return {};
}

std::string read_collectives(const sc_plugin& p, std::vector<sc_collective>& out) {
  out.clear();
  if (p.abi_version.minor < 6) return {};
  const auto* base = reinterpret_cast<const unsigned char*>(p.collectives);
  for (int32_t i = 0; i < p.num_collectives; ++i) {
    sc_collective c{};  // the host's layout: a larger (newer) entry's extra fields stay behind
    std::memcpy(&c, base + static_cast<uint64_t>(i) * p.collective_size, sizeof c);
    if (std::string why = validate_collective(c); !why.empty())
      return fmt::format("collectives[{}]: {}", i, why);
    out.push_back(c);
  }
  return {};
}

}  // namespace detail
}  // namespace samplecheck::registry
