// What every in-tree matmul subject shares at the ABI boundary: the argument checks,
// so a bad problem is refused with a message naming the field instead of crashing,
// and the batch thresholds the CPU emulations and the CUDA kernels both declare.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "kernels/abi_error.h"
#include "kernels/defect.h"
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

// batch_thresholds (ABI 1.1): where matmul_plan.h's launch tables change their choice
// with M, over the N of fixtures/matmul/layer_shapes.txt (32, 4096, 6144, 24576); the
// tables switch on N too, so each list is the union over those N.
//   persistent: table_tile goes 1x4 -> 8x4 at M = 3.
//   segmented: tiles at 3; table_split stops splitting at M = 33 for N > 8192
//     (gate_up) and at M = 1025 otherwise.
// The mutants declare their host's list: a vendor does not declare its bugs, the
// battery has to find B01's M = 64 border by its own sweep.
inline constexpr int64_t kPersistentThresholds[] = {3};
inline constexpr int64_t kSegmentedThresholds[] = {3, 33, 1025};

template <size_t N>
void declare_thresholds(sc_matmul& m, const int64_t (&thresholds)[N]) {
  m.num_batch_thresholds = static_cast<int32_t>(N);
  m.batch_thresholds = thresholds;
}

// The segmented kernel's planted defects by their ids in kernels/mutant_catalog.h:
// a mutant is named "<host>:<id>".
struct planted_defect {
  const char* id;
  defect planted;
};
inline constexpr planted_defect kPlantedDefects[] = {
    {"B01", defect::B01}, {"B02", defect::B02}, {"B03", defect::B03}, {"B04", defect::B04},
    {"B05", defect::B05}, {"B06", defect::B06}, {"B07", defect::B07}, {"B08", defect::B08}};

}  // namespace samplecheck::matmul
