/* The descriptors: llama.cpp's default sampler chain and its single samplers. Every
 * declared contract is what llama.cpp's code does; README.md gives the source lines.
 *  - input: logits, f32 (llama_token_data.logit is a float).
 *  - filter_order top-k first: each stage works on the array the previous one left, and
 *    top-p's softmax is over the tokens top-k kept (llama_sampler_top_p_apply).
 *  - tie_policy lowest_index: top-k keeps exactly k tokens (llama_sampler_top_k_impl
 *    sets size = k), so never every token tied with the k-th. Which of the tied it keeps
 *    is std::partial_sort's choice, which the ABI cannot state (README.md, "Ties").
 *  - rng_policy per_request: each output's dist is seeded from its request alone
 *    (stream_seed.c); one call draws one double, two 32-bit words of that mt19937.
 *  - degenerate_rows undefined: llama.cpp's API has no validity output and says nothing
 *    of NaN or +Inf logits.
 *  - inputs preserved: the rows are copied into llama.cpp's array, never written. */
#include <stdlib.h>
#include <string.h>

#include "llamacpp_subjects.h"

#define LC_ABI \
  { SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR }
#define LC_PHILOX_OUTPUTS_PER_CALL 2

/* whole_chain 0: the stages once per input row and call (draw.c). */
static lc_subject subjects[] = {
    {LC_CHAIN_DEFAULT, "llamacpp.default_chain",
     SC_FILTER_TOP_K | SC_FILTER_TOP_P | SC_FILTER_MIN_P, 0},
    {LC_CHAIN_DIST, "llamacpp.dist", 0u, 0},
    {LC_CHAIN_TOP_K, "llamacpp.top_k", SC_FILTER_TOP_K, 0},
    {LC_CHAIN_TOP_P, "llamacpp.top_p", SC_FILTER_TOP_P, 0},
    {LC_CHAIN_MIN_P, "llamacpp.min_p", SC_FILTER_MIN_P, 0},
    {LC_CHAIN_TEMP, "llamacpp.temperature", SC_FILTER_TEMPERATURE, 0},
};
#define LC_NUM_SUBJECTS (sizeof subjects / sizeof subjects[0])

static const char* const descriptions[LC_NUM_SUBJECTS] = {
    "common_sampler_init's default chain (temperature 1): penalties, dry, top-n-sigma, "
    "typical, xtc at their no-op defaults; top-k, top-p, min-p; dist",
    "dist alone: softmax, then the inverse CDF on one mt19937 double",
    "top-k, then dist",
    "top-p (min_keep 0, as common passes it), then dist",
    "min-p (min_keep 0), then dist",
    "temperature (temp_ext, dynatemp range 0, as common builds it), then dist",
};

static sc_sampler samplers[LC_NUM_SUBJECTS];

static void describe(size_t i) {
  const lc_subject* s = &subjects[i];
  samplers[i] = (sc_sampler){
      .abi_version = LC_ABI,
      .name = s->name,
      .description = descriptions[i],
      .memory_space = SC_MEMORY_HOST,
      .input_kind = SC_INPUT_LOGITS,
      .input_dtypes = SC_DTYPE_BIT(SC_DTYPE_F32),
      .filters = s->filters,
      .filter_order = SC_ORDER_TOP_K_FIRST,
      .tie_policy = SC_TIE_LOWEST_INDEX,
      .philox_outputs_per_call = LC_PHILOX_OUTPUTS_PER_CALL,
      .context = &subjects[i],
      .sample = lc_sample,
      .rng_policy = SC_RNG_PER_REQUEST,
      .parameter_indexing = SC_PARAMS_BY_INPUT_ROW,
      .degenerate_rows = SC_DEGENERATE_UNDEFINED,
      .probs_normalisation = SC_PROBS_RENORMALISE,
      .uniform_rule = SC_RULE_UNDECLARED,
      .inputs = SC_INPUTS_PRESERVED,
  };
}

static sc_plugin plugin = {
    .abi_version = LC_ABI,
    .num_samplers = (int32_t)LC_NUM_SUBJECTS,
    .samplers = samplers,
    .sampler_size = sizeof(sc_sampler),
    .matmul_size = sizeof(sc_matmul),
};

/* NULL (no plugin) for an unknown mutant name: a misspelt negative control must not
 * run the unmutated subjects. */
__attribute__((visibility("default"))) const sc_plugin* samplecheck_plugin(void) {
  const char* chosen = getenv("SAMPLECHECK_LLAMACPP_MUTANT");
  lc_mutant mutant = LC_MUTANT_NONE;
  if (chosen != NULL && strcmp(chosen, "top_k_plus_one") == 0)
    mutant = LC_MUTANT_TOP_K_PLUS_ONE;
  else if (chosen != NULL && chosen[0] != '\0')
    return NULL;
  lc_set_mutant(mutant);
  plugin.name = mutant == LC_MUTANT_NONE
                    ? "llama.cpp sampler API (llama-cpp-python 0.3.36)"
                    : "llama.cpp sampler API (llama-cpp-python 0.3.36), MUTANT top_k_plus_one";
  for (size_t i = 0; i < LC_NUM_SUBJECTS; ++i) describe(i);
  return &plugin;
}
