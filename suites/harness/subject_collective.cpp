// samplecheck's side of a collective request (docs/subject-protocol.md, section 4): each
// rank's input and output in the shared region, the outputs pre-filled with sentinels and
// followed by guard rows, and the reply judged here by the same rules as an in-process call
// (collective_call.h), plus the inputs, which the subject only reads.
#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "suites/harness/guard.h"
#include "suites/harness/sample_request.h"
#include "suites/harness/subject_process.h"

namespace samplecheck::harness {

collective_reply subject_process::collective(const std::string& name,
                                             const std::vector<std::vector<float>>& inputs,
                                             int64_t count) {
  const protocol::descriptor& d = find(name);
  if (d.kind != protocol::subject_kind::collective)
    throw std::invalid_argument(name + " is not a collective");
  const auto world = static_cast<int32_t>(inputs.size());
  if (std::string why = problem_violation(d.collective, world, count, SC_DTYPE_F32); !why.empty())
    throw std::invalid_argument(fmt::format("collective {}: {}", name, why));
  const auto n = static_cast<size_t>(count);
  protocol::region_layout layout;
  nlohmann::json arrays{{"inputs", nlohmann::json::array()}, {"outputs", nlohmann::json::array()}};
  for (size_t r = 0; r < inputs.size(); ++r) {
    if (inputs[r].size() != n)
      throw std::invalid_argument(
          fmt::format("inputs[{}] holds {} elements, count is {}", r, inputs[r].size(), count));
    arrays["inputs"].push_back(layout.place(n, sizeof(float)));
  }
  for (size_t r = 0; r < inputs.size(); ++r) {
    arrays["outputs"].push_back(layout.place(n + kGuardRows, sizeof(float)));
    arrays["outputs"][r]["count"] = n;
  }
  if (pid_ < 0) start();
  if (!shm_->reserve(layout.used))
    return {SC_ERR_INTERNAL,
            fmt::format("cannot grow the shared region to {} bytes", layout.used),
            {},
            {}};
  const std::vector<uint32_t> fresh =
      guarded_buffer(n, kUnwrittenCollectiveBits, kCollectiveCanaryBits);
  for (size_t r = 0; r < inputs.size(); ++r) {
    put(*shm_, arrays["inputs"][r], inputs[r].data(), n);
    put(*shm_, arrays["outputs"][r], fresh.data(), fresh.size());
  }
  const nlohmann::json reply = request({{"type", "collective"},
                                        {"subject", name},
                                        {"world_size", world},
                                        {"count", count},
                                        {"dtype", "f32"},
                                        {"arrays", arrays}});
  std::vector<std::vector<uint32_t>> outputs(inputs.size(), fresh);
  for (size_t r = 0; r < inputs.size(); ++r)
    std::memcpy(outputs[r].data(), shm_->data() + arrays["outputs"][r]["at"].get<size_t>(),
                fresh.size() * sizeof(uint32_t));
  collective_reply out =
      finish_collective(reply["status"].get<sc_status>(),
                        protocol::printable(reply.value("message", std::string())), outputs, count);
  if (out.status == SC_OK && out.fault.empty()) {
    std::vector<const float*> now;
    for (const nlohmann::json& place : arrays["inputs"])
      now.push_back(reinterpret_cast<const float*>(shm_->data() + place["at"].get<size_t>()));
    out.fault = changed_input(now, inputs);
  }
  return out;
}

}  // namespace samplecheck::harness
