// draw_more's rows_done contract, which lets goodness_of_fit fit a row while the subject
// draws the next ones: each row is heard of once, in order, only after every one of its
// draws is counted, and hearing changes nothing that is counted.
#include <catch2/catch.hpp>
#include <numeric>
#include <utility>
#include <vector>

#include "kernels/cpu/tests/host_descriptor.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/sampling.h"
#include "suites/checks/tests/inverse_cdf_draw.h"

using namespace samplecheck;

namespace {

sc_status draw_by_inversion(void*, const sc_sample_batch* b, char*, size_t) {
  const auto* input = static_cast<const float*>(b->input);
  const int64_t V = b->vocab_size;
  for (int64_t j = 0; j < b->num_output_rows; ++j) {
    const float* p = input + b->row_index[j] * V;
    std::vector<double> cdf(static_cast<size_t>(V));
    double sum = 0;
    for (int64_t t = 0; t < V; ++t) cdf[t] = sum += p[t];
    b->out_token[j] = testing::inverse_cdf_draw(b, j, cdf);
    b->out_valid[j] = 1;
  }
  return SC_OK;
}

uint64_t drawn(const checks::drawn_counts& d, size_t row) {
  return std::accumulate(d.counts[row].begin(), d.counts[row].end(), uint64_t{0});
}

}  // namespace

TEST_CASE("draw_more hears each row once, in order, after its every draw is counted", "[draws]") {
  sc_sampler descriptor = testing::host_descriptor("test.inversion", SC_ABI_VERSION_MINOR);
  descriptor.sample = draw_by_inversion;
  const battery::subject s = battery::hosted(descriptor);
  std::vector<checks::row_spec> specs;
  for (const auto shape : {fixtures::shape::zipf, fixtures::shape::peaked, fixtures::shape::flat,
                           fixtures::shape::zipf, fixtures::shape::flat})
    specs.push_back({shape, {.vocab_size = 64, .seed = specs.size() + 1}, {}});
  const std::vector<checks::judged_row> rows = checks::make_rows(s, specs);
  // Rows that end inside a call, exactly at a call's end (2^16 outputs), draw nothing, and
  // span several calls.
  const std::vector<uint64_t> draws{70'000, 61'072, 0, 150'001, 9};
  std::vector<uint64_t> first(rows.size(), 0);
  for (size_t i = 1; i < rows.size(); ++i) first[i] = first[i - 1] + draws[i - 1];

  checks::drawn_counts quiet = checks::empty_counts(rows), heard = checks::empty_counts(rows);
  checks::draw_more(s, rows, first, draws, 7, quiet);
  std::vector<std::pair<size_t, size_t>> ranges;
  std::vector<bool> complete_when_heard;
  checks::draw_more(s, rows, first, draws, 7, heard, nullptr, [&](size_t from, size_t to) {
    ranges.emplace_back(from, to);
    for (size_t i = from; i < to; ++i) complete_when_heard.push_back(drawn(heard, i) == draws[i]);
  });
  CHECK(heard.failure == "");
  CHECK(heard.counts == quiet.counts);
  CHECK(heard.samples == quiet.samples);
  REQUIRE(!ranges.empty());
  CHECK(ranges.front().first == 0);
  CHECK(ranges.back().second == rows.size());
  for (size_t r = 1; r < ranges.size(); ++r) CHECK(ranges[r].first == ranges[r - 1].second);
  CHECK(complete_when_heard == std::vector<bool>(rows.size(), true));
  CHECK(ranges.size() > 1);  // rows were heard of while later ones were still drawn
}

namespace {

// draw_by_inversion's token moved by the output row's top_k, read per input row (the
// default indexing) or per output row (SC_PARAMS_BY_OUTPUT_ROW): the two agree only if
// each is sent its row's parameters where it reads them.
sc_status draw_moved_by_input_row_top_k(void* context, const sc_sample_batch* b, char* error,
                                        size_t size) {
  const sc_status st = draw_by_inversion(context, b, error, size);
  for (int64_t j = 0; j < b->num_output_rows; ++j)
    b->out_token[j] = (b->out_token[j] + b->top_k[b->row_index[j]]) % b->vocab_size;
  return st;
}
sc_status draw_moved_by_output_row_top_k(void* context, const sc_sample_batch* b, char* error,
                                         size_t size) {
  const sc_status st = draw_by_inversion(context, b, error, size);
  for (int64_t j = 0; j < b->num_output_rows; ++j)
    b->out_token[j] = (b->out_token[j] + b->top_k[j]) % b->vocab_size;
  return st;
}

// draw_by_inversion, which on its `scribble_call`-th call (counted in its own process)
// writes into seed[7], an array it declares it only reads.
int scribble_call = -1;
sc_status draw_and_scribble(void* context, const sc_sample_batch* b, char* error, size_t size) {
  static int calls = 0;
  if (calls++ == scribble_call) const_cast<uint64_t*>(b->seed)[7] ^= 1;
  return draw_by_inversion(context, b, error, size);
}

// Rows 0 and 1 fill a call each; rows 2-201 draw once each, so the third call carries 201
// rows and no longer fits the area the first calls' size made: it is written in its turn,
// in a grown region whose first area covers the second call's. The last row spans two
// more calls.
struct growing_plan {
  std::vector<checks::judged_row> rows;
  std::vector<uint64_t> first, draws;

  // top_k: each row its own top_k (1 + i % 50), else none.
  explicit growing_plan(const battery::subject& s, bool top_k = false) {
    std::vector<checks::row_spec> specs;
    for (uint64_t i = 0; i < 203; ++i)
      specs.push_back({fixtures::shape::zipf,
                       {.vocab_size = 4096, .seed = i + 1},
                       {.top_k = top_k ? static_cast<int32_t>(1 + i % 50) : 0}});
    rows = checks::make_rows(s, specs);
    draws.assign(rows.size(), 1);
    draws[0] = draws[1] = 65'536, draws.back() = 150'000;
    first.assign(rows.size(), 0);
    for (size_t i = 1; i < rows.size(); ++i) first[i] = first[i - 1] + draws[i - 1];
  }
  checks::drawn_counts drawn(const battery::subject& s) const {
    checks::drawn_counts out = checks::empty_counts(rows);
    checks::draw_more(s, rows, first, draws, 7, out);
    return out;
  }
};

}  // namespace

TEST_CASE("draw_more's calls, written while the subject draws, are the calls it plans", "[draws]") {
  // batch_slot: the calls go out with slot-stream seeds, which the comparison of each
  // call's inputs must expect and the call must get back.
  sc_sampler descriptor = testing::host_descriptor("test.inversion", SC_ABI_VERSION_MINOR);
  descriptor.sample = draw_by_inversion;
  descriptor.rng_policy = SC_RNG_BATCH_SLOT;
  battery::subject in_process;
  in_process.sampler = &descriptor;
  const growing_plan plan(in_process);
  const checks::drawn_counts here = plan.drawn(in_process);
  const checks::drawn_counts there = plan.drawn(battery::hosted(descriptor));
  CHECK(here.failure == "");
  CHECK(there.failure == "");
  CHECK(there.samples == here.samples);
  CHECK(there.counts == here.counts);
}

TEST_CASE("draw_more sends a subject that takes parameters per output row its rows' own",
          "[draws]") {
  sc_sampler by_input = testing::host_descriptor("test.by_input_row", SC_ABI_VERSION_MINOR);
  by_input.filters = SC_FILTER_TOP_K;
  by_input.sample = draw_moved_by_input_row_top_k;
  sc_sampler by_output = by_input;
  by_output.name = "test.by_output_row";
  by_output.parameter_indexing = SC_PARAMS_BY_OUTPUT_ROW;
  by_output.sample = draw_moved_by_output_row_top_k;
  const growing_plan plan(battery::hosted(by_input), true);
  const checks::drawn_counts per_input = plan.drawn(battery::hosted(by_input));
  const checks::drawn_counts per_output = plan.drawn(battery::hosted(by_output));
  CHECK(per_input.failure == "");
  CHECK(per_output.failure == "");
  CHECK(per_output.samples == per_input.samples);
  CHECK(per_output.counts == per_input.counts);
}

TEST_CASE("draw_more finds an input written into on any call, and names that call", "[draws]") {
  sc_sampler descriptor = testing::host_descriptor("test.scribble", SC_ABI_VERSION_MINOR);
  descriptor.sample = draw_and_scribble;
  const growing_plan plan(battery::hosted(descriptor));
  // Call 1: compared before the grown region takes call 2 over it; call 4: the last,
  // compared after it.
  for (const int call : {0, 1, 2, 3, 4}) {
    scribble_call = call;  // read by the subject process forked below
    const checks::drawn_counts d = plan.drawn(battery::hosted(descriptor));
    INFO("scribbled on call " << call << ": " << d.failure);
    CHECK(d.failure.find("wrote into an array it only reads") != std::string::npos);
    CHECK(d.failure.find("seed[7] changed") != std::string::npos);
    CHECK(d.repro.at("subsequence_first").get<uint64_t>() == 65'536u * call);
  }
}
