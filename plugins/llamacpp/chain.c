/* The llama_sampler chains the subjects build, one per output.
 *
 * Citations are to llama.cpp as llama-cpp-python 0.3.36 carries it
 * (ggml-org/llama.cpp@0c1e57098; tools/scripts/build_llamacpp.sh fetches it).
 *
 * The default chain is what common_sampler_init builds (common/sampling.cpp:187-436)
 * from a default common_params_sampling (common/common.h:226-273): with mirostat 0 it
 * adds one stage per entry of `samplers` (common/common.h:263-273: penalties, dry,
 * top_n_sigma, top_k, typical_p, top_p, min_p, xtc, temperature) in that order
 * (common/sampling.cpp:344-392), then dist(seed) (common/sampling.cpp:398). The
 * stages the battery has no parameter for keep common's defaults, and llama.cpp makes
 * each of them an empty sampler that leaves the array alone (src/llama-sampler.cpp, the
 * llama_sampler_init_empty calls: penalties 3213 for repeat 1, freq 0, present 0
 * (is_disabled, 2885-2892); dry 3648 for multiplier 0; top_n_sigma 3304 for n = -1;
 * typical 1998 for p = 1; xtc 2420 for probability 0). So do top-k, top-p, min-p and
 * temperature at the battery's "off" values (1523, 1723, 1886, 2311). The logit-bias stage common
 * adds for a model's suppressed tokens (common/sampling.cpp:326-338) needs a vocabulary and is
 * absent without one, as it is for a model that suppresses none. */
#include <stddef.h>

#include "llama.h"
#include "llamacpp_subjects.h"

/* common_params_sampling's values for the stages the battery does not drive. */
enum { kPenaltyLastN = 64, kDryAllowedLength = 2, kDryPenaltyLastN = 64, kMinKeep = 0 };
static const float kPenaltyRepeat = 1.0f, kPenaltyFreq = 0.0f, kPenaltyPresent = 0.0f;
static const float kDryMultiplier = 0.0f, kDryBase = 1.75f, kTopNSigma = -1.0f;
static const float kTypicalP = 1.0f, kXtcProbability = 0.0f, kXtcThreshold = 0.10f;
static const float kDynatempRange = 0.0f, kDynatempExponent = 1.0f;
static const char* const kDryBreakers[] = {"\n", ":", "\"", "*"};

static lc_mutant active_mutant = LC_MUTANT_NONE;

void lc_set_mutant(lc_mutant mutant) { active_mutant = mutant; }
lc_mutant lc_active_mutant(void) { return active_mutant; }

static int32_t top_k_of(const lc_params* p, int64_t vocab_size, lc_mutant mutant) {
  if (mutant == LC_MUTANT_TOP_K_PLUS_ONE && p->top_k > 0 && p->top_k < vocab_size)
    return p->top_k + 1;
  return p->top_k;
}

/* Adds `stage` to `chain`; 0 when llama.cpp returned no sampler. */
static int add(struct llama_sampler* chain, struct llama_sampler* stage) {
  if (stage == NULL) return 0;
  llama_sampler_chain_add(chain, stage);
  return 1;
}

static int add_default_stages(struct llama_sampler* chain, const lc_params* p, int64_t vocab_size,
                              uint32_t seed, lc_mutant mutant) {
  const size_t breakers = sizeof kDryBreakers / sizeof kDryBreakers[0];
  return add(chain, llama_sampler_init_penalties((int32_t)vocab_size, kPenaltyLastN, kPenaltyRepeat,
                                                 kPenaltyFreq, kPenaltyPresent)) &&
         /* No vocabulary: dry at multiplier 0 returns before it reads one. */
         add(chain,
             llama_sampler_init_dry(NULL, kDryMultiplier, kDryBase, kDryAllowedLength,
                                    kDryPenaltyLastN, (const char**)kDryBreakers, breakers)) &&
         add(chain, llama_sampler_init_top_n_sigma(kTopNSigma)) &&
         add(chain, llama_sampler_init_top_k(top_k_of(p, vocab_size, mutant))) &&
         add(chain, llama_sampler_init_typical(kTypicalP, kMinKeep)) &&
         add(chain, llama_sampler_init_top_p(p->top_p, kMinKeep)) &&
         add(chain, llama_sampler_init_min_p(p->min_p, kMinKeep)) &&
         add(chain, llama_sampler_init_xtc(kXtcProbability, kXtcThreshold, kMinKeep, seed)) &&
         add(chain, llama_sampler_init_temp_ext(p->temperature, kDynatempRange, kDynatempExponent));
}

static int add_stages(struct llama_sampler* chain, const lc_subject* subject, const lc_params* p,
                      int64_t vocab_size, uint32_t seed, lc_mutant mutant) {
  switch (subject->kind) {
    case LC_CHAIN_DEFAULT:
      return add_default_stages(chain, p, vocab_size, seed, mutant);
    case LC_CHAIN_DIST:
      return 1;
    case LC_CHAIN_TOP_K:
      return add(chain, llama_sampler_init_top_k(top_k_of(p, vocab_size, mutant)));
    case LC_CHAIN_TOP_P:
      return add(chain, llama_sampler_init_top_p(p->top_p, kMinKeep));
    case LC_CHAIN_MIN_P:
      return add(chain, llama_sampler_init_min_p(p->min_p, kMinKeep));
    case LC_CHAIN_TEMP:
      return add(chain,
                 llama_sampler_init_temp_ext(p->temperature, kDynatempRange, kDynatempExponent));
  }
  return 0;
}

struct llama_sampler* lc_build_chain(const lc_subject* subject, const lc_params* params,
                                     int64_t vocab_size, uint32_t seed, lc_mutant mutant,
                                     int with_dist) {
  struct llama_sampler_chain_params chain_params = llama_sampler_chain_default_params();
  /* common_params_sampling::no_perf is false, and common_sampler_init copies it. */
  chain_params.no_perf = false;
  struct llama_sampler* chain = llama_sampler_chain_init(chain_params);
  if (chain == NULL) return NULL;
  if (!add_stages(chain, subject, params, vocab_size, seed, mutant) ||
      (with_dist && !add(chain, llama_sampler_init_dist(seed)))) {
    llama_sampler_free(chain);
    return NULL;
  }
  return chain;
}
