#include "tools/samplecheck/merge_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "suites/harness/protocol.h"
#include "suites/stats/holm_budget.h"
#include "tools/samplecheck/cli_values.h"
#include "tools/samplecheck/record_file.h"
#include "tools/samplecheck/report_json.h"
#include "tools/samplecheck/version.h"

namespace samplecheck::cli {
namespace {

using json = nlohmann::json;

struct shard_file {
  std::string path;
  json doc;
  int index = 0, count = 0;
};

[[noreturn]] void malformed(const shard_file& f, std::string_view field, std::string_view why) {
  throw usage_error(fmt::format("merge: '{}': {}: {}", printable(f.path), field, why));
}

// parent[key], where parent sits at `where` in the file, of the kind `is` accepts.
const json& need(const shard_file& f, const json& parent, const std::string& where,
                 const std::string& key, bool (json::*is)() const, std::string_view kind) {
  const std::string field = where.empty() ? key : where + "." + key;
  if (!parent.is_object() || !parent.contains(key)) malformed(f, field, "missing");
  const json& value = parent.at(key);
  if (!(value.*is)()) malformed(f, field, fmt::format("is not {}", kind));
  return value;
}

std::string shown(const json& value) {
  const std::string text = value.dump();
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

// The header a shard's report must have, and each run's shard record; sets index and count.
void read_shard_header(shard_file& f) {
  const json& d = f.doc;
  if (need(f, d, "", "format", &json::is_string, "a string") != "samplecheck-report")
    malformed(f, "format", "is not \"samplecheck-report\"");
  if (need(f, d, "", "version", &json::is_number_integer, "an integer") != battery::kReportVersion)
    malformed(f, "version", fmt::format("is not {}", battery::kReportVersion));
  if (need(f, d, "", "command", &json::is_string, "a string") != "qualify")
    malformed(f, "command", "is not \"qualify\": only qualify --shard reports merge");
  need(f, need(f, d, "", "samplecheck", &json::is_object, "an object"), "samplecheck", "version",
       &json::is_string, "a string");
  const json& runs = need(f, d, "", "runs", &json::is_array, "an array");
  if (runs.empty()) malformed(f, "runs", "is empty");
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::string where = fmt::format("runs[{}]", k);
    if (!runs[k].is_object() || !runs[k].contains("shard"))
      malformed(f, where + ".shard", "missing: not a `qualify --shard i/n` report");
    const json& s = need(f, runs[k], where, "shard", &json::is_object, "an object");
    const int count =
        need(f, s, where + ".shard", "count", &json::is_number_integer, "an integer").get<int>();
    const int index =
        need(f, s, where + ".shard", "index", &json::is_number_integer, "an integer").get<int>();
    if (count < 1 || count > kMaxShards || index < 0 || index >= count)
      malformed(f, where + ".shard",
                fmt::format("shard {}/{} is not i/n with 0 <= i < n", index, count));
    need(f, s, where + ".shard", "plan", &json::is_array, "an array");
    need(f, s, where + ".shard", "holm_inputs", &json::is_object, "an object");
    need(f, runs[k], where, "checks", &json::is_array, "an array");
    if (k > 0 && (index != f.index || count != f.count))
      malformed(f, where + ".shard", "is another shard than runs[0]'s");
    f.index = index, f.count = count;
  }
}

void agree(const shard_file& f, const shard_file& first, const std::string& field,
           const json& value, const json& expected) {
  if (value == expected) return;
  throw usage_error(fmt::format("merge: '{}': {}: {} differs from '{}''s {}", printable(f.path),
                                field, shown(value), printable(first.path), shown(expected)));
}

// What must be equal in every shard of one run: what was run, by which samplecheck.
void agree_with_first(const shard_file& f, const shard_file& first) {
  agree(f, first, "samplecheck.version", f.doc["samplecheck"]["version"],
        first.doc["samplecheck"]["version"]);
  agree(f, first, "samplecheck.revision", f.doc["samplecheck"].value("revision", json()),
        first.doc["samplecheck"].value("revision", json()));
  const json &runs = f.doc["runs"], &expected = first.doc["runs"];
  agree(f, first, "runs (count)", runs.size(), expected.size());
  for (size_t k = 0; k < runs.size(); ++k)
    for (const char* key : {"subject", "kind", "plugin", "budget", "seed", "alpha"})
      agree(f, first, fmt::format("runs[{}].{}", k, key), runs[k].value(key, json()),
            expected[k].value(key, json()));
  agree(f, first, "shard.count", f.count, first.count);
  for (size_t k = 0; k < runs.size(); ++k)
    agree(f, first, fmt::format("runs[{}].shard.plan", k), runs[k]["shard"]["plan"],
          expected[k]["shard"]["plan"]);
}

std::string member_name(const json& row) {
  const std::string check = row.at("check").get<std::string>();
  return row.at("dtype").is_null()
             ? check
             : fmt::format("{}[{}]", check, row.at("dtype").get<std::string>());
}

void check_plan_row(const shard_file& f, const json& row, const std::string& where, int count) {
  need(f, row, where, "check", &json::is_string, "a string");
  if (!row.contains("dtype") || !(row["dtype"].is_null() || row["dtype"].is_string()))
    malformed(f, where + ".dtype", "is not a string or null");
  const int shard = need(f, row, where, "shard", &json::is_number_integer, "an integer").get<int>();
  if (shard < 0 || shard >= count) malformed(f, where + ".shard", "is not a shard of the run");
  need(f, row, where, "selected", &json::is_boolean, "a boolean");
  if (!row.contains("holm_weight") ||
      !(row["holm_weight"].is_null() || row["holm_weight"].is_number()))
    malformed(f, where + ".holm_weight", "is not a number or null");
}

// A member's Holm input from the file of its shard; p = 1 where that file is missing or
// the row was not selected, as the unsharded run records a check it did not run.
// Returns whether Holm's decision is the row's verdict.
bool record_input(stats::holm_budget& budget, int id, const json& row, const shard_file* owner,
                  size_t k) {
  if (owner == nullptr || !row["selected"].get<bool>()) {
    budget.record(id, 1.0);
    return false;
  }
  const std::string where = fmt::format("runs[{}].shard.holm_inputs", k);
  const std::string name = member_name(row), at = where + "." + name;
  const json& in = need(*owner, owner->doc["runs"][k]["shard"]["holm_inputs"], where, name,
                        &json::is_object, "an object");
  const bool decides = need(*owner, in, at, "decides", &json::is_boolean, "a boolean").get<bool>();
  if (in.contains("skipped") && in["skipped"].is_string()) {
    budget.skip(id, in["skipped"].get<std::string>());
    return decides;
  }
  const double p = need(*owner, in, at, "p_value", &json::is_number, "a number").get<double>();
  if (!(p >= 0 && p <= 1)) malformed(*owner, at + ".p_value", "is not in [0, 1]");
  budget.record(id, p);
  return decides;
}

battery::check_report shard_row(const shard_file& owner, size_t k, const json& row) {
  const std::string where = fmt::format("runs[{}].checks", k);
  for (const json& c : owner.doc["runs"][k]["checks"]) {
    if (!c.is_object() || c.value("check", json()) != row["check"] ||
        c.value("dtype", json()) != row["dtype"])
      continue;
    try {
      return battery::check_from_json(c);
    } catch (const std::exception& e) {
      malformed(owner, fmt::format("{} ({})", where, member_name(row)), e.what());
    }
  }
  malformed(owner, where, fmt::format("no row for {}, which its shard ran", member_name(row)));
}

// Every shard file holds exactly the rows its part of the plan selects.
void check_row_counts(const json& plan, const std::vector<const shard_file*>& owner, size_t k) {
  std::vector<size_t> expected(owner.size(), 0);
  for (const json& row : plan)
    if (row["selected"].get<bool>()) ++expected[row["shard"].get<size_t>()];
  for (size_t s = 0; s < owner.size(); ++s)
    if (owner[s] != nullptr && owner[s]->doc["runs"][k]["checks"].size() != expected[s])
      malformed(*owner[s], fmt::format("runs[{}].checks", k),
                fmt::format("holds {} rows; its part of the plan selects {}",
                            owner[s]->doc["runs"][k]["checks"].size(), expected[s]));
}

// The unsharded run's rows in plan order, each with the verdict Holm gives it over every
// shard's inputs; the rows of a missing shard as ERROR rows naming it.
std::vector<battery::check_report> merged_rows(battery::battery_report& out,
                                               const std::vector<shard_file>& files,
                                               const std::vector<const shard_file*>& owner,
                                               size_t k) {
  const shard_file& first = files.front();
  const json& plan = first.doc["runs"][k]["shard"]["plan"];
  stats::holm_budget budget(out.alpha);
  std::vector<int> ids(plan.size(), -1);
  std::vector<bool> decides(plan.size(), false);
  for (size_t i = 0; i < plan.size(); ++i) {
    const std::string where = fmt::format("runs[{}].shard.plan[{}]", k, i);
    check_plan_row(first, plan[i], where, first.count);
    if (plan[i]["holm_weight"].is_null()) continue;
    try {
      ids[i] = budget.declare(member_name(plan[i]), plan[i]["holm_weight"].get<double>());
    } catch (const std::invalid_argument& e) {
      malformed(first, where, e.what());
    }
    decides[i] = record_input(budget, ids[i], plan[i], owner[plan[i]["shard"].get<size_t>()], k);
  }
  check_row_counts(plan, owner, k);
  const auto decisions = budget.decide();
  std::vector<battery::check_report> rows;
  for (size_t i = 0; i < plan.size(); ++i) {
    const json& row = plan[i];
    if (!row["selected"].get<bool>()) continue;
    const size_t s = row["shard"].get<size_t>();
    if (owner[s] == nullptr) {
      battery::check_report c;
      c.check = row["check"].get<std::string>();
      c.dtype = row["dtype"].is_null() ? "" : row["dtype"].get<std::string>();
      c.result = battery::verdict::error;
      c.detail = fmt::format("not judged: shard {}/{} is missing (no report.json of it given)", s,
                             owner.size());
      rows.push_back(std::move(c));
      continue;
    }
    battery::check_report c = shard_row(*owner[s], k, row);
    if (ids[i] >= 0) {
      const auto& d = decisions[static_cast<size_t>(ids[i])];
      if (c.alpha_share >= 0) c.alpha_share = d.alpha_share;
      if (decides[i]) c.result = d.rejected ? battery::verdict::fail : battery::verdict::pass;
    }
    rows.push_back(std::move(c));
  }
  return rows;
}

battery::battery_report merge_run(const std::vector<shard_file>& files,
                                  const std::vector<const shard_file*>& owner, size_t k) {
  const json& run = files.front().doc["runs"][k];
  battery::battery_report out;
  // Text read from a file is shown as text from a subject is (protocol::printable).
  const auto text = [&](const char* key) {
    return run.at(key).is_null() ? "" : protocol::printable(run.at(key).get<std::string>());
  };
  out.subject = text("subject");
  out.kind = text("kind");
  out.plugin = text("plugin");
  out.budget = text("budget");
  out.seed = run.at("seed").get<uint64_t>();
  out.alpha = run.at("alpha").get<double>();
  out.descriptor = run.value("descriptor", json());
  out.environment = run.value("environment", json());
  out.platform = run.value("platform", json());
  out.checks = merged_rows(out, files, owner, k);
  for (const auto& c : out.checks) out.samples += c.samples;
  json merged = json::array(), missing = json::array();
  for (size_t s = 0; s < owner.size(); ++s) {
    if (owner[s] == nullptr) {
      missing.push_back(s);
      continue;
    }
    const double seconds = owner[s]->doc["runs"][k].value("seconds", 0.0);
    out.cut_checks += owner[s]->doc["runs"][k].value("cut_checks", 0);  // --time-limit's
    out.seconds += seconds;  // the shards' own times summed: the work, not the wall time
    merged.push_back({{"index", s},
                      {"file", owner[s]->path},
                      {"hostname", owner[s]->doc.value("hostname", "")},
                      {"seconds", seconds}});
  }
  out.shard = {{"count", owner.size()}, {"merged", merged}, {"missing", missing}};
  out.missing_shards = static_cast<int>(missing.size());
  return out;
}

}  // namespace

void add_merge_options(CLI::App* merge, merge_request& r) {
  merge->add_option("files", r.files, "each shard's report.json")->required();
  merge->add_option("--report-dir", r.report_dir,
                    "write the merged report.json, junit.xml and report.html to this new or "
                    "empty folder");
  merge->add_flag("--verbose", r.verbose, "print every check's detail, not only failures'");
}

std::vector<battery::battery_report> merge_shards(const std::vector<std::string>& paths) {
  std::vector<shard_file> files;
  for (const auto& path : paths) {
    shard_file f{path, read_record_file("merge", path)};
    read_shard_header(f);
    files.push_back(std::move(f));
  }
  if (files.empty()) throw usage_error("merge: no report.json given");
  for (const auto& f : files) agree_with_first(f, files.front());
  std::vector<const shard_file*> owner(static_cast<size_t>(files.front().count), nullptr);
  for (const auto& f : files) {
    const shard_file*& slot = owner[static_cast<size_t>(f.index)];
    if (slot != nullptr)
      malformed(f, "shard.index",
                fmt::format("shard {}/{} again: '{}' holds it already", f.index, f.count,
                            printable(slot->path)));
    slot = &f;
  }
  std::vector<battery::battery_report> reports;
  for (size_t k = 0; k < files.front().doc["runs"].size(); ++k) {
    try {
      reports.push_back(merge_run(files, owner, k));
    } catch (const json::exception& e) {
      malformed(files.front(), fmt::format("runs[{}]", k), e.what());
    }
  }
  return reports;
}

}  // namespace samplecheck::cli
