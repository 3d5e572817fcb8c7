#include "suites/battery/catalog.h"

namespace samplecheck::battery {

void subject_catalog::add_in_tree() {
  for (const sc_sampler* s : registry::in_tree_samplers()) subjects_.push_back({.sampler = s});
  for (const sc_matmul* m : registry::in_tree_matmuls()) subjects_.push_back({.matmul = m});
}

std::vector<const subject*> subject_catalog::add_plugin(const std::shared_ptr<registry::plugin_library>& library) {
  std::vector<const subject*> added;
  for (const sc_sampler* s : library->samplers()) {
    subjects_.push_back({.sampler = s, .library = library});
    added.push_back(&subjects_.back());
  }
  for (const sc_matmul* m : library->matmuls()) {
    subjects_.push_back({.matmul = m, .library = library});
    added.push_back(&subjects_.back());
  }
  return added;
}

const subject* subject_catalog::find(std::string_view name) const {
  // Later entries win, so a plugin's subject shadows an in-tree one of the same name.
  for (auto it = subjects_.rbegin(); it != subjects_.rend(); ++it)
    if (it->name() == name) return &*it;
  return nullptr;
}

subject_lookup subject_catalog::lookup() const {
  return [this](std::string_view name) { return find(name); };
}

}  // namespace samplecheck::battery
