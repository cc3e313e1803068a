/* exec.h — running cascades on real tensors.
 *
 * Arrays are dense fp32 tensors, or 16-bit weights as a checkpoint stores
 * them (used where they lie in a mapped file). Tensors travel as
 * safetensors files
 * (8-byte little-endian header length, a JSON header of {name: {dtype,
 * shape, data_offsets}}, raw little-endian data), read strictly: a
 * malformed file is rejected with a message, never half-read. The
 * executor knows cascades and plans, not language models (src/lm/). */
#ifndef MAMBALAYA_EXEC_H
#define MAMBALAYA_EXEC_H

#include "../fusion/fusion.h"
#include "../ir/ir.h"

/* ---- arrays ---- */

typedef enum { DT_F32, DT_F16, DT_BF16, DT_F64, DT_COUNT } DType;

const char *dtype_name(DType t); /* "F32", ... */
int dtype_size(DType t);         /* bytes per element */
/* The dtype named S ("F32", ...); false if none is. */
bool dtype_from_name(const char *s, DType *t);
/* One F16 or BF16 value (T) as fp32: exact. */
float dtype_half_value(DType t, uint16_t h);
/* V as an F16 or BF16 value (T), rounded to nearest even (too large: inf;
 * NaN stays a quiet NaN). */
uint16_t dtype_half_of(DType t, float v);
/* An fp32 value from its bits, and its bits (IEEE 754 binary32). */
float f32_from_bits(uint32_t u);
uint32_t f32_bits(float f);

/* Computed tensors are fp32. Weights may stay in their checkpoint's 16-bit
 * dtype (F16, BF16): the GEMM kernels read them as they are, converting in
 * registers, and the vector machine widens what else reads them. */
typedef struct Array {
  int ndim;
  int64_t shape[IR_MAX_RANKS];
  int64_t n;            /* number of elements: the product of shape */
  DType dtype;          /* DT_F32: the values are DATA; DT_F16, DT_BF16: HALF */
  float *data;          /* fp32 values, row-major */
  const uint16_t *half; /* 16-bit values, row-major */
  void *own;            /* what array_free frees with the array; NULL when
                           the values belong to another owner (a mapped
                           checkpoint file) that outlives the array */
  size_t mapped;        /* bytes of OWN mapped from the system (array_new's
                           large arrays), 0 if from the heap */
} Array;

/* A zero-filled fp32 array; NULL if the size overflows. */
Array *array_new(int ndim, const int64_t *shape);
/* The same, its values not set (no pages cleared): for an array its
 * maker writes whole before anything reads it (the next decode state). */
Array *array_uninit(int ndim, const int64_t *shape);
/* A copy, in A's dtype. */
Array *array_clone(const Array *a);
/* A's values as a new fp32 array. */
Array *array_f32(const Array *a);
/* Elements [FIRST, FIRST + the product of SHAPE) of A as an array of
 * SHAPE in A's dtype: sharing A's values when A does not own them (they
 * live as long as their owner), a copy otherwise. NULL if out of range. */
Array *array_part(const Array *a, int64_t first, int ndim,
                  const int64_t *shape);
/* Bytes of A's values. */
double array_bytes(const Array *a);
void array_free(Array *a);

/* ---- safetensors ---- */

typedef struct StEntry {
  const char *name;
  DType dtype;
  int ndim;
  int64_t shape[IR_MAX_RANKS];
  uint64_t begin, end; /* byte offsets into the data section */
} StEntry;

typedef struct StFile {
  const char *path;
  unsigned char *bytes; /* the whole file, owned (read, or mapped) */
  size_t len;
  bool mapped;          /* BYTES is a read-only mapping of the file */
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
/* Open a file: mapped read-only where the system allows (a checkpoint's
 * tensors are then used where they lie, see st_tensor), else read. */
StFile *st_open(const char *path, Diag *d);
void st_close(StFile *f);
const StEntry *st_find(const StFile *f, const char *name);
/* The tensor converted to fp32 (F16, BF16 and F64 are converted). */
Array *st_array(const StFile *f, const StEntry *e);
/* The tensor as stored (F64 converted to fp32): F32, F16 and BF16 values
 * are used where they lie in F's bytes (no copy) when the host is
 * little-endian and they are aligned, else copied. Close F only after
 * freeing the array. */
Array *st_tensor(const StFile *f, const StEntry *e);

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
  bool vm_only;        /* every Einsum through the vector machine and
                          kernel_gemm: no scan kernel (to test it against) */
  bool state_in_place; /* the executor may advance the decode state in
                          place (the interpreter, and the fused executor
                          where a unit runs as one tile): an
                          initialization input (H0) read by
                          nothing but the scan kernel's recurrence is
                          overwritten with the next state, which NEXT then
                          holds as the same array, not owned (a decode step
                          then reads and writes the state once, copying
                          nothing) */
} ExecOpts;

typedef struct ExecStats {
  /* Fused executor: distinct elements' bytes (4 per fp32 value) moved
   * between off-chip memory and the chip, per tensor and in total,
   * counted once per group (the model's ideal accounting). */
  double *read, *write; /* per tensor of the cascade, owned */
  double read_total, write_total;
  double peak_bytes; /* the most bytes held at once: arrays, tile buffers,
                        weights packed for tiles, widened 16-bit inputs */
  int64_t scan_einsums; /* Einsum runs the scan kernel did (a linear
                           recurrence and its read-out, run.h) */
  int64_t gemv_einsums; /* Einsums run as matrix-vector products together
                           (the interpreter with a pool: vm.h's vm_gemvs) */
  int64_t background_einsums; /* of those, run by the workers while the
                                 caller ran what comes before their first
                                 reader (vm_gemv_start) */
  int64_t chained_einsums; /* Einsum runs that joined a chain of
                              elementwise ones, run unit by unit with it
                              (vm.h's vm_exec_chain) */
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

/* The same, prepared once and run many times on inputs of the same shapes
 * (a language model's layers, token after token): the schedule and the
 * compiled jobs are kept between runs, and a run over inputs laid out as
 * before only binds them and runs. C, S and O's plan must outlive it. */
typedef struct Exec Exec;
Exec *exec_new(const Cascade *c, const Shape *s, const ExecOpts *o,
               Diag *d);
bool exec_step(Exec *x, const Tensors *inputs, Tensors *results,
               Tensors *next, ExecStats *stats, Diag *d);
/* The most bytes the last run held at once: arrays, tile buffers, weights
 * packed for tiles (ExecStats.peak_bytes, without counting traffic). */
double exec_peak_bytes(const Exec *x);
/* Array A (a result of X's, or an input the caller is done with) kept
 * for a later step's tensor of its size, as X keeps its own arrays
 * (run_drop), where array_free would unmap it: a model's next layer
 * then writes its stream into pages already mapped. */
void exec_recycle(Exec *x, Array *a);
void exec_free(Exec *x);

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
/* The same job for the workers alone, in the background: returns at once
 * (with no worker free, after running it inline). Until pool_join, which
 * runs what no worker took and waits for the rest, the caller's pool_runs
 * run inline on its own thread. */
void pool_start(Pool *p, void (*fn)(void *arg, int i, int n), void *arg, int n);
void pool_join(Pool *p);
void pool_free(Pool *p);

/* ---- kernels ---- */

/* C[b][m][n] (+)= sum_k A[b][m][k] * B[b][k][n], every operand addressed by
 * element strides (so transposed and strided views need no copy):
 *   A[b][m][k] = a[b*a_b + m*a_m + k*a_k], and likewise for B and C.
 * A and B are fp32, or 16-bit (F16, BF16: weights as a checkpoint stores
 * them), read as they are and converted in registers; C is fp32; fp32
 * accumulation in blocks (as BLAS and PyTorch do). */
typedef struct Gemm {
  int64_t m, n, k, batch;
  const void *a;
  int64_t a_m, a_k, a_b;
  const void *b;
  int64_t b_k, b_n, b_b;
  float *c;
  int64_t c_m, c_n, c_b;
  DType a_type, b_type; /* DT_F32 (the zero value), DT_F16 or DT_BF16 */
  bool accumulate;      /* C += A.B; else C = A.B */
} Gemm;

/* Blocked, packed, multithreaded over POOL (NULL: one thread). Fast when
 * m is large (prefill) and when m is small (decode: a matrix-vector
 * product that streams the weights at memory speed). */
void kernel_gemm(const Gemm *g, Pool *pool);

/* One operand of many products, packed once: the weights of a GEMM that
 * runs over many regions (the tiles of a fused group), so that each
 * product packs only its other operand. */
typedef struct GemmPack GemmPack;
/* G's A (B_SIDE false) or B, packed as kernel_gemm's packed path reads
 * it; NULL when G would not take that path (nothing to gain). */
GemmPack *kernel_gemm_pack(const Gemm *g, bool b_side, Pool *pool);
/* kernel_gemm, reading the packed operand from PK when PK was packed from
 * the same values, strides and sizes and the product takes the packed
 * path; otherwise as kernel_gemm. */
void kernel_gemm_with(const Gemm *g, const GemmPack *pk, Pool *pool);
double kernel_gemm_pack_bytes(const GemmPack *pk);
void kernel_gemm_pack_free(GemmPack *pk);

/* DST[i] = SRC[i] (16-bit values of dtype T) as fp32, for i < N: F16C and
 * AVX2 where the CPU has them. */
void kernel_widen(DType t, const uint16_t *src, float *dst, int64_t n);

/* The machine's copy bandwidth in bytes/s (read + write), measured by
 * copying BYTES (e.g. 256 MiB) a few times with POOL's threads. Both
 * probes' buffers are in huge pages where the system gives them, as the
 * weights are (util/pages.c): a bound the weights' own pages could not
 * reach would not be one. */
double kernel_copy_bandwidth(size_t bytes, Pool *pool);
/* The machine's read bandwidth in bytes/s: POOL's threads sum a buffer of
 * BYTES, best of five passes (a decode step's bound: a GEMV only reads). */
double kernel_read_bandwidth(size_t bytes, Pool *pool);
/* Seconds POOL's threads take to read N regions (P[i], BYTES[i] bytes)
 * once, each thread its part of every region, in one job: the least a
 * step that reads those bytes from memory can take (lm_read_weights). */
double kernel_read_seconds(const void *const *p, const size_t *bytes, int n,
                           Pool *pool);

#endif
