#include "tools/samplecheck/report_json.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

namespace samplecheck::battery {
namespace {

nlohmann::json or_null(double v) { return v >= 0 ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json check_json(const check_report& c) {
  return {{"check", c.check},
          {"dtype", c.dtype.empty() ? nlohmann::json() : nlohmann::json(c.dtype)},
          {"verdict", to_string(c.result)},
          {"p_value", or_null(c.p_value)},
          {"alpha_share", or_null(c.alpha_share)},
          {"planning_share", or_null(c.planning_share)},
          {"power", c.power},
          {"samples", c.samples},
          {"seconds", c.seconds},
          {"subject_seconds", c.subject_seconds},
          {"judge_seconds", c.judge_seconds},
          {"subject_calls", c.subject_calls},
          {"subject_input_rows", c.subject_input_rows},
          {"detail", c.detail},
          {"evidence", c.evidence.is_object() ? c.evidence : nlohmann::json::object()},
          {"repro_path", c.repro_path.empty() ? nlohmann::json() : nlohmann::json(c.repro_path)}};
}

const char* run_verdict(const battery_report& r) { return r.verdict_word(); }

double or_negative(const nlohmann::json& v) { return v.is_null() ? -1 : v.get<double>(); }

verdict verdict_named(const std::string& word) {
  for (const verdict v : {verdict::pass, verdict::fail, verdict::timeout, verdict::not_applicable,
                          verdict::unavailable, verdict::error})
    if (word == to_string(v)) return v;
  throw std::invalid_argument(fmt::format("verdict '{}' is none of the table's", word));
}

nlohmann::json header_json(const report_header& h) {
  nlohmann::json j{{"format", "samplecheck-report"},
                   {"version", kReportVersion},
                   {"command", h.command},
                   {"command_line", h.command_line},
                   {"exit_status", h.exit_status}};
  if (!h.samplecheck.is_null()) j["samplecheck"] = h.samplecheck;
  if (!h.hostname.empty()) j["hostname"] = h.hostname;
  if (!h.timestamp.empty()) j["timestamp"] = h.timestamp;
  return j;
}

std::string xml_escaped(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
          out += '?';
        else
          out += ch;
    }
  }
  return out;
}

struct junit_case {
  std::string name, outcome, message, text;  // outcome: "", "failure", "error", "skipped"
  double seconds = 0;
};

// A suite's timestamp and hostname attributes and its <properties>: what ran, how, where.
struct suite_context {
  std::string attributes;
  std::vector<std::pair<std::string, std::string>> properties;
};

suite_context context_of(const nlohmann::json& report, const nlohmann::json* run) {
  suite_context s;
  if (report.contains("timestamp"))
    s.attributes +=
        fmt::format(" timestamp=\"{}\"", xml_escaped(report.at("timestamp").get<std::string>()));
  if (report.contains("hostname"))
    s.attributes +=
        fmt::format(" hostname=\"{}\"", xml_escaped(report.at("hostname").get<std::string>()));
  if (report.contains("samplecheck"))
    for (const auto& [key, value] : report.at("samplecheck").items())
      s.properties.emplace_back("samplecheck." + key,
                                value.is_string() ? value.get<std::string>() : value.dump());
  if (run != nullptr)
    for (const char* key : {"seed", "budget", "alpha"})
      if (run->contains(key))
        s.properties.emplace_back(
            key, run->at(key).is_string() ? run->at(key).get<std::string>() : run->at(key).dump());
  return s;
}

std::string suite_xml(const std::string& name, const std::vector<junit_case>& cases,
                      const suite_context& context = {}) {
  std::map<std::string, int> count;
  double seconds = 0;
  for (const auto& c : cases) ++count[c.outcome], seconds += c.seconds;
  std::string out = fmt::format(
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
      "time=\"{:.3f}\"{}>\n",
      xml_escaped(name), cases.size(), count["failure"], count["error"], count["skipped"], seconds,
      context.attributes);
  if (!context.properties.empty()) {
    out += "    <properties>\n";
    for (const auto& [key, value] : context.properties)
      out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escaped(key),
                         xml_escaped(value));
    out += "    </properties>\n";
  }
  for (const auto& c : cases) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"",
                       xml_escaped(name), xml_escaped(c.name), c.seconds);
    if (c.outcome.empty()) {
      out += "/>\n";
      continue;
    }
    out += fmt::format(">\n      <{} message=\"{}\"", c.outcome, xml_escaped(c.message));
    out += c.text.empty() ? "/>\n" : fmt::format(">{}</{}>\n", xml_escaped(c.text), c.outcome);
    out += "    </testcase>\n";
  }
  return out + "  </testsuite>\n";
}

junit_case check_case(const nlohmann::json& c) {
  junit_case j;
  j.name = c.at("check").get<std::string>();
  if (!c.at("dtype").is_null()) j.name += " [" + c.at("dtype").get<std::string>() + "]";
  j.seconds = c.at("seconds").get<double>();
  const std::string v = c.at("verdict").get<std::string>(), detail = c.at("detail");
  j.message = detail;
  if (v == "FAIL" || v == "TIMEOUT") {
    j.outcome = "failure";
    j.message = v + ": " + detail;
    j.text = detail;
    if (!c.at("repro_path").is_null())
      j.text +=
          "\nreproduce: samplecheck replay " + shell_quoted(c.at("repro_path").get<std::string>());
  } else if (v == "ERROR") {
    j.outcome = "error";
  } else if (v == "n/a") {
    j.outcome = "skipped";
    j.message = "n/a: " + detail;
  } else if (v == "skipped") {
    j.outcome = "skipped";
    j.message = "device absent: " + detail;
  }
  return j;
}

}  // namespace

check_report check_from_json(const nlohmann::json& j) {
  check_report c;
  c.check = j.at("check").get<std::string>();
  c.dtype = j.at("dtype").is_null() ? "" : j.at("dtype").get<std::string>();
  c.result = verdict_named(j.at("verdict").get<std::string>());
  c.p_value = or_negative(j.at("p_value"));
  c.alpha_share = or_negative(j.at("alpha_share"));
  c.planning_share = or_negative(j.at("planning_share"));
  c.power = j.at("power").get<std::string>();
  c.samples = j.at("samples").get<uint64_t>();
  c.seconds = j.at("seconds").get<double>();
  c.subject_seconds = j.at("subject_seconds").get<double>();
  c.judge_seconds = j.at("judge_seconds").get<double>();
  // Reports written before the call counts read as zero calls.
  c.subject_calls = j.value("subject_calls", uint64_t{0});
  c.subject_input_rows = j.value("subject_input_rows", uint64_t{0});
  c.detail = j.at("detail").get<std::string>();
  c.evidence = j.at("evidence");
  c.repro_path = j.at("repro_path").is_null() ? "" : j.at("repro_path").get<std::string>();
  return c;
}

nlohmann::json run_json(const battery_report& r) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : r.checks) checks.push_back(check_json(c));
  nlohmann::json run = {{"subject", r.subject},
                        {"kind", r.kind},
                        {"plugin", r.plugin.empty() ? nlohmann::json() : nlohmann::json(r.plugin)},
                        {"budget", r.budget},
                        {"seed", r.seed},
                        {"alpha", r.alpha},
                        {"verdict", run_verdict(r)},
                        {"samples", r.samples},
                        {"seconds", r.seconds},
                        {"descriptor", r.descriptor},
                        {"environment", r.environment},
                        {"platform", r.platform},
                        {"checks", checks}};
  if (!r.shard.is_null()) run["shard"] = r.shard;
  if (r.cut_checks > 0) run["cut_checks"] = r.cut_checks;  // qualify --time-limit
  if (r.outside_seconds.is_object()) run["outside_seconds"] = r.outside_seconds;
  return run;
}

nlohmann::json qualify_report(const report_header& h, const std::vector<battery_report>& runs) {
  nlohmann::json j = header_json(h);
  j["runs"] = nlohmann::json::array();
  for (const auto& r : runs) j["runs"].push_back(run_json(r));
  return j;
}

nlohmann::json mutants_report(const report_header& h,
                              const std::vector<campaigns::mutant_result>& results) {
  nlohmann::json j = header_json(h);
  j["runs"] = nlohmann::json::array();
  j["mutants"] = nlohmann::json::array();
  for (const auto& m : results) {
    j["runs"].push_back(run_json(m.report));
    j["mutants"].push_back({{"subject", m.subject},
                            {"id", m.id},
                            {"named_check", m.named_check},
                            {"killed", m.killed_by_named},
                            {"judged", m.judged},
                            {"unavailable", m.unavailable}});
  }
  return j;
}

nlohmann::json calibration_report(
    const report_header& h,
    const std::vector<std::pair<std::string, campaigns::calibration_summary>>& s,
    double fail_below) {
  nlohmann::json j = header_json(h);
  j["calibration"] = nlohmann::json::array();
  for (const auto& [subject, c] : s) {
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& [name, u] : c.checks)
      checks.push_back({{"check", name},
                        {"p_values", u.p_values},
                        {"false_alarms", u.false_alarms},
                        {"expected_false_alarms", u.expected_false_alarms},
                        {"false_alarm_p", u.false_alarm_p},
                        {"ks_distance", u.uniformity.ks_distance},
                        {"ks_p", u.uniformity.ks_p},
                        {"ks_lower_distance", u.uniformity.ks_lower_distance},
                        {"ks_lower_p", u.uniformity.ks_lower_p},
                        {"ad_statistic", u.uniformity.ad_statistic},
                        {"ad_p", u.uniformity.ad_p},
                        {"median", u.uniformity.median},
                        {"median_band", {u.uniformity.median_low, u.uniformity.median_high}}});
    j["calibration"].push_back({{"subject", subject},
                                {"runs", c.runs},
                                {"failed_runs", c.failed_runs},
                                {"alpha", c.alpha},
                                {"failure_p_value", c.failure_p_value},
                                {"fail_below", fail_below},
                                {"checks", checks}});
  }
  return j;
}

namespace {

// The largest number of differing entries listed one by one (the count is always whole).
constexpr size_t kListedDifferences = 1000;

nlohmann::json manifest_side(const std::string& path, const nlohmann::json& m) {
  return {{"path", path},
          {"subject", m.at("subject")},
          {"hash", m.value("hash", "")},
          {"platform", m.value("platform", nlohmann::json::object())},
          {"entries", m.at("entries").size()}};
}

// An entry's name without its size (M or B): the row of the divergence plot it sits on.
std::string series_of(const nlohmann::json& entry) {
  std::string label;
  for (const auto& [key, value] : entry.items()) {
    if (key == "hash" || key == "m" || key == "batch_size") continue;
    label += fmt::format("{}{} {}", label.empty() ? "" : ", ", key,
                         value.is_string() ? value.get<std::string>() : value.dump());
  }
  return label;
}

int64_t size_of(const nlohmann::json& entry) {
  return entry.contains("m") ? entry.at("m").get<int64_t>() : entry.at("batch_size").get<int64_t>();
}

}  // namespace

nlohmann::json comparison_report(const report_header& h, const manifest_comparison& c) {
  const auto& r = *c.result;
  nlohmann::json j = header_json(h);
  nlohmann::json cmp{
      {"verdict", !r.comparable ? "incomparable" : (r.differing.empty() ? "identical" : "differ")},
      {"a", manifest_side(c.a_path, *c.a)},
      {"b", manifest_side(c.b_path, *c.b)},
      {"why_not", r.comparable ? nlohmann::json() : nlohmann::json(r.why_not)},
      {"entries", r.entries},
      {"differing_count", r.differing.size()},
      {"differing", nlohmann::json::array()},
      {"series", nlohmann::json::array()},
      {"first_divergence", nlohmann::json()}};
  if (r.comparable) {
    const auto& plan = c.a->at("plan");
    cmp["kind"] = plan.at("kind");
    cmp["sizes"] = plan.at("batch_sizes");
    const auto& ea = c.a->at("entries");
    const auto& eb = c.b->at("entries");
    // One series per run of entries that differ only in their size (plan order).
    std::map<std::string, size_t> series_index;
    for (size_t i = 0; i < ea.size(); ++i) {
      const std::string label = series_of(ea.at(i));
      if (!series_index.count(label)) {
        series_index[label] = cmp["series"].size();
        cmp["series"].push_back({{"label", label}, {"differing_sizes", nlohmann::json::array()}});
      }
    }
    for (const size_t i : r.differing) {
      const size_t series = series_index[series_of(ea.at(i))];
      cmp["series"][series]["differing_sizes"].push_back(size_of(ea.at(i)));
      if (cmp["differing"].size() < kListedDifferences)
        cmp["differing"].push_back({{"index", i},
                                    {"name", campaigns::entry_name(plan, i)},
                                    {"series", series},
                                    {"size", size_of(ea.at(i))},
                                    {"hash_a", ea.at(i).at("hash")},
                                    {"hash_b", eb.at(i).at("hash")}});
    }
    if (!r.differing.empty()) {
      cmp["first_divergence"] = cmp["differing"][0];
      cmp["first_divergence"]["detail"] =
          c.detail.empty() ? nlohmann::json() : nlohmann::json(c.detail);
    }
  }
  j["comparison"] = cmp;
  return j;
}

namespace {

// One testcase per mutant: survived is a failure, an absent device or a named check that
// did not run is skipped.
std::string mutants_xml(const nlohmann::json& report) {
  std::vector<junit_case> cases;
  for (const auto& m : report.at("mutants")) {
    junit_case c{m.at("subject"), "", "", "", 0};
    const std::string named = m.at("named_check");
    if (m.at("unavailable").get<bool>())
      c.outcome = "skipped", c.message = "no device";
    else if (!m.value("judged", true))
      c.outcome = "skipped", c.message = "not judged: " + named + " did not run";
    else if (!m.at("killed").get<bool>())
      c.outcome = "failure", c.message = "SURVIVED: " + named + " did not kill it";
    cases.push_back(std::move(c));
  }
  for (const auto& r : report.at("runs"))
    for (auto& c : cases)
      if (c.name == r.at("subject")) c.seconds = r.at("seconds").get<double>();
  return suite_xml("mutants", cases);
}

// fingerprint --compare as one testcase: differ is a failure, incomparable an error.
std::string comparison_xml(const nlohmann::json& c) {
  junit_case t{fmt::format("{} vs {}", c.at("a").at("path").get<std::string>(),
                           c.at("b").at("path").get<std::string>()),
               "", "", "", 0};
  const std::string verdict = c.at("verdict");
  if (verdict == "incomparable") {
    t.outcome = "error";
    t.message = "incomparable: " + c.at("why_not").get<std::string>();
  } else if (verdict == "differ") {
    const auto& first = c.at("first_divergence");
    t.outcome = "failure";
    t.message = fmt::format("DIFFER: {} of {} entries differ; first: {}",
                            c.at("differing_count").get<size_t>(), c.at("entries").get<size_t>(),
                            first.at("name").get<std::string>());
    t.text = t.message;
    if (!first.at("detail").is_null()) t.text += "\n" + first.at("detail").get<std::string>();
  }
  return suite_xml("fingerprint --compare", {t});
}

// One calibrated subject: its failed runs, then each check's uniformity, by the rule
// calibration_summary::acceptable applies.
std::string calibration_xml(const nlohmann::json& s) {
  std::vector<junit_case> cases;
  const double below = s.at("fail_below").get<double>();
  junit_case runs{"failed runs", "", "", "", 0};
  if (s.at("failure_p_value").get<double>() < below)
    runs.outcome = "failure",
    runs.message =
        fmt::format("{} failed runs of {}: P = {:.3g} < {:g}", s.at("failed_runs").get<int>(),
                    s.at("runs").get<int>(), s.at("failure_p_value").get<double>(), below);
  cases.push_back(runs);
  for (const auto& c : s.at("checks")) {
    junit_case u{"uniformity " + c.at("check").get<std::string>(), "", "", "", 0};
    const double fa_p = c.at("false_alarm_p").get<double>();
    const double ks_lower_p = c.at("ks_lower_p").get<double>();
    const double median = c.at("median").get<double>();
    if (fa_p < below || ks_lower_p < below || median > campaigns::kMaxMedianP)
      u.outcome = "failure",
      u.message = fmt::format(
          "{} false alarms ({:.3g} expected, P = {:.3g}); too many small p-values: D- {:.4f}, "
          "p = {:.3g}; median {:.3f} (at most {:g}); fail below {:g}",
          c.at("false_alarms").get<uint64_t>(), c.at("expected_false_alarms").get<double>(), fa_p,
          c.at("ks_lower_distance").get<double>(), ks_lower_p, median, campaigns::kMaxMedianP,
          below);
    cases.push_back(u);
  }
  return suite_xml("calibrate " + s.at("subject").get<std::string>(), cases);
}

}  // namespace

std::string junit_xml(const nlohmann::json& report) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"samplecheck " +
                    xml_escaped(report.at("command").get<std::string>()) + "\">\n";
  if (report.contains("mutants")) {
    out += mutants_xml(report);
  } else if (report.contains("runs")) {
    for (const auto& r : report.at("runs")) {
      std::vector<junit_case> cases;
      for (const auto& c : r.at("checks")) cases.push_back(check_case(c));
      out += suite_xml(r.at("subject").get<std::string>(), cases, context_of(report, &r));
    }
  }
  if (report.contains("comparison")) out += comparison_xml(report.at("comparison"));
  if (report.contains("calibration"))
    for (const auto& s : report.at("calibration")) out += calibration_xml(s);
  return out + "</testsuites>\n";
}

}  // namespace samplecheck::battery
