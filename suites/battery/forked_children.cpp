#include "suites/battery/forked_children.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace samplecheck::battery {
namespace {

void write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(3);
    done += static_cast<size_t>(n);
  }
}

// Child w: the body, then exit; an exception ends the child (status 4, its text on
// stderr), never returns into the parent's code.
[[noreturn]] void child(int w, int fd, const std::function<void(int, const json_sender&)>& body) {
  try {
    body(w, [fd](const nlohmann::json& v) { write_all(fd, v.dump() + "\n"); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", w + 1, e.what());
    std::_Exit(4);
  }
  std::_Exit(0);
}

// The children's lines as they come, until every pipe is closed.
void collect(std::vector<pollfd>& fds, const std::function<void(int, nlohmann::json)>& on_value) {
  std::vector<std::string> pending(fds.size());
  for (size_t open = fds.size(); open > 0;) {
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      throw std::runtime_error("poll failed");
    for (size_t w = 0; w < fds.size(); ++w) {
      if (fds[w].fd < 0 || fds[w].revents == 0) continue;
      char buf[1 << 16];
      const ssize_t n = ::read(fds[w].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[w].fd);
        fds[w].fd = -1;
        --open;
        continue;
      }
      pending[w].append(buf, static_cast<size_t>(n));
      for (size_t eol; (eol = pending[w].find('\n')) != std::string::npos;) {
        auto value = nlohmann::json::parse(pending[w].substr(0, eol));
        pending[w].erase(0, eol + 1);
        on_value(static_cast<int>(w), std::move(value));
      }
    }
  }
}

}  // namespace

void run_forked_children(int children, const std::function<void(int, const json_sender&)>& body,
                         const std::function<void(int, nlohmann::json)>& on_value) {
  std::vector<pollfd> fds;
  std::vector<pid_t> pids;
  for (int w = 0; w < children; ++w) {
    int p[2];
    if (::pipe(p) != 0) throw std::runtime_error("pipe failed");
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::close(p[0]);
      for (const pollfd& f : fds) ::close(f.fd);
      child(w, p[1], body);
    }
    ::close(p[1]);
    fds.push_back({p[0], POLLIN, 0});
    pids.push_back(pid);
  }
  collect(fds, on_value);
  std::string died;
  for (size_t w = 0; w < pids.size(); ++w) {
    int status = 0;
    ::waitpid(pids[w], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      died +=
          fmt::format("{}child {} of {} died ({})", died.empty() ? "" : "; ", w + 1, pids.size(),
                      WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                          : fmt::format("exit {}", WEXITSTATUS(status)));
  }
  if (!died.empty()) throw std::runtime_error(died);
}

}  // namespace samplecheck::battery
