// The bounds that let cuda.gumbel_* skip the log (kernels/cuda/gumbel_bounds.cuh),
// checked on the device, where their float arithmetic (approximate reciprocal and
// logarithm, fused multiply-adds) runs. A skip is safe only if key_floor never
// exceeds the token's key and below() never fires at a threshold the key reaches;
// both are counted over millions of (z, v) pairs drawn as the kernel sees them,
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
template <bool Logits>
__device__ float naive_floor(float z, float v, float inverse_temperature) {
  return Logits ? z * inverse_temperature - __logf(v) : z / v;
}
template <bool Logits>
__device__ bool naive_below(float z, float v, float inverse_temperature, float threshold) {
  return Logits ? __logf(v) >= z * inverse_temperature - threshold : v * threshold >= z;
}

template <bool Logits, bool Naive>
__global__ void count_violations(unsigned long long seed, float temperature, violation_counts* out) {
  philox_stream stream(seed, blockIdx.x * kThreads + threadIdx.x, 0);
  const float inverse_temperature = Logits ? 1.0f / temperature : 1.0f;
  unsigned long long floor_above = 0, skipped = 0, pairs = 0;
  for (int n = 0; n < kPerThread; ++n) {
    const uint32_t bits = stream.next(), pick = stream.next(), shape = stream.next();
    // v: as drawn (most pairs), log-uniform over the representable fractions, or 0.
    const uint32_t kind = pick & 63u;
    const float v = kind == 0 ? 0.0f : samplecheck::uniform_fine_near_zero(kind < 32 ? bits >> (pick >> 27) : bits);
    // z: probabilities log-uniform over [2^-40, 1]; logits uniform over [-60, 60].
    const float a = samplecheck::uniform_open_one(shape);
    const float z = Logits ? (a - 0.5f) * 120.0f : exp2f(-40.0f * a);
    const float key = sc::gumbel_key<Logits>(z, v, temperature);
    const float lower = Naive ? naive_floor<Logits>(z, v, inverse_temperature)
                              : sc::key_floor<Logits>(z, v, inverse_temperature);
    floor_above += lower > key;
    // Thresholds the key reaches: itself and the floats just below it.
    float threshold = key;
    for (int step = 0; step < 3 && std::isfinite(threshold); ++step, threshold = nextafterf(threshold, -INFINITY)) {
      const bool below = Naive ? naive_below<Logits>(z, v, inverse_temperature, threshold)
                               : sc::key_bounds<Logits>(threshold, inverse_temperature).below(z, v);
      skipped += below;
    }
    ++pairs;
  }
  atomicAdd(&out->floor_above_key, floor_above);
  atomicAdd(&out->skipped_winner, skipped);
  atomicAdd(&out->pairs, pairs);
}

template <bool Logits, bool Naive>
violation_counts run(float temperature) {
  violation_counts* d = nullptr;
  REQUIRE(cudaMalloc(&d, sizeof(violation_counts)) == cudaSuccess);
  REQUIRE(cudaMemset(d, 0, sizeof(violation_counts)) == cudaSuccess);
  count_violations<Logits, Naive><<<kBlocks, kThreads>>>(2026, temperature, d);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  violation_counts h{};
  REQUIRE(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaFree(d);
  return h;
}

}  // namespace

// Zero tolerance: one violation is a token the kernel could skip while it wins.
TEST_CASE("Gumbel skip bounds never drop a token that reaches the threshold", "[gumbel][bounds]") {
  const auto probs = run<false, false>(1.0f);
  INFO("probs: " << probs.pairs << " pairs");
  CHECK(probs.pairs == uint64_t{kBlocks} * kThreads * kPerThread);
  CHECK(probs.floor_above_key == 0);
  CHECK(probs.skipped_winner == 0);
  for (const float t : {0.25f, 0.6f, 1.0f, 3.0f}) {
    const auto logits = run<true, false>(t);
    INFO("logits, T = " << t << ": " << logits.pairs << " pairs");
    CHECK(logits.floor_above_key == 0);
    CHECK(logits.skipped_winner == 0);
  }
}

TEST_CASE("the bound checks catch the naive bounds (q taken as v, no margins)", "[gumbel][bounds][mutant]") {
  const auto probs = run<false, true>(1.0f);
  WARN("naive probs bounds: " << probs.floor_above_key << " floors above the key, " << probs.skipped_winner
                              << " winners skipped, of " << probs.pairs << " pairs");
  CHECK(probs.floor_above_key > 0);
  CHECK(probs.skipped_winner > 0);
  const auto logits = run<true, true>(0.6f);
  WARN("naive logits bounds: " << logits.floor_above_key << " floors above the key, " << logits.skipped_winner
                               << " winners skipped, of " << logits.pairs << " pairs");
  CHECK(logits.floor_above_key > 0);
  CHECK(logits.skipped_winner > 0);
}
