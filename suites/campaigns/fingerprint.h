// Fingerprints: an order-aware hash (XXH3-64 over the output bits in order) of every
// entry of a fixed plan, and the manifest that records what produced it, so that CI
// can compare a subject against a checked-in golden and a person can see the first
// thing two builds, toolkits or GPUs disagree on.
//
//   matmul:  one entry per (shape, M, bias, launch config): the [M, columns] bf16 bits
//   sampler: one entry per (dtype, batch size) of the request grid (sampler_batches.h):
//            each slot's token, or -1 where valid = 0
//
// Two manifests are comparable only when their plans are equal; the plan holds every
// input that decides the bits (shapes, batch sizes, columns, seed, V, dtypes, the
// subject's declared filters), never the time or the machine.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "suites/battery/matmul_selection.h"
#include "suites/battery/platform.h"
#include "suites/battery/subject.h"

namespace samplecheck::campaigns {

inline constexpr const char* kFingerprintFormat = "samplecheck-fingerprint";

struct fingerprint_options {
  uint64_t seed = 0;                 // the operands' and the request grid's seed
  int64_t vocab_size = 32000;        // samplers
  battery::matmul_selection matmul;  // matmuls: empty lists take the defaults of the memory space
};

// The plan for a subject: the options with every default made explicit.
nlohmann::json fingerprint_plan(const battery::subject& s, const fingerprint_options& o);

// The output of entry i of a plan, as the hash reads it: matmul bf16 bits (zero-
// extended) row-major [M, columns]; sampler tokens by slot (columns = 1).
struct entry_output {
  std::vector<uint32_t> values;
  int64_t columns = 1;
};
entry_output run_entry(const battery::subject& s, const nlohmann::json& plan, size_t entry);
std::string hash_output(const entry_output& out);  // 16 hex digits

// Runs every entry of the plan and returns the manifest. Throws std::runtime_error
// when the subject fails a call (the message names the entry).
nlohmann::json take_fingerprint(const battery::subject& s, const nlohmann::json& plan);

// One line naming entry i of a plan: "shape qwen3_8b.o (n 4096, k 4096), M = 65, bias".
std::string entry_name(const nlohmann::json& plan, size_t entry);

// Why a file is not a manifest this build reads (format, version, fields); empty if it is.
std::string manifest_error(const nlohmann::json& manifest);

struct fingerprint_comparison {
  bool comparable = true;
  std::string why_not;            // plans differ: the first field that does
  std::vector<size_t> differing;  // entry indices, in plan order
  size_t entries = 0;
};
fingerprint_comparison compare_manifests(const nlohmann::json& a, const nlohmann::json& b);

// The first diverging element of an entry, from both sides' outputs: "row 0, column 3:
// 0x3f80 vs 0x3f81 (1 ULP)" or "slot 5 (request ...): token 12 vs 40".
std::string first_difference(const nlohmann::json& plan, size_t entry, const entry_output& a,
                             const entry_output& b);

}  // namespace samplecheck::campaigns
