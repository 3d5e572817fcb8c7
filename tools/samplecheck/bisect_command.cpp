// samplecheck bisect: git bisect run with a build command and a samplecheck check.
//
// Each step runs a script (written to the work folder) in the repository: the build
// (failure: exit 125, git skips the commit), then the check with --repro-dir added for
// a qualify, so every failing commit leaves its reproduction record. The check's own
// status is the step's: 0 good, 1 bad; 2 (the check could not judge this commit: a
// plugin that does not load) skips; 77 (no device) aborts, since no commit can be
// judged. After the run the first bad commit's record names the smallest failing case,
// and the repository is restored with git bisect reset, on every path out.
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

namespace fs = std::filesystem;

namespace samplecheck::cli {
namespace {

volatile std::sig_atomic_t interrupted = 0;
void on_signal(int) { interrupted = 1; }

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct shell_result {
  int status = -1;  // exit status, or -1 when killed by a signal
  std::string output;
};

// Runs `command` with sh in `dir`; echo: print its lines as they come.
shell_result shell(const std::string& dir, const std::string& command, bool echo = false) {
  shell_result r;
  const std::string full = fmt::format("cd {} && {} 2>&1", quoted(dir), command);
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
  const auto r =
      shell(repo, fmt::format("git rev-parse --verify --quiet {}", quoted(rev + "^{commit}")));
  if (r.status != 0)
    throw usage_error(fmt::format("bisect: '{}' is not a commit of {}", rev, repo));
  return trimmed(r.output);
}

// Restores the repository whatever happens after git bisect start.
struct bisect_guard {
  std::string repo;
  ~bisect_guard() { shell(repo, "git bisect reset"); }
};

std::string step_script(const bisect_request& r, const std::string& work) {
  std::string check = r.check;
  // A qualify writes its reproduction records per commit; other checks keep their own.
  if (check.find(" qualify") != std::string::npos && check.find("--repro-dir") == std::string::npos)
    check += " --repro-dir \"$work/repro/$commit\"";
  return fmt::format(R"SH(#!/bin/sh
# One step of samplecheck bisect: build (fail: 125 = skip), then the check.
work={work}
commit=$(git rev-parse HEAD)
log="$work/log/$commit.txt"
mkdir -p "$work/log"
if ! ( {build} ) >"$log" 2>&1; then
  echo "samplecheck bisect: $commit does not build: skipped (log $log)"
  exit 125
fi
( {check} ) >>"$log" 2>&1
rc=$?
case $rc in
  0) echo "samplecheck bisect: $commit passes: good" ;;
  1) echo "samplecheck bisect: $commit fails: bad" ;;
  77) echo "samplecheck bisect: the check's device is absent: stopping"; exit 255 ;;
  *) echo "samplecheck bisect: the check exited $rc at $commit (it could not judge it): skipped"; exit 125 ;;
esac
exit $rc
)SH",
                     fmt::arg("work", quoted(work)), fmt::arg("build", r.build),
                     fmt::arg("check", check));
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

}  // namespace

void add_bisect_options(CLI::App* app, bisect_request& r) {
  app->add_option("--good", r.good, "a revision where the check passes")->required();
  app->add_option("--bad", r.bad, "a revision where it fails")->required();
  app->add_option("--build", r.build, "shell command building the commit (fails: skipped)")
      ->required();
  app->add_option(
         "--check", r.check,
         "the check, e.g. \"samplecheck qualify --plugin ./lib.so --checks batch_invariance\"")
      ->required();
  app->add_option("--repo", r.repo, "the git repository (default: the current folder)");
  app->add_option("--work-dir", r.work_dir,
                  "logs and reproduction records (default: a temporary folder)");
}

int run_bisect(const bisect_request& r) {
  std::error_code ec;
  const std::string repo = fs::absolute(r.repo, ec).lexically_normal().string();
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

  std::string work = r.work_dir;
  if (work.empty()) {
    char templ[] = "/tmp/samplecheck-bisect-XXXXXX";
    if (mkdtemp(templ) == nullptr) throw usage_error("bisect: cannot create a temporary folder");
    work = templ;
  }
  fs::create_directories(work, ec);
  work = fs::absolute(work).string();
  const std::string script = work + "/step.sh";
  std::ofstream(script) << step_script(r, work);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::printf("bisecting %s: good %.12s, bad %.12s (logs and records in %s)\n", repo.c_str(),
              good.c_str(), bad.c_str(), work.c_str());
  std::fflush(stdout);
  bisect_guard guard{repo};
  if (const auto start = shell(repo, fmt::format("git bisect start {} {}", bad, good));
      start.status != 0)
    throw usage_error(fmt::format("bisect: git bisect start failed: {}", trimmed(start.output)));
  const auto run = shell(repo, "git bisect run sh " + quoted(script), /*echo=*/true);
  if (interrupted) {
    std::printf("interrupted: the repository is restored (git bisect reset)\n");
    return 130;
  }
  const std::string log = shell(repo, "git bisect log").output;
  std::vector<std::string> skipped;
  const std::regex skip_line(R"(# skip: \[([0-9a-f]+)\] (.*))");
  for (std::sregex_iterator it(log.begin(), log.end(), skip_line), end; it != end; ++it)
    skipped.push_back(fmt::format("{:.12} {}", (*it)[1].str(), (*it)[2].str()));
  std::smatch first;
  const std::regex first_bad(R"(([0-9a-f]{40}) is the first bad commit)");
  if (!std::regex_search(run.output, first, first_bad)) {
    std::printf("no first bad commit: %s\n",
                run.output.find("only 'skip'ped commits") != std::string::npos
                    ? "only skipped commits are left between the last good and the first bad one "
                      "(see above)"
                    : "git bisect run did not finish (see above)");
    return 1;
  }
  const std::string commit = first[1].str();
  const std::string title = trimmed(shell(repo, "git log -1 --format=%s " + commit).output);
  std::printf("\nfirst bad commit: %s %s\n", commit.c_str(), title.c_str());
  for (const auto& s : skipped)
    std::printf("skipped (did not build or could not be judged): %s\n", s.c_str());
  const std::string cases = failing_case(work + "/repro/" + commit);
  if (cases.empty())
    std::printf("no reproduction record at %.12s (the check is not a qualify, or wrote none)\n",
                commit.c_str());
  else
    std::printf("at %.12s, the smallest failing case:\n%s", commit.c_str(), cases.c_str());
  std::printf("the repository is restored (git bisect reset)\n");
  return 0;
}

}  // namespace samplecheck::cli
