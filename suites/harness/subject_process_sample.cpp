// subject_process's sampling calls: written into one of the shared region's two areas (on
// the caller's thread, or ahead of their turn on another: stage()), sent, their outputs
// judged (send()), and their inputs compared with what was written (compare_inputs()).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "kernels/registry/registry.h"
#include "suites/harness/sample_request.h"
#include "suites/harness/subject_process.h"

namespace samplecheck::harness {
namespace {

// The request frame of a sampling call whose arrays `arrays` placed in the region.
nlohmann::json sample_frame(const std::string& name, const sample_call& call,
                            const nlohmann::json& arrays) {
  return {{"type", "sample"},
          {"subject", name},
          {"vocab_size", call.vocab_size},
          {"num_input_rows", call.num_input_rows},
          {"num_output_rows", call.num_output_rows()},
          {"input_dtype", dtype_name(call.input_dtype)},
          {"arrays", arrays}};
}

size_t aligned_down(size_t bytes) { return bytes / protocol::kAlignment * protocol::kAlignment; }

// Where the call's arrays go in an area that starts at `base`; `used`: where they end.
nlohmann::json place_from(const sample_call& call, size_t base, bool routes, size_t& used) {
  protocol::region_layout layout;
  layout.used = base;
  nlohmann::json arrays = place_sample_arrays(call, layout, routes);
  used = layout.used;
  return arrays;
}

}  // namespace

subject_process::sample_area subject_process::next_area(const std::string& name) {
  if (pid_ < 0 || !shm_) return {};
  const size_t half = aligned_down(shm_->size() / 2);
  return {&find(name), shm_, upper_area_next_ ? half : 0, upper_area_next_ ? 2 * half : half};
}

subject_process::sample_area subject_process::area_for(const protocol::descriptor& d, size_t bytes,
                                                       int areas) {
  if (areas == 1)
    return shm_->reserve(bytes) ? sample_area{&d, shm_, 0, shm_->size()} : sample_area{};
  const size_t area = aligned_down(bytes + protocol::kAlignment);
  if (!shm_->reserve(2 * area)) return {};
  const size_t half = aligned_down(shm_->size() / 2);
  return {&d, shm_, upper_area_next_ ? half : 0, upper_area_next_ ? 2 * half : half};
}

bool subject_process::stage(sample_call& call, const sample_area& area, staged_sample& out) {
  if (area.subject == nullptr) return false;
  if (!prepare_call(*area.subject, call, out)) return true;  // send() answers the refusal
  return put_call(area, out);
}

bool subject_process::prepare_call(const protocol::descriptor& d, sample_call& call,
                                   staged_sample& out) {
  out.call = &call, out.unsent = true, out.region.reset(), out.refused = {};
  if (call_status refused = refuse_undeclared(d.sampler, call); !refused.ok()) {
    out.refused = std::move(refused);
    return false;
  }
  const registry::sampler_contracts contracts = registry::contracts_of(d.sampler);
  out.by_output_row = contracts.parameter_indexing == SC_PARAMS_BY_OUTPUT_ROW;
  out.inputs_preserved = contracts.inputs != SC_INPUTS_MUTATED;
  out.num_routes = registry::routes_of(d.sampler).size();
  if (out.by_output_row) {
    out.expanded = call;
    index_parameters_by_output_row(out.expanded);
  }
  try {
    out.bits = encoder_.encode(out.sent());
  } catch (const bad_request& e) {
    out.refused = {call_fault::harness, SC_OK, e.what(), -1};
    return false;
  }
  return true;
}

bool subject_process::put_call(const sample_area& area, staged_sample& out) {
  const sample_call& sent = out.sent();
  size_t used = 0;
  out.arrays = place_from(sent, area.base, out.num_routes > 0, used);
  if (used > area.limit) {
    out.unsent = false;  // nothing written: write() prepares it again
    return false;
  }
  const auto rows = static_cast<size_t>(sent.num_output_rows());
  protocol::shared_region& region = *area.region;
  put_inputs(region, out.arrays, sent, out.bits);
  const std::vector<int32_t> tokens = guarded_buffer(rows, kUnwrittenToken, kGuardToken);
  const std::vector<uint8_t> valid = guarded_buffer(rows, kUnwrittenValid, kGuardValid);
  put(region, out.arrays["out_token"], tokens.data(), tokens.size());
  put(region, out.arrays["out_valid"], valid.data(), valid.size());
  if (out.num_routes > 0) put_route_sentinels(region, out.arrays, rows);
  out.region = area.region;
  upper_area_next_ = area.base == 0;  // the next call is written while this one is drawn
  weight_generation_ = 0;             // a matmul's operands may lie where it was written
  return true;
}

call_status subject_process::write(const std::string& name, sample_call& call,
                                   staged_sample& staged, int areas) {
  const protocol::descriptor& d = find(name);  // starts the process if it is not running
  if (d.kind != protocol::subject_kind::sampler)
    throw std::invalid_argument(name + " is not a sampler");
  if (staged.call == &call && staged.unsent && (!staged.refused.ok() || staged.region == shm_))
    return staged.refused;
  if (!prepare_call(d, call, staged)) return staged.refused;
  size_t used = 0;
  place_from(staged.sent(), 0, staged.num_routes > 0, used);
  const sample_area area = area_for(d, used, areas);
  if (area.subject == nullptr || !put_call(area, staged)) {
    staged.unsent = false;
    return {call_fault::harness, SC_OK,
            fmt::format("cannot grow the shared region to {} bytes", areas * used), -1};
  }
  return {};
}

call_status subject_process::send(const std::string& name, sample_call& call,
                                  staged_sample& staged) {
  if (call_status refused = write(name, call, staged); !refused.ok()) return refused;
  staged.unsent = false;
  sample_call& sent = staged.sent();
  const auto rows = static_cast<size_t>(sent.num_output_rows());
  std::vector<int32_t> tokens(rows + kGuardRows);
  std::vector<uint8_t> valid(rows + kGuardRows);
  const auto start = std::chrono::steady_clock::now();
  const nlohmann::json reply = request(sample_frame(name, sent, staged.arrays));
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  const uint8_t* base = shm_->data();
  std::memcpy(tokens.data(), base + staged.arrays["out_token"]["at"].get<size_t>(),
              tokens.size() * 4);
  std::memcpy(valid.data(), base + staged.arrays["out_valid"]["at"].get<size_t>(), valid.size());
  const std::string message = protocol::printable(reply.value("message", std::string()));
  call_status st =
      finish_call(reply["status"].get<sc_status>(), message.c_str(), sent, tokens, valid);
  if (staged.num_routes > 0 && st.ok())
    st = read_routes(*shm_, staged.arrays, sent, staged.num_routes);
  if (staged.by_output_row)
    call.tokens = sent.tokens, call.valid = sent.valid, call.route = sent.route;
  st.subject_seconds = seconds.count();
  return st;
}

call_status subject_process::compare_inputs(const std::string& name,
                                            const staged_sample& staged) const {
  if (!staged.region || !staged.inputs_preserved) return {};
  const std::string changed =
      changed_input(*staged.region, staged.arrays, staged.sent(), staged.bits);
  if (changed.empty()) return {};
  return {call_fault::contract, SC_OK,
          fmt::format("subject {} wrote into an array it only reads (it declares inputs "
                      "preserved): {}",
                      name, changed),
          -1};
}

call_status subject_process::sample(const std::string& name, sample_call& call) {
  staged_sample staged;
  // One area: a call made alone leaves the region no larger than it needs.
  if (call_status refused = write(name, call, staged, 1); !refused.ok()) return refused;
  call_status st = send(name, call, staged);
  if (call_status changed = compare_inputs(name, staged); !changed.ok())
    st = {changed.fault, st.status, std::move(changed.message), -1, st.subject_seconds};
  return st;
}

}  // namespace samplecheck::harness
