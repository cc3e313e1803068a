/* isa.h — what kernels.c's paths (the packed, dot and row paths of a
 * matrix product) ask of an instruction set, and the blocking they share
 * with it: a micro-kernel, dot and row kernels, widening and
 * interleaving, each written once per instruction set in isa.c
 * (portable, AVX2 + FMA, AVX-512) and chosen at run time. Private to
 * src/exec/. */
#ifndef MAMBALAYA_ISA_H
#define MAMBALAYA_ISA_H

#include "exec.h"

#include <stdint.h>
#include <string.h>

/* How a packed product sums: each element of C is a sum over k of fp32
 * products, and rounding error grows with the length of a running sum.
 * A micro-kernel sums CHAIN products in its registers, adds that partial
 * sum to the tile's sum of its KC block (kept beside, in L1), and the
 * block's sum is added to C; so no fp32 chain is longer than CHAIN, KC /
 * CHAIN or K / KC. One chain of KC = 256 left mamba2-130m's F32 logits
 * 1.9e-6 (relative) from the float64 oracle, twice llama.cpp's distance
 * (9.7e-7); chains of 32 leave 7.8e-7 for about 2 % of the micro-kernel's
 * speed (bench_kernels --prefill; bench/accuracy.py, bench/RESULTS.md). */
enum {
  KC = 256,       /* depth of a k block: packing and accuracy block */
  CHAIN = 32,     /* products a micro-kernel sums in one fp32 chain */
  MC_ROWS = 120,  /* rows of A per packed block (a multiple of MR) */
  NC_COLS = 2048, /* columns of B per packed panel (a multiple of NR) */
  MR_MAX = 8,     /* the largest micro-kernel tile */
  NR_MAX = 32,
  DOT_MAX_M = 16,       /* the dot path takes m up to this */
  DOT_ROWS = 3,         /* rows of A per dot kernel call */
  DOT_COLS = 4,         /* rows of W per dot kernel call */
  ROW_MAX_M = 4,        /* the row path takes m up to this (beyond, the */
                        /* packed path does better: measured) */
  ROW_ROWS = 4,         /* rows of A per row kernel call */
  ROW_SEG = 1024,       /* columns of B per row kernel call */
  SMALL_WORK = 1 << 17, /* multiply-adds below which threads do not pay */
  /* The dot path streams its weights from memory at about one thread's
   * read bandwidth: from 64 KiB of 16-bit weights on, two threads pay
   * for their hand-off (Mamba-1's Delta projection, 1536 x 48: 13.6 ->
   * 11.8 us a layer at decode). */
  DOT_SMALL_WORK = 1 << 15,
};

/* ---- kernel tables ---- */

/* C[0..mr)[0..nr) (+)= A.B for one tile: A and B are packed slivers (kc
 * x MR and kc x NR, MR or NR values per k). OVERWRITE stores instead of
 * adding (C's old contents are never read then). */
typedef void MicroFn(int64_t kc, const float *a, const float *b, float *c,
                     int64_t c_m, int64_t c_n, int mr, int nr, bool overwrite);

/* OUT[r*DOT_COLS + j] = dot(A row r, W row j) over K elements, for r in
 * [0, ROWS) (ROWS <= DOT_ROWS); A's rows are LDA apart, W's are W[j] (in
 * the dtype the function is for); both are contiguous along k. */
typedef void DotFn(int rows, int64_t k, const float *a, int64_t lda,
                   const void *const *w, float *out);

/* DST[i] = SRC[i] (dtype T: F16 or BF16) as fp32, for i < N. */
typedef void WidenFn(DType t, const uint16_t *src, float *dst, int64_t n);

/* T[r * ROW_SEG + j] += sum over p < kc of A[r][p] * B[p][j], for r <
 * ROWS (<= ROW_ROWS) and j < LEN (<= ROW_SEG): A[r][p] = a[r * a_m + p *
 * a_k], B's rows are LDB apart and contiguous. */
typedef void RowFn(int rows, int64_t kc, const float *a, int64_t a_m,
                   int64_t a_k, const float *b, int64_t ldb, int64_t len,
                   float *t);

/* Interleave N vectors of dtype T, each contiguous: dst[p * n + j] =
 * v[j][p] as fp32 for p < LEN (packing a sliver of a matrix whose rows are
 * its columns; a 16-bit one is widened on the way, in one pass). */
typedef void InterleaveFn(DType t, const void *const *v, int n, int64_t len,
                          float *dst);

typedef struct Isa {
  int mr, nr;
  MicroFn *micro;
  DotFn *dot[3]; /* by W's dtype */
  RowFn *row;
  WidenFn *widen;
  InterleaveFn *interleave;
} Isa;
_Static_assert(DT_F32 == 0 && DT_F16 == 1 && DT_BF16 == 2,
               "Isa.dot is indexed by the 16- and 32-bit dtypes");

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/* Bytes per element of an operand, and the address of element I. */
static inline int64_t esize(DType t) { return t == DT_F32 ? 4 : 2; }
static inline const void *elem(const void *p, DType t, int64_t i) {
  return (const char *)p + i * esize(t);
}

/* Four floats (GCC vector extensions: SSE2 on x86-64), loaded from any
 * alignment. */
typedef float V4 __attribute__((vector_size(16)));
static inline V4 v4_load(const float *p) {
  V4 v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* The kernels for this CPU (isa.c says how they are chosen). */
const Isa *kernel_isa(void);

#endif
