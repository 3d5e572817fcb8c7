/* The sampler plugin: one fp32 sampler with top-k and top-p (examples/plugin's kernel). */
#include "samplecheck_plugin.h"
#include "vendor.h"

#define VENDOR_ABI \
  { SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR }

static const sc_sampler samplers[] = {
    {
        .abi_version = VENDOR_ABI,
        .name = "consumer.inverse_cdf",
        .description = "inverse CDF in double over fp32 probabilities, top-k then top-p",
        .memory_space = SC_MEMORY_HOST,
        .input_kind = SC_INPUT_PROBS,
        .input_dtypes = SC_DTYPE_BIT(SC_DTYPE_F32),
        .filters = SC_FILTER_TOP_K | SC_FILTER_TOP_P,
        .filter_order = SC_ORDER_TOP_K_FIRST,
        .tie_policy = SC_TIE_KEEP_TIES,
        .philox_outputs_per_call = VENDOR_PHILOX_OUTPUTS_PER_CALL,
        .sample = vendor_sample_f32,
    },
};

static const sc_plugin plugin = {
    .abi_version = VENDOR_ABI,
    .name = "samplecheck consumer example: sampler",
    .num_samplers = 1,
    .samplers = samplers,
    .sampler_size = sizeof(sc_sampler),
    .matmul_size = sizeof(sc_matmul),
};

__attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin(void) { return &plugin; }
