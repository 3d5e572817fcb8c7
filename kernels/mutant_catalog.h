// The planted-defect catalog (docs/bug-catalog.md, plus X ids of our own) as data: each mutant id,
// what was planted, and the check that must kill it. Reports and the kill matrix
// use these ids; kernels register mutant subjects as "<subject>:<id>".
#pragma once

#include <array>
#include <string_view>

namespace samplecheck {

struct mutant_entry {
  std::string_view id;             // stable: "S01"
  std::string_view slug;           // "nonmonotone-scan"
  std::string_view killing_check;  // battery check name that must kill it
  std::string_view defect;         // one line
};

inline constexpr std::array<mutant_entry, 45> mutant_catalog{{
    {"S01", "nonmonotone-scan", "support",
     "unguarded crossing search over a non-monotone prefix sum"},
    {"S02", "rng-not-advanced", "offset_advancement",
     "the Philox offset is frozen: every call draws the same numbers"},
    {"S03", "seed-element-zero", "per_request_seeds",
     "seed and offset arrays read at element 0 for every request"},
    {"S04", "row-keyed-rng", "batch_reorder",
     "stream keyed by the row's batch position, not the request"},
    {"S05", "gumbel-u-one", "tail", "Gumbel noise from (0,1] uniforms with no guard at u = 1"},
    {"S06", "tie-over-accept", "ties",
     "keeps every tie at the k-th probability while declaring lowest_index"},
    {"S07", "top-p-boundary-drop", "goodness_of_fit",
     "drops the token that carries the cumulative sum across p"},
    {"S08", "nan-token-zero", "degenerate_rows",
     "NaN or all-zero rows return token 0 marked valid"},
    {"S09", "param-by-output-row", "parameter_routing",
     "filter parameters read by output row, not input row"},
    {"S10", "shared-parallel-draws", "parallel_samples",
     "outputs sharing an input row share one random draw"},
    {"S11", "renorm-drops-tiny", "tail",
     "renormalisation zeroes tokens with probabilities near 1e-9"},
    {"S12", "order-swap", "goodness_of_fit", "declares top_k_first but applies top-p jointly"},
    {"S13", "subnormal-flush", "tail", "subnormal probabilities flushed to zero"},
    {"S14", "subsequence-wrap", "parallel_samples",
     "per-row subsequence computed in 32 bits, so streams repeat"},
    {"S15", "temperature-on-probs", "goodness_of_fit",
     "temperature applied to probabilities instead of logits"},
    {"S16", "renorm-atomic-sum", "run_to_run",
     "the top-k renorm total is a float sum whose additions arrive in a new order each call"},
    // X ids: classes of our own (docs/bug-catalog.md, "Our own classes"), negative controls.
    {"X01", "hidden-rng-state", "replay",
     "draws from a hidden generator state that moves every call, not the caller's stream"},
    {"X02", "batch-chunked-scan", "batch_invariance",
     "the prefix sum's chunking follows the batch size, so a request's token depends on B"},
    {"S17", "masked-last-tile", "support",
     "a search that falls into an all-masked last tile returns the tile's end, an id >= V"},
    {"S18", "top-k-one-ties", "ties",
     "top_k = 1 keeps every token tied with the maximum while declaring lowest_index"},
    {"S19", "huge-logit-absorption", "ties",
     "z / T + Gumbel noise in float32 without subtracting the max: at large logits the noise is "
     "absorbed"},
    {"X03", "undeclared-rounds", "round_advancement",
     "declares 2 stream outputs per call but its rejection rounds take up to 320"},
    {"X04", "offset-32-bit", "stream_position",
     "the stream offset is held in 32 bits, so offsets 2^32 apart share a stream"},
    {"X05", "bf16-gumbel-keys", "ties",
     "Gumbel keys z / T + G rounded to bf16, so tied logits tie in the key and the lower id wins"},
    {"X06", "no-renormalisation", "tail",
     "u in [0, 1) against the raw running sum: a row summing to S < 1 gives 1 - S to its last "
     "positive token"},
    {"X07", "skipped-outputs", "stream_agreement",
     "declares inverse_cdf_u53 but forms u from stream outputs 2 and 3 instead of 0 and 1"},
    {"X08", "offset-written-back", "support",
     "advances the caller's offset array in place (declaring inputs preserved), its tokens "
     "otherwise correct"},
    {"X09", "absorbed-cdf-increments", "goodness_of_fit",
     "the inverse CDF adds each probability onto a float32 running sum near 1: tokens below half "
     "its ulp are never drawn"},
    {"X10", "bf16-gumbel-noise", "ties",
     "Gumbel noise rounded to bf16 before it is added to the logit: in a large tie group the "
     "top keys collide and the lower id wins"},
    {"S20", "offset-never-advances", "offset_advancement",
     "the call site initialises the generator at offset 0: every decode step replays the first"},
    {"S21", "noise-by-rank", "batch_invariance",
     "u inverted over the rank-sorted row whenever any batchmate filters, not in token order"},
    {"S22", "top-p-near-one-oob", "support",
     "top_p near 1 above the float cumsum: the boundary search returns V, the scatter overruns"},
    {"S23", "hash-uniform-24bit", "tail",
     "Gumbel noise from a 24-bit uniform, capped at 17.3: tokens ~17 nats below never win"},
    {"S24", "top-p-bisection-cap", "goodness_of_fit",
     "top-p's pivot probability bisected at most 18 times between the row's min and max: an "
     "unresolved pivot drops every token under the midpoint"},
    {"X11", "token-id-u16", "support",
     "the drawn id is stored in 16 bits: above V = 65,536 an id past 65,535 wraps to id & 0xFFFF"},
    {"X12", "topk-heap-ties", "ties",
     "top-k keeps exactly k, but among ties with the k-th those std::partial_sort's heap keeps "
     "(llama.cpp), not the lowest ids, while declaring lowest_index"},
    {"X13", "size-chunked-order", "message_invariance",
     "a fixed-order all-reduce takes a ring's chunked order from 4,096 elements up, while "
     "declaring size_invariant: an element's bits follow the message size and its offset"},
    {"B01", "split-by-m", "batch_invariance", "split-K factor chosen from M"},
    {"B02", "k-tail-drop", "accuracy", "the K tail past the last full segment is dropped"},
    {"B03", "pow2-k-variance", "batch_invariance",
     "reduction order depends on M only for power-of-two K"},
    {"B04", "short-k-rounding", "launch_config_independence",
     "K <= 256 split and unsplit launches round differently"},
    {"B05", "bias-in-partial", "batch_invariance",
     "bias added to one segment's partial instead of after the sum"},
    {"B06", "atomic-reduce", "run_to_run", "partials combined with atomicAdd in arrival order"},
    {"B07", "threshold-switch", "batch_invariance",
     "an undeclared tile switch at M = 2048 changes the segment count"},
    {"B08", "split-from-budget", "batch_invariance",
     "the K split count is taken from an SM budget over the batch's tiles"},
}};

// Mutants whose defect only acts on rows of the standard budget's V (151,936): at the quick
// budget's V the tokens it loses are above the rounding that loses them. The mutants test
// kills them at the standard budget instead.
inline constexpr std::array<std::string_view, 1> killed_at_standard_budget{{"X09"}};

// Mutants whose named check takes over 20 s a dtype at the quick budget: the mutants test
// judges them on bf16 alone. S23's tail check draws the quick cap, 200,000 samples of O(V)
// each, on the Gumbel subject's tiny_tail row (the plan's power against a tail that keeps a
// tenth of its mass; on f32 it adds its subnormal row); on f32 and f16 it is killed the same
// way (docs/mutants.md, docs/judging-power/seed-robust-kills.md).
inline constexpr std::array<std::string_view, 1> judged_on_bf16_only{{"S23"}};

// Mutants planted in a collective (kernels/collective); every other X and S id is planted in a
// sampler, every B id in a matmul.
inline constexpr std::array<std::string_view, 1> planted_in_collectives{{"X13"}};

// True for the catalog rows whose mutant is a sampler (S01.., X01.., not the collectives').
inline bool planted_in_sampler(const mutant_entry& m) {
  for (const auto id : planted_in_collectives)
    if (m.id == id) return false;
  return m.id[0] != 'B';
}

inline const mutant_entry* find_mutant(std::string_view id) {
  for (const auto& m : mutant_catalog)
    if (m.id == id) return &m;
  return nullptr;
}

}  // namespace samplecheck
