/* The request stream's seed for llama.cpp's `dist` sampler.
 *
 * llama_sampler_init_dist(seed) seeds one std::mt19937 with a uint32_t and advances it
 * on every draw (src/llama-sampler.cpp, llama_sampler_init_dist and
 * llama_sampler_dist_apply). The ABI's randomness belongs to the request (seed,
 * subsequence, offset), whatever the output's slot. So each output gets a sampler of its
 * own, seeded with a hash of its request's three words: the same request draws the same
 * token in any slot and any call, distinct requests draw from distinct generators, and
 * the next call (offset advanced) from a fresh one.
 *
 * The hash: splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014; the finaliser of java.util.SplittableRandom), chained over
 * the three words, the top 32 bits kept. splitmix64 is a bijection of 64-bit words, so
 * two requests differing in one word differ before the truncation; after it, two
 * requests share a generator with probability 2^-32, the price of llama.cpp's 32-bit seed.
 *
 * LLAMA_DEFAULT_SEED (0xFFFFFFFF) is not a seed to llama.cpp but "draw one from
 * std::random_device" (get_rng_seed in src/llama-sampler.cpp): the same request would
 * then draw different tokens on every call. It is mapped to 0xFFFFFFFE, which two
 * hashes in 2^32 then share. */
#include "llama.h"
#include "llamacpp_subjects.h"

static uint64_t splitmix64(uint64_t x) {
  x += UINT64_C(0x9E3779B97F4A7C15);
  x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
  return x ^ (x >> 31);
}

uint32_t lc_stream_seed(uint64_t seed, uint64_t subsequence, uint64_t offset) {
  const uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ subsequence) ^ offset);
  const uint32_t s = (uint32_t)(h >> 32);
  return s == LLAMA_DEFAULT_SEED ? LLAMA_DEFAULT_SEED - 1u : s;
}
