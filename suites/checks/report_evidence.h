// The data behind the report's plots, as parts of a check's evidence (check_outcome's
// `repro`: one JSON object that replays the check and that report.json carries). Each
// piece is small and added only where a person needs it: a goodness-of-fit row only
// when it is suspicious (docs/reports.md lists the keys).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "suites/checks/sampling.h"
#include "suites/stats/tail_test.h"

namespace samplecheck::checks {

// A row's p-value at or below this carries its per-token counts ("fit").
inline constexpr double kFitEvidenceBelow = 1e-2;
// Tokens a "fit" shows: the most probable ones, then every deviating one.
inline constexpr size_t kFitEvidenceTokens = 40;

// Observed against expected IN-conditional counts of one row's most probable tokens and
// of the tokens that deviate at level alpha / V, each with its Clopper-Pearson interval
// (two-sided, level alpha / V, as stats::deviating_tokens names them), scaled to counts.
nlohmann::json fit_evidence(const judged_row& row, const std::vector<uint64_t>& counts,
                            double alpha);

// One tail row: expected and seen mass below the threshold, with the seen fraction's
// Clopper-Pearson interval at the row's level alpha.
nlohmann::json tail_evidence(const judged_row& row, const stats::tail_result& t, double alpha);

// The tail set of a row for the standalone script: the threshold, the set's target mass, and
// per token T (in the set) or - as one string (docs/repro-format.md).
nlohmann::json tail_set(const judged_row& row, const stats::tail_result& t);

// One cell of a tie group against the even split: `observed` of the group's `total` draws
// where the split expects total * share, with the observed count's Clopper-Pearson
// interval at `level` (two-sided), scaled to counts.
nlohmann::json tie_cell(const std::string& label, uint64_t observed, uint64_t total, double share,
                        double level);

// The judged row itself, for a standalone reproduction script (docs/repro-format.md,
// "Standalone scripts"): the record otherwise names the row only by its label and seed,
// and rebuilding it needs the subject's descriptor and the fixture code. `values` as
// float32 bits (the dtype's values are exactly representable there), the reference's
// status per token (I, O, B) and its IN-conditional probabilities as float64 bits, both
// little-endian base64; `draws` is what the check drew from the row.
nlohmann::json row_data(const judged_row& row, size_t index, uint64_t draws);
// A row judged by a rule other than the reference's (a degenerate row under treat_as_zero):
// that rule's status per token and IN-conditional probabilities in their place.
nlohmann::json row_data(const judged_row& row, size_t index, uint64_t draws,
                        const std::string& status, const std::vector<double>& q);
// The same, `draws` the sum of the row's counts.
nlohmann::json row_data(const judged_row& row, size_t index, const std::vector<uint64_t>& counts);

// 64-bit words as little-endian base64 (a collision record's requests, evidence.requests_u64).
std::string base64_words(const std::vector<uint64_t>& words);

// The tie groups a report plots: the `shown` with the smallest p-values of those judged.
inline constexpr size_t kTieEvidenceGroups = 8;

}  // namespace samplecheck::checks
