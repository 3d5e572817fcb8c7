#include "suites/battery/isolation.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>

#include <fmt/format.h>

namespace samplecheck::battery {
namespace {

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

isolated_result run_check(const check_definition& check, const check_context& ctx, double timeout_s, bool isolate) {
  isolated_result result;
  const double start = now_seconds();
  if (!isolate) {
    result.outcome = guarded_run(check, ctx);
    result.seconds = now_seconds() - start;
    return result;
  }
  int fds[2];
  if (::pipe(fds) != 0) {
    result.outcome = harness_failure(fmt::format("pipe() failed: {}", std::strerror(errno)));
    return result;
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    result.outcome = harness_failure(fmt::format("fork() failed: {}", std::strerror(errno)));
    return result;
  }
  if (pid == 0) {
    ::close(fds[0]);
    const std::string payload = outcome_to_json(guarded_run(check, ctx)).dump();
    // _exit: no atexit handlers or static destructors of the parent's state.
    ::_exit(write_all(fds[1], payload) ? 0 : 3);
  }
  ::close(fds[1]);
  std::string payload;
  char buffer[65536];
  const double deadline = start + timeout_s;
  bool eof = false;
  while (!eof) {
    const double left = deadline - now_seconds();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) eof = true;
    else payload.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (result.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.seconds = now_seconds() - start;
  if (result.timed_out) {
    result.crashed = true;
    result.why = fmt::format("timed out after {:.0f} s (per-check timeout); the child was killed", timeout_s);
    return result;
  }
  if (WIFSIGNALED(status)) {
    result.crashed = true;
    result.why = fmt::format("the subject crashed: signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return result;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    result.crashed = true;
    result.why = fmt::format("the check's process exited with status {}", WEXITSTATUS(status));
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
