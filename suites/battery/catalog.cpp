#include "suites/battery/catalog.h"

#include <fmt/format.h>

#include "suites/harness/subject_server.h"

namespace samplecheck::battery {
namespace {

std::shared_ptr<harness::subject_process> in_tree_process(const std::string& name) {
  return harness::subject_process::fork(
      [name](int control, int shm) { return harness::serve_in_tree(control, shm, {name}); },
      "the subject process of " + name, kDefaultHandshakeTimeout_s);
}

}  // namespace

void subject_catalog::add_in_tree() {
  for (const sc_sampler* s : registry::in_tree_samplers())
    subjects_.push_back({.sampler = s, .process = in_tree_process(s->name)});
  for (const sc_matmul* m : registry::in_tree_matmuls())
    subjects_.push_back({.matmul = m, .process = in_tree_process(m->name)});
}

std::vector<const subject*> subject_catalog::add_process(
    const std::shared_ptr<harness::subject_process>& p, const std::string& plugin,
    const std::string& exec) {
  std::vector<const subject*> added;
  for (const auto& d : p->descriptors()) {
    if (!exec.empty() && (registry::find_sampler(d->name) || registry::find_matmul(d->name)))
      throw harness::subject_failure{
          false, fmt::format("{}: hello: subject name '{}' is an in-tree subject's", p->label(), d->name)};
    subject s{.process = p, .plugin = plugin, .exec = exec};
    if (d->is_sampler)
      s.sampler = &d->sampler;
    else
      s.matmul = &d->matmul;
    subjects_.push_back(std::move(s));
    added.push_back(&subjects_.back());
  }
  return added;
}

std::vector<const subject*> subject_catalog::add_plugin(const std::string& path,
                                                        double handshake_timeout_s) {
  auto p = harness::subject_process::fork(
      [path](int control, int shm) { return harness::serve_plugin(control, shm, path); },
      "plugin " + path, handshake_timeout_s);
  return add_process(p, path, "");
}

std::vector<const subject*> subject_catalog::add_exec(const std::string& command,
                                                      double handshake_timeout_s) {
  return add_process(harness::subject_process::exec(command, handshake_timeout_s), "", command);
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
