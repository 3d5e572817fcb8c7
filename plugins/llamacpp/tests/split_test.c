/* The plugin's two ways of drawing (draw.c) give the same tokens: for every subject, on
 * batches of rows with ties, masked (-Inf) tokens and flat rows, every filter setting the
 * subject declares, several outputs per input row, the whole chain per output and the
 * stages once per input row must agree token for token. And the comparison is not
 * vacuous: the same batches under other seeds must differ somewhere. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llamacpp_subjects.h"

enum { kInputs = 4, kOutputs = 96, kBatches = 24 };

static uint64_t state = 0x2545F4914F6CDD1DULL;
static uint64_t next(void) { /* xorshift64*: the test's own rows and seeds */
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1DULL;
}
static double unit(void) { return (double)(next() >> 11) * 0x1p-53; }
static int64_t below(int64_t n) { return (int64_t)(next() % (uint64_t)n); }

/* Row shapes: smooth, coarse (many exact ties), with masked tokens, flat. */
static void make_row(float* row, int64_t vocab, int shape) {
  for (int64_t t = 0; t < vocab; ++t) {
    const double z = 8.0 * unit() - 4.0;
    row[t] = shape == 0 ? (float)z : shape == 1 ? (float)floor(z) : shape == 3 ? 0.5f : (float)z;
    if (shape == 2 && t % 3 == 1) row[t] = -INFINITY;
  }
}

static void make_params(const lc_subject* s, int64_t vocab, int32_t* k, float* p, float* mp,
                        float* temp) {
  static const int32_t ks[] = {0, 1, 3, 40, 129, 200};
  static const float ps[] = {1.0f, 0.5f, 0.9f, 0.99f, 1e-3f};
  static const float mps[] = {0.0f, 0.05f, 0.5f, 1.0f};
  static const float temps[] = {1.0f, 0.0f, 0.7f, 1.5f};
  *k = (s->filters & SC_FILTER_TOP_K) ? (below(5) == 0 ? (int32_t)vocab : ks[below(6)]) : 0;
  *p = (s->filters & SC_FILTER_TOP_P) ? ps[below(5)] : 1.0f;
  *mp = (s->filters & SC_FILTER_MIN_P) ? mps[below(4)] : 0.0f;
  *temp = (s->filters & SC_FILTER_TEMPERATURE) ? temps[below(4)] : 1.0f;
}

typedef struct {
  float* rows;
  int32_t row_index[kOutputs], top_k[kInputs];
  float top_p[kInputs], min_p[kInputs], temperature[kInputs];
  uint64_t seed[kOutputs], subsequence[kOutputs], offset[kOutputs];
} batch_data;

static sc_sample_batch make_batch(const lc_subject* s, batch_data* d, int64_t vocab) {
  for (int i = 0; i < kInputs; ++i) {
    make_row(d->rows + i * vocab, vocab, (int)below(4));
    make_params(s, vocab, &d->top_k[i], &d->top_p[i], &d->min_p[i], &d->temperature[i]);
  }
  for (int r = 0; r < kOutputs; ++r) {
    d->row_index[r] = (int32_t)below(kInputs);
    d->seed[r] = next();
    d->subsequence[r] = next();
    d->offset[r] = 2 * (uint64_t)below(1000);
  }
  return (sc_sample_batch){.abi_version = {SC_ABI_VERSION_MAJOR, SC_ABI_VERSION_MINOR},
                           .input = d->rows,
                           .input_dtype = SC_DTYPE_F32,
                           .num_input_rows = kInputs,
                           .vocab_size = vocab,
                           .num_output_rows = kOutputs,
                           .row_index = d->row_index,
                           .top_k = d->top_k,
                           .top_p = d->top_p,
                           .min_p = d->min_p,
                           .temperature = d->temperature,
                           .seed = d->seed,
                           .subsequence = d->subsequence,
                           .offset = d->offset};
}

static int run(lc_subject* s, sc_sample_batch b, int whole, int32_t* tokens, uint8_t* valid) {
  char error[256] = "";
  s->whole_chain = whole;
  b.out_token = tokens;
  b.out_valid = valid;
  const sc_status status = lc_sample(s, &b, error, sizeof error);
  if (status != SC_OK) fprintf(stderr, "%s: status %d: %s\n", s->name, status, error);
  return status == SC_OK;
}

/* Batches of subject s; the number of outputs where split and whole disagree (or -1 on
 * an error), and in *reseeded those where whole differs from whole under other seeds. */
static int64_t compare(lc_subject* s, int64_t* reseeded) {
  static const int64_t vocabs[] = {1, 2, 7, 130, 1500, 5000};
  int64_t disagree = 0;
  for (int n = 0; n < kBatches; ++n) {
    const int64_t vocab = vocabs[n % 6];
    batch_data d;
    d.rows = malloc((size_t)(kInputs * vocab) * sizeof *d.rows);
    sc_sample_batch b = make_batch(s, &d, vocab);
    int32_t split[kOutputs], whole[kOutputs], other[kOutputs];
    uint8_t vs[kOutputs], vw[kOutputs], vo[kOutputs];
    int ok = run(s, b, 0, split, vs) && run(s, b, 1, whole, vw);
    for (int r = 0; r < kOutputs; ++r) d.seed[r] ^= 0x5DEECE66DULL;
    ok = ok && run(s, b, 1, other, vo);
    free(d.rows);
    if (!ok) return -1;
    for (int r = 0; r < kOutputs; ++r) {
      if (split[r] != whole[r] || vs[r] != vw[r]) {
        ++disagree;
        fprintf(stderr, "%s V=%lld output %d: split %d (valid %d), whole %d (valid %d)\n", s->name,
                (long long)vocab, r, split[r], vs[r], whole[r], vw[r]);
      }
      *reseeded += other[r] != whole[r];
    }
  }
  return disagree;
}

int main(void) {
  lc_subject subjects[] = {
      {LC_CHAIN_DEFAULT, "default_chain", SC_FILTER_TOP_K | SC_FILTER_TOP_P | SC_FILTER_MIN_P, 0},
      {LC_CHAIN_DIST, "dist", 0u, 0},
      {LC_CHAIN_TOP_K, "top_k", SC_FILTER_TOP_K, 0},
      {LC_CHAIN_TOP_P, "top_p", SC_FILTER_TOP_P, 0},
      {LC_CHAIN_MIN_P, "min_p", SC_FILTER_MIN_P, 0},
      {LC_CHAIN_TEMP, "temperature", SC_FILTER_TEMPERATURE, 0},
  };
  int failed = 0;
  for (size_t i = 0; i < sizeof subjects / sizeof subjects[0]; ++i) {
    int64_t reseeded = 0;
    const int64_t disagree = compare(&subjects[i], &reseeded);
    printf("%-14s %lld of %d outputs disagree; %lld differ under other seeds\n", subjects[i].name,
           (long long)disagree, kBatches * kOutputs, (long long)reseeded);
    failed |= disagree != 0 || reseeded == 0;
  }
  puts(failed ? "FAIL" : "pass");
  return failed;
}
