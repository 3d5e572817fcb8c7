// Every subject samplecheck can judge, by name: the in-tree samplers (CPU always,
// CUDA when built), the in-tree matmuls, and the samplers of a vendor plugin loaded
// with dlopen. Looking a subject up never touches a GPU: the CUDA descriptors are
// static data, so a caller can fork before any CUDA initialisation.
#pragma once

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

const sc_sampler* find_sampler(std::string_view name);
const sc_matmul* find_matmul(std::string_view name);

// True when at least one CUDA device is usable. Only call it in a process that
// may initialise CUDA (a forked child, a test), never in the battery's parent.
bool cuda_device_present();

// A dlopen()ed plugin library. The handle stays open for the object's lifetime;
// the sc_sampler pointers it hands out die with it.
class plugin_library {
 public:
  ~plugin_library();
  plugin_library(const plugin_library&) = delete;
  plugin_library& operator=(const plugin_library&) = delete;

  const std::string& path() const { return path_; }
  const sc_plugin& plugin() const { return *plugin_; }
  std::vector<const sc_sampler*> samplers() const;
  const sc_sampler* find_sampler(std::string_view name) const;

 private:
  friend struct plugin_loader;
  plugin_library(std::string path, void* handle, const sc_plugin* plugin)
      : path_(std::move(path)), handle_(handle), plugin_(plugin) {}
  std::string path_;
  void* handle_;
  const sc_plugin* plugin_;
};

// Either a loaded library or a message saying why not (missing file, missing
// symbol, ABI major mismatch, malformed descriptor), never both.
struct plugin_load_result {
  std::shared_ptr<plugin_library> library;
  std::string error;
  bool ok() const { return library != nullptr; }
};

plugin_load_result load_plugin(const std::string& path);

// Checks a sampler descriptor the way the battery relies on it (version first,
// name, sample function, known enums). Empty string: valid.
std::string validate_sampler(const sc_sampler& sampler);

}  // namespace samplecheck::registry
