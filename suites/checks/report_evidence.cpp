#include "suites/checks/report_evidence.h"

#include <algorithm>
#include <bit>
#include <boost/math/distributions/binomial.hpp>
#include <numeric>

#include "suites/stats/binomial_intervals.h"
#include "suites/stats/input_checks.h"

namespace samplecheck::checks {
namespace {

using boost::math::binomial_distribution;

// Two-sided Clopper-Pearson interval of the success probability at level `level`.
std::pair<double, double> clopper_pearson(uint64_t k, uint64_t n, double level) {
  if (n == 0) return {0.0, 1.0};
  const double trials = static_cast<double>(n), successes = static_cast<double>(k);
  const double half = std::clamp(level / 2, 1e-300, 0.5);
  const double lo = k == 0 ? 0.0
                           : binomial_distribution<>::find_lower_bound_on_p(
                                 trials, successes, half,
                                 binomial_distribution<>::clopper_pearson_exact_interval);
  const double hi = k == n ? 1.0
                           : binomial_distribution<>::find_upper_bound_on_p(
                                 trials, successes, half,
                                 binomial_distribution<>::clopper_pearson_exact_interval);
  return {lo, hi};
}

// Base64 (RFC 4648, padded) of little-endian bytes: JSON has no binary type, and decimal
// text would neither keep the bits nor stay small.
std::string base64(const unsigned char* data, size_t size) {
  static constexpr char kDigits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    const uint32_t b0 = data[i], b1 = i + 1 < size ? data[i + 1] : 0u,
                   b2 = i + 2 < size ? data[i + 2] : 0u;
    const uint32_t word = (b0 << 16) | (b1 << 8) | b2;
    out += kDigits[(word >> 18) & 63];
    out += kDigits[(word >> 12) & 63];
    out += i + 1 < size ? kDigits[(word >> 6) & 63] : '=';
    out += i + 2 < size ? kDigits[word & 63] : '=';
  }
  return out;
}

template <typename T>
std::string base64_of(const std::vector<T>& values) {
  static_assert(std::endian::native == std::endian::little, "the record's bits are little-endian");
  return base64(reinterpret_cast<const unsigned char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace

std::string base64_words(const std::vector<uint64_t>& words) { return base64_of(words); }

nlohmann::json row_data(const judged_row& row, size_t index, uint64_t draws) {
  if (!row.target.ok()) {
    return {{"index", index},
            {"draws", draws},
            {"label", row.label},
            {"values_f32", base64_of(row.values)}};
  }
  const filtered_distribution& d = row.target.distribution();
  std::string status(d.status.size(), 'O');
  std::vector<double> q(d.status.size(), 0.0);
  for (size_t t = 0; t < d.status.size(); ++t) {
    if (d.status[t] == membership::in) status[t] = 'I', q[t] = d.source[t] / d.in_source_mass;
    if (d.status[t] == membership::boundary) status[t] = 'B';
  }
  nlohmann::json j = row_data(row, index, draws, status, q);
  j["boundary_mass"] = {d.boundary_target_mass_min, d.boundary_target_mass_max};
  return j;
}

nlohmann::json row_data(const judged_row& row, size_t index, uint64_t draws,
                        const std::string& status, const std::vector<double>& q) {
  return {{"index", index},     {"draws", draws},
          {"label", row.label}, {"values_f32", base64_of(row.values)},
          {"status", status},   {"q_f64", base64_of(q)}};
}

nlohmann::json row_data(const judged_row& row, size_t index, const std::vector<uint64_t>& counts) {
  return row_data(row, index, std::accumulate(counts.begin(), counts.end(), uint64_t{0}));
}

nlohmann::json fit_evidence(const judged_row& row, const std::vector<uint64_t>& counts,
                            double alpha) {
  const in_conditional c = condition_on_in(row.target.distribution(), counts);
  const size_t v = c.probs.size();
  const double level = alpha / static_cast<double>(std::max<size_t>(v, 1));
  // Tokens the rule can draw or that were drawn; the rest are OUT and never drawn.
  std::vector<int64_t> shown;
  for (size_t t = 0; t < v; ++t)
    if (c.probs[t] > 0 || c.counts[t] > 0) shown.push_back(static_cast<int64_t>(t));
  std::stable_sort(shown.begin(), shown.end(),
                   [&](int64_t a, int64_t b) { return c.probs[a] > c.probs[b]; });
  shown.resize(std::min(shown.size(), kFitEvidenceTokens));
  const auto bad = stats::deviating_tokens(c.counts, c.probs, alpha, 10);
  for (const auto& t : bad)
    if (std::find(shown.begin(), shown.end(), t.token) == shown.end()) shown.push_back(t.token);
  const double n = static_cast<double>(c.in_count);
  nlohmann::json tokens = nlohmann::json::array();
  uint64_t shown_count = 0;
  double shown_prob = 0;
  for (const int64_t t : shown) {
    const uint64_t k = c.counts[t];
    const auto [lo, hi] = clopper_pearson(k, c.in_count, level);
    const bool deviating = std::any_of(
        bad.begin(), bad.end(), [&](const stats::token_deviation& d) { return d.token == t; });
    tokens.push_back({{"token", t},
                      {"observed", k},
                      {"expected", n * c.probs[t]},
                      {"lower", n * lo},
                      {"upper", n * hi},
                      {"deviating", deviating}});
    shown_count += k;
    shown_prob += c.probs[t];
  }
  return {{"row", row.label},
          {"in_draws", c.in_count},
          {"boundary_draws", c.boundary_count},
          {"token_level", level},
          {"tokens", tokens},
          {"rest", {{"observed", c.in_count - shown_count}, {"expected", n * (1.0 - shown_prob)}}}};
}

nlohmann::json tail_evidence(const judged_row& row, const stats::tail_result& t, double alpha) {
  const auto [lo, hi] = clopper_pearson(t.count, t.n, alpha);
  return {{"row", row.label},
          {"tokens", t.tokens},
          {"threshold", t.threshold},
          {"draws", t.n},
          {"count", t.count},
          {"expected_mass", t.expected_mass},
          {"seen_mass", t.observed_fraction},
          {"seen_lower", lo},
          {"seen_upper", hi},
          {"p_value", t.p_value}};
}

nlohmann::json tail_set(const judged_row& row, const stats::tail_result& t) {
  // The set as stats::tail_test forms it: the renormalised probabilities below the threshold.
  const std::vector<double> q = stats::detail::normalised(row.target.distribution().prob);
  std::string set(q.size(), '-');
  for (size_t i = 0; i < q.size(); ++i)
    if (q[i] < t.threshold) set[i] = 'T';
  return {{"threshold", t.threshold}, {"expected_mass", t.expected_mass}, {"set", set}};
}

nlohmann::json tie_cell(const std::string& label, uint64_t observed, uint64_t total, double share,
                        double level) {
  const auto [lo, hi] = clopper_pearson(observed, total, level);
  const double n = static_cast<double>(total);
  return {{"label", label},
          {"observed", observed},
          {"expected", n * share},
          {"lower", n * lo},
          {"upper", n * hi}};
}

}  // namespace samplecheck::checks
