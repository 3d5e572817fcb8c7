// Reproduction records and fingerprint manifests are files someone else may have written
// and shared: they are read as data, within a size limit, and a process they name (a
// plugin or an --exec command) runs only when the user says so on the command line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace samplecheck::cli {

// Larger than any record or manifest samplecheck writes (a manifest of every M = 1..4096
// on twenty shapes is a few MB), small enough to parse in memory.
inline constexpr std::uintmax_t kMaxRecordBytes = std::uintmax_t{64} << 20;

// The JSON of `path`; a usage_error "COMMAND: 'PATH' ..." when it is missing, a
// directory, above kMaxRecordBytes or not JSON.
nlohmann::json read_record_file(std::string_view command, const std::string& path);

// "--exec 'CMD'" or "--plugin 'PATH'" for the process a record names, printable on a
// terminal; empty when it names none (an in-tree subject).
std::string recorded_process(const std::string& plugin, const std::string& exec,
                             const std::string& connect = {});

// The refusal of a record's process: it names the file and the process, and how to run it.
std::string untrusted_process(std::string_view command, const std::string& path,
                              const std::string& process);

// --trust-record: run the process a record or manifest names (replay, fingerprint --compare).
void add_trust_record(CLI::App* app, bool& trust);

}  // namespace samplecheck::cli
