// The subjects one run can see: the in-tree registry plus any plugins and --exec
// processes, so a check that needs a second subject (spelling_agreement) can find it by
// name. Every subject is served by a subject process (suites/harness/subject_process.h):
// an in-tree subject by a forked copy of this program, a plugin by a forked process that
// dlopen()s it (this process never loads a plugin), an --exec subject by its command.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "suites/battery/check.h"

namespace samplecheck::battery {

// How long a subject process may take from its start to its hello (imports, JIT builds).
inline constexpr double kDefaultHandshakeTimeout_s = 300;

// A descriptor of this program's own (an in-tree subject, a test's fake) as a subject
// served by a forked subject process, started at its first call.
subject hosted(const sc_sampler& s);
subject hosted(const sc_matmul& m);
subject hosted(const sc_collective& c);

class subject_roster {
 public:
  // Each in-tree sampler, matmul and collective in a process of its own, started at its
  // first call.
  void add_in_tree();
  // Starts the subject process and adds the subjects of its hello, in its order. Throws
  // harness::subject_failure when the process gives no usable hello (the plugin's
  // refusal, a crash or hang of its samplecheck_plugin(), a descriptor the ABI refuses).
  std::vector<const subject*> add_plugin(const std::string& absolute_path,
                                         double handshake_timeout_s = kDefaultHandshakeTimeout_s);
  std::vector<const subject*> add_exec(const std::string& command,
                                       double handshake_timeout_s = kDefaultHandshakeTimeout_s);
  // A server listening at an AF_UNIX socket, connected at each start (subject_socket.h).
  std::vector<const subject*> add_connect(const std::string& socket_path,
                                          double handshake_timeout_s = kDefaultHandshakeTimeout_s);
  const subject* find(std::string_view name) const;
  subject_lookup lookup() const;
  const std::deque<subject>& all() const { return subjects_; }

 private:
  std::vector<const subject*> add_process(const std::shared_ptr<harness::subject_process>& p,
                                          const std::string& plugin, const std::string& exec);
  std::deque<subject> subjects_;  // stable addresses: lookups hand out pointers
};

}  // namespace samplecheck::battery
