/* Compiled as C99 with -pedantic -Werror: the plugin ABI must stay plain C, and
 * its layout must not move under a minor version bump. */
#include "kernels/samplecheck_plugin.h"

#include <stddef.h>

#define SC_STATIC_ASSERT(cond, name) typedef char sc_static_assert_##name[(cond) ? 1 : -1]

SC_STATIC_ASSERT(offsetof(sc_sampler, abi_version) == 0, sampler_version_first);
SC_STATIC_ASSERT(offsetof(sc_matmul, abi_version) == 0, matmul_version_first);
SC_STATIC_ASSERT(offsetof(sc_plugin, abi_version) == 0, plugin_version_first);
SC_STATIC_ASSERT(offsetof(sc_sample_batch, abi_version) == 0, batch_version_first);
SC_STATIC_ASSERT(sizeof(sc_abi_version) == 8, version_size);
SC_STATIC_ASSERT(offsetof(sc_sample_batch, input) == 8, batch_input_offset);
SC_STATIC_ASSERT(offsetof(sc_sample_batch, num_input_rows) == 24, batch_rows_offset);
SC_STATIC_ASSERT(sizeof(sc_sample_batch) == 144, batch_size);
SC_STATIC_ASSERT(sizeof(sc_matmul_problem) == 88, matmul_problem_size);

/* A plugin written in C: an empty one still states its version. */
static const sc_plugin empty_plugin = {{SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR}, "c-check", 0, 0,
                                       NULL, NULL, 0};

const sc_plugin* samplecheck_abi_c_check_plugin(void) { return &empty_plugin; }
