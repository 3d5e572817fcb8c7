// samplecheck fingerprint: a manifest of a subject's output hashes, or the comparison of two.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>

#include "suites/campaigns/fingerprint.h"
#include "tools/samplecheck/determinism_commands.h"
#include "tools/samplecheck/record_file.h"
#include "tools/samplecheck/report_dir.h"
#include "tools/samplecheck/report_json.h"

namespace sb = samplecheck::battery;

namespace samplecheck::cli {
namespace {

nlohmann::json read_manifest(const std::string& path) {
  const nlohmann::json j = read_record_file("fingerprint", path);
  if (const std::string why = campaigns::manifest_error(j); !why.empty())
    throw usage_error(
        fmt::format("fingerprint: '{}' is not a fingerprint manifest: {}", printable(path), why));
  return j;
}

// The subject a manifest names: in-tree, a plugin's (by path) or an --exec process's.
subject_request recorded_subject(const nlohmann::json& m) {
  subject_request r;
  r.subject = m.at("subject").get<std::string>();
  if (const auto& p = m.at("plugin"); p.is_object())
    (p.contains("exec") ? r.exec : r.plugin) = p.value(p.contains("exec") ? "exec" : "path", "");
  return r;
}

// Entry `i` re-run on this machine for the subject a manifest names; false (and why)
// when it cannot be (a plugin or command not here or not trusted, a device absent, a
// call that fails).
bool rerun(const fingerprint_request& r, size_t side, const nlohmann::json& m, size_t i,
           campaigns::entry_output& out, std::string& why) {
  try {
    const subject_request named = recorded_subject(m);
    if (const std::string p = recorded_process(named.plugin, named.exec);
        !p.empty() && !r.trust_record) {
      why = fmt::format(
          "{} names {}; not run (a manifest never runs anything by itself: "
          "--trust-record runs it)",
          printable(r.compare[side]), p);
      return false;
    }
    sb::subject_roster roster;
    const auto subjects = resolve_subjects(roster, named);
    if (!sb::memory_space_available(*subjects.front(), &why)) return false;
    out = campaigns::run_entry(*subjects.front(), m.at("plan"), i);
    return true;
  } catch (const std::exception& e) {
    why = e.what();
    return false;
  }
}

// Prints the comparison; detail gets the first diverging element (re-run here) or why
// it is unavailable. 0: identical; 1: they differ.
int print_comparison(const fingerprint_request& r, const nlohmann::json& a, const nlohmann::json& b,
                     const campaigns::fingerprint_comparison& c, std::string& detail) {
  std::printf("A: %s (%s)\nB: %s (%s)\n", r.compare[0].c_str(),
              a.at("subject").get<std::string>().c_str(), r.compare[1].c_str(),
              b.at("subject").get<std::string>().c_str());
  if (a.value("platform", nlohmann::json()) != b.value("platform", nlohmann::json()))
    std::printf("note: taken on different platforms: %s vs %s\n",
                a.value("platform", nlohmann::json()).dump().c_str(),
                b.value("platform", nlohmann::json()).dump().c_str());
  if (c.differing.empty()) {
    std::printf("identical: %zu entries, hash %s\n", c.entries, a.value("hash", "").c_str());
    return 0;
  }
  const size_t first = c.differing.front();
  const auto& plan = a.at("plan");
  std::printf("DIFFER: %zu of %zu entries differ\n", c.differing.size(), c.entries);
  std::printf("first divergence: %s: %s (A) vs %s (B)\n",
              campaigns::entry_name(plan, first).c_str(),
              a.at("entries").at(first).at("hash").get<std::string>().c_str(),
              b.at("entries").at(first).at("hash").get<std::string>().c_str());
  if (r.no_rerun) return 1;
  campaigns::entry_output out_a, out_b;
  std::string why;
  if (!rerun(r, 0, a, first, out_a, why) || !rerun(r, 1, b, first, out_b, why)) {
    detail = "detail unavailable (re-running the subjects here): " + why;
    std::printf("  %s\n", detail.c_str());
    return 1;
  }
  for (const auto& [side, m, out] : {std::tuple{"A", &a, &out_a}, std::tuple{"B", &b, &out_b}})
    if (const std::string h = campaigns::hash_output(*out);
        h != m->at("entries").at(first).at("hash"))
      std::printf("  note: here %s's subject gives this entry hash %s, not the manifest's\n", side,
                  h.c_str());
  detail = campaigns::first_difference(plan, first, out_a, out_b);
  std::printf("  %s\n", detail.c_str());
  return 1;
}

// --report-dir: report.json, junit.xml and report.html of the comparison, whatever it found.
void write_comparison_report(const fingerprint_request& r, const nlohmann::json& a,
                             const nlohmann::json& b, const campaigns::fingerprint_comparison& c,
                             const std::string& detail, int status) {
  if (r.report_dir.empty()) return;
  const sb::manifest_comparison summary{r.compare[0], r.compare[1], &a, &b, &c, detail};
  sb::report_header header;
  header.command = "fingerprint", header.command_line = r.command_line, header.exit_status = status;
  write_report_dir(r.report_dir, sb::comparison_report(header, summary));
}

int compare(const fingerprint_request& r) {
  if (!r.report_dir.empty())
    if (const std::string why = prepare_report_dir(r.report_dir); !why.empty())
      throw usage_error(why);
  const nlohmann::json a = read_manifest(r.compare[0]), b = read_manifest(r.compare[1]);
  const auto c = campaigns::compare_manifests(a, b);
  if (!c.comparable) {
    write_comparison_report(r, a, b, c, "", 2);
    throw usage_error(fmt::format("fingerprint: {} and {} are incomparable: {}", r.compare[0],
                                  r.compare[1], c.why_not));
  }
  std::string detail;
  const int status = print_comparison(r, a, b, c, detail);
  std::fflush(stdout);
  write_comparison_report(r, a, b, c, detail, status);
  return status;
}

int take(const fingerprint_request& r) {
  if (r.output.empty())
    throw usage_error("fingerprint: give -o FILE.json (or --compare A.json B.json)");
  const common_options common = convert(r.common);
  sb::subject_roster roster;
  const auto subjects = resolve_subjects(roster, r.subject);
  if (subjects.size() != 1)
    throw usage_error(fmt::format("fingerprint: {} has {} subjects; name one with --subject",
                                  r.subject.exec.empty() ? "the plugin" : "the --exec process",
                                  subjects.size()));
  const sb::subject& s = *subjects.front();
  if (std::string why; !sb::memory_space_available(s, &why)) {
    std::printf("fingerprint: %s: device absent: %s\n", s.name().c_str(), why.c_str());
    return 77;
  }
  campaigns::fingerprint_options o;
  o.seed = common.seed;
  o.vocab_size =
      common.vocab_size > 0 ? common.vocab_size : sb::budget_by_name(common.budget)->vocab_size;
  o.matmul = common.matmul;
  const int repeats =
      r.repeat_text ? static_cast<int>(parse_count("--repeat", *r.repeat_text, 1, 1000)) : 1;
  const nlohmann::json plan = campaigns::fingerprint_plan(s, o);
  nlohmann::json manifest;
  try {
    manifest = campaigns::take_fingerprint(s, plan);
    // Run to run in one process: every repeat must give the first one's hashes.
    for (int repeat = 2; repeat <= repeats; ++repeat) {
      const nlohmann::json again = campaigns::take_fingerprint(s, plan);
      const auto c = campaigns::compare_manifests(manifest, again);
      if (c.differing.empty()) continue;
      std::printf(
          "fingerprint of %s: repeat %d differs from the first in %zu of %zu entries; first: %s\n",
          s.name().c_str(), repeat, c.differing.size(), c.entries,
          campaigns::entry_name(plan, c.differing.front()).c_str());
      return 1;
    }
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "fingerprint: the subject failed: %s\n", e.what());
    return 1;
  }
  std::ofstream out(r.output);
  out << manifest.dump(1) << "\n";
  if (!out.flush()) throw usage_error(fmt::format("fingerprint: cannot write '{}'", r.output));
  std::printf("fingerprint of %s: %zu entries, hash %s%s -> %s\n", s.name().c_str(),
              manifest.at("entries").size(), manifest.at("hash").get<std::string>().c_str(),
              repeats > 1 ? fmt::format(" ({} identical repeats)", repeats).c_str() : "",
              r.output.c_str());
  return 0;
}

}  // namespace

void add_fingerprint_options(CLI::App* app, fingerprint_request& r) {
  app->add_option("--subject", r.subject.subject,
                  "subject name; with --plugin or --exec, one of its own");
  add_process_options(app, r.subject);
  app->add_option("-o,--output", r.output, "write the manifest here")->type_name("FILE.json");
  app->add_option("--compare", r.compare, "compare two manifests: exit 0 identical, 1 differ")
      ->expected(2)
      ->type_name("A.json B.json");
  app->add_option("--repeat", r.repeat_text,
                  "take the fingerprint N times in this process; exit 1 if a repeat differs")
      ->type_name("N");
  app->add_option("--report-dir", r.report_dir,
                  "compare: write report.json, junit.xml and report.html of the comparison here")
      ->type_name("DIR");
  app->add_flag("--no-rerun", r.no_rerun,
                "compare: do not re-run the subjects for the first diverging element");
  add_trust_record(app, r.trust_record);
  app->add_option("--seed", r.common.seed_text, "operand and request seed (default fixed)")
      ->type_name("UINT");
  app->add_option("--budget", r.common.budget, "samplers: the budget whose V the grid uses")
      ->check(CLI::IsMember({"quick", "standard"}));
  app->add_option("--vocab-size", r.common.vocab_size_text, "samplers: V of the request grid")
      ->type_name("INT");
  add_matmul_selection(app, r.common);
}

int run_fingerprint(fingerprint_request r) {
  if (!r.compare.empty()) {
    if (!r.output.empty() || !r.subject.subject.empty() || !r.subject.plugin.empty() ||
        !r.subject.exec.empty())
      throw usage_error("fingerprint: --compare takes two manifests and no subject or -o");
    return compare(r);
  }
  if (!r.report_dir.empty())
    throw usage_error("fingerprint: --report-dir goes with --compare A.json B.json");
  return take(r);
}

}  // namespace samplecheck::cli
