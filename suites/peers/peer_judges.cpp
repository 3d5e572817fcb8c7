#include "suites/peers/peer_judges.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <stdexcept>

#include "suites/stats/goodness_of_fit.h"

namespace samplecheck::peers {

int64_t sample_tally::in_range() const {
  return std::accumulate(counts.begin(), counts.end(), int64_t{0});
}

namespace {

void require_same_length(const sample_tally& tally, size_t n, const char* what) {
  if (tally.counts.size() != n)
    throw std::invalid_argument(
        fmt::format("peer judge: tally has {} tokens but {} has {}", tally.counts.size(), what, n));
}

// The peers' APIs return a token for every request and their tests index with it,
// so a missing token (valid = 0 on a well-formed row) or an id outside [0, V)
// breaks every one of them before any statistic is computed.
bool fails_before_statistics(const sample_tally& tally, peer_verdict& v) {
  if (tally.invalid > 0) {
    v.reason = fmt::format("{} outputs marked invalid on a well-formed row", tally.invalid);
    return true;
  }
  if (tally.out_of_range > 0) {
    v.reason = fmt::format("{} tokens outside [0, V)", tally.out_of_range);
    return true;
  }
  return false;
}

// scipy.stats.chisquare: sum (o - e)^2 / e, e = 0 with o > 0 giving infinity.
double pearson_statistic(std::span<const double> observed, std::span<const double> expected) {
  double chi2 = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    const double d = observed[i] - expected[i];
    if (expected[i] == 0) {
      if (observed[i] != 0) return std::numeric_limits<double>::infinity();
      continue;  // 0/0: numpy gives NaN; such cells never reach here in either rule
    }
    chi2 += d * d / expected[i];
  }
  return chi2;
}

peer_verdict start_verdict(const char* rule, const sample_tally& tally) {
  peer_verdict v;
  v.rule = rule;
  v.samples = tally.total();
  return v;
}

}  // namespace

peer_verdict flashinfer_judge(const sample_tally& tally, std::span<const double> probs,
                              std::span<const uint8_t> allowed) {
  require_same_length(tally, probs.size(), "probs");
  require_same_length(tally, allowed.size(), "allowed");
  peer_verdict v = start_verdict("flashinfer", tally);
  v.cells = static_cast<int64_t>(probs.size());
  if (fails_before_statistics(tally, v)) return v;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!allowed[i] && tally.counts[i] > 0) {
      v.reason = fmt::format("token {} sampled {} times outside the mask", i, tally.counts[i]);
      return v;
    }
  }
  // torch.cosine_similarity: x.y / max(|x| |y|, 1e-8), frequencies over all trials.
  const double n = static_cast<double>(v.samples);
  double dot = 0, freq_sq = 0, prob_sq = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double f = static_cast<double>(tally.counts[i]) / n;
    dot += f * probs[i];
    freq_sq += f * f;
    prob_sq += probs[i] * probs[i];
  }
  v.statistic = dot / std::max(std::sqrt(freq_sq) * std::sqrt(prob_sq), 1e-8);
  v.passed = v.statistic > kFlashInferMinCosine;
  if (!v.passed)
    v.reason = fmt::format("cosine similarity {:.6f} <= {}", v.statistic, kFlashInferMinCosine);
  return v;
}

peer_verdict vllm_judge(const sample_tally& tally, std::span<const double> probs) {
  require_same_length(tally, probs.size(), "probs");
  peer_verdict v = start_verdict("vllm", tally);
  if (fails_before_statistics(tally, v)) return v;
  std::vector<double> observed, expected;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0) {
      if (tally.counts[i] > 0) {
        v.reason = fmt::format("token {} has zero expected probability but was sampled {} times", i,
                               tally.counts[i]);
        return v;
      }
      continue;
    }
    observed.push_back(static_cast<double>(tally.counts[i]));
    expected.push_back(probs[i]);
  }
  v.cells = static_cast<int64_t>(observed.size());
  if (observed.size() <= 1) {  // their degenerate-support skip: the hard check decided
    v.passed = true;
    return v;
  }
  const double observed_total = std::accumulate(observed.begin(), observed.end(), 0.0);
  const double expected_total = std::accumulate(expected.begin(), expected.end(), 0.0);
  for (double& e : expected) e *= observed_total / expected_total;
  v.statistic = pearson_statistic(observed, expected);
  v.p_value = stats::chi_square_upper_tail(static_cast<double>(observed.size() - 1), v.statistic);
  v.passed = v.p_value > kVllmAlpha;
  if (!v.passed)
    v.reason = fmt::format("chi2 = {:.1f}, df = {}, p = {:.3g} <= {}", v.statistic,
                           observed.size() - 1, v.p_value, kVllmAlpha);
  return v;
}

namespace {

struct observed_value {
  double count, pmf;
};

// np.unique over the samples: the observed values only. A value outside the
// support has pmf 0 (scipy's rv_discrete); every such value pools into the
// remainder, so out-of-range ids are one observed value here.
std::vector<observed_value> observed_values(const sample_tally& tally,
                                            std::span<const double> probs) {
  std::vector<observed_value> cells;
  for (size_t i = 0; i < probs.size(); ++i)
    if (tally.counts[i] > 0) cells.push_back({static_cast<double>(tally.counts[i]), probs[i]});
  if (tally.out_of_range > 0) cells.push_back({static_cast<double>(tally.out_of_range), 0.0});
  return cells;
}

}  // namespace

peer_verdict pytorch_judge(const sample_tally& tally, std::span<const double> probs) {
  require_same_length(tally, probs.size(), "probs");
  peer_verdict v = start_verdict("pytorch", tally);
  if (tally.invalid > 0) {
    v.reason = fmt::format("{} outputs marked invalid on a well-formed row", tally.invalid);
    return v;
  }
  const std::vector<observed_value> cells = observed_values(tally, probs);
  double pmf_total = 0;
  for (const observed_value& c : cells) pmf_total += c.pmf;
  if (!(pmf_total > 0)) {
    v.reason = "no observed value has positive probability";
    return v;
  }
  const double n = static_cast<double>(v.samples);
  std::vector<double> observed, expected;
  double kept_mass = 0, rest_count = 0, rest_pmf = 0;
  bool any_rest = false;
  for (const observed_value& c : cells) {
    const double pmf = c.pmf / pmf_total;
    if (c.count > kPytorchMinCellCount && pmf * n > kPytorchMinCellCount) {
      observed.push_back(c.count);
      expected.push_back(pmf * n);
      kept_mass += pmf;
    } else {
      rest_count += c.count;
      rest_pmf += pmf;
      any_rest = true;
    }
  }
  v.statistic = kept_mass;  // reported if the sparsity rule fails
  if (!(kept_mass > kPytorchMinKeptMass)) {
    v.reason = fmt::format("too sparse for the test: kept mass {:.3f} <= {}", kept_mass,
                           kPytorchMinKeptMass);
    return v;
  }
  if (any_rest) {
    observed.push_back(rest_count);
    expected.push_back(rest_pmf * n);
  }
  v.cells = static_cast<int64_t>(observed.size());
  v.statistic = pearson_statistic(observed, expected);
  if (v.cells < 2) {  // scipy's chi2.sf at df = 0 is NaN, which their comparison fails
    v.reason = "a single cell: chi-square has no degrees of freedom";
    return v;
  }
  v.p_value = stats::chi_square_upper_tail(static_cast<double>(v.cells - 1), v.statistic);
  v.passed = v.p_value > kPytorchFailureRate;
  if (!v.passed)
    v.reason = fmt::format("chi2 = {:.1f}, df = {}, p = {:.3g} <= {}", v.statistic, v.cells - 1,
                           v.p_value, kPytorchFailureRate);
  return v;
}

}  // namespace samplecheck::peers
