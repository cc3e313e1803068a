/* exec.h — running cascades on real tensors.
 *
 * Arrays are dense fp32 tensors. Weights and results travel as
 * safetensors files (8-byte little-endian header length, a JSON header of
 * {name: {dtype, shape, data_offsets}}, raw little-endian data), read
 * strictly: a malformed file is rejected with a message, never half-read.
 * A model directory holds config.json (state-spaces or Hugging Face keys)
 * and model.safetensors, as Mamba checkpoints are distributed. */
#ifndef MAMBALAYA_EXEC_H
#define MAMBALAYA_EXEC_H

#include "../fusion/fusion.h"
#include "../ir/ir.h"

/* ---- arrays ---- */

typedef struct Array {
  int ndim;
  int64_t shape[IR_MAX_RANKS];
  int64_t n;   /* number of elements: the product of shape */
  float *data; /* row-major, owned */
} Array;

/* A zero-filled array; NULL if the size overflows. */
Array *array_new(int ndim, const int64_t *shape);
Array *array_clone(const Array *a);
void array_free(Array *a);

/* ---- safetensors ---- */

typedef enum { DT_F32, DT_F16, DT_BF16, DT_F64, DT_COUNT } DType;

const char *dtype_name(DType t); /* "F32", ... */
int dtype_size(DType t);         /* bytes per element */

typedef struct StEntry {
  const char *name;
  DType dtype;
  int ndim;
  int64_t shape[IR_MAX_RANKS];
  uint64_t begin, end; /* byte offsets into the data section */
} StEntry;

typedef struct StFile {
  const char *path;
  unsigned char *bytes; /* the whole file, owned */
  size_t len;
  size_t data_start; /* 8 + the header's length */
  int n;
  StEntry *entries; /* in the order of their data */
  int nmeta;
  const char **meta_keys, **meta_values; /* __metadata__ */
  Arena arena;
} StFile;

/* Parse a safetensors image (BYTES is copied). Rejects, with a message
 * naming the file and the problem: a file shorter than 8 bytes, a header
 * length past the end, a header that is not a JSON object (or has
 * duplicate keys), an entry without dtype/shape/data_offsets or with
 * extra fields, an unknown dtype, a negative or huge dimension, offsets
 * out of range, overlapping, or leaving holes, and a byte size that does
 * not match dtype x shape. */
StFile *st_parse(const char *path, const unsigned char *bytes, size_t len,
                 Diag *d);
StFile *st_open(const char *path, Diag *d);
void st_close(StFile *f);
const StEntry *st_find(const StFile *f, const char *name);
/* The tensor converted to fp32 (F16, BF16 and F64 are converted). */
Array *st_array(const StFile *f, const StEntry *e);

/* Writing: add arrays (stored as F32, or converted to F16/BF16), then
 * save atomically (a temporary file renamed into place). */
typedef struct StWriter StWriter;
StWriter *st_writer_new(void);
/* The array is copied. Names must be unique. */
void st_writer_add(StWriter *w, const char *name, const Array *a, DType as);
void st_writer_meta(StWriter *w, const char *key, const char *value);
bool st_writer_save(const StWriter *w, const char *path, Diag *d);
/* The file's bytes (free them), for writing as part of a set. */
unsigned char *st_writer_image(const StWriter *w, size_t *len);
void st_writer_free(StWriter *w);

typedef struct Pool Pool; /* worker threads: see below */

/* ---- named tensors ---- */

/* A set of tensors by name: a run's inputs, results and carried state.
 * Arrays are owned by the set unless added with owned = false. */
typedef struct Tensors {
  int n, cap;
  char **names;
  Array **arrays;
  bool *owned;
} Tensors;

/* Add or replace NAME. */
void tensors_put(Tensors *t, const char *name, Array *a, bool owned);
Array *tensors_get(const Tensors *t, const char *name);
/* Remove NAME and hand its array to the caller (NULL if absent). */
Array *tensors_take(Tensors *t, const char *name);
void tensors_free(Tensors *t);

/* ---- running a cascade ----
 *
 * The interpreter executes any cascade Einsum by Einsum, materializing
 * every output; the Einsums of a recurrence (a cycle closed by a lagged
 * read) advance together one step of their iterative rank at a time.
 * The fused executor runs a fusion plan: each group as one loop nest over
 * tiles of the ranks its tensors share, the intermediates it keeps on chip
 * held only for the tile being computed (a bounded buffer), and counts
 * every byte read from and written to off-chip memory. Both compute the
 * same numbers; nothing in either knows Mamba. */

typedef struct ExecOpts {
  const Plan *plan;    /* NULL: the interpreter */
  double buffer_bytes; /* fused: the on-chip buffer for held tiles */
  Pool *pool;          /* worker threads (NULL: one) */
  bool keep_all;       /* return every produced tensor, not only outputs */
} ExecOpts;

typedef struct ExecStats {
  /* Fused executor: distinct elements' bytes (4 per fp32 value) moved
   * between off-chip memory and the chip, per tensor and in total,
   * counted once per group (the model's ideal accounting). */
  double *read, *write; /* per tensor of the cascade, owned */
  double read_total, write_total;
  double peak_bytes; /* the most tensor memory held at once */
} ExecStats;

/* Run C (bound by S) on INPUTS (every tensor no Einsum produces: weights,
 * the layer's inputs, the initializations' inputs such as H0). RESULTS
 * receives the cascade's outputs (with keep_all, every produced tensor).
 * NEXT, when not NULL, receives for each initialization input the value
 * that makes a following pass continue this one (H0 := H at the last step;
 * the convolution history := the last steps of its input). STATS, when
 * not NULL, receives the traffic and memory figures (free with
 * exec_stats_free). */
bool exec_run(const Cascade *c, const Shape *s, const Tensors *inputs,
              const ExecOpts *o, Tensors *results, Tensors *next,
              ExecStats *stats, Diag *d);
void exec_stats_free(ExecStats *st);
/* The most bytes of arrays exec_run can hold at once for C bound by S,
 * beyond its inputs: every tensor the cascade produces (the interpreter,
 * PLAN NULL), or those PLAN keeps off chip plus the tile buffer and the
 * traffic maps (the fused executor). An upper bound (the interpreter
 * frees tensors no later Einsum reads), so that a run can be refused
 * before it starts. */
double exec_bytes(const Cascade *c, const Shape *s, const Plan *plan,
                  double buffer_bytes);

/* ---- worker threads ----
 *
 * A pool of threads owned by whoever runs a cascade (no global state). */

/* A pool of THREADS workers (the caller's thread is one of them); with
 * THREADS <= 1, pool_run calls FN inline. */
Pool *pool_new(int threads);
int pool_size(const Pool *p);
/* Call FN(ARG, i, N) for every i in [0, N), spread over the workers, and
 * wait for all of them. */
void pool_run(Pool *p, void (*fn)(void *arg, int i, int n), void *arg, int n);
void pool_free(Pool *p);

/* ---- kernels ---- */

/* C[b][m][n] (+)= sum_k A[b][m][k] * B[b][k][n], every operand addressed by
 * element strides (so transposed and strided views need no copy):
 *   A[b][m][k] = a[b*a_b + m*a_m + k*a_k], and likewise for B and C.
 * fp32 data, fp32 accumulation in blocks (as BLAS and PyTorch do). */
typedef struct Gemm {
  int64_t m, n, k, batch;
  const float *a;
  int64_t a_m, a_k, a_b;
  const float *b;
  int64_t b_k, b_n, b_b;
  float *c;
  int64_t c_m, c_n, c_b;
  bool accumulate; /* C += A.B; else C = A.B */
} Gemm;

/* Blocked, packed, multithreaded over POOL (NULL: one thread). Fast when
 * m is large (prefill) and when m is small (decode: a matrix-vector
 * product that streams the weights at memory speed). */
void kernel_gemm(const Gemm *g, Pool *pool);
/* The machine's copy bandwidth in bytes/s (read + write), measured by
 * copying BYTES (e.g. 256 MiB) a few times with POOL's threads. */
double kernel_copy_bandwidth(size_t bytes, Pool *pool);

/* ---- model configurations ---- */

typedef struct ModelConfig {
  int version; /* 1 (Mamba) or 2 (Mamba-2) */
  int d_model, n_layer, vocab;
  int d_state, d_conv, expand, d_inner;
  int dt_rank;           /* Mamba-1 */
  int headdim, nheads, ngroups; /* Mamba-2 */
} ModelConfig;

/* Read config.json in either published form: state-spaces
 * ({"d_model", "n_layer", "vocab_size", "ssm_cfg": {"layer": "Mamba2",
 * ...}}) or Hugging Face ({"model_type": "mamba"|"mamba2",
 * "hidden_size", "num_hidden_layers", "state_size", ...}). Defaults are
 * the published ones (d_state 16 / 128, d_conv 4, expand 2, headdim 64,
 * ngroups 1, dt_rank ceil(d_model/16)). */
bool model_config_load(const char *path, ModelConfig *cfg, Diag *d);
/* The same from TEXT (LEN bytes), named PATH in messages. */
bool model_config_parse(const char *path, const char *text, size_t len,
                        ModelConfig *cfg, Diag *d);
void model_config_from_preset(const Preset *p, ModelConfig *cfg);
/* Write config.json in the state-spaces form; its text (free it). */
bool model_config_save(const ModelConfig *cfg, const char *path, Diag *d);
char *model_config_text(const ModelConfig *cfg);

/* ---- language models ----
 *
 * A Mamba language model runs one cascade per layer (specs/mamba1.yaml or
 * specs/mamba2.yaml) between an embedding lookup and a final RMSNorm with
 * tied logits. What the driver needs beyond the Einsums is in the spec's
 * `weights:` section (docs/spec-format.md, "Weights"): which checkpoint
 * key (and which rows of it, viewed how, mapped how) fills each weight
 * tensor of a layer, the model-level tensors, the layer's stream tensors
 * (the previous layer's output and residual in, this layer's out) and how
 * the decode state is written under the reference's names. */

/* Where weights come from: a safetensors file, named in-memory arrays, or
 * random weights generated on demand (lm_random_checkpoint). GET returns
 * the tensor KEY as a new fp32 array (the caller frees it), or NULL when
 * the checkpoint has no such key. */
typedef struct Checkpoint {
  const char *path; /* named in messages */
  Array *(*get)(const struct Checkpoint *ck, const char *key);
  const void *src; /* the StFile or the Tensors */
  uint64_t seed;   /* random weights: the seed and the model's sizes */
  ModelConfig cfg;
} Checkpoint;

Checkpoint checkpoint_of_file(const StFile *f);
Checkpoint checkpoint_of_tensors(const Tensors *t, const char *name);

/* The parsed `weights:` section of a cascade. */
typedef struct WeightMap WeightMap;

/* Parse C's `weights:` section (errors as FILE:LINE:COL). Its size
 * expressions become symbols of C, so call this before binding C's shape.
 * Every input of the cascade must be mapped, a stream input, or a decode
 * state (an initialization's input). */
WeightMap *weights_parse(Cascade *c, Diag *d);
void weights_free(WeightMap *m);
/* Put layer LAYER's weight tensors, read from CK, into OUT (owned), each
 * with the shape S gives it. Errors name the checkpoint, the key and the
 * mapping's place in the spec. */
bool weights_load_layer(const WeightMap *m, const Shape *s,
                        const Checkpoint *ck, int layer, Tensors *out,
                        Diag *d);
/* The model-level tensor WHAT ("embedding" or "norm_f"): the first of its
 * keys that CK holds; NULL and D set if none. */
Array *weights_load_model(const WeightMap *m, const Checkpoint *ck,
                          const char *what, Diag *d);
/* The layer's stream: the inputs (the previous layer's mixer output and
 * residual) and the outputs (this layer's), as cascade tensor ids. */
typedef struct LayerStream {
  int hidden_in, residual_in, hidden_out, residual_out;
} LayerStream;
LayerStream weights_stream(const WeightMap *m);
/* Is tensor T a decode state (an input an initialization reads)? */
bool weights_is_state(const Cascade *c, int t);
/* The decode state of one layer, STATE (tensor name -> array), written
 * under the section's names into OUT as PREFIX + name ("layers.3." +
 * "conv_state"), in the reference's layouts. */
void weights_export_state(const WeightMap *m, const Tensors *state,
                          const char *prefix, Tensors *out);

/* A model's sizes: a preset name or a model directory's config.json, then
 * `--set` overrides (d_model, n_layer, vocab, d_state, d_conv, expand,
 * dt_rank, head_dim, n_heads, d_inner, ngroups); derived sizes follow
 * (d_inner = expand * d_model, dt_rank = ceil(d_model / 16), n_heads =
 * d_inner / head_dim) unless given. */
bool lm_config_resolve(const char *model, const Setting *set, int nset,
                       ModelConfig *cfg, Diag *d);

/* Random weights with the statistics of a freshly initialized Mamba, each
 * tensor generated from SEED and its key alone (so any subset can be made
 * in any order): embedding and in_proj N(0, 0.02), out_proj N(0,
 * 0.02/sqrt(2 n_layer)), conv1d U(+-1/sqrt(d_conv)), x_proj U(+-1/sqrt(
 * d_inner)), dt_proj.weight U(+-dt_rank^-0.5), dt bias softplus^-1 of a
 * log-uniform value in [1e-3, 0.1], A_log = log(1..N) (Mamba-1, every
 * channel) or log(U(1, 16)) (Mamba-2, per head), D = 1, norm weights 1. */
Checkpoint lm_random_checkpoint(const ModelConfig *cfg, uint64_t seed);
/* The checkpoint keys of a model with their shapes, in the reference's
 * order (Hugging Face names). Returns the count; free *KEYS. */
typedef struct CkptKey {
  char name[96];
  int ndim;
  int64_t shape[4];
} CkptKey;
int lm_checkpoint_keys(const ModelConfig *cfg, CkptKey **keys);
/* The number of parameters of those keys, overflow-checked (false if it
 * does not fit 64 bits), without listing every layer. */
bool lm_param_count(const ModelConfig *cfg, uint64_t *count);

typedef struct Lm Lm;

typedef struct LmOpts {
  bool fused;          /* the fused executor with STRATEGY's plan */
  Strategy strategy;   /* else the interpreter */
  double buffer_bytes; /* fused: the tile buffer */
  Pool *pool;
  bool last_only;      /* logits of each sequence's last token only */
} LmOpts;

/* A model from CFG and CK: loads every layer's weights once (CK is not
 * used afterwards). SPEC (owned by the Lm from here on, even on failure)
 * is the layer cascade; NULL picks the shipped one for CFG's version. */
Lm *lm_new(const ModelConfig *cfg, const Checkpoint *ck, Cascade *spec,
           Diag *d);
/* A model directory: DIR/config.json and DIR/model.safetensors. */
Lm *lm_open(const char *dir, Cascade *spec, Diag *d);
void lm_free(Lm *m);
const ModelConfig *lm_config(const Lm *m);
const Cascade *lm_cascade(const Lm *m);
/* Bytes of weights a decode step reads (every layer's and the
 * embedding's, fp32). */
double lm_weight_bytes(const Lm *m);

/* Run TOKENS (BATCH sequences of LEN, row-major) through the model,
 * continuing from the decode state (zero after lm_new / lm_reset), which
 * then holds the state after the last token. *LOGITS gets [BATCH, LEN,
 * vocab] (or [BATCH, vocab] with last_only). RECORD, when not NULL,
 * receives "layers.{i}.mixer_output" [BATCH, LEN, d_model]. */
bool lm_forward(Lm *m, const int *tokens, int batch, int len,
                const LmOpts *o, Array **logits, Tensors *record, Diag *d);
/* Forget the decode state. */
void lm_reset(Lm *m);
/* Bytes a pass of BATCH x LEN tokens holds beyond the weights, an upper
 * bound: the executor's (exec_bytes), the decode state of every layer,
 * the stream, the head and the logits, and with RECORD the mixer
 * outputs. False with D set if the shape cannot be bound. */
bool lm_pass_bytes(Lm *m, int batch, int len, const LmOpts *o, bool record,
                   double *bytes, Diag *d);
/* The decode state of every layer as "layers.{i}.conv_state" and
 * "layers.{i}.ssm_state" (the section's names) in the reference's layouts;
 * false if nothing has run yet. */
bool lm_export_state(const Lm *m, Tensors *out);

#endif
