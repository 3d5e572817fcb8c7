/* A plugin whose one sampler lives in memory space SAMPLECHECK_TEST_MEMORY_SPACE, for the
 * command's device rules: a CUDA subject without a GPU is "device absent" (77), a memory
 * space this build cannot reach is a usage error (2). Its sample() is never reached. */
#include <stdio.h>

#include "kernels/samplecheck_plugin.h"

static sc_status never(void* context, const sc_sample_batch* batch, char* error, size_t size) {
  (void)context;
  (void)batch;
  snprintf(error, size, "test.memory_space: sample() must not be reached on this machine");
  return SC_ERR_INTERNAL;
}

static const sc_sampler kSampler = {{SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
                                    "test.memory_space",
                                    "never samples",
                                    SAMPLECHECK_TEST_MEMORY_SPACE,
                                    SC_INPUT_PROBS,
                                    SC_DTYPE_BIT(SC_DTYPE_F32),
                                    0,
                                    SC_ORDER_TOP_K_FIRST,
                                    SC_TIE_KEEP_TIES,
                                    1,
                                    0,
                                    NULL,
                                    never};

static const sc_plugin kPlugin = {{SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
                                  "memory space test plugin",
                                  1,
                                  0,
                                  &kSampler,
                                  NULL,
                                  0,
                                  sizeof(sc_sampler),
                                  sizeof(sc_matmul)};

__attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin(void) {
  return &kPlugin;
}
