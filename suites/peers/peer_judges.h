// The acceptance rules of the peers' own sampler tests, re-implemented as judges
// on token counts against reference probabilities, so that samplecheck's battery
// can be compared with them on the same subjects and the same mutants.
//
// Each judge is the peer's rule as its test file applies it, not a corrected
// version of it: where the rule is blind to a defect, the judge is blind too.
// Sources (read from the public repositories, paraphrased, not copied):
//   FlashInfer  tests/utils/test_sampling.py, test_sampling_freq,
//               test_top_p_sampling_freq, test_top_k_sampling_freq
//   vLLM        tests/v1/sample/test_topk_topp_sampler.py,
//               TestFlashInferDistributionMatch._chi2_check
//   PyTorch     test/distributions/test_distributions.py, _check_sampler_discrete
//               (the helper its Binomial / Geometric / ... sample tests call)
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace samplecheck::peers {

// What a sampler returned for one input row, counted per token.
struct sample_tally {
  std::vector<int64_t> counts;  // [vocab_size]: outputs marked valid with token in [0, V)
  int64_t out_of_range = 0;     // outputs marked valid with a token outside [0, V)
  int64_t invalid = 0;          // outputs marked valid = 0 on a well-formed row

  explicit sample_tally(int64_t vocab_size = 0) : counts(static_cast<size_t>(vocab_size), 0) {}
  int64_t in_range() const;
  int64_t total() const { return in_range() + out_of_range + invalid; }
};

struct peer_verdict {
  bool passed = false;
  std::string rule;      // "flashinfer", "vllm", "pytorch"
  double statistic = 0;  // cosine similarity or chi-square
  double p_value = -1;   // chi-square rules only; -1 where the rule has none
  int64_t cells = 0;     // categories the statistic was computed over
  int64_t samples = 0;
  std::string reason;  // why it failed, or "" when it passed
};

// The sample counts each peer's test draws per distribution.
inline constexpr int64_t kFlashInferSamples = 5'000'000;
inline constexpr int64_t kVllmSamples = 50'000;
inline constexpr int64_t kPytorchSamples = 10'000;

// FlashInfer's thresholds: cosine similarity of frequencies and probabilities.
inline constexpr double kFlashInferMinCosine = 0.99;
// vLLM's alpha and PyTorch's failure_rate.
inline constexpr double kVllmAlpha = 1e-6;
inline constexpr double kPytorchFailureRate = 1e-3;
// PyTorch's cell rule: both the observed and the expected count must exceed this.
inline constexpr double kPytorchMinCellCount = 5.0;
// PyTorch's sparsity rule: the kept cells must carry more than this much mass.
inline constexpr double kPytorchMinKeptMass = 0.9;

// FlashInfer: any sample on a token whose `allowed` entry is 0 fails (their
// support mask), then cosine(counts / n, probs) must exceed 0.99. `probs` is the
// reference distribution; `allowed` is the mask their test builds, which may be
// wider than the support of `probs` (see flashinfer_mask in peer_cases.h).
peer_verdict flashinfer_judge(const sample_tally& tally, std::span<const double> probs,
                              std::span<const uint8_t> allowed);

// vLLM: any sample on a token with zero expected probability fails; if at most
// one token has positive probability it passes; otherwise scipy's chisquare over
// the tokens with positive probability, expected rescaled to the observed total,
// df = cells - 1, must give p > 1e-6.
peer_verdict vllm_judge(const sample_tally& tally, std::span<const double> probs);

// PyTorch: only the values that were observed take part. Their probabilities are
// renormalised over the observed set; cells with observed > 5 and expected > 5
// are kept and must carry > 0.9 of that mass (else "too sparse", a failure); the
// rest pool into one remainder cell; scipy's chisquare must give p > 1e-3.
peer_verdict pytorch_judge(const sample_tally& tally, std::span<const double> probs);

}  // namespace samplecheck::peers
