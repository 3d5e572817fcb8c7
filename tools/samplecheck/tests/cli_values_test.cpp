// The strict option parsers: every accepted form, every refused one, and the message naming
// the option and the offending text. Then parse_command_line's exit codes and words.
#include "tools/samplecheck/cli_values.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>

using namespace samplecheck::cli;
using Catch::Matchers::Contains;

namespace {

constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinI64 = std::numeric_limits<int64_t>::min();

// The message of the usage_error `parse` throws; fails the test when it throws none.
template <class Parse>
std::string refusal(Parse parse) {
  try {
    parse();
  } catch (const usage_error& e) {
    return e.what();
  }
  FAIL("the value was accepted");
  return {};
}

}  // namespace

TEST_CASE("parse_seed accepts decimal and 0x hex up to 2^64-1", "[cli]") {
  CHECK(parse_seed("--seed", "0") == 0);
  CHECK(parse_seed("--seed", "8") == 8);
  CHECK(parse_seed("--seed", "20261130") == 20261130);
  CHECK(parse_seed("--seed", "18446744073709551615") == kMaxU64);
  CHECK(parse_seed("--seed", "0x10") == 16);
  CHECK(parse_seed("--seed", "0XfF") == 255);
  CHECK(parse_seed("--seed", "0x0") == 0);
  CHECK(parse_seed("--seed", "0xffffffffffffffff") == kMaxU64);
}

TEST_CASE("parse_seed refuses signs, octal, overflow and garbage, naming them", "[cli]") {
  CHECK(refusal([] { parse_seed("--seed", "010"); }) ==
        "--seed: '010' has a leading zero (octal is not accepted)");
  CHECK(refusal([] { parse_seed("--seed", "00"); }) ==
        "--seed: '00' has a leading zero (octal is not accepted)");
  CHECK(refusal([] { parse_seed("--seed", "-1"); }) == "--seed: '-1' is not a decimal integer");
  CHECK(refusal([] { parse_seed("--seed", "+1"); }) == "--seed: '+1' is not a decimal integer");
  CHECK(refusal([] { parse_seed("--seed", "99999999999999999999"); }) ==
        "--seed: '99999999999999999999' is above 2^64-1 = 18446744073709551615, the largest seed");
  CHECK(refusal([] { parse_seed("--seed", "18446744073709551616"); }) ==
        "--seed: '18446744073709551616' is above 2^64-1 = 18446744073709551615, the largest seed");
  CHECK_THAT(refusal([] { parse_seed("--seed", "0x10000000000000000"); }),
             Contains("'0x10000000000000000' is above 2^64-1"));
  CHECK(refusal([] { parse_seed("--seed", ""); }) == "--seed: '' is empty");
  CHECK(refusal([] { parse_seed("--seed", "0x"); }) ==
        "--seed: '0x' is not 0x followed by hex digits");
  CHECK(refusal([] { parse_seed("--seed", "0xg1"); }) ==
        "--seed: '0xg1' is not 0x followed by hex digits");
  CHECK(refusal([] { parse_seed("--seed", "0x-1"); }) ==
        "--seed: '0x-1' is not 0x followed by hex digits");
  CHECK(refusal([] { parse_seed("--seed", " 5"); }) == "--seed: ' 5' is not a decimal integer");
  CHECK(refusal([] { parse_seed("--seed", "5 "); }) == "--seed: '5 ' is not a decimal integer");
  CHECK(refusal([] { parse_seed("--seed", "1e3"); }) == "--seed: '1e3' is not a decimal integer");
  CHECK(refusal([] { parse_seed("--first-seed", "abc"); }) ==
        "--first-seed: 'abc' is not a decimal integer");
}

TEST_CASE("refused text is shown with control bytes escaped", "[cli]") {
  CHECK(refusal([] { parse_seed("--seed", "1\n\x1b[2J"); }) ==
        "--seed: '1\\x0a\\x1b[2J' is not a decimal integer");
  // The escaping is the one text from a subject gets: UTF-8 kept, a C1 control (CSI) escaped.
  CHECK(refusal([] { parse_seed("--seed", "\u00e9\u009b2J"); }) ==
        "--seed: '\u00e9\\xc2\\x9b2J' is not a decimal integer");
}

TEST_CASE("parse_probability accepts finite x in (lo, hi]", "[cli]") {
  CHECK(parse_probability("--alpha", "1e-6", 0, 0.5) == 1e-6);
  CHECK(parse_probability("--alpha", "0.5", 0, 0.5) == 0.5);
  CHECK(parse_probability("--alpha", ".25", 0, 0.5) == 0.25);
  CHECK(parse_probability("--alpha", "1E-300", 0, 0.5) == 1e-300);
  CHECK(parse_probability("--fail-below", "1", 0, 1) == 1.0);
}

TEST_CASE("parse_probability refuses nan, inf, the bounds' outside and trailing text", "[cli]") {
  CHECK(refusal([] { parse_probability("--alpha", "nan", 0, 0.5); }) ==
        "--alpha: 'nan' is not a finite number");
  CHECK(refusal([] { parse_probability("--alpha", "NaN", 0, 0.5); }) ==
        "--alpha: 'NaN' is not a finite number");
  CHECK(refusal([] { parse_probability("--alpha", "inf", 0, 0.5); }) ==
        "--alpha: 'inf' is not a finite number");
  CHECK(refusal([] { parse_probability("--alpha", "-infinity", 0, 0.5); }) ==
        "--alpha: '-infinity' is not a finite number");
  CHECK(refusal([] { parse_probability("--alpha", "0", 0, 0.5); }) ==
        "--alpha: '0' is outside (0, 0.5]");
  CHECK(refusal([] { parse_probability("--alpha", "-0", 0, 0.5); }) ==
        "--alpha: '-0' is outside (0, 0.5]");
  CHECK(refusal([] { parse_probability("--alpha", "0.5000001", 0, 0.5); }) ==
        "--alpha: '0.5000001' is outside (0, 0.5]");
  CHECK(refusal([] { parse_probability("--alpha", "-0.1", 0, 0.5); }) ==
        "--alpha: '-0.1' is outside (0, 0.5]");
  CHECK(refusal([] { parse_probability("--alpha", "0.1x", 0, 0.5); }) ==
        "--alpha: '0.1x' has characters after the number '0.1'");
  CHECK(refusal([] { parse_probability("--alpha", "0.1 ", 0, 0.5); }) ==
        "--alpha: '0.1 ' has characters after the number '0.1'");
  CHECK(refusal([] { parse_probability("--alpha", " 0.1", 0, 0.5); }) ==
        "--alpha: ' 0.1' is not a number");
  CHECK(refusal([] { parse_probability("--alpha", "+0.1", 0, 0.5); }) ==
        "--alpha: '+0.1' is not a number");
  CHECK(refusal([] { parse_probability("--alpha", "abc", 0, 0.5); }) ==
        "--alpha: 'abc' is not a number");
  CHECK(refusal([] { parse_probability("--alpha", "", 0, 0.5); }) == "--alpha: '' is empty");
  CHECK(refusal([] { parse_probability("--alpha", "1e999", 0, 0.5); }) ==
        "--alpha: '1e999' is out of a double's range");
}

TEST_CASE("parse_seconds accepts finite seconds above 0 only", "[cli]") {
  CHECK(parse_seconds("--timeout", "0.001") == 0.001);
  CHECK(parse_seconds("--timeout", "1.5") == 1.5);
  CHECK(parse_seconds("--timeout", "3600") == 3600.0);
  CHECK(refusal([] { parse_seconds("--timeout", "nan"); }) ==
        "--timeout: 'nan' is not a finite number");
  CHECK(refusal([] { parse_seconds("--timeout", "inf"); }) ==
        "--timeout: 'inf' is not a finite number");
  CHECK(refusal([] { parse_seconds("--timeout", "-1"); }) ==
        "--timeout: '-1' is not above 0; give seconds > 0");
  CHECK(refusal([] { parse_seconds("--timeout", "0"); }) ==
        "--timeout: '0' is not above 0; give seconds > 0");
  CHECK(refusal([] { parse_seconds("--timeout", "10s"); }) ==
        "--timeout: '10s' has characters after the number '10'");
}

TEST_CASE("parse_count accepts decimal integers in [lo, hi]", "[cli]") {
  CHECK(parse_count("--vocab-size", "16", 16, 1 << 24) == 16);
  CHECK(parse_count("--vocab-size", "16777216", 16, 1 << 24) == 1 << 24);
  CHECK(parse_count("--runs", "1000", 1, 1 << 30) == 1000);
  CHECK(parse_count("--x", "-5", -10, 10) == -5);
  CHECK(parse_count("--x", "0", -10, 10) == 0);
  CHECK(parse_count("--x", "9223372036854775807", kMinI64, kMaxI64) == kMaxI64);
  CHECK(parse_count("--x", "-9223372036854775808", kMinI64, kMaxI64) == kMinI64);
}

TEST_CASE("parse_shard accepts i/n with 0 <= i < n", "[cli]") {
  CHECK(parse_shard("--shard", "0/1").index == 0);
  CHECK(parse_shard("--shard", "2/3").index == 2);
  CHECK(parse_shard("--shard", "2/3").count == 3);
  CHECK(parse_shard("--shard", "65535/65536").index == 65535);
}

TEST_CASE("parse_shard refuses empty, negative, out-of-range and malformed shards", "[cli]") {
  CHECK(refusal([] { parse_shard("--shard", "0/0"); }) ==
        "--shard: '0/0' has no shards: n must be at least 1");
  CHECK(refusal([] { parse_shard("--shard", "3/2"); }) ==
        "--shard: '3/2' names shard 3 of 2: shards are numbered 0 to 1");
  CHECK(refusal([] { parse_shard("--shard", "2/2"); }) ==
        "--shard: '2/2' names shard 2 of 2: shards are numbered 0 to 1");
  for (const char* text : {"-1/2", "1/-2", "x", "", "1/", "/2", "1/3/4", "1 /3"})
    CHECK_THAT(refusal([text] { parse_shard("--shard", text); }), Contains("--shard: '"));
  CHECK_THAT(refusal([] { parse_shard("--shard", "01/3"); }), Contains("leading zero"));
  CHECK_THAT(refusal([] { parse_shard("--shard", "0/65537"); }), Contains("above 65536"));
}

TEST_CASE("parse_count refuses garbage, octal and values outside [lo, hi]", "[cli]") {
  CHECK(refusal([] { parse_count("--vocab-size", "abc", 16, 1 << 24); }) ==
        "--vocab-size: 'abc' is not a decimal integer");
  CHECK(refusal([] { parse_count("--vocab-size", "15", 16, 1 << 24); }) ==
        "--vocab-size: '15' is below 16");
  CHECK(refusal([] { parse_count("--vocab-size", "16777217", 16, 1 << 24); }) ==
        "--vocab-size: '16777217' is above 16777216");
  CHECK(refusal([] { parse_count("--vocab-size", "032000", 16, 1 << 24); }) ==
        "--vocab-size: '032000' has a leading zero (octal is not accepted)");
  CHECK(refusal([] { parse_count("--vocab-size", "1e4", 16, 1 << 24); }) ==
        "--vocab-size: '1e4' is not a decimal integer");
  CHECK(refusal([] { parse_count("--runs", "-1", 1, 1000); }) == "--runs: '-1' is below 1");
  CHECK(refusal([] { parse_count("--runs", "-", 1, 1000); }) ==
        "--runs: '-' is not a decimal integer");
  CHECK(refusal([] { parse_count("--runs", "+5", 1, 1000); }) ==
        "--runs: '+5' is not a decimal integer");
  CHECK(refusal([] { parse_count("--runs", "", 1, 1000); }) == "--runs: '' is empty");
  CHECK(refusal([] { parse_count("--x", "9223372036854775808", kMinI64, kMaxI64); }) ==
        "--x: '9223372036854775808' is above 9223372036854775807");
  CHECK(refusal([] { parse_count("--x", "-9223372036854775809", kMinI64, kMaxI64); }) ==
        "--x: '-9223372036854775809' is below -9223372036854775808");
  CHECK(refusal([] { parse_count("--runs", "99999999999999999999", 1, 1000); }) ==
        "--runs: '99999999999999999999' is above 1000");
}

TEST_CASE("parse_batch_sizes reads sizes and ranges, ascending and unique", "[cli]") {
  using v = std::vector<int64_t>;
  CHECK(parse_batch_sizes("--m", "7", 1, 4096) == v{7});
  CHECK(parse_batch_sizes("--m", "1,7,4095", 1, 4096) == v{1, 7, 4095});
  CHECK(parse_batch_sizes("--m", "4095,1,7", 1, 4096) == v{1, 7, 4095});
  CHECK(parse_batch_sizes("--m", "3-5,4,1-2", 1, 4096) == v{1, 2, 3, 4, 5});
  CHECK(parse_batch_sizes("--m", "5-5", 1, 4096) == v{5});
  const auto all = parse_batch_sizes("--m", "1-4096", 1, 4096);
  REQUIRE(all.size() == 4096);
  CHECK(all.front() == 1);
  CHECK(all.back() == 4096);
  const auto mixed = parse_batch_sizes("--m", "1-16,4095,4096", 1, 4096);
  CHECK(mixed.size() == 18);
  CHECK(mixed[15] == 16);
  CHECK(mixed[16] == 4095);
}

TEST_CASE("parse_batch_sizes names the item it refuses", "[cli]") {
  CHECK(refusal([] { parse_batch_sizes("--m", "5-3", 1, 4096); }) ==
        "--m: '5-3' is an empty range");
  CHECK(refusal([] { parse_batch_sizes("--m", "1,0", 1, 4096); }) == "--m: '0' is below 1");
  CHECK(refusal([] { parse_batch_sizes("--m", "0-4", 1, 4096); }) == "--m: '0' is below 1");
  CHECK(refusal([] { parse_batch_sizes("--m", "1-4097", 1, 4096); }) ==
        "--m: '4097' is above 4096");
  CHECK(refusal([] { parse_batch_sizes("--m", "1,,2", 1, 4096); }) ==
        "--m: '1,,2' has an empty item");
  CHECK(refusal([] { parse_batch_sizes("--m", "1,", 1, 4096); }) == "--m: '1,' has an empty item");
  CHECK(refusal([] { parse_batch_sizes("--m", ",1", 1, 4096); }) == "--m: ',1' has an empty item");
  CHECK(refusal([] { parse_batch_sizes("--m", "", 1, 4096); }) == "--m: '' is empty");
  CHECK(refusal([] { parse_batch_sizes("--m", "-3", 1, 4096); }) ==
        "--m: '-3' is not a size or a range a-b");
  CHECK(refusal([] { parse_batch_sizes("--m", "3-", 1, 4096); }) ==
        "--m: '3-' is not a size or a range a-b");
  CHECK(refusal([] { parse_batch_sizes("--m", "1-2-3", 1, 4096); }) ==
        "--m: '1-2-3' is not a size or a range a-b");
  CHECK(refusal([] { parse_batch_sizes("--m", "1,x", 1, 4096); }) ==
        "--m: 'x' is not a decimal integer");
  CHECK(refusal([] { parse_batch_sizes("--m", "08", 1, 4096); }) ==
        "--m: '08' has a leading zero (octal is not accepted)");
}

TEST_CASE("parse_shapes reads NxK lists in order", "[cli]") {
  const auto one = parse_shapes("--shape", "4096x4096");
  REQUIRE(one.size() == 1);
  CHECK(one[0].n == 4096);
  CHECK(one[0].k == 4096);
  const auto two = parse_shapes("--shape", "4096x4096,32x1001");
  REQUIRE(two.size() == 2);
  CHECK(two[1].n == 32);
  CHECK(two[1].k == 1001);
  const auto edges = parse_shapes("--shape", "1x1048576,1048576x1");
  REQUIRE(edges.size() == 2);
  CHECK(edges[0].k == 1 << 20);
  CHECK(edges[1].n == 1 << 20);
}

TEST_CASE("parse_shapes refuses malformed shapes and dimensions outside [1, 2^20]", "[cli]") {
  CHECK(refusal([] { parse_shapes("--shape", "4096"); }) ==
        "--shape: '4096' is not a shape NxK (e.g. 4096x4096)");
  CHECK(refusal([] { parse_shapes("--shape", "4096X4096"); }) ==
        "--shape: '4096X4096' is not a shape NxK (e.g. 4096x4096)");
  CHECK(refusal([] { parse_shapes("--shape", "2x3x4"); }) ==
        "--shape: '2x3x4' is not a shape NxK (e.g. 4096x4096)");
  CHECK(refusal([] { parse_shapes("--shape", "x4"); }) ==
        "--shape: 'x4' is not a shape NxK (e.g. 4096x4096)");
  CHECK(refusal([] { parse_shapes("--shape", "0x5"); }) == "--shape: n of '0x5': '0' is below 1");
  CHECK(refusal([] { parse_shapes("--shape", "5x1048577"); }) ==
        "--shape: k of '5x1048577': '1048577' is above 1048576");
  CHECK(refusal([] { parse_shapes("--shape", "5x-1"); }) ==
        "--shape: k of '5x-1': '-1' is below 1");
  CHECK(refusal([] { parse_shapes("--shape", "4096x4096,"); }) ==
        "--shape: '4096x4096,' has an empty item");
}

TEST_CASE("parse_name_list accepts known names once each, in order", "[cli]") {
  const std::vector<std::string> known{"goodness_of_fit", "tail", "determinism"};
  CHECK(parse_name_list("--checks", "tail", known) == std::vector<std::string>{"tail"});
  CHECK(parse_name_list("--checks", "tail,goodness_of_fit", known) ==
        std::vector<std::string>{"tail", "goodness_of_fit"});
}

TEST_CASE("parse_name_list names the unknown item and lists the known ones", "[cli]") {
  const std::vector<std::string> known{"goodness_of_fit", "tail"};
  CHECK(refusal([&] { parse_name_list("--checks", "tail,bogus", known); }) ==
        "--checks: no check named 'bogus' (checks: goodness_of_fit, tail)");
  CHECK(refusal([&] {
          parse_name_list("--subject", "cpu.x", {"cpu.a", "cpu.b"});
        }) == "--subject: no subject named 'cpu.x' (subjects: cpu.a, cpu.b)");
  CHECK(refusal([&] { parse_name_list("--checks", "Tail", known); }) ==
        "--checks: no check named 'Tail' (checks: goodness_of_fit, tail)");
  CHECK(refusal([&] { parse_name_list("--checks", "tail,,tail", known); }) ==
        "--checks: 'tail,,tail' has an empty item");
  CHECK(refusal([&] { parse_name_list("--checks", "tail,tail", known); }) ==
        "--checks: 'tail' is named twice");
  CHECK(refusal([&] { parse_name_list("--checks", "", known); }) == "--checks: '' is empty");
  CHECK(refusal([&] { parse_name_list("--checks", "x", {}); }) ==
        "--checks: no check named 'x' (checks: none)");
}

namespace {

// Captures what the code under test writes to stderr (a file descriptor: fputs goes there).
class stderr_capture {
 public:
  stderr_capture() : file_(std::tmpfile()), saved_(dup(2)) {
    std::fflush(stderr);
    dup2(fileno(file_), 2);
  }
  ~stderr_capture() {
    restore();
    std::fclose(file_);
  }
  std::string text() {
    restore();
    std::string out;
    std::rewind(file_);
    for (int c; (c = std::fgetc(file_)) != EOF;) out += static_cast<char>(c);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_;
};

// A samplecheck-shaped app: three commands, one of them with a converted option.
struct test_app {
  CLI::App app{"test"};
  std::string seed_text;
  test_app() {
    app.require_subcommand(1);
    auto* qualify = app.add_subcommand("qualify", "q");
    qualify->add_option("--seed", seed_text, "seed");
    qualify->add_option_function<std::string>(
        "--alpha", [](const std::string& s) { parse_probability("--alpha", s, 0, 0.5); }, "alpha");
    qualify->add_option("--budget", seed_text, "budget")->check(CLI::IsMember({"quick"}));
    app.add_subcommand("mutants", "m");
    app.add_subcommand("calibrate", "c");
  }
};

struct run_result {
  int rc;
  std::string err;
};

run_result run(std::vector<std::string> args) {
  test_app t;
  args.insert(args.begin(), "samplecheck");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  stderr_capture capture;
  const int rc = parse_command_line(t.app, static_cast<int>(argv.size()), argv.data());
  return {rc, capture.text()};
}

}  // namespace

TEST_CASE("parse_command_line returns -1 for a good command line", "[cli]") {
  const auto r = run({"qualify", "--seed", "-1"});
  CHECK(r.rc == -1);
  CHECK(r.err.empty());
}

TEST_CASE("parse_command_line names an unknown command and lists the app's commands", "[cli]") {
  const auto r = run({"bogus"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Contains("samplecheck: unknown command 'bogus' "
                             "(commands: qualify, mutants, calibrate)"));
  CHECK_THAT(r.err, Contains("run 'samplecheck --help'"));
}

TEST_CASE("parse_command_line: no command, or an option before the command", "[cli]") {
  const auto none = run({});
  CHECK(none.rc == 2);
  CHECK_THAT(none.err, Contains("samplecheck: no command given (commands: qualify, mutants, "
                                "calibrate)"));
  const auto option = run({"--bogus"});
  CHECK(option.rc == 2);
  CHECK_THAT(option.err, Contains("unknown option '--bogus'"));
}

TEST_CASE("parse_command_line turns CLI11's parse errors into exit 2", "[cli]") {
  const auto unknown = run({"qualify", "--no-such-option"});
  CHECK(unknown.rc == 2);
  CHECK_THAT(unknown.err, Contains("samplecheck: "));
  CHECK_THAT(unknown.err, Contains("--no-such-option"));
  CHECK_THAT(unknown.err, Contains("run 'samplecheck qualify --help'"));
  const auto missing = run({"qualify", "--seed"});
  CHECK(missing.rc == 2);
  CHECK_THAT(missing.err, Contains("--seed"));
  const auto invalid = run({"qualify", "--budget", "huge"});
  CHECK(invalid.rc == 2);
  CHECK_THAT(invalid.err, Contains("--budget"));
  CHECK_THAT(invalid.err, Contains("huge"));
}

TEST_CASE("parse_command_line catches a usage_error thrown from a callback", "[cli]") {
  const auto r = run({"qualify", "--alpha", "nan"});
  CHECK(r.rc == 2);
  CHECK_THAT(r.err, Contains("samplecheck: --alpha: 'nan' is not a finite number"));
}

TEST_CASE("parse_command_line prints --help to stdout and returns 0", "[cli]") {
  std::ostringstream out;
  auto* old = std::cout.rdbuf(out.rdbuf());
  const auto r = run({"qualify", "--help"});
  std::cout.rdbuf(old);
  CHECK(r.rc == 0);
  CHECK(r.err.empty());
  CHECK_THAT(out.str(), Contains("--seed"));
}

TEST_CASE("usage_failure prints the message and the command's help hint, returns 2", "[cli]") {
  test_app t;
  stderr_capture capture;
  const int rc = usage_failure(t.app, "--checks: no check named 'x' (checks: a)");
  CHECK(rc == 2);
  CHECK(capture.text() ==
        "samplecheck: --checks: no check named 'x' (checks: a)\n"
        "run 'samplecheck --help' for the usage\n");
}
