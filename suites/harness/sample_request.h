// A sample request's arrays in the shared region (docs/subject-protocol.md, section 4):
// where each goes, writing the ones the subject only reads, and finding the first of them
// the subject changed (the inputs contract, SC_INPUTS_*). subject_process_sample.cpp
// is their one user.
#pragma once

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "suites/harness/call.h"
#include "suites/harness/protocol.h"

namespace samplecheck::harness {

// Copies `count` elements to the array's place ({"at", "count"}); nothing for count 0.
template <class T>
void put(protocol::shared_region& shm, const nlohmann::json& place, const T* data, size_t count) {
  if (count > 0) std::memcpy(shm.data() + place["at"].get<size_t>(), data, count * sizeof(T));
}

// Parameters indexed by output row (SC_PARAMS_BY_OUTPUT_ROW): each array repeated per
// output row from its input row.
void index_parameters_by_output_row(sample_call& c);

// Every array's place in the region, outputs with their guard rows after them; an optional
// array left empty is null. `routes`: the subject declares routes, so out_route is placed too.
nlohmann::json place_sample_arrays(const sample_call& call, protocol::region_layout& layout,
                                   bool routes = false);

// Writes out_route's sentinels and guard rows (a subject that declares routes).
void put_route_sentinels(protocol::shared_region& shm, const nlohmann::json& arrays, size_t rows);

// After an SC_OK reply of a subject declaring `num_routes` routes: copies out_route into
// call.route and judges it: guard rows untouched, every valid row's route one it declares.
call_status read_routes(const protocol::shared_region& shm, const nlohmann::json& arrays,
                        sample_call& call, size_t num_routes);

// Writes every array the subject only reads: the input (`bits`, its 16-bit patterns, unless
// f32), parameters and streams.
void put_inputs(protocol::shared_region& shm, const nlohmann::json& arrays, const sample_call& call,
                const std::vector<uint16_t>& bits);

// The first element of those arrays that no longer holds what put_inputs wrote, in a
// report's words ("seed[3] changed from 7 to 8"); "" when none changed.
std::string changed_input(const protocol::shared_region& shm, const nlohmann::json& arrays,
                          const sample_call& call, const std::vector<uint16_t>& bits);

}  // namespace samplecheck::harness
