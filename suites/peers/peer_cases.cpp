#include "suites/peers/peer_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "reference/philox.h"
#include "reference/uniform.h"

namespace samplecheck::peers {

const char* to_string(peer_kind peer) {
  switch (peer) {
    case peer_kind::flashinfer:
      return "flashinfer";
    case peer_kind::vllm:
      return "vllm";
    case peer_kind::pytorch:
      return "pytorch";
  }
  return "?";
}

namespace {

// Rows come from their own Philox key so they never share numbers with a sampler
// stream of the same seed.
constexpr uint64_t kRowKeySalt = 0x70656572726f7773ull;  // "peerrows"

class row_source {
 public:
  row_source(uint64_t seed, uint64_t case_index) : stream_(seed ^ kRowKeySalt, case_index, 0) {}
  double uniform() {  // [0, 1)
    const uint32_t hi = stream_.next();
    return uniform_double(hi, stream_.next());
  }
  double normal() {  // Box-Muller; 1 - u is in (0, 1] so the log is finite
    const double radius = std::sqrt(-2.0 * std::log(1.0 - uniform()));
    return radius * std::cos(2.0 * 3.14159265358979323846 * uniform());
  }

 private:
  philox_stream stream_;
};

enum class logit_shape { normal1, normal5, gumbel01 };

const char* shape_name(logit_shape s) {
  switch (s) {
    case logit_shape::normal1:
      return "normal(1)";
    case logit_shape::normal5:
      return "normal(5)";
    case logit_shape::gumbel01:
      return "gumbel(0.1)";
  }
  return "?";
}

// FlashInfer's normal_distribution(std) and gumbel_distribution(beta) helpers; the
// latter is log(-log(U + 1e-20) + 1e-20) / beta, kept as they wrote it.
std::vector<float> flashinfer_logits(row_source& rng, logit_shape shape, int64_t vocab) {
  std::vector<float> logits(static_cast<size_t>(vocab));
  for (float& z : logits) {
    switch (shape) {
      case logit_shape::normal1:
        z = static_cast<float>(rng.normal());
        break;
      case logit_shape::normal5:
        z = static_cast<float>(5.0 * rng.normal());
        break;
      case logit_shape::gumbel01:
        z = static_cast<float>(std::log(-std::log(rng.uniform() + 1e-20) + 1e-20) / 0.1);
        break;
    }
  }
  return logits;
}

// torch.randperm(V)[:count] set to -inf.
void mask_random_tokens(row_source& rng, std::vector<float>& logits, int64_t count) {
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = 0; i < count; ++i) {
    const auto pick =
        i + static_cast<int64_t>(rng.uniform() * static_cast<double>(order.size() - i));
    std::swap(order[i], order[pick]);
    logits[order[i]] = -std::numeric_limits<float>::infinity();
  }
}

std::vector<peer_case> vllm_grid(uint64_t seed, const char* label) {
  constexpr int64_t kVocab = 32;  // TestFlashInferDistributionMatch.VOCAB
  struct setting {
    int32_t k;
    float p;
  };
  const setting grid[] = {{0, 1.0f}, {8, 1.0f},  {16, 1.0f}, {0, 0.5f},
                          {0, 0.7f}, {0, 0.99f}, {8, 0.9f},  {4, 0.5f}};
  std::vector<peer_case> cases;
  for (const setting& s : grid) {
    row_source rng(seed, cases.size());
    peer_case c;
    c.logits.resize(kVocab);
    for (float& z : c.logits) z = static_cast<float>(2.0 * rng.normal());
    c.top_k = s.k;
    c.top_p = s.p;
    c.filters = (s.k > 0 ? SC_FILTER_TOP_K : 0u) | (s.p < 1.0f ? SC_FILTER_TOP_P : 0u);
    c.name = fmt::format("{} randn*2 V=32 top_k={} top_p={}", label,
                         s.k > 0 ? fmt::format("{}", s.k) : "-",
                         s.p < 1.0f ? fmt::format("{}", s.p) : "-");
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace

peer_plan flashinfer_plan(uint64_t seed, int64_t vocab_size) {
  if (vocab_size < 2)
    throw std::invalid_argument(fmt::format("flashinfer_plan: vocab_size {} < 2", vocab_size));
  peer_plan plan{peer_kind::flashinfer, kFlashInferSamples, batch_layout::shared_row, {}};
  const logit_shape shapes[] = {logit_shape::normal1, logit_shape::normal5, logit_shape::gumbel01};
  auto add = [&](peer_case c, logit_shape shape, std::string what) {
    c.name = fmt::format("{} V={} {}", shape_name(shape), vocab_size, what);
    plan.cases.push_back(std::move(c));
  };
  for (logit_shape shape : shapes) {
    for (double zero_ratio : {0.0, 0.5, 0.9}) {  // test_sampling_freq
      row_source rng(seed, plan.cases.size());
      peer_case c;
      c.logits = flashinfer_logits(rng, shape, vocab_size);
      mask_random_tokens(rng, c.logits,
                         static_cast<int64_t>(static_cast<double>(vocab_size) * zero_ratio));
      add(std::move(c), shape, fmt::format("masked={}", zero_ratio));
    }
    for (float p : {0.1f, 0.5f, 0.9f}) {  // test_top_p_sampling_freq
      row_source rng(seed, plan.cases.size());
      peer_case c;
      c.logits = flashinfer_logits(rng, shape, vocab_size);
      c.top_p = p;
      c.filters = SC_FILTER_TOP_P;
      c.mask = flashinfer_mask_rule::top_p;
      add(std::move(c), shape, fmt::format("top_p={}", p));
    }
    for (int32_t k : {10, 100, 500}) {  // test_top_k_sampling_freq
      if (k > vocab_size) continue;
      row_source rng(seed, plan.cases.size());
      peer_case c;
      c.logits = flashinfer_logits(rng, shape, vocab_size);
      c.top_k = k;
      c.filters = SC_FILTER_TOP_K;
      c.mask = flashinfer_mask_rule::top_k;
      add(std::move(c), shape, fmt::format("top_k={}", k));
    }
  }
  return plan;
}

peer_plan vllm_plan(uint64_t seed) {
  return {peer_kind::vllm, kVllmSamples, batch_layout::repeated_rows, vllm_grid(seed, "vllm")};
}

peer_plan pytorch_plan(uint64_t seed) {
  // A different row per seed from vLLM's: the two columns draw independent rows.
  return {peer_kind::pytorch, kPytorchSamples, batch_layout::shared_row,
          vllm_grid(~seed, "pytorch")};
}

namespace {

std::vector<uint8_t> flashinfer_mask(const peer_case& spec, const std::vector<double>& probs) {
  const size_t vocab = probs.size();
  std::vector<uint8_t> allowed(vocab, 0);
  switch (spec.mask) {
    case flashinfer_mask_rule::nonzero:
      for (size_t i = 0; i < vocab; ++i) allowed[i] = std::isfinite(spec.logits[i]) ? 1 : 0;
      break;
    case flashinfer_mask_rule::top_p: {
      std::vector<size_t> ascending(vocab);
      std::iota(ascending.begin(), ascending.end(), 0);
      std::stable_sort(ascending.begin(), ascending.end(),
                       [&](size_t a, size_t b) { return probs[a] < probs[b]; });
      double cdf = 0;
      for (size_t i : ascending) {
        cdf += probs[i];
        allowed[i] = cdf > 1.0 - spec.top_p ? 1 : 0;
      }
      break;
    }
    case flashinfer_mask_rule::top_k: {
      std::vector<double> sorted = probs;
      std::nth_element(sorted.begin(), sorted.begin() + (spec.top_k - 1), sorted.end(),
                       std::greater<>());
      const double pivot = sorted[static_cast<size_t>(spec.top_k - 1)];
      for (size_t i = 0; i < vocab; ++i) allowed[i] = probs[i] >= pivot ? 1 : 0;
      break;
    }
  }
  return allowed;
}

}  // namespace

prepared_case prepare_case(const peer_case& spec, const sc_sampler& subject) {
  prepared_case out;
  out.spec = &spec;
  const bool probs_input = subject.input_kind == SC_INPUT_PROBS;
  if (probs_input) {
    // softmax in double, stored as the float row a model would hand over
    const float max_logit = *std::max_element(spec.logits.begin(), spec.logits.end());
    std::vector<double> e(spec.logits.size());
    double total = 0;
    for (size_t i = 0; i < e.size(); ++i)
      total += e[i] = std::exp(double(spec.logits[i]) - max_logit);
    out.row.resize(e.size());
    for (size_t i = 0; i < e.size(); ++i) out.row[i] = static_cast<float>(e[i] / total);
  } else {
    out.row = spec.logits;
  }
  filter_params params;
  params.top_k = spec.top_k;
  params.top_p = spec.top_p;
  params.order =
      subject.filter_order == SC_ORDER_JOINT ? filter_order::joint : filter_order::top_k_first;
  params.ties =
      subject.tie_policy == SC_TIE_LOWEST_INDEX ? tie_policy::lowest_index : tie_policy::keep_ties;
  const reference_result ref = compute_filtered_distribution(
      out.row, probs_input ? input_kind::probs : input_kind::logits, params);
  if (!ref.ok())
    throw std::invalid_argument(
        fmt::format("peer case '{}': reference rejected field {} at index {}: {}", spec.name,
                    ref.error().field, ref.error().index, ref.error().message));
  out.reference = ref.distribution();
  out.flashinfer_allowed = flashinfer_mask(spec, out.reference.source);
  return out;
}

peer_verdict judge(peer_kind peer, const sample_tally& tally, const prepared_case& prepared) {
  const std::span<const double> probs = prepared.reference.prob;
  switch (peer) {
    case peer_kind::flashinfer:
      return flashinfer_judge(tally, probs, prepared.flashinfer_allowed);
    case peer_kind::vllm:
      return vllm_judge(tally, probs);
    case peer_kind::pytorch:
      return pytorch_judge(tally, probs);
  }
  throw std::invalid_argument("judge: unknown peer");
}

bool rule_applies(peer_kind peer, const prepared_case& prepared, int64_t samples) {
  if (peer != peer_kind::pytorch) return true;
  int testable = 0;
  for (double p : prepared.reference.prob)
    if (p * static_cast<double>(samples) > kPytorchMinCellCount) ++testable;
  return testable >= 2;
}

}  // namespace samplecheck::peers
