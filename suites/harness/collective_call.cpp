#include "suites/harness/collective_call.h"

#include <fmt/format.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <span>
#include <stdexcept>

#include "suites/harness/bitwise.h"
#include "suites/harness/guard.h"
#include "suites/harness/sampler_call.h"
#ifdef SAMPLECHECK_HAVE_CUDA
#include "suites/harness/device_buffer.h"
#endif

namespace samplecheck::harness {
namespace {

// After an SC_OK call: the guards, the unwritten sentinels, then every rank against rank 0.
std::string find_fault(const std::vector<std::vector<uint32_t>>& outputs, int64_t count) {
  const auto n = static_cast<size_t>(count);
  for (size_t r = 0; r < outputs.size(); ++r) {
    const std::string name = fmt::format("outputs[{}]", r);
    const std::span<const uint32_t> guards(outputs[r].data() + n, kGuardRows);
    if (std::string touched = touched_guard(guards, n, kCollectiveCanaryBits, name.c_str());
        !touched.empty())
      return touched;
    for (size_t i = 0; i < n; ++i)
      if (outputs[r][i] == kUnwrittenCollectiveBits)
        return fmt::format("{} element {} was left unwritten", name, i);
  }
  for (size_t r = 1; r < outputs.size(); ++r) {
    const int64_t i = first_difference(outputs[0].data(), outputs[r].data(), count);
    if (i >= 0)
      return fmt::format(
          "the ranks disagree: element {} of rank {} is {}, rank 0's is {} (an all-reduce gives "
          "every rank the same bits)",
          i, r, bits_hex(std::bit_cast<float>(outputs[r][i])),
          bits_hex(std::bit_cast<float>(outputs[0][i])));
  }
  return {};
}

sc_collective_problem make_problem(const std::vector<const void*>& in,
                                   const std::vector<void*>& out, int64_t count) {
  sc_collective_problem p{};
  p.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  p.world_size = static_cast<int32_t>(in.size());
  p.dtype = SC_DTYPE_F32;
  p.count = count;
  p.inputs = in.data();
  p.outputs = out.data();
  return p;
}

#ifdef SAMPLECHECK_HAVE_CUDA
// run_ranks' device leg: a device buffer per rank's input and guarded output, the call, then
// everything copied back, the inputs too (a subject that writes into one is caught there).
sc_status run_on_device(const sc_collective& c, const std::vector<float*>& inputs,
                        const std::vector<float*>& outputs, int64_t count, char* error,
                        size_t size) {
  const auto n = static_cast<size_t>(count);
  std::vector<device_buffer<float>> in(inputs.size()), out(outputs.size());
  std::vector<const void*> in_at;
  std::vector<void*> out_at;
  sc_status st = SC_OK;
  try {
    for (size_t r = 0; r < inputs.size(); ++r) {
      in[r].resize(n), in[r].upload(inputs[r], n);
      out[r].resize(n + kGuardRows), out[r].upload(outputs[r], n + kGuardRows);
      in_at.push_back(in[r].get()), out_at.push_back(out[r].get());
    }
    const sc_collective_problem p = make_problem(in_at, out_at, count);
    st = c.run(c.context, &p, error, size);
    error[size - 1] = '\0';
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the collective");
    for (size_t r = 0; r < inputs.size(); ++r) {
      out[r].download(outputs[r], n + kGuardRows);
      in[r].download(inputs[r], n);
    }
    return st;
  } catch (const device_error& e) {
    const std::string subject = error;
    std::snprintf(error, size, "the host's CUDA copies of the ranks failed: %s%s%s", e.what(),
                  st != SC_OK ? "; the subject had said: " : "",
                  st != SC_OK ? subject.c_str() : "");
    return SC_ERR_DEVICE;
  }
}
#endif

}  // namespace

std::string problem_violation(const sc_collective& c, int32_t world_size, int64_t count,
                              int32_t dtype) {
  if (world_size < 1 || world_size > c.max_world_size)
    return fmt::format("field world_size is {}, must be 1..{} (the collective's max_world_size)",
                       world_size, c.max_world_size);
  if (count < 1) return fmt::format("field count is {}, must be >= 1", count);
  if (dtype < 1 || dtype > 31 || (c.dtypes & SC_DTYPE_BIT(dtype)) == 0)
    return fmt::format("field dtype is {}, which {} does not declare", dtype, c.name);
  return {};
}

sc_status run_ranks(const sc_collective& c, const std::vector<float*>& inputs,
                    const std::vector<float*>& outputs, int64_t count, char* error, size_t size) {
  if (c.memory_space == SC_MEMORY_HOST) {
    const std::vector<const void*> in(inputs.begin(), inputs.end());
    const std::vector<void*> out(outputs.begin(), outputs.end());
    const sc_collective_problem p = make_problem(in, out, count);
    const sc_status st = c.run(c.context, &p, error, size);
    error[size - 1] = '\0';
    return st;
  }
#ifdef SAMPLECHECK_HAVE_CUDA
  if (c.memory_space == SC_MEMORY_CUDA)
    return run_on_device(c, inputs, outputs, count, error, size);
#endif
  std::snprintf(error, size, "the host cannot copy ranks to memory space %d", c.memory_space);
  return SC_ERR_UNSUPPORTED;
}

std::string changed_input(const std::vector<const float*>& now,
                          const std::vector<std::vector<float>>& sent) {
  for (size_t r = 0; r < sent.size(); ++r) {
    if (std::memcmp(now[r], sent[r].data(), sent[r].size() * sizeof(float)) == 0) continue;
    for (size_t i = 0; i < sent[r].size(); ++i) {
      const auto was = std::bit_cast<uint32_t>(sent[r][i]);
      const auto is = std::bit_cast<uint32_t>(now[r][i]);
      if (was != is)
        return fmt::format(
            "the subject wrote into an input it only reads: inputs[{}] element {} changed from "
            "0x{:08x} to 0x{:08x}",
            r, i, was, is);
    }
  }
  return {};
}

collective_reply call_collective(const sc_collective& c,
                                 const std::vector<std::vector<float>>& inputs, int64_t count) {
  const auto world = static_cast<int32_t>(inputs.size());
  if (std::string why = problem_violation(c, world, count, SC_DTYPE_F32); !why.empty())
    throw std::invalid_argument(fmt::format("collective {}: {}", c.name, why));
  if (std::string why; !memory_space_available(c.memory_space, &why))
    throw std::invalid_argument(
        fmt::format("collective {}: field memory_space is {}: {}", c.name, c.memory_space, why));
  std::vector<std::vector<float>> in = inputs;  // the subject's copy; `inputs` stays as sent
  std::vector<std::vector<uint32_t>> outputs;
  std::vector<float*> in_at, out_at;
  for (size_t r = 0; r < inputs.size(); ++r) {
    if (static_cast<int64_t>(inputs[r].size()) != count)
      throw std::invalid_argument(
          fmt::format("inputs[{}] holds {} elements, count is {}", r, inputs[r].size(), count));
    outputs.push_back(guarded_buffer(static_cast<size_t>(count), kUnwrittenCollectiveBits,
                                     kCollectiveCanaryBits));
  }
  for (size_t r = 0; r < inputs.size(); ++r) {
    in_at.push_back(in[r].data());
    out_at.push_back(reinterpret_cast<float*>(outputs[r].data()));
  }
  char error[512] = "";
  const sc_status status = run_ranks(c, in_at, out_at, count, error, sizeof error);
  collective_reply reply = finish_collective(status, error, outputs, count);
  if (reply.status == SC_OK && reply.fault.empty())
    reply.fault = changed_input({in_at.begin(), in_at.end()}, inputs);
  return reply;
}

collective_reply finish_collective(sc_status status, std::string message,
                                   const std::vector<std::vector<uint32_t>>& outputs,
                                   int64_t count) {
  collective_reply reply;
  reply.status = status;
  reply.message = std::move(message);
  if (reply.status != SC_OK) return reply;
  reply.fault = find_fault(outputs, count);
  reply.out.resize(static_cast<size_t>(count));
  for (size_t i = 0; i < reply.out.size(); ++i) reply.out[i] = std::bit_cast<float>(outputs[0][i]);
  return reply;
}

}  // namespace samplecheck::harness
