// The one ABI-call harness that the battery, the peers and the kernel tests use: a
// sampling call made in the subject's memory space, its outputs guarded and judged.
//
//   call.h         sample_call, call_status (call_fault), guard rows, the output judgement
//   dtype.h        bf16 / fp16 encoding of the input, round_to_dtype
//   host_call.h    make_batch (the one sc_sample_batch builder), host_call, run_host_call
//   device_call.h  device_call (CUDA builds), run_device_call
//   device_buffer.h  the one RAII device buffer (CUDA builds)
#pragma once

#include <cstdint>
#include <string>

#include "kernels/samplecheck_plugin.h"
#include "suites/harness/call.h"
#include "suites/harness/dtype.h"

namespace samplecheck::harness {

// Runs the call synchronously in the subject's memory space: the input encoded to
// call.input_dtype (refused, uncalled, if the subject does not declare it), outputs
// pre-filled and guarded, then copied into call.tokens / call.valid and judged. Never
// throws for the subject's doing; the fault says whose it was.
call_status run_call(const sc_sampler& sampler, sample_call& call);

// Device availability for a memory space. Initialises CUDA for CUDA subjects, so the
// battery's parent process never calls it.
bool memory_space_available(int32_t memory_space, std::string* why);

}  // namespace samplecheck::harness
