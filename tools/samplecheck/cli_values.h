// Strict conversion of samplecheck's option values, and the one way a bad command line exits.
//
// CLI11's own conversions are too lenient for a conformance tool: "-1" wraps to 2^64-1,
// "010" is octal, "nan" passes a range check and later aborts. Options are therefore bound
// to strings and converted here after parsing; every refusal is a usage_error whose message
// names the option and the offending text, and the command exits 2 on it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "suites/harness/protocol.h"

namespace CLI {
class App;
}

namespace samplecheck::cli {

// A value the user typed that the command refuses: "--seed: '010' has a leading zero ...".
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a user or a shared file typed is shown as text from a subject is: one escaping for
// every text samplecheck prints.
using protocol::printable;

// A seed: decimal digits ("0" or no leading zero), or 0x + hex digits; at most 2^64-1.
// "0x10" is 16; "010" is refused, never read as octal 8 or decimal 10.
uint64_t parse_seed(std::string_view option, std::string_view text);

// A finite decimal number x with lo < x <= hi (for --alpha: lo 0, hi 0.5).
double parse_probability(std::string_view option, std::string_view text, double lo, double hi);

// A finite number of seconds above 0.
double parse_seconds(std::string_view option, std::string_view text);

// A decimal integer (optional '-', no leading zero) in [lo, hi].
int64_t parse_count(std::string_view option, std::string_view text, int64_t lo, int64_t hi);

// Batch sizes as a comma list of sizes and ranges a-b ("1-16,4095,4096"), each in [lo, hi];
// returns them ascending, each once.
std::vector<int64_t> parse_batch_sizes(std::string_view option, std::string_view text, int64_t lo,
                                       int64_t hi);

// One matmul shape N x K.
struct shape_arg {
  int64_t n, k;
};

// A comma list of shapes NxK ("4096x4096,32x1001"), n and k in [1, 2^20], in the order given.
std::vector<shape_arg> parse_shapes(std::string_view option, std::string_view text);

// --shard i/n: shard i (0-based) of n, 1 <= n <= kMaxShards, 0 <= i < n, decimal digits.
inline constexpr int64_t kMaxShards = 65536;
struct shard_arg {
  int index, count;
};
shard_arg parse_shard(std::string_view option, std::string_view text);

// A comma list of names, each one of `known` and named once, in the order given.
std::vector<std::string> parse_name_list(std::string_view option, std::string_view text,
                                         const std::vector<std::string>& known);

// Prints "samplecheck: <what>" and a pointer to the help of the command being run to stderr;
// returns 2, the exit status of bad usage.
int usage_failure(const CLI::App& app, std::string_view what);

// Parses the command line. Returns -1 when the command should run, 0 after printing the help
// (--help), 2 after a usage error (a CLI11 parse error or a usage_error from a callback).
int parse_command_line(CLI::App& app, int argc, char** argv);

}  // namespace samplecheck::cli
