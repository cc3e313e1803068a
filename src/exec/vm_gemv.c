/* vm_gemv.c — several matrix-vector products as one job of the pool
 * (vm.h: vm_gemvs, vm_gemv_start). */
#include "vm.h"

#include <math.h>
#include <stdlib.h>

/* ---- matrix-vector products together ----
 *
 * A decode step's projections are matrix-vector products, several of one
 * vector in a row (Mamba-2's five of the normed input, Mamba-1's two, and
 * three of X), and some small (Mamba-2's B and C: 128 rows). Run one by
 * one, each is a job of the pool, and a small one runs on one thread
 * (kernel_gemm's threshold) at the latency of memory rather than its
 * bandwidth. As one job, in parts of the weights' rows, the small ones
 * stream beside the large ones. Each output element is one row's dot
 * product, which kernel_gemm computes the same way however the rows are
 * split (the same path: a part keeps more than the dot path's 16 rows, or
 * is the whole), so the numbers are those of the products one by one. */

enum { GEMV_MIN_ROWS = 32, GEMV_MIN_BYTES = 64 << 10 };

typedef struct GemvPart {
  const Gemm *g;
  int64_t lo, hi; /* the weights' rows */
} GemvPart;

/* Rows [LO, HI) of G's weights (A's rows when G's C is a column, else
 * B's columns) and their outputs. */
static Gemm gemv_rows(const Gemm *g, int64_t lo, int64_t hi) {
  Gemm s = *g;
  if (g->n == 1) {
    s.m = hi - lo;
    s.a = (const char *)g->a + lo * g->a_m * dtype_size(g->a_type);
    s.c = g->c + lo * g->c_m;
  } else {
    s.n = hi - lo;
    s.b = (const char *)g->b + lo * g->b_n * dtype_size(g->b_type);
    s.c = g->c + lo * g->c_n;
  }
  return s;
}

static void gemv_part(void *arg, int i, int n) {
  (void)n;
  const GemvPart *p = &((const GemvPart *)arg)[i];
  Gemm s = gemv_rows(p->g, p->lo, p->hi);
  kernel_gemm(&s, NULL);
}

/* How many parts for G: about its share of PER bytes each, every part
 * of at least GEMV_MIN_ROWS rows. */
static int64_t gemv_nparts(const Gemm *g, double per) {
  int64_t rows = g->n == 1 ? g->m : g->n;
  int64_t parts = (int64_t)ceil(vm_gemv_bytes(g) / per);
  if (parts > rows / GEMV_MIN_ROWS)
    parts = rows / GEMV_MIN_ROWS;
  return parts < 1 ? 1 : parts;
}

double vm_gemv_bytes(const Gemm *g) {
  return (double)(g->n == 1 ? g->m : g->n) * (double)g->k *
         dtype_size(g->n == 1 ? g->a_type : g->b_type);
}

/* The parts of the N products G for THREADS threads: a few parts per
 * thread, each long enough to stream; their count in *NP. */
static GemvPart *gemv_parts(const Gemm *g, int n, int threads, int *np) {
  double total = 0;
  for (int i = 0; i < n; i++)
    total += vm_gemv_bytes(&g[i]);
  double per = total / (4.0 * threads);
  per = per > GEMV_MIN_BYTES ? per : GEMV_MIN_BYTES;
  /* At most total / per + 1 parts each: 4 x threads + N in all. */
  GemvPart *part =
      xmalloc(sizeof *part * (4 * (size_t)threads + (size_t)n + 1));
  *np = 0;
  for (int i = 0; i < n; i++) {
    int64_t rows = g[i].n == 1 ? g[i].m : g[i].n, k = gemv_nparts(&g[i], per);
    for (int64_t p = 0; p < k; p++)
      part[(*np)++] = (GemvPart){&g[i], rows * p / k, rows * (p + 1) / k};
  }
  return part;
}

void vm_gemvs(const Gemm *g, int n, Pool *pool) {
  int np;
  GemvPart *part = gemv_parts(g, n, pool_size(pool), &np);
  pool_run(pool, gemv_part, part, np);
  free(part);
}

struct VmGemv {
  Gemm g; /* a copy: the caller's may go first */
  GemvPart *part;
};

VmGemv *vm_gemv_start(const Gemm *g, Pool *pool) {
  VmGemv *b = xmalloc(sizeof *b);
  b->g = *g;
  int np;
  int workers = pool_size(pool) - 1;
  b->part = gemv_parts(&b->g, 1, workers > 1 ? workers : 1, &np);
  pool_start(pool, gemv_part, b->part, np);
  return b;
}

void vm_gemv_join(VmGemv *b, Pool *pool) {
  if (!b)
    return;
  pool_join(pool);
  free(b->part);
  free(b);
}

