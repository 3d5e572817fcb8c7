// Hand-worked rows: a top-k + top-p example where the two filter orders agree, the catalogued
// defects' rows (S06, S07, S08, S13), exact ties at the top-p threshold, greedy decoding, and every
// invalid row.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reference/filtered_distribution.h"

using namespace samplecheck;

namespace {

constexpr auto IN = membership::in;
constexpr auto OUT = membership::out;
constexpr auto BOUNDARY = membership::boundary;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// By value: the result is usually a temporary.
filtered_distribution expect_ok(const reference_result& result) {
  if (!result.ok()) FAIL("unexpected error: " << result.error().message);
  return result.distribution();
}

struct membership_case {
  const char* what;
  std::vector<float> row;
  input_kind kind;
  filter_params params;
  std::vector<membership> expected;
};

filter_params make_params(int64_t k, double p, double min_p, filter_order order, tie_policy ties,
                          double temperature = 1.0) {
  filter_params params;
  params.top_k = k, params.top_p = p, params.min_p = min_p, params.order = order,
  params.ties = ties;
  params.temperature = temperature;
  return params;
}

constexpr auto kFirst = filter_order::top_k_first;
constexpr auto kJoint = filter_order::joint;
constexpr auto kKeep = tie_policy::keep_ties;
constexpr auto kLowest = tie_policy::lowest_index;

// The worked rows: each a row, the rules and the membership they define.
// The first pair, top_k 3 and top_p 0.6 on {.4, .3, .2, .1}: top_k_first
// renormalises {A,B,C} to {.444,.333,.222}, so the prefix reaches .6 at B; joint: C
// is preceded by .7 >= .6, B by .4 < .6.
const std::vector<float> kAbcd{.40f, .30f, .20f, .10f};
const std::vector<membership_case> kWorkedRows{
    {"worked example top_k_first",
     kAbcd,
     input_kind::probs,
     make_params(3, .6, 0, kFirst, kKeep),
     {IN, IN, OUT, OUT}},
    {"worked example joint",
     kAbcd,
     input_kind::probs,
     make_params(3, .6, 0, kJoint, kKeep),
     {IN, IN, OUT, OUT}},
    // Where the orders differ: top_k 2, top_p .5. Renormalised A is .571 >= .5, so
    // top_k_first stops at A; joint keeps B (preceded by .4 < .5).
    {"orders differ: top_k_first",
     kAbcd,
     input_kind::probs,
     make_params(2, .5, 0, kFirst, kKeep),
     {IN, OUT, OUT, OUT}},
    {"orders differ: joint",
     kAbcd,
     input_kind::probs,
     make_params(2, .5, 0, kJoint, kKeep),
     {IN, IN, OUT, OUT}},
    // S07: the token that carries the sum across p (B: .5 -> .8 >= .7) is kept.
    {"S07 crossing token kept",
     {.5f, .3f, .2f},
     input_kind::probs,
     make_params(0, .7, 0, kFirst, kKeep),
     {IN, IN, OUT}},
    // S06: [.4,.3,.3] with k 2: keep_ties keeps all three, lowest_index exactly two.
    {"S06 keep_ties",
     {.4f, .3f, .3f},
     input_kind::probs,
     make_params(2, 1, 0, kFirst, kKeep),
     {IN, IN, IN}},
    {"S06 lowest_index",
     {.4f, .3f, .3f},
     input_kind::probs,
     make_params(2, 1, 0, kFirst, kLowest),
     {IN, IN, OUT}},
    // Ties inside the nucleus: B and C tie at .3; keep_ties keeps both (the pivot
    // rule), lowest_index stops after B (.4 + .3 >= .5).
    {"nucleus ties keep_ties",
     {.4f, .3f, .3f},
     input_kind::probs,
     make_params(0, .5, 0, kJoint, kKeep),
     {IN, IN, IN}},
    {"nucleus ties lowest_index",
     {.4f, .3f, .3f},
     input_kind::probs,
     make_params(0, .5, 0, kJoint, kLowest),
     {IN, IN, OUT}},
    {"min_p",
     {.5f, .25f, .125f, .125f},
     input_kind::probs,
     make_params(0, 1, .4, kFirst, kKeep),
     {IN, IN, OUT, OUT}},
    // Exact ties at the top-p threshold (.5 + .25 + .25, dyadic, exact in float):
    // the prefix before B is exactly .5, so a float kernel may decide either way.
    {"exact top-p tie is BOUNDARY",
     {.5f, .25f, .25f},
     input_kind::probs,
     make_params(0, .5, 0, kJoint, kKeep),
     {IN, BOUNDARY, BOUNDARY}},
    // Five exact ties at 0 and a logit 1e-7 below (closer than a float kernel's
    // softmax error): with k 3 the last token may rise above the whole group, so it is
    // BOUNDARY, and under lowest_index so is the third member of the group.
    {"near-tie below a group, keep_ties",
     {0, 0, 0, 0, 0, -1e-7f},
     input_kind::logits,
     make_params(3, 1, 0, kFirst, kKeep),
     {IN, IN, IN, IN, IN, BOUNDARY}},
    {"near-tie below a group, lowest_index",
     {0, 0, 0, 0, 0, -1e-7f},
     input_kind::logits,
     make_params(3, 1, 0, kFirst, kLowest),
     {IN, IN, BOUNDARY, OUT, OUT, BOUNDARY}},
    {"near-tie below a group, joint",
     {0, 0, 0, 0, 0, -1e-7f},
     input_kind::logits,
     make_params(3, 1, 0, kJoint, kLowest),
     {IN, IN, BOUNDARY, OUT, OUT, BOUNDARY}},
    {"greedy keep_ties",
     {1, 3, 3, 2},
     input_kind::logits,
     make_params(0, 1, 0, kFirst, kKeep, 0),
     {OUT, IN, IN, OUT}},
    {"greedy lowest_index",
     {1, 3, 3, 2},
     input_kind::logits,
     make_params(0, 1, 0, kFirst, kLowest, 0),
     {OUT, IN, OUT, OUT}},
    {"-Inf logit is a masked token",
     {0, -kInf, 0},
     input_kind::logits,
     make_params(0, 1, 0, kFirst, kKeep),
     {IN, OUT, IN}},
    // S13: a subnormal probability is a real token; it stays in.
    {"subnormal stays",
     {1.0f, 1e-40f},
     input_kind::probs,
     make_params(0, 1, 0, kFirst, kKeep),
     {IN, IN}},
    // S11: a 1e-9 token survives top_p = 1 renormalisation.
    {"tiny token survives top_p 1",
     {1.0f, 1e-9f},
     input_kind::probs,
     make_params(0, 1, 0, kJoint, kKeep),
     {IN, IN}},
};

}  // namespace

TEST_CASE("reference: worked rows keep exactly the tokens the rules define", "[reference]") {
  const auto c = GENERATE_COPY(from_range(kWorkedRows));
  CAPTURE(c.what);
  const auto& d = expect_ok(compute_filtered_distribution(c.row, c.kind, c.params));
  std::vector<std::string> got, expected;
  for (auto m : d.status) got.push_back(to_string(m));
  for (auto m : c.expected) expected.push_back(to_string(m));
  CHECK(got == expected);
  // Nominal probabilities: the source renormalised over what the exact rule keeps.
  double total = 0;
  for (size_t i = 0; i < d.prob.size(); ++i) {
    total += d.prob[i];
    if (d.status[i] == OUT) CHECK(d.prob[i] == 0);
    CHECK(d.prob_min[i] <= d.prob[i]);
    CHECK(d.prob[i] <= d.prob_max[i]);
  }
  CHECK(total == Approx(1).epsilon(1e-12));
}

TEST_CASE("reference: the worked example's target probabilities are A .4/.7, B .3/.7",
          "[reference]") {
  for (auto order : {kFirst, kJoint}) {
    const auto& d = expect_ok(compute_filtered_distribution(kAbcd, input_kind::probs,
                                                            make_params(3, .6, 0, order, kKeep)));
    // float inputs .4f and .3f: the ratios are exact to the float decoding, 1e-7.
    CHECK(d.prob[0] == Approx(4.0 / 7).epsilon(1e-7));
    CHECK(d.prob[1] == Approx(3.0 / 7).epsilon(1e-7));
    CHECK(d.num_boundary == 0);
  }
}

TEST_CASE("reference: BOUNDARY ranges cover either resolution", "[reference]") {
  const std::vector<float> row{.5f, .25f, .25f};
  const auto& d = expect_ok(
      compute_filtered_distribution(row, input_kind::probs, make_params(0, .5, 0, kJoint, kKeep)));
  REQUIRE(d.num_in == 1);
  REQUIRE(d.num_boundary == 2);
  CHECK(d.in_source_mass == .5);
  CHECK(d.boundary_source_mass == .5);
  // The exact rule drops B and C (prefix .5 is not < .5), so A carries everything.
  CHECK(d.prob == std::vector<double>{1, 0, 0});
  CHECK(d.prob_min[0] == .5);  // both boundary tokens kept: .5 / 1
  CHECK(d.prob_max[0] == 1);   // both dropped
  CHECK(d.prob_max[1] == Approx(1.0 / 3).epsilon(1e-15));
  CHECK(d.boundary_target_mass_min == 0);
  CHECK(d.boundary_target_mass_max == .5);
}

namespace {

struct invalid_case {
  const char* what;
  std::vector<float> row;
  input_kind kind;
  filter_params params;
  probs_normalisation normalisation;
  const char* field;
  int64_t index;
};

filter_params with(void (*edit)(filter_params&)) {
  filter_params params;
  edit(params);
  return params;
}

}  // namespace

TEST_CASE("reference: invalid rows are typed errors naming field and first index", "[reference]") {
  const auto probs = input_kind::probs;
  const auto logits = input_kind::logits;
  const auto strict = probs_normalisation::strict;
  const auto renorm = probs_normalisation::renormalise;
  const std::vector<float> ok{.5f, .5f};
  const auto c = GENERATE_COPY(values<invalid_case>({
      {"NaN prob", {.5f, .25f, kNaN, kNaN}, probs, {}, strict, "probs", 2},
      {"+Inf prob", {.5f, kInf, .5f}, probs, {}, renorm, "probs", 1},
      {"-Inf prob", {-kInf, .5f}, probs, {}, renorm, "probs", 0},
      {"negative prob", {.5f, .5f, .1f, -.1f}, probs, {}, strict, "probs", 3},
      {"all zero probs", {0, 0, 0}, probs, {}, renorm, "probs", -1},
      {"sum .9 strict", {.5f, .4f}, probs, {}, strict, "probs", -1},
      {"sum 1.002 strict", {.5f, .502f}, probs, {}, strict, "probs", -1},
      {"empty row", {}, probs, {}, strict, "vocab_size", -1},
      {"NaN logit", {0, kNaN, 1}, logits, {}, strict, "logits", 1},
      {"+Inf logit", {kInf, 0}, logits, {}, strict, "logits", 0},
      {"all -Inf logits", {-kInf, -kInf}, logits, {}, strict, "logits", -1},
      {"top_k < 0", ok, probs, with([](filter_params& p) { p.top_k = -1; }), strict, "top_k", -1},
      {"top_p 0", ok, probs, with([](filter_params& p) { p.top_p = 0; }), strict, "top_p", -1},
      {"top_p 1.5", ok, probs, with([](filter_params& p) { p.top_p = 1.5; }), strict, "top_p", -1},
      {"top_p NaN", ok, probs, with([](filter_params& p) { p.top_p = std::nan(""); }), strict,
       "top_p", -1},
      {"min_p < 0", ok, probs, with([](filter_params& p) { p.min_p = -.1; }), strict, "min_p", -1},
      {"min_p > 1", ok, probs, with([](filter_params& p) { p.min_p = 1.1; }), strict, "min_p", -1},
      {"min_p NaN", ok, probs, with([](filter_params& p) { p.min_p = std::nan(""); }), strict,
       "min_p", -1},
      {"temperature < 0", ok, logits, with([](filter_params& p) { p.temperature = -1; }), strict,
       "temperature", -1},
      {"temperature NaN", ok, logits, with([](filter_params& p) { p.temperature = std::nan(""); }),
       strict, "temperature", -1},
      {"temperature +Inf", ok, logits, with([](filter_params& p) { p.temperature = INFINITY; }),
       strict, "temperature", -1},
  }));
  CAPTURE(c.what);
  reference_options options;
  options.normalisation = c.normalisation;
  const auto result = compute_filtered_distribution(c.row, c.kind, c.params, options);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().field == c.field);
  CHECK(result.error().index == c.index);
  CAPTURE(result.error().message);
  CHECK(result.error().message.find(c.field) != std::string::npos);
  if (c.index >= 0)
    CHECK(result.error().message.find(std::to_string(c.index)) != std::string::npos);
}

TEST_CASE("reference: a null row and an unknown storage type are errors, not crashes",
          "[reference]") {
  const row_input null_row{nullptr, storage_type::f32, 4, input_kind::probs};
  const auto result = compute_filtered_distribution(null_row, filter_params{});
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().field == "vocab_size");
  const uint16_t nan_bf16[3] = {0x3f00, 0x7fc0, 0x3f00};  // .5, NaN, .5
  const auto bf16 = compute_filtered_distribution(
      row_input{nan_bf16, storage_type::bf16, 3, input_kind::probs}, {});
  REQUIRE_FALSE(bf16.ok());
  CHECK(bf16.error().index == 1);
  const float row[2] = {.5f, .5f};
  const auto bad_type = compute_filtered_distribution(
      row_input{row, static_cast<storage_type>(9), 2, input_kind::probs}, {});
  REQUIRE_FALSE(bad_type.ok());
}

TEST_CASE("reference: renormalise mode accepts any positive sum", "[reference]") {
  reference_options options;
  options.normalisation = probs_normalisation::renormalise;
  const std::vector<float> weights{4, 3, 2, 1};
  const auto& d = expect_ok(compute_filtered_distribution(weights, input_kind::probs, {}, options));
  CHECK(d.source == std::vector<double>{.4, .3, .2, .1});
  // Within the 1e-3 tolerance a strict row is accepted and divided by its sum too.
  const std::vector<float> near{.5f, .5005f};
  CHECK(compute_filtered_distribution(near, input_kind::probs, {}).ok());
}
