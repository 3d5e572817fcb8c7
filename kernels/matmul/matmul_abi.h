// Argument checks every in-tree matmul subject applies at the ABI boundary, so a
// bad problem is refused with a message naming the field instead of crashing.
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "kernels/abi_error.h"
#include "kernels/samplecheck_plugin.h"

namespace samplecheck::matmul {

// SC_OK when the problem is well formed for a subject with `num_configs` launch configurations.
inline sc_status validate_problem(const char* subject, const sc_matmul_problem* p,
                                  int32_t num_configs, char* error, size_t error_size) {
  if (p == nullptr)
    return report_error(SC_ERR_INVALID_ARGUMENT, error, error_size, "%s: problem is NULL", subject);
  if (p->abi_version.major != SC_ABI_VERSION_MAJOR)
    return report_error(SC_ERR_INVALID_ARGUMENT, error, error_size,
                        "%s: abi_version.major %u, expected %d", subject, p->abi_version.major,
                        SC_ABI_VERSION_MAJOR);
  if (p->m <= 0 || p->n <= 0 || p->k <= 0)
    return report_error(SC_ERR_INVALID_ARGUMENT, error, error_size,
                        "%s: m, n, k must be positive (m=%lld n=%lld k=%lld)", subject,
                        static_cast<long long>(p->m), static_cast<long long>(p->n),
                        static_cast<long long>(p->k));
  if (p->a == nullptr || p->weight == nullptr || p->out == nullptr)
    return report_error(SC_ERR_INVALID_ARGUMENT, error, error_size, "%s: %s is NULL", subject,
                        p->a == nullptr ? "a" : (p->weight == nullptr ? "weight" : "out"));
  const int32_t limit = num_configs > 0 ? num_configs : 1;
  if (p->launch_config < -1 || p->launch_config >= limit)
    return report_error(SC_ERR_INVALID_ARGUMENT, error, error_size,
                        "%s: launch_config %d outside [-1, %d)", subject, p->launch_config, limit);
  if (p->reserved0 != 0 || p->flags != 0)
    return report_error(SC_ERR_INVALID_ARGUMENT, error, error_size,
                        "%s: reserved0 and flags must be 0", subject);
  return SC_OK;
}

}  // namespace samplecheck::matmul
