#include "suites/harness/collective_call.h"

#include <fmt/format.h>

#include <bit>
#include <span>
#include <stdexcept>

#include "suites/harness/bitwise.h"
#include "suites/harness/guard.h"

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

collective_reply call_collective(const sc_collective& c,
                                 const std::vector<std::vector<float>>& inputs, int64_t count) {
  const auto world = static_cast<int32_t>(inputs.size());
  if (std::string why = problem_violation(c, world, count, SC_DTYPE_F32); !why.empty())
    throw std::invalid_argument(fmt::format("collective {}: {}", c.name, why));
  if (c.memory_space != SC_MEMORY_HOST)
    throw std::invalid_argument(fmt::format(
        "collective {}: field memory_space is {}: only host collectives are called in-process",
        c.name, c.memory_space));
  std::vector<const void*> in(inputs.size());
  std::vector<std::vector<uint32_t>> outputs;
  std::vector<void*> out;
  for (size_t r = 0; r < inputs.size(); ++r) {
    if (static_cast<int64_t>(inputs[r].size()) != count)
      throw std::invalid_argument(
          fmt::format("inputs[{}] holds {} elements, count is {}", r, inputs[r].size(), count));
    in[r] = inputs[r].data();
    outputs.push_back(guarded_buffer(static_cast<size_t>(count), kUnwrittenCollectiveBits,
                                     kCollectiveCanaryBits));
  }
  for (auto& o : outputs) out.push_back(o.data());
  sc_collective_problem p{};
  p.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
  p.world_size = world;
  p.dtype = SC_DTYPE_F32;
  p.count = count;
  p.inputs = in.data();
  p.outputs = out.data();
  char error[512] = "";
  const sc_status status = c.run(c.context, &p, error, sizeof error);
  error[sizeof error - 1] = '\0';
  return finish_collective(status, error, outputs, count);
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
