// Fixture rows as a subject sees them, their reference distributions, and the
// batched drawing of many samples from them.
//
// Stream layout: draw j of a check's call is output row j, stream (seed, base + j, 0):
// every draw has its own Philox subsequence, as n parallel samples of one request do.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fixtures/samplers/sampler_fixtures.h"
#include "reference/filtered_distribution.h"
#include "suites/battery/subject.h"

namespace samplecheck::checks {

struct judged_row {
  std::string label;          // "zipf k=20"
  std::vector<float> values;  // probabilities, or log p for a logits subject
  fixtures::filter_setting setting;
  reference_result target{row_error{}};
  bool renormalise = false;  // the reference divides out the row's sum (reference_for)
};

// The reference's view of a subject's declaration plus one row's setting.
filter_params reference_params(const battery::subject& s, const fixtures::filter_setting& setting);
// renormalise: the row is deliberately not a normalised distribution (the subnormal
// shape); otherwise the reference's strict sum check applies.
reference_result reference_for(const battery::subject& s, const std::vector<float>& values,
                               const fixtures::filter_setting& setting, bool renormalise = false);

// Rows as the ties check judges them. A routed subject (ABI 1.5) may take another route, of
// another tie policy, for the same row in another call (the route follows what else the call
// holds), so each draw is judged by the route its own call reported: an input row is judged
// as one bucket per distinct reference among its routes' tie policies, and each draw counts
// in the bucket of its reported route. Where the policies give the row one reference (no
// top-k, no tie at the cut) or the subject declares no routes, the row is one bucket. The
// buckets are fixed by the rows alone, before any draw.
struct route_buckets {
  std::vector<judged_row> rows;  // one per bucket, input order; the label names its routes
  std::vector<size_t> input;     // rows[b]'s input row
  // [input row][route]: the bucket that route's draws count in; empty: the subject declares
  // no routes and rows[b] is input row b.
  std::vector<std::vector<size_t>> of_route;
};
route_buckets bucket_by_route(const battery::subject& s, const std::vector<judged_row>& inputs);
// The input row a judged row was drawn from: its bucket's, or itself where no buckets are.
inline size_t input_of(const route_buckets* buckets, size_t judged) {
  return buckets != nullptr ? buckets->input[judged] : judged;
}
// Whether a judged row counts every draw of its input row (no buckets, or its row's only one):
// only then are the draws it judged its input row's requests from the first on.
inline bool holds_whole_row(const route_buckets* buckets, size_t judged) {
  return buckets == nullptr ||
         std::count(buckets->input.begin(), buckets->input.end(), buckets->input[judged]) == 1;
}

// A fixture shape as the subject's input (probs or log-probs), with its reference.
judged_row make_row(const battery::subject& s, fixtures::shape shape,
                    const fixtures::shape_options& options,
                    const fixtures::filter_setting& setting);

// One fixture row to build: its shape, the shape's options and the filter setting.
struct row_spec {
  fixtures::shape shape;
  fixtures::shape_options options;
  fixtures::filter_setting setting;
  // False where a check compares the subject with itself and needs no distribution:
  // the row's target is then left unset.
  bool with_reference = true;
};
// make_row on each spec, in order, built on the host's cores (suites/stats/parallel_for.h).
std::vector<judged_row> make_rows(const battery::subject& s, const std::vector<row_spec>& specs);

// A call holding `rows` as input rows, with parameter arrays only for the filters the
// subject declares (NULL = off for the rest), and no output rows yet.
harness::sample_call call_for_rows(const battery::subject& s,
                                   const std::vector<const judged_row*>& rows);
void add_output(harness::sample_call& call, int32_t input_row, uint64_t seed, uint64_t subsequence,
                uint64_t offset);
nlohmann::json setting_json(const fixtures::filter_setting& setting);

// The first draw of a row that landed on a token the reference marks OUT.
struct out_draw {
  int32_t token = -1;  // -1: none
  uint64_t subsequence = 0, offset = 0;
};

struct drawn_counts {
  std::vector<std::vector<uint64_t>> counts;  // per row, [V]
  std::vector<out_draw> first_out;            // per row
  uint64_t samples = 0;
  std::string failure;   // non-empty: the subject errored, or a draw was invalid/out of range
  nlohmann::json repro;  // on failure
};

// Each row's first subsequence where row i draws draws[i] in turn from `base` on: row i's
// draw j is the request (seed, first[i] + j, offset 0), as draw_counts places them.
std::vector<uint64_t> first_subsequences(const std::vector<uint64_t>& draws, uint64_t base = 0);

// Draws draws[i] samples from row i (streams from subsequence_base upwards). With
// `buckets` (bucket_by_route of `rows`) counts and first_out are per bucket, each draw in
// its reported route's; without, per row.
drawn_counts draw_counts(const battery::subject& s, const std::vector<judged_row>& rows,
                         const std::vector<uint64_t>& draws, uint64_t seed,
                         uint64_t subsequence_base, const route_buckets* buckets = nullptr);
// Adds count[i] draws of row i, on subsequences first[i], first[i] + 1, ..., to `into`
// (sized by draw_counts or empty_counts of the rows judged: the buckets where given): a
// sequential check's later looks continue each row's streams where the earlier looks stopped.
// `rows_done(from, to)`, where given, hears (on the counting thread, in order) that rows
// [from, to) have every draw counted, while later rows are still being drawn.
drawn_counts empty_counts(const std::vector<judged_row>& rows);
using rows_done_fn = std::function<void(size_t from, size_t to)>;
void draw_more(const battery::subject& s, const std::vector<judged_row>& rows,
               const std::vector<uint64_t>& first, const std::vector<uint64_t>& count,
               uint64_t seed, drawn_counts& into, const route_buckets* buckets = nullptr,
               const rows_done_fn& rows_done = nullptr);

// The row's first draw on a token that the reference marks OUT, as a failure message
// naming row, token, seed and the draw (subsequence, offset); nullopt when none.
std::optional<std::string> first_out_token(const judged_row& row,
                                           const std::vector<uint64_t>& counts,
                                           const out_draw& first, uint64_t seed);

// IN tokens' conditional probabilities source_i / in_source_mass (0 elsewhere), and the
// counts restricted to IN tokens; boundary_count gets the draws on BOUNDARY tokens.
struct in_conditional {
  std::vector<uint64_t> counts;
  std::vector<double> probs;
  uint64_t in_count = 0, boundary_count = 0, n = 0;
};
in_conditional condition_on_in(const filtered_distribution& d, const std::vector<uint64_t>& counts);

}  // namespace samplecheck::checks
