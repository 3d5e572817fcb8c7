#include "tools/samplecheck/report_dir.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tools/samplecheck/report_json.h"

extern char** environ;

namespace samplecheck::cli {
namespace {

namespace fs = std::filesystem;

bool write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.flush();
  return static_cast<bool>(f);
}

// The Python that runs the renderer: $SAMPLECHECK_PYTHON, else the build's (CMake's
// SAMPLECHECK_PYTHON, by path: the python3 first on PATH may lack matplotlib).
std::string renderer_python() {
  if (const char* env = std::getenv("SAMPLECHECK_PYTHON"); env && *env) return env;
#ifdef SAMPLECHECK_BUILD_PYTHON
  if (*SAMPLECHECK_BUILD_PYTHON) return SAMPLECHECK_BUILD_PYTHON;
#endif
  return "python3";
}

// PYTHON RENDERER report.json report.html; its exit status (127: not started).
int run_renderer(const std::string& python, const std::string& renderer, const fs::path& json,
                 const fs::path& html) {
  std::string program = python, script = renderer, in = json.string(), out = html.string();
  char* argv[] = {program.data(), script.data(), in.data(), out.data(), nullptr};
  pid_t pid = 0;
  if (::posix_spawnp(&pid, program.c_str(), nullptr, nullptr, argv, environ) != 0) return 127;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string prepare_dir(std::string_view option, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec))
    return fmt::format("{} {}: not a directory{}", option, dir, ec ? ": " + ec.message() : "");
  // Writable means a file can be created and written there, not just that it exists.
  const fs::path probe = fs::path(dir) / fmt::format(".samplecheck-probe-{}", ::getpid());
  const bool ok = write_file(probe, "probe\n");
  fs::remove(probe, ec);
  return ok ? "" : fmt::format("{} {}: cannot write files there", option, dir);
}

std::string prepare_report_dir(const std::string& dir) {
  if (std::string why = prepare_dir("--report-dir", dir); !why.empty()) return why;
  // A second run would overwrite the first's report and mix its reproduction files in.
  std::error_code ec;
  if (fs::exists(fs::path(dir) / "report.json", ec))
    return fmt::format(
        "--report-dir {}: already holds a report (report.json); give a new or empty "
        "folder",
        dir);
  return "";
}

std::string renderer_path() {
  if (const char* env = std::getenv("SAMPLECHECK_REPORT_RENDERER"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed =
        exe.parent_path().parent_path() / "share/samplecheck/render_report.py";
    if (fs::exists(installed, ec)) return installed.string();
  }
#ifdef SAMPLECHECK_SOURCE_RENDERER
  if (fs::exists(SAMPLECHECK_SOURCE_RENDERER, ec)) return SAMPLECHECK_SOURCE_RENDERER;
#endif
  return "";
}

bool write_report_dir(const std::string& dir, const nlohmann::json& report) {
  const fs::path json = fs::path(dir) / "report.json", html = fs::path(dir) / "report.html";
  const bool ok = write_file(json, report.dump(1) + "\n") &&
                  write_file(fs::path(dir) / "junit.xml", battery::junit_xml(report));
  if (!ok) {
    std::fprintf(stderr, "samplecheck: could not write the report to %s\n", dir.c_str());
    return false;
  }
  const std::string renderer = renderer_path();
  if (renderer.empty()) {
    std::fprintf(stderr,
                 "samplecheck: no report renderer found (render_report.py); %s holds "
                 "report.json and junit.xml only\n",
                 dir.c_str());
    return true;
  }
  std::fflush(stdout);
  const std::string python = renderer_python();
  if (const int rc = run_renderer(python, renderer, json, html); rc != 0)
    std::fprintf(stderr,
                 "samplecheck: the renderer exited %d (%s: %s with matplotlib? SAMPLECHECK_PYTHON "
                 "picks another); %s holds report.json and junit.xml; render later with %s %s %s "
                 "%s\n",
                 rc, rc == 127 ? "not started" : "see above", python.c_str(), dir.c_str(),
                 python.c_str(), renderer.c_str(), json.c_str(), html.c_str());
  return true;
}

}  // namespace samplecheck::cli
