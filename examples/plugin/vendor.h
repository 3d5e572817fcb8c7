/* The functions the descriptors in plugin.c point at. They have C linkage so a C
 * file can name them; none is exported (exports.map keeps samplecheck_plugin only). */
#ifndef VENDOR_EXAMPLE_VENDOR_H_
#define VENDOR_EXAMPLE_VENDOR_H_

#include "samplecheck_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* vendor.inverse_cdf (fp32 probabilities, top-k and top-p) and
 * vendor.inverse_cdf_bf16 (bf16 probabilities, no filters). */
sc_status vendor_sample_f32(void* context, const sc_sample_batch* batch, char* error,
                            size_t error_size);
sc_status vendor_sample_bf16(void* context, const sc_sample_batch* batch, char* error,
                             size_t error_size);
/* Each call takes two outputs of a row's stream: one 53-bit uniform. */
#define VENDOR_PHILOX_OUTPUTS_PER_CALL 2

/* vendor.rowwise: launch configurations 0 "rows1" and 1 "rows4"; its own choice
 * switches from rows1 to rows4 at M = VENDOR_ROWWISE_ROWS4_FROM_M. */
sc_status vendor_rowwise_run(void* context, const sc_matmul_problem* problem, char* error,
                             size_t error_size);
const char* vendor_rowwise_config_name(void* context, int32_t index);
#define VENDOR_ROWWISE_NUM_CONFIGS 2
#define VENDOR_ROWWISE_ROWS4_FROM_M 4

#ifdef __cplusplus
}
#endif

#endif /* VENDOR_EXAMPLE_VENDOR_H_ */
