#include "suites/battery/isolation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>

#include <fmt/format.h>

namespace samplecheck::battery {
namespace {

// The child's exit status when it could not hand its result over (no subject is
// likely to pick it).
constexpr int kNoResultWritten = 117;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The check itself, exceptions included; the device check happens here, in the
// process that will use the device.
check_outcome guarded_run(const check_definition& check, const check_context& ctx) {
  std::string why;
  if (!memory_space_available(ctx.subj, &why)) {
    check_outcome o;
    o.unavailable = true;
    o.detail = why;
    return o;
  }
  try {
    return check.run(ctx);
  } catch (const std::exception& e) {
    return harness_failure(fmt::format("exception in check {}: {}", check.name, e.what()));
  } catch (...) {
    return harness_failure(fmt::format("unknown exception in check {}", check.name));
  }
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

nlohmann::json outcome_to_json(const check_outcome& o) {
  return {{"exact_failure", o.exact_failure}, {"p_value", std::isnan(o.p_value) ? nlohmann::json() : nlohmann::json(o.p_value)},
          {"power", o.power}, {"samples", o.samples}, {"detail", o.detail}, {"repro", o.repro},
          {"unavailable", o.unavailable}, {"harness_error", o.harness_error}, {"nothing_to_test", o.nothing_to_test}};
}

check_outcome outcome_from_json(const nlohmann::json& j) {
  check_outcome o;
  o.exact_failure = j.at("exact_failure").get<bool>();
  o.p_value = j.at("p_value").is_null() ? std::nan("") : j.at("p_value").get<double>();
  o.power = j.at("power").get<std::string>();
  o.samples = j.at("samples").get<uint64_t>();
  o.detail = j.at("detail").get<std::string>();
  o.repro = j.at("repro");
  o.unavailable = j.at("unavailable").get<bool>();
  o.harness_error = j.at("harness_error").get<std::string>();
  o.nothing_to_test = j.at("nothing_to_test").get<std::string>();
  return o;
}

namespace {

// The child: its own process group (so a timeout can kill the subject's helpers with
// it), dead with the parent, and _exit so no atexit handler or static destructor of
// the parent's state runs twice.
[[noreturn]] void run_child(const check_definition& check, const check_context& ctx, int write_fd,
                            pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(kNoResultWritten);  // the parent died before prctl
  const std::string payload = outcome_to_json(guarded_run(check, ctx)).dump();
  ::_exit(write_all(write_fd, payload) ? 0 : kNoResultWritten);
}

// Appends what the pipe holds now without waiting for more; false at end of file.
bool read_available(int fd, std::string& payload) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      payload.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0;  // EAGAIN: nothing more buffered; 0: every writer has closed
  }
}

// Whether the child has ended, without reaping it: the zombie keeps its pid and so its
// process group id reserved until kill_group_and_reap() has run.
bool child_ended(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0)
    if (errno != EINTR) return true;  // no such child: nothing left to wait for
  return info.si_pid == pid;
}

// Kills whatever is left of the check's process group (the subject's helpers, or the
// child itself on a timeout), then reaps the child.
int kill_group_and_reap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// What ended a child that left no readable result.
std::string what_ended(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("the subject crashed: signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == kNoResultWritten)
    return fmt::format("the check's process could not write its result (exit status {})",
                       kNoResultWritten);
  if (WIFEXITED(status))
    return fmt::format(
        "the subject ended the check's process (exit status {}) before the check finished",
        WEXITSTATUS(status));
  return fmt::format("the check's process ended abnormally (wait status {:#x})", status);
}

}  // namespace

isolated_result run_check(const check_definition& check, const check_context& ctx, double timeout_s, bool isolate) {
  isolated_result result;
  const double start = now_seconds();
  if (!isolate) {
    result.outcome = guarded_run(check, ctx);
    result.seconds = now_seconds() - start;
    return result;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    result.outcome = harness_failure(fmt::format("pipe() failed: {}", std::strerror(errno)));
    return result;
  }
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    result.outcome = harness_failure(fmt::format("fork() failed: {}", std::strerror(errno)));
    return result;
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(check, ctx, fds[1], parent);
  }
  ::setpgid(pid, pid);  // as the child does: whichever runs first, the group exists
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  // The check is over when the child ends, not when the pipe closes: a helper the
  // subject started may hold the pipe open for as long as it lives. So the pipe is read
  // as it fills (a result larger than the pipe's buffer needs that), and the child is
  // looked at every few milliseconds; once it has ended, its result is all buffered.
  std::string payload;
  bool pipe_open = true;
  const double deadline = start + timeout_s;
  for (;;) {
    if (child_ended(pid)) {
      if (pipe_open) read_available(fds[0], payload);
      break;
    }
    const double left = deadline - now_seconds();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    const int wait_ms = static_cast<int>(std::min(left, 0.01) * 1000) + 1;
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, pipe_open ? 1 : 0, wait_ms);
    if (ready > 0 && !read_available(fds[0], payload)) pipe_open = false;
  }
  ::close(fds[0]);
  const int status = kill_group_and_reap(pid);
  result.seconds = now_seconds() - start;
  if (result.timed_out) {
    result.crashed = true;
    result.why = fmt::format(
        "timed out after {:.0f} s (per-check timeout); the check's processes were killed",
        timeout_s);
    return result;
  }
  const bool finished = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !payload.empty();
  if (!finished) {
    result.crashed = true;
    result.why = what_ended(status);
    return result;
  }
  try {
    result.outcome = outcome_from_json(nlohmann::json::parse(payload));
  } catch (const std::exception& e) {
    result.outcome = harness_failure(fmt::format("unreadable result from the check's process: {}", e.what()));
  }
  return result;
}

}  // namespace samplecheck::battery
