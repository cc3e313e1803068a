/* vmath.c — the operators of src/ir/ops.h over float arrays, written so
 * that the compiler vectorizes them (no calls, no branches in the loops;
 * the Makefile builds this file with -O3, and every loop exists in an
 * AVX-512, an AVX2 and a baseline x86-64 version, chosen by the CPU's
 * features). exp, log
 * and tanh are the Cephes single-precision algorithms: range reduction,
 * then a minimax polynomial; about 1 ulp. erf is fitted here. */
#include "vm.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float bits_to_float(int32_t i) {
  float f;
  memcpy(&f, &i, sizeof f);
  return f;
}

static inline int32_t float_to_bits(float f) {
  int32_t i;
  memcpy(&i, &f, sizeof i);
  return i;
}

/* C[0] x^(N-1) + C[1] x^(N-2) + ... + C[N-1] by Horner's rule, each
 * polynomial's coefficients a table, highest power first (the order of
 * the operations of Cephes' code). N is a constant at every call: the
 * loop unrolls, and the vector loops stay straight-line code. */
#define POLY(x, c) horner((x), (c), (int)(sizeof(c) / sizeof((c)[0])))
static inline __attribute__((always_inline)) float horner(float x,
                                                          const float *c,
                                                          int n) {
  float y = c[0];
#pragma GCC unroll 16
  for (int i = 1; i < n; i++)
    y = y * x + c[i];
  return y;
}

static inline __attribute__((always_inline)) float exp1(float x) {
  x = x < 88.3762626647949f ? x : 88.3762626647949f;
  bool tiny = x < -87.3365447504f;
  x = x > -87.3365447504f ? x : -87.3365447504f;
  /* Round x/ln2 to nearest by adding and subtracting 1.5 * 2^23, which
   * leaves no fraction bits: no call and no conversion, so the loop
   * vectorizes with and without SSE4.1 (a float-to-int truncation here
   * keeps GCC from vectorizing the AVX2 version). */
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  static const float exp_p[] = {
      1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f, 4.1665795894E-2f,
      1.6666665459E-1f, 5.0000001201E-1f};
  float p = POLY(r, exp_p);
  float y = p * r * r + r + 1.0f;
  y *= bits_to_float(((int32_t)n + 127) << 23);
  return tiny ? 0.0f : y;
}

static inline __attribute__((always_inline)) float log1(float x) {
  int32_t i = float_to_bits(x);
  int32_t e = ((i >> 23) & 0xff) - 126;
  float m = bits_to_float((i & 0x007fffff) | 0x3f000000); /* [0.5, 1) */
  bool small = m < 0.707106781186547524f;
  e -= small;
  m = small ? m + m - 1.0f : m - 1.0f;
  float z = m * m;
  static const float log_p[] = {
      7.0376836292E-2f, -1.1514610310E-1f, 1.1676998740E-1f, -1.2420140846E-1f,
      1.4249322787E-1f, -1.6668057665E-1f, 2.0000714765E-1f, -2.4999993993E-1f,
      3.3333331174E-1f};
  float y = POLY(m, log_p);
  y = y * m * z;
  float fe = (float)e;
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  float r = m + y + 0.693359375f * fe;
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f || x != x ? NAN : r;
  r = x == INFINITY ? INFINITY : r;
  return r;
}

/* log(1 + e) without losing e when it is tiny: log(u) * e / (u - 1). */
static inline __attribute__((always_inline)) float log1p1(float e) {
  float u = 1.0f + e;
  float d = u - 1.0f;
  return d == 0.0f ? e : log1(u) * (e / d);
}

#define INLINE static inline __attribute__((always_inline))

/* Cephes' tanhf: a polynomial below 0.625, 1 - 2/(e^2x + 1) above;
 * about 1 ulp. */
INLINE float tanh1(float x) {
  float a = fabsf(x), z = x * x;
  static const float tanh_p[] = {
      -5.70498872745E-3f, 2.06390887954E-2f, -5.37397155531E-2f,
      1.33314422036E-1f, -3.33332819422E-1f};
  float p = POLY(z, tanh_p);
  float small = p * z * x + x;
  float big = 1.0f - 2.0f / (exp1(a + a) + 1.0f);
  big = x < 0.0f ? -big : big;
  return a < 0.625f ? small : big;
}

/* erf(x) = x P(x^2) for |x| < 1; erfc(x) = exp(-x^2) R(1/(1 + x/2)) for
 * x >= 1 (least-squares fits in relative error, 2e-9 and 8e-9; in float
 * about 2e-7 for erf, 2e-6 for erfc, from the rounding of x^2). */
INLINE float erf_small(float x) {
  float z = x * x;
  static const float erf_p[] = {
      7.923142070e-05f, -8.030938609e-04f, 5.190671306e-03f, -2.685504684e-02f,
      1.128361532e-01f, -3.761262871e-01f, 1.128379166e+00f};
  float p = POLY(z, erf_p);
  return x * p;
}

INLINE float erfc_large(float x) { /* x >= 1 */
  float t = 1.0f / (1.0f + 0.5f * x);
  static const float erfc_p[] = {
      8.334517888e-02f, -1.928420633e-01f, 3.559307727e-02f, 9.747188107e-02f,
      1.615945340e-01f, 2.519768426e-01f, 2.811570760e-01f, 2.821840421e-01f,
      -3.505295833e-06f};
  float r = POLY(t, erfc_p);
  return exp1(-x * x) * r;
}

INLINE float erf1(float x) {
  float a = fabsf(x);
  float big = 1.0f - erfc_large(a > 1.0f ? a : 1.0f);
  big = x < 0.0f ? -big : big;
  return a < 1.0f ? erf_small(x) : big;
}

/* ---- each op of ops.h over one lane, named after it ---- */

#define EXP exp1
#define LOG log1
#define LOG1P log1p1
#define SQRT sqrtf
#define FABS fabsf
#define CEIL ceilf
#define F(id, arity, expr)                                                    \
  INLINE float f_##id(IR_OP_PARAMS##arity(float)) { return expr; }
IR_OP_FORMULAS(F, float)
#undef F

/* Integer exponents below 64 by repeated squaring (exact up to the
 * roundings of the products), others as exp(b log |a|), with the sign of
 * an odd power of a negative base; NaN for a negative base and a
 * fractional exponent, as libm. No branches: both are computed. */
INLINE float f_POW(float a, float b) {
  float n = fabsf(b);
  bool small = n < 4194304.0f; /* 2^22: rounding by adding 1.5 * 2^23 */
  float whole = (n + 12582912.0f) - 12582912.0f;
  bool integral = !small || whole == n;
  int32_t k = (int32_t)(small ? n : 0.0f);
  float r = 1.0f, sq = a;
  for (int bit = 0; bit < 6; bit++) {
    r = (k >> bit) & 1 ? r * sq : r;
    sq *= sq;
  }
  r = b < 0.0f ? 1.0f / r : r;
  float g = exp1(b * log1(fabsf(a)));
  g = a < 0.0f && integral && (k & 1) ? -g : g;
  g = a < 0.0f && !integral ? NAN : g;
  return integral && n < 64.0f ? r : g;
}

INLINE float f_TANH(float a) { return tanh1(a); }
INLINE float f_ERF(float a) { return erf1(a); }
/* a/2 (1 + erf(z)), z = a/sqrt 2: below z = -1, 1 + erf(z) = erfc(-z)
 * without the cancellation */
INLINE float f_GELU(float a) {
  float z = a * 0.70710678118654752f;
  float lo = erfc_large(z < -1.0f ? -z : 1.0f);
  return 0.5f * a * (z < -1.0f ? lo : 1.0f + erf1(z));
}
/* a/2 (1 + tanh(u)) = a sigmoid(2u): no cancellation for a < 0 */
INLINE float f_GELU_TANH(float a) {
  float u = 0.79788456080286536f * (a + 0.044715f * a * a * a);
  return a / (1.0f + exp1(-2.0f * u));
}

#define LOOP1(f)                                                              \
  for (int i = 0; i < n; i++)                                                 \
  y[i] = f(a[i])
#define LOOP2(f)                                                              \
  for (int i = 0; i < n; i++)                                                 \
  y[i] = f(a[i], b[i])
#define LOOP3(f)                                                              \
  for (int i = 0; i < n; i++)                                                 \
  y[i] = f(a[i], b[i], c[i])

INLINE void op_loop(Op op, float *y, const float *a, const float *b,
                    const float *c, int n) {
  switch (op) {
#define X(id, text, arity, prec, cost)                                        \
  case OP_##id:                                                               \
    LOOP##arity(f_##id);                                                      \
    break;
    IR_OPS(X)
#undef X
  case OP_COUNT:
    break;
  }
}

/* The same loops compiled three times. GCC's target_clones("arch=haswell")
 * dispatches on the CPU model, not its features, and so takes the
 * baseline on AMD processors: choose by feature here instead. */
static void op_base(Op op, float *y, const float *a, const float *b,
                    const float *c, int n) {
  op_loop(op, y, a, b, c, n);
}

bool vm_have_avx2(void) {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static void
op_avx2(Op op, float *y, const float *a, const float *b, const float *c,
        int n) {
  op_loop(op, y, a, b, c, n);
}

/* Sixteen lanes where the CPU has AVX-512: the same operations on each
 * value (no contraction: -std=c11 keeps GCC from fusing a product into an
 * add), so the same numbers as the eight lanes, bit for bit, in fewer
 * instructions. On Zen 4, which runs a 512-bit operation as two halves,
 * the gain is in the polynomials' chains of dependent operations: a
 * decode step's exp of Mamba-1's decays, 36 -> 27 us a layer; softplus,
 * 5.7 -> 3.5 us. */
#if defined(__clang__) /* only the fuzzers; clang knows no width option */
#define AVX512_LOOPS "avx512f,avx512dq,avx512bw,avx512vl"
#else
#define AVX512_LOOPS                                                           \
  "avx512f,avx512dq,avx512bw,avx512vl,prefer-vector-width=512"
#endif
__attribute__((target(AVX512_LOOPS))) static void
op_avx512(Op op, float *y, const float *a, const float *b, const float *c,
          int n) {
  op_loop(op, y, a, b, c, n);
}

static bool have_avx512(void) {
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}
#endif

void vm_op(Op op, float *y, const float *a, const float *b, const float *c,
           int n) {
#if defined(__x86_64__)
  if (have_avx512()) {
    op_avx512(op, y, a, b, c, n);
    return;
  }
  if (vm_have_avx2()) {
    op_avx2(op, y, a, b, c, n);
    return;
  }
#endif
  op_base(op, y, a, b, c, n);
}

float vm_op1(Op op, float a, float b, float c) {
  float y;
  vm_op(op, &y, &a, &b, &c, 1);
  return y;
}
