// The declared contracts of a sampler (ABI 1.2, docs/subject-protocol.md section 6) and
// the checks whose premise each breaks: such a check reports n/a with the reason, never
// a pass. The checks that still apply are written so that they hold under every
// declaration they run for (replay keeps every request in its slot and repeats the whole
// call, so it holds for slot-keyed streams and subject-owned generators alike).
#pragma once

#include <string>
#include <string_view>

#include "suites/battery/subject.h"

namespace samplecheck::battery {

// Empty when `check` applies under the subject's declared contracts; else why not.
std::string contract_not_applicable(std::string_view check, const subject& s);

}  // namespace samplecheck::battery
