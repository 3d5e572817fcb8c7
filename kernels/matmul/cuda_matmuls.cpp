#include "kernels/matmul/cuda_matmuls.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <exception>
#include <iterator>
#include <string>

#include "kernels/matmul/cublas_control.h"
#include "kernels/matmul/matmul_abi.h"
#include "kernels/matmul/matmul_kernels.h"
#include "kernels/matmul/matmul_plan.h"
#include "kernels/matmul/mma_kernels.h"

namespace samplecheck::matmul {
namespace {

enum class kernel_kind { persistent, segmented, persistent_mma, segmented_mma, cublas };

struct cuda_subject {
  std::string name;
  kernel_kind kind;
  defect planted;
  // Split launches need fp32 partials, split mma launches also per-tile
  // arrival counters: [counter region | partials] in one allocation that only
  // grows, so timing runs after the first call allocate nothing.
  float* workspace = nullptr;
  size_t workspace_size = 0;
  // The counter region keeps its place and size until the allocation grows:
  // were the counters placed per call, one call's partials could land on the
  // counters of another call's tile count, and leave them non-zero.
  size_t counter_region = 0;
};

// What the ABI says of each kernel kind (indexed by kernel_kind): its description,
// its launch configurations and their names, and its batch thresholds (the
// tensor-core kernels' are below, the SIMT kernels' in matmul_abi.h).
struct kind_traits {
  const char* description;
  int32_t num_configs;
  const char* (*config_name)(void*, int32_t);
  const int64_t* thresholds;
  size_t num_thresholds;
};
const kind_traits& traits_of(kernel_kind kind);

// Room for `counter_bytes` of counters at the front and `partial_bytes` after
// the counter region. A new allocation has its counter region zeroed on
// `stream`, ahead of the launch that uses it (mma_kernels.h: counters are zero
// at launch, and each launch leaves them so).
sc_status ensure_workspace(cuda_subject& subject, size_t counter_bytes, size_t partial_bytes,
                           cudaStream_t stream, char* error, size_t error_size) {
  const size_t partial_room = subject.workspace_size - subject.counter_region;
  if (counter_bytes <= subject.counter_region && partial_bytes <= partial_room) return SC_OK;
  const size_t counters = std::max(counter_bytes, subject.counter_region);
  const size_t bytes = counters + std::max(partial_bytes, partial_room);
  if (subject.workspace != nullptr) cudaFree(subject.workspace);
  subject.workspace = nullptr;
  subject.workspace_size = subject.counter_region = 0;
  if (const cudaError_t e = cudaMalloc(&subject.workspace, bytes); e != cudaSuccess)
    return report_error(SC_ERR_DEVICE, error, error_size,
                        "%s: cudaMalloc of %zu workspace bytes: %s", subject.name.c_str(), bytes,
                        cudaGetErrorString(e));
  if (const cudaError_t e = cudaMemsetAsync(subject.workspace, 0, counters, stream);
      e != cudaSuccess)
    return report_error(SC_ERR_DEVICE, error, error_size, "%s: zeroing %zu counter bytes: %s",
                        subject.name.c_str(), counters, cudaGetErrorString(e));
  subject.workspace_size = bytes;
  subject.counter_region = counters;
  return SC_OK;
}

float* partials_of(const cuda_subject& subject) {
  return reinterpret_cast<float*>(reinterpret_cast<char*>(subject.workspace) +
                                  subject.counter_region);
}

// The tensor-core subjects: persistent_mma is one segment over K (the tensor-core
// counterpart of the persistent kernel), segmented_mma the 4-segment split-K of
// mma_kernels.h.
sc_status run_mma(cuda_subject& subject, const sc_matmul_problem& p, const device_problem& problem,
                  char* error, size_t error_size) {
  const bool segmented = subject.kind == kernel_kind::segmented_mma;
  const int32_t index = p.launch_config >= 0 ? p.launch_config
                        : segmented          ? segmented_mma_table_config(p.m, p.n)
                                             : persistent_mma_table_config(p.m, p.n);
  const mma_launch_config& config =
      segmented ? kSegmentedMmaConfigs[index] : kPersistentMmaConfigs[index];
  const reduction_plan plan =
      segmented ? segmented_mma_plan(p.k, config.split) : persistent_plan(p.k);
  const auto stream = static_cast<cudaStream_t>(p.stream);
  if (const sc_status s =
          ensure_workspace(subject, mma_counter_bytes(plan, config.tile, p.m, p.n),
                           mma_partial_bytes(plan, p.m, p.n), stream, error, error_size);
      s != SC_OK)
    return s;
  auto* counters = reinterpret_cast<uint32_t*>(subject.workspace);
  if (const int code =
          launch_mma_matmul(plan, config.tile, problem, counters, partials_of(subject), p.stream);
      code != 0)
    return report_error(SC_ERR_DEVICE, error, error_size, "%s: launch (%s): %s",
                        subject.name.c_str(), config.name, gpu_error_text(code));
  return SC_OK;
}

sc_status run_cuda(void* context, const sc_matmul_problem* p, char* error, size_t error_size) {
  auto& subject = *static_cast<cuda_subject*>(context);
  const int32_t num_configs = traits_of(subject.kind).num_configs;
  if (const sc_status s = validate_problem(subject.name.c_str(), p, num_configs, error, error_size);
      s != SC_OK)
    return s;
  try {
    if (subject.kind == kernel_kind::cublas) {
      const std::string message =
          run_cublas(p->a, p->weight, p->bias, p->out, p->m, p->n, p->k, p->stream);
      if (!message.empty())
        return report_error(SC_ERR_DEVICE, error, error_size, "%s: %s", subject.name.c_str(),
                            message.c_str());
      return SC_OK;
    }
    const device_problem problem{p->a, p->weight, p->bias, p->out, p->m, p->n, p->k};
    if (subject.kind == kernel_kind::persistent_mma || subject.kind == kernel_kind::segmented_mma)
      return run_mma(subject, *p, problem, error, error_size);
    reduction_plan plan;
    launch_config config;
    if (subject.kind == kernel_kind::persistent) {
      config = kPersistentConfigs[p->launch_config >= 0 ? p->launch_config
                                                        : persistent_table_config(p->m, p->n)];
      plan = persistent_plan(p->k);
    } else {
      config = kSegmentedConfigs[p->launch_config >= 0 ? p->launch_config
                                                       : segmented_table_config(p->m, p->n)];
      plan = segmented_plan(subject.planted, p->m, p->k, config.split, config.tile_m);
    }
    if (const sc_status s =
            ensure_workspace(subject, 0, workspace_bytes(plan, p->m, p->n),
                             static_cast<cudaStream_t>(p->stream), error, error_size);
        s != SC_OK)
      return s;
    if (const int code = launch_matmul(plan, config, problem, partials_of(subject), p->stream);
        code != 0)
      return report_error(SC_ERR_DEVICE, error, error_size, "%s: launch (%s): %s",
                          subject.name.c_str(), config.name, gpu_error_text(code));
  } catch (const std::exception& e) {
    return report_error(SC_ERR_INTERNAL, error, error_size, "%s: %s", subject.name.c_str(),
                        e.what());
  }
  return SC_OK;
}

// The tensor-core kernels' batch_thresholds (the SIMT kernels' are in
// matmul_abi.h), over the same N: where mma_kernels.h's launch tables change their
// choice with M.
//   persistent_mma: N > 8192 at 17, 65, 257; N = 6144 at 33, 65, 257; N <= 4096 at
//     65, 257.
//   segmented_mma: N > 8192 at 33, 257; N = 6144 at 17, 65, 257; N <= 4096 at 33,
//     65, 257.
// cuda.cublas declares none: cuBLAS's heuristics are its own, and unknown to us.
constexpr int64_t kPersistentMmaThresholds[] = {17, 33, 65, 257};
constexpr int64_t kSegmentedMmaThresholds[] = {17, 33, 65, 257};

const kind_traits& traits_of(kernel_kind kind) {
  static constexpr kind_traits table[] = {
      {"persistent SIMT kernel: one K loop per output tile, fp32 fma in a fixed order",
       kNumPersistentConfigs, persistent_config_name, kPersistentThresholds,
       std::size(kPersistentThresholds)},
      {"segmented split-K kernel: 4 fixed K segments summed in order", kNumSegmentedConfigs,
       segmented_config_name, kSegmentedThresholds, std::size(kSegmentedThresholds)},
      {"persistent tensor-core kernel: mma.sync bf16 k16 steps over all of K in increasing k",
       kNumPersistentMmaConfigs, persistent_mma_config_name, kPersistentMmaThresholds,
       std::size(kPersistentMmaThresholds)},
      {"segmented split-K tensor-core kernel: 4 fixed K segments of mma.sync k16 steps, "
       "summed in order",
       kNumSegmentedMmaConfigs, segmented_mma_config_name, kSegmentedMmaThresholds,
       std::size(kSegmentedMmaThresholds)},
      // cuBLAS: no launch configurations, no thresholds (its heuristics are its own).
      {"cublasGemmEx bf16, fp32 compute, default heuristics (batch-variant control)", 0, nullptr,
       nullptr, 0}};
  static_assert(std::size(table) == static_cast<size_t>(kernel_kind::cublas) + 1,
                "one row per kernel_kind, in its order");
  return table[static_cast<int>(kind)];
}

struct cuda_registry {
  std::vector<cuda_subject> subjects;
  std::vector<sc_matmul> matmuls;
  std::vector<const sc_matmul*> pointers;

  cuda_registry() {
    subjects.push_back({"cuda.persistent", kernel_kind::persistent, defect::none});
    subjects.push_back({"cuda.segmented", kernel_kind::segmented, defect::none});
    subjects.push_back({"cuda.persistent_mma", kernel_kind::persistent_mma, defect::none});
    subjects.push_back({"cuda.segmented_mma", kernel_kind::segmented_mma, defect::none});
    subjects.push_back({"cuda.cublas", kernel_kind::cublas, defect::none});
    for (const planted_defect& d : kPlantedDefects)
      subjects.push_back(
          {std::string("cuda.segmented:") + d.id, kernel_kind::segmented, d.planted});
    matmuls.reserve(subjects.size());
    for (auto& s : subjects) {
      sc_matmul m{};
      m.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
      m.name = s.name.c_str();
      m.memory_space = SC_MEMORY_CUDA;
      m.context = &s;
      m.run = run_cuda;
      const kind_traits& t = traits_of(s.kind);
      // Only the segmented kernel has mutants (kPlantedDefects).
      m.description = s.planted == defect::none ? t.description
                                                : "segmented split-K kernel with a planted defect";
      m.num_launch_configs = t.num_configs;
      m.launch_config_name = t.config_name;
      m.num_batch_thresholds = static_cast<int32_t>(t.num_thresholds);
      m.batch_thresholds = t.thresholds;
      matmuls.push_back(m);
    }
    for (const auto& m : matmuls) pointers.push_back(&m);
  }
};

}  // namespace

const std::vector<const sc_matmul*>& cuda_matmuls() {
  static cuda_registry registry;
  return registry.pointers;
}

}  // namespace samplecheck::matmul
