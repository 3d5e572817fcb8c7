#include "filters.h"

#include <algorithm>

namespace vendor {
namespace {

// Descending probability; equal probabilities in token order, so the draw for
// a given uniform is reproducible.
std::vector<int32_t> positive_tokens_by_probability(const std::vector<double>& probs, bool sort) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < probs.size(); ++i)
    if (probs[i] > 0.0) ids.push_back(static_cast<int32_t>(i));
  if (sort)
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
  return ids;
}

// How many of `ids` (sorted) top-k keeps: the first k, and every later token tied
// with the k-th.
size_t top_k_count(const std::vector<double>& probs, const std::vector<int32_t>& ids,
                   int32_t top_k) {
  const size_t k = static_cast<size_t>(top_k);
  if (top_k <= 0 || k >= ids.size()) return ids.size();
  const double kth = probs[ids[k - 1]];
  size_t keep = k;
  while (keep < ids.size() && probs[ids[keep]] == kth) ++keep;
  return keep;
}

// How many of the first `keep` sorted tokens top-p keeps: whole tie groups, while
// the mass before the group is below top_p times the mass of all `keep`.
size_t top_p_count(const std::vector<double>& probs, const std::vector<int32_t>& ids, size_t keep,
                   double top_p) {
  double mass = 0.0;
  for (size_t i = 0; i < keep; ++i) mass += probs[ids[i]];
  const double limit = top_p * mass;
  double before = 0.0;
  size_t n = 0;
  while (n < keep && before < limit) {
    const double value = probs[ids[n]];
    for (; n < keep && probs[ids[n]] == value; ++n) before += value;
  }
  return n;
}

}  // namespace

kept_tokens filter_row(const std::vector<double>& probs, int32_t top_k, double top_p) {
  const bool top_k_on = top_k > 0 && static_cast<size_t>(top_k) < probs.size();
  const bool top_p_on = top_p < 1.0;
  kept_tokens kept;
  kept.ids = positive_tokens_by_probability(probs, top_k_on || top_p_on);
  size_t keep = top_k_count(probs, kept.ids, top_k_on ? top_k : 0);
  if (top_p_on) keep = top_p_count(probs, kept.ids, keep, top_p);
  kept.ids.resize(keep);
  kept.cumulative.resize(keep);
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) kept.cumulative[i] = sum += probs[kept.ids[i]];
  return kept;
}

int32_t invert_cdf(const kept_tokens& kept, double unit) {
  const double u = unit * kept.cumulative.back();
  const auto hit = std::upper_bound(kept.cumulative.begin(), kept.cumulative.end(), u);
  // u < total in exact arithmetic; should rounding put it at the end, the last
  // token takes it (every kept token has positive mass, so it is a real choice).
  if (hit == kept.cumulative.end()) return kept.ids.back();
  return kept.ids[static_cast<size_t>(hit - kept.cumulative.begin())];
}

}  // namespace vendor
