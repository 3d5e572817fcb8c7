/* The plugin's descriptor, in C99 with designated initialisers: every field of
 * samplecheck_plugin.h is named where it is set, and anything not named is 0
 * (the reserved words and flags the host requires to be 0). */
#include "samplecheck_plugin.h"
#include "vendor.h"

#define VENDOR_ABI \
  { SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR }

static const sc_sampler samplers[] = {
    {
        .abi_version = VENDOR_ABI,
        .name = "vendor.inverse_cdf",
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
    {
        .abi_version = VENDOR_ABI,
        .name = "vendor.inverse_cdf_bf16",
        .description = "inverse CDF in double over bf16 probabilities, no filters",
        .memory_space = SC_MEMORY_HOST,
        .input_kind = SC_INPUT_PROBS,
        .input_dtypes = SC_DTYPE_BIT(SC_DTYPE_BF16),
        .filters = 0,
        /* Meaningless without top-k; stated so the record holds no unknown value. */
        .filter_order = SC_ORDER_TOP_K_FIRST,
        .tie_policy = SC_TIE_KEEP_TIES,
        .philox_outputs_per_call = VENDOR_PHILOX_OUTPUTS_PER_CALL,
        .sample = vendor_sample_bf16,
    },
};

/* The M at which vendor.rowwise's own choice changes: rows1 below, rows4 from. */
static const int64_t rowwise_thresholds[] = {VENDOR_ROWWISE_ROWS4_FROM_M};

static const sc_matmul matmuls[] = {
    {
        .abi_version = VENDOR_ABI,
        .name = "vendor.rowwise",
        .description = "fp32 sum in increasing k, + bias, one bf16 rounding; blocked over rows",
        .memory_space = SC_MEMORY_HOST,
        .num_launch_configs = VENDOR_ROWWISE_NUM_CONFIGS,
        .run = vendor_rowwise_run,
        .launch_config_name = vendor_rowwise_config_name,
        .num_batch_thresholds = sizeof rowwise_thresholds / sizeof rowwise_thresholds[0],
        .batch_thresholds = rowwise_thresholds,
    },
};

static const sc_plugin plugin = {
    .abi_version = VENDOR_ABI,
    .name = "samplecheck vendor example",
    .num_samplers = sizeof samplers / sizeof samplers[0],
    .num_matmuls = sizeof matmuls / sizeof matmuls[0],
    .samplers = samplers,
    .matmuls = matmuls,
    /* The strides of the two arrays: the host may be built against another minor. */
    .sampler_size = sizeof(sc_sampler),
    .matmul_size = sizeof(sc_matmul),
};

SC_PLUGIN_EXPORT const sc_plugin* samplecheck_plugin(void) { return &plugin; }
