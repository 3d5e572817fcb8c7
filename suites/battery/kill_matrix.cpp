#include "suites/battery/kill_matrix.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/mutant_catalog.h"

namespace samplecheck::battery {

const check_report* mutant_result::named() const {
  const check_report* first = nullptr;
  for (const auto& c : report.checks) {
    if (c.check != named_check) continue;
    if (c.failed()) return &c;  // the row (dtype) that killed it
    if (first == nullptr) first = &c;
  }
  return first;
}

namespace {
bool any_failed(const battery_report& r) {
  return std::any_of(r.checks.begin(), r.checks.end(),
                     [](const check_report& c) { return c.failed(); });
}
}  // namespace

std::vector<mutant_result> run_mutants(const std::vector<subject>& subjects,
                                       const run_options& options, const subject_lookup& lookup,
                                       bool named_only) {
  std::vector<mutant_result> results;
  for (const auto& s : subjects) {
    const std::string name = s.name();
    const auto colon = name.rfind(':');
    if (colon == std::string::npos) continue;
    const mutant_entry* entry = find_mutant(std::string_view(name).substr(colon + 1));
    if (entry == nullptr) continue;
    mutant_result m{name, std::string(entry->id), std::string(entry->killing_check), {}, false,
                    false};
    run_options o = options;
    if (named_only) o.checks = {m.named_check};
    m.report = run_battery(s, o, lookup);
    m.unavailable = m.report.unavailable();
    const check_report* c = m.named();
    // When a selection leaves the named check out, any selected check's kill counts.
    m.killed_by_named = c != nullptr ? c->failed() : any_failed(m.report);
    results.push_back(std::move(m));
  }
  return results;
}

std::string format_kill_matrix(const std::vector<mutant_result>& results) {
  std::string out;
  const std::vector<std::string> columns = check_names();  // a name both kinds share: one column
  // Header: check names vertically would be unreadable; number them instead.
  out += "checks: ";
  for (size_t i = 0; i < columns.size(); ++i)
    out += fmt::format("{}={}{}", i + 1, columns[i], i + 1 < columns.size() ? ", " : "\n");
  out += fmt::format("{:<32}", "mutant");
  for (size_t i = 0; i < columns.size(); ++i) out += fmt::format("{:>3}", i + 1);
  out +=
      fmt::format("  {:<20} {:<8} {:>9} {:>9}\n", "named check", "verdict", "p-value", "samples");
  for (const auto& m : results) {
    out += fmt::format("{:<32}", m.subject);
    for (const auto& col : columns) {
      const char* cell = " ";
      for (const auto& c : m.report.checks)
        if (c.check == col && std::string_view(cell) != "K") {
          switch (c.result) {
            case verdict::fail:
            case verdict::timeout:
              cell = "K";
              break;
            case verdict::pass:
              cell = ".";
              break;
            case verdict::not_applicable:
              cell = "-";
              break;
            case verdict::unavailable:
              cell = "s";
              break;
            case verdict::error:
              cell = "E";
              break;
          }
        }
      out += fmt::format("{:>3}", cell);
    }
    const check_report* n = m.named();
    const std::string verdict_text =
        m.unavailable ? "skipped" : (m.killed_by_named ? "KILLED" : "SURVIVED");
    out += fmt::format("  {:<20} {:<8} {:>9} {:>9}\n", m.named_check, verdict_text,
                       n && n->p_value >= 0 ? fmt::format("{:.1e}", n->p_value) : "exact",
                       n ? fmt::format("{}", n->samples) : "-");
  }
  size_t killed = 0, available = 0;
  for (const auto& m : results) {
    if (m.unavailable) continue;
    ++available;
    killed += m.killed_by_named ? 1 : 0;
  }
  out += fmt::format("{} of {} mutants killed by their named check ({} skipped: no device)\n",
                     killed, available, results.size() - available);
  for (const auto& m : results)
    if (!m.unavailable && !m.killed_by_named) {
      const check_report* n = m.named();
      out += fmt::format("  SURVIVOR {}: {} said {}: {}\n", m.subject, m.named_check,
                         n ? to_string(n->result) : "nothing", n ? n->detail : "");
    }
  return out;
}

bool all_killed(const std::vector<mutant_result>& results) {
  for (const auto& m : results)
    if (!m.unavailable && !m.killed_by_named) return false;
  return true;
}

}  // namespace samplecheck::battery
