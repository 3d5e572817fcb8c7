// What a tail or tie-split failure's record keeps for the standalone script
// (docs/repro-format.md, "Standalone scripts"): the worst row (row_data) with its tail set, or
// the worst tie group's row with the group. The fakes fail those checks by their counts, not
// by an OUT token: one never draws the tokens below the tail threshold, one draws the lower
// half of the ids 1.5 times their share; a correct fake fails neither. And where a keyed
// script draws the row: every row record's first_subsequence, against the draws it names (a
// fake that declares top-k and ignores it draws OUT tokens in support, goodness_of_fit, ties
// and parameter_routing).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/tests/host_descriptor.h"
#include "suites/battery/runner.h"
#include "suites/battery/subject_roster.h"
#include "suites/checks/checks.h"
#include "suites/checks/tests/inverse_cdf_draw.h"

using namespace samplecheck::battery;

namespace {
[[maybe_unused]] const bool checks_registered = (samplecheck::checks::register_checks(), true);

enum class planted { none, no_tail, low_ids_heavier, ignores_top_k };

// Cumulative weights of one row under the planted rule: the tail (below 1e-5 of the row's
// mass) never drawn, or the lower half of the ids drawn 1.5 times their share.
std::vector<double> row_cdf(const float* p, int64_t V, planted bug) {
  double total = 0, sum = 0;
  for (int64_t t = 0; t < V; ++t) total += p[t];
  std::vector<double> cdf(static_cast<size_t>(V));
  for (int64_t t = 0; t < V; ++t) {
    double w = p[t];
    if (bug == planted::no_tail && p[t] / total < 1e-5) w = 0.0;
    if (bug == planted::low_ids_heavier && t < V / 2) w *= 1.5;
    cdf[t] = sum += w;
  }
  return cdf;
}

sc_status sample(void* context, const sc_sample_batch* b, char*, size_t) {
  const planted bug = *static_cast<const planted*>(context);
  const auto* input = static_cast<const float*>(b->input);
  const int64_t V = b->vocab_size;
  std::vector<std::vector<double>> cdfs(static_cast<size_t>(b->num_input_rows));
  for (int64_t j = 0; j < b->num_output_rows; ++j) {
    const int32_t r = b->row_index != nullptr ? b->row_index[j] : static_cast<int32_t>(j);
    auto& cdf = cdfs[static_cast<size_t>(r)];
    if (cdf.empty()) cdf = row_cdf(input + r * V, V, bug);
    b->out_token[j] = samplecheck::testing::inverse_cdf_draw(b, j, cdf);
    b->out_valid[j] = 1;
  }
  return SC_OK;
}

check_report run_check(const char* name, const planted& bug, const char* check) {
  sc_sampler s = samplecheck::testing::host_descriptor(name, SC_ABI_VERSION_MINOR);
  s.context = const_cast<planted*>(&bug);
  s.sample = sample;
  if (bug == planted::ignores_top_k) s.filters = SC_FILTER_TOP_K;  // declared, never read
  run_options o;
  o.budget = quick_budget();
  o.checks = {check};
  const battery_report report = run_battery(hosted(s), o, {});
  REQUIRE(report.checks.size() == 1);
  return report.checks.front();
}

template <typename T>
std::vector<T> decoded(const std::string& text) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  uint32_t word = 0;
  int bits = 0;
  for (const char ch : text) {
    if (ch == '=') break;
    word = (word << 6) | static_cast<uint32_t>(std::strchr(kDigits, ch) - kDigits);
    if ((bits += 6) >= 8) bytes += static_cast<char>((word >> (bits -= 8)) & 0xff);
  }
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// The fake's token of the request (seed, subsequence, offset 0) from a row's cumulative weights.
int32_t drawn_at(uint64_t seed, uint64_t subsequence, const std::vector<double>& cdf) {
  const uint64_t offset = 0;
  sc_sample_batch b{};
  b.seed = &seed;
  b.subsequence = &subsequence;
  b.offset = &offset;
  return samplecheck::testing::inverse_cdf_draw(&b, 0, cdf);
}

// The first subsequence of the record's row as its draws_per_row and index place it: one per
// draw, row after row from 0 (support, goodness_of_fit, tail, the tied rows of ties).
uint64_t drawn_before(const nlohmann::json& e) {
  const auto per_row = e.at("draws_per_row").get<std::vector<uint64_t>>();
  const auto index = e.at("row_data").at("index").get<size_t>();
  REQUIRE(index < per_row.size());
  return std::accumulate(per_row.begin(), per_row.begin() + static_cast<std::ptrdiff_t>(index),
                         uint64_t{0});
}

// A correct fake passes `check` and the planted one fails it by its counts, without an OUT
// token; the failure's record, with its row as sent (row_data) decoded.
struct failed_record {
  check_report report;
  nlohmann::json evidence, row;
  std::vector<float> values;
};

failed_record fails_by_counts(const char* name, const planted& bug, const char* check) {
  CHECK(run_check("test.correct", planted::none, check).result == verdict::pass);
  failed_record f;
  f.report = run_check(name, bug, check);
  CAPTURE(f.report.detail);
  REQUIRE(f.report.result == verdict::fail);
  f.evidence = f.report.repro.at("evidence");
  CHECK_FALSE(f.evidence.contains("token"));
  f.row = f.evidence.at("row_data");
  CHECK(f.row.at("label") == f.evidence.at("row"));
  f.values = decoded<float>(f.row.at("values_f32").get<std::string>());
  return f;
}
}  // namespace

TEST_CASE("a tail failure by its count keeps the worst row and its tail set", "[tail][repro]") {
  const failed_record f = fails_by_counts("test.tail:no_tail", planted::no_tail, "tail");
  const auto& e = f.evidence;
  const auto& row = f.row;
  const auto& values = f.values;
  const std::string set = e.at("tail").at("set").get<std::string>();
  REQUIRE(set.size() == values.size());
  double total = 0, mass = 0;
  for (const float v : values) total += v;
  for (size_t t = 0; t < values.size(); ++t) {
    const bool below = values[t] / total < 1e-5;  // the row as sent is the reference's probs
    CHECK((set[t] == 'T') == below);
    mass += below ? values[t] / total : 0.0;
  }
  CHECK(e.at("tail").at("expected_mass").get<double>() == Approx(mass).epsilon(1e-9));
  for (const auto& r : e.at("tail_rows"))
    if (r.at("row") == e.at("row")) {
      CHECK(r.at("tokens").get<size_t>() ==
            static_cast<size_t>(std::count(set.begin(), set.end(), 'T')));
      CHECK(r.at("draws") == row.at("draws"));
    }
  CHECK_FALSE(f.report.evidence.contains("tail"));  // report.json leaves the set to the record
  CHECK(e.at("first_subsequence").get<uint64_t>() == drawn_before(e));
}

TEST_CASE("a goodness_of_fit failure by its counts names its row's first request",
          "[goodness_of_fit][repro]") {
  const failed_record f =
      fails_by_counts("test.fit:low_ids", planted::low_ids_heavier, "goodness_of_fit");
  CHECK(f.evidence.at("first_subsequence").get<uint64_t>() == drawn_before(f.evidence));
}

// A keyed script draws the row from first_subsequence on: the fake's draws from there meet the
// recorded OUT token first at the recorded subsequence (parameter_routing: the output's own
// request, its one draw).
TEST_CASE("an OUT token's record names its row's first request", "[repro]") {
  static const planted bug = planted::ignores_top_k;
  const std::string check = GENERATE("support", "goodness_of_fit", "ties", "parameter_routing");
  CAPTURE(check);
  const check_report report = run_check("test.out:ignores_top_k", bug, check.c_str());
  CAPTURE(report.detail);
  REQUIRE(report.result == verdict::fail);
  const auto& e = report.repro.at("evidence");
  REQUIRE(e.contains("token"));
  const auto& row = e.at("row_data");
  const auto first = e.at("first_subsequence").get<uint64_t>();
  const bool routing = check == "parameter_routing";
  if (routing) CHECK(first == e.at("subsequence").get<uint64_t>());
  if (!routing) CHECK(first == drawn_before(e));
  const auto values = decoded<float>(row.at("values_f32").get<std::string>());
  const auto status = row.at("status").get<std::string>();
  const auto cdf = row_cdf(values.data(), static_cast<int64_t>(values.size()), bug);
  const auto seed = (e.contains("seed") ? e.at("seed") : e.at("check_seed")).get<uint64_t>();
  const uint64_t draws = routing ? 1 : row.at("draws").get<uint64_t>();
  std::optional<uint64_t> met;
  int32_t token = -1;
  for (uint64_t j = 0; j < draws && !met; ++j) {
    token = drawn_at(seed, first + j, cdf);
    if (status.at(static_cast<size_t>(token)) == 'O') met = first + j;
  }
  REQUIRE(met);
  CHECK(*met == e.at("subsequence").get<uint64_t>());
  CHECK(token == e.at("token").get<int32_t>());
}

TEST_CASE("a tie-split failure by its counts keeps the group's row and the group",
          "[ties][repro]") {
  const failed_record f = fails_by_counts("test.ties:low_ids", planted::low_ids_heavier, "ties");
  const auto& e = f.evidence;
  const auto& row = f.row;
  const auto& values = f.values;
  const std::string status = row.at("status").get<std::string>();
  const auto first = e.at("tie_group").at("first").get<size_t>();
  REQUIRE(first < values.size());
  size_t members = 0;
  for (size_t t = 0; t < values.size(); ++t)
    members += status[t] == 'I' && values[t] == values[first];
  CHECK(members == e.at("tie_group").at("size").get<size_t>());
  CHECK(members == e.at("group_size").get<size_t>());
  CHECK(row.at("draws").get<uint64_t>() > 0);
  // Its requests, for the script of a subject keyed by them: a subsequence per draw, the tied
  // rows' in input order, then the flat copies' (one row's values), each row in one bucket.
  const auto per_row = e.at("draws_per_row").get<std::vector<uint64_t>>();
  const auto index = row.at("index").get<size_t>();
  const bool flat = e.at("row").get<std::string>().rfind("flat,", 0) == 0;
  REQUIRE(index < per_row.size());
  const auto end = per_row.begin() + static_cast<std::ptrdiff_t>(flat ? per_row.size() : index);
  CHECK(e.at("first_subsequence").get<uint64_t>() ==
        std::accumulate(per_row.begin(), end, uint64_t{0}));
  if (!flat) CHECK(row.at("draws").get<uint64_t>() == per_row[index]);
}
