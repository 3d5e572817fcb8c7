// The mutants test continued (mutants_test.cpp is at the size limit): each defect shown
// on an input chosen for it, beside its host on the same input and seeds.
#include "kernels/cpu/tests/batch_harness.h"

using namespace samplecheck;
using namespace samplecheck::cpu_test;

TEST_CASE("X11: above V = 65,536 an id past 65,535 comes back as its low 16 bits") {
  // Half the mass on V - 1 and half on id 5. At V = 65,537 the host draws 65,536, which
  // the mutant writes as 0; at V = 65,536 the top id, 65,535, fits and the tokens agree.
  for (const int64_t V : {int64_t{65536}, int64_t{65537}}) {
    CAPTURE(V);
    std::vector<float> row(static_cast<size_t>(V), 0.0f);
    row[5] = row[static_cast<size_t>(V - 1)] = 0.5f;
    pair_run run(draws_of(row, 400), "cpu.sort_filter", "X11");
    const auto host = histogram(run.host);
    REQUIRE(host[static_cast<size_t>(V - 1)] > 100);  // about 200
    if (V == 65536) {
      REQUIRE(run.mutant.tokens == run.host.tokens);
      continue;
    }
    for (size_t r = 0; r < run.host.tokens.size(); ++r)
      REQUIRE(run.mutant.tokens[r] == (run.host.tokens[r] & 0xFFFF));
    REQUIRE(histogram(run.mutant)[0] == host[static_cast<size_t>(V - 1)]);
  }
}

TEST_CASE("X12: top-k keeps the tied tokens std::partial_sort's heap keeps, not the lowest ids") {
  // docs/shipped/llamacpp.md's smallest case: logits {1, 0, 1, 2} (probabilities 2:1:2:3),
  // k = 2. lowest_index keeps {3, 0}; the heap of ids {0, 1} evicts 1 for 2, then one of
  // the tied {0, 2} for 3, keeping {3, 2}.
  call c = draws_of({0.25f, 0.125f, 0.25f, 0.375f}, 20000);
  c.top_k = {2};
  pair_run run(c, "cpu.sort_filter", "X12");
  REQUIRE(sampler_named("cpu.sort_filter:X12").tie_policy == SC_TIE_LOWEST_INDEX);
  const auto host = histogram(run.host), mutant = histogram(run.mutant);
  REQUIRE(host[2] == 0);
  REQUIRE(host[0] > 7000);  // share .4 of 20,000
  REQUIRE(mutant[0] == 0);
  REQUIRE(mutant[2] > 7000);
  // Without a tie at the k-th the two keep the same set and draw the same tokens.
  call distinct = draws_of({0.25f, 0.125f, 0.2f, 0.425f}, 2000);
  distinct.top_k = {2};
  pair_run same(distinct, "cpu.sort_filter", "X12");
  REQUIRE(same.mutant.tokens == same.host.tokens);
}
