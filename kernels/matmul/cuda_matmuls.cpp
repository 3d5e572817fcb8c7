#include "kernels/matmul/cuda_matmuls.h"

#include <cuda_runtime.h>

#include <exception>
#include <string>

#include "kernels/matmul/cublas_control.h"
#include "kernels/matmul/matmul_abi.h"
#include "kernels/matmul/matmul_kernels.h"
#include "kernels/matmul/matmul_plan.h"

namespace samplecheck::matmul {
namespace {

enum class kernel_kind { persistent, segmented, cublas };

struct cuda_subject {
  std::string name;
  kernel_kind kind;
  defect planted;
  // Split launches need fp32 partials; the buffer only grows, so timing runs
  // after the first call allocate nothing.
  float* workspace = nullptr;
  size_t workspace_size = 0;
};

sc_status ensure_workspace(cuda_subject& subject, size_t bytes, char* error, size_t error_size) {
  if (bytes <= subject.workspace_size) return SC_OK;
  if (subject.workspace != nullptr) cudaFree(subject.workspace);
  subject.workspace = nullptr;
  subject.workspace_size = 0;
  if (const cudaError_t e = cudaMalloc(&subject.workspace, bytes); e != cudaSuccess)
    return report_error(SC_ERR_DEVICE, error, error_size, "%s: cudaMalloc of %zu workspace bytes: %s", subject.name.c_str(),
                bytes, cudaGetErrorString(e));
  subject.workspace_size = bytes;
  return SC_OK;
}

sc_status run_cuda(void* context, const sc_matmul_problem* p, char* error, size_t error_size) {
  auto& subject = *static_cast<cuda_subject*>(context);
  const int32_t num_configs = subject.kind == kernel_kind::persistent  ? kNumPersistentConfigs
                              : subject.kind == kernel_kind::segmented ? kNumSegmentedConfigs
                                                                       : 0;
  if (const sc_status s = validate_problem(subject.name.c_str(), p, num_configs, error, error_size); s != SC_OK)
    return s;
  try {
    if (subject.kind == kernel_kind::cublas) {
      const std::string message = run_cublas(p->a, p->weight, p->bias, p->out, p->m, p->n, p->k, p->stream);
      if (!message.empty())
        return report_error(SC_ERR_DEVICE, error, error_size, "%s: %s", subject.name.c_str(), message.c_str());
      return SC_OK;
    }
    reduction_plan plan;
    launch_config config;
    if (subject.kind == kernel_kind::persistent) {
      config = kPersistentConfigs[p->launch_config >= 0 ? p->launch_config : persistent_table_config(p->m, p->n)];
      plan = persistent_plan(p->k);
    } else {
      config = kSegmentedConfigs[p->launch_config >= 0 ? p->launch_config : segmented_table_config(p->m, p->n)];
      plan = segmented_plan(subject.planted, p->m, p->k, config.split);
    }
    if (const sc_status s = ensure_workspace(subject, workspace_bytes(plan, p->m, p->n), error, error_size);
        s != SC_OK)
      return s;
    const device_problem problem{p->a, p->weight, p->bias, p->out, p->m, p->n, p->k};
    if (const int code = launch_matmul(plan, config, problem, subject.workspace, p->stream); code != 0)
      return report_error(SC_ERR_DEVICE, error, error_size, "%s: launch (%s): %s", subject.name.c_str(), config.name,
                  gpu_error_text(code));
  } catch (const std::exception& e) {
    return report_error(SC_ERR_INTERNAL, error, error_size, "%s: %s", subject.name.c_str(), e.what());
  }
  return SC_OK;
}


struct cuda_registry {
  std::vector<cuda_subject> subjects;
  std::vector<sc_matmul> matmuls;
  std::vector<const sc_matmul*> pointers;

  cuda_registry() {
    subjects.push_back({"cuda.persistent", kernel_kind::persistent, defect::none});
    subjects.push_back({"cuda.segmented", kernel_kind::segmented, defect::none});
    subjects.push_back({"cuda.cublas", kernel_kind::cublas, defect::none});
    const char* ids[] = {"B01", "B02", "B03", "B04", "B05", "B06"};
    for (int i = 0; i < 6; ++i)
      subjects.push_back({std::string("cuda.segmented:") + ids[i], kernel_kind::segmented, static_cast<defect>(i + 1)});
    matmuls.reserve(subjects.size());
    for (auto& s : subjects) {
      sc_matmul m{};
      m.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
      m.name = s.name.c_str();
      m.memory_space = SC_MEMORY_CUDA;
      m.context = &s;
      m.run = run_cuda;
      if (s.kind == kernel_kind::persistent) {
        m.description = "persistent SIMT kernel: one K loop per output tile, fp32 fma in a fixed order";
        m.num_launch_configs = kNumPersistentConfigs;
        m.launch_config_name = persistent_config_name;
      } else if (s.kind == kernel_kind::segmented) {
        m.description = s.planted == defect::none ? "segmented split-K kernel: 4 fixed K segments summed in order"
                                                  : "segmented split-K kernel with a planted defect";
        m.num_launch_configs = kNumSegmentedConfigs;
        m.launch_config_name = segmented_config_name;
      } else {
        m.description = "cublasGemmEx bf16, fp32 compute, default heuristics (batch-variant control)";
        m.num_launch_configs = 0;
        m.launch_config_name = nullptr;
      }
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
