#include "kernels/matmul/cpu_matmuls.h"

#include <atomic>
#include <exception>
#include <string>

#include "kernels/matmul/cpu_emulation.h"
#include "kernels/matmul/matmul_abi.h"
#include "kernels/matmul/matmul_plan.h"

namespace samplecheck::matmul {
namespace {

enum class kernel_kind { persistent, segmented };

struct cpu_subject {
  std::string name;
  kernel_kind kind;
  defect planted;
};

// Each call of an atomic-reduce mutant sees a new arrival order, as a race would.
std::atomic<uint64_t> arrival_counter{0x9e3779b97f4a7c15ull};

sc_status run_cpu(void* context, const sc_matmul_problem* p, char* error, size_t error_size) {
  const auto& subject = *static_cast<const cpu_subject*>(context);
  const int32_t num_configs =
      subject.kind == kernel_kind::persistent ? kNumPersistentConfigs : kNumSegmentedConfigs;
  if (const sc_status s = validate_problem(subject.name.c_str(), p, num_configs, error, error_size);
      s != SC_OK)
    return s;
  try {
    reduction_plan plan;
    if (subject.kind == kernel_kind::persistent) {
      plan = persistent_plan(p->k);
    } else {
      const int32_t config =
          p->launch_config >= 0 ? p->launch_config : segmented_table_config(p->m, p->n);
      plan = segmented_plan(subject.planted, p->m, p->k, kSegmentedConfigs[config].split,
                            kSegmentedConfigs[config].tile_m);
    }
    const uint64_t arrival = arrival_counter.fetch_add(0x9e3779b97f4a7c15ull);
    emulate_matmul(plan, p->m, p->n, p->k, p->a, p->weight, p->bias, p->out, arrival);
  } catch (const std::exception& e) {
    return report_error(SC_ERR_INTERNAL, error, error_size, "%s: %s", subject.name.c_str(),
                        e.what());
  }
  return SC_OK;
}

struct cpu_registry {
  std::vector<cpu_subject> subjects;
  std::vector<sc_matmul> matmuls;
  std::vector<const sc_matmul*> pointers;

  cpu_registry() {
    subjects.push_back({"cpu.persistent", kernel_kind::persistent, defect::none});
    subjects.push_back({"cpu.segmented", kernel_kind::segmented, defect::none});
    for (const planted_defect& d : kPlantedDefects)
      subjects.push_back({std::string("cpu.segmented:") + d.id, kernel_kind::segmented, d.planted});
    matmuls.reserve(subjects.size());
    for (auto& s : subjects) {
      const bool persistent = s.kind == kernel_kind::persistent;
      sc_matmul m{};
      m.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
      m.name = s.name.c_str();
      m.description =
          persistent ? "CPU emulation of the persistent kernel: one K loop per output"
                     : (s.planted == defect::none
                            ? "CPU emulation of the segmented split-K kernel (4 fixed segments)"
                            : "CPU emulation of the segmented kernel with a planted defect");
      m.memory_space = SC_MEMORY_HOST;
      m.num_launch_configs = persistent ? kNumPersistentConfigs : kNumSegmentedConfigs;
      m.flags = 0;
      m.context = &s;
      m.run = run_cpu;
      m.launch_config_name = persistent ? persistent_config_name : segmented_config_name;
      // The emulations declare the table of the kernel they emulate (cpu.persistent
      // computes no choice: every tile gives the same bits).
      if (persistent)
        declare_thresholds(m, kPersistentThresholds);
      else
        declare_thresholds(m, kSegmentedThresholds);
      matmuls.push_back(m);
    }
    for (const auto& m : matmuls) pointers.push_back(&m);
  }
};

}  // namespace

const std::vector<const sc_matmul*>& cpu_matmuls() {
  static const cpu_registry registry;
  return registry.pointers;
}

}  // namespace samplecheck::matmul
