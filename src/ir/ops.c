/* ops.c — the operators of ops.h: their names, and their meaning in
 * double precision (libm). */
#include "ops.h"

#include <math.h>
#include <string.h>

static const struct {
  const char *text;
  int arity, prec;
} ops[] = {
#define X(id, text, arity, prec, cost) {text, arity, prec},
    IR_OPS(X)
#undef X
};
_Static_assert(sizeof ops / sizeof ops[0] == OP_COUNT, "a row per operator");

const char *op_text(Op op) { return ops[op].text; }
int op_arity(Op op) { return ops[op].arity; }
int op_prec(Op op) { return ops[op].prec; }

bool op_function(const char *name, Op *op) {
  for (int i = 0; i < OP_COUNT; i++)
    if (ops[i].prec == 0 && strcmp(ops[i].text, name) == 0) {
      *op = (Op)i;
      return true;
    }
  return false;
}

bool op_infix(const char *text, size_t len, int prec, Op *op) {
  for (int i = 0; i < OP_COUNT; i++)
    if (ops[i].prec == prec && prec > 0 && strlen(ops[i].text) == len &&
        memcmp(ops[i].text, text, len) == 0) {
      *op = (Op)i;
      return true;
    }
  return false;
}

/* ---- the meaning: one function per op, named after it ---- */

static double d_ADD(double a, double b) { return a + b; }
static double d_SUB(double a, double b) { return a - b; }
static double d_MUL(double a, double b) { return a * b; }
static double d_DIV(double a, double b) { return a / b; }
static double d_LT(double a, double b) { return a < b; }
static double d_LE(double a, double b) { return a <= b; }
static double d_GT(double a, double b) { return a > b; }
static double d_GE(double a, double b) { return a >= b; }
static double d_EQ(double a, double b) { return a == b; }
static double d_NE(double a, double b) { return a != b; }
static double d_WHERE(double c, double a, double b) { return c != 0 ? a : b; }
static double d_MAX(double a, double b) { return a > b ? a : b; }
static double d_MIN(double a, double b) { return a < b ? a : b; }
static double d_POW(double a, double b) { return pow(a, b); }
static double d_NEG(double a) { return -a; }
static double d_ABS(double a) { return fabs(a); }
static double d_RECIP(double a) { return 1 / a; }
static double d_CEIL(double a) { return ceil(a); }
static double d_EXP(double a) { return exp(a); }
static double d_LOG(double a) { return log(a); }
static double d_SQRT(double a) { return sqrt(a); }
static double d_RSQRT(double a) { return 1 / sqrt(a); }
static double d_SIGMOID(double a) { return 1 / (1 + exp(-a)); }
static double d_SILU(double a) { return a / (1 + exp(-a)); }
/* PyTorch's, threshold 20: what Mamba uses */
static double d_SOFTPLUS(double a) { return a > 20 ? a : log1p(exp(a)); }
static double d_TANH(double a) { return tanh(a); }
static double d_ERF(double a) { return erf(a); }
/* 1 + erf(a/sqrt 2) = erfc(-a/sqrt 2), without cancellation for a < 0 */
static double d_GELU(double a) { return 0.5 * a * erfc(-a * 0.7071067811865476); }
static double d_GELU_TANH(double a) {
  return 0.5 * a * (1 + tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
}

#define CALL1(f) f(a)
#define CALL2(f) f(a, b)
#define CALL3(f) f(a, b, c)

double op_apply(Op op, double a, double b, double c) {
  (void)b;
  (void)c;
  switch (op) {
#define X(id, text, arity, prec, cost)                                        \
  case OP_##id:                                                               \
    return CALL##arity(d_##id);
    IR_OPS(X)
#undef X
  case OP_COUNT:
    break;
  }
  return NAN;
}
