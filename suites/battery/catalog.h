// The subjects one run can see: the in-tree registry plus any loaded plugins, so a
// check that needs a second subject (spelling_agreement) can find it by name.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "suites/battery/check.h"

namespace samplecheck::battery {

class subject_catalog {
 public:
  void add_in_tree();
  // Adds every sampler and matmul of a loaded plugin; returns them in the plugin's order.
  std::vector<const subject*> add_plugin(const std::shared_ptr<registry::plugin_library>& library);
  const subject* find(std::string_view name) const;
  subject_lookup lookup() const;
  const std::deque<subject>& all() const { return subjects_; }

 private:
  std::deque<subject> subjects_;  // stable addresses: lookups hand out pointers
};

}  // namespace samplecheck::battery
