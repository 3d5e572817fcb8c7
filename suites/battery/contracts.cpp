#include "suites/battery/contracts.h"

#include <fmt/format.h>

namespace samplecheck::battery {
namespace {

const char* rng_word(int32_t v) {
  return v == SC_RNG_BATCH_SLOT          ? "batch_slot"
         : v == SC_RNG_SUBJECT_GENERATOR ? "subject_generator"
         : v == SC_RNG_REQUEST_KEYED     ? "request_keyed"
                                         : "per_request";
}

// Under request_keyed the offset is the request's position, hashed into its key: the checks
// that judge how a call walks the Philox counter have no counter to judge. Positions stay
// judged where independence is the premise (offset_advancement steps them by 1).
std::string keyed_not_applicable(std::string_view check) {
  if (check == "round_advancement")
    return "the subject declares rng_policy request_keyed: its noise is hashed from (seed, "
           "position), so there are no Philox outputs a round could read past its declaration";
  if (check == "stream_position")
    return "the subject declares rng_policy request_keyed: offsets are positions hashed into its "
           "key, not a Philox counter whose 64-bit arithmetic the far-apart offsets judge";
  return {};
}

}  // namespace

std::string contract_not_applicable(std::string_view check, const subject& s) {
  if (s.sampler == nullptr) return {};
  const registry::sampler_contracts c = registry::contracts_of(*s.sampler);
  const bool slot = c.rng_policy == SC_RNG_BATCH_SLOT;
  const bool own = c.rng_policy == SC_RNG_SUBJECT_GENERATOR;
  if (check == "per_request_seeds" && (slot || own))
    return fmt::format(
        "the subject declares rng_policy {}: a request's stream is not curand_init(seed, "
        "subsequence, offset) wherever it sits, so equal seeds need not give equal tokens",
        rng_word(c.rng_policy));
  if (check == "batch_reorder" && (slot || own))
    return fmt::format(
        "the subject declares rng_policy {}: a request moved to another slot draws other "
        "random numbers, so permuting requests need not permute tokens",
        rng_word(c.rng_policy));
  if (check == "batch_invariance" && (slot || own))
    return fmt::format(
        "the subject declares rng_policy {}: a request's random numbers follow its slot or "
        "the call's generator, so its token may change with the batch by declaration",
        rng_word(c.rng_policy));
  if (c.rng_policy == SC_RNG_REQUEST_KEYED)
    if (std::string why = keyed_not_applicable(check); !why.empty()) return why;
  if (check == "offset_advancement" && own)
    return "the subject declares rng_policy subject_generator: offsets do not address its "
           "generator, so there is no declared advance to judge";
  if (check == "parameter_routing" && c.parameter_indexing == SC_PARAMS_BY_OUTPUT_ROW)
    return "the subject declares parameter_indexing output_row: the harness repeats each "
           "input row's parameters per output row, so there is no routing of its own to judge";
  if (check == "degenerate_rows" && c.degenerate_rows == SC_DEGENERATE_ERROR)
    return "the subject declares degenerate_rows error: a degenerate row fails the whole call, "
           "so valid = 0 with undisturbed neighbours is not promised";
  if (check == "degenerate_rows" && c.degenerate_rows == SC_DEGENERATE_UNDEFINED)
    return "the subject declares degenerate_rows undefined: it promises nothing for NaN, Inf, "
           "negative or all-zero rows, and they were not judged";
  return {};
}

}  // namespace samplecheck::battery
