/* The matmul plugin: one bf16 matmul with two launch configurations (examples/plugin's). */
#include "samplecheck_plugin.h"
#include "vendor.h"

#define VENDOR_ABI \
  { SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR }

static const int64_t thresholds[] = {VENDOR_ROWWISE_ROWS4_FROM_M};

static const sc_matmul matmuls[] = {
    {
        .abi_version = VENDOR_ABI,
        .name = "consumer.rowwise",
        .description = "fp32 sum in increasing k, + bias, one bf16 rounding; blocked over rows",
        .memory_space = SC_MEMORY_HOST,
        .num_launch_configs = VENDOR_ROWWISE_NUM_CONFIGS,
        .run = vendor_rowwise_run,
        .launch_config_name = vendor_rowwise_config_name,
        .num_batch_thresholds = sizeof thresholds / sizeof thresholds[0],
        .batch_thresholds = thresholds,
    },
};

static const sc_plugin plugin = {
    .abi_version = VENDOR_ABI,
    .name = "samplecheck consumer example: matmul",
    .num_matmuls = 1,
    .matmuls = matmuls,
    .sampler_size = sizeof(sc_sampler),
    .matmul_size = sizeof(sc_matmul),
};

__attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin(void) { return &plugin; }
