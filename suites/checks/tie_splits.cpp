#include "suites/checks/tie_splits.h"

#include <fmt/format.h>

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <stdexcept>

#include "suites/stats/combine.h"
#include "suites/stats/power.h"

namespace samplecheck::checks {

std::vector<group_split> dyadic_splits(std::span<const uint64_t> counts, uint64_t seed,
                                       uint64_t stream) {
  if (counts.size() < (size_t{1} << kSplitDepth))
    throw std::invalid_argument(fmt::format("dyadic_splits: a group of {} tokens is below {}",
                                            counts.size(), size_t{1} << kSplitDepth));
  std::vector<uint64_t> prefix(counts.size() + 1, 0);
  for (size_t i = 0; i < counts.size(); ++i) prefix[i + 1] = prefix[i] + counts[i];
  std::vector<group_split> out;
  std::vector<std::pair<size_t, size_t>> level{{0, counts.size()}};
  for (int depth = 0; depth < kSplitDepth; ++depth) {
    std::vector<std::pair<size_t, size_t>> next;
    for (const auto& [a, e] : level) {
      group_split s;
      s.first = a, s.end = e, s.middle = a + (e - a) / 2;
      s.lower = prefix[s.middle] - prefix[a];
      s.total = prefix[e] - prefix[a];
      const double share = static_cast<double>(s.middle - a) / static_cast<double>(e - a);
      const double u = stats::randomisation_uniform(seed, stream, out.size());
      // No draws in the node: its split is uniform all the same (u itself).
      s.p_value =
          s.total == 0 ? u : stats::binomial_randomized_two_sided_p(s.lower, s.total, share, u);
      out.push_back(s);
      next.emplace_back(a, s.middle);
      next.emplace_back(s.middle, e);
    }
    level = std::move(next);
  }
  return out;
}

namespace {
// The lower half's excess share d over 1/2 at a halves ratio 1 + r.
double share_excess(double ratio) { return ratio / (2.0 * (2.0 + ratio)); }
}  // namespace

uint64_t halves_draws(double ratio, double alpha, double power) {
  const boost::math::normal z;
  const double z_alpha = boost::math::quantile(boost::math::complement(z, alpha / 2.0));
  const double z_power = boost::math::quantile(z, power);
  // The normal approximation falls short of the exact power by about 1e-5 (the binomial's
  // discreteness), so n then grows by 0.1% steps until the exact power is reached.
  auto n = static_cast<uint64_t>(
      std::ceil(std::pow((z_alpha + z_power) * 0.5 / share_excess(ratio), 2.0)));
  while (halves_power(n, ratio, alpha) < power) n += n / 1000 + 1;
  return n;
}

double halves_ratio_seen(uint64_t n, double alpha, double power) {
  if (n == 0) return INFINITY;
  const double d = stats::detectable_mass_shift(n, 0.5, alpha, power);
  return d >= 0.5 ? INFINITY : (0.5 + d) / (0.5 - d) - 1.0;
}

double halves_power(uint64_t n, double ratio, double alpha) {
  const uint64_t c = stats::binomial_upper_critical(n, 0.5, alpha);
  if (c > n) return 0.0;
  const boost::math::binomial_distribution<double> alt(static_cast<double>(n),
                                                       0.5 + share_excess(ratio));
  const double upper = boost::math::cdf(boost::math::complement(alt, static_cast<double>(c) - 1));
  const double lower = boost::math::cdf(alt, static_cast<double>(n - c));
  return upper + lower;
}

std::string format_split(const group_split& s, std::span<const int32_t> tokens) {
  return fmt::format("ids {}..{} hold {} of the {} draws of ids {}..{} (expected {:.1f}), p {:.2e}",
                     tokens[s.first], tokens[s.middle - 1], s.lower, s.total, tokens[s.first],
                     tokens[s.end - 1],
                     static_cast<double>(s.total) * static_cast<double>(s.middle - s.first) /
                         static_cast<double>(s.end - s.first),
                     s.p_value);
}

}  // namespace samplecheck::checks
