// The --connect side of a subject process: samplecheck connects to a listening AF_UNIX
// socket instead of starting a command. A caller that cannot be started by a command (a
// closure inside a pytest process) forks a server per connection; samplecheck hands it the
// shared region's memfd over the socket and learns its pid from the kernel, so that a
// hung one can be ended like any subject process.
#pragma once

#include <sys/types.h>

#include <string>

namespace samplecheck::harness {

struct connected_subject {
  int control = -1;  // the connection: the protocol's control socket
  pid_t pid = -1;    // the process at the other end (SO_PEERCRED)
};

// Connects to `path`, sends one byte (0) carrying `shm_fd` as SCM_RIGHTS, and reads the
// server's one-byte answer, whose sender pid the kernel states (SO_PASSCRED). That pid is
// the serving process, which must not be the listener (SO_PEERCRED): samplecheck ends a
// hung subject by its pid. Throws std::runtime_error saying which step failed and why,
// also when no answer comes within `timeout_s`.
connected_subject connect_subject(const std::string& path, int shm_fd, double timeout_s);

}  // namespace samplecheck::harness
