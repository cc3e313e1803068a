/* vmath.c — the elementwise functions over float arrays, written so that
 * the compiler vectorizes them (no calls, no branches in the loops; the
 * Makefile builds this file with -O3, and every loop exists in an AVX2
 * and a baseline x86-64 version, chosen by the CPU's features). exp and
 * log are the Cephes single-precision algorithms: range reduction, then a
 * minimax polynomial; about 1 ulp. */
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
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
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
  float y = 7.0376836292E-2f;
  y = y * m - 1.1514610310E-1f;
  y = y * m + 1.1676998740E-1f;
  y = y * m - 1.2420140846E-1f;
  y = y * m + 1.4249322787E-1f;
  y = y * m - 1.6668057665E-1f;
  y = y * m + 2.0000714765E-1f;
  y = y * m - 2.4999993993E-1f;
  y = y * m + 3.3333331174E-1f;
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

INLINE void unary(UnOp op, float *y, const float *x, int n) {
  switch (op) {
  case UN_NEG:
    for (int i = 0; i < n; i++)
      y[i] = -x[i];
    break;
  case UN_EXP:
    for (int i = 0; i < n; i++)
      y[i] = exp1(x[i]);
    break;
  case UN_LOG:
    for (int i = 0; i < n; i++)
      y[i] = log1(x[i]);
    break;
  case UN_SQRT:
    for (int i = 0; i < n; i++)
      y[i] = sqrtf(x[i]);
    break;
  case UN_RSQRT:
    for (int i = 0; i < n; i++)
      y[i] = 1.0f / sqrtf(x[i]);
    break;
  case UN_SIGMOID:
    for (int i = 0; i < n; i++)
      y[i] = 1.0f / (1.0f + exp1(-x[i]));
    break;
  case UN_SILU:
    for (int i = 0; i < n; i++)
      y[i] = x[i] / (1.0f + exp1(-x[i]));
    break;
  case UN_SOFTPLUS: /* PyTorch's: the identity above 20 */
    for (int i = 0; i < n; i++)
      y[i] = x[i] > 20.0f ? x[i] : log1p1(exp1(x[i]));
    break;
  case UN_RECIP:
    for (int i = 0; i < n; i++)
      y[i] = 1.0f / x[i];
    break;
  case UN_COUNT:
    break;
  }
}

INLINE void binary(BinOp op, float *y, const float *a, const float *b,
                   int n) {
  switch (op) {
  case BI_ADD:
    for (int i = 0; i < n; i++)
      y[i] = a[i] + b[i];
    break;
  case BI_SUB:
    for (int i = 0; i < n; i++)
      y[i] = a[i] - b[i];
    break;
  case BI_MUL:
    for (int i = 0; i < n; i++)
      y[i] = a[i] * b[i];
    break;
  case BI_DIV:
    for (int i = 0; i < n; i++)
      y[i] = a[i] / b[i];
    break;
  case BI_MAX:
    for (int i = 0; i < n; i++)
      y[i] = a[i] > b[i] ? a[i] : b[i];
    break;
  case BI_MIN:
    for (int i = 0; i < n; i++)
      y[i] = a[i] < b[i] ? a[i] : b[i];
    break;
  case BI_COUNT:
    break;
  }
}

/* The same loops compiled twice. GCC's target_clones("arch=haswell")
 * dispatches on the CPU model, not its features, and so takes the
 * baseline on AMD processors: choose by feature here instead. */
static void unary_base(UnOp op, float *y, const float *x, int n) {
  unary(op, y, x, n);
}

static void binary_base(BinOp op, float *y, const float *a, const float *b,
                        int n) {
  binary(op, y, a, b, n);
}

bool vm_have_avx2(void) {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

#if defined(__x86_64__)
#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static void unary_avx2(UnOp op, float *y, const float *x, int n) {
  unary(op, y, x, n);
}

AVX2 static void binary_avx2(BinOp op, float *y, const float *a,
                             const float *b, int n) {
  binary(op, y, a, b, n);
}
#endif

void vm_unary(UnOp op, float *y, const float *x, int n) {
#if defined(__x86_64__)
  if (vm_have_avx2()) {
    unary_avx2(op, y, x, n);
    return;
  }
#endif
  unary_base(op, y, x, n);
}

void vm_binary(BinOp op, float *y, const float *a, const float *b, int n) {
#if defined(__x86_64__)
  if (vm_have_avx2()) {
    binary_avx2(op, y, a, b, n);
    return;
  }
#endif
  binary_base(op, y, a, b, n);
}

float vm_unary1(UnOp op, float x) {
  float y;
  vm_unary(op, &y, &x, 1);
  return y;
}
