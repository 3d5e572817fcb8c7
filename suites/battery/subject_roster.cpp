#include "suites/battery/subject_roster.h"

#include "suites/harness/subject_server.h"

namespace samplecheck::battery {
namespace {

// A forked subject process serving the one subject `subjects` names.
std::shared_ptr<harness::subject_process> serving(const harness::served_subjects& subjects,
                                                  const char* name) {
  return harness::subject_process::fork(
      [subjects](int control, int shm) { return harness::serve(control, shm, subjects); },
      std::string("the subject process of ") + name, kDefaultHandshakeTimeout_s);
}

}  // namespace

subject hosted(const sc_sampler& s) {
  return {.sampler = &s, .process = serving({.samplers = {&s}}, s.name)};
}
subject hosted(const sc_matmul& m) {
  return {.matmul = &m, .process = serving({.matmuls = {&m}}, m.name)};
}
subject hosted(const sc_collective& c) {
  return {.collective = &c, .process = serving({.collectives = {&c}}, c.name)};
}

void subject_roster::add_in_tree() {
  for (const sc_sampler* s : registry::in_tree_samplers()) subjects_.push_back(hosted(*s));
  for (const sc_matmul* m : registry::in_tree_matmuls()) subjects_.push_back(hosted(*m));
  for (const sc_collective* c : registry::in_tree_collectives()) subjects_.push_back(hosted(*c));
}

std::vector<const subject*> subject_roster::add_process(
    const std::shared_ptr<harness::subject_process>& p, const std::string& plugin,
    const std::string& exec) {
  std::vector<const subject*> added;
  for (const auto& d : p->descriptors()) {
    subject s{.process = p, .plugin = plugin, .exec = exec};
    if (d->kind == protocol::subject_kind::sampler)
      s.sampler = &d->sampler;
    else if (d->kind == protocol::subject_kind::matmul)
      s.matmul = &d->matmul;
    else
      s.collective = &d->collective;
    subjects_.push_back(std::move(s));
    added.push_back(&subjects_.back());
  }
  return added;
}

std::vector<const subject*> subject_roster::add_plugin(const std::string& path,
                                                       double handshake_timeout_s) {
  auto p = harness::subject_process::fork(
      [path](int control, int shm) { return harness::serve_plugin(control, shm, path); },
      "plugin " + path, handshake_timeout_s);
  return add_process(p, path, "");
}

std::vector<const subject*> subject_roster::add_exec(const std::string& command,
                                                     double handshake_timeout_s) {
  return add_process(harness::subject_process::exec(command, handshake_timeout_s), "", command);
}

std::vector<const subject*> subject_roster::add_connect(const std::string& socket_path,
                                                        double handshake_timeout_s) {
  auto added =
      add_process(harness::subject_process::connect(socket_path, handshake_timeout_s), "", "");
  for (const subject* s : added) const_cast<subject*>(s)->connect = socket_path;
  return added;
}

const subject* subject_roster::find(std::string_view name) const {
  // Later entries win, so a plugin's subject shadows an in-tree one of the same name.
  for (auto it = subjects_.rbegin(); it != subjects_.rend(); ++it)
    if (it->name() == name) return &*it;
  return nullptr;
}

subject_lookup subject_roster::lookup() const {
  return [this](std::string_view name) { return find(name); };
}

}  // namespace samplecheck::battery
