/* The pieces of the llama.cpp plugin (README.md says what each subject is and why its
 * declared contracts are what llama.cpp's code does). C11; none is exported
 * (exports.map keeps samplecheck_plugin only). */
#ifndef SAMPLECHECK_LLAMACPP_SUBJECTS_H_
#define SAMPLECHECK_LLAMACPP_SUBJECTS_H_

#include <stdint.h>

#include "samplecheck_plugin.h"

struct llama_sampler;

/* Which llama_sampler chain a subject builds for each output (chain.c). */
typedef enum {
  LC_CHAIN_DEFAULT, /* common_params_sampling's stages, in its order */
  LC_CHAIN_DIST,    /* dist alone */
  LC_CHAIN_TOP_K,   /* top-k, then dist */
  LC_CHAIN_TOP_P,   /* top-p, then dist */
  LC_CHAIN_MIN_P,   /* min-p, then dist */
  LC_CHAIN_TEMP,    /* temperature (temp_ext, as common builds it), then dist */
} lc_chain_kind;

typedef struct {
  lc_chain_kind kind;
  const char* name;
  uint32_t filters; /* the SC_FILTER_* bits its descriptor declares */
  /* 1: a whole chain per output; 0: the stages once per input row (draw.c says why both
   * give the same tokens). The descriptors use 0; tests/split_test.c compares them. */
  int whole_chain;
} lc_subject;

/* One input row's parameters, the ABI's "off" values where the battery sends no array. */
typedef struct {
  int32_t top_k;     /* 0: off */
  float top_p;       /* 1: off */
  float min_p;       /* 0: off */
  float temperature; /* 1: none */
} lc_params;

/* A planted defect for the negative control (tests in CMakeLists.txt): chosen by the
 * environment variable SAMPLECHECK_LLAMACPP_MUTANT when the plugin is loaded. */
typedef enum {
  LC_MUTANT_NONE,
  LC_MUTANT_TOP_K_PLUS_ONE, /* "top_k_plus_one": llama.cpp is handed k + 1 for 0 < k < V */
} lc_mutant;

/* The chain of `subject`'s stages, ending in llama_sampler_init_dist(seed) when
 * `with_dist`; NULL when llama.cpp returned none. Freed with llama_sampler_free. */
struct llama_sampler* lc_build_chain(const lc_subject* subject, const lc_params* params,
                                     int64_t vocab_size, uint32_t seed, lc_mutant mutant,
                                     int with_dist);

/* The 32-bit seed of the request stream (seed, subsequence, offset): a hash, because
 * llama_sampler_init_dist takes one uint32_t (stream_seed.c says how and why). */
uint32_t lc_stream_seed(uint64_t seed, uint64_t subsequence, uint64_t offset);

/* sc_sampler.sample for every subject; `context` is its lc_subject. */
sc_status lc_sample(void* context, const sc_sample_batch* batch, char* error, size_t error_size);

/* Input row i's parameters: the batch's, or the ABI's "off" where it sends no array. */
lc_params lc_params_of(const sc_sample_batch* batch, int64_t i);

/* Every output of a checked batch (draw.c): 0, or -1 when out of memory or llama.cpp
 * built no sampler. */
int lc_draw_whole(const lc_subject* subject, const sc_sample_batch* batch);
int lc_draw_split(const lc_subject* subject, const sc_sample_batch* batch);

/* The mutant chosen when the plugin was loaded (LC_MUTANT_NONE until one is set). */
void lc_set_mutant(lc_mutant mutant);
lc_mutant lc_active_mutant(void);

#endif /* SAMPLECHECK_LLAMACPP_SUBJECTS_H_ */
