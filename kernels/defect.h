// The planted defect of a mutant subject: one id per row of the bug catalog
// (docs/bug-catalog.md, kernels/mutant_catalog.h), shared by the CPU samplers, the CUDA
// samplers, the matmuls and the collectives, so an id means the same defect wherever it is
// planted.
// A mutant is its host subject with this one switch set at construction; none for
// the correct subjects. Plain C++ with no host-only dependency, so device code can
// branch on it too.
#pragma once

#include <cstdint>

namespace samplecheck {

enum class defect : int32_t {
  none = 0,
  // Samplers.
  S01,  // nonmonotone-scan
  S02,  // rng-not-advanced
  S03,  // seed-element-zero
  S04,  // row-keyed-rng
  S05,  // gumbel-u-one
  S06,  // tie-over-accept
  S07,  // top-p-boundary-drop
  S08,  // nan-token-zero
  S09,  // param-by-output-row
  S10,  // shared-parallel-draws
  S11,  // renorm-drops-tiny
  S12,  // order-swap
  S13,  // subnormal-flush
  S14,  // subsequence-wrap
  S15,  // temperature-on-probs
  S16,  // renorm-atomic-sum: the renorm total's float additions arrive in a new order each call
  S17,  // masked-last-tile
  S18,  // top-k-one-ties
  S19,  // huge-logit-absorption
  S20,  // offset-never-advances: the call site passes offset 0, whatever the caller's offset
  S21,  // noise-by-rank: u inverted over the sorted row whenever any batchmate filters
  S22,  // top-p-near-one-oob: the float cumsum ends below top_p, the boundary index is V
  S23,  // hash-uniform-24bit: Exp(1) from a 24-bit uniform, the Gumbel noise capped at 17.3
  S24,  // top-p-bisection-cap: the top-p pivot bisected 18 times between min and max
        // probability, the midpoint kept when unresolved
  // Batch-invariant matmuls (the segmented kernel's plan, kernels/matmul/matmul_plan.h).
  B01,  // split-by-m: segment count chosen from M
  B02,  // k-tail-drop: the K tail past the last full segment is dropped
  B03,  // pow2-k-variance: butterfly order flips with M, only for power-of-two K
  B04,  // short-k-rounding: K <= 256 goes segmented; split partials rounded to bf16
  B05,  // bias-in-partial: split launches add the bias into segment 0's partial
  B06,  // atomic-reduce: split partials combined with atomicAdd in arrival order
  B07,  // threshold-switch: an undeclared large-batch tile at M >= 2048 with 2 segments
  B08,  // split-from-budget: segments = an SM budget over the batch's M tiles
  // Our own classes, negative controls for a check.
  X01,  // hidden-rng-state: proves the replay check can fail
  X02,  // batch-chunked-scan: the prefix-sum chunking follows the batch size
  X03,  // undeclared-rounds: fewer stream outputs per call declared than the rounds take
  X04,  // offset-32-bit: stream position (offset) kept in 32 bits
  X05,  // bf16-gumbel-keys: a low-precision cast that breaks ties unevenly
  X06,  // no-renormalisation: u in [0, 1) against the raw running sum
  X07,  // skipped-outputs: u from stream outputs 2 and 3 instead of 0 and 1
  X08,  // offset-written-back: the caller's offset array advanced in place
  X09,  // absorbed-cdf-increments: the running sum in float32, tiny tokens never drawn
  X10,  // bf16-gumbel-noise: keys of a large tie group collide, the lower id wins
  X11,  // token-id-u16: the drawn id passes through a 16-bit store (id & 0xFFFF)
  X12,  // topk-heap-ties: top-k's survivors among ties are std::partial_sort's heap order
  // Collectives (kernels/collective).
  X13,  // size-chunked-order: a fixed-order all-reduce takes a ring's chunked order when large
};

}  // namespace samplecheck
