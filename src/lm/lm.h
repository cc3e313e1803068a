/* lm.h — language models on the cascade executor.
 *
 * A Mamba language model runs one cascade per layer (specs/mamba1.yaml or
 * specs/mamba2.yaml) on src/exec/, between an embedding lookup and a final
 * RMSNorm with tied logits. This module holds everything that knows what a
 * language model is: model configurations (config.json, presets), the
 * checkpoint and the spec's `weights:` section that maps its keys onto a
 * layer's weight tensors, random weights, and the model itself. A model
 * directory holds config.json (state-spaces or Hugging Face keys) and
 * model.safetensors, as Mamba checkpoints are distributed. */
#ifndef MAMBALAYA_LM_H
#define MAMBALAYA_LM_H

#include "../exec/exec.h"
#include "../preset/preset.h"
#include "../workload/workload.h"

/* ---- model configurations ---- */

/* A model's parameters, X(ID, field, alias): by the names presets, specs
 * and --set use (src/preset/), ALIAS being config.json's other spelling
 * (or NULL). Mamba-1 sets dt_rank; Mamba-2 n_heads, head_dim and
 * ngroups; the others are 0. */
#define MODEL_PARAMS(X)                                                     \
  X(D_MODEL, d_model, NULL) X(N_LAYER, n_layer, NULL)                      \
  X(VOCAB, vocab, "vocab_size") X(D_STATE, d_state, NULL)                  \
  X(D_CONV, d_conv, NULL) X(EXPAND, expand, NULL)                          \
  X(D_INNER, d_inner, NULL) X(DT_RANK, dt_rank, NULL)                      \
  X(HEAD_DIM, head_dim, "headdim") X(N_HEADS, n_heads, "nheads")           \
  X(NGROUPS, ngroups, NULL)

enum {
#define X(id, field, alias) MP_##id,
  MODEL_PARAMS(X)
#undef X
  MP_COUNT
};

typedef struct ModelConfig {
  int version; /* 1 (Mamba) or 2 (Mamba-2) */
#define X(id, field, alias) int field;
  MODEL_PARAMS(X)
#undef X
} ModelConfig;

/* Read config.json in either published form: state-spaces
 * ({"d_model", "n_layer", "vocab_size", "ssm_cfg": {"layer": "Mamba2",
 * ...}}) or Hugging Face ({"model_type": "mamba"|"mamba2",
 * "hidden_size", "num_hidden_layers", "state_size", ...}). Defaults are
 * the published ones (d_state 16 / 128, d_conv 4, expand 2, head_dim 64,
 * ngroups 1, dt_rank ceil(d_model/16)). */
bool model_config_load(const char *path, ModelConfig *cfg, Diag *d);
/* The same from TEXT (LEN bytes), named PATH in messages. */
bool model_config_parse(const char *path, const char *text, size_t len,
                        ModelConfig *cfg, Diag *d);
void model_config_from_preset(const Preset *p, ModelConfig *cfg);
/* The config's parameters as settings (the nonzero ones) into OUT
 * (MP_COUNT long); how many. */
int model_config_settings(const ModelConfig *cfg, Setting *out);
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
 * the tensor KEY as a new array in its stored dtype (the caller frees it;
 * a file's values may stay where they lie in the file: st_tensor), or NULL
 * when the checkpoint has no such key. */
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
WeightMap *weights_parse(const Spec *spec, Diag *d);
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
/* A model directory of random weights (init-weights): DIR/model.safetensors
 * (Hugging Face key names, stored as DT) and DIR/config.json, landing
 * together as one output set (util.h; DIR is created if missing), never
 * over KEEP (an input, or NULL). *PARAMS gets the number of values;
 * *REFUSED is set when the output path itself is the problem. */
bool lm_write_random(const ModelConfig *cfg, uint64_t seed, DType dt,
                     const char *dir, const char *keep, double *params,
                     bool *refused, Diag *d);

typedef struct Lm Lm;

/* How a Mamba-2 prefill runs the state-space part: the sequential scan
 * (specs/mamba2.yaml), or the chunked SSD form (specs/mamba2_ssd.yaml:
 * matrix products over chunks of LmOpts.ssd_chunk tokens). Measured no
 * faster on the development machine (docs/language-models.md), the
 * chunked form runs only when asked for. */
typedef enum { SSD_SCAN, SSD_CHUNKED, SSD_COUNT } SsdMode;
const char *ssd_mode_name(SsdMode s); /* "scan", "chunked" */

/* A rule for a fused pass's plan: any plan of the layer's cascade C for
 * the pass's shapes S (a plan file's, the search's best), owned by the
 * caller of the rule; NULL and D set when there is none. */
typedef Plan *(*LmPlanRule)(void *ctx, const Cascade *c, const Shape *s,
                            const Pair *pairs, Diag *d);

typedef struct LmOpts {
  bool fused;          /* the fused executor with STRATEGY's plan */
  Strategy strategy;   /* else the interpreter */
  LmPlanRule plan;     /* fused: this rule's plan (with PLAN_CTX) instead
                          of STRATEGY's, made once per shape */
  void *plan_ctx;
  double buffer_bytes; /* fused: the tile buffer */
  Pool *pool;
  bool last_only;      /* logits of each sequence's last token only */
  SsdMode ssd;         /* Mamba-2 prefill: scan (the zero value) or
                          chunked */
  int ssd_chunk;       /* chunked: tokens per chunk (0: the rule's) */
} LmOpts;

/* The chunk length a pass of LEN tokens under O runs the chunked SSD
 * form with, or 0 for the sequential scan: 0 unless O asks for it, the
 * model is a Mamba-2 on the shipped layer (specs/mamba2.yaml), under the
 * interpreter, not RECORDing mixer outputs, and LEN holds at least one
 * chunk. A chunked pass runs the whole chunks in that form and the rest
 * of the tokens (fewer than a chunk) through the scan, continuing from
 * its state. */
int lm_ssd_chunk(const Lm *m, const LmOpts *o, int len, bool record);
/* The chunked form's default chunk length. */
enum { SSD_CHUNK_DEFAULT = 128 };

/* A model from CFG and CK: loads every layer's weights once, in their
 * stored dtype (CK is not used afterwards, but a file's values must
 * outlive the model: lm_open keeps its file open). SPEC (owned by the Lm
 * from here on, even on failure) is the layer cascade; NULL picks the
 * shipped one for CFG's version. */
Lm *lm_new(const ModelConfig *cfg, const Checkpoint *ck, Spec *spec,
           Diag *d);
/* A model directory: DIR/config.json and DIR/model.safetensors. */
Lm *lm_open(const char *dir, Spec *spec, Diag *d);
void lm_free(Lm *m);
const ModelConfig *lm_config(const Lm *m);
/* Bytes of weights a decode step reads (every layer's and the
 * embedding's, as held: 2 per F16 or BF16 value, 4 per F32). */
double lm_weight_bytes(const Lm *m);
/* Seconds POOL's threads take to read those bytes once where they lie,
 * in a step's order, doing nothing else (kernel_read_seconds): a decode
 * step's bound, measured on the weights' own pages. */
double lm_read_weights(const Lm *m, Pool *pool);
/* Bytes of the decode state every layer holds now (0 before the first
 * pass): a decode step reads it and writes it anew, beside the weights
 * (Mamba-2's is 786 KB a layer on mamba2-130m). */
double lm_state_bytes(const Lm *m);
/* The most bytes of activations the model has held at once: the stream
 * between layers, every layer's decode state, and on top what a layer's
 * executor held (arrays, tiles, weights packed for tiles) or the head
 * (the logits). */
double lm_peak_bytes(const Lm *m);

/* Run TOKENS (BATCH sequences of LEN, row-major) through the model,
 * continuing from the decode state (zero after lm_new / lm_reset), which
 * then holds the state after the last token. Under the interpreter and
 * without RECORD, more than 512 tokens run as passes of 512, each
 * continuing from the last (the same numbers up to rounding, less memory
 * mapped per layer); O's ssd picks Mamba-2's SSM form (lm_ssd_chunk). *LOGITS gets [BATCH, LEN,
 * vocab] (or [BATCH, vocab] with last_only). RECORD, when not NULL,
 * receives "layers.{i}.mixer_output" [BATCH, LEN, d_model]. */
bool lm_forward(Lm *m, const int *tokens, int batch, int len,
                const LmOpts *o, Array **logits, Tensors *record, Diag *d);
/* Forget the decode state. */
void lm_reset(Lm *m);
/* The decode state of every layer as "layers.{i}.conv_state" and
 * "layers.{i}.ssm_state" (the section's names) in the reference's layouts;
 * false if nothing has run yet. */
bool lm_export_state(const Lm *m, Tensors *out);
/* Bytes a pass of BATCH x LEN tokens holds beyond the weights, an upper
 * bound: the executor's (exec_bytes), the decode state of every layer,
 * the stream, the head and the logits, and with RECORD the mixer
 * outputs. False with D set if the shape cannot be bound. */
bool lm_pass_bytes(Lm *m, int batch, int len, const LmOpts *o, bool record,
                   double *bytes, Diag *d);

/* ---- text ----
 *
 * A Hugging Face tokenizer.json of the byte-level BPE kind (GPT-2,
 * GPT-NeoX: what Mamba checkpoints carry, beside config.json). What is
 * supported of the format is in tokenizer.c. */
typedef struct Tokenizer Tokenizer;

/* Errors name the file (and the line and column of bad JSON). The file
 * is read as every text input is (a regular file or a pipe, at most
 * INPUT_TEXT_MAX bytes), and its ids are below its size in bytes. */
Tokenizer *tokenizer_load(const char *path, Diag *d);
/* The same for the LEN bytes of TEXT, named PATH in messages. */
Tokenizer *tokenizer_parse(const char *path, const char *text, size_t len,
                           Diag *d);
void tokenizer_free(Tokenizer *t);
/* Ids run from 0 to tokenizer_size - 1 (some may stand for nothing). */
int tokenizer_size(const Tokenizer *t);
/* TEXT (LEN bytes of UTF-8) as token ids: *N of them in *IDS (malloc'd).
 * False (D set) if TEXT is not valid UTF-8. */
bool tokenizer_encode(const Tokenizer *t, const char *text, size_t len,
                      int **ids, int *n, Diag *d);
/* The bytes token ID stands for: *LEN of them, not NUL-terminated, maybe
 * only part of a UTF-8 character (the next tokens complete it); NULL for
 * an id that stands for nothing. */
const char *tokenizer_token(const Tokenizer *t, int id, int *len);

#endif
