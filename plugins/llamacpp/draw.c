/* Drawing the outputs of a checked batch, as llama_sampler_sample does on the CPU
 * (src/llama-sampler.cpp:895-964): a llama_token_data_array of the row's logits in token
 * order ({id, logit, 0}, selected -1, sorted false), llama_sampler_apply, the token at
 * `selected`, llama_sampler_accept.
 *
 * Two ways, which give the same tokens (tests/split_test.c compares them on every
 * subject):
 *  - whole: a chain of every stage per output, applied to the row filled anew (the chain
 *    mutates the array): what llama.cpp runs per token.
 *  - split (the descriptors' way): the stages before dist, applied once per input row and
 *    call, then per output a fresh dist on a copy of the array they left. The chain
 *    applies its stages in order to one array (llama_sampler_chain_apply,
 *    src/llama-sampler.cpp:681-701), and no stage before dist reads a random number or
 *    a state here (XTC, the one that draws, is off; penalties and dry are off and have
 *    no history in a fresh chain), so dist sees the same array either way. top-p without
 *    top-k sorts the whole row per call (llama_sampler_top_p_apply), so running the
 *    stages once per row and call is what keeps the quick budget within CI's time. */
#include <stdlib.h>
#include <string.h>

#include "llama.h"
#include "llamacpp_subjects.h"

static uint32_t seed_of(const sc_sample_batch* b, int64_t r) {
  return lc_stream_seed(b->seed[r], b->subsequence != NULL ? b->subsequence[r] : 0, b->offset[r]);
}

static void fill(llama_token_data* cur, const sc_sample_batch* b, int64_t i) {
  const float* logits = (const float*)b->input + i * b->vocab_size;
  for (int64_t t = 0; t < b->vocab_size; ++t)
    cur[t] = (llama_token_data){(llama_token)t, logits[t], 0.0f};
}

static int64_t input_of(const sc_sample_batch* b, int64_t r) {
  return b->row_index != NULL ? b->row_index[r] : r;
}

/* `sampler` applied to `cur_p`; its token into out_token[r], out_valid[r] whether there
 * was one (a NaN row may leave none). */
static void select_token(struct llama_sampler* sampler, llama_token_data_array* cur_p,
                         const sc_sample_batch* b, int64_t r) {
  llama_sampler_apply(sampler, cur_p);
  const int ok = cur_p->selected >= 0 && (size_t)cur_p->selected < cur_p->size;
  b->out_valid[r] = (uint8_t)ok;
  b->out_token[r] = ok ? cur_p->data[cur_p->selected].id : -1;
  if (ok) llama_sampler_accept(sampler, b->out_token[r]);
}

int lc_draw_whole(const lc_subject* s, const sc_sample_batch* b) {
  llama_token_data* cur = malloc((size_t)b->vocab_size * sizeof *cur);
  if (cur == NULL) return -1;
  for (int64_t r = 0; r < b->num_output_rows; ++r) {
    const lc_params p = lc_params_of(b, input_of(b, r));
    struct llama_sampler* chain =
        lc_build_chain(s, &p, b->vocab_size, seed_of(b, r), lc_active_mutant(), 1);
    if (chain == NULL) {
      free(cur);
      return -1;
    }
    fill(cur, b, input_of(b, r));
    llama_token_data_array cur_p = {cur, (size_t)b->vocab_size, -1, false};
    select_token(chain, &cur_p, b, r);
    llama_sampler_free(chain);
  }
  free(cur);
  return 0;
}

/* Output r drawn by a fresh dist from the array the stages left (`filtered`). */
static int draw_filtered(const llama_token_data_array* filtered, llama_token_data* scratch,
                         const sc_sample_batch* b, int64_t r) {
  struct llama_sampler* dist = llama_sampler_init_dist(seed_of(b, r));
  if (dist == NULL) return -1;
  memcpy(scratch, filtered->data, filtered->size * sizeof *scratch);
  llama_token_data_array cur_p = {scratch, filtered->size, -1, filtered->sorted};
  select_token(dist, &cur_p, b, r);
  llama_sampler_free(dist);
  return 0;
}

/* An output and the input row it reads: outputs are drawn grouped by input row. */
typedef struct {
  int64_t input;
  int64_t output;
} lc_pair;

static int by_input_row(const void* x, const void* y) {
  const lc_pair* a = (const lc_pair*)x;
  const lc_pair* c = (const lc_pair*)y;
  if (a->input != c->input) return a->input < c->input ? -1 : 1;
  return (a->output > c->output) - (a->output < c->output);
}

/* The outputs order[first, last), which all read one input row. */
static int draw_row(const lc_subject* s, const sc_sample_batch* b, const lc_pair* order,
                    int64_t first, int64_t last, llama_token_data* row, llama_token_data* scratch) {
  const int64_t i = order[first].input;
  const lc_params p = lc_params_of(b, i);
  /* The seed reaches only XTC's generator, which is off (chain.c). */
  struct llama_sampler* stages =
      lc_build_chain(s, &p, b->vocab_size, seed_of(b, order[first].output), lc_active_mutant(), 0);
  if (stages == NULL) return -1;
  fill(row, b, i);
  llama_token_data_array filtered = {row, (size_t)b->vocab_size, -1, false};
  llama_sampler_apply(stages, &filtered);
  llama_sampler_free(stages);
  for (int64_t j = first; j < last; ++j)
    if (draw_filtered(&filtered, scratch, b, order[j].output) < 0) return -1;
  return 0;
}

int lc_draw_split(const lc_subject* s, const sc_sample_batch* b) {
  const size_t vocab = (size_t)b->vocab_size;
  const int64_t n = b->num_output_rows;
  lc_pair* order = malloc((size_t)n * sizeof *order);
  llama_token_data* row = malloc(vocab * sizeof *row);
  llama_token_data* scratch = malloc(vocab * sizeof *scratch);
  int status = order != NULL && row != NULL && scratch != NULL ? 0 : -1;
  if (status == 0) {
    for (int64_t r = 0; r < n; ++r) order[r] = (lc_pair){input_of(b, r), r};
    qsort(order, (size_t)n, sizeof *order, by_input_row);
  }
  for (int64_t first = 0, last; status == 0 && first < n; first = last) {
    for (last = first + 1; last < n && order[last].input == order[first].input;) ++last;
    status = draw_row(s, b, order, first, last, row, scratch);
  }
  free(order);
  free(row);
  free(scratch);
  return status;
}
