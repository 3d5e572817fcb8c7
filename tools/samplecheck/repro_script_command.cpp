#include "tools/samplecheck/repro_script_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace samplecheck::cli {
namespace {

namespace fs = std::filesystem;

// $SAMPLECHECK_PYTHON; else the python3 beside this command (pip installs both into one
// environment's bin/, with the package); else the build's, by path (the python3 first on
// PATH may not see the package).
std::string generator_python() {
  if (const char* env = std::getenv("SAMPLECHECK_PYTHON"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && ::access((exe.parent_path() / "python3").c_str(), X_OK) == 0)
    return (exe.parent_path() / "python3").string();
#ifdef SAMPLECHECK_BUILD_PYTHON
  if (*SAMPLECHECK_BUILD_PYTHON) return SAMPLECHECK_BUILD_PYTHON;
#endif
  return "python3";
}

// A build tree's command runs the source tree's package, ahead of any installed one, so
// the generator and the adapters' script calls are this checkout's; an installed command
// (outside the build tree, as pip puts it) runs the installed package.
void use_source_package() {
#if defined(SAMPLECHECK_SOURCE_PYTHON) && defined(SAMPLECHECK_BINARY_DIR)
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const std::string build = fs::path(SAMPLECHECK_BINARY_DIR).lexically_normal().string() + "/";
  if (ec || exe.lexically_normal().string().rfind(build, 0) != 0) return;
  if (!fs::is_directory(fs::path(SAMPLECHECK_SOURCE_PYTHON) / "samplecheck_subject", ec)) return;
  std::string path = SAMPLECHECK_SOURCE_PYTHON;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += std::string(":") + old;
  ::setenv("PYTHONPATH", path.c_str(), 1);
#endif
}

}  // namespace

void add_repro_script_options(CLI::App* sub, repro_script_request& r) {
  sub->add_option("file", r.file, "a .json file written by --repro-dir")->required();
  sub->add_option("-o,--output", r.output, "the script to write (default: FILE with .py)");
}

// Starts the module through -c so that a Python without the package is a usage error
// (exit 2, saying which Python), not `python -m`'s exit 1, which would read as a verdict.
constexpr const char* kBootstrap =
    "import sys\n"
    "try:\n"
    "    from samplecheck_subject import repro_script\n"
    "except ImportError as e:\n"
    "    print(f'samplecheck repro-script: {sys.executable} cannot import samplecheck_subject "
    "({e}): '\n"
    "          'pip install samplecheck there, set PYTHONPATH, or name another in "
    "SAMPLECHECK_PYTHON',\n"
    "          file=sys.stderr)\n"
    "    sys.exit(2)\n"
    "sys.exit(repro_script.main(sys.argv[1:]))\n";

int run_repro_script(const repro_script_request& r) {
  use_source_package();
  std::string python = generator_python(), dash_c = "-c", bootstrap = kBootstrap;
  std::string file = r.file, dash_o = "-o", output = r.output;
  std::vector<char*> argv{python.data(), dash_c.data(), bootstrap.data(), file.data()};
  if (!output.empty()) argv.insert(argv.end(), {dash_o.data(), output.data()});
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execvp(python.c_str(), argv.data());
  std::fprintf(stderr,
               "samplecheck repro-script: cannot start %s: %s (SAMPLECHECK_PYTHON picks another)\n",
               python.c_str(), std::strerror(errno));
  return 2;
}

}  // namespace samplecheck::cli
