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
 * on Intel's only (see isa_avx512). The binary itself targets any x86-64.
 * MAMBALAYA_KERNELS=portable (or avx2, or avx512) forces the portable (or
 * AVX2, or all the AVX-512) ones.
 *
 * Work is split over the pool by batch, then by columns of C (each thread
 * packs its own B panel, or streams its own part of the weights), or by
 * rows when C has too few columns. C must not overlap A or B, and within
 * a batch no two elements of C may share memory; batches that share all
 * of C (c_b == 0) run one after another, so that with accumulate C sums
 * them all. */
#include "exec.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86 1
#include <immintrin.h>
#else
#define HAVE_X86 0
#endif

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

/* Call FN with ROWS (at most 3, or 4) as a compile-time constant, so that
 * its loops over the rows unroll into registers. */
#define WITH_ROWS_3(rows, fn, ...)                                           \
  ((rows) == 1   ? fn(1, __VA_ARGS__)                                        \
   : (rows) == 2 ? fn(2, __VA_ARGS__)                                        \
                 : fn(3, __VA_ARGS__))
#define WITH_ROWS_4(rows, fn, ...)                                           \
  ((rows) <= 3 ? WITH_ROWS_3(rows, fn, __VA_ARGS__) : fn(4, __VA_ARGS__))

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/* Bytes per element of an operand, and the address of element I. */
static int64_t esize(DType t) { return t == DT_F32 ? 4 : 2; }
static const void *elem(const void *p, DType t, int64_t i) {
  return (const char *)p + i * esize(t);
}

/* The micro-kernels' write-back of a tile computed in TILE (NR_MAX
 * columns per row) to C at any strides. */
static void tile_store(const float *tile, float *c, int64_t c_m, int64_t c_n,
                       int mr, int nr, bool overwrite) {
  for (int i = 0; i < mr; i++) {
    float *ci = c + i * c_m;
    const float *ti = tile + i * NR_MAX;
    if (overwrite)
      for (int j = 0; j < nr; j++)
        ci[j * c_n] = ti[j];
    else
      for (int j = 0; j < nr; j++)
        ci[j * c_n] += ti[j];
  }
}

/* ---- portable kernels (GCC vector extensions: SSE2 on x86-64) ---- */

typedef float V4 __attribute__((vector_size(16)));

static V4 v4_load(const float *p) {
  V4 v;
  memcpy(&v, p, sizeof v);
  return v;
}

static void v4_store(float *p, V4 v) { memcpy(p, &v, sizeof v); }

enum { P_MR = 6, P_NR = 8 };

/* 6 x 8: 12 vector accumulators, 2 B vectors and a broadcast fill the 16
 * SSE registers. */
static void micro_portable(int64_t kc, const float *a, const float *b, float *c,
                           int64_t c_m, int64_t c_n, int mr, int nr,
                           bool overwrite) {
  V4 acc[P_MR][2] = {{{0}}};
  for (int64_t p0 = 0; p0 < kc; p0 += CHAIN) {
    V4 part[P_MR][2] = {{{0}}};
    for (int64_t p = p0; p < min64(kc, p0 + CHAIN); p++) {
      V4 b0 = v4_load(b), b1 = v4_load(b + 4);
#pragma GCC unroll 6
      for (int i = 0; i < P_MR; i++) {
        V4 ai = {a[i], a[i], a[i], a[i]};
        part[i][0] += ai * b0;
        part[i][1] += ai * b1;
      }
      a += P_MR;
      b += P_NR;
    }
#pragma GCC unroll 6
    for (int i = 0; i < P_MR; i++) {
      acc[i][0] += part[i][0];
      acc[i][1] += part[i][1];
    }
  }
  if (mr == P_MR && nr == P_NR && c_n == 1) {
#pragma GCC unroll 6
    for (int i = 0; i < P_MR; i++) {
      float *ci = c + i * c_m;
      if (!overwrite) {
        acc[i][0] += v4_load(ci);
        acc[i][1] += v4_load(ci + 4);
      }
      v4_store(ci, acc[i][0]);
      v4_store(ci + 4, acc[i][1]);
    }
    return;
  }
  float tile[MR_MAX * NR_MAX];
#pragma GCC unroll 6
  for (int i = 0; i < P_MR; i++) {
    v4_store(tile + i * NR_MAX, acc[i][0]);
    v4_store(tile + i * NR_MAX + 4, acc[i][1]);
  }
  tile_store(tile, c, c_m, c_n, mr, nr, overwrite);
}

static float v4_sum(V4 v) { return (v[0] + v[2]) + (v[1] + v[3]); }

/* The dot kernel for a constant ROWS (inlined into dot_portable's cases,
 * so that the accumulators live in registers). */
static inline __attribute__((always_inline)) void
dot_rows_portable(int rows, int64_t k, const float *a, int64_t lda,
                  const float *const *w, float *out) {
  V4 total[DOT_ROWS][DOT_COLS] = {{{0}}};
  for (int64_t k0 = 0; k0 < k; k0 += KC) {
    int64_t k1 = min64(k0 + KC, k), full = k0 + ((k1 - k0) & ~(int64_t)3);
    V4 acc[DOT_ROWS][DOT_COLS] = {{{0}}};
    for (int64_t kk = k0; kk < full; kk += 4) {
      V4 av[DOT_ROWS];
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++)
        av[r] = v4_load(a + r * lda + kk);
#pragma GCC unroll 6
      for (int j = 0; j < DOT_COLS; j++) {
        V4 wv = v4_load(w[j] + kk);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++)
          acc[r][j] += av[r] * wv;
      }
    }
    for (int64_t kk = full; kk < k1; kk++)
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++)
#pragma GCC unroll 6
        for (int j = 0; j < DOT_COLS; j++)
          acc[r][j][0] += a[r * lda + kk] * w[j][kk];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 6
      for (int j = 0; j < DOT_COLS; j++)
        total[r][j] += acc[r][j];
  }
#pragma GCC unroll 6
  for (int r = 0; r < rows; r++)
#pragma GCC unroll 6
    for (int j = 0; j < DOT_COLS; j++)
      out[r * DOT_COLS + j] = v4_sum(total[r][j]);
}

static void dot_portable(int rows, int64_t k, const float *a, int64_t lda,
                         const void *const *w, float *out) {
  WITH_ROWS_3(rows, dot_rows_portable, k, a, lda, (const float *const *)w,
              out);
}

static void widen_portable(DType t, const uint16_t *src, float *dst,
                           int64_t n) {
  for (int64_t i = 0; i < n; i++)
    dst[i] = dtype_half_value(t, src[i]);
}

/* W in 16-bit: each KC block of W's rows widened, then the fp32 kernel. */
static void dot16_portable(DType t, int rows, int64_t k, const float *a,
                           int64_t lda, const void *const *w, float *out) {
  float block[DOT_COLS][KC], part[DOT_ROWS * DOT_COLS];
  const void *wf[DOT_COLS];
  for (int i = 0; i < rows * DOT_COLS; i++)
    out[i] = 0;
  for (int64_t k0 = 0; k0 < k; k0 += KC) {
    int64_t kc = min64(KC, k - k0);
    for (int j = 0; j < DOT_COLS; j++) {
      widen_portable(t, (const uint16_t *)w[j] + k0, block[j], kc);
      wf[j] = block[j];
    }
    dot_portable(rows, kc, a + k0, lda, wf, part);
    for (int i = 0; i < rows * DOT_COLS; i++)
      out[i] += part[i];
  }
}

static void dot_f16_portable(int rows, int64_t k, const float *a, int64_t lda,
                             const void *const *w, float *out) {
  dot16_portable(DT_F16, rows, k, a, lda, w, out);
}

static void dot_bf16_portable(int rows, int64_t k, const float *a,
                              int64_t lda, const void *const *w, float *out) {
  dot16_portable(DT_BF16, rows, k, a, lda, w, out);
}

/* The row kernel for a constant ROWS: each row of B is read once, from
 * end to end, and scaled into each row's block sum. */
static inline __attribute__((always_inline)) void
row_rows_portable(int rows, int64_t kc, const float *a, int64_t a_m,
                  int64_t a_k, const float *b, int64_t ldb, int64_t len,
                  float *t) {
  int64_t full = len & ~(int64_t)3;
  for (int64_t p = 0; p < kc; p++, b += ldb) {
    float as[ROW_ROWS];
    V4 av[ROW_ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++) {
      as[r] = a[r * a_m + p * a_k];
      av[r] = (V4){as[r], as[r], as[r], as[r]};
    }
    for (int64_t j = 0; j < full; j += 4) {
      V4 bv = v4_load(b + j);
#pragma GCC unroll 4
      for (int r = 0; r < rows; r++) {
        float *tr = t + r * ROW_SEG + j;
        v4_store(tr, v4_load(tr) + av[r] * bv);
      }
    }
    for (int64_t j = full; j < len; j++)
#pragma GCC unroll 4
      for (int r = 0; r < rows; r++)
        t[r * ROW_SEG + j] += as[r] * b[j];
  }
}

static void row_portable(int rows, int64_t kc, const float *a, int64_t a_m,
                         int64_t a_k, const float *b, int64_t ldb, int64_t len,
                         float *t) {
  WITH_ROWS_4(rows, row_rows_portable, kc, a, a_m, a_k, b, ldb, len, t);
}

/* All N vectors are read together, p after p, so that N streams are in
 * flight (one vector at a time would wait on each one's misses in turn). */
static void interleave_portable(DType t, const void *const *v, int n,
                                int64_t len, float *dst) {
  if (t == DT_F32) {
    for (int64_t p = 0; p < len; p++, dst += n)
      for (int j = 0; j < n; j++)
        dst[j] = ((const float *)v[j])[p];
    return;
  }
  for (int64_t p = 0; p < len; p++, dst += n)
    for (int j = 0; j < n; j++)
      dst[j] = dtype_half_value(t, ((const uint16_t *)v[j])[p]);
}

static const Isa isa_portable = {
    P_MR, P_NR, micro_portable,
    {dot_portable, dot_f16_portable, dot_bf16_portable}, row_portable,
    widen_portable, interleave_portable};

/* ---- AVX2 + FMA kernels ---- */

#if HAVE_X86
#define AVX2 __attribute__((target("avx2,fma,f16c")))

enum { X_MR = 6, X_NR = 16 };

/* Lanes [0, n) set (none when n <= 0): a mask for the loads and stores
 * of a partial vector. */
AVX2 static __m256i lanes_below(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The first and last element of each of a tile's MR rows of C (rows C_M
 * apart, columns C_N) into the cache, for the micro-kernels to fetch
 * ahead: C is likely out of cache (a whole row of C lies between two
 * rows of the tile), and is needed at the end. */
static inline __attribute__((always_inline)) void
prefetch_tile(const float *c, int64_t c_m, int64_t c_n, int mr, int nr) {
  for (int i = 0; i < mr; i++) {
    __builtin_prefetch(c + i * c_m, 0, 3);
    __builtin_prefetch(c + i * c_m + (nr - 1) * c_n, 0, 3);
  }
}

/* 6 x 16: 12 ymm accumulators, 2 B vectors and a broadcast; 12 FMAs per
 * 8 loads, so the FMA units (2 per cycle) are the limit. C's tile is
 * fetched ahead first (prefetch_tile). */
AVX2 static inline __attribute__((always_inline)) void
micro_acc_avx2(int64_t kc, const float *a, const float *b, const float *c,
               int64_t c_m, int64_t c_n, int mr, int nr,
               __m256 acc[X_MR][2]) {
  prefetch_tile(c, c_m, c_n, mr, nr);
  float sum[X_MR * X_NR] __attribute__((aligned(32))) = {0};
  for (int64_t p0 = 0; p0 < kc; p0 += CHAIN) {
#pragma GCC unroll 6
    for (int i = 0; i < X_MR; i++)
      acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    int64_t p1 = min64(kc, p0 + CHAIN);
#pragma GCC unroll 4
    for (int64_t p = p0; p < p1; p++) {
      __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
      for (int i = 0; i < X_MR; i++) {
        __m256 ai = _mm256_broadcast_ss(a + i);
        acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
      }
      a += X_MR;
      b += X_NR;
    }
#pragma GCC unroll 6
    for (int i = 0; i < X_MR; i++)
      for (int h = 0; h < 2; h++) {
        float *si = sum + i * X_NR + h * 8;
        _mm256_store_ps(si, _mm256_add_ps(_mm256_load_ps(si), acc[i][h]));
      }
  }
#pragma GCC unroll 6
  for (int i = 0; i < X_MR; i++) {
    acc[i][0] = _mm256_load_ps(sum + i * X_NR);
    acc[i][1] = _mm256_load_ps(sum + i * X_NR + 8);
  }
}

/* The tile's MR x NR corner (a partial one too: rows past MR untouched,
 * columns past NR masked) into C, rows C_M apart and contiguous. */
AVX2 static inline __attribute__((always_inline)) void
store_rows_avx2(__m256 acc[X_MR][2], float *c, int64_t c_m, int mr, int nr,
                bool overwrite) {
  __m256i m0 = lanes_below(nr), m1 = lanes_below(nr - 8);
#pragma GCC unroll 6
  for (int i = 0; i < X_MR; i++) {
    if (i >= mr)
      break;
    float *ci = c + i * c_m;
    if (!overwrite) {
      acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_maskload_ps(ci, m0));
      acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_maskload_ps(ci + 8, m1));
    }
    _mm256_maskstore_ps(ci, m0, acc[i][0]);
    _mm256_maskstore_ps(ci + 8, m1, acc[i][1]);
  }
}

/* The whole tile, C's rows contiguous. */
AVX2 static inline __attribute__((always_inline)) void
store_full_avx2(__m256 acc[X_MR][2], float *c, int64_t c_m, bool overwrite) {
#pragma GCC unroll 6
  for (int i = 0; i < X_MR; i++) {
    float *ci = c + i * c_m;
    if (!overwrite) {
      acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(ci));
      acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(ci + 8));
    }
    _mm256_storeu_ps(ci, acc[i][0]);
    _mm256_storeu_ps(ci + 8, acc[i][1]);
  }
}

/* Any tile at any strides, through a buffer (C's columns strided and its
 * rows too: the product is transposed where only the columns are, see
 * route). Inlined, as every write-back is: ACC's address must not escape,
 * or the accumulators would live in memory through the k loop. */
AVX2 static inline __attribute__((always_inline)) void
store_strided_avx2(__m256 acc[X_MR][2], float *c, int64_t c_m, int64_t c_n,
                   int mr, int nr, bool overwrite) {
  float tile[MR_MAX * NR_MAX];
#pragma GCC unroll 6
  for (int i = 0; i < X_MR; i++) {
    _mm256_storeu_ps(tile + i * NR_MAX, acc[i][0]);
    _mm256_storeu_ps(tile + i * NR_MAX + 8, acc[i][1]);
  }
  tile_store(tile, c, c_m, c_n, mr, nr, overwrite);
}

AVX2 static void micro_avx2(int64_t kc, const float *a, const float *b,
                            float *c, int64_t c_m, int64_t c_n, int mr, int nr,
                            bool overwrite) {
  __m256 acc[X_MR][2];
  micro_acc_avx2(kc, a, b, c, c_m, c_n, mr, nr, acc);
  if (c_n != 1)
    store_strided_avx2(acc, c, c_m, c_n, mr, nr, overwrite);
  else if (mr == X_MR && nr == X_NR)
    store_full_avx2(acc, c, c_m, overwrite);
  else
    store_rows_avx2(acc, c, c_m, mr, nr, overwrite);
}

AVX2 static float m256_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* Eight values of W (dtype T) from element I, as fp32. */
AVX2 static inline __attribute__((always_inline)) __m256
load8(DType t, const void *w, int64_t i) {
  if (t == DT_F32)
    return _mm256_loadu_ps((const float *)w + i);
  __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
  if (t == DT_F16)
    return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The N < 8 values of W from element I (MASK: lanes below N), zero past
 * them. */
AVX2 static inline __attribute__((always_inline)) __m256
load_part(DType t, const void *w, int64_t i, int64_t n, __m256i mask) {
  if (t == DT_F32)
    return _mm256_maskload_ps((const float *)w + i, mask);
  uint16_t part[8] = {0};
  memcpy(part, (const uint16_t *)w + i, (size_t)n * sizeof *part);
  return load8(t, part, 0);
}

/* W's rows one after another, each from end to end (W's rows are
 * consecutive in memory: one sequential stream, which reads faster than
 * DOT_COLS streams side by side), left to the hardware prefetcher (a
 * software fetch 2, 8 or 16 KiB ahead was slower on a quiet machine,
 * 1 and 2 threads: bench/RESULTS.md); each row of A with two
 * accumulators. A row's sums run in the same order whatever ROWS
 * is: its result does not depend on how many rows of A are computed with
 * it. ROWS is a constant in each instantiation (WITH_ROWS_3). */
AVX2 static inline __attribute__((always_inline)) void
dot_rows_avx2(int rows, DType t, int64_t k, const float *a, int64_t lda,
              const void *const *w, float *out) {
  for (int j = 0; j < DOT_COLS; j++) {
    __m256 total[DOT_ROWS];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
      total[r] = _mm256_setzero_ps();
    for (int64_t k0 = 0; k0 < k; k0 += KC) {
      int64_t k1 = min64(k0 + KC, k), kk = k0;
      __m256 acc[DOT_ROWS][2];
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
      for (; kk + 16 <= k1; kk += 16) {
        __m256 w0 = load8(t, w[j], kk), w1 = load8(t, w[j], kk + 8);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
          acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + kk), w0,
                                      acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + kk + 8),
                                      w1, acc[r][1]);
        }
      }
      for (; kk < k1; kk += 8) {
        int64_t n = min64(8, k1 - kk);
        __m256i mask = lanes_below(n);
        __m256 wv = load_part(t, w[j], kk, n, mask);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++)
          acc[r][0] = _mm256_fmadd_ps(
              _mm256_maskload_ps(a + r * lda + kk, mask), wv, acc[r][0]);
      }
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++)
        total[r] = _mm256_add_ps(total[r], _mm256_add_ps(acc[r][0], acc[r][1]));
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
      out[r * DOT_COLS + j] = m256_sum(total[r]);
  }
}

AVX2 static void dot_avx2(int rows, int64_t k, const float *a, int64_t lda,
                          const void *const *w, float *out) {
  WITH_ROWS_3(rows, dot_rows_avx2, DT_F32, k, a, lda, w, out);
}

AVX2 static void dot_f16_avx2(int rows, int64_t k, const float *a,
                              int64_t lda, const void *const *w, float *out) {
  WITH_ROWS_3(rows, dot_rows_avx2, DT_F16, k, a, lda, w, out);
}

AVX2 static void dot_bf16_avx2(int rows, int64_t k, const float *a,
                               int64_t lda, const void *const *w, float *out) {
  WITH_ROWS_3(rows, dot_rows_avx2, DT_BF16, k, a, lda, w, out);
}

AVX2 static void widen_avx2(DType t, const uint16_t *src, float *dst,
                            int64_t n) {
  int64_t i = 0;
  if (t == DT_F16)
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, load8(DT_F16, src, i));
  else
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, load8(DT_BF16, src, i));
  for (; i < n; i++)
    dst[i] = dtype_half_value(t, src[i]);
}

AVX2 static inline __attribute__((always_inline)) void
row_rows_avx2(int rows, int64_t kc, const float *a, int64_t a_m, int64_t a_k,
              const float *b, int64_t ldb, int64_t len, float *t) {
  int64_t full = len & ~(int64_t)7;
  __m256i tail = lanes_below(len - full);
  for (int64_t p = 0; p < kc; p++, b += ldb) {
    __m256 av[ROW_ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < rows; r++)
      av[r] = _mm256_broadcast_ss(a + r * a_m + p * a_k);
    /* The row after next: B's rows are apart, too far for the hardware
     * prefetcher to follow from one to the next. */
    if (p + 2 < kc)
      for (int64_t j = 0; j < len; j += 16)
        _mm_prefetch((const char *)(b + 2 * ldb + j), _MM_HINT_T0);
    for (int64_t j = 0; j < full; j += 8) {
      __m256 bv = _mm256_loadu_ps(b + j);
#pragma GCC unroll 4
      for (int r = 0; r < rows; r++) {
        float *tr = t + r * ROW_SEG + j;
        _mm256_storeu_ps(tr, _mm256_fmadd_ps(av[r], bv, _mm256_loadu_ps(tr)));
      }
    }
    if (full < len) {
      __m256 bv = _mm256_maskload_ps(b + full, tail);
#pragma GCC unroll 4
      for (int r = 0; r < rows; r++) {
        float *tr = t + r * ROW_SEG + full;
        _mm256_maskstore_ps(
            tr, tail, _mm256_fmadd_ps(av[r], bv, _mm256_maskload_ps(tr, tail)));
      }
    }
  }
}

AVX2 static void row_avx2(int rows, int64_t kc, const float *a, int64_t a_m,
                          int64_t a_k, const float *b, int64_t ldb, int64_t len,
                          float *t) {
  WITH_ROWS_4(rows, row_rows_avx2, kc, a, a_m, a_k, b, ldb, len, t);
}

/* Rows V[0..8) (dtype T) from P on, 8 values each, widened and
 * transposed in registers into DST[q * N + r] = V[r][P + q]. */
AVX2 static inline __attribute__((always_inline)) void
transpose8_avx2(DType dt, const void *const *v, int64_t p, int n,
                float *dst) {
  __m256 r[8], t[8], u[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i++)
    r[i] = load8(dt, v[i], p);
#pragma GCC unroll 4
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 8; h += 4) { /* rows h..h+3: columns q and q + 4 */
    u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
    u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int q = 0; q < 4; q++) {
    _mm256_storeu_ps(dst + q * n, _mm256_permute2f128_ps(u[q], u[q + 4], 0x20));
    _mm256_storeu_ps(dst + (q + 4) * n,
                     _mm256_permute2f128_ps(u[q], u[q + 4], 0x31));
  }
}

/* 8 x 8 blocks transposed in registers where N is a multiple of 8 (a B
 * sliver, an A sliver of AVX-512's 8 rows); the portable loop for the
 * rest (an A sliver of AVX2's 6 rows, the last few values). */
AVX2 static inline __attribute__((always_inline)) void
interleave_t_avx2(DType t, const void *const *v, int n, int64_t len,
                  float *dst) {
  int64_t p = 0;
  if (n % 8 == 0)
    for (; p + 8 <= len; p += 8)
      for (int j = 0; j < n; j += 8)
        transpose8_avx2(t, v + j, p, n, dst + p * n + j);
  if (p < len) {
    const void *rest[NR_MAX];
    for (int j = 0; j < n; j++)
      rest[j] = elem(v[j], t, p);
    interleave_portable(t, rest, n, len - p, dst + p * n);
  }
}

/* One instance per dtype, so that each transpose's loads are fixed. */
AVX2 static void interleave_avx2(DType t, const void *const *v, int n,
                                 int64_t len, float *dst) {
  if (t == DT_F32)
    interleave_t_avx2(DT_F32, v, n, len, dst);
  else if (t == DT_F16)
    interleave_t_avx2(DT_F16, v, n, len, dst);
  else
    interleave_t_avx2(DT_BF16, v, n, len, dst);
}

static const Isa isa_avx2 = {X_MR,
                             X_NR,
                             micro_avx2,
                             {dot_avx2, dot_f16_avx2, dot_bf16_avx2},
                             row_avx2,
                             widen_avx2,
                             interleave_avx2};
#endif

#if HAVE_X86
/* AVX-512 (F): the dot path with 16 lanes, and an 8 x 32 micro-kernel for
 * the packed path. The rest of the AVX2 kernels serve as they are. The
 * dot path is chosen on Intel CPUs only (select_isa): on AMD's Zen 4,
 * which runs a 512-bit operation as two 256-bit halves, it was the slower
 * one (quiet machine, GEMV of 50280 x 768 from memory: F16 18.6 against
 * AVX2's 25.9 GB/s on one thread, 27.7 against 33.2 on two; F32 24.8
 * against 25.9 and 33.4 against 34.0: bench/RESULTS.md); the
 * micro-kernel, which converts nothing, was the faster one there. */
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

/* Sixteen values of W (dtype T) from element I, as fp32. */
AVX512 static inline __attribute__((always_inline)) __m512
load16(DType t, const void *w, int64_t i) {
  if (t == DT_F32)
    return _mm512_loadu_ps((const float *)w + i);
  __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i));
  if (t == DT_F16)
    return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The N < 16 values of W from element I, zero past them. */
AVX512 static inline __attribute__((always_inline)) __m512
load16_part(DType t, const void *w, int64_t i, __mmask16 m) {
  if (t == DT_F32)
    return _mm512_maskz_loadu_ps(m, (const float *)w + i);
  __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + i);
  if (t == DT_F16)
    return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* One KC block of the dot path, [K0, K1) of row J of W, into ACC: 64
 * values a step in four accumulators per row of A (the FMA latency times
 * its throughput: two chains leave the units half idle, and a 16-bit W is
 * widened at half the rate then), then 16 at a time into the first, the
 * last few masked. */
AVX512 static inline __attribute__((always_inline)) void
dot_block_avx512(int rows, DType t, int64_t k0, int64_t k1, const float *a,
                 int64_t lda, const void *wj, __m512 acc[DOT_ROWS][4]) {
  int64_t kk = k0;
  for (; kk + 64 <= k1; kk += 64) {
    __m512 wv[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
      wv[q] = load16(t, wj, kk + 16 * q);
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
      for (int q = 0; q < 4; q++)
        acc[r][q] = _mm512_fmadd_ps(
            _mm512_loadu_ps(a + r * lda + kk + 16 * q), wv[q], acc[r][q]);
  }
  for (; kk < k1; kk += 16) {
    int64_t n = min64(16, k1 - kk);
    __mmask16 m = (__mmask16)((1u << n) - 1);
    __m512 wv = load16_part(t, wj, kk, m);
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
      acc[r][0] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + r * lda + kk),
                                  wv, acc[r][0]);
  }
}

/* As dot_rows_avx2, 16 lanes wide: W's rows one after another, summed per
 * KC block in the same order whatever ROWS is. */
AVX512 static inline __attribute__((always_inline)) void
dot_rows_avx512(int rows, DType t, int64_t k, const float *a, int64_t lda,
                const void *const *w, float *out) {
  for (int j = 0; j < DOT_COLS; j++) {
    __m512 total[DOT_ROWS];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
      total[r] = _mm512_setzero_ps();
    for (int64_t k0 = 0; k0 < k; k0 += KC) {
      __m512 acc[DOT_ROWS][4];
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++)
        acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = _mm512_setzero_ps();
      dot_block_avx512(rows, t, k0, min64(k0 + KC, k), a, lda, w[j], acc);
#pragma GCC unroll 6
      for (int r = 0; r < rows; r++)
        total[r] = _mm512_add_ps(
            total[r], _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]),
                                    _mm512_add_ps(acc[r][2], acc[r][3])));
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
      out[r * DOT_COLS + j] = _mm512_reduce_add_ps(total[r]);
  }
}

AVX512 static void dot_avx512(int rows, int64_t k, const float *a,
                              int64_t lda, const void *const *w, float *out) {
  WITH_ROWS_3(rows, dot_rows_avx512, DT_F32, k, a, lda, w, out);
}

AVX512 static void dot_f16_avx512(int rows, int64_t k, const float *a,
                                  int64_t lda, const void *const *w,
                                  float *out) {
  WITH_ROWS_3(rows, dot_rows_avx512, DT_F16, k, a, lda, w, out);
}

AVX512 static void dot_bf16_avx512(int rows, int64_t k, const float *a,
                                   int64_t lda, const void *const *w,
                                   float *out) {
  WITH_ROWS_3(rows, dot_rows_avx512, DT_BF16, k, a, lda, w, out);
}

enum { Z_MR = 8, Z_NR = 32 };

/* 8 x 32: 16 zmm accumulators, 2 B vectors and a broadcast of A, 16 FMAs
 * per 10 loads (AVX2's 6 x 16 does 12 per 8). On Zen 4, which runs a
 * 512-bit FMA as two 256-bit halves, the FMA peak is AVX2's, but the
 * kernel issues half the instructions per FMA, and 8 rows make the A
 * sliver a whole transpose8 (AVX2's 6 are packed value by value): on
 * Zen 4, products of 512 tokens by 1536 x 768 and 768 x 1536 weights ran
 * 0-6 % faster at one thread, by 128 x 768 12 % (bench/RESULTS.md). C's
 * tile is fetched ahead first, as in AVX2's kernel. */
AVX512 static inline __attribute__((always_inline)) void
micro_acc_avx512(int64_t kc, const float *a, const float *b, const float *c,
                 int64_t c_m, int64_t c_n, int mr, int nr,
                 __m512 acc[Z_MR][2]) {
  prefetch_tile(c, c_m, c_n, mr, nr);
  float sum[Z_MR * Z_NR] __attribute__((aligned(64))) = {0};
  for (int64_t p0 = 0; p0 < kc; p0 += CHAIN) {
#pragma GCC unroll 8
    for (int i = 0; i < Z_MR; i++)
      acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    int64_t p1 = min64(kc, p0 + CHAIN);
#pragma GCC unroll 2
    for (int64_t p = p0; p < p1; p++) {
      __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
      for (int i = 0; i < Z_MR; i++) {
        __m512 ai = _mm512_set1_ps(a[i]);
        acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
      }
      a += Z_MR;
      b += Z_NR;
    }
#pragma GCC unroll 8
    for (int i = 0; i < Z_MR; i++)
      for (int h = 0; h < 2; h++) {
        float *si = sum + i * Z_NR + h * 16;
        _mm512_store_ps(si, _mm512_add_ps(_mm512_load_ps(si), acc[i][h]));
      }
  }
#pragma GCC unroll 8
  for (int i = 0; i < Z_MR; i++) {
    acc[i][0] = _mm512_load_ps(sum + i * Z_NR);
    acc[i][1] = _mm512_load_ps(sum + i * Z_NR + 16);
  }
}

/* Lanes [0, n) of 16 set, n clamped to [0, 16]. */
static __mmask16 lanes16(int n) {
  return (__mmask16)(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
}

/* The tile's MR x NR corner into C, rows C_M apart and contiguous:
 * columns past NR masked (a whole tile has every lane set). */
AVX512 static inline __attribute__((always_inline)) void
store_rows_avx512(__m512 acc[Z_MR][2], float *c, int64_t c_m, int mr, int nr,
                  bool overwrite) {
  __mmask16 m0 = lanes16(nr), m1 = lanes16(nr - 16);
#pragma GCC unroll 8
  for (int i = 0; i < Z_MR; i++) {
    if (i >= mr)
      break;
    float *ci = c + i * c_m;
    if (!overwrite) {
      acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_maskz_loadu_ps(m0, ci));
      acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_maskz_loadu_ps(m1, ci + 16));
    }
    _mm512_mask_storeu_ps(ci, m0, acc[i][0]);
    _mm512_mask_storeu_ps(ci + 16, m1, acc[i][1]);
  }
}

/* Any tile at any strides, through a buffer (see store_strided_avx2). */
AVX512 static inline __attribute__((always_inline)) void
store_strided_avx512(__m512 acc[Z_MR][2], float *c, int64_t c_m, int64_t c_n,
                     int mr, int nr, bool overwrite) {
  float tile[MR_MAX * NR_MAX];
#pragma GCC unroll 8
  for (int i = 0; i < Z_MR; i++) {
    _mm512_storeu_ps(tile + i * NR_MAX, acc[i][0]);
    _mm512_storeu_ps(tile + i * NR_MAX + 16, acc[i][1]);
  }
  tile_store(tile, c, c_m, c_n, mr, nr, overwrite);
}

AVX512 static void micro_avx512(int64_t kc, const float *a, const float *b,
                                float *c, int64_t c_m, int64_t c_n, int mr,
                                int nr, bool overwrite) {
  __m512 acc[Z_MR][2];
  micro_acc_avx512(kc, a, b, c, c_m, c_n, mr, nr, acc);
  if (c_n != 1)
    store_strided_avx512(acc, c, c_m, c_n, mr, nr, overwrite);
  else
    store_rows_avx512(acc, c, c_m, mr, nr, overwrite);
}

static const Isa isa_avx512 = {Z_MR,
                               Z_NR,
                               micro_avx512,
                               {dot_avx512, dot_f16_avx512, dot_bf16_avx512},
                               row_avx2,
                               widen_avx2,
                               interleave_avx2};

/* CPUs with AVX-512 other than Intel's (AMD's Zen 4): AVX-512's packed
 * path, AVX2's dot path (the faster there, see above). */
static const Isa isa_avx512_packed = {
    Z_MR, Z_NR, micro_avx512, {dot_avx2, dot_f16_avx2, dot_bf16_avx2},
    row_avx2, widen_avx2, interleave_avx2};

/* F16C: every x86 CPU with AVX2 has it, and GCC can ask (clang 14's
 * __builtin_cpu_supports does not know the name; only the fuzzers are
 * built with clang). */
static bool have_f16c(void) {
#if defined(__clang__)
  return true;
#else
  return __builtin_cpu_supports("f16c");
#endif
}
#endif

/* The kernels for this CPU; MAMBALAYA_KERNELS=portable (or avx2, or
 * avx512) forces the portable (or AVX2, or, where the CPU has it, all the
 * AVX-512) ones, for testing them or to rule the wider SIMD code out. The
 * choice never depends on timing, so a run's numbers are the same from
 * one run to the next on one machine. */
static const Isa *select_isa(void) {
  const char *force = getenv("MAMBALAYA_KERNELS");
  if (force && strcmp(force, "portable") == 0)
    return &isa_portable;
#if HAVE_X86
  bool avx2 = __builtin_cpu_supports("avx2") &&
              __builtin_cpu_supports("fma") && have_f16c();
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl");
  bool asked = force && strcmp(force, "avx512") == 0;
  if (avx512 && !(force && strcmp(force, "avx2") == 0))
    return asked || __builtin_cpu_is("intel") ? &isa_avx512
                                              : &isa_avx512_packed;
  if (avx2)
    return &isa_avx2;
#endif
  return &isa_portable;
}

void kernel_widen(DType t, const uint16_t *src, float *dst, int64_t n) {
  select_isa()->widen(t, src, dst, n);
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
} DotJob;

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

/* C[0..m)[n0..n1) of batch BI, W = B^T having contiguous rows. */
/* A is packed (as contiguous fp32 rows, cache-line aligned) unless it is
 * so already: the kernel reads a vector of A per vector of W, and a
 * vector split over two lines costs two loads (an activation vector off
 * the line ran an F16 GEMV 1.3x slower from cache). It is at most
 * DOT_MAX_M rows: cheap to copy. */
static bool a_packed_for_dot(const Gemm *g) {
  bool lines = (uintptr_t)g->a % 64 == 0 && (g->m == 1 || g->a_m % 16 == 0) &&
               (g->batch == 1 || g->a_b % 16 == 0);
  return g->a_k != 1 || g->a_type != DT_F32 || !lines;
}

static void dot_block(const DotJob *job, int64_t bi, int64_t n0, int64_t n1,
                      float *apack) {
  const Gemm *g = job->g;
  const float *a = elem(g->a, g->a_type, bi * g->a_b);
  Mat w = {elem(g->b, g->b_type, bi * g->b_b), g->b_type, g->b_n, 1}; /* B^T */
  float *c = g->c + bi * g->c_b;
  int64_t lda = g->a_m;
  if (a_packed_for_dot(g)) {
    pack_rows(job->isa, mat_a(g, bi), g->m, g->k, apack);
    a = apack;
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
  const Gemm *g = job->g;
  const Split *s = &job->s;
  int64_t b0 = (t / s->tn) * s->per_task;
  int64_t b1 = min64(g->batch, b0 + s->per_task);
  int64_t n0 = (t % s->tn) * s->nstep, n1 = min64(g->n, n0 + s->nstep);
  if (n0 >= n1)
    return;
  float *apack = a_packed_for_dot(g) ? scratch_floats(g->m * g->k) : NULL;
  for (int64_t bi = b0; bi < b1; bi++)
    dot_block(job, bi, n0, n1, apack);
  free(apack);
}

static void gemm_dot(const Gemm *g, const Isa *isa, Pool *pool, int threads) {
  DotJob job = {.g = g, .isa = isa};
  /* A few parts per thread, so that a thread that wakes late takes
   * fewer, but each part still long enough to stream. */
  job.s = split_work(g->batch, 1, g->n, 4 * threads, 1, DOT_COLS);
  pool_run(pool, dot_task, &job, job.s.ntasks);
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
  const Gemm *g = job->g;
  const Split *s = &job->s;
  int64_t b0 = (t / s->tn) * s->per_task;
  int64_t b1 = min64(g->batch, b0 + s->per_task);
  int64_t n0 = (t % s->tn) * s->nstep, n1 = min64(g->n, n0 + s->nstep);
  if (n0 >= n1)
    return;
  float *tbuf = scratch_floats(ROW_ROWS * ROW_SEG);
  float *total = scratch_floats(g->m * ROW_SEG);
  for (int64_t bi = b0; bi < b1; bi++)
    row_block(job, bi, n0, n1, tbuf, total);
  free(tbuf);
  free(total);
}

static void gemm_rows(const Gemm *g, const Isa *isa, Pool *pool, int threads) {
  DotJob job = {.g = g, .isa = isa};
  /* Parts of whole cache lines (16 floats), a few per thread. */
  job.s = split_work(g->batch, 1, g->n, 4 * threads, 1, 16);
  pool_run(pool, row_task, &job, job.s.ntasks);
}

/* ---- kernel_gemm ---- */

/* Batches that share B (b_b == 0) whose rows of A and C are evenly spaced
 * across batches are one product with batch * m rows: one pass over B
 * (the weights) instead of one per batch. Likewise for a shared A and the
 * columns. */
static Gemm fold_batches(const Gemm *in) {
  Gemm g = *in;
  if (g.batch <= 1)
    return g;
  if (g.b_b == 0 &&
      (g.m == 1 || (g.a_b == g.m * g.a_m && g.c_b == g.m * g.c_m))) {
    if (g.m == 1) {
      g.a_m = g.a_b;
      g.c_m = g.c_b;
    }
    g.m *= g.batch;
    g.batch = 1;
  } else if (g.a_b == 0 &&
             (g.n == 1 || (g.b_b == g.n * g.b_n && g.c_b == g.n * g.c_n))) {
    if (g.n == 1) {
      g.b_n = g.b_b;
      g.c_n = g.c_b;
    }
    g.n *= g.batch;
    g.batch = 1;
  }
  return g;
}

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
  Route r = {.g = fold_batches(in), .isa = select_isa()};
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
