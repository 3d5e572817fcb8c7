#include "suites/campaigns/kill_matrix.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/mutant_catalog.h"

namespace samplecheck::campaigns {

const battery::check_report* mutant_result::named() const {
  const battery::check_report* first = nullptr;
  for (const auto& c : report.checks) {
    if (c.check != named_check) continue;
    if (c.failed()) return &c;  // the row (dtype) that killed it
    if (first == nullptr) first = &c;
  }
  return first;
}

std::vector<mutant_result> run_mutants(const std::vector<battery::subject>& subjects,
                                       const battery::run_options& options,
                                       const battery::subject_lookup& lookup, bool named_only) {
  std::vector<mutant_result> results;
  for (const auto& s : subjects) {
    const std::string name = s.name();
    const auto colon = name.rfind(':');
    if (colon == std::string::npos) continue;
    const mutant_entry* entry = find_mutant(std::string_view(name).substr(colon + 1));
    if (entry == nullptr) continue;
    mutant_result m{name, std::string(entry->id), std::string(entry->killing_check), {}, false,
                    false};
    battery::run_options o = options;
    if (named_only) o.checks = {m.named_check};
    m.report = battery::run_battery(s, o, lookup);
    m.unavailable = m.report.unavailable();
    const battery::check_report* c = m.named();
    // Another check's kill is shown in the matrix but proves nothing about the catalog's
    // claim that the named check catches this defect.
    m.judged = !m.unavailable && c != nullptr && c->result != battery::verdict::not_applicable;
    m.killed_by_named = m.judged && c->failed();
    results.push_back(std::move(m));
  }
  return results;
}

namespace {
// The matrix cell of one check: K if any of its rows (dtypes) killed the mutant.
const char* cell(const mutant_result& m, const std::string& check) {
  const char* out = " ";
  for (const auto& c : m.report.checks) {
    if (c.check != check) continue;
    switch (c.result) {
      case battery::verdict::fail:
      case battery::verdict::timeout:
        return "K";
      case battery::verdict::pass:
        out = ".";
        break;
      case battery::verdict::not_applicable:
        out = "-";
        break;
      case battery::verdict::unavailable:
        out = "s";
        break;
      case battery::verdict::error:
        out = "E";
        break;
    }
  }
  return out;
}
}  // namespace

std::string format_kill_matrix(const std::vector<mutant_result>& results) {
  std::string out;
  const std::vector<std::string> columns =
      battery::check_names();  // a name both kinds share: one column
  // Header: check names vertically would be unreadable; number them instead.
  out += "checks: ";
  for (size_t i = 0; i < columns.size(); ++i)
    out += fmt::format("{}={}{}", i + 1, columns[i], i + 1 < columns.size() ? ", " : "\n");
  out += fmt::format("{:<32}", "mutant");
  for (size_t i = 0; i < columns.size(); ++i) out += fmt::format("{:>3}", i + 1);
  out +=
      fmt::format("  {:<20} {:<10} {:>9} {:>9}\n", "named check", "verdict", "p-value", "samples");
  for (const auto& m : results) {
    out += fmt::format("{:<32}", m.subject);
    for (const auto& col : columns) out += fmt::format("{:>3}", cell(m, col));
    const battery::check_report* n = m.named();
    const std::string verdict_text = m.unavailable ? "skipped"
                                     : !m.judged   ? "not judged"
                                                   : (m.killed_by_named ? "KILLED" : "SURVIVED");
    out += fmt::format("  {:<20} {:<10} {:>9} {:>9}\n", m.named_check, verdict_text,
                       n && n->p_value >= 0 ? fmt::format("{:.1e}", n->p_value) : "exact",
                       n ? fmt::format("{}", n->samples) : "-");
  }
  size_t killed = 0, judged = 0, available = 0;
  for (const auto& m : results) {
    available += m.unavailable ? 0 : 1;
    judged += m.judged ? 1 : 0;
    killed += m.killed_by_named ? 1 : 0;
  }
  out += fmt::format(
      "{} of {} judged mutants killed by their named check ({} not judged: the named check "
      "did not run or was n/a; {} skipped: no device)\n",
      killed, judged, available - judged, results.size() - available);
  for (const auto& m : results)
    if (m.judged && !m.killed_by_named) {
      const battery::check_report* n = m.named();
      out += fmt::format("  SURVIVOR {}: {} said {}: {}\n", m.subject, m.named_check,
                         n ? battery::to_string(n->result) : "nothing", n ? n->detail : "");
    }
  return out;
}

bool all_killed(const std::vector<mutant_result>& results) {
  return std::all_of(results.begin(), results.end(),
                     [](const mutant_result& m) { return !m.judged || m.killed_by_named; });
}

bool none_judged(const std::vector<mutant_result>& results) {
  return std::none_of(results.begin(), results.end(),
                      [](const mutant_result& m) { return m.judged; });
}

}  // namespace samplecheck::campaigns
