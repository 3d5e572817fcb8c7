#include "tools/samplecheck/cli_values.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

namespace samplecheck::cli {
namespace {

constexpr int kUsageExit = 2;
constexpr int64_t kMaxShapeDim = int64_t{1} << 20;

[[noreturn]] void refuse(std::string_view option, std::string_view text, std::string_view why) {
  throw usage_error(fmt::format("{}: '{}' {}", option, printable(text), why));
}

bool is_decimal_digit(char c) { return c >= '0' && c <= '9'; }

bool is_hex_digit(char c) {
  return is_decimal_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Reads `digits`, a part of `text`, as decimal digits with no leading zero (so that "010"
// cannot be mistaken for octal). Returns nullopt past 2^64-1, so callers name their own limit.
std::optional<uint64_t> read_decimal(std::string_view option, std::string_view text,
                                     std::string_view digits) {
  if (text.empty()) refuse(option, text, "is empty");
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_decimal_digit))
    refuse(option, text, "is not a decimal integer");
  if (digits.size() > 1 && digits.front() == '0')
    refuse(option, text, "has a leading zero (octal is not accepted)");
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) return std::nullopt;
  return value;
}

uint64_t read_hex_seed(std::string_view option, std::string_view text) {
  const std::string_view digits = text.substr(2);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_hex_digit))
    refuse(option, text, "is not 0x followed by hex digits");
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
  if (ec == std::errc::result_out_of_range)
    refuse(option, text, "is above 2^64-1 (0xffffffffffffffff), the largest seed");
  return value;
}

// A finite double written in full: from_chars refuses leading spaces and '+', and the end
// pointer catches anything after the number.
double read_finite(std::string_view option, std::string_view text) {
  if (text.empty()) refuse(option, text, "is empty");
  double value = 0;
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(text.data(), last, value, std::chars_format::general);
  if (ec == std::errc::invalid_argument) refuse(option, text, "is not a number");
  if (ec == std::errc::result_out_of_range) refuse(option, text, "is out of a double's range");
  if (end != last) {
    const std::string_view number = text.substr(0, static_cast<size_t>(end - text.data()));
    refuse(option, text, fmt::format("has characters after the number '{}'", printable(number)));
  }
  if (!std::isfinite(value)) refuse(option, text, "is not a finite number");
  return value;
}

// The comma-separated items of a list; an empty list or an empty item is a typo, not "none".
std::vector<std::string_view> split_items(std::string_view option, std::string_view text) {
  if (text.empty()) refuse(option, text, "is empty");
  std::vector<std::string_view> items;
  size_t start = 0;
  while (true) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma == start) refuse(option, text, "has an empty item");
    items.push_back(text.substr(start, comma - start));
    if (comma == text.size()) return items;
    start = comma + 1;
  }
}

// Splits "a<sep>b" at its one separator; nullopt unless both sides are non-empty.
std::optional<std::pair<std::string_view, std::string_view>> split_pair(std::string_view item,
                                                                        char sep) {
  const size_t at = item.find(sep);
  if (at == std::string_view::npos || at == 0 || at + 1 == item.size()) return std::nullopt;
  if (item.find(sep, at + 1) != std::string_view::npos) return std::nullopt;
  return std::pair{item.substr(0, at), item.substr(at + 1)};
}

// "--checks" -> {"check", "checks"}: the words for one item and for the list of known ones.
std::pair<std::string, std::string> item_nouns(std::string_view option) {
  std::string name(option.substr(std::min(option.find_first_not_of('-'), option.size())));
  if (!name.empty() && name.back() == 's') return {name.substr(0, name.size() - 1), name};
  return {name, name + "s"};
}

std::string joined(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The named subcommands of `app`, in declaration order: new commands are listed by themselves.
std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  const auto named = [](const CLI::App* sub) { return !sub->get_name().empty(); };
  for (const CLI::App* sub : app.get_subcommands(named)) names.push_back(sub->get_name());
  return names;
}

// "samplecheck qualify": the command whose --help the user should read.
std::string command_path(const CLI::App& app) {
  std::string path = "samplecheck";
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

// CLI11 reports a missing or misspelt command as "A subcommand is required"; say which word
// it did not know instead, and list the commands.
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e) {
  const auto commands = command_names(app);
  if (commands.empty() || !app.get_subcommands().empty()) return e.what();
  const std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && !rest.front().empty() && rest.front().front() == '-')
    return fmt::format("unknown option '{}' (give a command first: {})", printable(rest.front()),
                       joined(commands));
  if (!rest.empty())
    return fmt::format("unknown command '{}' (commands: {})", printable(rest.front()),
                       joined(commands));
  const bool required = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr;
  if (required && app.get_require_subcommand_min() > 0)
    return fmt::format("no command given (commands: {})", joined(commands));
  return e.what();
}

}  // namespace

uint64_t parse_seed(std::string_view option, std::string_view text) {
  if (text.starts_with("0x") || text.starts_with("0X")) return read_hex_seed(option, text);
  const auto value = read_decimal(option, text, text);
  if (!value) refuse(option, text, "is above 2^64-1 = 18446744073709551615, the largest seed");
  return *value;
}

double parse_probability(std::string_view option, std::string_view text, double lo, double hi) {
  const double x = read_finite(option, text);
  if (!(lo < x && x <= hi)) refuse(option, text, fmt::format("is outside ({}, {}]", lo, hi));
  return x;
}

double parse_seconds(std::string_view option, std::string_view text) {
  const double x = read_finite(option, text);
  // 0 would read as "no limit" to some and "stop at once" to others: neither is offered.
  if (!(x > 0)) refuse(option, text, "is not above 0; give seconds > 0");
  return x;
}

int64_t parse_count(std::string_view option, std::string_view text, int64_t lo, int64_t hi) {
  const bool negative = text.starts_with('-');
  const auto magnitude = read_decimal(option, text, text.substr(negative ? 1 : 0));
  // int64's range is asymmetric: a magnitude of 2^63 is representable only when negative.
  const uint64_t limit = uint64_t{std::numeric_limits<int64_t>::max()} + (negative ? 1 : 0);
  if (!magnitude || *magnitude > limit)
    refuse(option, text, fmt::format("is {} {}", negative ? "below" : "above", negative ? lo : hi));
  const int64_t value =
      negative ? static_cast<int64_t>(0 - *magnitude) : static_cast<int64_t>(*magnitude);
  if (value < lo) refuse(option, text, fmt::format("is below {}", lo));
  if (value > hi) refuse(option, text, fmt::format("is above {}", hi));
  return value;
}

shard_arg parse_shard(std::string_view option, std::string_view text) {
  const auto sides = split_pair(text, '/');
  if (!sides || sides->first.starts_with('-') || sides->second.starts_with('-'))
    refuse(option, text, "is not i/n: shard i (0-based) of n shards, e.g. 0/3");
  const int64_t count = parse_count(option, sides->second, 0, kMaxShards);
  if (count == 0) refuse(option, text, "has no shards: n must be at least 1");
  const int64_t index = parse_count(option, sides->first, 0, kMaxShards);
  if (index >= count)
    refuse(
        option, text,
        fmt::format("names shard {} of {}: shards are numbered 0 to {}", index, count, count - 1));
  return {static_cast<int>(index), static_cast<int>(count)};
}

std::vector<int64_t> parse_batch_sizes(std::string_view option, std::string_view text, int64_t lo,
                                       int64_t hi) {
  std::vector<int64_t> sizes;
  for (const std::string_view item : split_items(option, text)) {
    if (item.find('-') == std::string_view::npos) {
      sizes.push_back(parse_count(option, item, lo, hi));
      continue;
    }
    const auto ends = split_pair(item, '-');
    if (!ends) refuse(option, item, "is not a size or a range a-b");
    const int64_t first = parse_count(option, ends->first, lo, hi);
    const int64_t last = parse_count(option, ends->second, lo, hi);
    if (last < first) refuse(option, item, "is an empty range");
    for (int64_t m = first; m <= last; ++m) sizes.push_back(m);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<shape_arg> parse_shapes(std::string_view option, std::string_view text) {
  std::vector<shape_arg> shapes;
  for (const std::string_view item : split_items(option, text)) {
    const auto sides = split_pair(item, 'x');
    if (!sides) refuse(option, item, "is not a shape NxK (e.g. 4096x4096)");
    // The label names the item, so "--shape: n of '0x5': '0' is below 1" points at the typo.
    const auto side = [&](char name) {
      return fmt::format("{}: {} of '{}'", option, name, printable(item));
    };
    shapes.push_back({parse_count(side('n'), sides->first, 1, kMaxShapeDim),
                      parse_count(side('k'), sides->second, 1, kMaxShapeDim)});
  }
  return shapes;
}

std::vector<std::string> parse_name_list(std::string_view option, std::string_view text,
                                         const std::vector<std::string>& known) {
  const auto [one, many] = item_nouns(option);
  std::vector<std::string> names;
  for (const std::string_view item : split_items(option, text)) {
    if (std::find(known.begin(), known.end(), item) == known.end())
      throw usage_error(fmt::format("{}: no {} named '{}' ({}: {})", option, one, printable(item),
                                    many, joined(known)));
    if (std::find(names.begin(), names.end(), item) != names.end())
      refuse(option, item, "is named twice");
    names.emplace_back(item);
  }
  return names;
}

int usage_failure(const CLI::App& app, std::string_view what) {
  const std::string message =
      fmt::format("samplecheck: {}\nrun '{} --help' for the usage\n", what, command_path(app));
  std::fputs(message.c_str(), stderr);
  return kUsageExit;
}

int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    // --help (and CLI11's other successes) print to stdout and exit 0, as CLI11 intends.
    if (e.get_exit_code() == 0) return app.exit(e);
    return usage_failure(app, parse_error_text(app, e));
  } catch (const usage_error& e) {
    return usage_failure(app, e.what());
  }
}

}  // namespace samplecheck::cli
