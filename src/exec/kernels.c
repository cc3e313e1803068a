/* kernels.c — matrix products over fp32 and 16-bit operands, conversion
 * of 16-bit values, and a memory-bandwidth probe.
 *
 * kernel_gemm takes one of three paths:
 *
 *  - The packed path (Goto / BLIS), for products with many rows. For each
 *    NC-column panel of B and each KC-deep slice of k, the panel is packed
 *    into NR-wide slivers (contiguous, zero-padded); then for each MC-row
 *    block of A the block is packed into MR-tall slivers, and a
 *    register-blocked micro-kernel multiplies one A sliver by one B sliver
 *    into an MR x NR tile of C (6 x 16 with AVX2: 12 accumulators; 8 x 32
 *    with AVX-512: 16). The packed A block stays in L2 and the B sliver in
 *    L1 while the micro-kernel runs; packing also turns every stride
 *    layout (row-major, transposed, padded) into the same contiguous one,
 *    and fetches each sliver's source rows while the one before is packed.
 *
 *  - The dot path, for few rows of A (m <= DOT_MAX_M: one decode token per
 *    sequence) against B = W^T with W's rows contiguous (the layout of
 *    checkpoint weights: projections, LM head). Each output is a dot
 *    product of two contiguous vectors, so the weights stream once, in
 *    order (row after row, fetched ahead), at memory speed; each row of W
 *    serves up to 3 rows of A while it is in L1.
 *
 *  - The row path, for very few rows (m <= ROW_MAX_M) against a row-major
 *    B: B's rows are read in order, each scaled into per-row sums held in
 *    L1, so again the weights stream once in long runs.
 *
 * A product with few columns and many rows is run transposed, and batches
 * that share B (or A) are folded into one product with more rows (or
 * columns), so the weights are read once for all of them.
 *
 * 16-bit operands (F16, BF16: weights as checkpoints store them) are read
 * as they are: the dot path streams W's 16-bit values and converts them
 * in registers (F16C; BF16 is a shift), so a decode step reads half the
 * bytes; the packed path converts while packing, as it copies anyway, in
 * the same pass as the transpose (a weight's rows become B's columns). A
 * 16-bit A with few columns in C is run transposed, to stream as W. The
 * row path takes fp32 only (others go to the packed path).
 *
 * A weight that many products share (a fused group's GEMM, run once per
 * tile) can be packed once (kernel_gemm_pack): each product then packs
 * only its other operand.
 *
 * All paths accumulate in fp32 in blocks of KC along k: each block is
 * summed from zero, then added to the running total, so a long k (50k)
 * costs little accuracy (~KC + K/KC roundings deep instead of K).
 *
 * Each path has an AVX2+FMA version, chosen at run time when the CPU has
 * it, and a portable version written with GCC vector extensions (SSE2 on
 * x86-64); the packed and dot paths also have AVX-512 versions (F, BW,
 * VL): the packed path's runs wherever the CPU has those, the dot path's
 * on Intel's only (isa.c, isa_avx512). The binary itself targets any x86-64.
 * MAMBALAYA_KERNELS=portable (or avx2, or avx512) forces the portable (or
 * AVX2, or all the AVX-512) ones.
 *
 * Work is split over the pool by batch, then by columns of C (each thread
 * packs its own B panel, or streams its own part of the weights), or by
 * rows when C has too few columns. C must not overlap A or B, and within
 * a batch no two elements of C may share memory; batches that share all
 * of C (c_b == 0) run one after another, so that with accumulate C sums
 * them all. */
#include "isa.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void kernel_widen(DType t, const uint16_t *src, float *dst, int64_t n) {
  kernel_isa()->widen(t, src, dst, n);
}

/* ---- buffers ---- */

/* Cache-line-aligned scratch: packed slivers are loaded a vector at a
 * time, and a vector split over two lines costs two loads. */
static float *scratch_floats(int64_t n) {
  size_t bytes = (size_t)round_up(max64(n, 1) * (int64_t)sizeof(float), 64);
  float *p = aligned_alloc(64, bytes);
  if (!p)
    out_of_memory(bytes);
  return p;
}

/* ---- packing ---- */

/* A matrix operand: element (i, j) is the value of dtype T at P[i * RS +
 * j * CS]. */
typedef struct Mat {
  const void *p;
  DType t;
  int64_t rs, cs;
} Mat;

/* The same matrix from element (I, J) on. */
static Mat mat_from(Mat m, int64_t i, int64_t j) {
  m.p = elem(m.p, m.t, i * m.rs + j * m.cs);
  return m;
}

/* N consecutive values from P (dtype T) into DST as fp32. */
static void get_run(const Isa *isa, const void *p, DType t, int64_t n,
                    float *dst) {
  if (t == DT_F32)
    memcpy(dst, p, (size_t)n * sizeof *dst);
  else
    isa->widen(t, p, dst, n);
}

static float get_one(Mat m, int64_t i, int64_t j) {
  int64_t k = i * m.rs + j * m.cs;
  return m.t == DT_F32 ? ((const float *)m.p)[k]
                       : dtype_half_value(m.t, ((const uint16_t *)m.p)[k]);
}


/* dst[p * n + j] = S(j, p) for j < cols, 0 for cols <= j < n: one sliver
 * of LEN <= KC, for any strides and dtype. */
static void pack_sliver(const Isa *isa, Mat s, int cols, int n, int64_t len,
                        float *dst) {
  if (s.cs == 1 && cols == n) {
    const void *v[NR_MAX];
    for (int j = 0; j < n; j++)
      v[j] = elem(s.p, s.t, j * s.rs);
    isa->interleave(s.t, v, n, len, dst);
    return;
  }
  if (cols < n)
    memset(dst, 0, (size_t)(n * len) * sizeof *dst);
  if (s.rs == 1 && cols == n) {
    for (int64_t p = 0; p < len; p++)
      get_run(isa, elem(s.p, s.t, p * s.cs), s.t, n, dst + p * n);
    return;
  }
  for (int64_t p = 0; p < len; p++)
    for (int j = 0; j < cols; j++)
      dst[p * n + j] = get_one(s, j, p);
}

/* Start fetching ROWS rows of S (contiguous) into L2, LEN values each. */
static void prefetch_rows(Mat s, int64_t rows, int64_t len) {
  int64_t per_line = 64 / esize(s.t);
  for (int64_t j = 0; j < rows; j++)
    for (int64_t l = 0; l < len; l += per_line)
      __builtin_prefetch(elem(s.p, s.t, j * s.rs + l), 0, 2);
}

/* S[0..outer)[0..len) into slivers of N rows: dst[(i / N) * N * len + p *
 * N + i % N], rows past OUTER zero. Where S's rows are contiguous, the next
 * sliver's rows are fetched while this one is transposed: they lie a whole
 * row of the matrix apart, a few lines each (KC values), too short for the
 * hardware prefetcher to follow (a 1536 x 768 F16 weight packed 1.1-1.3x
 * faster, bench_kernels --prefill). */
static void pack_slivers(const Isa *isa, Mat s, int64_t outer, int64_t len,
                         int n, float *dst) {
  for (int64_t i0 = 0; i0 < outer; i0 += n, dst += n * len) {
    if (s.cs == 1 && i0 + n < outer)
      prefetch_rows(mat_from(s, i0 + n, 0), min64(n, outer - i0 - n), len);
    pack_sliver(isa, mat_from(s, i0, 0), (int)min64(n, outer - i0), n, len,
                dst);
  }
}

/* A[0..mc)[0..kc) into slivers of MR rows. */
static void pack_a(const Isa *isa, Mat a, int64_t mc, int64_t kc, int mr,
                   float *dst) {
  pack_slivers(isa, a, mc, kc, mr, dst);
}

/* B[0..kc)[0..nc) into slivers of NR columns: dst[(j / NR) * NR * kc + p
 * * NR + j % NR], columns past nc zero. */
static void pack_b(const Isa *isa, Mat b, int64_t kc, int64_t nc, int nr,
                   float *dst) {
  int64_t whole = nc / nr * nr;
  if (b.cs == 1) {
    /* Row-major: read each row of the panel from end to end, dealing its
     * pieces out to the slivers (walking one sliver down the rows would
     * touch a new page at every row when B is wide). */
    for (int64_t p = 0; p < kc; p++)
      for (int64_t j0 = 0; j0 < whole; j0 += nr)
        get_run(isa, elem(b.p, b.t, p * b.rs + j0), b.t, nr,
                dst + j0 * kc + p * nr);
    b = mat_from(b, 0, whole);
    dst += whole * kc;
    nc -= whole;
  }
  /* A sliver is B's columns as rows: transposed. */
  Mat bt = {b.p, b.t, b.cs, b.rs};
  pack_slivers(isa, bt, nc, kc, nr, dst);
}

/* A[0..m)[0..k) into dst[i * k + p] as fp32: contiguous rows for the dot
 * path. */
static void pack_rows(const Isa *isa, Mat a, int64_t m, int64_t k,
                      float *dst) {
  for (int64_t i = 0; i < m; i++) {
    if (a.cs == 1) {
      get_run(isa, elem(a.p, a.t, i * a.rs), a.t, k, dst + i * k);
      continue;
    }
    for (int64_t p = 0; p < k; p++)
      dst[i * k + p] = get_one(a, i, p);
  }
}

/* ---- operands packed once ---- */

/* The whole of A (B_SIDE false: slivers of MR rows) or B (slivers of NR
 * columns), KC-deep block after block: block PC (a multiple of KC) starts
 * at round_up(m or n, MR or NR) * PC, and a block's slivers are in order,
 * so the packed path finds its block (IC or JC, PC) at ... + IC * kc. */
struct GemmPack {
  const Isa *isa;
  bool b_side;
  Mat src;
  int64_t outer, k; /* rows of A (or columns of B), and the depth */
  float *data;
  int64_t floats;
};

static const float *pack_block(const GemmPack *pk, int64_t first,
                               int64_t pc) {
  int step = pk->b_side ? pk->isa->nr : pk->isa->mr;
  int64_t kc = min64(KC, pk->k - pc);
  return pk->data + round_up(pk->outer, step) * pc + first * kc;
}

typedef struct PackJob {
  GemmPack *pk;
  int64_t per; /* slivers per task */
  int64_t nslivers;
} PackJob;

/* Task T: a run of slivers of one KC block. */
static void pack_task(void *arg, int t, int n) {
  (void)n;
  const PackJob *job = arg;
  GemmPack *pk = job->pk;
  int step = pk->b_side ? pk->isa->nr : pk->isa->mr;
  int64_t parts = ceil_div(job->nslivers, job->per);
  int64_t pc = (t / parts) * KC, s0 = (t % parts) * job->per;
  int64_t s1 = min64(job->nslivers, s0 + job->per);
  int64_t kc = min64(KC, pk->k - pc), first = s0 * step;
  int64_t count = min64(s1 * step, pk->outer) - first;
  float *dst = (float *)pack_block(pk, first, pc);
  if (pk->b_side)
    pack_b(pk->isa, mat_from(pk->src, pc, first), kc, count, step, dst);
  else
    pack_a(pk->isa, mat_from(pk->src, first, pc), count, kc, step, dst);
}

static GemmPack *pack_whole(const Isa *isa, bool b_side, Mat src,
                            int64_t outer, int64_t k, Pool *pool) {
  GemmPack *pk = xcalloc(1, sizeof *pk);
  *pk = (GemmPack){.isa = isa, .b_side = b_side, .src = src, .outer = outer,
                   .k = k};
  int step = b_side ? isa->nr : isa->mr;
  pk->floats = round_up(outer, step) * k;
  pk->data = scratch_floats(pk->floats);
  PackJob job = {.pk = pk, .nslivers = ceil_div(outer, step)};
  int threads = pool_size(pool);
  job.per = ceil_div(job.nslivers, 2 * (int64_t)threads);
  int64_t tasks = ceil_div(k, KC) * ceil_div(job.nslivers, job.per);
  pool_run(threads > 1 ? pool : NULL, pack_task, &job, (int)tasks);
  return pk;
}

double kernel_gemm_pack_bytes(const GemmPack *pk) {
  return pk ? 4.0 * (double)pk->floats : 0;
}

void kernel_gemm_pack_free(GemmPack *pk) {
  if (!pk)
    return;
  free(pk->data);
  free(pk);
}

/* ---- the packed path ---- */

/* How a product is cut into pool tasks: task t takes batches
 * [bt * per_task, ...) and, within them, the rows and columns of part
 * (t % (tm * tn)) of a tm x tn grid of blocks MSTEP x NSTEP. */
typedef struct Split {
  int64_t per_task; /* batches per task */
  int64_t tm, tn, mstep, nstep;
  int ntasks;
} Split;

typedef struct PackedJob {
  const Gemm *g;
  const Isa *isa;
  Split s;
  const GemmPack *pa, *pb; /* A or B packed once, or NULL */
} PackedJob;

/* G's operands as matrices: A (m x k) and B (k x n) of batch BI. */
static Mat mat_a(const Gemm *g, int64_t bi) {
  return (Mat){elem(g->a, g->a_type, bi * g->a_b), g->a_type, g->a_m, g->a_k};
}

static Mat mat_b(const Gemm *g, int64_t bi) {
  return (Mat){elem(g->b, g->b_type, bi * g->b_b), g->b_type, g->b_k, g->b_n};
}

/* C[m0..m1)[n0..n1) of one batch, the Goto way: B panels and A blocks
 * packed here (into BBUF, ABUF), or found packed in JOB's packs. */
static void packed_block(const PackedJob *job, int64_t bi, int64_t m0,
                         int64_t m1, int64_t n0, int64_t n1, float *abuf,
                         float *bbuf) {
  const Gemm *g = job->g;
  const Isa *isa = job->isa;
  const int mr = isa->mr, nr = isa->nr;
  Mat a = mat_a(g, bi), b = mat_b(g, bi);
  float *c = g->c + bi * g->c_b;
  for (int64_t jc = n0; jc < n1; jc += NC_COLS) {
    int64_t nc = min64(NC_COLS, n1 - jc);
    for (int64_t pc = 0; pc < g->k; pc += KC) {
      int64_t kc = min64(KC, g->k - pc);
      bool overwrite = pc == 0 && !g->accumulate;
      const float *bp = bbuf;
      if (job->pb)
        bp = pack_block(job->pb, jc, pc);
      else
        pack_b(isa, mat_from(b, pc, jc), kc, nc, nr, bbuf);
      for (int64_t ic = m0; ic < m1; ic += MC_ROWS) {
        int64_t mc = min64(MC_ROWS, m1 - ic);
        const float *ap = abuf;
        if (job->pa)
          ap = pack_block(job->pa, ic, pc);
        else
          pack_a(isa, mat_from(a, ic, pc), mc, kc, mr, abuf);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          int cols = (int)min64(nr, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += mr)
            isa->micro(kc, ap + ir * kc, bp + jr * kc,
                       c + (ic + ir) * g->c_m + (jc + jr) * g->c_n, g->c_m,
                       g->c_n, (int)min64(mr, mc - ir), cols, overwrite);
        }
      }
    }
  }
}

static void packed_task(void *arg, int t, int n) {
  (void)n;
  const PackedJob *job = arg;
  const Gemm *g = job->g;
  const Split *s = &job->s;
  int64_t parts = s->tm * s->tn, part = t % parts;
  int64_t b0 = (t / parts) * s->per_task;
  int64_t b1 = min64(g->batch, b0 + s->per_task);
  int64_t m0 = (part / s->tn) * s->mstep, m1 = min64(g->m, m0 + s->mstep);
  int64_t n0 = (part % s->tn) * s->nstep, n1 = min64(g->n, n0 + s->nstep);
  if (m0 >= m1 || n0 >= n1)
    return;
  int64_t kc = min64(KC, g->k);
  float *abuf = job->pa ? NULL
                        : scratch_floats(
                              round_up(min64(MC_ROWS, m1 - m0), job->isa->mr) *
                              kc);
  float *bbuf = job->pb ? NULL
                        : scratch_floats(
                              round_up(min64(NC_COLS, n1 - n0), job->isa->nr) *
                              kc);
  for (int64_t bi = b0; bi < b1; bi++)
    packed_block(job, bi, m0, m1, n0, n1, abuf, bbuf);
  free(abuf);
  free(bbuf);
}

/* Cut BATCH products of M x N into tasks for THREADS threads: whole
 * batches when there are enough of them (up to 8 tasks per thread, which
 * the pool hands out as threads come free), else about THREADS blocks of
 * columns (aligned to COL_ALIGN), else of rows (aligned to ROW_ALIGN). */
static Split split_work(int64_t batch, int64_t m, int64_t n, int threads,
                        int64_t row_align, int64_t col_align) {
  Split s = {.per_task = 1, .tm = 1, .tn = 1, .mstep = m, .nstep = n};
  if (batch >= threads) {
    s.per_task = ceil_div(batch, 8 * (int64_t)threads);
  } else {
    int64_t parts = ceil_div(threads, batch);
    if (n >= parts * 4 * col_align)
      s.tn = parts;
    else if (m >= parts * 2 * row_align)
      s.tm = parts;
    else
      s.tn = min64(parts, ceil_div(n, col_align));
    s.mstep = round_up(ceil_div(m, s.tm), row_align);
    s.nstep = round_up(ceil_div(n, s.tn), col_align);
    s.tm = ceil_div(m, s.mstep);
    s.tn = ceil_div(n, s.nstep);
  }
  s.ntasks = (int)(ceil_div(batch, s.per_task) * s.tm * s.tn);
  return s;
}

static void gemm_packed(const Gemm *g, const Isa *isa, Pool *pool,
                        int threads, const GemmPack *pa, const GemmPack *pb) {
  PackedJob job = {.g = g, .isa = isa, .pa = pa, .pb = pb};
  job.s = split_work(g->batch, g->m, g->n, threads, isa->mr, isa->nr);
  pool_run(pool, packed_task, &job, job.s.ntasks);
}

/* ---- the dot path ---- */

typedef struct DotJob {
  const Gemm *g;
  const Isa *isa;
  Split s;
  const float *apack; /* the dot path's A, packed (dot_a), or NULL */
} DotJob;

/* A task's batches [b0, b1) and columns [n0, n1) of a split by columns
 * (the dot and row paths); n0 >= n1 when it has no columns. */
typedef struct Part {
  int64_t b0, b1, n0, n1;
} Part;

static Part job_part(const DotJob *job, int t) {
  const Split *s = &job->s;
  Part p = {.b0 = (t / s->tn) * s->per_task, .n0 = (t % s->tn) * s->nstep};
  p.b1 = min64(job->g->batch, p.b0 + s->per_task);
  p.n1 = min64(job->g->n, p.n0 + s->nstep);
  return p;
}

/* G split by columns of COLS at a time, a few parts per thread (so that
 * a thread that wakes late takes fewer), each part run by TASK. */
static void run_by_columns(DotJob *job, Pool *pool, int threads,
                           int64_t cols, void (*task)(void *, int, int)) {
  job->s = split_work(job->g->batch, 1, job->g->n, 4 * threads, 1, cols);
  pool_run(pool, task, job, job->s.ntasks);
}

/* Start fetching part PART of NPARTS of W's rows [J, J + DOT_COLS) (those
 * before N1), K values each. With many rows of A, each group of W's rows
 * is used by several dot kernel calls, which run from cache: meanwhile
 * the next group is fetched, a part per call, so that memory stays busy
 * (the hardware prefetcher alone runs only a few lines ahead). */
static void prefetch_part(Mat w, int64_t j, int64_t n1, int64_t k,
                          int64_t part, int64_t nparts) {
  int64_t per_line = 64 / esize(w.t);
  int64_t lines = ceil_div(k, per_line);
  int64_t l0 = lines * part / nparts, l1 = lines * (part + 1) / nparts;
  for (int64_t jj = j; jj < min64(j + DOT_COLS, n1); jj++)
    for (int64_t l = l0; l < l1; l++)
      __builtin_prefetch(elem(w.p, w.t, jj * w.rs + per_line * l), 0, 3);
}

/* A is packed (as contiguous fp32 rows, cache-line aligned) unless it is
 * so already: the kernel reads a vector of A per vector of W, and a
 * vector split over two lines costs two loads (an activation vector off
 * the line ran an F16 GEMV 1.3x slower from cache). It is at most
 * DOT_MAX_M rows a batch: cheap to copy, once per product (each task
 * packing its own copy, a decode step of mamba2-130m packed and
 * allocated 700 times, now 140). NULL when A needs no packing. */
static float *dot_a(const Gemm *g, const Isa *isa) {
  bool lines = (uintptr_t)g->a % 64 == 0 && (g->m == 1 || g->a_m % 16 == 0) &&
               (g->batch == 1 || g->a_b % 16 == 0);
  if (g->a_k == 1 && g->a_type == DT_F32 && lines)
    return NULL;
  float *apack = scratch_floats(g->batch * g->m * g->k);
  for (int64_t bi = 0; bi < g->batch; bi++)
    pack_rows(isa, mat_a(g, bi), g->m, g->k, apack + bi * g->m * g->k);
  return apack;
}

/* C[0..m)[n0..n1) of batch BI, W = B^T having contiguous rows. */
static void dot_block(const DotJob *job, int64_t bi, int64_t n0, int64_t n1) {
  const Gemm *g = job->g;
  const float *a = elem(g->a, g->a_type, bi * g->a_b);
  Mat w = {elem(g->b, g->b_type, bi * g->b_b), g->b_type, g->b_n, 1}; /* B^T */
  float *c = g->c + bi * g->c_b;
  int64_t lda = g->a_m;
  if (job->apack) {
    a = job->apack + bi * g->m * g->k;
    lda = g->k;
  }
  DotFn *dot = job->isa->dot[w.t];
  for (int64_t j0 = n0; j0 < n1; j0 += DOT_COLS) {
    const void *wr[DOT_COLS];
    int cols = (int)min64(DOT_COLS, n1 - j0);
    /* Past the end, repeat the last row of W: computed and dropped. */
#pragma GCC unroll 6
    for (int j = 0; j < DOT_COLS; j++)
      wr[j] = elem(w.p, w.t, (j0 + (j < cols ? j : cols - 1)) * w.rs);
    for (int64_t i0 = 0; i0 < g->m; i0 += DOT_ROWS) {
      int rows = (int)min64(DOT_ROWS, g->m - i0);
      float out[DOT_ROWS * DOT_COLS];
      if (g->m > DOT_ROWS)
        prefetch_part(w, j0 + DOT_COLS, n1, g->k, i0 / DOT_ROWS,
                      ceil_div(g->m, DOT_ROWS));
      dot(rows, g->k, a + i0 * lda, lda, wr, out);
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++) {
        float *cr = c + (i0 + r) * g->c_m + j0 * g->c_n;
        for (int j = 0; j < cols; j++)
          cr[j * g->c_n] = g->accumulate
                               ? cr[j * g->c_n] + out[r * DOT_COLS + j]
                               : out[r * DOT_COLS + j];
      }
    }
  }
}

static void dot_task(void *arg, int t, int n) {
  (void)n;
  const DotJob *job = arg;
  Part p = job_part(job, t);
  for (int64_t bi = p.b0; p.n0 < p.n1 && bi < p.b1; bi++)
    dot_block(job, bi, p.n0, p.n1);
}

/* Parts of DOT_COLS columns, each still long enough to stream. */
static void gemm_dot(const Gemm *g, const Isa *isa, Pool *pool, int threads) {
  float *apack = dot_a(g, isa);
  DotJob job = {.g = g, .isa = isa, .apack = apack};
  run_by_columns(&job, pool, threads, DOT_COLS, dot_task);
  free(apack);
}

/* ---- the row path ---- */

/* C[0..m)[n0..n1) of batch BI for a row-major B (b_n == 1): B's rows are
 * read in order, ROW_SEG columns at a time, so the weights stream from
 * memory in long runs. T holds ROW_ROWS block sums of ROW_SEG columns (in
 * L1), TOTAL the running sums of all m rows. */
static void row_block(const DotJob *job, int64_t bi, int64_t n0, int64_t n1,
                      float *t, float *total) {
  const Gemm *g = job->g; /* fp32 operands only */
  const float *a = (const float *)g->a + bi * g->a_b;
  const float *b = (const float *)g->b + bi * g->b_b;
  float *c = g->c + bi * g->c_b;
  for (int64_t j0 = n0; j0 < n1; j0 += ROW_SEG) {
    int64_t len = min64(ROW_SEG, n1 - j0);
    for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
      int64_t kc = min64(KC, g->k - p0);
      /* The first group of rows brings this KC x len block of B into
       * cache; the others find it there. */
      for (int64_t i0 = 0; i0 < g->m; i0 += ROW_ROWS) {
        int rows = (int)min64(ROW_ROWS, g->m - i0);
        for (int r = 0; r < rows; r++)
          memset(t + r * ROW_SEG, 0, (size_t)len * sizeof *t);
        job->isa->row(rows, kc, a + i0 * g->a_m + p0 * g->a_k, g->a_m, g->a_k,
                      b + p0 * g->b_k + j0, g->b_k, len, t);
        for (int r = 0; r < rows; r++) {
          float *tot = total + (i0 + r) * ROW_SEG;
          const float *tr = t + r * ROW_SEG;
          for (int64_t j = 0; j < len; j++)
            tot[j] = p0 == 0 ? tr[j] : tot[j] + tr[j];
        }
      }
    }
    for (int64_t i = 0; i < g->m; i++) {
      float *ci = c + i * g->c_m + j0 * g->c_n;
      const float *tot = total + i * ROW_SEG;
      for (int64_t j = 0; j < len; j++)
        ci[j * g->c_n] = g->accumulate ? ci[j * g->c_n] + tot[j] : tot[j];
    }
  }
}

static void row_task(void *arg, int t, int n) {
  (void)n;
  const DotJob *job = arg;
  Part p = job_part(job, t);
  if (p.n0 >= p.n1)
    return;
  float *tbuf = scratch_floats(ROW_ROWS * ROW_SEG);
  float *total = scratch_floats(job->g->m * ROW_SEG);
  for (int64_t bi = p.b0; bi < p.b1; bi++)
    row_block(job, bi, p.n0, p.n1, tbuf, total);
  free(tbuf);
  free(total);
}

/* Parts of whole cache lines (16 floats). */
static void gemm_rows(const Gemm *g, const Isa *isa, Pool *pool, int threads) {
  DotJob job = {.g = g, .isa = isa};
  run_by_columns(&job, pool, threads, 16, row_task);
}

/* ---- kernel_gemm ---- */

/* The same product with the roles of A and B swapped: C^T = B^T A^T. */
static Gemm transposed(const Gemm *g) {
  Gemm t = *g;
  t.m = g->n, t.n = g->m;
  t.a = g->b, t.a_m = g->b_n, t.a_k = g->b_k, t.a_b = g->b_b;
  t.b = g->a, t.b_k = g->a_k, t.b_n = g->a_m, t.b_b = g->a_b;
  t.a_type = g->b_type, t.b_type = g->a_type;
  t.c_m = g->c_n, t.c_n = g->c_m;
  return t;
}

/* Batches that share B (b_b == 0) whose rows of A and C are evenly spaced
 * across batches are one product with batch * m rows: one pass over B
 * (the weights) instead of one per batch. Likewise for a shared A and the
 * columns. */
static bool fold_rows(Gemm *g) {
  if (g->b_b != 0 ||
      !(g->m == 1 || (g->a_b == g->m * g->a_m && g->c_b == g->m * g->c_m)))
    return false;
  if (g->m == 1) {
    g->a_m = g->a_b;
    g->c_m = g->c_b;
  }
  g->m *= g->batch;
  g->batch = 1;
  return true;
}

/* The columns' case is the rows' case of the transposed product. */
static Gemm fold_batches(const Gemm *in) {
  Gemm g = *in;
  if (g.batch <= 1 || fold_rows(&g))
    return g;
  Gemm t = transposed(&g);
  return fold_rows(&t) ? transposed(&t) : g;
}

/* C = 0 (or unchanged, when accumulating): the product over an empty k. */
static void clear_c(const Gemm *g) {
  if (g->accumulate)
    return;
  for (int64_t bi = 0; bi < g->batch; bi++)
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++)
        g->c[bi * g->c_b + i * g->c_m + j * g->c_n] = 0;
}

typedef enum { PATH_DOT, PATH_ROW, PATH_PACKED } Path;

/* How a product runs: batches folded, perhaps transposed, and its path. */
typedef struct Route {
  Gemm g;
  bool swapped; /* A and B exchanged: C^T = B^T A^T */
  Path path;
  const Isa *isa;
  int threads;
} Route;

/* For a product with k > 0 and no batches that share all of C. */
static Route route(const Gemm *in, Pool *pool) {
  Route r = {.g = fold_batches(in), .isa = kernel_isa()};
  Gemm *g = &r.g;
  /* Few columns and many rows: the transposed product has few rows, which
   * the streaming paths do best (a matrix times a vector); likewise when
   * only A is 16-bit, so that the dot path streams it as W. */
  bool a16 = g->a_type != DT_F32 && g->b_type == DT_F32;
  if (g->n <= DOT_MAX_M && (g->m > DOT_MAX_M || a16)) {
    *g = transposed(g);
    r.swapped = true;
  }
  bool f32 = g->a_type == DT_F32 && g->b_type == DT_F32;
  if (g->m <= DOT_MAX_M && g->b_k == 1)
    r.path = PATH_DOT;
  else if (g->m <= ROW_MAX_M && g->b_n == 1 && f32)
    r.path = PATH_ROW;
  else
    r.path = PATH_PACKED;
  double macs = (double)g->m * (double)g->n * (double)g->k * (double)g->batch;
  r.threads = macs < (r.path == PATH_DOT ? DOT_SMALL_WORK : SMALL_WORK)
                  ? 1
                  : pool_size(pool);
  /* The packed path writes a tile of C a row at a time: where C's columns
   * are strided and its rows contiguous (channels by tokens, written
   * tokens by channels), the transposed product writes whole vectors
   * instead of one element at a time. */
  if (r.path == PATH_PACKED && g->c_n != 1 && g->c_m == 1) {
    *g = transposed(g);
    r.swapped = !r.swapped;
  }
  return r;
}

/* Run a routed product; PK, when it is the packed form of one of its
 * operands, spares packing that one. */
static void run_route(const Route *r, const GemmPack *pk, Pool *pool) {
  Pool *p = r->threads > 1 ? pool : NULL;
  const Gemm *g = &r->g;
  switch (r->path) {
  case PATH_DOT:
    gemm_dot(g, r->isa, p, r->threads);
    break;
  case PATH_ROW:
    gemm_rows(g, r->isa, p, r->threads);
    break;
  case PATH_PACKED:
    gemm_packed(g, r->isa, p, r->threads, pk && !pk->b_side ? pk : NULL,
                pk && pk->b_side ? pk : NULL);
    break;
  }
}

/* Batches that share all of C run one after another (so that with
 * accumulate C sums them); true if G was such and has run. */
static bool run_shared_c(const Gemm *g, Pool *pool) {
  if (g->batch <= 1 || g->c_b != 0)
    return false;
  for (int64_t bi = 0; bi < g->batch; bi++) {
    Gemm one = *g;
    one.batch = 1;
    one.a = elem(g->a, g->a_type, bi * g->a_b);
    one.b = elem(g->b, g->b_type, bi * g->b_b);
    kernel_gemm(&one, pool);
  }
  return true;
}

void kernel_gemm(const Gemm *g, Pool *pool) {
  kernel_gemm_with(g, NULL, pool);
}

/* Operand B_SIDE of the routed product R as packed for its packed path:
 * the matrix, its outer size (rows of A, columns of B) and depth. */
static Mat routed_operand(const Route *r, bool b_side, int64_t *outer) {
  const Gemm *g = &r->g;
  *outer = b_side ? g->n : g->m;
  return b_side ? mat_b(g, 0) : mat_a(g, 0);
}

static bool same_mat(Mat a, Mat b) {
  return a.p == b.p && a.t == b.t && a.rs == b.rs && a.cs == b.cs;
}

GemmPack *kernel_gemm_pack(const Gemm *g, bool b_side, Pool *pool) {
  if (g->m <= 0 || g->n <= 0 || g->k <= 0 || g->batch <= 0 ||
      (g->batch > 1 && g->c_b == 0))
    return NULL;
  Route r = route(g, pool);
  if (r.path != PATH_PACKED || r.g.batch != 1)
    return NULL;
  bool side = b_side != r.swapped;
  int64_t outer;
  Mat m = routed_operand(&r, side, &outer);
  return pack_whole(r.isa, side, m, outer, r.g.k, pool);
}

void kernel_gemm_with(const Gemm *g, const GemmPack *pk, Pool *pool) {
  if (g->m <= 0 || g->n <= 0 || g->batch <= 0 || run_shared_c(g, pool))
    return;
  if (g->k <= 0) {
    clear_c(g);
    return;
  }
  Route r = route(g, pool);
  if (pk) { /* only where it is this product's operand, packed alike */
    int64_t outer;
    Mat m = routed_operand(&r, pk->b_side, &outer);
    if (r.path != PATH_PACKED || r.g.batch != 1 || pk->isa != r.isa ||
        !same_mat(m, pk->src) || outer != pk->outer || r.g.k != pk->k)
      pk = NULL;
  }
  run_route(&r, pk, pool);
}

/* ---- copy bandwidth ---- */

/* The machine's copy bandwidth: two buffers of BYTES, each thread copying
 * its own slice (as a GEMV streams its own part of the weights). Counted
 * as bytes read + bytes written: 2 x BYTES per copy, the convention of
 * STREAM; a write-allocate read, where the CPU makes one, is not counted.
 * First touch (page faults) is done before timing; the best of REPS
 * copies is kept. */
typedef struct CopyJob {
  char *dst, *src;
  size_t bytes;
} CopyJob;

/* Part I of N: cache-line-aligned slices, so no line is shared. */
static void copy_slice(const CopyJob *job, int i, int n, size_t *off,
                       size_t *len) {
  size_t lines = (job->bytes + 63) / 64;
  size_t l0 = lines * (size_t)i / (size_t)n,
         l1 = lines * (size_t)(i + 1) / (size_t)n;
  *off = l0 * 64;
  *len = (l1 * 64 < job->bytes ? l1 * 64 : job->bytes) - *off;
}

static void copy_task(void *arg, int i, int n) {
  const CopyJob *job = arg;
  size_t off, len;
  copy_slice(job, i, n, &off, &len);
  memcpy(job->dst + off, job->src + off, len);
}

/* Each thread first writes the pages it will copy, so that they are
 * mapped before timing starts. */
static void touch_task(void *arg, int i, int n) {
  const CopyJob *job = arg;
  size_t off, len;
  copy_slice(job, i, n, &off, &len);
  memset(job->dst + off, 0, len);
  memset(job->src + off, i + 1, len);
}

double kernel_copy_bandwidth(size_t bytes, Pool *pool) {
  enum { REPS = 5 };
  if (bytes < 4096)
    bytes = 4096;
  /* In huge pages, as the weights are (util/pages.c). */
  CopyJob job = {.dst = xmap_huge(bytes), .src = xmap_huge(bytes),
                 .bytes = bytes};
  int n = pool_size(pool);
  pool_run(pool, touch_task, &job, n);
  double best = INFINITY;
  for (int r = 0; r < REPS; r++) {
    double t0 = now_seconds();
    pool_run(pool, copy_task, &job, n);
    double dt = now_seconds() - t0;
    if (dt < best)
      best = dt;
  }
  unmap_huge(job.src, bytes);
  unmap_huge(job.dst, bytes);
  return 2.0 * (double)bytes / (best > 1e-9 ? best : 1e-9);
}

/* Regions read whole, each thread summing its part of every one (as a
 * GEMV streams its part of each weight): one job for them all, so that a
 * model's many small arrays cost no more hand-offs than its big ones. A
 * plain read stream, left to the hardware prefetcher: 256 MiB in huge
 * pages, interleaved, best of 6, one thread 23-28 GB/s against 17 for
 * the earlier kernel (eight-float accumulators in an array, a software
 * fetch 4 KiB ahead) and 19-24 with a fetch 1 or 4 KiB ahead; two
 * threads 35-40 against 33. A bound is only one if no kernel of ours
 * reads faster: the earlier one's was below a GEMV's own pace. */
typedef struct SumJob {
  const void *const *p;
  const size_t *bytes;
  int n;
  float out[64]; /* kept, so that the sums are not optimized away */
} SumJob;

/* A line's four 16-byte quarters into four accumulators that stay in
 * registers (an array of them went through the stack: 20 against 30
 * GB/s). */
static void sum_task(void *arg, int i, int n) {
  SumJob *s = arg;
  V4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
  float tail = 0;
  for (int r = 0; r < s->n; r++) {
    const char *p = s->p[r];
    size_t lines = s->bytes[r] / 64, l0 = lines * (size_t)i / (size_t)n,
           l1 = lines * (size_t)(i + 1) / (size_t)n;
    for (const char *q = p + 64 * l0; q < p + 64 * l1; q += 64) {
      a0 += v4_load((const float *)q);
      a1 += v4_load((const float *)(q + 16));
      a2 += v4_load((const float *)(q + 32));
      a3 += v4_load((const float *)(q + 48));
    }
    for (size_t b = 64 * lines; i == n - 1 && b < s->bytes[r]; b++)
      tail += (float)(unsigned char)p[b]; /* the last thread: the rest */
  }
  V4 t = (a0 + a1) + (a2 + a3);
  s->out[i % 64] = t[0] + t[3] + tail;
}

double kernel_read_seconds(const void *const *p, const size_t *bytes, int n,
                           Pool *pool) {
  SumJob s = {.p = p, .bytes = bytes, .n = n};
  double t0 = now_seconds();
  pool_run(pool, sum_task, &s, pool_size(pool));
  double dt = now_seconds() - t0;
  float sum = 0;
  for (int i = 0; i < 64; i++)
    sum += s.out[i];
  __asm__ volatile("" : : "g"(sum)); /* the sums are used */
  return dt;
}

double kernel_read_bandwidth(size_t bytes, Pool *pool) {
  enum { REPS = 5 };
  if (bytes < 4096)
    bytes = 4096;
  char *p = xmap_huge(bytes); /* in huge pages, as the weights are */
  memset(p, 1, bytes);        /* maps the pages before timing starts */
  const void *region = p;
  double best = INFINITY;
  for (int r = 0; r < REPS; r++)
    best = fmin(best, kernel_read_seconds(&region, &bytes, 1, pool));
  unmap_huge(p, bytes);
  return (double)bytes / (best > 1e-9 ? best : 1e-9);
}
