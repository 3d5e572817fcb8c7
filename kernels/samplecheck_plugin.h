/*
 * samplecheck_plugin.h: the C boundary between samplecheck and a subject under test.
 *
 * A subject is a token sampler (sc_sampler), a matmul (sc_matmul) or, from minor 6, a
 * collective (sc_collective, an all-reduce over tensor-parallel ranks). In-tree kernels
 * implement it, and so does a vendor's shared library, which exports one symbol:
 *
 *     const sc_plugin* samplecheck_plugin(void);
 *
 * samplecheck dlopen()s the library, calls it, and refuses the plugin unless
 * abi_version.major equals SC_ABI_VERSION_MAJOR.
 *
 * Exporting it. Define the entry with SC_PLUGIN_EXPORT, from C, C++ or CUDA alike:
 *
 *     SC_PLUGIN_EXPORT const sc_plugin* samplecheck_plugin(void) { return &my_plugin; }
 *
 * It gives the symbol C linkage (a C++ compiler would otherwise export the mangled
 * _Z18samplecheck_pluginv, which samplecheck names in its refusal) and default
 * visibility (a library built with -fvisibility=hidden would export nothing).
 *
 * What a sampler must do with each sc_sample_batch (the rules the host holds in-tree
 * subjects to; samplecheck's battery sends batches that break them on purpose):
 *  - Refuse the whole call with SC_ERR_INVALID_ARGUMENT, writing nothing, when a shape
 *    field is out of range (vocab_size < 1, num_input_rows < 1, num_output_rows < 0), an
 *    input dtype is one it does not declare, row_index[r] is outside [0, num_input_rows),
 *    or a reserved or flags word is not 0.
 *  - Refuse the whole call when an input row's parameter is one the ABI forbids
 *    (SC_ERR_INVALID_ARGUMENT: top_k < 0; top_p outside (0, 1] or NaN; min_p outside
 *    [0, 1]; temperature < 0, infinite or NaN) or turns on a filter the sampler does not
 *    declare (SC_ERR_UNSUPPORTED; off is top_k 0 or >= vocab_size, top_p 1, min_p 0,
 *    temperature 1 or a NULL array). The message names the first offending row and, in
 *    it, the first field in that order (forbidden values before undeclared filters).
 *  - Filter exactly as the reference does (reference/filtered_distribution.h states it
 *    with its proofs): tokens in order of probability, ties by the declared tie_policy.
 *    top-k keeps a token iff fewer than k tokens precede it (SC_TIE_KEEP_TIES keeps the
 *    whole tie group at the k-th value, SC_TIE_LOWEST_INDEX exactly k, lower ids first);
 *    top-p keeps a token iff the mass of the tokens preceding it is < top_p times the
 *    mass filtered so far (the token that carries the sum across top_p is kept); min-p
 *    keeps a token iff p >= min_p * max p; SC_ORDER_TOP_K_FIRST applies top-k, then
 *    top-p on the renormalised top-k, then min-p, SC_ORDER_JOINT every condition on the
 *    original row. A token of probability 0 is never returned. Temperature applies to
 *    logits only; T = 0 is the argmax (its tie group by the tie policy).
 *  - Draw each output row's token from its input row's filtered distribution with the
 *    declared rng_policy, and write out_token / out_valid for the num_output_rows rows
 *    only (the host places guard rows after them and checks they are untouched).
 *
 * Versioning (as DLPack does it). Every struct that crosses the boundary starts
 * with its sc_abi_version: the version of this header its writer was built against.
 *  - A MAJOR bump may change anything; the host refuses a plugin of another major.
 *  - A MINOR bump may only append fields at the end of a struct, add enum values
 *    and add flag bits. It never moves, resizes or reinterprets a field, so a
 *    minor-N struct is a prefix of the same struct at any later minor.
 *  - The host reads a field appended in minor N only from a struct whose
 *    abi_version.minor >= N (older: treated as 0 / NULL). So does a subject with
 *    the sc_sample_batch, sc_matmul_problem and sc_collective_problem it is handed.
 *  - A plugin of a newer minor than the host is accepted: the host reads the
 *    fields it knows and ignores the newer ones.
 *  - Arrays of structs are strided by the writer's struct size, not the reader's:
 *    sc_plugin.sampler_size and .matmul_size (minor 1) give the strides of
 *    sc_plugin.samplers and .matmuls, .collective_size (minor 6) that of
 *    .collectives. For a minor-0 plugin the host uses the minor-0 sizes (the
 *    offset of the first field appended in minor 1). An entry must not state a
 *    minor whose fields its stride does not hold.
 *  - Every reserved word and every flags word must be 0 today (a later minor may
 *    give the bits a meaning). The host refuses a plugin or subject with a
 *    non-zero one, and a subject refuses such a call with SC_ERR_INVALID_ARGUMENT.
 * Fields have fixed widths; kernels/abi_c_check.c pins every offset for LP64.
 *
 * History:
 *   1.0  sc_plugin, sc_sampler, sc_sample_batch, sc_matmul, sc_matmul_problem.
 *   1.1  sc_matmul: num_batch_thresholds, reserved1, batch_thresholds.
 *        sc_plugin: sampler_size, matmul_size.
 *   1.2  sc_sampler: rng_policy, parameter_indexing, degenerate_rows, reserved1: the
 *        declared contracts (0 = today's contract, what a 1.0 / 1.1 sampler gets).
 *   1.3  sc_sampler: probs_normalisation, in the place of 1.2's reserved1 (which had
 *        to be 0: the same contract as SC_PROBS_RENORMALISE); uniform_rule and
 *        reserved2 appended (sc_sampler grows from 96 to 104 bytes).
 *   1.4  sc_sampler: inputs, in the place of 1.3's reserved2 (which had to be 0: the same
 *        contract as SC_INPUTS_PRESERVED).
 *   1.5  SC_RNG_REQUEST_KEYED (noise hashed from the request's seed and position, vLLM's and
 *        SGLang's seeded samplers) and SC_DEGENERATE_TREAT_AS_ZERO (NaN and negative entries
 *        count as zero probability, FlashInfer's cake sampler). Routes: sc_route; sc_sampler
 *        appends num_routes, reserved3, routes (104 to 120 bytes); sc_sample_batch appends
 *        out_route (144 to 152 bytes).
 *   1.6  Collectives: sc_collective, sc_collective_problem, SC_REDUCE_SUM, SC_INVARIANT_*;
 *        sc_plugin appends num_collectives, reserved0, collectives, collective_size (64 to
 *        88 bytes). A minor-6 plugin may export collectives alone.
 *
 * Errors: no C++ exception crosses this boundary. Calls return an sc_status and
 * write a NUL-terminated message into the caller's buffer.
 *
 * This header is C99; kernels/abi_c_check.c compiles it as C in CI.
 */
#ifndef SAMPLECHECK_PLUGIN_H_
#define SAMPLECHECK_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SC_ABI_VERSION_MAJOR 1
#define SC_ABI_VERSION_MINOR 6

typedef struct {
  uint32_t major;
  uint32_t minor;
} sc_abi_version;

/* Status codes (int32_t). */
#define SC_OK 0
#define SC_ERR_INVALID_ARGUMENT 1 /* the batch breaks this header's rules */
#define SC_ERR_UNSUPPORTED 2      /* a filter, dtype or shape the subject does not declare */
#define SC_ERR_DEVICE 3           /* a CUDA/HIP call failed */
#define SC_ERR_INTERNAL 4
typedef int32_t sc_status;

/* Where the buffers of a call live (int32_t). */
#define SC_MEMORY_HOST 1
#define SC_MEMORY_CUDA 2 /* device pointers; `stream` is a cudaStream_t */
#define SC_MEMORY_HIP 10 /* device pointers; `stream` is a hipStream_t */

/* Element types (int32_t), values equal to samplecheck::storage_type. */
#define SC_DTYPE_F32 1
#define SC_DTYPE_BF16 2
#define SC_DTYPE_F16 3
#define SC_DTYPE_BIT(dtype) (1u << (dtype))

/* ---------------------------------------------------------------------------
 * Samplers
 * ------------------------------------------------------------------------- */

/* What the rows hold (int32_t). */
#define SC_INPUT_PROBS 1  /* probabilities; each row should sum to 1 */
#define SC_INPUT_LOGITS 2 /* logits; the target is softmax(z / temperature) */

/* Filters a sampler implements (bit mask). A NULL parameter array means "off". */
#define SC_FILTER_TOP_K 1u
#define SC_FILTER_TOP_P 2u
#define SC_FILTER_MIN_P 4u
#define SC_FILTER_TEMPERATURE 8u /* logits subjects only */

/* How top-k and top-p combine (int32_t). */
#define SC_ORDER_TOP_K_FIRST 1 /* top-p measured on the top-k-renormalised distribution */
#define SC_ORDER_JOINT 2       /* both conditions on the original distribution (FlashInfer fused) */

/* Which tokens tied with the k-th largest probability survive top-k (int32_t). */
#define SC_TIE_KEEP_TIES 1    /* every token tied with the k-th is kept */
#define SC_TIE_LOWEST_INDEX 2 /* exactly k tokens: ties broken towards the lower token id */

/* Declared contracts (minor 2; int32_t each). 0 means the first value, today's
 * contract, which is also what a sampler of minor 0 or 1 is read as. The battery checks
 * the declared promise only: a check whose premise a declaration breaks reports n/a
 * with the reason (docs/subject-protocol.md, section 6). */
/* Whose random numbers output r draws. */
#define SC_RNG_PER_REQUEST 1       /* curand_init(seed[r], subsequence[r], offset[r]), any slot */
#define SC_RNG_BATCH_SLOT 2        /* keyed by the output row (FlashInfer: subsequence = row) */
#define SC_RNG_SUBJECT_GENERATOR 3 /* the subject's own generator: same call, same tokens */
/* Minor 5: the noise is a hash of the request's key, not a Philox stream (vLLM's hash-keyed
 * Gumbel sampler, SGLang's multinomial_with_seed): output r's numbers are a function of
 * (seed[r], offset[r]) alone, offset[r] being the request's position (the token's index in
 * its sequence), and of nothing else in the batch. The caller folds the planned subsequence
 * into the seed it sends (docs/subject-protocol.md, section 6), so the subject may ignore
 * subsequence[r]. philox_outputs_per_call does not describe such a subject (it must still
 * be >= 1); the battery steps positions by 1. Needs uniform_rule SC_RULE_UNDECLARED. */
#define SC_RNG_REQUEST_KEYED 4
/* Which row the top_k / top_p / min_p / temperature arrays are indexed by. */
#define SC_PARAMS_BY_INPUT_ROW 1  /* [num_input_rows], as sc_sample_batch says */
#define SC_PARAMS_BY_OUTPUT_ROW 2 /* [num_output_rows]: the caller repeats params[row_index[r]] */
/* What a degenerate row (NaN, Inf, negative, all zero, nothing left) gets. */
#define SC_DEGENERATE_VALID_FLAG 1 /* out_valid[r] = 0, the other rows undisturbed */
#define SC_DEGENERATE_ERROR 2      /* the call fails with a non-zero status */
#define SC_DEGENERATE_UNDEFINED 3  /* nothing is promised; the battery does not judge them */
/* Minor 5, input_kind SC_INPUT_PROBS only (FlashInfer's cake sampler): NaN, negative (-Inf
 * included) and -0.0 entries count as probability 0 and the row is sampled from the rest; a
 * row with +Inf entries draws uniformly among its +Inf entries; a row left with no positive
 * mass (all zero) gets out_valid[r] = 0, its neighbours undisturbed. */
#define SC_DEGENERATE_TREAT_AS_ZERO 4
/* What a probs row may sum to (minor 3). */
#define SC_PROBS_RENORMALISE 1    /* anything positive: sampled in proportion to the values */
#define SC_PROBS_ASSUME_SUM_ONE 2 /* 1: only float32 rows that sum to 1 are sent (FlashInfer) */
/* How an unfiltered row's token follows from the stream (minor 3). A declared rule lets the
 * battery (check stream_agreement) evaluate the same rule on the reference Philox stream and
 * compare tokens exactly: a subject that reads other outputs than it should, or computes its
 * stream position wrongly, disagrees there although its tokens are a perfect sample. */
#define SC_RULE_UNDECLARED 0 /* the subject does not say (stream_agreement is n/a) */
/* u = uniform_double(out0, out1): out0 and out1 the first two 32-bit outputs of
 * curand_init(seed, subsequence, offset), u = (((out0 << 21) ^ (out1 >> 11)) mod 2^53) * 2^-53
 * in [0, 1) (reference/uniform.h). The token is the first index whose running sum of the row
 * exceeds u * (the row's sum). Only rows with every filter off are judged by it. */
#define SC_RULE_INVERSE_CDF_U53 1
/* Whether the subject writes into the arrays it is handed to read (minor 4). A process
 * subject's host compares the input rows, parameters and streams with what it sent after
 * every call: a change under SC_INPUTS_PRESERVED is an ABI-contract failure naming the
 * array and element (docs/subject-protocol.md, section 4). Under SC_INPUTS_MUTATED (a
 * sampler that divides its logits in place) the caller sends them again before each call
 * and does not compare. */
#define SC_INPUTS_PRESERVED 1 /* it only reads them: every read-only array stays as sent */
#define SC_INPUTS_MUTATED 2   /* it may write them */
/* The most routes a sampler may declare (minor 5): out_route holds one byte a row. */
#define SC_MAX_ROUTES 16

/*
 * One batched sampling call.
 *
 * Rows: `input` is row-major [num_input_rows, vocab_size] of `input_dtype`.
 * Output row r samples from input row row_index[r] (row_index == NULL means
 * row_index[r] = r and then num_output_rows must equal num_input_rows). Several
 * output rows may share an input row: n parallel samples of one request.
 *
 * Parameters belong to the distribution, so top_k / top_p / min_p / temperature
 * are indexed by INPUT row (reading them by output row is defect S09). A NULL
 * array turns that filter off. top_k == 0 or >= vocab_size: off (< 0 is invalid). top_p in (0, 1],
 * 1 = off. min_p in [0, 1], 0 = off. temperature >= 0, 0 = greedy.
 *
 * Randomness belongs to the request, so it is indexed by OUTPUT row: output r
 * (under SC_RNG_PER_REQUEST; rng_policy states the others) draws from the cuRAND
 * Philox4x32-10 stream curand_init(seed[r], subsequence[r],
 * offset[r]) and from no other. A subject must not key its stream on the row's
 * position in the batch (defect S04) or share streams between outputs (S10).
 * `subsequence` may be NULL (all zero). One call consumes at most
 * sc_sampler.philox_outputs_per_call outputs of each stream; the caller advances
 * offset by that much between calls.
 *
 * Degenerate rows (NaN, Inf, negative or all-zero probabilities, nothing left
 * after filtering) get out_valid[r] = 0 and an unspecified token; they must not
 * disturb any other row (under SC_DEGENERATE_VALID_FLAG; the other degenerate_rows
 * values state their own outcome). Otherwise out_valid[r] = 1 and out_token[r] is in
 * [0, vocab_size).
 */
typedef struct {
  sc_abi_version abi_version; /* the caller's SC_ABI_VERSION_* */
  const void* input;          /* [num_input_rows, vocab_size], in the subject's memory space */
  int32_t input_dtype;        /* SC_DTYPE_* */
  int32_t reserved0;          /* 0 */
  int64_t num_input_rows;
  int64_t vocab_size;
  int64_t num_output_rows;
  const int32_t* row_index;    /* [num_output_rows] or NULL */
  const int32_t* top_k;        /* [num_input_rows] or NULL */
  const float* top_p;          /* [num_input_rows] or NULL */
  const float* min_p;          /* [num_input_rows] or NULL */
  const float* temperature;    /* [num_input_rows] or NULL (logits subjects; NULL = 1) */
  const uint64_t* seed;        /* [num_output_rows], never NULL */
  const uint64_t* subsequence; /* [num_output_rows] or NULL */
  const uint64_t* offset;      /* [num_output_rows], never NULL */
  int32_t* out_token;          /* [num_output_rows] */
  uint8_t* out_valid;          /* [num_output_rows] */
  void* stream;                /* cudaStream_t / hipStream_t, NULL = default; ignored on host */
  uint64_t flags;              /* 0 */
  /* Minor 5: [num_output_rows] or NULL. The caller passes it for a sampler that declares
   * routes (num_routes > 0); the sampler writes, for every row it returns valid, the index
   * in its routes of the route that row took. Read it only from a batch whose
   * abi_version.minor >= 5. */
  uint8_t* out_route;
} sc_sample_batch;

/* One route of a sampler whose rule changes with the call (minor 5): FlashInfer's cake
 * sampler falls back to an older kernel for k > 1024 and 16-bit inputs, whose ties at the
 * k-th go another way. The battery judges each output row's ties at the k-th by the
 * tie_policy of the route out_route names. The array is strided by sizeof(sc_route) as of
 * minor 5; a later minor that grows it adds its size to sc_sampler first. */
typedef struct {
  const char* name;   /* non-empty, at most 64 bytes, unique within the sampler */
  int32_t tie_policy; /* SC_TIE_* */
  int32_t reserved0;  /* 0 */
} sc_route;

typedef struct {
  sc_abi_version abi_version; /* the subject's SC_ABI_VERSION_*; must be first */
  const char* name;           /* unique, e.g. "cpu.dual_pivot" */
  const char* description;    /* one line; may be NULL */
  int32_t memory_space;       /* SC_MEMORY_* */
  int32_t input_kind;         /* SC_INPUT_* */
  uint32_t input_dtypes;      /* SC_DTYPE_BIT(SC_DTYPE_F32) | ... */
  uint32_t filters;           /* SC_FILTER_* bits */
  int32_t filter_order;       /* SC_ORDER_*, meaningful when both top-k and top-p are declared */
  int32_t tie_policy;         /* SC_TIE_* */
  uint64_t philox_outputs_per_call; /* the most 32-bit outputs one call takes from a row's stream */
  uint64_t flags;                   /* 0 */
  void* context;                    /* passed back to every call */
  /* Samples a batch. Never NULL. Synchronous for host subjects; for device
   * subjects the results are ready when `stream` is synchronised. */
  sc_status (*sample)(void* context, const sc_sample_batch* batch, char* error, size_t error_size);
  /* Added in minor 2: the declared contracts (SC_RNG_*, SC_PARAMS_*, SC_DEGENERATE_*;
   * 0 = the first of each). With SC_PARAMS_BY_OUTPUT_ROW the batch's parameter
   * arrays hold num_output_rows entries. */
  int32_t rng_policy;
  int32_t parameter_indexing;
  int32_t degenerate_rows;
  /* Minor 3 (reserved, 0, in minor 2): SC_PROBS_*, 0 = SC_PROBS_RENORMALISE.
   * SC_PROBS_ASSUME_SUM_ONE needs input_kind SC_INPUT_PROBS and input_dtypes f32 only. */
  int32_t probs_normalisation;
  /* Minor 3: SC_RULE_*, 0 = SC_RULE_UNDECLARED. */
  int32_t uniform_rule;
  /* Minor 4 (reserved, 0, in minor 3): SC_INPUTS_*, 0 = SC_INPUTS_PRESERVED. */
  int32_t inputs;
  /* Minor 5: the routes, [num_routes] with 0 <= num_routes <= SC_MAX_ROUTES. 0 / NULL: one
   * route, tie_policy above, and out_route is not passed (today's contract). Declaring
   * routes needs SC_FILTER_TOP_K (a tie policy only acts at top-k's boundary). */
  int32_t num_routes;
  int32_t reserved3; /* 0 */
  const sc_route* routes;
} sc_sampler;

/* ---------------------------------------------------------------------------
 * Matmuls: out[m, n] = bf16( sum_k a[m, k] * weight[n, k] (+ bias[n]) ), fp32 inside.
 * ------------------------------------------------------------------------- */
typedef struct {
  sc_abi_version abi_version;
  int64_t m, n, k;
  const uint16_t* a;      /* bf16 bits, row-major [m, k] */
  const uint16_t* weight; /* bf16 bits, row-major [n, k] (the nn.Linear layout) */
  const uint16_t* bias;   /* bf16 bits, [n], or NULL */
  uint16_t* out;          /* bf16 bits, row-major [m, n] */
  int32_t launch_config;  /* -1: the subject's own choice; else an index < num_launch_configs */
  int32_t reserved0;      /* 0 */
  void* stream;
  uint64_t flags; /* 0 */
} sc_matmul_problem;

typedef struct {
  sc_abi_version abi_version; /* must be first */
  const char* name;
  const char* description;
  int32_t memory_space;       /* SC_MEMORY_* */
  int32_t num_launch_configs; /* 0: the subject has a single launch */
  uint64_t flags;             /* 0 */
  void* context;
  /* Never NULL. May describe launch configuration i for reports; NULL allowed. */
  sc_status (*run)(void* context, const sc_matmul_problem* problem, char* error, size_t error_size);
  const char* (*launch_config_name)(void* context, int32_t index);
  /* Added in minor 1. The batch sizes M at which the subject's own launch choice
   * (launch_config = -1) changes: the smallest M of each new choice, ascending,
   * each >= 2. The battery tests every threshold and its neighbours +-1, where a
   * batch-variant choice would show. 0 / NULL: the choice never changes with M,
   * or the subject does not say. */
  int32_t num_batch_thresholds;
  int32_t reserved1;               /* 0 */
  const int64_t* batch_thresholds; /* [num_batch_thresholds]; may be NULL when 0 */
} sc_matmul;

/* ---------------------------------------------------------------------------
 * Collectives (minor 6): an all-reduce over world_size tensor-parallel ranks,
 *   out[r][i] = sum over ranks q of in[q][i]   (0 <= r < world_size, 0 <= i < count),
 * the reduction after a row-parallel linear layer, whose K is split over the ranks. On the
 * host the ranks are buffers of one call; a device collective may run them on several GPUs.
 *
 * Every rank's out must hold the same bits (ranks that disagree diverge from the next layer
 * on): the host compares them after every call, whatever the subject declares. The order of
 * the float additions is the subject's; what it promises about the bits is `invariants`:
 *  - SC_INVARIANT_SIZE: out[r][i] is a function of world_size and of (in[0][i], ...,
 *    in[world_size - 1][i]) alone: not of count, of i (the element's offset in the message)
 *    or of any other element. A fixed per-element order (rank 0, 1, ..., or a fixed tree)
 *    keeps it; NCCL's ring does not (its chunks, and so each element's first rank, follow
 *    count), so a model's logits then change with tensor-parallel size and batch size.
 *  - SC_INVARIANT_RUN: the same call gives the same bits every time.
 *  - SC_INVARIANT_TREE: every element is summed by the balanced binary tree over ranks 0..w-1
 *    (each node split at the largest power of two below its width: ((r0 + r1) + (r2 + r3))
 *    for w = 4). A row-parallel linear layer whose ranks pre-reduce their K segments by the
 *    same tree then gives the same bits at every power-of-two tensor-parallel size (TP 1 and
 *    TP 8 agree); rank order (((r0 + r1) + r2) + r3) does not compose so.
 * The battery judges what is declared (checks message_invariance, run_to_run, tp_invariance;
 * a check whose promise is not declared is n/a), as it judges a sampler's contracts.
 *
 * A collective refuses the whole call with SC_ERR_INVALID_ARGUMENT, writing nothing, when
 * world_size is outside [1, max_world_size], count < 1, an inputs or outputs pointer is NULL,
 * or flags is not 0; with SC_ERR_UNSUPPORTED for a dtype it does not declare. The message
 * names the field. The host checks the same before it calls (a call it would refuse is a
 * harness error naming the field, never sent).
 * ------------------------------------------------------------------------- */
#define SC_REDUCE_SUM 1 /* the one reduction of minor 6 (int32_t) */
/* What a collective promises (bit mask, minor 6). */
#define SC_INVARIANT_SIZE 1u /* bits independent of count, offset and the other elements */
#define SC_INVARIANT_RUN 2u  /* bits independent of the run */
#define SC_INVARIANT_TREE 4u /* summed by the balanced tree over ranks: TP-size independent */

typedef struct {
  sc_abi_version abi_version; /* the caller's SC_ABI_VERSION_* */
  int32_t world_size;         /* ranks, 1 <= world_size <= sc_collective.max_world_size */
  int32_t dtype;              /* SC_DTYPE_*, one the collective declares */
  int64_t count;              /* elements of each rank's message, >= 1 */
  const void* const* inputs;  /* [world_size]: rank q's count elements, read only */
  void* const* outputs;       /* [world_size]: rank r's count elements, written */
  void* stream;               /* as for a matmul; ignored on host */
  uint64_t flags;             /* 0 */
} sc_collective_problem;

typedef struct {
  sc_abi_version abi_version; /* must be first */
  const char* name;           /* unique among every subject, e.g. "cpu.allreduce.fixed_order" */
  const char* description;    /* one line; may be NULL */
  int32_t memory_space;       /* SC_MEMORY_* */
  uint32_t dtypes;            /* SC_DTYPE_BIT(SC_DTYPE_F32) | ...: f32 and bf16 are meaningful */
  int32_t reduce_op;          /* SC_REDUCE_SUM */
  int32_t max_world_size;     /* the most ranks one call may have, >= 1 */
  uint32_t invariants;        /* SC_INVARIANT_* bits; 0 promises nothing about the bits */
  int32_t reserved0;          /* 0 */
  uint64_t flags;             /* 0 */
  void* context;              /* passed back to every call */
  /* Never NULL. Synchronous for host subjects. */
  sc_status (*run)(void* context, const sc_collective_problem* problem, char* error,
                   size_t error_size);
} sc_collective;

/* ---------------------------------------------------------------------------
 * What a plugin library exports: at least one subject. Samplers, matmuls and
 * collectives share one namespace: every name is unique within the plugin and
 * differs from every in-tree subject's; the host refuses a plugin that breaks either.
 * ------------------------------------------------------------------------- */
typedef struct {
  sc_abi_version abi_version; /* must be first */
  const char* name;           /* the vendor library */
  int32_t num_samplers;
  int32_t num_matmuls;
  const sc_sampler* samplers; /* [num_samplers], stride sampler_size */
  const sc_matmul* matmuls;   /* [num_matmuls], stride matmul_size */
  uint64_t flags;             /* 0 */
  /* Added in minor 1: sizeof(sc_sampler) and sizeof(sc_matmul) as the plugin was
   * built, the strides of the two arrays (a minor-0 plugin's sc_matmul is smaller,
   * so indexing its array with a newer sizeof would land between entries). */
  uint64_t sampler_size;
  uint64_t matmul_size;
  /* Added in minor 6 (read only from a plugin whose abi_version.minor >= 6): the
   * collectives, [num_collectives] strided by collective_size, sizeof(sc_collective) as the
   * plugin was built (at least its minor-6 size). */
  int32_t num_collectives;
  int32_t reserved0; /* 0 */
  const sc_collective* collectives;
  uint64_t collective_size;
} sc_plugin;

typedef const sc_plugin* (*sc_plugin_entry)(void);
#define SC_PLUGIN_ENTRY_SYMBOL "samplecheck_plugin"
/* The C++ mangling of samplecheck_plugin(): a library exporting only this forgot extern "C". */
#define SC_PLUGIN_MANGLED_SYMBOL "_Z18samplecheck_pluginv"

/* Put before the definition of samplecheck_plugin (see the top of this file). */
#if defined(_WIN32)
#define SC_PLUGIN_VISIBILITY __declspec(dllexport)
#else
#define SC_PLUGIN_VISIBILITY __attribute__((visibility("default")))
#endif
#ifdef __cplusplus
#define SC_PLUGIN_EXPORT extern "C" SC_PLUGIN_VISIBILITY
#else
#define SC_PLUGIN_EXPORT SC_PLUGIN_VISIBILITY
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SAMPLECHECK_PLUGIN_H_ */
