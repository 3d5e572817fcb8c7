/* Standalone reproduction of the ties failure of llama.cpp's top-k (docs/shipped/llamacpp.md,
 * "Ties"), with nothing of samplecheck: llama.cpp's C API on hand-built arrays.
 *
 *   cc -std=c11 top_k_ties.c -I PREFIX/include PREFIX/lib/libllama.a PREFIX/lib/libggml.a \
 *      PREFIX/lib/libggml-base.a -lstdc++ -lm -lpthread -o top_k_ties && ./top_k_ties
 *
 * PREFIX is what tools/scripts/build_llamacpp.sh installs (OUT_DIR/prefix).
 *
 * llama_sampler_top_k keeps exactly k tokens (llama_sampler_top_k_impl sets size = k),
 * chosen for k <= 128 by std::partial_sort on the array in token order
 * (llama_token_data_array_partial_sort_inplace): a heap of the first k tokens, where a
 * later token enters only when strictly larger than the heap's least and then evicts
 * the least at the heap's top. Among tokens tied with the k-th logit, which survive
 * follows the order the heap met them in: not the lowest ids (a lowest_index rule), and
 * never all of them (keep_ties). Tokens with equal logits get unequal probabilities,
 * some none, depending only on where their ids put them.
 *
 * Part 1: the smallest case (every row of 2 to 6 logits in {0, 1, 2} and every k
 * searched): logits {1, 0, 1, 2}, k = 2. llama.cpp keeps tokens 3 and 2, lowest_index
 * keeps 3 and 0.
 * Part 2: the battery's failing row in small (tied_groups: two tokens of p 1/4, four of
 * p 1/32, a flat tail; k = 3), drawn 32,000 times through top-k then dist: one member of
 * the quartet takes every draw of the group (about 5.9%), and not the lowest id.
 * Exit 0 when both reproduce, 1 otherwise (then docs/shipped/llamacpp.md and llamacpp_quick's
 * expectation are out of date). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

/* The ids top-k(k) keeps of `logits`, into kept[] (k of them); returns k. */
static size_t top_k_kept(const float* logits, size_t n, int32_t k, int32_t* kept) {
  llama_token_data* cur = malloc(n * sizeof *cur);
  for (size_t t = 0; t < n; ++t) cur[t] = (llama_token_data){(llama_token)t, logits[t], 0.0f};
  llama_token_data_array a = {cur, n, -1, false};
  struct llama_sampler* s = llama_sampler_init_top_k(k);
  llama_sampler_apply(s, &a);
  for (size_t i = 0; i < a.size; ++i) kept[i] = a.data[i].id;
  llama_sampler_free(s);
  free(cur);
  return a.size;
}

/* 1 when a token tied with value v is dropped while a higher-id one is kept. */
static int out_of_order(const float* logits, size_t n, float v, const int32_t* kept, size_t m) {
  int lowest_dropped = -1;
  for (size_t t = 0; t < n && lowest_dropped < 0; ++t) {
    int in = 0;
    for (size_t i = 0; i < m; ++i) in |= kept[i] == (int32_t)t;
    if (logits[t] == v && !in) lowest_dropped = (int)t;
  }
  for (size_t i = 0; i < m && lowest_dropped >= 0; ++i)
    if (logits[kept[i]] == v && kept[i] > lowest_dropped) return 1;
  return 0;
}

static int part1(void) {
  const float logits[] = {1.0f, 0.0f, 1.0f, 2.0f};
  int32_t kept[4];
  const size_t m = top_k_kept(logits, 4, 2, kept);
  printf("part 1: logits {1, 0, 1, 2}, k = 2: kept {%d, %d}; lowest_index keeps {3, 0}\n", kept[0],
         kept[1]);
  return out_of_order(logits, 4, 1.0f, kept, m);
}

/* tied_groups in small: V tokens, ids of the two big ones and of the quartet spread. */
static void tied_groups(float* logits, size_t v) {
  for (size_t t = 0; t < v; ++t) logits[t] = logf(0.375f / (float)(v - 6));
  logits[5] = logits[11] = logf(0.25f);
  logits[2] = logits[7] = logits[13] = logits[17] = logf(1.0f / 32.0f);
}

static int part2(void) {
  enum { kV = 24, kDraws = 32000 };
  float logits[kV];
  tied_groups(logits, kV);
  long counts[kV] = {0};
  llama_token_data cur[kV];
  for (uint32_t seed = 0; seed < kDraws; ++seed) {
    struct llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(chain, llama_sampler_init_top_k(3));
    llama_sampler_chain_add(chain, llama_sampler_init_dist(seed));
    for (size_t t = 0; t < kV; ++t) cur[t] = (llama_token_data){(llama_token)t, logits[t], 0.0f};
    llama_token_data_array a = {cur, kV, -1, false};
    llama_sampler_apply(chain, &a);
    ++counts[a.data[a.selected].id];
    llama_sampler_free(chain);
  }
  printf("part 2: tied_groups, V = %d, k = 3, %d draws; the quartet (p 1/32 each) drew:", kV,
         kDraws);
  const int quartet[] = {2, 7, 13, 17};
  for (int i = 0; i < 4; ++i) printf(" token %d: %ld", quartet[i], counts[quartet[i]]);
  printf("\n        lowest_index: token 2 draws about %.0f, the others none\n",
         kDraws * (1.0 / 32) / (0.5 + 1.0 / 32));
  return counts[2] == 0 && (counts[7] + counts[13] + counts[17]) > 0;
}

int main(void) {
  const int a = part1(), b = part2();
  printf("%s\n", a && b ? "reproduced: tied tokens kept by position, not by lowest id"
                        : "not reproduced: top-k kept the lowest ids of a tie");
  return a && b ? 0 : 1;
}
