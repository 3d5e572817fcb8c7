// Where a subject ran, as the records of a run state it beside their results.
#pragma once

#include <nlohmann/json.hpp>

#include "suites/battery/subject.h"

namespace samplecheck::battery {

// Where a subject ran: memory space, machine, compiler, and for a CUDA subject the
// toolkit, GPU and driver (fingerprint manifests and report.json record it).
nlohmann::json platform_json(const subject& s);

}  // namespace samplecheck::battery
