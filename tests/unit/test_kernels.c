/* test_kernels.c — the worker pool (every index run exactly once, pools
 * reused and nested), and kernel_gemm against a double-precision
 * reference over many shapes, batch counts, stride layouts of each
 * operand, fp32 and 16-bit operands, operands packed once, with and
 * without accumulation, on one and two threads, with the SIMD kernels and
 * the portable ones; kernel_widen on every 16-bit value. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "../../src/exec/exec.h"
#include "test.h"

/* ---- the pool ---- */

typedef struct Slots {
  int *count;
  int n;
  int bad_n;  /* calls that were told a wrong N */
  Pool *pool; /* for the nested run */
} Slots;

/* Each index has its own slot, so a correct pool never races on one. */
static void count_index(void *arg, int i, int n) {
  Slots *s = arg;
  if (n != s->n || i < 0 || i >= n) {
    s->bad_n = 1; /* only ever written with the same value */
    return;
  }
  s->count[i]++;
}

static void check_each_once(Pool *p, int n) {
  Slots s = {.count = xcalloc((size_t)(n > 0 ? n : 1), sizeof(int)), .n = n};
  pool_run(p, count_index, &s, n);
  CHECK(!s.bad_n);
  for (int i = 0; i < n; i++)
    if (s.count[i] != 1) {
      test_fail(__FILE__, __LINE__, "threads %d, n %d: index %d ran %d times",
                pool_size(p), n, i, s.count[i]);
      break;
    }
  free(s.count);
}

TEST(kernels_pool_runs_every_index_once) {
  const int threads[] = {0, 1, 2, 3, 4, 8};
  const int ns[] = {0, 1, 2, 3, 7, 64, 1000};
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
    Pool *p = pool_new(threads[t]);
    CHECK_INT(pool_size(p), threads[t] > 1 ? threads[t] : 1);
    /* The same workers serve job after job. */
    for (int rep = 0; rep < 10; rep++)
      for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        check_each_once(p, ns[k]);
    pool_free(p);
  }
  CHECK_INT(pool_size(NULL), 1);
  check_each_once(NULL, 5);
  pool_free(NULL);
}

/* Tiny jobs back to back (workers still spinning on the last one, or
 * late to it), and jobs after a pause long enough that the workers have
 * gone to sleep: each index of each job runs once, with its own job. */
TEST(kernels_pool_jobs_back_to_back_and_after_sleep) {
  Pool *p = pool_new(3);
  for (int rep = 0; rep < 20000; rep++)
    check_each_once(p, 1 + rep % 4);
  for (int rep = 0; rep < 5; rep++) {
    struct timespec pause = {0, 2000000}; /* 2 ms: past the pool's spin */
    nanosleep(&pause, NULL);
    check_each_once(p, 2 + rep);
  }
  pool_free(p);
}

/* Index i of the outer job runs an inner job on the same pool. */
static void run_nested(void *arg, int i, int n) {
  (void)n;
  Slots *outer = arg;
  Slots inner = {.count = xcalloc(16, sizeof(int)), .n = 16};
  pool_run(outer->pool, count_index, &inner, 16);
  int ok = 1;
  for (int j = 0; j < 16; j++)
    ok &= inner.count[j] == 1;
  outer->count[i] = ok && !inner.bad_n ? 1 : 2;
  free(inner.count);
}

TEST(kernels_pool_nested_run_is_inline) {
  Pool *p = pool_new(2);
  Slots s = {.count = xcalloc(8, sizeof(int)), .n = 8, .pool = p};
  pool_run(p, run_nested, &s, 8);
  for (int i = 0; i < 8; i++)
    CHECK_INT(s.count[i], 1);
  free(s.count);
  pool_free(p);
}

/* A job started in the background runs every index once, whether the
 * workers take it or the caller at the join; meanwhile the caller's own
 * jobs run inline, each index once; with no workers, inline at once. */
TEST(kernels_pool_background_job) {
  const int threads[] = {0, 1, 2, 3};
  for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
    Pool *p = pool_new(threads[t]);
    for (int rep = 0; rep < 200; rep++) {
      int n = 1 + rep % 9;
      Slots bg = {.count = xcalloc((size_t)n, sizeof(int)), .n = n};
      pool_start(p, count_index, &bg, n);
      if (rep % 2)
        check_each_once(p, 5); /* inline, beside the background job */
      pool_join(p);
      CHECK(!bg.bad_n);
      for (int i = 0; i < n; i++)
        CHECK_INT(bg.count[i], 1);
      free(bg.count);
      check_each_once(p, 7); /* the pool as before */
    }
    pool_join(p); /* nothing started: nothing to do */
    pool_free(p);
  }
  Slots s = {.count = xcalloc(3, sizeof(int)), .n = 3};
  pool_start(NULL, count_index, &s, 3);
  pool_join(NULL);
  for (int i = 0; i < 3; i++)
    CHECK_INT(s.count[i], 1);
  free(s.count);
}

/* ---- operands ---- */

typedef struct Lcg {
  uint64_t s;
} Lcg;

/* Uniform in [LO, HI). */
static float rng_float(Lcg *r, float lo, float hi) {
  r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
  return lo + (hi - lo) * (float)(r->s >> 40) / (float)(1 << 24);
}

/* How a logical [rows][cols] matrix lies in memory. */
typedef enum {
  L_ROW,     /* row-major */
  L_COL,     /* column-major: the transpose of a row-major matrix */
  L_PAD,     /* row-major with padded rows */
  L_STRIDED, /* every element 2 apart, rows padded too */
  L_COUNT
} Layout;

static const char *const layout_names[L_COUNT] = {"row", "col", "pad",
                                                  "strided"};

typedef struct Operand {
  float *data;
  uint16_t *half; /* a 16-bit operand: its values (DATA holds them widened) */
  DType dtype;
  int64_t rs, cs, bs, len;
  bool *logical; /* which elements of DATA belong to the matrix */
} Operand;

/* A random 16-bit value of dtype T in (-1, 1), subnormals included. */
static uint16_t rng_half(Lcg *r, DType t) {
  r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
  uint32_t bits = (uint32_t)(r->s >> 32);
  uint16_t sign = (uint16_t)(bits & 0x8000);
  if (t == DT_F16) /* exponent field 0..14: below 1 */
    return (uint16_t)(sign | ((bits >> 16) % 15) << 10 | (bits & 0x3ff));
  return (uint16_t)(sign | (100 + (bits >> 16) % 27) << 7 | (bits & 0x7f));
}

/* Make O a 16-bit operand of dtype T: new random values, DATA their fp32
 * values (what the reference multiplies). */
static void operand_half(Operand *o, DType t, Lcg *r) {
  o->dtype = t;
  if (t == DT_F32)
    return;
  o->half = xmalloc((size_t)o->len * sizeof *o->half);
  for (int64_t i = 0; i < o->len; i++) {
    o->half[i] = rng_half(r, t);
    o->data[i] = dtype_half_value(t, o->half[i]);
  }
}

static const void *operand_values(const Operand *o) {
  return o->half ? (const void *)o->half : o->data;
}

/* BATCH matrices (one shared by all when SHARED), random, with random
 * padding between the elements. */
static Operand operand_new(Layout l, int64_t rows, int64_t cols, int64_t batch,
                           bool shared, Lcg *r, float lo, float hi) {
  Operand o = {0};
  int64_t span; /* elements from one matrix's start to the next's */
  switch (l) {
  case L_ROW:
    o.rs = cols, o.cs = 1, span = rows * cols;
    break;
  case L_COL:
    o.rs = 1, o.cs = rows, span = rows * cols;
    break;
  case L_PAD:
    o.rs = cols + 3, o.cs = 1, span = rows * (cols + 3) + 5;
    break;
  default:
    o.rs = 2 * cols + 1, o.cs = 2, span = rows * (2 * cols + 1) + 7;
    break;
  }
  o.bs = shared ? 0 : span;
  o.len = shared ? span : span * batch;
  o.data = xmalloc((size_t)o.len * sizeof(float));
  o.logical = xcalloc((size_t)o.len, sizeof(bool));
  for (int64_t i = 0; i < o.len; i++)
    o.data[i] = rng_float(r, lo, hi);
  for (int64_t b = 0; b < (shared ? 1 : batch); b++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++)
        o.logical[b * o.bs + i * o.rs + j * o.cs] = true;
  return o;
}

static void operand_free(Operand *o) {
  free(o->data);
  free(o->half);
  free(o->logical);
}

static float at(const Operand *o, int64_t b, int64_t i, int64_t j) {
  return o->data[b * o->bs + i * o->rs + j * o->cs];
}

/* ---- checking kernel_gemm ---- */

typedef struct Case {
  int64_t m, n, k, batch;
  Layout la, lb, lc;
  bool accumulate, share_a, share_b;
  float lo, hi;     /* the range of the random data */
  DType ta, tb;     /* the operands' dtypes (default fp32) */
  int packed;       /* 1: A packed once (kernel_gemm_pack), 2: B */
} Case;

static void describe(const Case *c, char *out, size_t cap) {
  snprintf(out, cap,
           "m %lld n %lld k %lld batch %lld, A %s%s %s B %s%s %s C %s, %s%s",
           (long long)c->m, (long long)c->n, (long long)c->k,
           (long long)c->batch, layout_names[c->la],
           c->share_a ? " shared" : "", dtype_name(c->ta), layout_names[c->lb],
           c->share_b ? " shared" : "", dtype_name(c->tb), layout_names[c->lc],
           c->accumulate ? "accumulate" : "overwrite",
           c->packed == 1   ? ", A packed"
           : c->packed == 2 ? ", B packed"
                            : "");
}

/* Run case C on POOL; every element of C must match the double-precision
 * sum within 1e-5 of the sum of the magnitudes of its terms (the
 * condition of the sum: a relative error for well-conditioned data), and
 * every element around C must be left as it was. Returns false (after
 * one message) on a mismatch. */
static bool check_case(const Case *c, Pool *pool, Lcg *r) {
  Operand a =
      operand_new(c->la, c->m, c->k, c->batch, c->share_a, r, c->lo, c->hi);
  Operand b =
      operand_new(c->lb, c->k, c->n, c->batch, c->share_b, r, c->lo, c->hi);
  Operand out =
      operand_new(c->lc, c->m, c->n, c->batch, false, r, c->lo, c->hi);
  operand_half(&a, c->ta, r);
  operand_half(&b, c->tb, r);
  /* Overwriting must not read C: NaN there would show. */
  if (!c->accumulate)
    for (int64_t i = 0; i < out.len; i++)
      if (out.logical[i])
        out.data[i] = NAN;
  float *before = xmalloc((size_t)out.len * sizeof(float));
  memcpy(before, out.data, (size_t)out.len * sizeof(float));
  Gemm g = {.m = c->m,
            .n = c->n,
            .k = c->k,
            .batch = c->batch,
            .a = operand_values(&a),
            .a_m = a.rs,
            .a_k = a.cs,
            .a_b = a.bs,
            .b = operand_values(&b),
            .b_k = b.rs,
            .b_n = b.cs,
            .b_b = b.bs,
            .c = out.data,
            .c_m = out.rs,
            .c_n = out.cs,
            .c_b = out.bs,
            .a_type = a.dtype,
            .b_type = b.dtype,
            .accumulate = c->accumulate};
  GemmPack *pk = c->packed ? kernel_gemm_pack(&g, c->packed == 2, pool) : NULL;
  kernel_gemm_with(&g, pk, pool);
  kernel_gemm_pack_free(pk);

  bool ok = true;
  char what[256];
  for (int64_t bi = 0; bi < c->batch && ok; bi++)
    for (int64_t i = 0; i < c->m && ok; i++)
      for (int64_t j = 0; j < c->n && ok; j++) {
        int64_t at_c = bi * out.bs + i * out.rs + j * out.cs;
        double sum = c->accumulate ? before[at_c] : 0;
        double mag = fabs(sum);
        for (int64_t p = 0; p < c->k; p++) {
          double t = (double)at(&a, bi, i, p) * at(&b, bi, p, j);
          sum += t;
          mag += fabs(t);
        }
        double got = out.data[at_c];
        if (!(fabs(got - sum) <= 1e-5 * mag + 1e-30)) {
          describe(c, what, sizeof what);
          test_fail(__FILE__, __LINE__,
                    "%s, %d threads: C[%lld][%lld][%lld] = %.9g, expected "
                    "%.9g",
                    what, pool_size(pool), (long long)bi, (long long)i,
                    (long long)j, got, sum);
          ok = false;
        }
      }
  for (int64_t i = 0; i < out.len && ok; i++)
    if (!out.logical[i] && memcmp(&out.data[i], &before[i], sizeof(float))) {
      describe(c, what, sizeof what);
      test_fail(__FILE__, __LINE__, "%s: element %lld outside C written", what,
                (long long)i);
      ok = false;
    }
  free(before);
  operand_free(&a);
  operand_free(&b);
  operand_free(&out);
  return ok;
}

static const int64_t dims[] = {1, 2, 3, 7, 16, 17, 64, 129, 300};
enum { NDIMS = sizeof dims / sizeof dims[0] };

/* Every (m, n, k) from DIMS, each with the next of the 64 layout
 * combinations, batch 3 for the smaller ones, accumulate on every other,
 * and one or two threads. With SPARSE, every fifth shape only. */
static void check_shapes(Pool *one, Pool *two, bool sparse) {
  Lcg r = {42};
  int idx = 0, failures = 0;
  for (int im = 0; im < NDIMS; im++)
    for (int in = 0; in < NDIMS; in++)
      for (int ik = 0; ik < NDIMS; ik++, idx++) {
        if (sparse && idx % 5)
          continue;
        Case c = {.m = dims[im],
                  .n = dims[in],
                  .k = dims[ik],
                  .batch = 1,
                  .la = (Layout)(idx % L_COUNT),
                  .lb = (Layout)(idx / L_COUNT % L_COUNT),
                  .lc = (Layout)(idx / (L_COUNT * L_COUNT) % L_COUNT),
                  .accumulate = idx % 2,
                  .lo = -1,
                  .hi = 1};
        if (idx % 3 == 0 && c.m * c.n * c.k <= 300000)
          c.batch = 3;
        if (!check_case(&c, idx / 2 % 2 ? two : one, &r) && ++failures > 5)
          return;
      }
}

/* Under the sanitizers (MAMBALAYA_SANITIZED=1, set by `make test`), every
 * fifth shape: the same paths, in a fifth of the time. */
TEST(kernels_gemm_all_shapes) {
  const char *san = getenv("MAMBALAYA_SANITIZED");
  Pool *one = pool_new(1), *two = pool_new(2);
  check_shapes(one, two, san && strcmp(san, "1") == 0);
  pool_free(one);
  pool_free(two);
}

/* Every combination of the operands' layouts, each with two opposite
 * settings of batch, accumulation and thread count, on shapes that take
 * each path: the packed one, and with few rows the dot path (B = W^T) or
 * the row path (row-major B). */
static void check_layouts(Pool *one, Pool *two) {
  const int64_t shapes[][3] = {
      {17, 33, 129}, {5, 40, 300}, {3, 40, 300}, {64, 17, 7}};
  Lcg r = {7};
  int failures = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int la = 0; la < L_COUNT; la++)
      for (int lb = 0; lb < L_COUNT; lb++)
        for (int lc = 0; lc < L_COUNT; lc++)
          for (int flip = 0; flip < 2; flip++) {
            int v = ((la + lb + lc + (int)s) % 8) ^ (flip ? 7 : 0);
            Case c = {.m = shapes[s][0],
                      .n = shapes[s][1],
                      .k = shapes[s][2],
                      .batch = v & 1 ? 3 : 1,
                      .la = (Layout)la,
                      .lb = (Layout)lb,
                      .lc = (Layout)lc,
                      .accumulate = v & 2,
                      .lo = -1,
                      .hi = 1};
            if (!check_case(&c, v & 4 ? two : one, &r) && ++failures > 5)
              return;
          }
}

TEST(kernels_gemm_all_layouts) {
  Pool *one = pool_new(1), *two = pool_new(2);
  check_layouts(one, two);
  pool_free(one);
  pool_free(two);
}

/* Decode: m = 1..16 against weights in either layout, sizes that leave
 * remainders in every blocking (4 rows of W, 8-wide vectors, 16-wide
 * slivers, KC). */
static void check_small_m(Pool *two) {
  const int64_t ns[] = {1, 5, 67, 300};
  const int64_t ks[] = {1, 9, 777};
  Lcg r = {99};
  int idx = 0, failures = 0;
  for (int64_t m = 1; m <= 16; m++)
    for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++)
      for (size_t ik = 0; ik < sizeof ks / sizeof ks[0]; ik++, idx++) {
        Case c = {.m = m,
                  .n = ns[in],
                  .k = ks[ik],
                  .batch = 1 + idx % 2,
                  .la = idx % 3 ? L_ROW : L_COL,
                  .lb = idx % 2 ? L_COL : L_ROW,
                  .lc = L_ROW,
                  .accumulate = idx % 4 == 1,
                  .lo = -1,
                  .hi = 1};
        if (!check_case(&c, two, &r) && ++failures > 5)
          return;
      }
}

TEST(kernels_gemm_small_m) {
  Pool *two = pool_new(2);
  check_small_m(two);
  pool_free(two);
}

/* K = 50000 on positive data (well-conditioned): blocked fp32 sums stay
 * within 1e-5 of the exact ones, on every path. */
static void check_long_k(Pool *two) {
  const int64_t shapes[][2] = {{1, 3}, {3, 5}, {20, 18}};
  Lcg r = {5};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int lb = L_ROW; lb <= L_COL; lb++) {
      Case c = {.m = shapes[s][0],
                .n = shapes[s][1],
                .k = 50000,
                .batch = 1,
                .la = L_ROW,
                .lb = (Layout)lb,
                .lc = L_ROW,
                .lo = 0,
                .hi = 1};
      check_case(&c, two, &r);
    }
}

TEST(kernels_gemm_long_k) {
  Pool *two = pool_new(2);
  check_long_k(two);
  pool_free(two);
}

/* Batches sharing one operand (the weights across sequences, or one
 * activation against per-batch weights) fold into one product. */
static void check_shared(Pool *two) {
  const int64_t shapes[][3] = {
      {1, 70, 300}, {3, 70, 300}, {40, 1, 33}, {40, 3, 33}, {1, 1, 500}};
  Lcg r = {11};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int v = 0; v < 8; v++) {
      Case c = {.m = shapes[s][0],
                .n = shapes[s][1],
                .k = shapes[s][2],
                .batch = 4,
                .la = v & 1 ? L_COL : L_ROW,
                .lb = v & 2 ? L_COL : L_ROW,
                .lc = v & 4 ? L_PAD : L_ROW,
                .share_a = v % 3 == 1,
                .share_b = v % 3 != 1,
                .lo = -1,
                .hi = 1};
      check_case(&c, two, &r);
    }
}

TEST(kernels_gemm_shared_operands) {
  Pool *two = pool_new(2);
  check_shared(two);
  pool_free(two);
}

TEST(kernels_gemm_empty) {
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 4, 5, 6};
  float c[4] = {7, 7, 7, 7};
  Gemm g = {.m = 2,
            .n = 2,
            .k = 0,
            .batch = 1,
            .a = a,
            .a_m = 3,
            .a_k = 1,
            .b = b,
            .b_k = 2,
            .b_n = 1,
            .c = c,
            .c_m = 2,
            .c_n = 1,
            .accumulate = true};
  kernel_gemm(&g, NULL); /* C += nothing */
  for (int i = 0; i < 4; i++)
    CHECK(c[i] == 7);
  g.accumulate = false; /* C = an empty sum */
  kernel_gemm(&g, NULL);
  for (int i = 0; i < 4; i++)
    CHECK(c[i] == 0);
  g.k = 3;
  g.m = 0; /* nothing to write */
  c[0] = 9;
  kernel_gemm(&g, NULL);
  CHECK(c[0] == 9);
  g.m = 2;
  g.batch = 0;
  kernel_gemm(&g, NULL);
  CHECK(c[0] == 9);
}

/* Batches that all write one C (c_b == 0) run in turn: accumulating, C
 * sums them. */
TEST(kernels_gemm_batches_into_one_c) {
  enum { B = 3, M = 20, N = 30, K = 40 };
  float *a = xmalloc(B * M * K * sizeof(float));
  float *b = xmalloc(B * K * N * sizeof(float));
  float c[M * N];
  Lcg r = {3};
  for (int i = 0; i < B * M * K; i++)
    a[i] = rng_float(&r, -1, 1);
  for (int i = 0; i < B * K * N; i++)
    b[i] = rng_float(&r, -1, 1);
  for (int i = 0; i < M * N; i++)
    c[i] = 1;
  Pool *two = pool_new(2);
  Gemm g = {.m = M,
            .n = N,
            .k = K,
            .batch = B,
            .a = a,
            .a_m = K,
            .a_k = 1,
            .a_b = M * K,
            .b = b,
            .b_k = N,
            .b_n = 1,
            .b_b = K * N,
            .c = c,
            .c_m = N,
            .c_n = 1,
            .c_b = 0,
            .accumulate = true};
  kernel_gemm(&g, two);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double sum = 1, mag = 1;
      for (int bi = 0; bi < B; bi++)
        for (int p = 0; p < K; p++) {
          double t = (double)a[(bi * M + i) * K + p] * b[(bi * K + p) * N + j];
          sum += t;
          mag += fabs(t);
        }
      CHECK(fabs(c[i * N + j] - sum) <= 1e-5 * mag);
    }
  pool_free(two);
  free(a);
  free(b);
}

/* 16-bit operands on every path: the dot path streaming a 16-bit W (B,
 * or A run transposed), the packed path converting while it packs, the
 * row path's shapes (fp32 only: the packed path takes them). */
static void check_16bit(Pool *one, Pool *two) {
  /* {40, 70, 300}: whole 16-bit slivers of AVX-512's 8 rows and 32
   * columns, widened in the transpose, over two blocks of k. */
  const int64_t shapes[][3] = {{1, 67, 777},  {3, 40, 300}, {16, 5, 9},
                               {17, 33, 129}, {64, 17, 7},  {2, 2, 3},
                               {40, 70, 300}};
  const DType types[] = {DT_F32, DT_F16, DT_BF16};
  Lcg r = {16};
  int idx = 0, failures = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int ta = 0; ta < 3; ta++)
      for (int tb = 0; tb < 3; tb++)
        for (int l = 0; l < 4; l++, idx++) {
          if (ta == 0 && tb == 0)
            continue;
          Case c = {.m = shapes[s][0],
                    .n = shapes[s][1],
                    .k = shapes[s][2],
                    .batch = idx % 3 == 0 ? 2 : 1,
                    .la = l & 1 ? L_COL : L_ROW,
                    .lb = l & 2 ? L_COL : L_PAD,
                    .lc = idx % 5 == 0 ? L_STRIDED : L_ROW,
                    .accumulate = idx % 2,
                    .lo = -1,
                    .hi = 1,
                    .ta = types[ta],
                    .tb = types[tb]};
          if (!check_case(&c, idx % 4 < 2 ? one : two, &r) && ++failures > 5)
            return;
        }
}

TEST(kernels_gemm_16bit) {
  Pool *one = pool_new(1), *two = pool_new(2);
  check_16bit(one, two);
  pool_free(one);
  pool_free(two);
}

/* A or B packed once: products that take the packed path read it (and
 * those that do not ignore it), in every dtype and layout. */
static void check_packed(Pool *one, Pool *two) {
  const int64_t shapes[][3] = {
      {64, 40, 300}, {130, 17, 600}, {17, 2100, 33}, {40, 40, 256}};
  const DType types[] = {DT_F32, DT_F16, DT_BF16};
  Lcg r = {77};
  int idx = 0, failures = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int side = 1; side <= 2; side++)
      for (int t = 0; t < 3; t++)
        for (int l = 0; l < 4; l++, idx++) {
          Case c = {.m = shapes[s][0],
                    .n = shapes[s][1],
                    .k = shapes[s][2],
                    .batch = 1,
                    .la = (Layout)l,
                    .lb = (Layout)((l + side) % L_COUNT),
                    .lc = L_ROW,
                    .accumulate = idx % 2,
                    .lo = -1,
                    .hi = 1,
                    .ta = side == 1 ? types[t] : DT_F32,
                    .tb = side == 2 ? types[t] : DT_F32,
                    .packed = side};
          if (!check_case(&c, idx % 2 ? one : two, &r) && ++failures > 5)
            return;
        }
}

TEST(kernels_gemm_packed_operand) {
  Pool *one = pool_new(1), *two = pool_new(2);
  check_packed(one, two);
  /* Nothing to pack for a decode-sized product (the dot path). */
  float a[4 * 300] = {0}, b[300 * 40] = {0}, c[4 * 40];
  Gemm g = {.m = 1, .n = 40, .k = 300, .batch = 1, .a = a, .a_m = 300,
            .a_k = 1, .b = b, .b_k = 1, .b_n = 300, .c = c, .c_m = 40,
            .c_n = 1};
  CHECK(kernel_gemm_pack(&g, true, two) == NULL);
  /* A pack of other values is ignored: C is still A.B. */
  g.m = 4;
  g.n = 40;
  g.b_k = 40;
  g.b_n = 1;
  for (int i = 0; i < 4 * 300; i++)
    a[i] = (float)(i % 7) - 3;
  for (int i = 0; i < 300 * 40; i++)
    b[i] = (float)(i % 5) - 2;
  Gemm other = g;
  float a2[4 * 300] = {0};
  other.a = a2;
  GemmPack *pk = kernel_gemm_pack(&other, false, two);
  kernel_gemm_with(&g, pk, two);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 40; j += 13) {
      double sum = 0;
      for (int p = 0; p < 300; p++)
        sum += (double)a[i * 300 + p] * b[p * 40 + j];
      CHECK(fabs(c[i * 40 + j] - sum) < 1e-3);
    }
  kernel_gemm_pack_free(pk);
  pool_free(one);
  pool_free(two);
}

/* kernel_widen against the exact scalar conversion, for every one of the
 * 65536 values of each 16-bit dtype (NaNs stay NaNs), at every alignment
 * of the vector loop's tail. */
static void check_widen(void) {
  uint16_t *h = xmalloc(65536 * sizeof *h);
  float *f = xmalloc(65536 * sizeof *f);
  for (int i = 0; i < 65536; i++)
    h[i] = (uint16_t)i;
  const DType types[] = {DT_F16, DT_BF16};
  for (int t = 0; t < 2; t++)
    for (int off = 0; off < 9; off++) {
      kernel_widen(types[t], h + off, f, 65536 - off);
      int bad = 0;
      for (int i = 0; i < 65536 - off && bad < 3; i++) {
        float want = dtype_half_value(types[t], h[i + off]);
        bool same = isnan(want) ? isnan(f[i])
                                : memcmp(&want, &f[i], sizeof want) == 0;
        if (!same) {
          test_fail(__FILE__, __LINE__, "%s 0x%04x: %g, expected %g",
                    dtype_name(types[t]), h[i + off], f[i], want);
          bad++;
        }
      }
    }
  free(h);
  free(f);
}

TEST(kernels_widen_every_value) { check_widen(); }

TEST(kernels_copy_bandwidth) {
  for (int t = 1; t <= 2; t++) {
    Pool *p = pool_new(t);
    double bw = kernel_copy_bandwidth((size_t)4 << 20, p);
    CHECK(isfinite(bw) && bw > 0);
    pool_free(p);
  }
  double tiny = kernel_copy_bandwidth(0, NULL);
  CHECK(isfinite(tiny) && tiny > 0);
}

/* Regions of every size a model holds (a bias of a few values, a row of
 * lines and a tail), read by one thread and by two: each read stays within
 * its region (the sanitizer build checks every byte) and takes a time. */
TEST(kernels_read_regions_in_bounds) {
  const size_t sizes[] = {1, 63, 64, 65, 127, 1000, 4096 + 7, 1 << 16};
  enum { N = sizeof sizes / sizeof sizes[0] };
  const void *p[N];
  for (int i = 0; i < N; i++) {
    char *b = xmalloc(sizes[i]);
    memset(b, i, sizes[i]);
    p[i] = b;
  }
  for (int t = 1; t <= 2; t++) {
    Pool *pool = pool_new(t);
    double s = kernel_read_seconds(p, sizes, N, pool);
    CHECK(isfinite(s) && s >= 0);
    CHECK(kernel_read_seconds(p, sizes, 0, pool) >= 0); /* nothing */
    double bw = kernel_read_bandwidth((size_t)4 << 20, pool);
    CHECK(isfinite(bw) && bw > 0);
    pool_free(pool);
  }
  for (int i = 0; i < N; i++)
    free((void *)p[i]);
}

/* Every check with the kernels MAMBALAYA_KERNELS=ISA forces. */
static void check_forced(const char *isa) {
  const char *old = getenv("MAMBALAYA_KERNELS");
  char *saved = old ? xstrdup(old) : NULL;
  setenv("MAMBALAYA_KERNELS", isa, 1);
  Pool *one = pool_new(1), *two = pool_new(2);
  check_shapes(one, two, true);
  check_small_m(two);
  check_long_k(two);
  check_shared(two);
  check_16bit(one, two);
  check_packed(one, two);
  check_widen();
  pool_free(one);
  pool_free(two);
  if (saved)
    setenv("MAMBALAYA_KERNELS", saved, 1);
  else
    unsetenv("MAMBALAYA_KERNELS");
  free(saved);
}

/* The portable kernels, which a CPU without AVX2 would run. */
TEST(kernels_gemm_portable) { check_forced("portable"); }

/* The AVX2 kernels, which the other tests run on a CPU without AVX-512
 * (and, for the dot path, on AMD's: select_isa). */
TEST(kernels_gemm_avx2) { check_forced("avx2"); }

/* All the AVX-512 kernels, which the other tests run on Intel CPUs with
 * AVX-512 (on AMD's, the packed path's only; on a CPU without it, the
 * AVX2 kernels again). */
TEST(kernels_gemm_avx512) { check_forced("avx512"); }
