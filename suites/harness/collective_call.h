// One collective call (ABI minor 6): the one way the battery and the tests call an
// sc_collective. The host holds the problem to the header's rules before it calls (one the
// subject would have to refuse is std::invalid_argument naming the field, never sent), hands
// each rank an output of count sentinels followed by guard rows, and after the call checks
// the guards, that every element was written, and that every rank holds rank 0's bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck::harness {

// What a collective output holds before the call: a NaN no sum of finite inputs gives.
inline constexpr uint32_t kUnwrittenCollectiveBits = 0x7fc0dead;
// The guard rows after each rank's output; held as bits, since a NaN compares unequal to
// itself as a float.
inline constexpr uint32_t kCollectiveCanaryBits = 0x7fa5a5a5u;

struct collective_reply {
  sc_status status = SC_OK;
  std::string message;     // the subject's, when status != SC_OK
  std::vector<float> out;  // rank 0's count elements (every rank's, when `fault` is empty)
  // "" or what the host found broken after an SC_OK call: a guard row written, an element
  // left unwritten, or a rank whose bits differ from rank 0's (the first such element).
  std::string fault;
};

// inputs: world_size ranks of `count` float32 elements each. The subject is called in this
// process (run_ranks), on copies of the inputs that are compared with `inputs` afterwards.
// A memory space this process cannot serve (memory_space_available) is
// std::invalid_argument naming the field and why.
collective_reply call_collective(const sc_collective& c,
                                 const std::vector<std::vector<float>>& inputs, int64_t count);

// One call of `c` over host arrays, the one way both the in-process call and the subject
// host (subject_server.cpp) call a collective: inputs[r] holds count elements, outputs[r]
// count elements then kGuardRows guards, pre-filled by the caller. A host collective gets
// the arrays themselves. A device collective (SC_MEMORY_CUDA) gets device copies of every
// one, guards included, and after the call the outputs with their guards and the inputs are
// copied back over the host arrays, so the host judges what it wrote, and whether it wrote
// into an input, as it judges a host collective. Returns the subject's status, or
// SC_ERR_DEVICE (a failed copy or synchronisation, named in `error`) and SC_ERR_UNSUPPORTED
// (a memory space this build cannot copy to).
sc_status run_ranks(const sc_collective& c, const std::vector<float*>& inputs,
                    const std::vector<float*>& outputs, int64_t count, char* error, size_t size);

// "" or the first input element a call changed, in a report's words: `now` holds the
// world_size inputs after the call, `sent` what the host sent.
std::string changed_input(const std::vector<const float*>& now,
                          const std::vector<std::vector<float>>& sent);

// The reply of a call that returned `status`: on SC_OK, the guards of every rank's output
// (count elements, then kGuardRows canaries), an element left unwritten, or a rank whose
// bits differ from rank 0's (the fault), and rank 0's count elements. The in-process call
// and the subject process's (subject_process.h) both end in it.
collective_reply finish_collective(sc_status status, std::string message,
                                   const std::vector<std::vector<uint32_t>>& outputs,
                                   int64_t count);

// "" when the problem keeps the header's rules for `c`, else why not, naming the field.
std::string problem_violation(const sc_collective& c, int32_t world_size, int64_t count,
                              int32_t dtype);

}  // namespace samplecheck::harness
