/* Compiled as C99 with -pedantic -Werror: the plugin ABI must stay plain C, and
 * its layout must not move under a minor version bump.
 *
 * Every field of every struct is pinned (offset and size) for LP64 Linux, the
 * x86-64 and aarch64 psABIs, where the layouts agree. A minor bump appends fields
 * and adds assertions below; it never edits an existing one. A failing assertion
 * here means the ABI broke: a plugin built against the old header would be read
 * wrong. */
#include <stddef.h>

#include "kernels/samplecheck_plugin.h"

/* _Static_assert is C11; __extension__ keeps -pedantic quiet under C99 (GCC and
 * Clang), so the header itself is still proven to be C99. glibc's <sys/cdefs.h>
 * replaces the keyword by a bit-field trick before C11, which fails without the
 * message: the compiler's own keyword names the field that moved. */
#ifdef _Static_assert
#undef _Static_assert
#endif
#define SC_LAYOUT_ASSERT(cond, what) __extension__ _Static_assert(cond, what)
#define SC_FIELD(type, field, offset, size)                                        \
  SC_LAYOUT_ASSERT(offsetof(type, field) == (offset), #type "." #field " offset"); \
  SC_LAYOUT_ASSERT(sizeof(((type*)0)->field) == (size), #type "." #field " size")
#define SC_SIZE(type, size) SC_LAYOUT_ASSERT(sizeof(type) == (size), "sizeof(" #type ")")

#if defined(__linux__) && defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))

SC_SIZE(sc_abi_version, 8);
SC_FIELD(sc_abi_version, major, 0, 4);
SC_FIELD(sc_abi_version, minor, 4, 4);

/* Status, memory space, dtype and enum words are int32 / uint32 everywhere. */
SC_LAYOUT_ASSERT(sizeof(sc_status) == 4, "sizeof(sc_status)");

/* Minor 0 to 4 ended at flags: 144 bytes. */
SC_SIZE(sc_sample_batch, 152);
SC_FIELD(sc_sample_batch, abi_version, 0, 8);
SC_FIELD(sc_sample_batch, input, 8, 8);
SC_FIELD(sc_sample_batch, input_dtype, 16, 4);
SC_FIELD(sc_sample_batch, reserved0, 20, 4);
SC_FIELD(sc_sample_batch, num_input_rows, 24, 8);
SC_FIELD(sc_sample_batch, vocab_size, 32, 8);
SC_FIELD(sc_sample_batch, num_output_rows, 40, 8);
SC_FIELD(sc_sample_batch, row_index, 48, 8);
SC_FIELD(sc_sample_batch, top_k, 56, 8);
SC_FIELD(sc_sample_batch, top_p, 64, 8);
SC_FIELD(sc_sample_batch, min_p, 72, 8);
SC_FIELD(sc_sample_batch, temperature, 80, 8);
SC_FIELD(sc_sample_batch, seed, 88, 8);
SC_FIELD(sc_sample_batch, subsequence, 96, 8);
SC_FIELD(sc_sample_batch, offset, 104, 8);
SC_FIELD(sc_sample_batch, out_token, 112, 8);
SC_FIELD(sc_sample_batch, out_valid, 120, 8);
SC_FIELD(sc_sample_batch, stream, 128, 8);
SC_FIELD(sc_sample_batch, flags, 136, 8);
SC_FIELD(sc_sample_batch, out_route, 144, 8); /* minor 5 */

/* Minor 5. */
SC_SIZE(sc_route, 16);
SC_FIELD(sc_route, name, 0, 8);
SC_FIELD(sc_route, tie_policy, 8, 4);
SC_FIELD(sc_route, reserved0, 12, 4);

/* Minor 0 and 1 ended at sample: 80 bytes, the stride of a minor-0 / minor-1 array; minor 3
 * and 4 at inputs: 104 bytes. */
SC_SIZE(sc_sampler, 120);
SC_FIELD(sc_sampler, abi_version, 0, 8);
SC_FIELD(sc_sampler, name, 8, 8);
SC_FIELD(sc_sampler, description, 16, 8);
SC_FIELD(sc_sampler, memory_space, 24, 4);
SC_FIELD(sc_sampler, input_kind, 28, 4);
SC_FIELD(sc_sampler, input_dtypes, 32, 4);
SC_FIELD(sc_sampler, filters, 36, 4);
SC_FIELD(sc_sampler, filter_order, 40, 4);
SC_FIELD(sc_sampler, tie_policy, 44, 4);
SC_FIELD(sc_sampler, philox_outputs_per_call, 48, 8);
SC_FIELD(sc_sampler, flags, 56, 8);
SC_FIELD(sc_sampler, context, 64, 8);
SC_FIELD(sc_sampler, sample, 72, 8);
SC_FIELD(sc_sampler, rng_policy, 80, 4);          /* minor 2 */
SC_FIELD(sc_sampler, parameter_indexing, 84, 4);  /* minor 2 */
SC_FIELD(sc_sampler, degenerate_rows, 88, 4);     /* minor 2 */
SC_FIELD(sc_sampler, probs_normalisation, 92, 4); /* minor 3 */
SC_FIELD(sc_sampler, uniform_rule, 96, 4);        /* minor 3 */
SC_FIELD(sc_sampler, inputs, 100, 4);             /* minor 4; reserved2 in minor 3 */
SC_FIELD(sc_sampler, num_routes, 104, 4);         /* minor 5 */
SC_FIELD(sc_sampler, reserved3, 108, 4);          /* minor 5 */
SC_FIELD(sc_sampler, routes, 112, 8);             /* minor 5 */

SC_SIZE(sc_matmul_problem, 88);
SC_FIELD(sc_matmul_problem, abi_version, 0, 8);
SC_FIELD(sc_matmul_problem, m, 8, 8);
SC_FIELD(sc_matmul_problem, n, 16, 8);
SC_FIELD(sc_matmul_problem, k, 24, 8);
SC_FIELD(sc_matmul_problem, a, 32, 8);
SC_FIELD(sc_matmul_problem, weight, 40, 8);
SC_FIELD(sc_matmul_problem, bias, 48, 8);
SC_FIELD(sc_matmul_problem, out, 56, 8);
SC_FIELD(sc_matmul_problem, launch_config, 64, 4);
SC_FIELD(sc_matmul_problem, reserved0, 68, 4);
SC_FIELD(sc_matmul_problem, stream, 72, 8);
SC_FIELD(sc_matmul_problem, flags, 80, 8);

/* Minor 0 ended at launch_config_name: 64 bytes, the stride of a minor-0 array. */
SC_SIZE(sc_matmul, 80);
SC_FIELD(sc_matmul, abi_version, 0, 8);
SC_FIELD(sc_matmul, name, 8, 8);
SC_FIELD(sc_matmul, description, 16, 8);
SC_FIELD(sc_matmul, memory_space, 24, 4);
SC_FIELD(sc_matmul, num_launch_configs, 28, 4);
SC_FIELD(sc_matmul, flags, 32, 8);
SC_FIELD(sc_matmul, context, 40, 8);
SC_FIELD(sc_matmul, run, 48, 8);
SC_FIELD(sc_matmul, launch_config_name, 56, 8);
SC_FIELD(sc_matmul, num_batch_thresholds, 64, 4); /* minor 1 */
SC_FIELD(sc_matmul, reserved1, 68, 4);            /* minor 1 */
SC_FIELD(sc_matmul, batch_thresholds, 72, 8);     /* minor 1 */

SC_SIZE(sc_collective_problem, 56); /* minor 6 */
SC_FIELD(sc_collective_problem, abi_version, 0, 8);
SC_FIELD(sc_collective_problem, world_size, 8, 4);
SC_FIELD(sc_collective_problem, dtype, 12, 4);
SC_FIELD(sc_collective_problem, count, 16, 8);
SC_FIELD(sc_collective_problem, inputs, 24, 8);
SC_FIELD(sc_collective_problem, outputs, 32, 8);
SC_FIELD(sc_collective_problem, stream, 40, 8);
SC_FIELD(sc_collective_problem, flags, 48, 8);

SC_SIZE(sc_collective, 72); /* minor 6 */
SC_FIELD(sc_collective, abi_version, 0, 8);
SC_FIELD(sc_collective, name, 8, 8);
SC_FIELD(sc_collective, description, 16, 8);
SC_FIELD(sc_collective, memory_space, 24, 4);
SC_FIELD(sc_collective, dtypes, 28, 4);
SC_FIELD(sc_collective, reduce_op, 32, 4);
SC_FIELD(sc_collective, max_world_size, 36, 4);
SC_FIELD(sc_collective, invariants, 40, 4);
SC_FIELD(sc_collective, reserved0, 44, 4);
SC_FIELD(sc_collective, flags, 48, 8);
SC_FIELD(sc_collective, context, 56, 8);
SC_FIELD(sc_collective, run, 64, 8);

/* Minor 0 ended at flags: 48 bytes; minors 1 to 5 at matmul_size: 64 bytes. */
SC_SIZE(sc_plugin, 88);
SC_FIELD(sc_plugin, abi_version, 0, 8);
SC_FIELD(sc_plugin, name, 8, 8);
SC_FIELD(sc_plugin, num_samplers, 16, 4);
SC_FIELD(sc_plugin, num_matmuls, 20, 4);
SC_FIELD(sc_plugin, samplers, 24, 8);
SC_FIELD(sc_plugin, matmuls, 32, 8);
SC_FIELD(sc_plugin, flags, 40, 8);
SC_FIELD(sc_plugin, sampler_size, 48, 8);    /* minor 1 */
SC_FIELD(sc_plugin, matmul_size, 56, 8);     /* minor 1 */
SC_FIELD(sc_plugin, num_collectives, 64, 4); /* minor 6 */
SC_FIELD(sc_plugin, reserved0, 68, 4);       /* minor 6 */
SC_FIELD(sc_plugin, collectives, 72, 8);     /* minor 6 */
SC_FIELD(sc_plugin, collective_size, 80, 8); /* minor 6 */

#endif

/* A plugin written in C: an empty one still states its version and strides. (The
 * host would refuse it for exporting no subject; here it only has to compile.) */
static const sc_plugin empty_plugin = {{SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
                                       "c-check",
                                       0,
                                       0,
                                       NULL,
                                       NULL,
                                       0,
                                       sizeof(sc_sampler),
                                       sizeof(sc_matmul),
                                       0,
                                       0,
                                       NULL,
                                       sizeof(sc_collective)};

const sc_plugin* samplecheck_abi_c_check_plugin(void) { return &empty_plugin; }
