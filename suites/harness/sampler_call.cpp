#include "suites/harness/sampler_call.h"

#include <fmt/format.h>

#include "suites/harness/host_call.h"
#ifdef SAMPLECHECK_HAVE_CUDA
#include "suites/harness/device_call.h"
#endif

namespace samplecheck::harness {

bool memory_space_available(int32_t memory_space, std::string* why) {
  switch (memory_space) {
    case SC_MEMORY_HOST:
      return true;
    case SC_MEMORY_CUDA: {
#ifdef SAMPLECHECK_HAVE_CUDA
      int devices = 0;
      if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) return true;
      if (why) *why = "no CUDA device is present";
#else
      if (why) *why = "this samplecheck was built without CUDA";
#endif
      return false;
    }
    default:
      if (why)
        *why = fmt::format("memory space {} is not supported by this samplecheck", memory_space);
      return false;
  }
}

call_status run_call(const sc_sampler& s, sample_call& c) {
  if (s.memory_space == SC_MEMORY_HOST) return run_host_call(s, c);
#ifdef SAMPLECHECK_HAVE_CUDA
  if (s.memory_space == SC_MEMORY_CUDA) {
    if (call_status refused = refuse_undeclared(s, c); !refused.ok()) return refused;
    try {
      // One per thread: the next call reuses its device memory.
      thread_local device_call d;
      d.load(c);
      return run_device_call(s, d, c);
    } catch (const bad_request& e) {
      return {call_fault::harness, SC_OK, e.what(), -1};
    } catch (const device_error& e) {
      return {call_fault::device, SC_OK, e.what(), -1};
    }
  }
#endif
  return {call_fault::harness, SC_OK,
          fmt::format("memory space {} is not available", s.memory_space), -1};
}

}  // namespace samplecheck::harness
