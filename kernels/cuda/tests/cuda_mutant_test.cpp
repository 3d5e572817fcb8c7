// Each GPU mutant shows its planted defect on a batch built to expose it, and its
// correct host subject does not. These are the mechanisms, checked directly; the
// battery's kill matrix judges the same mutants statistically. (S02 is caught by the
// graph replay test in cuda_graph_test.cpp, S08 here and by the degenerate rows.)
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>

#include "kernels/cuda/tests/device_batch_support.h"

using namespace samplecheck::cuda_test;

namespace {

size_t distinct(const std::vector<int32_t>& tokens) {
  return std::set<int32_t>(tokens.begin(), tokens.end()).size();
}

// The mutant "<host>:<id>" on call h: more than `floor` of its tokens are
// `defective`; its host's tokens never are.
template <class Defective>
void check_exposed(const char* host, const char* id, const sample_call& h, int64_t floor,
                   Defective defective) {
  const auto count = [&](const call_result& got) {
    return std::count_if(got.token.begin(), got.token.end(), defective);
  };
  CHECK(count(run(subject(std::string(host) + ":" + id), h)) > floor);
  CHECK(count(run(subject(host), h)) == 0);
}

}  // namespace

TEST_CASE("S01: an unguarded crossing search returns the impossible id V", "[mutant]") {
  for (const char* host : {"cuda.multinomial", "cuda.dual_pivot"}) {
    INFO(host);
    const sample_call h = one_row(subject(host), 4096, 8192);
    // The mutant escapes on about 1 draw in 1025: 8192 draws see none with
    // probability e^-8 = 3e-4.
    check_exposed(host, "S01", h, 0, [&](int32_t t) { return t == h.vocab_size; });
  }
}

TEST_CASE("S03: every request reads seed and offset element 0", "[mutant]") {
  const sample_call h = one_row(subject("cuda.dual_pivot"), 4096, 64);
  CHECK(distinct(run(subject("cuda.dual_pivot:S03"), h).token) == 1);
  CHECK(distinct(run(subject("cuda.dual_pivot"), h).token) > 32);
}

TEST_CASE("S04: reordering the batch changes a request's token", "[mutant]") {
  for (const char* name : {"cuda.dual_pivot", "cuda.dual_pivot:S04"}) {
    INFO(name);
    sample_call h = one_row(subject(name), 4096, 64);
    const auto forward = run(subject(name), h).token;
    std::reverse(h.seed.begin(), h.seed.end());
    auto backward = run(subject(name), h).token;
    std::reverse(backward.begin(), backward.end());
    const bool follows_request = forward == backward;
    CHECK(follows_request == (std::string(name) == "cuda.dual_pivot"));
  }
}

TEST_CASE("S05: a uniform that reaches 1 hands the draw to a tail token", "[mutant]") {
  // One token carries 1 - 1e-6; the other 32767 share 1e-6. A correct draw leaves the
  // head with probability 1e-6; the mutant's u = 1 (rate 2^-10 a token) wins nearly
  // every draw for whichever tail token drew it.
  const int64_t v = 32768, outputs = 256;
  for (const char* host : {"cuda.gumbel_probs", "cuda.gumbel_logits"}) {
    INFO(host);
    sample_call h = one_row(subject(host), v, outputs);
    std::vector<float> p(v, 1e-6f / static_cast<float>(v - 1));
    p[12345] = 1.0f - 1e-6f;
    h.input = subject(host).input_kind == SC_INPUT_LOGITS ? logits_of(p) : p;
    check_exposed(host, "S05", h, outputs / 2, [](int32_t t) { return t != 12345; });
  }
}

TEST_CASE("S19: unshifted keys at 2^24 hand tied logits to the lower id", "[mutant]") {
  // Ids 100 and 3000 tie at 2^24 - 1, the rest sit 10 below. In float32 the ulp there is
  // 1, so z + g absorbs the Gumbel noise and the lower id wins most ties; the host
  // subtracts the row's largest logit first and splits the pair evenly.
  const int64_t v = 4096, outputs = 4000;
  sample_call h = one_row(subject("cuda.gumbel_logits"), v, outputs);
  h.input.assign(v, 16777205.0f);
  h.input[100] = h.input[3000] = 16777215.0f;
  const auto counts = [](const call_result& got) {
    return std::pair<int64_t, int64_t>{std::count(got.token.begin(), got.token.end(), 100),
                                       std::count(got.token.begin(), got.token.end(), 3000)};
  };
  const auto [ha, hb] = counts(run(subject("cuda.gumbel_logits"), h));
  const auto [ma, mb] = counts(run(subject("cuda.gumbel_logits:S19"), h));
  INFO("host " << ha << " / " << hb << ", mutant " << ma << " / " << mb);
  CHECK(std::abs(ha - hb) < (ha + hb) / 10);  // even: |a - b| ~ 60 of ~3300
  CHECK(ma > 13 * mb / 10);
}

TEST_CASE("S08: a NaN row comes back as token 0 marked valid", "[mutant]") {
  sample_call h = one_row(subject("cuda.dual_pivot"), 256, 1);
  h.input[17] = NAN;
  const call_result mutant = run(subject("cuda.dual_pivot:S08"), h);
  CHECK((mutant.valid[0] == 1 && mutant.token[0] == 0));
  CHECK(run(subject("cuda.dual_pivot"), h).valid[0] == 0);
  // The degenerate test's row of finite entries whose sum passes FLT_MAX: S08 marks
  // it valid too, so that check can fail.
  h.input[17] = h.input[200] = 2e38f;
  const call_result overflowing = run(subject("cuda.dual_pivot:S08"), h);
  CHECK((overflowing.valid[0] == 1 && overflowing.token[0] == 0));
  CHECK(run(subject("cuda.dual_pivot"), h).valid[0] == 0);
}

TEST_CASE("S09: parameters read by output row instead of input row", "[mutant]") {
  // Input row 0 is greedy-like (top_k = 1), input row 1 unfiltered; the outputs all
  // read input row 0, so every token must be row 0's argmax. Read by output row, half
  // of them pick up row 1's "no filter".
  for (const char* host : {"cuda.dual_pivot", "cuda.sort_filter"}) {
    INFO(host);
    const int64_t v = 4096, outputs = 64;
    sample_call h = one_row(subject(host), v, outputs);
    // The spread row's largest weight repeats; make token 100 the one maximum.
    auto p = spread_row(v);
    p[100] *= 3.0f;
    double total = 0;
    for (float x : p) total += x;
    for (auto& x : p) x = static_cast<float>(x / total);
    const int32_t argmax = 100;
    h.input.clear(), h.num_input_rows = 0;
    add_row(h, p);
    add_row(h, p);
    h.top_k = {1, 0};
    check_exposed(host, "S09", h, outputs / 4, [&](int32_t t) { return t != argmax; });
  }
}

TEST_CASE("S10: outputs sharing an input row share one draw", "[mutant]") {
  const sample_call h = one_row(subject("cuda.dual_pivot"), 4096, 64);
  CHECK(distinct(run(subject("cuda.dual_pivot:S10"), h).token) == 1);
  CHECK(distinct(run(subject("cuda.dual_pivot"), h).token) > 32);
}

TEST_CASE("S14: a 32-bit subsequence product repeats streams across rows", "[mutant]") {
  // One seed and offset, subsequence = row: at V = 32768 the mutant's wrapped product
  // repeats every 32 rows, so rows r and r + 32 draw the same token.
  const int64_t v = 32768, outputs = 64;
  sample_call h = one_row(subject("cuda.dual_pivot"), v, outputs);
  h.seed.assign(outputs, 99);
  h.subsequence.resize(outputs);
  for (int64_t r = 0; r < outputs; ++r) h.subsequence[r] = static_cast<uint64_t>(r);
  const auto pairs_equal = [&](const call_result& got) {
    int equal = 0;
    for (int64_t r = 0; r < 32; ++r) equal += got.token[r] == got.token[r + 32];
    return equal;
  };
  CHECK(pairs_equal(run(subject("cuda.dual_pivot:S14"), h)) == 32);
  CHECK(pairs_equal(run(subject("cuda.dual_pivot"), h)) < 4);
}
