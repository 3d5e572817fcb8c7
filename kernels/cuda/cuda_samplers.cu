// The CUDA subjects' descriptors: static data, no GPU touched until a first call.
#include <deque>
#include <string>

#include "kernels/cuda/cuda_samplers.h"
#include "kernels/cuda/launch.h"

namespace samplecheck {
namespace {

using cuda::algorithm;

struct subject_spec {
  const char* name;
  const char* description;
  algorithm kind;
  int32_t input_kind;
  uint32_t filters;
  int32_t filter_order;
  int32_t tie_policy;
  uint64_t philox_outputs_per_call;
  bool deterministic_scan;
};

constexpr uint32_t kFilters = SC_FILTER_TOP_K | SC_FILTER_TOP_P | SC_FILTER_MIN_P;
constexpr uint64_t kRounds = cuda::kDualPivotRoundCap;

const subject_spec kSubjects[] = {
    {"cuda.multinomial", "inverse CDF, one block per row, tile scan with early exit",
     algorithm::multinomial, SC_INPUT_PROBS, 0, SC_ORDER_TOP_K_FIRST, SC_TIE_LOWEST_INDEX, 1,
     false},
    {"cuda.multinomial_split",
     "inverse CDF, a row split over blocks, last block searches the crossing chunk",
     algorithm::multinomial_split, SC_INPUT_PROBS, 0, SC_ORDER_TOP_K_FIRST, SC_TIE_LOWEST_INDEX, 1,
     false},
    {"cuda.gumbel_probs",
     "SGLang v0.5.20: argmax p / Exp(1), q clamped to FLT_MIN; token i uses output offset + i",
     algorithm::gumbel_probs, SC_INPUT_PROBS, 0, SC_ORDER_TOP_K_FIRST, SC_TIE_LOWEST_INDEX,
     cuda::kGumbelOutputsPerCall, false},
    {"cuda.gumbel_logits", "argmax z / T + Gumbel; token i uses output offset + i",
     algorithm::gumbel_logits, SC_INPUT_LOGITS, SC_FILTER_TEMPERATURE, SC_ORDER_TOP_K_FIRST,
     SC_TIE_LOWEST_INDEX, cuda::kGumbelOutputsPerCall, false},
    {"cuda.sort_filter",
     "segmented radix sort + scan; top-k, top-p (after top-k), min-p; lowest-index ties",
     algorithm::sort_filter, SC_INPUT_PROBS, kFilters, SC_ORDER_TOP_K_FIRST, SC_TIE_LOWEST_INDEX, 1,
     false},
    {"cuda.dual_pivot", "FlashInfer sorting-free dual-pivot rejection, joint top-k / top-p / min-p",
     algorithm::dual_pivot, SC_INPUT_PROBS, kFilters, SC_ORDER_JOINT, SC_TIE_KEEP_TIES, kRounds,
     false},
    {"cuda.dual_pivot_cluster",
     "cuda.dual_pivot's rule with a row spread over a thread-block cluster of up to 16 SMs, held "
     "in registers",
     algorithm::dual_pivot_cluster, SC_INPUT_PROBS, kFilters, SC_ORDER_JOINT, SC_TIE_KEEP_TIES,
     kRounds, false},
    {"cuda.dual_pivot_deterministic",
     "cuda.dual_pivot with the fixed-association (warp-width independent) scan",
     algorithm::dual_pivot, SC_INPUT_PROBS, kFilters, SC_ORDER_JOINT, SC_TIE_KEEP_TIES, kRounds,
     true},
    {"cuda.dual_pivot_topk_first", "top_k_renorm_probs, then dual pivot with top-p / min-p",
     algorithm::dual_pivot_topk_first, SC_INPUT_PROBS, kFilters, SC_ORDER_TOP_K_FIRST,
     SC_TIE_KEEP_TIES, kRounds, false},
    {"cuda.dual_pivot_logits",
     "top_k_mask_logits, softmax(z / T), then dual pivot with top-p / min-p",
     algorithm::dual_pivot_logits, SC_INPUT_LOGITS, kFilters | SC_FILTER_TEMPERATURE,
     SC_ORDER_TOP_K_FIRST, SC_TIE_KEEP_TIES, kRounds, false},
};

// Each mutant is its host subject with one defect switched on.
const struct {
  const char* host;
  defect planted;
  const char* id;
} kMutants[] = {
    {"cuda.multinomial", defect::S01, "S01"},
    {"cuda.dual_pivot", defect::S01, "S01"},
    {"cuda.dual_pivot", defect::S02, "S02"},
    {"cuda.dual_pivot", defect::S03, "S03"},
    {"cuda.dual_pivot", defect::S04, "S04"},
    {"cuda.gumbel_probs", defect::S05, "S05"},
    {"cuda.gumbel_logits", defect::S05, "S05"},
    {"cuda.dual_pivot", defect::S08, "S08"},
    {"cuda.dual_pivot", defect::S09, "S09"},
    {"cuda.sort_filter", defect::S09, "S09"},
    {"cuda.dual_pivot", defect::S10, "S10"},
    {"cuda.dual_pivot", defect::S14, "S14"},
    {"cuda.dual_pivot_topk_first", defect::S16, "S16"},
    {"cuda.gumbel_logits", defect::S19, "S19"},
};

struct subject {
  std::string name;
  cuda::subject_config config;
  cuda::workspace scratch;
  sc_sampler descriptor{};
};

sc_status sample(void* context, const sc_sample_batch* batch, char* error, size_t error_size) {
  auto* s = static_cast<subject*>(context);
  return cuda::run_subject(s->descriptor, s->config, s->scratch, batch, error, error_size);
}

void add(std::deque<subject>& store, const subject_spec& spec, defect planted, const char* id) {
  subject& s = store.emplace_back();
  s.name = id ? std::string(spec.name) + ":" + id : spec.name;
  s.config = cuda::subject_config{spec.kind, planted, spec.deterministic_scan};
  s.descriptor = sc_sampler{
      {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
      s.name.c_str(),
      spec.description,
      SC_MEMORY_CUDA,
      spec.input_kind,
      SC_DTYPE_BIT(SC_DTYPE_F32) | SC_DTYPE_BIT(SC_DTYPE_BF16) | SC_DTYPE_BIT(SC_DTYPE_F16),
      spec.filters,
      spec.filter_order,
      spec.tie_policy,
      spec.philox_outputs_per_call,
      0,
      &s,
      &sample};
}

}  // namespace

const std::vector<const sc_sampler*>& cuda_samplers() {
  static const std::vector<const sc_sampler*> list = [] {
    static std::deque<subject> store;  // stable addresses: descriptors point into it
    for (const auto& spec : kSubjects) add(store, spec, defect::none, nullptr);
    for (const auto& m : kMutants)
      for (const auto& spec : kSubjects)
        if (std::string(spec.name) == m.host) add(store, spec, m.planted, m.id);
    std::vector<const sc_sampler*> out;
    for (const auto& s : store) out.push_back(&s.descriptor);
    return out;
  }();
  return list;
}

}  // namespace samplecheck
