// The fixed grid of sampler batches that batch_invariance, the sampler run_to_run check
// and sampler fingerprints share: a pool of requests (distributions, parameters,
// degenerate rows, each with its own stream) and, per batch size B, which request sits
// in each slot. The grid depends only on the subject's descriptor, the seed and V.
//
// A request is (input row, seed, subsequence, offset); slot s of the batch of size B
// holds request (s + B) mod R, so across batch sizes every request meets other slots
// and other batchmates, and batches larger than R hold each request several times
// (the same stream in several slots must give the same token too).
// Input rows: the pool rows the batch uses, in order of first use (row_index maps the
// slots to them), so the number of output rows is B and of input rows min(B, rows).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "suites/checks/sampling.h"

namespace samplecheck::checks {

struct sampler_request {
  int32_t row = 0;  // pool row
  uint64_t seed = 0, subsequence = 0, offset = 0;
};

struct sampler_pool {
  std::vector<judged_row> rows;  // valid rows first, then degenerate ones (target not ok)
  std::vector<sampler_request> requests;
  bool degenerate(int32_t row) const { return !rows[static_cast<size_t>(row)].target.ok(); }
};

// 1, 2, 3, then 2^j - 1, 2^j, 2^j + 1 for j = 2..12, capped at 4096.
std::vector<int64_t> sampler_batch_sizes();

// The pool: flat, Zipf, peaked, tiny-tail and tied rows under the subject's parameter
// grid, two half-vocabulary top-k rows (a renormalisation over many tokens), a NaN row
// and an empty one (all zero, or all -Inf logits); `requests` requests over them, each
// with its own stream (kPoolRequests: every slot of a batch up to 512 is a new draw).
inline constexpr int kPoolRequests = 512;
sampler_pool make_sampler_pool(const battery::subject& s, int64_t vocab_size, uint64_t seed,
                               int requests = kPoolRequests);

// The requests of the batch of size B, slot by slot.
std::vector<int32_t> batch_slots(const sampler_pool& pool, int64_t batch_size);

// The call for those slots (outputs unfilled).
harness::sample_call batch_call(const battery::subject& s, const sampler_pool& pool,
                                const std::vector<int32_t>& slots);

// Slot s of a finished call, as the fingerprint hashes it: (valid, token), the token
// read as -1 on an invalid slot (the ABI leaves it unspecified).
inline int32_t slot_token(const harness::sample_call& call, size_t s) {
  return call.valid[s] == 1 ? call.tokens[s] : -1;
}

nlohmann::json request_json(const sampler_pool& pool, int32_t request);

}  // namespace samplecheck::checks
