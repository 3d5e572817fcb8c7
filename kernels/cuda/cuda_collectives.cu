// The CUDA fixed-order all-reduce and its X13 mutant (cuda_collectives.h). One kernel body:
// a thread owns an element, reads it from every rank in one order and writes the sum to every
// rank, so no element's bits depend on the launch, the count or its neighbours (unless X13).
#include <cstdio>

#include "kernels/collective/ring_order.h"
#include "kernels/cuda/cuda_collectives.h"
#include "kernels/defect.h"
#include "kernels/gpu_compat.h"

namespace samplecheck {
namespace {

// The rank pointers by value: a kernel argument, so a captured graph holds them too.
struct rank_pointers {
  const float* in[kCudaCollectiveMaxWorldSize];
  float* out[kCudaCollectiveMaxWorldSize];
};

constexpr int kThreads = 256;
// Enough blocks to fill an H200 several times over; a longer message loops (grid stride).
constexpr int64_t kMaxBlocks = 4096;

__global__ void fixed_order_sum(rank_pointers p, int32_t world, int64_t count, bool chunked) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const int32_t first = collective::fixed_order_first_rank(chunked, count, world, i);
    float acc = p.in[first][i];
    for (int32_t s = 1; s < world; ++s) {
      const int32_t r = first + s < world ? first + s : first + s - world;
      acc += p.in[r][i];
    }
    for (int32_t r = 0; r < world; ++r) p.out[r][i] = acc;
  }
}

// The refusals the ABI asks of every collective, naming the field (the host makes the same
// checks before it calls: suites/harness/collective_call.cpp).
const char* refusal(const sc_collective_problem* p, sc_status* status) {
  *status = SC_ERR_INVALID_ARGUMENT;
  if (p == nullptr) return "problem is NULL";
  if (p->abi_version.major != SC_ABI_VERSION_MAJOR)
    return "field abi_version.major is not this collective's";
  if (p->world_size < 1 || p->world_size > kCudaCollectiveMaxWorldSize)
    return "field world_size is outside [1, max_world_size]";
  if (p->count < 1) return "field count is below 1";
  if (p->inputs == nullptr || p->outputs == nullptr) return "field inputs or outputs is NULL";
  if (p->flags != 0) return "field flags is not 0";
  if (p->dtype != SC_DTYPE_F32) {
    *status = SC_ERR_UNSUPPORTED;
    return "field dtype is not f32, the one dtype declared";
  }
  for (int32_t r = 0; r < p->world_size; ++r)
    if (p->inputs[r] == nullptr || p->outputs[r] == nullptr)
      return "field inputs[r] or outputs[r] is NULL";
  return nullptr;
}

sc_status failed(gpuError_t e, const char* what, char* error, size_t size) {
  if (error != nullptr && size > 0)
    std::snprintf(error, size, "%s: %s", what, gpuGetErrorString(e));
  return SC_ERR_DEVICE;
}

sc_status run(void* context, const sc_collective_problem* p, char* error, size_t size) {
  sc_status status = SC_OK;
  if (const char* why = refusal(p, &status); why != nullptr) {
    if (error != nullptr && size > 0) std::snprintf(error, size, "%s", why);
    return status;
  }
  const bool chunked = *static_cast<const defect*>(context) == defect::X13;
  rank_pointers ranks{};
  for (int32_t r = 0; r < p->world_size; ++r) {
    ranks.in[r] = static_cast<const float*>(p->inputs[r]);
    ranks.out[r] = static_cast<float*>(p->outputs[r]);
  }
  const int64_t blocks = (p->count + kThreads - 1) / kThreads;
  const auto stream = static_cast<gpuStream_t>(p->stream);
  fixed_order_sum<<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0,
                    stream>>>(ranks, p->world_size, p->count, chunked);
  if (const gpuError_t e = gpuGetLastError(); e != gpuSuccess)
    return failed(e, "fixed_order_sum launch", error, size);
  if (const gpuError_t e = gpuStreamSynchronize(stream); e != gpuSuccess)
    return failed(e, "fixed_order_sum", error, size);
  return SC_OK;
}

sc_collective describe(const char* name, const char* description, defect* planted) {
  return {.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
          .name = name,
          .description = description,
          .memory_space = SC_MEMORY_CUDA,
          .dtypes = SC_DTYPE_BIT(SC_DTYPE_F32),
          .reduce_op = SC_REDUCE_SUM,
          .max_world_size = kCudaCollectiveMaxWorldSize,
          .invariants = SC_INVARIANT_SIZE | SC_INVARIANT_RUN,
          .reserved0 = 0,
          .flags = 0,
          .context = planted,
          .run = run};
}

}  // namespace

const std::vector<const sc_collective*>& cuda_collectives() {
  static defect fixed = defect::none, x13 = defect::X13;
  static const sc_collective table[] = {
      describe("cuda.allreduce.fixed_order",
               "one kernel sums every element in rank order 0..w-1 over w buffers on one GPU",
               &fixed),
      describe("cuda.allreduce.fixed_order:X13",
               "X13 size-chunked-order: a ring's chunked order from 4,096 elements up", &x13),
  };
  static const std::vector<const sc_collective*> all{&table[0], &table[1]};
  return all;
}

}  // namespace samplecheck
