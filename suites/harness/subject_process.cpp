#include "suites/harness/subject_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>

#include "kernels/registry/registry.h"
#include "suites/harness/host_call.h"
#include "suites/harness/sample_request.h"
#include "suites/harness/subject_reaper.h"
#include "suites/harness/subject_socket.h"

namespace samplecheck::harness {
namespace {

constexpr size_t kStderrTail = 4096;
constexpr size_t kInitialRegion = size_t{1} << 20;
constexpr double kShutdownGrace_s = 5.0;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The shared region's memfd, sealed against shrinking: a subject that truncated it would
// make this process's next read of the region a SIGBUS. Growing stays allowed (reserve()
// grows it), and F_SEAL_SEAL keeps the subject from adding F_SEAL_GROW or F_SEAL_WRITE.
// -1 (errno set) on failure.
int sealed_region() {
  const int fd = ::memfd_create("samplecheck-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) == 0) return fd;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return -1;
}

}  // namespace

subject_process::subject_process(std::string label, std::string command, server body,
                                 double handshake_s)
    : label_(std::move(label)),
      command_(std::move(command)),
      body_(std::move(body)),
      handshake_s_(handshake_s) {}

std::shared_ptr<subject_process> subject_process::exec(std::string command,
                                                       double handshake_timeout_s) {
  std::string label = fmt::format("--exec '{}'", command);
  return std::shared_ptr<subject_process>(
      new subject_process(std::move(label), std::move(command), {}, handshake_timeout_s));
}

std::shared_ptr<subject_process> subject_process::fork(server body, std::string label,
                                                       double handshake_timeout_s) {
  return std::shared_ptr<subject_process>(
      new subject_process(std::move(label), {}, std::move(body), handshake_timeout_s));
}

std::shared_ptr<subject_process> subject_process::connect(std::string socket_path,
                                                          double handshake_timeout_s) {
  auto p = std::shared_ptr<subject_process>(
      new subject_process(fmt::format("--connect '{}'", socket_path), {}, {}, handshake_timeout_s));
  p->socket_path_ = std::move(socket_path);
  return p;
}

subject_process::~subject_process() { stop(); }

void subject_process::start_connected() {
  const int shm = sealed_region();
  if (shm < 0)
    throw subject_failure{false, fmt::format("{}: memfd failed: {}", label_, strerror(errno))};
  shm_ = std::make_shared<protocol::shared_region>(shm);
  shm_->reserve(kInitialRegion);
  try {
    const connected_subject c = connect_subject(socket_path_, shm, handshake_s_);
    pid_ = c.pid, control_ = c.control;
  } catch (const std::runtime_error& e) {
    shm_.reset();
    throw subject_failure{false, e.what()};
  }
  stderr_text_.clear();
  reaped_ = false;
  weight_generation_ = 0;
  read_hello();
}

void subject_process::end_process(bool reaped) {
  if (!connected()) return end_subject(pid_, reaped);
  ::kill(pid_, SIGKILL);
}

void subject_process::launch() {
  if (connected()) return start_connected();
  become_subreaper();
  int sv[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw subject_failure{false, fmt::format("{}: socketpair failed: {}", label_, strerror(errno))};
  const int shm = sealed_region();
  if (shm < 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    ::close(sv[0]), ::close(sv[1]);
    if (shm >= 0) ::close(shm);
    throw subject_failure{false, fmt::format("{}: memfd/pipe failed: {}", label_, strerror(errno))};
  }
  shm_ = std::make_shared<protocol::shared_region>(shm);
  shm_->reserve(kInitialRegion);
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0), ::dup2(err[1], 1), ::dup2(err[1], 2);
    ::close(null), ::close(sv[0]), ::close(err[0]), ::close(err[1]);
    if (!body_) {
      for (const int fd : {sv[1], shm}) ::fcntl(fd, F_SETFD, 0);  // inherited across exec
      ::setenv(protocol::kEnvProtocol, std::to_string(protocol::kVersion).c_str(), 1);
      ::setenv(protocol::kEnvControlFd, std::to_string(sv[1]).c_str(), 1);
      ::setenv(protocol::kEnvShmFd, std::to_string(shm).c_str(), 1);
      const std::string line = "exec " + command_;
      ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const int rc = body_(sv[1], shm);
    std::fflush(nullptr);
    ::_exit(rc);
  }
  ::close(sv[1]), ::close(err[1]);
  if (pid < 0) {
    ::close(sv[0]), ::close(err[0]);
    throw subject_failure{false, fmt::format("{}: fork failed: {}", label_, strerror(errno))};
  }
  ::setpgid(pid, pid);
  pid_ = pid, control_ = sv[0], stderr_fd_ = err[0];
  ::fcntl(stderr_fd_, F_SETFL, ::fcntl(stderr_fd_, F_GETFL) | O_NONBLOCK);
  stderr_text_.clear();
  reaped_ = false;
  weight_generation_ = 0;
  read_hello();
}

void subject_process::start() {
  // Counted however the start ends: a subject that never says hello spent the time too.
  struct counted {
    double& total;
    double begun = protocol::now_seconds();
    ~counted() { total += protocol::now_seconds() - begun; }
  } on_return{start_seconds_};
  launch();
}

void subject_process::drain_stderr() {
  if (stderr_fd_ < 0) return;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(stderr_fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    stderr_text_.append(buffer, static_cast<size_t>(n));
    if (stderr_text_.size() > 2 * kStderrTail)
      stderr_text_.erase(0, stderr_text_.size() - kStderrTail);
  }
}

std::string subject_process::stderr_tail() const {
  std::string tail = stderr_text_.size() > kStderrTail
                         ? stderr_text_.substr(stderr_text_.size() - kStderrTail)
                         : stderr_text_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  if (tail.empty()) return "; its stderr was empty";
  std::replace(tail.begin(), tail.end(), '\n', '|');
  return "; the tail of its stderr: " + tail;
}

std::string subject_process::what_ended(const std::string& when) {
  if (connected())
    return fmt::format("the connected subject (pid {}) closed its connection {}", pid_, when);
  const int status = reap_within(pid_, 1.0);
  if (status < 0) return fmt::format("the subject process closed its control socket {}", when);
  reaped_ = true;  // fail() kills what is left of its group, but must not wait for it again
  return fmt::format("the subject process {} {}", wait_status_words(status), when);
}

void subject_process::fail(bool timed_out, const std::string& what) {
  if (pid_ >= 0) end_process(reaped_);
  drain_stderr();
  const std::string why = protocol::printable(fmt::format("{}: {}{}", label_, what, stderr_tail()));
  pid_ = -1;
  close_fd(control_), close_fd(stderr_fd_);
  shm_.reset();
  throw subject_failure{timed_out, why};
}

protocol::frame_status subject_process::wait_message(double deadline, nlohmann::json& message,
                                                     std::string& why) {
  for (;;) {
    drain_stderr();
    int wait_ms = 50;
    if (deadline != protocol::kNoDeadline) {
      const double left = deadline - protocol::now_seconds();
      if (left <= 0) return protocol::frame_status::timeout;
      wait_ms = std::min(wait_ms, static_cast<int>(left * 1000) + 1);
    }
    pollfd p[2] = {{control_, POLLIN, 0}, {stderr_fd_, POLLIN, 0}};
    const int ready = ::poll(p, stderr_fd_ >= 0 ? 2 : 1, wait_ms);
    if (ready < 0 && errno != EINTR) return protocol::frame_status::io_error;
    if (ready > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0)
      return protocol::recv_frame(control_, deadline, message, why);
    if (ready > 0 && (p[1].revents & POLLHUP) != 0 && (p[1].revents & POLLIN) == 0)
      close_fd(stderr_fd_);
    // A helper may hold the socket open after the subject itself has ended.
    if (!connected() && child_ended(pid_)) {
      drain_stderr();
      return protocol::frame_status::eof;
    }
  }
}

void subject_process::read_hello() {
  nlohmann::json hello;
  std::string why;
  const double deadline = protocol::now_seconds() + handshake_s_;
  switch (wait_message(deadline, hello, why)) {
    case protocol::frame_status::ok:
      break;
    case protocol::frame_status::timeout:
      fail(true, fmt::format("sent no hello within {:g} s (--handshake-timeout)", handshake_s_));
    case protocol::frame_status::eof:
      fail(false, what_ended("before its hello"));
    case protocol::frame_status::malformed:
      fail(false, "sent a malformed hello: " + why);
    case protocol::frame_status::io_error:
      fail(false, "the control socket failed");
  }
  const std::string type = hello["type"].get<std::string>();
  if (type == "error")
    fail(false, "refused to start: " + hello.value("message", std::string("(no message)")));
  if (type != "hello") fail(false, fmt::format("sent \"{}\" where its hello belongs", type));
  if (!hello.contains("protocol") || !hello["protocol"].is_number_integer())
    fail(false, "hello: field protocol is missing or not an integer");
  if (hello["protocol"].get<int64_t>() != protocol::kVersion)
    fail(false, fmt::format("hello: field protocol is {}, a version this samplecheck does not "
                            "speak (it speaks {})",
                            hello["protocol"].dump(), protocol::kVersion));
  accept_subjects(hello);
}

void subject_process::accept_subjects(const nlohmann::json& hello) {
  if (!hello.contains("subjects") || !hello["subjects"].is_array() || hello["subjects"].empty())
    fail(false, "hello: field subjects is missing, not an array, or empty");
  if (hello["subjects"].size() > protocol::kMaxSubjects)
    fail(false, fmt::format("hello: field subjects holds {} subjects, more than the {} one "
                            "samplecheck run judges",
                            hello["subjects"].size(), protocol::kMaxSubjects));
  if (!first_hello_.is_null()) {
    if (hello["subjects"] != first_hello_)
      fail(false, "hello: the restarted subject process describes other subjects than the first");
    unavailable_ = protocol::printable(hello.value("unavailable", std::string()));
    return;
  }
  std::vector<std::unique_ptr<protocol::descriptor>> parsed;
  std::set<std::string> names;
  for (const auto& entry : hello["subjects"]) {
    try {
      parsed.push_back(protocol::from_json(entry));
    } catch (const std::invalid_argument& e) {
      fail(false, fmt::format("hello: subjects[{}]: {}", parsed.size(), e.what()));
    }
    if (!names.insert(parsed.back()->name).second)
      fail(false, fmt::format("hello: subject name '{}' appears twice", parsed.back()->name));
  }
  if (hello.contains("unavailable") && !hello["unavailable"].is_string())
    fail(false, "hello: field unavailable is not a string");
  try {
    environment_ = protocol::environment_from_hello(hello);
  } catch (const std::invalid_argument& e) {
    fail(false, fmt::format("hello: {}", e.what()));
  }
  unavailable_ = protocol::printable(hello.value("unavailable", std::string()));
  first_hello_ = hello["subjects"];
  descriptors_ = std::move(parsed);
}

const std::vector<std::unique_ptr<protocol::descriptor>>& subject_process::descriptors() {
  if (pid_ < 0) start();
  return descriptors_;
}

std::string subject_process::unavailable(const std::string& name) {
  for (const auto& d : descriptors())
    if (d->name == name && !d->unavailable.empty()) return d->unavailable;
  return unavailable_;
}

const protocol::descriptor& subject_process::find(const std::string& name) {
  for (const auto& d : descriptors())
    if (d->name == name) return *d;
  throw std::invalid_argument(fmt::format("{}: no subject named '{}'", label_, name));
}

nlohmann::json subject_process::request(nlohmann::json message) {
  if (pid_ < 0) start();
  const uint64_t id = next_id_++;
  const std::string type = message["type"].get<std::string>();
  message["id"] = id;
  message["shm_size"] = shm_->size();
  const std::string when = fmt::format("during {} request {}", type, id);
  if (!protocol::send_frame(control_, message)) fail(false, what_ended(when));
  nlohmann::json reply;
  std::string why;
  const double deadline = call_deadline::current();
  switch (wait_message(deadline, reply, why)) {
    case protocol::frame_status::ok:
      break;
    case protocol::frame_status::timeout:
      fail(true, fmt::format("no reply to {} request {} within the check's time", type, id));
    case protocol::frame_status::eof:
      fail(false, what_ended("before replying to " + type + " request " + std::to_string(id)));
    case protocol::frame_status::malformed:
      fail(false, fmt::format("malformed reply to {} request {}: {}", type, id, why));
    case protocol::frame_status::io_error:
      fail(false, "the control socket failed " + when);
  }
  const std::string got = reply["type"].get<std::string>();
  if (got == "error")
    fail(false, fmt::format("reported a fatal error {}: {}", when,
                            reply.value("message", std::string("(no message)"))));
  if (got != "result")
    fail(false,
         fmt::format("malformed reply to {} request {}: field type is \"{}\", not \"result\"", type,
                     id, got));
  if (!reply.contains("id") || reply["id"] != id)
    fail(false, fmt::format("malformed reply to {} request {}: field id is {}", type, id,
                            reply.contains("id") ? reply["id"].dump() : "missing"));
  if (!reply.contains("status") || !reply["status"].is_number_integer() ||
      reply["status"].get<int64_t>() < SC_OK || reply["status"].get<int64_t>() > SC_ERR_INTERNAL)
    fail(false,
         fmt::format("malformed reply to {} request {}: field status is {}, not an "
                     "sc_status (0..4)",
                     type, id, reply.contains("status") ? reply["status"].dump() : "missing"));
  if (reply.contains("message") && !reply["message"].is_string())
    fail(false,
         fmt::format("malformed reply to {} request {}: field message is not a string", type, id));
  return reply;
}

subject_process::matmul_reply subject_process::matmul(const std::string& name,
                                                      const matmul_request& q) {
  const protocol::descriptor& d = find(name);
  if (d.kind != protocol::subject_kind::matmul)
    throw std::invalid_argument(name + " is not a matmul");
  const auto cells = static_cast<size_t>(q.m * q.n);
  protocol::region_layout layout;
  nlohmann::json arrays;
  // The operands first: their places depend on n and k only, so a region that still
  // holds this generation's operands need not be written again.
  arrays["weight"] = layout.place(static_cast<size_t>(q.n * q.k), 2);
  arrays["bias"] = q.bias != nullptr ? layout.place(static_cast<size_t>(q.n), 2) : nlohmann::json();
  arrays["a"] = layout.place(static_cast<size_t>(q.m * q.k), 2);
  arrays["out"] = layout.place(cells + kGuardRows, 2);
  arrays["out"]["count"] = cells;
  if (pid_ < 0) start();
  if (!shm_->reserve(layout.used))
    return {
        SC_ERR_INTERNAL, fmt::format("cannot grow the shared region to {} bytes", layout.used), {}};
  if (q.operands_generation == 0 || q.operands_generation != weight_generation_) {
    put(*shm_, arrays["weight"], q.weight, static_cast<size_t>(q.n * q.k));
    if (q.bias != nullptr) put(*shm_, arrays["bias"], q.bias, static_cast<size_t>(q.n));
    weight_generation_ = q.operands_generation;
  }
  put(*shm_, arrays["a"], q.a, static_cast<size_t>(q.m * q.k));
  matmul_reply out;
  out.out = guarded_buffer(cells, uint16_t{0xffff}, kGuardBf16);
  put(*shm_, arrays["out"], out.out.data(), out.out.size());
  const nlohmann::json reply = request({{"type", "matmul"},
                                        {"subject", name},
                                        {"m", q.m},
                                        {"n", q.n},
                                        {"k", q.k},
                                        {"launch_config", q.launch_config},
                                        {"operands_generation", q.operands_generation},
                                        {"arrays", arrays}});
  std::memcpy(out.out.data(), shm_->data() + arrays["out"]["at"].get<size_t>(), out.out.size() * 2);
  out.status = reply["status"].get<sc_status>();
  out.message = protocol::printable(reply.value("message", std::string()));
  return out;
}

void subject_process::stop() {
  if (pid_ < 0) return;
  protocol::send_frame(control_, {{"type", "shutdown"}});
  if (connected()) {
    // A connected server ends by closing its connection; one that does not is killed.
    nlohmann::json ignored;
    std::string why;
    const double deadline = protocol::now_seconds() + kShutdownGrace_s;
    protocol::frame_status st = protocol::frame_status::ok;
    while (st == protocol::frame_status::ok)
      st = protocol::recv_frame(control_, deadline, ignored, why);
    if (st != protocol::frame_status::eof) end_process(true);
  } else {
    end_subject(pid_, reap_within(pid_, kShutdownGrace_s) >= 0);
  }
  pid_ = -1;
  close_fd(control_), close_fd(stderr_fd_);
  shm_.reset();
}

}  // namespace samplecheck::harness
