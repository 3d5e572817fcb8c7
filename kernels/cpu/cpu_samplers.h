// The CPU subjects: every sampler of the judge issue, on the reference Philox, behind
// the plugin ABI (kernels/samplecheck_plugin.h), plus one mutant per sampler row of
// the bug catalog (kernels/mutant_catalog.h).
#pragma once

#include <vector>

#include "kernels/samplecheck_plugin.h"

namespace samplecheck {

// Every CPU subject: the correct ones first, then the mutants, named
// "<subject>:<id>" (e.g. "cpu.dual_pivot:S01"). The pointers live for the whole
// program; every sampler is SC_MEMORY_HOST and safe to call from several threads.
const std::vector<const sc_sampler*>& cpu_samplers();

}  // namespace samplecheck
