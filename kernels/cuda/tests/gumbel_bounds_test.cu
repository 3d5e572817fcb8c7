// The bounds that let cuda.gumbel_probs skip the log (kernels/cuda/gumbel_bounds.cuh),
// checked on the device, where their float arithmetic (approximate reciprocal and
// logarithm, fused multiply-adds) runs. A skip is safe only if key_floor never
// exceeds the token's key and below() never fires at a threshold the key reaches;
// both are counted over millions of (p, v) pairs drawn as the kernel sees them,
// with v log-uniform down to 2^-33 as well (the small v where the bounds are
// tightest) and v = 0 (S05's defect), p log-uniform over [2^-40, 1] and, for one
// pair in 8, up to 2^127 (unnormalised rows: keys that overflow to inf). A third
// count: no token is skipped at the floor its own estimate gives. Each check runs
// once more on the naive bound a port would write (q ~ v, no margins, no clamp)
// and must find violations there; the unclamped floor must fail the third.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "kernels/cuda/gumbel_bounds.cuh"
#include "reference/philox.h"
#include "reference/uniform.h"
#include "suites/harness/device_buffer.h"

namespace {

using samplecheck::philox_stream;
namespace sc = samplecheck::cuda;

struct violation_counts {
  unsigned long long floor_above_key;  // key_floor > key
  unsigned long long skipped_winner;   // below() at a threshold <= key
  unsigned long long skipped_own;      // below() at the floor of the token's own estimate
  unsigned long long pairs;
};

constexpr int kThreads = 256, kBlocks = 1024, kPerThread = 16;

// The bounds under test: the kernel's, the naive ones (q taken as v, no margin,
// no normal-range guard, no clamp), and the kernel's without the clamp at FLT_MAX.
enum class bounds { kernel, naive, unclamped };

template <bounds B>
__device__ float floor_of(float p, float v) {
  if constexpr (B == bounds::naive) return p / v;
  const float estimate = sc::key_floor_estimate<true>(p, v);
  if constexpr (B == bounds::unclamped) return estimate * (1.0f - 0x1p-18f);
  return sc::key_floor(estimate);
}
template <bounds B>
__device__ bool below(float p, float v, float threshold) {
  if constexpr (B == bounds::naive) return v * threshold >= p;
  return sc::key_bounds(threshold).below(p, v);
}

template <bounds B>
__global__ void count_violations(unsigned long long seed, violation_counts* out) {
  philox_stream stream(seed, blockIdx.x * kThreads + threadIdx.x, 0);
  unsigned long long floor_above = 0, skipped = 0, skipped_own = 0, pairs = 0;
  for (int n = 0; n < kPerThread; ++n) {
    const uint32_t bits = stream.next(), pick = stream.next(), shape = stream.next();
    // v: as drawn (most pairs), log-uniform over the representable fractions, or 0.
    const uint32_t kind = pick & 63u;
    const float v =
        kind == 0 ? 0.0f
                  : samplecheck::uniform_fine_near_zero(kind < 32 ? bits >> (pick >> 27) : bits);
    // p: log-uniform over [2^-40, 1], or over [2^-40, 2^127] for one pair in 8.
    const float a = samplecheck::uniform_open_one(shape);
    const float p = (pick >> 24 & 7u) == 0 ? exp2f(167.0f * a - 40.0f) : exp2f(-40.0f * a);
    const float key = sc::gumbel_key<false>(p, v, 1.0f);
    const float lower = floor_of<B>(p, v);
    floor_above += lower > key;
    skipped_own += below<B>(p, v, lower);
    // Thresholds the key reaches: itself and the floats just below it.
    float threshold = key;
    for (int step = 0; step < 3 && std::isfinite(threshold);
         ++step, threshold = nextafterf(threshold, -INFINITY)) {
      skipped += below<B>(p, v, threshold);
    }
    ++pairs;
  }
  atomicAdd(&out->floor_above_key, floor_above);
  atomicAdd(&out->skipped_winner, skipped);
  atomicAdd(&out->skipped_own, skipped_own);
  atomicAdd(&out->pairs, pairs);
}

template <bounds B>
violation_counts run() {
  samplecheck::harness::device_buffer<violation_counts> d(
      std::vector<violation_counts>(1));  // zeroed
  count_violations<B><<<kBlocks, kThreads>>>(2026, d.get());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  return d.read().at(0);
}

}  // namespace

// Zero tolerance: one violation is a token the kernel could skip while it wins.
TEST_CASE("Gumbel skip bounds never drop a token that reaches the threshold", "[gumbel][bounds]") {
  const auto probs = run<bounds::kernel>();
  INFO("probs: " << probs.pairs << " pairs");
  CHECK(probs.pairs == uint64_t{kBlocks} * kThreads * kPerThread);
  CHECK(probs.floor_above_key == 0);
  CHECK(probs.skipped_winner == 0);
  CHECK(probs.skipped_own == 0);
}

TEST_CASE("the bound checks catch the naive bounds (q taken as v, no margins)",
          "[gumbel][bounds][mutant]") {
  const auto probs = run<bounds::naive>();
  WARN("naive probs bounds: " << probs.floor_above_key << " floors above the key, "
                              << probs.skipped_winner << " winners skipped, " << probs.skipped_own
                              << " skipped at their own floor, of " << probs.pairs << " pairs");
  CHECK(probs.floor_above_key > 0);
  CHECK(probs.skipped_winner > 0);
}

TEST_CASE("the own-floor check catches a floor left unclamped at FLT_MAX",
          "[gumbel][bounds][mutant]") {
  const auto unclamped = run<bounds::unclamped>();
  WARN("unclamped floor: " << unclamped.skipped_own << " tokens skipped at their own floor, of "
                           << unclamped.pairs << " pairs");
  CHECK(unclamped.skipped_own > 0);
}
