// The bounds that let cuda.gumbel_probs skip the log (kernels/cuda/gumbel_bounds.cuh),
// checked on the device, where their float arithmetic (approximate reciprocal and
// logarithm, fused multiply-adds) runs. A skip is safe only if key_floor never
// exceeds the token's key and below() never fires at a threshold the key reaches;
// both are counted over millions of (p, v) pairs drawn as the kernel sees them,
// with v log-uniform down to 2^-33 as well (the small v where the bounds are
// tightest) and v = 0 (S05's defect). Each check runs once more on the naive bound
// a port would write (q ~ v, no margins) and must find violations there.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/cuda/gumbel_bounds.cuh"
#include "reference/philox.h"
#include "reference/uniform.h"

namespace {

using samplecheck::philox_stream;
namespace sc = samplecheck::cuda;

struct violation_counts {
  unsigned long long floor_above_key;  // key_floor > key
  unsigned long long skipped_winner;   // below() at a threshold <= key
  unsigned long long pairs;
};

constexpr int kThreads = 256, kBlocks = 1024, kPerThread = 16;

// The naive bounds: q taken as v, no margin and no normal-range guard.
__device__ float naive_floor(float p, float v) { return p / v; }
__device__ bool naive_below(float p, float v, float threshold) { return v * threshold >= p; }

template <bool Naive>
__global__ void count_violations(unsigned long long seed, violation_counts* out) {
  philox_stream stream(seed, blockIdx.x * kThreads + threadIdx.x, 0);
  unsigned long long floor_above = 0, skipped = 0, pairs = 0;
  for (int n = 0; n < kPerThread; ++n) {
    const uint32_t bits = stream.next(), pick = stream.next(), shape = stream.next();
    // v: as drawn (most pairs), log-uniform over the representable fractions, or 0.
    const uint32_t kind = pick & 63u;
    const float v = kind == 0 ? 0.0f : samplecheck::uniform_fine_near_zero(kind < 32 ? bits >> (pick >> 27) : bits);
    // p: log-uniform over [2^-40, 1].
    const float p = exp2f(-40.0f * samplecheck::uniform_open_one(shape));
    const float key = sc::gumbel_key<false>(p, v, 1.0f);
    const float lower = Naive ? naive_floor(p, v) : sc::key_floor(sc::key_floor_estimate<true>(p, v));
    floor_above += lower > key;
    // Thresholds the key reaches: itself and the floats just below it.
    float threshold = key;
    for (int step = 0; step < 3 && std::isfinite(threshold); ++step, threshold = nextafterf(threshold, -INFINITY)) {
      const bool below = Naive ? naive_below(p, v, threshold) : sc::key_bounds(threshold).below(p, v);
      skipped += below;
    }
    ++pairs;
  }
  atomicAdd(&out->floor_above_key, floor_above);
  atomicAdd(&out->skipped_winner, skipped);
  atomicAdd(&out->pairs, pairs);
}

template <bool Naive>
violation_counts run() {
  violation_counts* d = nullptr;
  REQUIRE(cudaMalloc(&d, sizeof(violation_counts)) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, sizeof(violation_counts)) == cudaSuccess);
  count_violations<Naive><<<kBlocks, kThreads>>>(2026, d);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  violation_counts h{};
  REQUIRE(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(d);
  return h;
}

}  // namespace

// Zero tolerance: one violation is a token the kernel could skip while it wins.
TEST_CASE("Gumbel skip bounds never drop a token that reaches the threshold", "[gumbel][bounds]") {
  const auto probs = run<false>();
  INFO("probs: " << probs.pairs << " pairs");
  CHECK(probs.pairs == uint64_t{kBlocks} * kThreads * kPerThread);
  CHECK(probs.floor_above_key == 0);
  CHECK(probs.skipped_winner == 0);
}

TEST_CASE("the bound checks catch the naive bounds (q taken as v, no margins)", "[gumbel][bounds][mutant]") {
  const auto probs = run<true>();
  WARN("naive probs bounds: " << probs.floor_above_key << " floors above the key, " << probs.skipped_winner
                              << " winners skipped, of " << probs.pairs << " pairs");
  CHECK(probs.floor_above_key > 0);
  CHECK(probs.skipped_winner > 0);
}
