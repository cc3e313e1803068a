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

#define EXP exp
#define LOG log
#define LOG1P log1p
#define SQRT sqrt
#define FABS fabs
#define CEIL ceil
#define F(id, arity, expr)                                                    \
  static double d_##id(IR_OP_PARAMS##arity(double)) { return expr; }
IR_OP_FORMULAS(F, double)
#undef F

static double d_POW(double a, double b) { return pow(a, b); }
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
