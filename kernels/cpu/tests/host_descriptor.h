// The smallest valid host sampler descriptor, for the registry's versioning tests and the
// battery's harness test: it never samples, so only its declared fields matter.
#pragma once

#include <cstdint>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::testing {

inline sc_status never_samples(void*, const sc_sample_batch*, char*, size_t) {
  return SC_ERR_INTERNAL;
}

// A float32 probs sampler with keep_ties, stating ABI minor `minor`.
inline sc_sampler host_descriptor(const char* name, uint32_t minor) {
  sc_sampler s{};
  s.abi_version = {SC_ABI_VERSION_MAJOR, minor};
  s.name = name;
  s.memory_space = SC_MEMORY_HOST;
  s.input_kind = SC_INPUT_PROBS;
  s.input_dtypes = SC_DTYPE_BIT(SC_DTYPE_F32);
  s.tie_policy = SC_TIE_KEEP_TIES;
  s.philox_outputs_per_call = 1;
  s.sample = never_samples;
  return s;
}

}  // namespace samplecheck::testing
