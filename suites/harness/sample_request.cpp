#include "suites/harness/sample_request.h"

#include <fmt/format.h>

#include <type_traits>

namespace samplecheck::harness {
namespace {

template <class T>
nlohmann::json place_vector(protocol::region_layout& layout, const std::vector<T>& v) {
  return v.empty() ? nlohmann::json() : layout.place(v.size(), sizeof(T));
}

// Calls f(field, values) for each array of the request the subject only reads, the input
// as sent (its 16-bit patterns unless f32), until f returns true.
template <class F>
void for_each_input(const sample_call& c, const std::vector<uint16_t>& bits, F f) {
  (c.input_dtype == SC_DTYPE_F32 ? f("input", c.input) : f("input", bits)) ||
      f("row_index", c.row_index) || f("top_k", c.top_k) || f("top_p", c.top_p) ||
      f("min_p", c.min_p) || f("temperature", c.temperature) || f("seed", c.seed) ||
      f("subsequence", c.subsequence) || f("offset", c.offset);
}

}  // namespace

// A row_index outside the batch (sent on purpose by the refusal checks) takes input row 0's
// values: the subject must refuse the index anyway.
void index_parameters_by_output_row(sample_call& c) {
  const auto rows = static_cast<size_t>(c.num_output_rows());
  auto expand = [&](auto& values) {
    if (values.empty()) return;
    const auto by_input = values;
    values.resize(rows);
    for (size_t r = 0; r < rows; ++r) {
      const int64_t i = c.row_index.empty() ? static_cast<int64_t>(r) : c.row_index[r];
      values[r] = i >= 0 && static_cast<size_t>(i) < by_input.size() ? by_input[i] : by_input[0];
    }
  };
  expand(c.top_k), expand(c.top_p), expand(c.min_p), expand(c.temperature);
}

nlohmann::json place_sample_arrays(const sample_call& call, protocol::region_layout& layout,
                                   bool routes) {
  const auto rows = static_cast<size_t>(call.num_output_rows());
  nlohmann::json arrays;
  arrays["input"] = layout.place(call.input.size(), call.input_dtype == SC_DTYPE_F32 ? 4 : 2);
  arrays["row_index"] = place_vector(layout, call.row_index);
  arrays["top_k"] = place_vector(layout, call.top_k);
  arrays["top_p"] = place_vector(layout, call.top_p);
  arrays["min_p"] = place_vector(layout, call.min_p);
  arrays["temperature"] = place_vector(layout, call.temperature);
  arrays["seed"] = layout.place(call.seed.size(), 8);
  arrays["subsequence"] = place_vector(layout, call.subsequence);
  arrays["offset"] = layout.place(call.offset.size(), 8);
  arrays["out_token"] = layout.place(rows + kGuardRows, 4);
  arrays["out_valid"] = layout.place(rows + kGuardRows, 1);
  arrays["out_token"]["count"] = rows, arrays["out_valid"]["count"] = rows;
  if (routes) {
    arrays["out_route"] = layout.place(rows + kGuardRows, 1);
    arrays["out_route"]["count"] = rows;
  }
  return arrays;
}

void put_route_sentinels(protocol::shared_region& shm, const nlohmann::json& arrays, size_t rows) {
  const std::vector<uint8_t> route = guarded_buffer(rows, kUnwrittenRoute, kGuardValid);
  put(shm, arrays["out_route"], route.data(), route.size());
}

call_status read_routes(const protocol::shared_region& shm, const nlohmann::json& arrays,
                        sample_call& call, size_t num_routes) {
  const auto rows = static_cast<size_t>(call.num_output_rows());
  std::vector<uint8_t> buffer(rows + kGuardRows);
  std::memcpy(buffer.data(), shm.data() + arrays["out_route"]["at"].get<size_t>(), buffer.size());
  if (std::string touched = touched_guard(buffer, rows, kGuardValid, "out_route"); !touched.empty())
    return {call_fault::contract, SC_OK, std::move(touched), -1};
  call.route.assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(rows));
  for (size_t r = 0; r < rows; ++r) {
    if (call.valid[r] != 1 || call.route[r] < num_routes) continue;
    const auto row = static_cast<int64_t>(r);
    if (call.route[r] == kUnwrittenRoute)
      return {call_fault::contract, SC_OK,
              fmt::format("output row {} is valid but the subject never wrote out_route[{}] (it "
                          "declares {} routes)",
                          r, r, num_routes),
              row};
    return {call_fault::contract, SC_OK,
            fmt::format("out_route[{}] = {} is not one of the subject's {} routes", r,
                        call.route[r], num_routes),
            row};
  }
  return {};
}

// One memcmp per array: the judge stays as fast as the copy in; the element-wise search
// runs only once an array is known to differ.
std::string changed_input(const protocol::shared_region& shm, const nlohmann::json& arrays,
                          const sample_call& call, const std::vector<uint16_t>& bits) {
  std::string words;
  for_each_input(call, bits, [&](const char* field, const auto& sent) {
    using T = typename std::decay_t<decltype(sent)>::value_type;
    if (sent.empty()) return false;
    const uint8_t* at = shm.data() + arrays[field]["at"].get<size_t>();
    if (std::memcmp(at, sent.data(), sent.size() * sizeof(T)) == 0) return false;
    size_t i = 0;
    while (std::memcmp(at + i * sizeof(T), &sent[i], sizeof(T)) == 0) ++i;
    T now;
    std::memcpy(&now, at + i * sizeof(T), sizeof(T));
    const std::string where =
        std::string(field) == "input" && call.vocab_size > 0
            ? fmt::format(" (row {}, column {})", i / static_cast<size_t>(call.vocab_size),
                          i % static_cast<size_t>(call.vocab_size))
            : "";
    words = fmt::format("{}[{}]{} changed from {} to {}", field, i, where, sent[i], now);
    return true;
  });
  return words;
}

void put_inputs(protocol::shared_region& shm, const nlohmann::json& arrays, const sample_call& call,
                const std::vector<uint16_t>& bits) {
  for_each_input(call, bits, [&](const char* field, const auto& v) {
    put(shm, arrays[field], v.data(), v.size());
    return false;
  });
}

}  // namespace samplecheck::harness
