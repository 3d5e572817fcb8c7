// The even split of a large tie group (more than 16 tied tokens, up to the whole row),
// by dyadic splits of its ids.
//
// Given the group's n_g draws, its counts are multinomial with equal cells under the
// null. Pearson over thousands of cells has no power for what a quantised noise does
// (keys of tied tokens collide at the maximum and the lower id wins: the winner's rank
// in the group tilts linearly towards the lower ids, about 3% at V = 32,000 for Gumbel
// noise in bf16). The splits do: the node of ids [a, e) with count n_node sends
// Binomial(n_node, (h - a) / (e - a)) of its draws to its lower part [a, h), h = a +
// (e - a) / 2; the root is the halves of the group, then each half's halves, to depth
// kSplitDepth (1 + 2 + 4 = 7 splits). Given the parents' counts the splits are
// independent binomials, and each p-value is randomised (stats/combine.h) so it is
// exactly uniform: Sidak over them is exact. The root has the power for a tilt over the
// whole group or a bias between its halves; the deeper splits for a bias on a quarter or
// an eighth of it.
//
// Plan: shares of the two halves in the ratio 1 + r put (1 + r) / (2 + r) of the draws
// in the lower one, 1/2 + d with d = r / (2 (2 + r)); the exact two-sided test at level
// alpha detects it with probability `power` at halves_draws(r, alpha, power) draws (the
// normal approximation, raised until the exact binomial power reaches `power`;
// tests/calibration_test.cpp), and halves_ratio_seen reports the exact ratio at n draws
// (stats::detectable_mass_shift).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace samplecheck::checks {

inline constexpr int kSplitDepth = 3;
inline constexpr uint64_t kSplitsPerGroup = (uint64_t{1} << kSplitDepth) - 1;

struct group_split {
  double p_value = 1;
  size_t first = 0, middle = 0, end = 0;  // positions in the group: [first, middle) is lower
  uint64_t lower = 0, total = 0;          // draws in [first, middle) and in [first, end)
};

// Every split of the group whose counts (in ascending id) are `counts`, in breadth-first
// order (the root first); split i's p-value is randomised by randomisation_uniform(seed,
// stream, i). A group of fewer than 2^kSplitDepth tokens is rejected (invalid_argument).
std::vector<group_split> dyadic_splits(std::span<const uint64_t> counts, uint64_t seed,
                                       uint64_t stream);

// Draws in the group that detect a halves ratio 1 + r with probability `power` at level
// alpha (two-sided); and the halves ratio (minus 1) the exact test detects at n draws.
uint64_t halves_draws(double ratio, double alpha, double power);
double halves_ratio_seen(uint64_t n, double alpha, double power);

// Exact probability that the two-sided test of the root split at level alpha rejects
// when the lower half holds the share (1 + r) / (2 + r) of n draws.
double halves_power(uint64_t n, double ratio, double alpha);

std::string format_split(const group_split& s, std::span<const int32_t> tokens);

}  // namespace samplecheck::checks
