// The reproduction records of failed checks (docs/repro-format.md): what a record holds, and
// where it is written.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "suites/battery/matmul_selection.h"
#include "suites/battery/runner.h"

namespace samplecheck::battery {
namespace {

std::string file_safe(std::string name) {
  std::replace_if(
      name.begin(), name.end(), [](char ch) { return ch == ':' || ch == '/'; }, '_');
  return name;
}

}  // namespace

std::string write_repro_file(const run_options& o, const check_report& c,
                             const nlohmann::json& record, const std::string& subject_name) {
  const std::string suffix = c.dtype.empty() ? "" : "." + c.dtype;
  const std::string path =
      fmt::format("{}/{}.{}{}.json", o.repro_dir, file_safe(subject_name), c.check, suffix);
  std::error_code ec;
  std::filesystem::create_directories(o.repro_dir, ec);
  std::ofstream f(path);
  f << record.dump(2) << "\n";
  f.flush();
  return f ? path : std::string{};
}

std::string shell_quoted(std::string_view text) {
  const auto plain = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_-./:=+@%,", c) != nullptr;
  };
  if (!text.empty() && std::all_of(text.begin(), text.end(), plain)) return std::string(text);
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string prepare_repro_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir, ec))
    return fmt::format("--repro-dir {}: not a directory{}", dir, ec ? ": " + ec.message() : "");
  // Writable means a file can be created and written there, not just that it exists.
  const std::string probe = fmt::format("{}/.samplecheck-probe-{}", dir, ::getpid());
  std::ofstream f(probe);
  f << "probe\n";
  f.flush();
  const bool ok = static_cast<bool>(f);
  f.close();
  std::filesystem::remove(probe, ec);
  return ok ? std::string{} : fmt::format("--repro-dir {}: cannot write files there", dir);
}

nlohmann::json repro_record(const subject& s, const run_options& o, const check_report& c,
                            const nlohmann::json& evidence) {
  nlohmann::json j{
      {"format", "samplecheck-repro"},     {"version", 1},       {"subject", s.name()},
      {"kind", to_string(s.kind())},       {"check", c.check},   {"budget", o.budget.name},
      {"vocab_size", o.budget.vocab_size}, {"seed", o.seed},     {"alpha", o.alpha},
      {"verdict", to_string(c.result)},    {"detail", c.detail}, {"samples", c.samples}};
  j["plugin"] = s.plugin.empty() ? nlohmann::json() : nlohmann::json(s.plugin);
  if (!s.exec.empty()) j["exec"] = s.exec;
  if (!s.connect.empty()) j["connect"] = s.connect;
  // The subject's packages and versions, so a standalone script can say which upstream
  // release failed (the hello's environment, as report.json has it).
  if (s.process && !s.in_tree() && !s.process->environment().is_null())
    j["environment"] = s.process->environment();
  if (!c.dtype.empty()) j["dtype"] = c.dtype;
  if (c.p_value >= 0) j["p_value"] = c.p_value;
  if (c.planning_share >= 0) j["planning_share"] = c.planning_share;
  if (c.alpha_share >= 0) j["decision_level"] = c.alpha_share;
  if (s.kind() == subject_kind::matmul) j["matmul"] = selection_json(o.matmul);
  j["evidence"] = evidence.is_object() ? evidence : nlohmann::json::object();
  // One request's record, of a subject sent slot-stream seeds: the seed it was sent, so that
  // a standalone script keys the request as the subject saw it.
  const nlohmann::json& e = j["evidence"];
  const auto whole = [&](const char* name) {
    return e.contains(name) && (e[name].is_number_unsigned() ||
                                (e[name].is_number_integer() && e[name].get<int64_t>() >= 0));
  };
  if (whole("seed") && whole("subsequence")) {
    const auto seed = e["seed"].get<uint64_t>(), subsequence = e["subsequence"].get<uint64_t>();
    if (const uint64_t sent = sent_seed(s, seed, subsequence); sent != seed)
      j["evidence"]["sent_seed"] = sent;
  }
  return j;
}

}  // namespace samplecheck::battery
