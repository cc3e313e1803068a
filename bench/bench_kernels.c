/* bench_kernels.c — the speed of kernel_gemm against the machine's own
 * limits, on one thread and on two:
 *
 *  - the fp32 FMA peak, measured (independent AVX2 FMA chains);
 *  - prefill-sized products of mamba-130m (1024 tokens; d_model 768,
 *    d_inner 1536, vocabulary 50280): in_proj-like (1024, 1536, 768),
 *    out_proj-like (1024, 768, 1536), the LM head (1024, 50280, 768), in
 *    GFLOP/s and as a share of the peak. Weights are W[n][k] used
 *    transposed (B = W^T), as checkpoints store them;
 *  - decode-sized products (m = 1, and m = 16 sequences) against the same
 *    weights, in GB/s of weights streamed (bytes of B / time). Enough
 *    copies of the weights are cycled through to exceed the last-level
 *    cache, so they come from memory, as a whole model's would;
 *  - the copy bandwidth (bytes read + bytes written per second) and the
 *    read bandwidth (a streaming sum fetched ahead, as the GEMV fetches its
 *    weights), which the decode figures are compared with: targets are a
 *    large GEMM at >= 40% of peak, and a GEMV within 1.1x of the read
 *    bandwidth (the bound a decode step can approach).
 *
 *  - with --prefill, only the prefill products of a 130m model's
 *    projections (512 tokens of fp32 activations times W^T, W in F32, F16
 *    and BF16), as the executor runs them.
 *
 *   bench_kernels [--gemv | --prefill]   (--gemv: the decode-sized
 *                                         products only) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/exec/exec.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

enum { PEAK_CHAINS = 12, PEAK_ITERS = 20000000 };

/* 12 independent FMA chains: enough to cover the FMA latency on both
 * units. Returns the flops done. */
__attribute__((target("avx2,fma"))) static double fma_loop(float seed) {
  __m256 acc[PEAK_CHAINS];
  __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(seed * 1e-7f);
  for (int c = 0; c < PEAK_CHAINS; c++)
    acc[c] = _mm256_set1_ps((float)c);
  for (int i = 0; i < PEAK_ITERS; i++)
#pragma GCC unroll 12
    for (int c = 0; c < PEAK_CHAINS; c++)
      acc[c] = _mm256_fmadd_ps(acc[c], x, y);
  float sink = 0, out[8];
  for (int c = 0; c < PEAK_CHAINS; c++) {
    _mm256_storeu_ps(out, acc[c]);
    sink += out[0];
  }
  /* Keep the result alive without printing it. */
  __asm__ volatile("" : : "x"(sink));
  return 2.0 * 8 * PEAK_CHAINS * (double)PEAK_ITERS;
}

static void peak_task(void *arg, int i, int n) {
  (void)n;
  double *flops = arg;
  flops[i] = fma_loop((float)i);
}

/* The fp32 FMA peak of POOL's threads in GFLOP/s; 0 without AVX2+FMA. */
static double fma_peak(Pool *pool) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    return 0;
  int n = pool_size(pool);
  double flops[64] = {0}, best = 0;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now_seconds();
    pool_run(pool, peak_task, flops, n);
    double dt = now_seconds() - t0, total = 0;
    for (int i = 0; i < n; i++)
      total += flops[i];
    if (total / dt > best)
      best = total / dt;
  }
  return best / 1e9;
}
#else
static double fma_peak(Pool *pool) {
  (void)pool;
  return 0;
}
#endif

static float *random_floats(int64_t n, unsigned seed) {
  float *p = xmalloc((size_t)n * sizeof(float));
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (float)(s >> 8) / (float)(1 << 24) - 0.5f;
  }
  return p;
}

/* C[m][n] = X[m][k] . W^T with W[n][k] (the checkpoint layout), or with
 * ROW_MAJOR_B, B[k][n] row-major. */
static Gemm product(int64_t m, int64_t n, int64_t k, const float *x,
                    const void *w, float *c, bool row_major_b) {
  return (Gemm){.m = m,
                .n = n,
                .k = k,
                .batch = 1,
                .a = x,
                .a_m = k,
                .a_k = 1,
                .b = w,
                .b_k = row_major_b ? n : 1,
                .b_n = row_major_b ? 1 : k,
                .c = c,
                .c_m = n,
                .c_n = 1};
}

/* Best time of REPS runs of the product, after a warm-up run. */
static double time_gemm(const Gemm *g, Pool *pool, int reps) {
  kernel_gemm(g, pool);
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now_seconds();
    kernel_gemm(g, pool);
    double dt = now_seconds() - t0;
    if (dt < best)
      best = dt;
  }
  return best;
}

/* G's best time of REPS as GFLOP/s, printed after LABEL (and as a share
 * of PEAK, when known). */
static double report_gflops(const Gemm *g, Pool *pool, int reps,
                            const char *label, double peak) {
  double flops = 2.0 * (double)g->m * (double)g->n * (double)g->k *
                 (double)g->batch;
  double gflops = flops / time_gemm(g, pool, reps) / 1e9;
  printf("  %s: %.1f GFLOP/s", label, gflops);
  if (peak > 0)
    printf(" = %.0f%% of peak", 100 * gflops / peak);
  printf("\n");
  return gflops;
}

static double bench_large(int64_t m, int64_t n, int64_t k, Pool *pool,
                          double peak) {
  float *x = random_floats(m * k, 1), *w = random_floats(n * k, 2);
  float *c = xmalloc((size_t)(m * n) * sizeof(float));
  Gemm g = product(m, n, k, x, w, c, false);
  char label[96];
  snprintf(label, sizeof label, "gemm (%lld, %lld, %lld), B = W^T",
           (long long)m, (long long)n, (long long)k);
  int reps = 2.0 * (double)m * (double)n * (double)k > 2e10 ? 2 : 5;
  double gflops = report_gflops(&g, pool, reps, label, peak);
  free(x);
  free(w);
  free(c);
  return gflops;
}

/* A fused group's GEMM over one tile of N tokens: W (M x K, the checkpoint
 * layout) times the tile, with W packed by each product, and packed once
 * (kernel_gemm_pack) as the executor does for a group's tiles. */
static void bench_tile(int64_t m, int64_t n, int64_t k, Pool *pool,
                       double peak) {
  float *w = random_floats(m * k, 4), *x = random_floats(n * k, 5);
  float *c = xmalloc((size_t)(m * n) * sizeof(float));
  Gemm g = {.m = m, .n = n, .k = k, .batch = 1, .a = w, .a_m = k, .a_k = 1,
            .b = x, .b_k = 1, .b_n = k, .c = c, .c_m = n, .c_n = 1};
  double flops = 2.0 * (double)m * (double)n * (double)k;
  double t_each = time_gemm(&g, pool, 20);
  GemmPack *pk = kernel_gemm_pack(&g, false, pool);
  kernel_gemm_with(&g, pk, pool);
  double best = 1e30;
  for (int r = 0; r < 20; r++) {
    double t0 = now_seconds();
    kernel_gemm_with(&g, pk, pool);
    double dt = now_seconds() - t0;
    best = dt < best ? dt : best;
  }
  printf("  gemm (%lld, %lld, %lld), a tile: %.1f GFLOP/s packing W each "
         "time, %.1f with W packed once (%.2fx)",
         (long long)m, (long long)n, (long long)k, flops / t_each / 1e9,
         flops / best / 1e9, t_each / best);
  if (peak > 0)
    printf(", %.0f%% of peak", 100 * flops / best / 1e9 / peak);
  printf("\n");
  kernel_gemm_pack_free(pk);
  free(w);
  free(x);
  free(c);
}

/* N random F16 values in (-0.5, 0.5). */
static uint16_t *random_halves(int64_t n, unsigned seed) {
  uint16_t *p = xmalloc((size_t)n * sizeof *p);
  uint32_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    p[i] = (uint16_t)((s >> 16 & 0x8000) | (5 + (s >> 8) % 9) << 10 |
                      (s & 0x3ff));
  }
  return p;
}

/* ---- prefill products of 16-bit weights ---- */

/* N random BF16 values in (-0.5, 0.5). */
static uint16_t *random_bf16(int64_t n, unsigned seed) {
  float *f = random_floats(n, seed);
  uint16_t *p = xmalloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &f[i], sizeof u);
    p[i] = (uint16_t)(u >> 16);
  }
  free(f);
  return p;
}

/* A prefill product as the executor runs it: 512 tokens of fp32
 * activations times W^T, W[n][k] in dtype T (the checkpoint's). */
static double bench_prefill(int64_t m, int64_t n, int64_t k, DType t,
                            Pool *pool, double peak) {
  static const char *const names[] = {"F32", "F16", "BF16"};
  float *x = random_floats(m * k, 1);
  void *w = t == DT_F32   ? (void *)random_floats(n * k, 2)
            : t == DT_F16 ? (void *)random_halves(n * k, 2)
                          : (void *)random_bf16(n * k, 2);
  float *c = xmalloc((size_t)(m * n) * sizeof(float));
  Gemm g = product(m, n, k, x, w, c, false);
  g.b_type = t;
  char label[96];
  snprintf(label, sizeof label, "prefill (%lld, %lld, %lld), W in %s",
           (long long)m, (long long)n, (long long)k, names[t]);
  double gflops = report_gflops(&g, pool, 20, label, peak);
  free(x);
  free(w);
  free(c);
  return gflops;
}

static void bench_prefills(Pool *pool, double peak) {
  for (int t = DT_F32; t <= DT_BF16; t++) {
    bench_prefill(512, 1536, 768, (DType)t, pool, peak);
    bench_prefill(512, 768, 1536, (DType)t, pool, peak);
    bench_prefill(512, 128, 768, (DType)t, pool, peak);
  }
}

/* ---- decode products from memory ---- */

/* Decode products over copies of W (fp32, or F16 when HALF) totalling at
 * least 256 MiB, one after another, so that each copy has left the cache
 * when it comes round again. Returns GB/s of weights streamed. */
static double bench_stream(int64_t m, int64_t n, int64_t k, bool row_major_b,
                           bool half, Pool *pool, double read_bw) {
  int64_t wbytes = n * k * (half ? 2 : 4);
  int copies = (int)((((int64_t)256 << 20) + wbytes - 1) / wbytes);
  if (copies < 2)
    copies = 2;
  void **w = xmalloc((size_t)copies * sizeof *w);
  for (int i = 0; i < copies; i++)
    w[i] = half ? (void *)random_halves(n * k, 10 + (unsigned)i)
                : (void *)random_floats(n * k, 10 + (unsigned)i);
  float *x = random_floats(m * k, 3);
  float *c = xmalloc((size_t)(m * n) * sizeof(float));
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now_seconds();
    for (int i = 0; i < copies; i++) {
      Gemm g = product(m, n, k, x, w[i], c, row_major_b);
      g.b_type = half ? DT_F16 : DT_F32;
      kernel_gemm(&g, pool);
    }
    double dt = (now_seconds() - t0) / copies;
    if (dt < best)
      best = dt;
  }
  double gbs = (double)wbytes / best / 1e9;
  printf("  gemv (%lld, %lld, %lld), B = %s%s: %.2f GB/s of weights, %.3f "
         "ms",
         (long long)m, (long long)n, (long long)k,
         row_major_b ? "row-major" : "W^T", half ? " in F16" : "", gbs,
         1e3 * best);
  printf(" (read bandwidth / this = %.2f)", read_bw / gbs);
  printf("\n");
  for (int i = 0; i < copies; i++)
    free(w[i]);
  free(w);
  free(x);
  free(c);
  return gbs;
}

static void bench_gemvs(Pool *pool, double read) {
  bench_stream(1, 3072, 768, false, false, pool, read);
  bench_stream(1, 3072, 768, false, true, pool, read);
  bench_stream(1, 50280, 768, false, false, pool, read);
  bench_stream(1, 50280, 768, false, true, pool, read);
  bench_stream(16, 3072, 768, false, false, pool, read);
  bench_stream(1, 3072, 768, true, false, pool, read);
  bench_stream(16, 3072, 768, true, false, pool, read);
}

int main(int argc, char **argv) {
  bool gemv_only = argc > 1 && strcmp(argv[1], "--gemv") == 0;
  bool prefill_only = argc > 1 && strcmp(argv[1], "--prefill") == 0;
  if (argc > 1 && !gemv_only && !prefill_only) {
    fputs("usage: bench_kernels [--gemv | --prefill]\n", stderr);
    return 2;
  }
  for (int threads = 1; threads <= 2; threads++) {
    Pool *pool = pool_new(threads);
    printf("%d thread%s:\n", threads, threads > 1 ? "s" : "");
    double copy = kernel_copy_bandwidth((size_t)256 << 20, pool) / 1e9;
    double read = kernel_read_bandwidth((size_t)256 << 20, pool) / 1e9;
    printf("  copy bandwidth (256 MiB, read + write): %.2f GB/s; read "
           "bandwidth: %.2f GB/s\n",
           copy, read);
    if (prefill_only) {
      bench_prefills(pool, fma_peak(pool));
      pool_free(pool);
      continue;
    }
    if (!gemv_only) {
      double peak = fma_peak(pool);
      if (peak > 0)
        printf("  fp32 FMA peak (AVX2, measured): %.1f GFLOP/s\n", peak);
      bench_large(1024, 1536, 768, pool, peak);
      bench_large(1024, 768, 1536, pool, peak);
      bench_large(1024, 50280, 768, pool, peak);
      bench_tile(1536, 64, 768, pool, peak);
    }
    bench_gemvs(pool, read);
    pool_free(pool);
  }
  return 0;
}
