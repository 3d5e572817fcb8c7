// The ties check judges each draw by the route its own call reported (ABI 1.5). The fake
// here takes two routes of different tie policies for the same row, call by call: each
// batch is split into chunks of kChunk outputs (as cake's adapter splits a batch into
// cake calls), and chunk c of the process's n-th batch takes route (n + c) % 2, so every
// tied row is drawn on both routes. The correct fake passes; a fake that breaks ties
// wrongly on one route only, reporting it truthfully, fails, and the failure names it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
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

constexpr int64_t kChunk = 64;
constexpr uint8_t kSort = 0, kFallback = 1;
const sc_route kRoutes[2] = {{"sort", SC_TIE_LOWEST_INDEX, 0}, {"fallback", SC_TIE_KEEP_TIES, 0}};

enum class planted {
  none,
  highest_on_sort,      // route 'sort' breaks a tie at the k-th towards the higher ids
  exact_k_on_fallback,  // route 'fallback' keeps exactly k (the lowest ids), not the whole tie
  past_tie_on_fallback  // route 'fallback' also keeps the first token past the tie: an OUT draw
};

// Route `route`'s top-k of a row (ties at the k-th by its policy, or the planted rule) as
// cumulative weights over the ids; a token of probability 0 is never kept.
std::vector<double> kept_cdf(const float* p, int64_t V, int32_t k, uint8_t route, planted bug) {
  std::vector<int32_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  const bool highest = bug == planted::highest_on_sort && route == kSort;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return p[a] != p[b] ? p[a] > p[b] : (highest ? a > b : a < b);
  });
  std::vector<bool> kept(static_cast<size_t>(V), true);
  if (k > 0 && k < V) {
    const bool keep_ties = route == kFallback && bug != planted::exact_k_on_fallback;
    const float kth = p[order[static_cast<size_t>(k - 1)]];
    for (int64_t r = k; r < V; ++r)
      kept[static_cast<size_t>(order[r])] = keep_ties && p[order[r]] == kth;
    if (route == kFallback && bug == planted::past_tie_on_fallback)
      for (int64_t r = k; r < V; ++r)
        if (p[order[r]] < kth) {
          kept[static_cast<size_t>(order[r])] = true;
          break;
        }
  }
  std::vector<double> cdf(static_cast<size_t>(V));
  double sum = 0;
  for (int64_t t = 0; t < V; ++t) cdf[t] = sum += kept[t] && p[t] > 0 ? p[t] : 0.0;
  return cdf;
}

uint64_t g_batches = 0;  // batches this subject process has served

sc_status routed_sample(void* context, const sc_sample_batch* b, char*, size_t) {
  const planted bug = *static_cast<const planted*>(context);
  const auto* input = static_cast<const float*>(b->input);
  const int64_t V = b->vocab_size;
  for (int64_t c0 = 0; c0 < b->num_output_rows; c0 += kChunk) {
    const auto route = static_cast<uint8_t>((g_batches + static_cast<uint64_t>(c0 / kChunk)) % 2);
    std::vector<std::vector<double>> cdfs(static_cast<size_t>(b->num_input_rows));
    for (int64_t j = c0; j < std::min(b->num_output_rows, c0 + kChunk); ++j) {
      const int32_t r = b->row_index != nullptr ? b->row_index[j] : static_cast<int32_t>(j);
      auto& cdf = cdfs[static_cast<size_t>(r)];
      if (cdf.empty())
        cdf = kept_cdf(input + r * V, V, b->top_k != nullptr ? b->top_k[r] : 0, route, bug);
      b->out_token[j] = samplecheck::testing::inverse_cdf_draw(b, j, cdf);
      b->out_valid[j] = 1;
      if (b->out_route != nullptr) b->out_route[j] = route;
    }
  }
  ++g_batches;
  return SC_OK;
}

sc_sampler routed_fake(const char* name, const planted& bug) {
  sc_sampler s = samplecheck::testing::host_descriptor(name, SC_ABI_VERSION_MINOR);
  s.filters = SC_FILTER_TOP_K;
  s.tie_policy = SC_TIE_LOWEST_INDEX;
  s.philox_outputs_per_call = 1;
  s.num_routes = 2;
  s.routes = kRoutes;
  s.context = const_cast<planted*>(&bug);
  s.sample = routed_sample;
  return s;
}
}  // namespace

// The record names the input row, as draws_per_row and the subsequences do: a routed row is
// two buckets, so a bucket's index would send a standalone script to another row's requests.
TEST_CASE("an OUT token on one route is recorded at its input row's requests", "[ties][routes]") {
  static const planted bug = planted::past_tie_on_fallback;
  const sc_sampler s = routed_fake("test.routed:past_tie_on_fallback", bug);
  const char* check = GENERATE("ties", "goodness_of_fit");
  CAPTURE(check);
  run_options o;
  o.budget = quick_budget();
  o.budget.vocab_size = 2048;
  o.budget.tie_flat_vocab = 2048;
  o.checks = {check};
  const battery_report report = run_battery(hosted(s), o, {});
  REQUIRE(report.checks.size() == 1);
  const check_report& c = report.checks.front();
  CAPTURE(c.detail);
  REQUIRE(c.result == verdict::fail);
  const auto& e = c.repro.at("evidence");
  REQUIRE(e.contains("token"));
  const auto per_row = e.at("draws_per_row").get<std::vector<uint64_t>>();
  const auto index = e.at("row_data").at("index").get<size_t>();
  REQUIRE(index < per_row.size());
  const uint64_t first = std::accumulate(per_row.begin(), per_row.begin() + index, uint64_t{0});
  CHECK(e.at("first_subsequence").get<uint64_t>() == first);  // the input row's, not the bucket's
  const auto subsequence = e.at("subsequence").get<uint64_t>();
  CHECK(subsequence >= first);
  CHECK(subsequence < first + per_row[index]);
  // ties draws each row whole before judging it; goodness_of_fit's record, at a look, counts
  // the draws of the bucket that drew the token.
  if (std::string(check) == "ties") CHECK(e.at("row_data").at("draws") == per_row[index]);
}

TEST_CASE("the ties check judges each draw by the route its call reported", "[ties][routes]") {
  struct variant {
    const char* name;
    planted bug;
    const char* named;  // what the failure names: the route whose ties are wrong
  };
  static const variant table[] = {
      {"test.routed", planted::none, ""},
      {"test.routed:highest_on_sort", planted::highest_on_sort, "'sort'"},
      {"test.routed:exact_k_on_fallback", planted::exact_k_on_fallback, "'fallback'"},
  };
  for (const variant& v : table) {
    DYNAMIC_SECTION(v.name) {
      const sc_sampler s = routed_fake(v.name, v.bug);
      run_options o;
      o.budget = quick_budget();
      o.budget.vocab_size = 2048;
      o.budget.tie_flat_vocab = 2048;
      o.checks = {"ties"};
      const battery_report report = run_battery(hosted(s), o, {});
      REQUIRE(report.checks.size() == 1);
      const check_report& c = report.checks.front();
      CAPTURE(c.detail);
      CHECK(c.samples > 0);
      if (v.bug == planted::none) {
        CHECK(c.result == verdict::pass);
        // Every row with a tie at the cut is two buckets, and both routes reached each.
        CHECK(c.detail.find("3 tied rows (5 buckets, 5 drawn)") != std::string::npos);
      } else {
        CHECK(c.result == verdict::fail);
        CHECK(c.detail.find(v.named) != std::string::npos);
        // A statistic of one route's bucket judged some of its row's requests only: a keyed
        // script, which draws the row's requests from the first on, has no address for it (an
        // OUT token has its input row's: any of the row's draws may show it).
        const auto& e = c.repro.at("evidence");
        CAPTURE(e.at("row"));
        const bool one_route = e.at("row").get<std::string>().find("(route ") != std::string::npos;
        if (!e.contains("token")) CHECK(e.contains("first_subsequence") == !one_route);
      }
    }
  }
}
