#include "suites/harness/subject_reaper.h"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "suites/harness/protocol.h"

namespace samplecheck::harness {
namespace {

struct process_entry {
  pid_t pid, parent, group, session;
};

// Every process's parent and session, from /proc/PID/stat (the fields after the name's ')').
std::vector<process_entry> processes() {
  std::vector<process_entry> all;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return all;
  while (const dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    char path[64], text[512] = {0};
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) continue;
    const size_t n = std::fread(text, 1, sizeof text - 1, f);
    std::fclose(f);
    text[n] = '\0';
    const char* after = std::strrchr(text, ')');
    int parent = 0, group = 0, session = 0;
    char state = 0;
    if (after != nullptr &&
        std::sscanf(after + 1, " %c %d %d %d", &state, &parent, &group, &session) == 4)
      all.push_back({pid, static_cast<pid_t>(parent), static_cast<pid_t>(group),
                     static_cast<pid_t>(session)});
  }
  ::closedir(proc);
  return all;
}

void kill_descendants(pid_t leader) {
  const std::vector<process_entry> all = processes();
  std::vector<pid_t> below{leader};
  for (size_t i = 0; i < below.size(); ++i)
    for (const process_entry& p : all)
      if (p.parent == below[i]) below.push_back(p.pid);
  for (size_t i = 1; i < below.size(); ++i) ::kill(below[i], SIGKILL);
}

void reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// The subject's helpers that are this process's children now: those still in its group
// (killed with it, reaped here) and those in another session.
void end_orphaned_helpers(pid_t subject) {
  const pid_t self = ::getpid(), session = ::getsid(0);
  for (const process_entry& p : processes())
    if (p.parent == self && (p.session != session || p.group == subject)) {
      ::kill(p.pid, SIGKILL);
      reap(p.pid);
    }
}

}  // namespace

void become_subreaper() {
  static const bool done = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)done;
}

bool child_ended(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0)
    if (errno != EINTR) return true;
  return info.si_pid == pid;
}

int reap_within(pid_t pid, double seconds) {
  const double until = protocol::now_seconds() + seconds;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return 0;
    if (protocol::now_seconds() >= until) return -1;
    ::usleep(1000);
  }
}

void end_subject(pid_t pid, bool reaped) {
  // A reaped subject's pid may belong to another process now; its helpers are this
  // process's children already (the subreaper), which end_orphaned_helpers finds.
  if (!reaped) kill_descendants(pid);
  ::kill(-pid, SIGKILL);
  if (!reaped) {
    ::kill(pid, SIGKILL);
    reap(pid);
  }
  end_orphaned_helpers(pid);
}

std::string wait_status_words(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("crashed: signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return fmt::format("ended (wait status {:#x})", status);
}

}  // namespace samplecheck::harness
