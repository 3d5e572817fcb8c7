// The one subject model: a sampler or a matmul, in-tree or from a plugin, as the
// registry resolves it. Checks say which kind they apply to; the harnesses
// (suites/harness/sampler_call.h, suites/matmul/matmul_runner.h) make the calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/registry/registry.h"
#include "kernels/samplecheck_plugin.h"
#include "suites/harness/sampler_call.h"

namespace samplecheck::battery {

using harness::call_status;
using harness::kUnwrittenToken;
using harness::kUnwrittenValid;
using harness::sample_call;

enum class subject_kind { sampler, matmul };

struct subject {
  const sc_sampler* sampler = nullptr;  // exactly one of sampler and matmul is set
  const sc_matmul* matmul = nullptr;
  // Keeps a plugin's library loaded while its subject is in use; null for in-tree.
  std::shared_ptr<registry::plugin_library> library;
  // Samplers: the dtype the battery sends (one the subject declares; the runner makes
  // one copy of the subject per declared dtype).
  int32_t input_dtype = SC_DTYPE_F32;

  subject_kind kind() const {
    return sampler != nullptr ? subject_kind::sampler : subject_kind::matmul;
  }
  std::string name() const { return sampler != nullptr ? sampler->name : matmul->name; }
  const char* description() const {
    return sampler != nullptr ? sampler->description : matmul->description;
  }
  int32_t memory_space() const {
    return sampler != nullptr ? sampler->memory_space : matmul->memory_space;
  }
  bool is_logits() const { return sampler != nullptr && sampler->input_kind == SC_INPUT_LOGITS; }
  bool declares(uint32_t filter) const {
    return sampler != nullptr && (sampler->filters & filter) != 0;
  }
  // The plugin's path, or empty for an in-tree subject (repro files record it).
  std::string plugin_path() const { return library ? library->path() : std::string(); }
};

inline call_status run_call(const subject& s, sample_call& call) {
  return harness::run_call(*s.sampler, call);
}

// The dtypes a sampler declares, in the order the battery judges them (f32, bf16, f16);
// empty for a matmul.
std::vector<int32_t> declared_dtypes(const subject& s);
using harness::dtype_name;

inline bool memory_space_available(const subject& s, std::string* why) {
  return harness::memory_space_available(s.memory_space(), why);
}

}  // namespace samplecheck::battery
