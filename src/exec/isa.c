/* isa.c — the kernels of kernels.c's paths, once per instruction set:
 * portable (GCC vector extensions: SSE2 on x86-64), AVX2 + FMA and
 * AVX-512 (F, BW, VL), and the choice among them for the CPU at hand
 * (kernel_isa). Each fills the Isa table of isa.h; kernels.c's header
 * says what the paths do with them. */
#include "isa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_X86 1
#include <immintrin.h>
#else
#define HAVE_X86 0
#endif

/* Call FN with ROWS (at most 3, or 4) as a compile-time constant, so that
 * its loops over the rows unroll into registers. */
#define WITH_ROWS_3(rows, fn, ...)                                           \
  ((rows) == 1   ? fn(1, __VA_ARGS__)                                        \
   : (rows) == 2 ? fn(2, __VA_ARGS__)                                        \
                 : fn(3, __VA_ARGS__))
#define WITH_ROWS_4(rows, fn, ...)                                           \
  ((rows) <= 3 ? WITH_ROWS_3(rows, fn, __VA_ARGS__) : fn(4, __VA_ARGS__))

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

/* One KC block of the dot path, [K0, K1) of row J of W, into ACC: 16
 * values a step in two accumulators per row of A, then 8 at a time into
 * the first, the last few masked. */
AVX2 static inline __attribute__((always_inline)) void
dot_block_avx2(int rows, DType t, int64_t k0, int64_t k1, const float *a,
               int64_t lda, const void *wj, __m256 acc[DOT_ROWS][2]) {
  int64_t kk = k0;
  for (; kk + 16 <= k1; kk += 16) {
    __m256 w0 = load8(t, wj, kk), w1 = load8(t, wj, kk + 8);
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
      acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + kk), w0,
                                  acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * lda + kk + 8), w1,
                                  acc[r][1]);
    }
  }
  for (; kk < k1; kk += 8) {
    int64_t n = min64(8, k1 - kk);
    __m256i mask = lanes_below(n);
    __m256 wv = load_part(t, wj, kk, n, mask);
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++)
      acc[r][0] = _mm256_fmadd_ps(_mm256_maskload_ps(a + r * lda + kk, mask),
                                  wv, acc[r][0]);
  }
}

/* The wide kernels (isa_wide.h) with 8 lanes. The micro-kernel is 6 x 16:
 * 12 ymm accumulators, 2 B vectors and a broadcast; 12 FMAs per 8 loads,
 * so the FMA units (2 per cycle) are the limit. */
#define WIDE(name) name##_avx2
#define WIDE_ATTR AVX2
#define V __m256
#define L 8
#define MR X_MR
#define NR X_NR
#define UNROLL_MR _Pragma("GCC unroll 6")
#define UNROLL_K _Pragma("GCC unroll 4")
#define NACC 2
#define ACC_SUM(a) _mm256_add_ps((a)[0], (a)[1])
#define V_ZERO _mm256_setzero_ps
#define V_LOAD _mm256_load_ps
#define V_LOADU _mm256_loadu_ps
#define V_STORE _mm256_store_ps
#define V_STOREU _mm256_storeu_ps
#define V_BCAST _mm256_broadcast_ss
#define V_FMADD _mm256_fmadd_ps
#define V_ADD _mm256_add_ps
#define V_SUM m256_sum
#define MASK __m256i
#define MASK_BELOW lanes_below
#define V_MASKLOAD _mm256_maskload_ps
#define V_MASKSTORE _mm256_maskstore_ps
#include "isa_wide.h"

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
 * dot path is chosen on Intel CPUs only (kernel_isa): on AMD's Zen 4,
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

enum { Z_MR = 8, Z_NR = 32 };

/* Lanes [0, n) of 16 set, n clamped to [0, 16]. */
static __mmask16 lanes16(int64_t n) {
  return (__mmask16)(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
}

/* The wide kernels (isa_wide.h) with 16 lanes. The micro-kernel is 8 x
 * 32: 16 zmm accumulators, 2 B vectors and a broadcast of A, 16 FMAs per
 * 10 loads (AVX2's 6 x 16 does 12 per 8). On Zen 4, which runs a 512-bit
 * FMA as two 256-bit halves, the FMA peak is AVX2's, but the kernel
 * issues half the instructions per FMA, and 8 rows make the A sliver a
 * whole transpose8 (AVX2's 6 are packed value by value): on Zen 4,
 * products of 512 tokens by 1536 x 768 and 768 x 1536 weights ran 0-6 %
 * faster at one thread, by 128 x 768 12 % (bench/RESULTS.md). */
#define WIDE(name) name##_avx512
#define WIDE_ATTR AVX512
#define V __m512
#define L 16
#define MR Z_MR
#define NR Z_NR
#define UNROLL_MR _Pragma("GCC unroll 8")
#define UNROLL_K _Pragma("GCC unroll 2")
#define NACC 4
#define ACC_SUM(a)                                                             \
  _mm512_add_ps(_mm512_add_ps((a)[0], (a)[1]), _mm512_add_ps((a)[2], (a)[3]))
#define V_ZERO _mm512_setzero_ps
#define V_LOAD _mm512_load_ps
#define V_LOADU _mm512_loadu_ps
#define V_STORE _mm512_store_ps
#define V_STOREU _mm512_storeu_ps
#define V_BCAST(p) _mm512_set1_ps(*(p))
#define V_FMADD _mm512_fmadd_ps
#define V_ADD _mm512_add_ps
#define V_SUM _mm512_reduce_add_ps
#define MASK __mmask16
#define MASK_BELOW lanes16
#define V_MASKLOAD(p, m) _mm512_maskz_loadu_ps(m, p)
#define V_MASKSTORE(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#include "isa_wide.h"

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
const Isa *kernel_isa(void) {
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

