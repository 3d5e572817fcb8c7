// The CPU subjects as sc_sampler records: what each declares, and which host carries
// which planted defect.
#include <deque>
#include <string>

#include "kernels/cpu/cpu_samplers.h"
#include "kernels/cpu/subjects.h"
#include "kernels/mutant_catalog.h"

namespace samplecheck {
namespace {

using cpu::subject_spec;

constexpr uint32_t kAllFilters = SC_FILTER_TOP_K | SC_FILTER_TOP_P | SC_FILTER_MIN_P;
constexpr uint64_t kGumbelOutputs = static_cast<uint64_t>(cpu::kGumbelMaxVocab);

struct subject_entry {
  subject_spec spec;
  const char* description;
  cpu::sampler_factory make;
  int32_t uniform_rule = SC_RULE_UNDECLARED;  // SC_RULE_*: only where the code is exactly it
};

// Filter order and tie policy of the unfiltered subjects are never consulted; they
// carry the values of the rule they implement.
const subject_entry kSubjects[] = {
    {{"cpu.multinomial", SC_INPUT_PROBS, 0, SC_ORDER_TOP_K_FIRST, SC_TIE_LOWEST_INDEX, 2, 0},
     "inverse CDF over the probabilities, u from 53 bits (torch.multinomial, SGLang v0.5.19)",
     cpu::make_multinomial,
     SC_RULE_INVERSE_CDF_U53},
    {{"cpu.gumbel_probs", SC_INPUT_PROBS, 0, SC_ORDER_TOP_K_FIRST, SC_TIE_LOWEST_INDEX,
      kGumbelOutputs, cpu::kGumbelMaxVocab},
     "argmax p / max(Exp(1), FLT_MIN), Exp(1) = -log1p(-v) from stream output offset+i (SGLang "
     "v0.5.20)",
     cpu::make_gumbel_probs},
    {{"cpu.gumbel_logits", SC_INPUT_LOGITS, SC_FILTER_TEMPERATURE, SC_ORDER_TOP_K_FIRST,
      SC_TIE_LOWEST_INDEX, kGumbelOutputs, cpu::kGumbelMaxVocab},
     "argmax (z - max z) / T - log(Exp(1)), the same Exp(1) as cpu.gumbel_probs; T = 0 greedy",
     cpu::make_gumbel_logits},
    {{"cpu.sort_filter", SC_INPUT_PROBS, kAllFilters, SC_ORDER_TOP_K_FIRST, SC_TIE_LOWEST_INDEX, 2,
      0},
     "stable sort, top-k, top-p on the top-k-renormalised float cumsum, min-p, inverse CDF",
     cpu::make_sort_filter},
    {{"cpu.dual_pivot", SC_INPUT_PROBS, kAllFilters, SC_ORDER_JOINT, SC_TIE_KEEP_TIES,
      cpu::kDualPivotRoundCap, 0},
     "FlashInfer's sorting-free dual-pivot rejection, joint top-k/top-p/min-p, guarded scan",
     cpu::make_dual_pivot},
    {{"cpu.dual_pivot_topk_first", SC_INPUT_PROBS, kAllFilters, SC_ORDER_TOP_K_FIRST,
      SC_TIE_KEEP_TIES, cpu::kDualPivotRoundCap, 0},
     "top_k_renorm_probs then dual-pivot top-p/min-p sampling on the renormalised row",
     cpu::make_dual_pivot_topk_first},
};

// Which correct subject hosts each sampler mutant. FlashInfer's defects sit on the
// FlashInfer-style subject, SGLang's on SGLang's rules.
const struct {
  const char* host;
  const char* id;
  defect planted;
} kMutants[] = {
    {"cpu.dual_pivot", "S01", defect::S01},    {"cpu.dual_pivot", "S02", defect::S02},
    {"cpu.dual_pivot", "S03", defect::S03},    {"cpu.multinomial", "S04", defect::S04},
    {"cpu.gumbel_probs", "S05", defect::S05},  {"cpu.sort_filter", "S06", defect::S06},
    {"cpu.sort_filter", "S07", defect::S07},   {"cpu.multinomial", "S08", defect::S08},
    {"cpu.dual_pivot", "S09", defect::S09},    {"cpu.multinomial", "S10", defect::S10},
    {"cpu.sort_filter", "S11", defect::S11},   {"cpu.dual_pivot_topk_first", "S12", defect::S12},
    {"cpu.dual_pivot", "S13", defect::S13},    {"cpu.dual_pivot", "S14", defect::S14},
    {"cpu.gumbel_logits", "S15", defect::S15}, {"cpu.multinomial", "X01", defect::X01},
    {"cpu.dual_pivot", "X02", defect::X02},    {"cpu.dual_pivot_topk_first", "S16", defect::S16},
    {"cpu.dual_pivot", "S17", defect::S17},    {"cpu.sort_filter", "S18", defect::S18},
    {"cpu.gumbel_logits", "S19", defect::S19}, {"cpu.dual_pivot", "X03", defect::X03},
    {"cpu.dual_pivot", "X04", defect::X04},    {"cpu.gumbel_logits", "X05", defect::X05},
    {"cpu.multinomial", "X06", defect::X06},   {"cpu.multinomial", "X07", defect::X07},
    {"cpu.multinomial", "X08", defect::X08},   {"cpu.multinomial", "X09", defect::X09},
    {"cpu.gumbel_logits", "X10", defect::X10}, {"cpu.sort_filter", "S20", defect::S20},
    {"cpu.sort_filter", "S21", defect::S21},   {"cpu.sort_filter", "S22", defect::S22},
    {"cpu.gumbel_logits", "S23", defect::S23}, {"cpu.sort_filter", "S24", defect::S24},
    {"cpu.sort_filter", "X11", defect::X11},   {"cpu.sort_filter", "X12", defect::X12},
};

// X03's declaration: the 2 outputs per call of the inverse-CDF samplers the rejection
// sampler was ported from. A row that needs more than two rounds reads past it, so the
// next call (at offset + 2) replays this call's later rounds' uniforms.
constexpr uint64_t kX03DeclaredOutputs = 2;

sc_status sample_entry(void* context, const sc_sample_batch* batch, char* error,
                       size_t error_size) {
  return cpu::run_batch(*static_cast<const cpu::subject_context*>(context), batch, error,
                        error_size);
}

struct registry {
  std::deque<std::string> names;  // deques: the records point into them and must not move
  std::deque<cpu::subject_context> contexts;
  std::deque<sc_sampler> samplers;
  std::vector<const sc_sampler*> all;

  void add(const subject_entry& entry, std::string name, const char* description, defect planted) {
    names.push_back(std::move(name));
    cpu::subject_spec spec = entry.spec;
    spec.name = names.back().c_str();
    if (planted == defect::X03) spec.philox_outputs_per_call = kX03DeclaredOutputs;
    contexts.push_back({spec, planted, entry.make});
    sc_sampler s{};
    s.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR};
    s.name = spec.name;
    s.description = description;
    s.memory_space = SC_MEMORY_HOST;
    s.input_kind = spec.input_kind;
    s.input_dtypes =
        SC_DTYPE_BIT(SC_DTYPE_F32) | SC_DTYPE_BIT(SC_DTYPE_BF16) | SC_DTYPE_BIT(SC_DTYPE_F16);
    s.filters = spec.filters;
    s.filter_order = spec.filter_order;
    s.tie_policy = spec.tie_policy;
    s.philox_outputs_per_call = spec.philox_outputs_per_call;
    s.flags = 0;
    s.uniform_rule = entry.uniform_rule;  // a mutant keeps its host's declaration
    s.context = &contexts.back();
    s.sample = sample_entry;
    samplers.push_back(s);
    all.push_back(&samplers.back());
  }

  registry() {
    for (const auto& entry : kSubjects)
      add(entry, entry.spec.name, entry.description, defect::none);
    for (const auto& m : kMutants) {
      const subject_entry* host = nullptr;
      for (const auto& entry : kSubjects)
        if (std::string(entry.spec.name) == m.host) host = &entry;
      // Catalog text is a string literal, so its data() is NUL-terminated.
      add(*host, std::string(m.host) + ":" + m.id, find_mutant(m.id)->defect.data(), m.planted);
    }
  }
};

}  // namespace

const std::vector<const sc_sampler*>& cpu_samplers() {
  static const registry instance;
  return instance.all;
}

}  // namespace samplecheck
