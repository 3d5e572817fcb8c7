#include "suites/harness/subject_socket.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace samplecheck::harness {
namespace {

[[noreturn]] void refuse(int fd, const std::string& path, const char* step) {
  const std::string why = std::strerror(errno);
  if (fd >= 0) ::close(fd);
  throw std::runtime_error(fmt::format("--connect '{}': {}: {}", path, step, why));
}

// One byte and room for one control message (a descriptor going, credentials coming):
// what each direction of the handover carries. Not copyable: the header points into it.
struct one_byte_message {
  char byte = 0;
  iovec data{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))] = {};
  msghdr header{};
  explicit one_byte_message(size_t control_bytes) {
    header.msg_iov = &data;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = control_bytes;
  }
  one_byte_message(const one_byte_message&) = delete;
  one_byte_message& operator=(const one_byte_message&) = delete;
};

void send_region(int fd, int shm_fd) {
  one_byte_message m(CMSG_SPACE(sizeof(int)));
  cmsghdr* c = CMSG_FIRSTHDR(&m.header);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &shm_fd, sizeof(int));
  ssize_t sent = -1;
  do sent = ::sendmsg(fd, &m.header, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent != 1) throw std::runtime_error(std::strerror(errno));
}

// The server's answer and, from the kernel, the pid of the process that sent it.
pid_t read_answer(int fd, double timeout_s) {
  pollfd ready{fd, POLLIN, 0};
  const int wait_ms = static_cast<int>(std::min(timeout_s, 2.0e6) * 1000);
  int n = 0;
  do n = ::poll(&ready, 1, wait_ms);
  while (n < 0 && errno == EINTR);
  if (n == 0) throw std::runtime_error(fmt::format("no answer within {:g} s", timeout_s));
  one_byte_message m(CMSG_SPACE(sizeof(ucred)));
  m.byte = 1;
  ssize_t got = -1;
  do got = ::recvmsg(fd, &m.header, 0);
  while (got < 0 && errno == EINTR);
  if (got != 1)
    throw std::runtime_error(got == 0 ? "closed before its answer" : std::strerror(errno));
  for (cmsghdr* c = CMSG_FIRSTHDR(&m.header); c != nullptr; c = CMSG_NXTHDR(&m.header, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
      ucred sender{};
      std::memcpy(&sender, CMSG_DATA(c), sizeof sender);
      if (m.byte != 0) throw std::runtime_error(fmt::format("answered {}, not 0", int{m.byte}));
      return sender.pid;
    }
  throw std::runtime_error("the answer carried no credentials");
}

}  // namespace

connected_subject connect_subject(const std::string& path, int shm_fd, double timeout_s) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path)
    throw std::runtime_error(fmt::format("--connect '{}': a socket path must be 1 to {} bytes",
                                         path, sizeof address.sun_path - 1));
  std::memcpy(address.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) refuse(fd, path, "socket");
  const int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0)
    refuse(fd, path, "SO_PASSCRED");
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    refuse(fd, path, "connect");
  ucred listener{};
  socklen_t size = sizeof listener;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &listener, &size) != 0)
    refuse(fd, path, "SO_PEERCRED");
  const char* step = "sending the shared region";
  try {
    send_region(fd, shm_fd);
    step = "reading the server's answer";
    const pid_t server = read_answer(fd, timeout_s);
    if (server == listener.pid || server == ::getpid() || server <= 1)
      throw std::runtime_error(fmt::format(
          "pid {} answered, the listener itself: serve each connection in a forked child", server));
    return {fd, server};
  } catch (const std::runtime_error& e) {
    ::close(fd);
    throw std::runtime_error(fmt::format("--connect '{}': {}: {}", path, step, e.what()));
  }
}

}  // namespace samplecheck::harness
