// The peer driver on real CPU subjects: every draw is counted once, the batch
// layouts of the peers give the same kind of tally, draws replay by seed, and a
// correct sampler passes each peer's rule on that peer's own inputs.
#include <catch2/catch.hpp>
#include <string>

#include "kernels/cpu/cpu_samplers.h"
#include "suites/peers/peer_cases.h"
#include "suites/peers/peer_runner.h"

using namespace samplecheck;
using namespace samplecheck::peers;

namespace {

const sc_sampler& subject(const std::string& name) {
  for (const sc_sampler* s : cpu_samplers())
    if (name == s->name) return *s;
  FAIL("no CPU subject named " << name);
  throw std::logic_error("unreachable");
}

const peer_case& case_with(const peer_plan& plan, int32_t top_k, float top_p) {
  for (const peer_case& c : plan.cases)
    if (c.top_k == top_k && c.top_p == top_p) return c;
  FAIL("plan has no case top_k=" << top_k << " top_p=" << top_p);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("every draw is counted once, in both batch layouts, in one call") {
  const sc_sampler& s = subject("cpu.sort_filter");
  const peer_plan plan = vllm_plan(7);
  const prepared_case prepared = prepare_case(case_with(plan, 8, 0.9f), s);
  for (batch_layout layout : {batch_layout::shared_row, batch_layout::repeated_rows}) {
    const draw_result r = draw_from_subject(s, prepared, 70'001, 3, layout);
    REQUIRE(r.error.empty());
    REQUIRE_FALSE(r.unsupported);
    CHECK(r.tally.total() == 70'001);
    CHECK(r.tally.in_range() == 70'001);
    CHECK(r.tally.invalid == 0);
    CHECK(r.tally.out_of_range == 0);
  }
}

TEST_CASE("draws replay by seed and change with it") {
  const sc_sampler& s = subject("cpu.multinomial");
  const prepared_case prepared = prepare_case(vllm_plan(1).cases.front(), s);
  const draw_result a = draw_from_subject(s, prepared, 5'000, 11, batch_layout::shared_row);
  const draw_result b = draw_from_subject(s, prepared, 5'000, 11, batch_layout::shared_row);
  const draw_result c = draw_from_subject(s, prepared, 5'000, 12, batch_layout::shared_row);
  CHECK(a.tally.counts == b.tally.counts);
  CHECK(a.tally.counts != c.tally.counts);
}

TEST_CASE("plans follow the peers' parametrisations") {
  const peer_plan fi = flashinfer_plan(1, 111);
  // 3 shapes x (3 mask ratios + 3 top-p + top-k 10 and 100; 500 > 111 is skipped)
  CHECK(fi.cases.size() == 24);
  CHECK(fi.samples == 5'000'000);
  CHECK(vllm_plan(1).cases.size() == 8);
  CHECK(vllm_plan(1).cases.front().logits.size() == 32);
  CHECK(pytorch_plan(1).samples == 10'000);
  CHECK(vllm_plan(1).cases.front().logits != vllm_plan(2).cases.front().logits);
}

TEST_CASE("FlashInfer's masks: the masked tokens, the top-p tail, the top-k pivot") {
  const sc_sampler& s = subject("cpu.sort_filter");
  const peer_plan plan = flashinfer_plan(5, 111);
  for (const peer_case& c : plan.cases) {
    CAPTURE(c.name);
    const prepared_case p = prepare_case(c, s);
    int64_t allowed = 0;
    for (size_t i = 0; i < p.flashinfer_allowed.size(); ++i) {
      allowed += p.flashinfer_allowed[i];
      // Their masks are at least as wide as the exact support on these rows.
      if (p.reference.prob[i] > 0) CHECK(p.flashinfer_allowed[i] == 1);
    }
    if (c.top_k > 0) CHECK(allowed == c.top_k);                 // random rows: no ties at the pivot
    if (c.top_k == 0 && c.top_p == 1.0f) CHECK(allowed >= 11);  // at most 90% masked
  }
}

TEST_CASE("correct samplers pass each peer's rule on a case of that peer") {
  const sc_sampler& sort = subject("cpu.sort_filter");
  SECTION("vLLM, 50,000 draws, top-k 8 and top-p 0.9") {
    const peer_plan plan = vllm_plan(3);
    const prepared_case p = prepare_case(case_with(plan, 8, 0.9f), sort);
    const peer_verdict v =
        judge(plan.peer, draw_from_subject(sort, p, plan.samples, 3, plan.layout).tally, p);
    CHECK(v.passed);
    CHECK(v.p_value > 1e-6);
  }
  SECTION("PyTorch, 10,000 draws, top-p 0.7") {
    const peer_plan plan = pytorch_plan(4);
    const prepared_case p = prepare_case(case_with(plan, 0, 0.7f), sort);
    CHECK(
        judge(plan.peer, draw_from_subject(sort, p, plan.samples, 4, plan.layout).tally, p).passed);
  }
  SECTION("FlashInfer, 5,000,000 draws, top-k 10 at V = 111") {
    const peer_plan plan = flashinfer_plan(5, 111);
    const prepared_case p = prepare_case(case_with(plan, 10, 1.0f), sort);
    const peer_verdict v =
        judge(plan.peer, draw_from_subject(sort, p, plan.samples, 5, plan.layout).tally, p);
    CHECK(v.passed);
    CHECK(v.statistic > 0.999);
  }
}
