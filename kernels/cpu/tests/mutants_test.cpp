// Each mutant differs from its host in exactly the intended way, on an input chosen to
// show it; the host, on the same input and seeds, does not. (Whether the battery kills
// the mutant is the mutation tests' business; these prove each defect is planted.)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "kernels/cpu/tests/batch_harness.h"
#include "reference/philox.h"
#include "reference/uniform.h"

using namespace samplecheck;
using namespace samplecheck::cpu_test;

namespace {

const std::vector<float> kFlat64(64, 1.0f / 64);

int distinct(const std::vector<int32_t>& tokens) {
  return static_cast<int>(std::set<int32_t>(tokens.begin(), tokens.end()).size());
}

}  // namespace

TEST_CASE("S01: the unguarded crossing search returns index V") {
  // The mutant overshoots the scanned mass on about 1 draw in 1025 (the amplification in
  // dual_pivot.cpp): about 19.5 of 20,000, and P(none) = e^-19.5. The guarded host never does.
  std::vector<float> row(3000);
  for (size_t i = 0; i < row.size(); ++i) row[i] = 1.0f / (1.0f + static_cast<float>(i % 97));
  pair_run run(draws_of(row, 20000), "cpu.dual_pivot", "S01");
  REQUIRE(histogram(run.host).back() == 0);
  const int64_t escaped = histogram(run.mutant).back();
  REQUIRE(escaped >= 5);
  for (size_t r = 0; r < run.mutant.tokens.size(); ++r)
    if (run.mutant.tokens[r] >= 3000) REQUIRE(run.mutant.tokens[r] == 3000);
}

TEST_CASE("S02: the offset is frozen, so a later call repeats the first") {
  call first = draws_of(kFlat64, 256), later = draws_of(kFlat64, 256);
  later.offset.assign(256, 320);
  pair_run a(first, "cpu.dual_pivot", "S02"), b(later, "cpu.dual_pivot", "S02");
  REQUIRE(equal_rows(a.mutant.tokens, b.mutant.tokens) == 256);
  REQUIRE(equal_rows(a.host.tokens, b.host.tokens) < 20);  // 1/64 each: about 4 expected
}

TEST_CASE("X01: a hidden generator state makes the same call draw differently") {
  const call c = draws_of(kFlat64, 256);
  pair_run a(c, "cpu.multinomial", "X01"), b(c, "cpu.multinomial", "X01");
  REQUIRE(equal_rows(a.host.tokens, b.host.tokens) == 256);
  REQUIRE(equal_rows(a.mutant.tokens, b.mutant.tokens) < 20);  // 1/64 each: about 4 expected
}

TEST_CASE("S03: every request draws with element 0's seed") {
  pair_run run(draws_of(kFlat64, 256), "cpu.dual_pivot", "S03");
  REQUIRE(distinct(run.mutant.tokens) == 1);
  REQUIRE(distinct(run.host.tokens) > 40);  // 256 draws over 64 tokens cover nearly all
}

TEST_CASE("S04: reordering the batch changes a request's token") {
  call forward = draws_of(kFlat64, 256), reversed = draws_of(kFlat64, 256);
  std::reverse(reversed.seed.begin(), reversed.seed.end());
  pair_run a(forward, "cpu.multinomial", "S04"), b(reversed, "cpu.multinomial", "S04");
  std::reverse(b.host.tokens.begin(), b.host.tokens.end());
  std::reverse(b.mutant.tokens.begin(), b.mutant.tokens.end());
  REQUIRE(equal_rows(a.host.tokens, b.host.tokens) == 256);
  REQUIRE(equal_rows(a.mutant.tokens, b.mutant.tokens) < 20);
}

TEST_CASE("S05: u = 1 lets a near-zero-probability token win") {
  // 63 tokens at 1e-9 beside one at ~1. The host picks a tiny token with probability
  // about 63e-9 per draw; the mutant whenever one of them draws u = 1 (2^-10 each),
  // about 6% of 20,000 draws.
  std::vector<float> row(64, 1e-9f);
  row[0] = 1.0f - 63e-9f;
  pair_run run(draws_of(row, 20000), "cpu.gumbel_probs", "S05");
  const auto host = histogram(run.host), mutant = histogram(run.mutant);
  REQUIRE(host[0] == 20000);
  REQUIRE(20000 - mutant[0] > 600);
}

TEST_CASE("S06: top_k keeps every tie while declaring lowest_index") {
  call c = draws_of({0.4f, 0.3f, 0.3f}, 20000);
  c.top_k = {2};
  pair_run run(c, "cpu.sort_filter", "S06");
  REQUIRE(sampler_named("cpu.sort_filter:S06").tie_policy == SC_TIE_LOWEST_INDEX);
  REQUIRE(histogram(run.host)[2] == 0);
  REQUIRE(histogram(run.mutant)[2] > 5000);  // share .3 of 20,000
}

TEST_CASE("S07: the token carrying the cumulative sum across top_p is dropped") {
  call c = draws_of({0.4f, 0.3f, 0.2f, 0.1f}, 20000);
  c.top_k = {3};
  c.top_p = {0.6f};  // B carries .4 -> .7 across .6
  pair_run run(c, "cpu.sort_filter", "S07");
  REQUIRE(histogram(run.host)[1] > 7000);  // share 3/7 of 20,000
  REQUIRE(histogram(run.mutant)[1] == 0);
}

TEST_CASE("S08: NaN and all-zero rows return token 0 marked valid") {
  for (const std::vector<float>& bad :
       {std::vector<float>{std::nanf(""), 0.5f}, std::vector<float>{0.0f, 0.0f}}) {
    pair_run run(rows_of({bad}), "cpu.multinomial", "S08");
    REQUIRE(run.host.valid[0] == 0);
    REQUIRE(run.mutant.valid[0] == 1);
    REQUIRE(run.mutant.tokens[0] == 0);
  }
}

TEST_CASE("S09: parameters are read by output row") {
  // Input row 0 has top_k 1, input row 1 none. Output 0 samples input row 1, so it must
  // vary; the mutant applies row 0's top_k 1 to it and always returns the argmax.
  const std::vector<float> row{0.1f, 0.2f, 0.3f, 0.4f};
  std::vector<int32_t> host_first, mutant_first;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    call c = rows_of({row, row}, seed * 2);
    c.top_k = {1, 0};
    c.row_index = {1, 0};
    pair_run run(c, "cpu.dual_pivot", "S09");
    host_first.push_back(run.host.tokens[0]);
    mutant_first.push_back(run.mutant.tokens[0]);
  }
  REQUIRE(distinct(host_first) == 4);
  REQUIRE(distinct(mutant_first) == 1);
  REQUIRE(mutant_first[0] == 3);
}

TEST_CASE("S10: outputs sharing an input row share one draw") {
  pair_run run(draws_of(kFlat64, 256), "cpu.multinomial", "S10");
  REQUIRE(distinct(run.mutant.tokens) == 1);
  REQUIRE(distinct(run.host.tokens) > 40);
}

TEST_CASE("S11: renormalisation zeroes tokens below 1e-8") {
  // A row whose only mass is one 5e-9 token: the host samples it, the mutant has nothing left.
  pair_run run(rows_of({{0.0f, 5e-9f, 0.0f}}), "cpu.sort_filter", "S11");
  REQUIRE(run.host.valid[0] == 1);
  REQUIRE(run.host.tokens[0] == 1);
  REQUIRE(run.mutant.valid[0] == 0);
}

TEST_CASE("S12: declares top_k_first but applies top-p jointly") {
  call c = draws_of({0.4f, 0.3f, 0.2f, 0.1f}, 20000);
  c.top_k = {3};
  c.top_p = {0.75f};  // joint keeps C (.7 above it), top_k_first does not (.78)
  pair_run run(c, "cpu.dual_pivot_topk_first", "S12");
  REQUIRE(sampler_named("cpu.dual_pivot_topk_first:S12").filter_order == SC_ORDER_TOP_K_FIRST);
  REQUIRE(histogram(run.host)[2] == 0);
  REQUIRE(histogram(run.mutant)[2] > 3000);  // share 2/9 of 20,000
}

TEST_CASE("S13: subnormals of the storage type are flushed to zero") {
  SECTION("f16: half the mass on 16384 tokens of 2^-15, a binary16 subnormal") {
    call c = draws_of(std::vector<float>(16385, 0.0f), 4000);
    c.input_dtype = SC_DTYPE_F16;
    c.input.assign(16385, 0x1p-15f);  // f16 0x0200: exponent 0, mantissa 512 * 2^-24
    c.input[0] = 0.5f;
    pair_run run(c, "cpu.dual_pivot", "S13");
    const auto host = histogram(run.host), mutant = histogram(run.mutant);
    REQUIRE(host[0] < 2400);  // share 1/2 of 4000
    REQUIRE(mutant[0] == 4000);
  }
  SECTION("f32: a row whose mass is all subnormal") {
    pair_run run(rows_of({{0.0f, 1e-40f, 2e-40f}}), "cpu.dual_pivot", "S13");
    REQUIRE(run.host.valid[0] == 1);
    REQUIRE(run.mutant.valid[0] == 0);
  }
}

TEST_CASE("S14: the 32-bit subsequence wraps, so rows 32 apart share a stream at V = 32768") {
  const int64_t vocab = 32768;
  call c = draws_of(std::vector<float>(vocab, 1.0f / vocab), 64);
  c.seed.assign(64, 99);  // one seed, the rows told apart by subsequence, as FlashInfer does
  for (uint64_t r = 0; r < 64; ++r) c.subsequence.push_back(r);
  pair_run run(c, "cpu.dual_pivot", "S14");
  int host_repeats = 0, mutant_repeats = 0;
  for (size_t r = 0; r < 32; ++r) {
    host_repeats += run.host.tokens[r] == run.host.tokens[r + 32];
    mutant_repeats += run.mutant.tokens[r] == run.mutant.tokens[r + 32];
  }
  REQUIRE(mutant_repeats == 32);
  REQUIRE(host_repeats <= 1);  // 32 pairs at 1/32768 each
}

TEST_CASE("S15: temperature on probabilities leaves the temperature without effect") {
  call c = draws_of({0.0f, 1.0f}, 20000);
  c.temperature = {0.25f};
  pair_run run(c, "cpu.gumbel_logits", "S15");
  // Target share of token 1 is 1 / (1 + e^-4) = .982; the mutant draws softmax(z): .731.
  const double host_share = histogram(run.host)[1] / 20000.0,
               mutant_share = histogram(run.mutant)[1] / 20000.0;
  REQUIRE(std::abs(host_share - 1.0 / (1.0 + std::exp(-4.0))) < 0.02);
  REQUIRE(std::abs(mutant_share - 1.0 / (1.0 + std::exp(-1.0))) < 0.02);
}

namespace {

// A flat-ish row over 8,192 tokens (8 scan tiles), distinct values so float sums round.
std::vector<float> jittered_row(size_t vocab) {
  std::vector<float> row(vocab);
  double sum = 0;
  for (size_t i = 0; i < vocab; ++i) sum += row[i] = 1.0f + static_cast<float>(i % 97) / 97.0f;
  for (float& p : row) p = static_cast<float>(p / sum);
  return row;
}

// A row tied at its top: ids 3 and 40 at 1/4 each, the rest equal (44 tokens).
std::vector<float> tied_top_row() {
  std::vector<float> row(64, 0.5f / 62);
  row[3] = row[40] = 0.25f;
  return row;
}

// Counts of ids 3 and 40 in the call's tokens.
std::pair<int, int> tied_counts(const call& c) {
  int a = 0, b = 0;
  for (const int32_t t : c.tokens) a += t == 3, b += t == 40;
  return {a, b};
}

}  // namespace

TEST_CASE("X02: a request's token depends on the batch size (the scan's chunking follows B)") {
  // The same 64 requests, each alone (B = 1: chunked scan) and in one batch of 4,096
  // (one block a row): the host gives each request its token alone, the mutant does not.
  const std::vector<float> row = jittered_row(8192);
  pair_run big(draws_of(row, 4096), "cpu.dual_pivot", "X02");
  int host_diff = 0, mutant_diff = 0;
  for (int r = 0; r < 64; ++r) {
    pair_run alone(draws_of(row, 1, 1 + r), "cpu.dual_pivot", "X02");
    host_diff += alone.host.tokens[0] != big.host.tokens[r];
    mutant_diff += alone.mutant.tokens[0] != big.mutant.tokens[r];
  }
  REQUIRE(host_diff == 0);
  REQUIRE(mutant_diff > 0);
}

TEST_CASE("S16: the renorm total's float additions arrive in a new order each call") {
  // Top-k keeping half the row: the same call twice; the host repeats its tokens, the
  // mutant's total (and through the unit-total draw, some tokens) moves.
  std::vector<float> row(8192);  // Zipf: addends of many magnitudes, so the order shows
  double sum = 0;
  for (size_t i = 0; i < row.size(); ++i) sum += row[i] = 1.0f / std::pow(1.0f + i, 1.1f);
  for (float& p : row) p = static_cast<float>(p / sum);
  call c = draws_of(row, 4096);
  c.top_k.assign(1, 4096);
  c.top_p.assign(1, 1.0f);
  c.min_p.assign(1, 0.0f);
  pair_run a(c, "cpu.dual_pivot_topk_first", "S16"), b(c, "cpu.dual_pivot_topk_first", "S16");
  REQUIRE(equal_rows(a.host.tokens, b.host.tokens) == 4096);
  REQUIRE(equal_rows(a.mutant.tokens, b.mutant.tokens) < 4096);
}

TEST_CASE("X03: declares 2 outputs per call while its rounds read further") {
  REQUIRE(sampler_named("cpu.dual_pivot:X03").philox_outputs_per_call == 2);
  REQUIRE(sampler_named("cpu.dual_pivot").philox_outputs_per_call == 320);
  // The defect is the declaration alone: the tokens are the host's on every stream.
  std::vector<float> flat(4096, 1.0f / 4096);
  call c = draws_of(flat, 512);
  c.top_k.assign(1, 64);
  pair_run run(c, "cpu.dual_pivot", "X03");
  REQUIRE(run.host.tokens == run.mutant.tokens);
}

TEST_CASE("X04: an offset past 2^32 wraps to its low 32 bits") {
  call low = draws_of(kFlat64, 256), high = draws_of(kFlat64, 256);
  for (auto& o : low.offset) o = 12;
  for (auto& o : high.offset) o = 12 + (uint64_t{1} << 32);
  pair_run a(low, "cpu.dual_pivot", "X04"), b(high, "cpu.dual_pivot", "X04");
  REQUIRE(equal_rows(a.mutant.tokens, b.mutant.tokens) == 256);
  REQUIRE(equal_rows(a.host.tokens, b.host.tokens) < 20);  // 1/64 each: about 4 expected
}

TEST_CASE("S17: a draw past the scanned total returns the masked last tile's end") {
  // 3000 tokens: 3 tiles of 1024, the last (2048..2999) all zero. About 1 draw in 1025
  // passes the total (the amplification) and then comes back as 3072 >= V.
  std::vector<float> row(3000, 0.0f);
  for (size_t i = 0; i < 2048; ++i) row[i] = 1.0f / 2048;
  pair_run run(draws_of(row, 20000), "cpu.dual_pivot", "S17");
  REQUIRE(histogram(run.host).back() == 0);
  REQUIRE(histogram(run.mutant).back() >= 5);
  for (const int32_t t : run.mutant.tokens)
    if (t >= 3000) REQUIRE(t == 3072);
}

TEST_CASE("X06: a row short of 1 gives what it lacks to its last positive token") {
  // [0.2, 0.3, 0]: the host draws token 0 with probability 0.4, X06 with 0.2 (u < 0.2)
  // and token 1 with 0.8 (u in [0.2, 1), the 0.5 the row lacks included); never token 2.
  const std::vector<float> row = {0.2f, 0.3f, 0.0f};
  pair_run run(draws_of(row, 4000), "cpu.multinomial", "X06");
  const auto host = histogram(run.host), mutant = histogram(run.mutant);
  REQUIRE((host[2] == 0 && mutant[2] == 0));
  REQUIRE(std::abs(host[0] - 1600) < 200);   // binomial sd 31
  REQUIRE(std::abs(mutant[0] - 800) < 200);  // sd 25
}

TEST_CASE("X09: tokens far below an ulp of the running sum are never drawn") {
  // A head of 0.999 then 1,000 tokens of 1e-6 each (a tail of 1e-3): the host draws
  // the tail on about 0.1% of 40,000 draws (40, sd 6); X09's float32 running sum past
  // 0.999 has an ulp of 6e-8, so each 1e-6 token still counts, but at 1e-9 (the second
  // row) the increments round away and the tail is never drawn.
  for (const float tiny : {1e-6f, 1e-9f}) {
    std::vector<float> row(1001, tiny);
    row[0] = 1.0f - 1000 * tiny;
    pair_run run(draws_of(row, 40000), "cpu.multinomial", "X09");
    const auto host = histogram(run.host), mutant = histogram(run.mutant);
    const auto tail = [](const auto& h) { return 40000 - static_cast<int64_t>(h[0]); };
    CAPTURE(tiny, tail(host), tail(mutant));
    if (tiny > 1e-7f) {
      REQUIRE(std::abs(tail(mutant) - tail(host)) < 40);
    } else {
      REQUIRE(tail(mutant) == 0);
    }
  }
}

TEST_CASE("S18: top_k = 1 keeps both tokens tied at the maximum") {
  call c = draws_of(tied_top_row(), 400);
  c.top_k.assign(1, 1);
  pair_run run(c, "cpu.sort_filter", "S18");
  REQUIRE(tied_counts(run.host) == std::pair<int, int>{400, 0});  // lowest_index: id 3 only
  const auto [a, b] = tied_counts(run.mutant);
  REQUIRE(a + b == 400);
  REQUIRE(b > 100);  // about 200
}

TEST_CASE("S19 and X05: tied logits at large magnitudes go to the lower id") {
  // S19: unshifted float32 keys at 2^24 (ulp 1-2); X05: bf16 keys at 160 (ulp 1). The
  // host shifts by the maximum and splits the tie evenly.
  for (const auto& [id, magnitude] :
       {std::pair<const char*, float>{"S19", 16777216.0f}, {"X05", 160.0f}}) {
    CAPTURE(id);
    std::vector<float> z = log_of(tied_top_row());
    for (float& x : z) x = std::round(x + magnitude);  // exact at both magnitudes
    call c = draws_of(z, 4000);
    c.temperature.assign(1, 1.0f);
    pair_run run(c, "cpu.gumbel_logits", id);
    const auto [ha, hb] = tied_counts(run.host);
    const auto [ma, mb] = tied_counts(run.mutant);
    CAPTURE(ha, hb, ma, mb);
    REQUIRE(std::abs(ha - hb) < 0.1 * (ha + hb));  // even: |a - b| ~ 60 for a + b ~ 3500
    REQUIRE(ma > 1.3 * mb);
  }
}

TEST_CASE("X07: u is formed from stream outputs 2 and 3, so it is the host's draw 2 outputs on") {
  // The mutant's token at offset o is the host's at offset o + 2 on every stream (the same
  // perfect uniform, read from the wrong outputs); at the same offset they rarely agree.
  call at = draws_of(kFlat64, 256), later = draws_of(kFlat64, 256);
  for (auto& o : at.offset) o = 5;
  for (auto& o : later.offset) o = 7;
  pair_run now(at, "cpu.multinomial", "X07"), ahead(later, "cpu.multinomial", "X07");
  REQUIRE(now.mutant.tokens == ahead.host.tokens);
  REQUIRE(equal_rows(now.host.tokens, now.mutant.tokens) < 20);  // 1/64 each: about 4 expected
  CHECK(sampler_named("cpu.multinomial:X07").uniform_rule == SC_RULE_INVERSE_CDF_U53);
  CHECK(sampler_named("cpu.multinomial").uniform_rule == SC_RULE_INVERSE_CDF_U53);
}

TEST_CASE("X08: the caller's offsets come back advanced, the tokens the host's") {
  // In this process the batch's offset array is the call's own, so the write shows here; a
  // process subject writes the shared region's copy, which the judge compares with its own.
  call c = draws_of(kFlat64, 256);
  for (auto& o : c.offset) o = 40;
  pair_run run(c, "cpu.multinomial", "X08");
  REQUIRE(run.host.offset == std::vector<uint64_t>(256, 40));
  REQUIRE(run.mutant.offset == std::vector<uint64_t>(256, 42));  // 2 outputs per call
  REQUIRE(run.mutant.tokens == run.host.tokens);
}

TEST_CASE("X10: bf16 noise ties the top keys of a flat row, and the lower id takes the tie") {
  // Rounding is monotone, so the mutant's winner is the lowest id among the keys that
  // round to the host's largest: never above the host's token on the same stream, and
  // below it when the top two noises share a bf16 value (ulp 1/32 - 1/16 near the top
  // noise of 4,096, about 2% of draws: 40 of 2,000).
  call c = draws_of(std::vector<float>(4096, 0.0f), 2000);
  c.temperature.assign(1, 1.0f);
  pair_run run(c, "cpu.gumbel_logits", "X10");
  int lower = 0;
  for (size_t r = 0; r < run.host.tokens.size(); ++r) {
    REQUIRE(run.mutant.tokens[r] <= run.host.tokens[r]);
    lower += run.mutant.tokens[r] < run.host.tokens[r];
  }
  CAPTURE(lower);
  REQUIRE(lower >= 10);
  REQUIRE(lower <= 150);
}

TEST_CASE("S20: the call site drops the offset, so a later decode step repeats the first") {
  call first = draws_of(kFlat64, 256), later = draws_of(kFlat64, 256);
  later.offset.assign(256, 2);  // the next call of each request: 2 outputs on
  pair_run a(first, "cpu.sort_filter", "S20"), b(later, "cpu.sort_filter", "S20");
  REQUIRE(equal_rows(a.mutant.tokens, b.mutant.tokens) == 256);
  REQUIRE(equal_rows(a.host.tokens, b.host.tokens) < 20);  // 1/64 each: about 4 expected
}

TEST_CASE("S21: an unfiltered request's token changes when a batchmate turns top-k on") {
  // 256 unfiltered requests on an ascending row, alone and beside one request with
  // top_k = 20: the host inverts u in token order both times, the mutant in rank order
  // (the row reversed) once a batchmate filters.
  const std::vector<float> row = jittered_row(64);
  call alone = draws_of(row, 256), mixed = alone;
  mixed.input.insert(mixed.input.end(), row.begin(), row.end());
  mixed.num_input_rows = 2;
  mixed.row_index.push_back(1);
  mixed.seed.push_back(9999);
  mixed.offset.push_back(0);
  mixed.top_k = {0, 20};
  pair_run a(alone, "cpu.sort_filter", "S21"), b(mixed, "cpu.sort_filter", "S21");
  b.host.tokens.pop_back(), b.mutant.tokens.pop_back();
  REQUIRE(a.host.tokens == b.host.tokens);
  REQUIRE(a.mutant.tokens == a.host.tokens);                   // alone, the token order: the host's
  REQUIRE(equal_rows(a.mutant.tokens, b.mutant.tokens) < 64);  // 1/64 each: about 4
}

TEST_CASE(
    "S22: top_p near 1 above the float cumsum: the boundary scatter overruns, the call fails") {
  // Four tokens of ~1/4 and 4,092 of 1e-9: each tail addition is below half an ulp of the
  // running sum and lost, so the float cumsum ends near 1 - 4e-6, below p = 1 - 1e-7, and
  // the search returns V. At p = 0.999 the search finds the fourth token: the host's tokens.
  std::vector<float> row(4096, 1e-9f);
  for (int i = 0; i < 4; ++i) row[i * 1000] = (1.0f - 4092e-9f) / 4;
  for (const float p : {0.999f, 1.0f - 1e-7f}) {
    CAPTURE(p);
    call c = draws_of(row, 64);
    c.top_p.assign(1, p);
    call host = c, mutant = c;
    host.sample(sampler_named("cpu.sort_filter"));
    const sc_sample_batch b = mutant.view();
    const sc_status status = mutant.run(sampler_named("cpu.sort_filter:S22"), b);
    CAPTURE(mutant.error);
    if (p < 0.9999f) {
      REQUIRE(status == SC_OK);
      REQUIRE(mutant.tokens == host.tokens);
    } else {
      REQUIRE(status == SC_ERR_INTERNAL);  // no token, no read past the row
      REQUIRE(mutant.error.find("4096") != std::string::npos);
    }
  }
}

TEST_CASE("S23: 24-bit noise stops at 17.3, so a token 18 nats down loses where the host's wins") {
  // Output 177,175,861 of stream (seed 1, subsequence 0) is 27: the host's v = 27.5 / 2^32
  // gives the token drawing it noise 18.9; the mutant's 24-bit v = 2^-25, noise 17.33. Token 1
  // draws it (offset one before), 18 nats below token 0's key: the host's, not the mutant's.
  constexpr uint64_t kTinyOutput = 177175861;
  philox_stream stream(1, 0, kTinyOutput - 1);
  const float v0 = uniform_fine_near_zero(stream.next());
  REQUIRE(stream.next() == 27);
  const float g0 = -std::log(-std::log1p(-v0));
  call c = draws_of({0.0f, g0 - 18.0f}, 1);
  c.offset = {kTinyOutput - 1};
  c.temperature = {1.0f};
  pair_run run(c, "cpu.gumbel_logits", "S23");
  REQUIRE(run.host.tokens[0] == 1);
  REQUIRE(run.mutant.tokens[0] == 0);
}

TEST_CASE("S24: an 18-step top-p bisection cannot reach a pivot inside a fine tail") {
  // Four head tokens (8:4:2:1) and 31,996 distinct tail tokens at 1e-6..2e-6 of the head:
  // at p = 0.99 the exact pivot lies inside the tail (the host keeps ~78% of its ~4.6%),
  // but the tail's spread is below max / 2^19, so 18 halvings of [min, max] never land in
  // it and the midpoint left keeps the head alone. At p = 0.5 and 0.9 the pivot falls
  // between head tokens, the search ends there and the mutant draws the host's tokens.
  constexpr int kV = 32000;
  std::vector<double> w(kV);
  for (int i = 0; i < kV; ++i) w[i] = 1e-6 * (1.0 + static_cast<double>(i) / kV);
  for (int r = 0; r < 4; ++r) w[r * 1000 + 7] = 8.0 / (1 << r) / 15.0;
  double total = 0.0;
  for (const double x : w) total += x;
  std::vector<float> row(kV);
  for (int i = 0; i < kV; ++i) row[i] = static_cast<float>(w[i] / total);
  auto tail_draws = [](const call& c) {
    int64_t n = 0;
    for (const int32_t t : c.tokens) n += t % 1000 != 7 || t >= 4000;
    return n;
  };
  for (const float p : {0.5f, 0.9f, 0.99f}) {
    CAPTURE(p);
    call c = draws_of(row, 4000);
    c.top_p.assign(1, p);
    pair_run run(c, "cpu.sort_filter", "S24");
    if (p < 0.95f) {
      REQUIRE(run.mutant.tokens == run.host.tokens);
      continue;
    }
    REQUIRE(tail_draws(run.host) > 80);  // ~3.6% of 4,000 expected, 145
    REQUIRE(tail_draws(run.mutant) == 0);
  }
}
