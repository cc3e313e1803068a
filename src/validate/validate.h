/* validate.h — the model against measured hardware (docs/validation.md).
 *
 * Vidur (github.com/microsoft/vidur) publishes the CUDA kernel times of
 * every operator of a decoder layer, per model, GPU, token count and
 * tensor-parallel degree (data/profiling/compute/GPU/ORG/MODEL/mlp.csv):
 * the median of 20 runs, one GPU's shard, no all-reduce. `validate`
 * reads those files unchanged, builds each operator as the Einsums it
 * runs on its shard, prices it on the GPU's architecture file (one
 * kernel: the operator's Einsums fused in one group) and compares:
 *
 *   vidur.c     the CSV files: a file or every mlp.csv under a folder;
 *   operators.c each operator as a cascade, from the row's sizes;
 *   validate.c  the pricing of every row and operator, the errors and
 *               their statistics;
 *   output.c    text, CSV, JSON and the predicted-against-measured
 *               figure.
 *
 * It depends down the flow: spec (a cascade from text), fusion (the
 * plan), model (the price), report (the figure's renderer). */
#ifndef MAMBALAYA_VALIDATE_H
#define MAMBALAYA_VALIDATE_H

#include "../model/model.h"
#include "../report/report.h"

/* The operators an mlp.csv times (Vidur's vidur/profiling/mlp/), in its
 * column order: X(ID, name, what it is). */
#define VIDUR_OPS(X)                                                        \
  X(EMB, "emb", "the token embedding: a gather of the tokens' rows")        \
  X(INPUT_NORM, "input_layernorm", "RMSNorm before attention")              \
  X(QKV, "attn_pre_proj", "the Q, K and V projections, one GEMM")           \
  X(ROPE, "attn_rope", "rotary embedding of Q and K")                       \
  X(O_PROJ, "attn_post_proj", "the attention output projection")            \
  X(POST_NORM, "post_attention_layernorm", "RMSNorm before the MLP")        \
  X(UP, "mlp_up_proj", "the MLP's up projection (gate and up fused)")       \
  X(ACT, "mlp_act", "SiLU(gate) x up, or GELU")                             \
  X(DOWN, "mlp_down_proj", "the MLP's down projection")                     \
  X(ADD, "add", "the residual add")

typedef enum {
#define X(id, ...) VOP_##id,
  VIDUR_OPS(X)
#undef X
  VOP_COUNT
} VidurOp;

const char *vidur_op_name(VidurOp op);

/* One row of an mlp.csv: the model's sizes (its own columns), the token
 * count, the tensor-parallel degree and each operator's median time. */
typedef struct VidurRow {
  int line;
  int heads, kv_heads, embd, expanded, vocab;
  bool gated;
  int tokens, tp;
  int add_inputs; /* the residual add's: 2, or 3 in a parallel block (no
                     post-attention norm: attention + MLP + residual) */
  double measured_ms[VOP_COUNT]; /* NAN: the file does not time it */
} VidurRow;

/* One mlp.csv, with the GPU and the model its folders name
 * (.../GPU/ORG/MODEL/mlp.csv; "" where the path is shorter). */
typedef struct VidurFile {
  char *path, *gpu, *model;
  int nrows;
  VidurRow *rows;
} VidurFile;

typedef struct VidurSet {
  int n;
  VidurFile *files;
} VidurSet;

/* Read PATH: an mlp.csv, or every file named mlp.csv under a folder (by
 * path). False with D set (FILE:LINE:COL) on a missing column, a bad
 * number, a row of the wrong length, a folder without one. */
bool vidur_read(const char *path, VidurSet *out, Diag *d);
void vidur_free(VidurSet *s);

/* The shipped architecture a GPU folder's timings were measured on
 * ("a100": the A100 SXM4 80 GB, "h100": the H100 SXM5), or NULL. */
const char *vidur_gpu_arch(const char *gpu);
/* Is MODEL ("meta-llama/Llama-2-7b-hf") one of those the GPU files'
 * fitted fields were fitted on? The others are held out. */
bool vidur_tuning_model(const char *model);

/* Operator OP of ROW as the spec of the Einsums it runs on one shard
 * (the row's tensor-parallel degree), into B. */
void vidur_op_spec(VidurOp op, const VidurRow *row, Buf *b);

/* The kernel Vidur's software runs operator OP of ROW as (operators.c:
 * Sarathi's CUDA kernels, PyTorch's): its blocks, threads and the round
 * trips each thread waits one after another. A GEMM's (cuBLAS's) has
 * none beyond its first: its pipeline overlaps its loads. */
GpuKernel vidur_op_kernel(VidurOp op, const VidurRow *row);

/* One operator of one row, priced. Times in milliseconds; the error is
 * predicted / measured - 1. */
typedef struct ValRecord {
  int file, row;
  VidurOp op;
  int tokens, tp;
  double predicted_ms, measured_ms, error;
} ValRecord;

typedef struct Validation {
  int n;
  ValRecord *rec;
} Validation;

/* Price every operator of every row of SET whose degree is TP (0: all)
 * on ARCH[i] for file i. NULL with D set when an operator cannot be
 * priced. */
Validation *validate_run(const VidurSet *set, Arch *const *arch, int tp,
                         Diag *d);
void validation_free(Validation *v);

/* |error| statistics of the records KEEP accepts (FILE -1: any file, OP
 * -1: any operator, GPU NULL: any, HELD: 1 held-out models only, 0
 * tuning ones, -1 both): their count, median and 90th percentile (the
 * nearest rank: the ceil(0.9 n)-th smallest). */
typedef struct ValFilter {
  int file, op, held;
  const char *gpu;
} ValFilter;
typedef struct ValStats {
  int n;
  double median, p90;
} ValStats;
ValStats validate_stats(const Validation *v, const VidurSet *set,
                        ValFilter f);

/* ---- output (output.c) ---- */

void validate_text(Buf *b, const Validation *v, const VidurSet *set,
                   Arch *const *arch, int worst);
void validate_csv(Buf *b, const Validation *v, const VidurSet *set);
json_t *validate_json(const Validation *v, const VidurSet *set,
                      Arch *const *arch);
/* Predicted against measured, log-log, the y = x line, one colour per
 * operator, as a document in format F. */
void validate_chart(Buf *b, const Validation *v, Format f);

#endif
