#include "kernels/collective/cpu_collectives.h"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "kernels/defect.h"

namespace samplecheck::collective {
namespace {

enum class order { rank, ring, tree };

struct cpu_collective {
  order kind;
  defect planted;
};

// The refusals the ABI asks of every collective, naming the field; the host makes the same
// checks before it calls (suites/harness/collective_call.cpp).
bool refused(const sc_collective_problem* p, char* error, size_t size, sc_status* status) {
  const char* why = nullptr;
  *status = SC_ERR_INVALID_ARGUMENT;
  if (p == nullptr)
    why = "problem is NULL";
  else if (p->abi_version.major != SC_ABI_VERSION_MAJOR)
    why = "field abi_version.major is not this collective's";
  else if (p->world_size < 1 || p->world_size > kCpuMaxWorldSize)
    why = "field world_size is outside [1, max_world_size]";
  else if (p->count < 1)
    why = "field count is below 1";
  else if (p->inputs == nullptr || p->outputs == nullptr)
    why = "field inputs or outputs is NULL";
  else if (p->flags != 0)
    why = "field flags is not 0";
  else if (p->dtype != SC_DTYPE_F32) {
    why = "field dtype is not f32, the one dtype declared";
    *status = SC_ERR_UNSUPPORTED;
  }
  for (int32_t r = 0; why == nullptr && r < p->world_size; ++r)
    if (p->inputs[r] == nullptr || p->outputs[r] == nullptr)
      why = "field inputs[r] or outputs[r] is NULL";
  if (why != nullptr && error != nullptr && size > 0) std::snprintf(error, size, "%s", why);
  return why != nullptr;
}

// One element's sum, starting at rank `first` and going round the ranks.
float sum_from(const float* const* in, int32_t world, int64_t i, int32_t first) {
  float acc = in[first][i];
  for (int32_t s = 1; s < world; ++s) acc += in[(first + s) % world][i];
  return acc;
}

// Element i summed over ranks [lo, hi) by the balanced tree (sc_collective, SC_INVARIANT_TREE).
float sum_tree(const float* const* in, int32_t lo, int32_t hi, int64_t i) {
  if (hi - lo == 1) return in[lo][i];
  const int32_t mid = lo + static_cast<int32_t>(std::bit_ceil(static_cast<uint32_t>(hi - lo)) / 2);
  return sum_tree(in, lo, mid, i) + sum_tree(in, mid, hi, i);
}

int32_t first_rank(const cpu_collective& c, int64_t count, int32_t world, int64_t i) {
  if (c.kind == order::ring) return ring_first_rank(count, world, i);
  return fixed_order_first_rank(c.planted == defect::X13, count, world, i);
}

sc_status run(void* context, const sc_collective_problem* p, char* error, size_t size) {
  sc_status status = SC_OK;
  if (refused(p, error, size, &status)) return status;
  const auto& c = *static_cast<const cpu_collective*>(context);
  const auto* const* in = reinterpret_cast<const float* const*>(p->inputs);
  const int32_t world = p->world_size;
  // Every rank reads the one result: an all-reduce's ranks must agree bit for bit.
  auto* out0 = static_cast<float*>(p->outputs[0]);
  for (int64_t i = 0; i < p->count; ++i)
    out0[i] = c.kind == order::tree ? sum_tree(in, 0, world, i)
                                    : sum_from(in, world, i, first_rank(c, p->count, world, i));
  for (int32_t r = 1; r < world; ++r)
    std::copy_n(out0, p->count, static_cast<float*>(p->outputs[r]));
  return SC_OK;
}

sc_collective describe(const char* name, const char* description, uint32_t invariants,
                       cpu_collective* context) {
  return host_f32_sum(name, invariants, kCpuMaxWorldSize, run, context, description);
}

}  // namespace

const std::vector<const sc_collective*>& cpu_collectives() {
  constexpr uint32_t kBoth = SC_INVARIANT_SIZE | SC_INVARIANT_RUN;
  static cpu_collective fixed{order::rank, defect::none}, ring{order::ring, defect::none},
      tree{order::tree, defect::none}, x13{order::rank, defect::X13};
  static const sc_collective table[] = {
      describe("cpu.allreduce.fixed_order", "every element summed in rank order 0..w-1", kBoth,
               &fixed),
      describe("cpu.allreduce.ring", "NCCL's ring: chunk c summed from rank c, chunks follow count",
               SC_INVARIANT_RUN, &ring),
      describe("cpu.allreduce.tree", "every element summed by the balanced tree over ranks",
               kBoth | SC_INVARIANT_TREE, &tree),
      describe("cpu.allreduce.fixed_order:X13",
               "X13 size-chunked-order: a ring's chunked order from 4,096 elements up", kBoth,
               &x13),
  };
  static const std::vector<const sc_collective*> all{&table[0], &table[1], &table[2], &table[3]};
  return all;
}

}  // namespace samplecheck::collective
