// The tests one row's counts get against its reference q (the battery's
// goodness_of_fit and ties, and the judging-power bench): an omnibus test and a
// directed family on the same counts, combined by Sidak over the minimum.
//
//  - omnibus: goodness_of_fit's Pearson over cells merged by expected counts
//    (moment-matched reference). Any deviation of TVD eps over the cells is seen at
//    n ~ lambda*(df) / (4 eps^2) (power.h); this is the row's stated power.
//  - directed family: binomial counts, each with the randomised two-sided p-value
//    (combine.h: exactly uniform; the doubled exact tail counted the atom twice and
//    the family's Sidak minimum leaned to 1, row medians 0.57-0.66), Sidak over the
//    family's size:
//    - cuts: in the order of q (descending, ties by token id) the count on the first
//      r tokens is Binomial(n, Q_r), at the r where the head mass Q_r first reaches
//      4^-j / 2 (j >= 0) or the tail mass 1 - Q_r first falls to 4^-j / 2 or below
//      (while n 4^-j / 2 >= 5). Mass moved between head and tail (a temperature off,
//      a tail cut by a noise floor) is a shift of one such count: close to the
//      Neyman-Pearson test of that direction. Cuts a factor 4 apart in mass correlate
//      about 0.5, so Sidak over them stays close to exact (a factor 2: 0.7, and the
//      p-values piled towards 1).
//    - tokens: every token with n q_i >= 20 (below it the counts are too discrete and
//      the p-values piled towards 1); the 64 of largest Poisson deviance get the exact
//      tail (a token outside them holds the minimum only where the deviance ranking
//      and the exact tails disagree, i.e. for near-equal p). One token doubled, a cut
//      one token early, ties broken to one side are seen at about
//      ln(V / alpha) / ln(1 / alpha) times the Neyman-Pearson draws.
//    A cut of one token is that token's test, so the two share one Sidak count.
//
// p_value = sidak_combine(min(p_omnibus, p_directed), tests), tests = 1 or 2 (the
// family is left out when it is empty or the row has <= 2 tokens, where it repeats
// the omnibus): a function of q, n and the randomisation stream. The two are
// statistics of one multinomial;
// Sidak's inequality (Sidak 1967: for two-sided statistics of jointly normal
// variables P(all accept) >= the product) makes the combination valid in the normal
// limit, and across rows (disjoint Philox subsequences) it is exact.
//
// Sidak over dependent sub-tests is conservative in the body of the distribution:
// on the peaked shape (8 heavy tokens, cuts and tokens nearly the same counts) the
// row's median p is 0.62-0.64 though each sub-test's is 0.50-0.56, and a check's
// Sidak over its rows reads the row p-values near 1 - 0.5^(1 / rows), i.e. in that
// body. With replicates B > 0 the body is calibrated by Monte Carlo: T = p_min of the
// counts and of B multinomial draws from q of the same n (the draws and their
// randomised sub-tests from the row's randomisation stream). Every sub-test is a function
// of the counts on one partition of the tokens fixed by q and n (the merged cells, the
// cuts, each token of the family alone), so a replicate draws counts on that partition
// by conditional binomials (multinomial_draw.h): O(cells) whatever n, with the null
// distribution of drawing the n tokens one by one (tests/test_row_tests.cpp compares
// the two). The randomised rank
// p_mc = (#{T_b < T} + u (#{T_b = T} + 1)) / (B + 1), exactly uniform under the null
// (the B + 1 statistics are exchangeable), and
//   p_value = p_mc                      if p_mc > c = 1 / (B + 1),
//           = min(p_sidak, c)           otherwise.
// Valid at every level x: for x >= c, {p_value <= x} = {p_mc <= x}, probability x
// exactly; for x < c it is inside {p_sidak <= x}, probability <= x as before. So the
// row's p-value is exactly uniform above c, and a small p-value still needs the Sidak
// bound: the stated level and the power at it are unchanged but for the event that
// one of B null draws is as extreme as the observed counts (probability <= B x).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "suites/stats/goodness_of_fit.h"

namespace samplecheck::stats {

inline constexpr uint64_t kRowSubTests = 2;
// Tokens below this expected count are left to the merged cells (their p-values are
// too discrete); cuts whose tail holds fewer expected draws likewise.
inline constexpr double kTokenMinExpected = 20.0;
inline constexpr double kCutMinExpected = 5.0;

// The cuts r of the directed family, from the q-descending prefix masses (prefix[0] = 0,
// prefix[r] = mass of the first r tokens, normalised) at n draws.
std::vector<size_t> row_cut_points(std::span<const double> prefix, double n);

struct row_test_result {
  gof_result omnibus;
  double p_cumulative = 1;
  int64_t cuts = 0;
  int64_t worst_cut_tokens = 0;  // the cut's r
  double worst_cut_mass = 0, worst_cut_seen = 0;
  double p_token = 1;
  int64_t worst_token = -1;
  uint64_t worst_token_count = 0;
  double worst_token_q = 0;
  double p_directed = 1;  // cuts and tokens as one family (Sidak over both)
  uint64_t tests = 0;     // omnibus, and the directed family when it has members
  double p_min = 1;       // their smallest p-value
  double p_sidak = 1;     // sidak_combine(p_min, tests)
  double p_mc = -1;       // the Monte Carlo rank p-value (-1: replicates = 0)
  double p_value = 1;     // p_sidak, or with replicates the calibrated rule above
  // With replicates: p_sidak of T on the counts and on each null replicate (in q order),
  // for a Monte Carlo over several rows at once (their b-th replicates together are one
  // null draw of independent rows: checks::combine_last_look).
  double mc_observed = 1;
  std::vector<double> mc_replicates;
};

// counts and probs as in goodness_of_fit (probs renormalised; q = 0 tokens in no test).
// The randomised p-values take their u from randomisation_uniform(seed, stream, .):
// cut r at index r, token i at 2^32 + i, the rank's u at 2^34; replicate b's draws
// and sub-tests use stream + (b + 1) 2^40. omnibus holds Pearson only (its G fields NaN). Rows
// judged together need distinct streams (below 2^40). replicates: B above (0: p_value = p_sidak).
// `order`: row_order(probs), for a caller that tests one row at several sizes (the
// looks of a check) and sorts it once; empty: sorted here.
row_test_result row_tests(std::span<const uint64_t> counts, std::span<const double> probs,
                          uint64_t seed, uint64_t stream, uint32_t replicates,
                          std::span<const size_t> order = {});

// The tokens with q > 0 in q-descending order, ties by token id (q: probs renormalised).
std::vector<size_t> row_order(std::span<const double> probs);

}  // namespace samplecheck::stats
