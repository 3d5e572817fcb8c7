// The inputs each peer's sampler tests use, generated afresh per seed: the rows
// (logit shapes, masked tokens, vocabulary) and the filter parametrisations.
// Where this differs from the peer's file the comment at the generator says so.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"
#include "reference/filtered_distribution.h"
#include "suites/peers/peer_judges.h"

namespace samplecheck::peers {

enum class peer_kind { flashinfer, vllm, pytorch };
const char* to_string(peer_kind peer);

// How the peer's test hands its N draws to the sampler.
enum class batch_layout {
  shared_row,    // one input row, N outputs through a row-index map of zeros
                 // (FlashInfer's indices=zeros(N); torch's Categorical.sample((N,)))
  repeated_rows  // N identical input rows (vLLM: logits.expand(N, V).contiguous())
};

// FlashInfer's support mask, built as its test builds it from the unfiltered probs.
enum class flashinfer_mask_rule {
  nonzero,  // test_sampling_freq: tokens whose logit was set to -inf must not appear
  top_p,    // test_top_p_sampling_freq: ascending cumsum > 1 - p
  top_k,    // test_top_k_sampling_freq: prob >= the k-th largest prob
};

struct peer_case {
  std::string name;           // e.g. "normal(5) top_k=100"
  std::vector<float> logits;  // [V]; -inf marks a token the test masks out
  int32_t top_k = 0;          // 0 = off
  float top_p = 1.0f;         // 1 = off
  uint32_t filters = 0;       // SC_FILTER_* bits the subject must declare to run this case
  flashinfer_mask_rule mask = flashinfer_mask_rule::nonzero;
};

struct peer_plan {
  peer_kind peer;
  int64_t samples;  // draws per case: the peer's own count
  batch_layout layout;
  std::vector<peer_case> cases;
};

// FlashInfer's *_sampling_freq tests at one vocabulary: logits from normal(std 1),
// normal(std 5) or gumbel(beta 0.1); no filter with 0/50/90% of tokens masked,
// top-p in {0.1, 0.5, 0.9}, top-k in {10, 100, 500} (k > V skipped, as theirs).
peer_plan flashinfer_plan(uint64_t seed, int64_t vocab_size);
// vLLM's TestFlashInferDistributionMatch: V = 32, logits randn * 2, (top-k, top-p)
// in {(8,-), (16,-), (-,0.5), (-,0.7), (-,0.99), (8,0.9), (4,0.5)}, plus one
// unfiltered case (ours) so that subjects without filters are judged too.
peer_plan vllm_plan(uint64_t seed);
// PyTorch's _check_sampler_discrete on the rows vLLM uses (V = 32, randn * 2, same
// filter grid): its own callers draw from distributions with tens to hundreds of
// support points (Binomial, Geometric), the regime its 5-count cells are made for.
peer_plan pytorch_plan(uint64_t seed);

// A case made concrete for one subject: its input row in the subject's kind and
// the reference distribution under the subject's declared order and tie policy.
struct prepared_case {
  const peer_case* spec = nullptr;
  std::vector<float> row;  // probs (softmax of logits, float) or logits
  filtered_distribution reference;
  std::vector<uint8_t> flashinfer_allowed;  // FlashInfer's mask over the tokens
};

// Throws std::invalid_argument naming the case and field if the reference rejects the row.
prepared_case prepare_case(const peer_case& spec, const sc_sampler& subject);

// Judges a tally drawn for `prepared` with the peer's rule.
peer_verdict judge(peer_kind peer, const sample_tally& tally, const prepared_case& prepared);

// Whether the peer's rule can judge this target at `samples` draws. PyTorch's
// helper needs at least two values with expected count > 5 (its callers pick
// distributions like that; on a one-point target scipy's p-value is NaN and the
// assertion would fail on any sampler). The other rules handle every target.
bool rule_applies(peer_kind peer, const prepared_case& prepared, int64_t samples);

}  // namespace samplecheck::peers
