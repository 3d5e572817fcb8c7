// One named check of the battery (CUTLASS's testbed shape): it generates its inputs
// from the fixtures, computes the reference, runs the subject, and compares. One
// table holds the sampler and the matmul checks; each says which kind it applies to.
//
// Exact checks (support, replay, batch_invariance, ...) fail on any violation and
// cannot false-alarm on a correct subject; they are outside the Holm budget.
// Statistical checks return a p-value that the runner records in the run-wide Holm
// budget. A check's sample plan depends only on the subject's descriptor, the
// budget, the seed and V: never on time, so a repro replays to the same numbers.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "suites/battery/budget.h"
#include "suites/battery/matmul_selection.h"
#include "suites/battery/subject.h"

namespace samplecheck::battery {

enum class check_kind { exact, statistical };

// Resolves another subject by name (spelling_agreement's partner); null if unknown.
using subject_lookup = std::function<const subject*(std::string_view name)>;

struct check_context {
  const subject& subj;  // for samplers, subj.input_dtype is the dtype this run sends
  const budget_settings& budget;
  uint64_t seed;       // the run's seed; each check derives its own streams from it
  double alpha_share;  // statistical checks: the Holm planning share they size samples for
  subject_lookup lookup;
  const matmul_selection& matmul;  // matmul checks: shapes and batch sizes
  // The check this context runs, and its seed (check_seed(seed, check)): a check's code
  // never spells its own name, so the table's row is the one place that does.
  std::string_view check;
  uint64_t check_seed;
};

struct check_outcome {
  bool exact_failure = false;  // a violation that no correct subject can produce
  double p_value = std::numeric_limits<double>::quiet_NaN();  // statistical checks
  std::string power;     // smallest deviation detected with probability 0.99
  uint64_t samples = 0;  // draws (output rows), or matmul outputs compared
  std::string detail;    // what was seen; names row, token, seed on a failure
  // The check's evidence: what replays it (seed, offsets, row, parameters, shape, M) and
  // the data behind report.html's plots ("fit", "tail_rows", "divergence": added only where
  // needed, see suites/checks/report_evidence.h and docs/reports.md).
  nlohmann::json repro;
  bool unavailable = false;     // the subject's device is absent: skipped, not passed
  std::string nothing_to_test;  // non-empty: the rows gave the check nothing to judge (n/a, why)
  std::string
      harness_error;  // the battery itself could not judge (a fixture the reference rejects)
};

inline check_outcome harness_failure(std::string message) {
  check_outcome out;
  out.harness_error = std::move(message);
  return out;
}

// The subject failed exactly (a call it answered wrongly): `detail` says how, and
// `evidence`, merged into the outcome's repro, locates the call that shows it. The one
// way a check records an exact failure.
inline void fail_exactly(check_outcome& out, std::string detail,
                         const nlohmann::json& evidence = nlohmann::json::object()) {
  out.exact_failure = true;
  out.detail = std::move(detail);
  if (!evidence.empty()) out.repro.update(evidence);
}

// An outcome that is that failure and nothing else.
inline check_outcome exact_failure(std::string detail) {
  check_outcome out;
  fail_exactly(out, std::move(detail));
  return out;
}

struct check_definition {
  std::string_view name;
  subject_kind applies_to;
  check_kind kind;
  double weight;  // share of the Holm budget, relative (statistical checks)
  std::string_view what;
  // Empty when the check applies to a subject of its kind; else why not ("n/a" with
  // the reason). Looks only at the descriptor, so the runner decides it before any call.
  std::function<std::string(const subject&, const subject_lookup&)> not_applicable;
  std::function<check_outcome(const check_context&)> run;
  // The samples run() draws at most (its plan: a sequential check may stop early), from
  // the descriptor, budget, seed, V and alpha share alone, before anything is drawn. The
  // check's own drawing code sizes its draws with the same plan function; the progress
  // line shows it. Empty: the check does not state its plan (progress counts it as 0).
  std::function<uint64_t(const check_context&)> planned_samples;
};

// The table of checks this run knows, owned here so that the runner never depends on the
// check kit: suites/checks registers its rows (register_checks() there, called once by
// each program before it plans a run), in the order reports print them. A name appears
// at most once per subject kind (batch_invariance and run_to_run: one property, judged
// on samplers and matmuls).
void register_check(check_definition check);
const std::vector<check_definition>& all_checks();
const check_definition* find_check(std::string_view name);
// The names of every check, for usage messages.
std::vector<std::string> check_names();

// A seed for one check, derived from the run seed so checks never share streams.
uint64_t check_seed(uint64_t run_seed, std::string_view check_name);

}  // namespace samplecheck::battery
