// samplecheck bisect: git bisect run with a build command and a samplecheck check.
//
// Each step runs a script (written to the work folder) in the repository: the build
// (failure: exit 125, git skips the commit), then the check with --repro-dir added for
// a qualify, so every failing commit leaves its reproduction record. Both run under the
// step timeout. Only the check's 0 (good) and 1 (bad) are verdicts; any other status (2
// usage or no subject process, 77 no device, 126/127 not runnable, a signal, the
// timeout) judged nothing, and the step stops the bisection (exit 255) rather than let
// git read it as bad. Both ends are checked before git bisect starts: good must build
// and pass, bad must build and fail. After the run the first bad commit's record names
// the smallest failing case, and the repository is restored with git bisect reset,
// and a temporary work folder removed, on every path out.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "tools/samplecheck/determinism_commands.h"
#include "tools/samplecheck/report_dir.h"

namespace fs = std::filesystem;

namespace samplecheck::cli {
namespace {

volatile std::sig_atomic_t interrupted = 0;
void on_signal(int) { interrupted = 1; }

using battery::shell_quoted;

struct shell_result {
  int status = -1;  // exit status, or -1 when killed by a signal
  std::string output;
};

// Runs `command` with sh in `dir`; echo: print its lines as they come.
shell_result shell(const std::string& dir, const std::string& command, bool echo = false) {
  shell_result r;
  const std::string full = fmt::format("cd {} && {} 2>&1", shell_quoted(dir), command);
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return r;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    r.output += line;
    if (echo) std::fputs(line, stdout), std::fflush(stdout);
  }
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string commit_of(const std::string& repo, const std::string& rev) {
  const auto r = shell(
      repo, fmt::format("git rev-parse --verify --quiet {}", shell_quoted(rev + "^{commit}")));
  if (r.status != 0)
    throw usage_error(fmt::format("bisect: '{}' is not a commit of {}", rev, repo));
  return trimmed(r.output);
}

// Restores the repository whatever happens after git bisect start.
struct bisect_guard {
  std::string repo;
  ~bisect_guard() { shell(repo, "git bisect reset"); }
};

// A stopped step writes why to this file of the work folder; run_bisect prints it.
constexpr const char* kStopFile = "stopped.txt";

std::string step_script(const bisect_request& r, const std::string& work) {
  std::string check = r.check;
  // A qualify writes its reproduction records per commit; other checks keep their own.
  if (check.find(" qualify") != std::string::npos && check.find("--repro-dir") == std::string::npos)
    check += " --repro-dir \"$work/repro/$commit\"";
  return fmt::format(R"SH(#!/bin/sh
# One step of samplecheck bisect: build (fails: 125 = skip), then the check: 0 good,
# 1 bad; anything else judged nothing and stops the bisection (255).
work={work}
commit=$(git rev-parse HEAD)
export work commit
log="$work/log/$commit.txt"
mkdir -p "$work/log"
stop() {{
  echo "samplecheck bisect: at $commit $1: nothing judged, stopping (log $log)" | tee "$work/{stop}"
  exit 255
}}
timeout -k 10 {limit} sh -c {build} >"$log" 2>&1
rc=$?
[ $rc -eq 124 ] && stop "the build ran past the step timeout ({limit} s)"
[ $rc -gt 128 ] && stop "the build was killed by signal $((rc - 128))"
if [ $rc -ne 0 ]; then
  echo "samplecheck bisect: $commit does not build: skipped (log $log)"
  exit 125
fi
timeout -k 10 {limit} sh -c {check} >>"$log" 2>&1
rc=$?
case $rc in
  0) echo "samplecheck bisect: $commit passes: good"; exit 0 ;;
  1) echo "samplecheck bisect: $commit fails: bad"; exit 1 ;;
  2) stop "the check exited 2 (bad usage, or a subject process that did not start)" ;;
  77) stop "the check exited 77 (the subject's device is absent)" ;;
  124) stop "the check ran past the step timeout ({limit} s)" ;;
  126) stop "the check exited 126 (not executable)" ;;
  127) stop "the check exited 127 (command not found)" ;;
esac
[ $rc -gt 128 ] && stop "the check was killed by signal $((rc - 128))"
stop "the check exited $rc (0 is good, 1 bad)"
)SH",
                     fmt::arg("work", shell_quoted(work)), fmt::arg("stop", kStopFile),
                     fmt::arg("limit", fmt::format("{}", r.step_timeout_s)),
                     fmt::arg("build", shell_quoted(r.build)),
                     fmt::arg("check", shell_quoted(check)));
}

// The smallest failing case of the first bad commit, from its reproduction records.
std::string failing_case(const std::string& dir) {
  std::string out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const nlohmann::json rec = nlohmann::json::parse(in, nullptr, false);
    if (rec.is_discarded() || !rec.contains("evidence")) continue;
    const nlohmann::json& e = rec["evidence"];
    std::string where;
    if (e.contains("m") && e.contains("row") && e.contains("column"))
      where = fmt::format(
          "shape {} (n {}, k {}{}): smallest failing M = {}, row {}, column {}: {} alone vs {} in "
          "the batch",
          e.value("shape", "?"), e.value("n", 0), e.value("k", 0),
          e.value("bias", false) ? ", bias" : "", e["m"].get<int64_t>(), e["row"].get<int64_t>(),
          e["column"].get<int64_t>(), e.value("expected_bits", "?"), e.value("actual_bits", "?"));
    else if (e.contains("batch_size") && e.contains("slot"))
      where = fmt::format(
          "first failing batch size {}, slot {}: request {} (row '{}', seed {}, subsequence {}, "
          "offset {}): {} alone vs {} in the batch",
          e["batch_size"].get<int64_t>(), e["slot"].get<int64_t>(), e.value("request", -1),
          e.value("row", "?"), e.value("seed", uint64_t{0}), e.value("subsequence", uint64_t{0}),
          e.value("offset", uint64_t{0}), e.value("expected", "?"), e.value("actual", "?"));
    else
      where = rec.value("detail", "");
    out += fmt::format("  {}{} [{}]: {}\n    record: {}\n", rec.value("check", "?"),
                       rec.contains("dtype") ? " [" + rec["dtype"].get<std::string>() + "]" : "",
                       rec.value("subject", "?"), where, entry.path().string());
  }
  return out;
}

// The work folder: --work-dir, checked, or a temporary one removed on every path out.
struct work_folder {
  std::string path;
  bool temporary = false;
  explicit work_folder(const std::string& given) {
    if (!given.empty()) {
      if (const std::string why = prepare_dir("bisect: --work-dir", given); !why.empty())
        throw usage_error(why);
      path = fs::absolute(given).lexically_normal().string();
      return;
    }
    std::error_code ec;
    std::string templ = (fs::temp_directory_path(ec) / "samplecheck-bisect-XXXXXX").string();
    if (ec || mkdtemp(templ.data()) == nullptr)
      throw usage_error("bisect: cannot create a temporary folder");
    path = templ, temporary = true;
  }
  work_folder(const work_folder&) = delete;
  work_folder& operator=(const work_folder&) = delete;
  ~work_folder() {
    std::error_code ec;
    if (temporary) fs::remove_all(path, ec);
  }
};

// Refuses what git bisect would misread: no work tree, a bisection under way, local
// changes, unknown revisions, or good not an ancestor of bad. Returns {good, bad}.
std::pair<std::string, std::string> checked_revisions(const std::string& repo,
                                                      const bisect_request& r) {
  if (shell(repo, "git rev-parse --is-inside-work-tree").status != 0)
    throw usage_error(fmt::format("bisect: {} is not a git work tree", repo));
  if (shell(repo, "git bisect log").status == 0)
    throw usage_error(
        fmt::format("bisect: {} is already bisecting (git bisect reset first)", repo));
  if (!trimmed(shell(repo, "git status --porcelain --untracked-files=no").output).empty())
    throw usage_error(fmt::format("bisect: {} has uncommitted changes", repo));
  const std::string good = commit_of(repo, r.good), bad = commit_of(repo, r.bad);
  if (shell(repo, fmt::format("git merge-base --is-ancestor {} {}", good, bad)).status != 0)
    throw usage_error(
        fmt::format("bisect: --good {} is not an ancestor of --bad {}", r.good, r.bad));
  return {good, bad};
}

std::string stop_reason(const std::string& work) {
  std::ifstream in(work + "/" + kStopFile);
  std::string line;
  std::getline(in, line);
  return line;
}

// Runs the step at one end; empty when it gives the verdict that end must have, else why
// not (git bisect would otherwise name a wrong commit, or the bad end itself).
std::string check_end(const std::string& repo, const std::string& work, const std::string& commit,
                      const std::string& option, int want) {
  shell(repo, "git -c advice.detachedHead=false checkout -q --detach " + commit);
  const auto step = shell(repo, "sh " + shell_quoted(work + "/step.sh"), /*echo=*/true);
  if (step.status == want) return "";
  if (step.status == 125) return fmt::format("{}: {:.12} does not build", option, commit);
  if (step.status == 255) return fmt::format("{}: {}", option, stop_reason(work));
  return fmt::format("{}: the check {} at {:.12}; it must {} there", option,
                     step.status == 0 ? "passes" : "fails", commit, want == 0 ? "pass" : "fail");
}

// The first bad commit and its smallest failing case; 1 when git named none.
int report_result(const std::string& repo, const std::string& work, const std::string& output) {
  const std::string log = shell(repo, "git bisect log").output;
  std::vector<std::string> skipped;
  const std::regex skip_line(R"(# skip: \[([0-9a-f]+)\] (.*))");
  for (std::sregex_iterator it(log.begin(), log.end(), skip_line), end; it != end; ++it)
    skipped.push_back(fmt::format("{:.12} {}", (*it)[1].str(), (*it)[2].str()));
  std::smatch first;
  const std::regex first_bad(R"(([0-9a-f]{40}) is the first bad commit)");
  if (!std::regex_search(output, first, first_bad)) {
    std::printf("no first bad commit: %s\n",
                output.find("only 'skip'ped commits") != std::string::npos
                    ? "only skipped commits are left between the last good and the first bad one "
                      "(see above)"
                    : "git bisect run did not finish (see above)");
    return 1;
  }
  const std::string commit = first[1].str();
  const std::string title = trimmed(shell(repo, "git log -1 --format=%s " + commit).output);
  std::printf("\nfirst bad commit: %s %s\n", commit.c_str(), title.c_str());
  for (const auto& s : skipped) std::printf("skipped (did not build): %s\n", s.c_str());
  const std::string cases = failing_case(work + "/repro/" + commit);
  if (cases.empty())
    std::printf("no reproduction record at %.12s (the check is not a qualify, or wrote none)\n",
                commit.c_str());
  else
    std::printf("at %.12s, the smallest failing case:\n%s", commit.c_str(), cases.c_str());
  return 0;
}

// Checks both ends, then git bisect run from the commit git chose; 2 when stopped.
int bisect_in(const std::string& repo, const work_folder& work, const std::string& good,
              const std::string& bad) {
  const auto start = shell(repo, fmt::format("git bisect start {} {}", bad, good));
  if (start.status != 0)
    throw usage_error(fmt::format("bisect: git bisect start failed: {}", trimmed(start.output)));
  const std::string middle = trimmed(shell(repo, "git rev-parse HEAD").output);
  for (const auto& [commit, option, want] : {std::tuple{good, "--good", 0}, {bad, "--bad", 1}})
    if (const std::string why = check_end(repo, work.path, commit, option, want); !why.empty()) {
      if (interrupted) return 130;
      std::printf("samplecheck bisect: %s: stopping before bisecting\n", why.c_str());
      return 2;
    }
  shell(repo, "git -c advice.detachedHead=false checkout -q --detach " + middle);
  const auto run = shell(repo, "git bisect run sh " + shell_quoted(work.path + "/step.sh"),
                         /*echo=*/true);
  if (interrupted) return 130;
  if (const std::string why = stop_reason(work.path); !why.empty()) {
    std::printf("no first bad commit named: %s\n", why.c_str());
    return 2;
  }
  return report_result(repo, work.path, run.output);
}

}  // namespace

void add_bisect_options(CLI::App* app, bisect_request& r) {
  app->add_option("--good", r.good, "a revision where the check passes (exit 0)")->required();
  app->add_option("--bad", r.bad, "a revision where it fails (exit 1)")->required();
  app->add_option("--build", r.build, "shell command building the commit (fails: skipped)")
      ->required();
  app->add_option(
         "--check", r.check,
         "the check, e.g. \"samplecheck qualify --plugin ./lib.so --checks batch_invariance\"")
      ->required();
  app->add_option("--repo", r.repo, "the git repository (default: the current folder)");
  app->add_option("--work-dir", r.work_dir,
                  "keep logs and reproduction records here (default: a temporary folder, "
                  "removed at the end)");
  app->add_option("--step-timeout", r.step_timeout_text,
                  "seconds the build, and then the check, may take at one commit (default "
                  "3600); past it the bisection stops")
      ->type_name("SECONDS");
}

int run_bisect(bisect_request r) {
  if (r.step_timeout_text) r.step_timeout_s = parse_seconds("--step-timeout", *r.step_timeout_text);
  std::error_code ec;
  const std::string repo = fs::absolute(r.repo, ec).lexically_normal().string();
  const auto [good, bad] = checked_revisions(repo, r);
  const work_folder work(r.work_dir);
  std::ofstream(work.path + "/step.sh") << step_script(r, work.path);
  fs::remove(work.path + "/" + kStopFile, ec);  // a reused --work-dir: an earlier run's stop
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::printf("bisecting %s: good %.12s, bad %.12s (logs and records in %s%s)\n", repo.c_str(),
              good.c_str(), bad.c_str(), work.path.c_str(),
              work.temporary ? ", removed at the end; --work-dir keeps them" : "");
  std::fflush(stdout);
  const bisect_guard guard{repo};
  const int status = bisect_in(repo, work, good, bad);
  if (status == 130)
    std::printf("interrupted: the repository is restored (git bisect reset)\n");
  else
    std::printf("the repository is restored (git bisect reset)\n");
  return status;
}

}  // namespace samplecheck::cli
