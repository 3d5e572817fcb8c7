#include "tools/samplecheck/record_file.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>

#include "suites/battery/runner.h"
#include "tools/samplecheck/cli_values.h"

namespace samplecheck::cli {

nlohmann::json read_record_file(std::string_view command, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string name = printable(path);
  if (fs::is_directory(path, ec))
    throw usage_error(fmt::format("{}: '{}' is a directory, not a file", command, name));
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxRecordBytes)
    throw usage_error(fmt::format("{}: '{}' is {} bytes, above the {} MiB a record may hold",
                                  command, name, size, kMaxRecordBytes >> 20));
  std::ifstream in(path);
  if (ec || !in) throw usage_error(fmt::format("{}: cannot open '{}'", command, name));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw usage_error(fmt::format("{}: '{}' is not JSON: {}", command, name, e.what()));
  }
}

std::string recorded_process(const std::string& plugin, const std::string& exec,
                             const std::string& connect) {
  if (!exec.empty()) return "--exec " + printable(battery::shell_quoted(exec));
  if (!connect.empty()) return "--connect " + printable(battery::shell_quoted(connect));
  if (!plugin.empty()) return "--plugin " + printable(battery::shell_quoted(plugin));
  return "";
}

std::string untrusted_process(std::string_view command, const std::string& path,
                              const std::string& process) {
  return fmt::format(
      "{}: '{}' names a process to run: {}\n"
      "a record never runs anything by itself: give the subject on the command line "
      "(--exec CMD, --plugin PATH or --connect SOCKET), or pass --trust-record to run the one "
      "above",
      command, printable(path), process);
}

void add_trust_record(CLI::App* app, bool& trust) {
  app->add_flag("--trust-record", trust,
                "run the plugin or command the record names (without it, a record that "
                "names one is refused: it was written by whoever shared the file)");
}

}  // namespace samplecheck::cli
