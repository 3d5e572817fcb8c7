// The report table of one battery run (runner.h's format_report).
#include <fmt/format.h>

#include "suites/battery/runner.h"

namespace samplecheck::battery {
namespace {

// A detail line holds at most kShownDetail bytes of the check's detail: a subject's message
// may be a whole frame (1 MiB). report.json and the reproduction record keep it whole.
std::string shown_detail(const std::string& detail) {
  if (detail.size() <= kShownDetail) return detail;
  size_t cut = kShownDetail;
  while (cut > 0 && (static_cast<unsigned char>(detail[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{} ... ({} more bytes in the report's record)", detail.substr(0, cut),
                     detail.size() - cut);
}

}  // namespace

std::string format_report(const battery_report& r, bool verbose) {
  std::string out = fmt::format(
      "subject {}{}  budget {}  seed {}  alpha {:g} (Holm over the statistical checks)\n",
      r.subject, r.plugin.empty() ? "" : " (plugin " + r.plugin + ")", r.budget, r.seed, r.alpha);
  out += fmt::format("{:<27} {:<8} {:>9} {:>9} {:<38} {:>9} {:>8} {:>8}\n", "check", "verdict",
                     "p-value", "alpha", "power (0.99)", "samples", "time", "judge");
  for (const auto& c : r.checks) {
    const bool na = c.result == verdict::not_applicable;
    const std::string name = c.dtype.empty() ? c.check : fmt::format("{} [{}]", c.check, c.dtype);
    const std::string p = c.p_value >= 0 ? fmt::format("{:.2e}", c.p_value)
                                         : (na || c.result == verdict::error ? "" : "exact");
    const std::string a = c.alpha_share >= 0 ? fmt::format("{:.1e}", c.alpha_share) : "";
    const std::string t = na ? "" : fmt::format("{:.2f}s", c.seconds);
    const std::string j = na ? "" : fmt::format("{:.2f}s", c.judge_seconds);
    const std::string n = na ? "" : fmt::format("{}", c.samples);
    out += fmt::format("{:<27} {:<8} {:>9} {:>9} {:<38} {:>9} {:>8} {:>8}\n", name,
                       to_string(c.result), p, a, c.power.substr(0, 38), n, t, j);
  }
  for (const auto& c : r.checks) {
    const bool show = verbose || (c.result != verdict::pass);
    if (!show || c.detail.empty()) continue;
    const std::string name = c.dtype.empty() ? c.check : fmt::format("{} [{}]", c.check, c.dtype);
    out += fmt::format("  {} [{}]: {}\n", name, to_string(c.result), shown_detail(c.detail));
    if (!c.repro_path.empty())
      out += fmt::format("    reproduce: samplecheck replay {}\n", shell_quoted(c.repro_path));
  }
  const double rate = r.seconds > 0 ? static_cast<double>(r.samples) / r.seconds : 0.0;
  out += fmt::format("{}{}: {} samples in {:.1f} s ({:.0f} samples/s)\n", r.verdict_word(),
                     r.nothing_judged() ? " (nothing judged: every check n/a)" : "", r.samples,
                     r.seconds, rate);
  return out;
}

}  // namespace samplecheck::battery
