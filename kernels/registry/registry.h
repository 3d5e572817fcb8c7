// Every subject samplecheck can judge, by name: the in-tree samplers (CPU always,
// CUDA when built), the in-tree matmuls and collectives, and the samplers, matmuls and
// collectives of a vendor plugin loaded with dlopen. Looking a subject up never touches a
// GPU: the CUDA descriptors are static data, so a caller can fork before any CUDA
// initialisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::registry {

// The in-tree samplers: cpu.* first, then cuda.* when SAMPLECHECK_CUDA is built.
const std::vector<const sc_sampler*>& in_tree_samplers();
// The in-tree matmul subjects: CPU emulations, then CUDA kernels when built.
const std::vector<const sc_matmul*>& in_tree_matmuls();

// The in-tree collectives (ABI minor 6): the CPU all-reduces (collectives.cpp).
const std::vector<const sc_collective*>& in_tree_collectives();

// In-tree subjects only; a plugin may not reuse their names (load_plugin refuses it).
const sc_sampler* find_sampler(std::string_view name);
const sc_matmul* find_matmul(std::string_view name);
const sc_collective* find_collective(std::string_view name);

// True when at least one CUDA device is usable. Only call it in a process that
// may initialise CUDA (a forked child, a test), never in the battery's parent.
bool cuda_device_present();

// The descriptor sizes of ABI minor 0, the array strides of a minor-0 plugin: the
// offset of the first field appended later (sc_sampler: minor 2, sc_matmul: minor 1).
inline constexpr size_t kSamplerSizeMinor0 = offsetof(sc_sampler, rng_policy);
// sc_sampler did not change in minor 1.
inline constexpr size_t kSamplerSizeMinor1 = kSamplerSizeMinor0;
// Minor 2 ended at probs_normalisation (then reserved1); minor 3 appended uniform_rule.
inline constexpr size_t kSamplerSizeMinor2 = offsetof(sc_sampler, uniform_rule);
// Minors 3 and 4 ended at inputs; minor 5 appended the routes.
inline constexpr size_t kSamplerSizeMinor4 = offsetof(sc_sampler, num_routes);
inline constexpr size_t kMatmulSizeMinor0 = offsetof(sc_matmul, num_batch_thresholds);
// sc_collective has had one layout since minor 6, when it was added.
inline constexpr size_t kCollectiveSizeMinor6 = sizeof(sc_collective);

// A dlopen()ed plugin library. The handle stays open for the object's lifetime;
// the descriptor pointers it hands out die with it.
class plugin_library {
 public:
  ~plugin_library();
  plugin_library(const plugin_library&) = delete;
  plugin_library& operator=(const plugin_library&) = delete;

  const std::string& path() const { return path_; }
  // As the plugin exported it: only the fields of its abi_version.minor exist, and
  // its arrays have the plugin's strides. Use samplers() / matmuls() to read them.
  const sc_plugin& plugin() const { return *plugin_; }
  // Every subject in the host's layout, copied from the plugin's array at the
  // plugin's stride; a field newer than the entry's abi_version.minor reads 0 / NULL.
  std::vector<const sc_sampler*> samplers() const;
  std::vector<const sc_matmul*> matmuls() const;
  std::vector<const sc_collective*> collectives() const;  // none before minor 6
  const sc_sampler* find_sampler(std::string_view name) const;
  const sc_matmul* find_matmul(std::string_view name) const;
  const sc_collective* find_collective(std::string_view name) const;

 private:
  friend struct plugin_loader;
  plugin_library(std::string path, void* handle, const sc_plugin* plugin)
      : path_(std::move(path)), handle_(handle), plugin_(plugin) {}
  std::string path_;
  void* handle_;
  const sc_plugin* plugin_;
  std::vector<sc_sampler> samplers_;
  std::vector<sc_matmul> matmuls_;
  std::vector<sc_collective> collectives_;
};

// Either a loaded library or a message saying why not (missing file, missing
// symbol, ABI major mismatch, malformed descriptor), never both. A refusal names
// the plugin's path, the array and index of the entry, and the field.
struct plugin_load_result {
  std::shared_ptr<plugin_library> library;
  std::string error;
  bool ok() const { return library != nullptr; }
};

plugin_load_result load_plugin(const std::string& path);

// Check a descriptor the way the battery relies on it (version first, name, the
// call, known enums, flags and reserved words 0). Empty string: valid; otherwise
// the message names the subject and the field.
std::string validate_sampler(const sc_sampler& sampler);
std::string validate_matmul(const sc_matmul& matmul);
// A collective (minor 6): version (major, and a minor of at least 6), name, run, memory
// space, dtypes, reduce_op, max_world_size >= 1, known invariant bits, reserved and flags 0.
std::string validate_collective(const sc_collective& collective);

// A sampler's declared contracts, each resolved to its SC_* value: 0 and a descriptor of
// minor 0 or 1 read as the first value (today's contract), as do the fields a descriptor's
// minor predates.
struct sampler_contracts {
  int32_t rng_policy = SC_RNG_PER_REQUEST;
  int32_t parameter_indexing = SC_PARAMS_BY_INPUT_ROW;
  int32_t degenerate_rows = SC_DEGENERATE_VALID_FLAG;
  int32_t probs_normalisation = SC_PROBS_RENORMALISE;
  int32_t uniform_rule = SC_RULE_UNDECLARED;  // 0 is a value here: "the subject does not say"
  int32_t inputs = SC_INPUTS_PRESERVED;
};
inline sampler_contracts contracts_of(const sc_sampler& s) {
  sampler_contracts c;
  if (s.abi_version.minor < 2) return c;
  if (s.rng_policy != 0) c.rng_policy = s.rng_policy;
  if (s.parameter_indexing != 0) c.parameter_indexing = s.parameter_indexing;
  if (s.degenerate_rows != 0) c.degenerate_rows = s.degenerate_rows;
  if (s.abi_version.minor < 3) return c;
  if (s.probs_normalisation != 0) c.probs_normalisation = s.probs_normalisation;
  c.uniform_rule = s.uniform_rule;
  if (s.abi_version.minor >= 4 && s.inputs != 0) c.inputs = s.inputs;
  return c;
}

// The sampler's routes (minor 5), or none when its minor predates them or it declares none
// (then every row is judged by its tie_policy). Assumes a descriptor validate_sampler accepts.
inline std::vector<sc_route> routes_of(const sc_sampler& s) {
  if (s.abi_version.minor < 5 || s.num_routes <= 0 || s.routes == nullptr) return {};
  return {s.routes, s.routes + s.num_routes};
}

// The matmul's batch_thresholds, or none when its abi_version.minor predates them
// (minor 0) or it declares none. Assumes a descriptor validate_matmul accepts.
std::vector<int64_t> batch_thresholds(const sc_matmul& matmul);

}  // namespace samplecheck::registry
