// The in-tree CPU all-reduces (ABI minor 6, kernels/samplecheck_plugin.h "Collectives"):
//   cpu.allreduce.fixed_order   every element summed in rank order 0, 1, ..., w - 1: its bits
//                               follow its own values alone (declares size and run invariance)
//   cpu.allreduce.ring          an emulation of NCCL's ring all-reduce: each chunk's sum starts
//                               at the chunk's rank, and the chunks follow count, so an
//                               element's order follows count and its offset (declares run
//                               invariance only: message_invariance's negative control)
//   cpu.allreduce.tree          every element summed by the balanced tree over ranks (declares
//                               size, run and tree invariance: a TP-split layer's bits do not
//                               follow the TP size)
//   cpu.allreduce.fixed_order:X13  the planted defect (kernels/defect.h)
// float32 only; every rank's output gets the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/collective/ring_order.h"
#include "kernels/samplecheck_plugin.h"

namespace samplecheck::collective {

const std::vector<const sc_collective*>& cpu_collectives();

// A float32 sum all-reduce over host memory, versioned as this build speaks the ABI: what
// every CPU collective here, and the tests' own, have in common. Header-only, so a test
// plugin that links none of this library describes its collective the same way.
inline sc_collective host_f32_sum(const char* name, uint32_t invariants, int32_t max_world_size,
                                  decltype(sc_collective::run) run, void* context = nullptr,
                                  const char* description = nullptr) {
  return {.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
          .name = name,
          .description = description,
          .memory_space = SC_MEMORY_HOST,
          .dtypes = SC_DTYPE_BIT(SC_DTYPE_F32),
          .reduce_op = SC_REDUCE_SUM,
          .max_world_size = max_world_size,
          .invariants = invariants,
          .reserved0 = 0,
          .flags = 0,
          .context = context,
          .run = run};
}

// The most ranks a CPU collective takes: a tensor-parallel group far beyond one node's 8 GPUs.
inline constexpr int32_t kCpuMaxWorldSize = 64;

}  // namespace samplecheck::collective
