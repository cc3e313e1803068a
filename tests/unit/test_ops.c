/* test_ops.c — the operators of src/ir/ops.h: every op's values, in
 * double (constant folding) and through the executor's vector code,
 * against libm written out here; and what the model charges for each. */
#include <stdlib.h>

#include "../../src/exec/exec.h"
#include "../../src/exec/vm.h"
#include "../../src/model/model.h"
#include "../../src/workload/workload.h"
#include "test.h"

enum { N = 16 };

/* Operands: negative, tiny, zero, past the polynomial breaks of tanh and
 * erf, large; equal pairs for the comparisons; integer, fractional,
 * negative and large exponents for pow. */
static const double xs[N] = {-6,    -3.5, -1.2,  -0.3, -1e-3, 0,    1e-4, 0.25,
                             0.625, 0.9,  1.05,  1.1,  2.5,   7,    25,   -2};
static const double ws[N] = {2,    -1, 0.5,  3,  0, -2,  1.5, 5,
                             -0.25, 1, 63, 2.5, 2.5, 0.3, 3, 3};

/* The meaning of each op, from libm, independently of src/ir/ops.c. */
static double libm_op(Op op, double a, double b, double c) {
  switch (op) {
  case OP_ADD: return a + b;
  case OP_SUB: return a - b;
  case OP_MUL: return a * b;
  case OP_DIV: return a / b;
  case OP_LT: return a < b ? 1 : 0;
  case OP_LE: return a <= b ? 1 : 0;
  case OP_GT: return a > b ? 1 : 0;
  case OP_GE: return a >= b ? 1 : 0;
  case OP_EQ: return a == b ? 1 : 0;
  case OP_NE: return a != b ? 1 : 0;
  case OP_WHERE: return a != 0 ? b : c;
  case OP_MAX: return fmax(a, b);
  case OP_MIN: return fmin(a, b);
  case OP_POW: return pow(a, b);
  case OP_NEG: return -a;
  case OP_ABS: return fabs(a);
  case OP_RECIP: return 1 / a;
  case OP_CEIL: return ceil(a);
  case OP_EXP: return exp(a);
  case OP_LOG: return log(a);
  case OP_SQRT: return sqrt(a);
  case OP_RSQRT: return 1 / sqrt(a);
  case OP_SIGMOID: return 1 / (1 + exp(-a));
  case OP_SILU: return a / (1 + exp(-a));
  case OP_SOFTPLUS: return a > 20 ? a : log(1 + exp(a));
  case OP_TANH: return tanh(a);
  case OP_ERF: return erf(a);
  case OP_GELU: return 0.5 * a * (1 + erf(a / sqrt(2.0)));
  case OP_GELU_TANH:
    return 0.5 * a * (1 + tanh(sqrt(2 / acos(-1.0)) * (a + 0.044715 * a * a * a)));
  case OP_COUNT: break;
  }
  return NAN;
}

/* Y[i] = the op applied to X[i] (and W[i], and V[i]). */
static char *op_spec(Op op) {
  Buf b = {0};
  buf_printf(&b, "shape: {I: %d}\neinsum:\n  declaration: {X: [I], W: [I], "
                 "V: [I], Y: [I]}\n  expressions:\n    - ",
             N);
  if (op_prec(op) > 0)
    buf_printf(&b, "Y[i] = X[i] %s W[i]\n", op_text(op));
  else if (op_arity(op) == 1)
    buf_printf(&b, "Y[i] = %s(X[i])\n", op_text(op));
  else if (op_arity(op) == 2)
    buf_printf(&b, "Y[i] = %s(X[i], W[i])\n", op_text(op));
  else
    buf_printf(&b, "Y[i] = %s(X[i], W[i], V[i])\n", op_text(op));
  return b.s;
}

static bool same_value(double got, double want, double tol) {
  if (isnan(want))
    return isnan(got);
  if (isinf(want))
    return got == want;
  double scale = fabs(want) > 1 ? fabs(want) : 1;
  return fabs(got - want) <= tol * scale;
}

/* For WHERE the condition is X itself: zero at i = 5. */
static double third(int i) { return -ws[i]; }

TEST(ops_values_against_libm) {
  for (int o = 0; o < OP_COUNT; o++) {
    Op op = (Op)o;
    /* In double: op_apply folds constants. */
    for (int i = 0; i < N; i++) {
      double want = libm_op(op, xs[i], ws[i], third(i));
      double got = op_apply(op, xs[i], ws[i], third(i));
      if (!same_value(got, want, 1e-12))
        test_fail(__FILE__, __LINE__, "op_apply %s(%g, %g): %.17g, libm %.17g",
                  op_text(op), xs[i], ws[i], got, want);
    }
    /* In float, through the parser and the executor's vector code. */
    char *text = op_spec(op);
    Diag d = {0};
    Cascade *c = spec_parse("t.yaml", text, strlen(text), &d);
    Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
    if (!s) {
      test_fail(__FILE__, __LINE__, "%s: %s", text, d.msg);
      cascade_free(c);
      free(text);
      continue;
    }
    Tensors in = {0}, res = {0};
    int64_t shape[1] = {N};
    const char *names[3] = {"X", "W", "V"};
    for (int k = 0; k < 3; k++) {
      Array *a = array_new(1, shape);
      for (int i = 0; i < N; i++)
        a->data[i] = (float)(k == 0 ? xs[i] : k == 1 ? ws[i] : third(i));
      tensors_put(&in, names[k], a, true);
    }
    ExecOpts eo = {.buffer_bytes = 1 << 20};
    if (exec_run(c, s, &in, &eo, &res, NULL, NULL, &d)) {
      const float *y = tensors_get(&res, "Y")->data;
      for (int i = 0; i < N; i++) {
        /* The operands as the executor sees them: rounded to float. */
        double want = libm_op(op, (float)xs[i], (float)ws[i], (float)third(i));
        if (fabs(want) > 3e38) /* past float's range */
          want = want > 0 ? INFINITY : -INFINITY;
        if (!same_value(y[i], want, 1e-6))
          test_fail(__FILE__, __LINE__, "%s(%g, %g): %.9g, libm %.9g",
                    op_text(op), xs[i], ws[i], y[i], want);
      }
    } else {
      test_fail(__FILE__, __LINE__, "%s: %s", op_text(op), d.msg);
    }
    tensors_free(&in);
    tensors_free(&res);
    shape_free(s);
    cascade_free(c);
    free(text);
  }
}

/* erf, tanh and the GELUs over a fine grid, where the polynomials meet
 * their other branch. */
TEST(ops_smooth_functions_on_a_grid) {
  enum { M = 2001 };
  const char *text = "shape: {I: 2001}\neinsum:\n  declaration: {X: [I], "
                     "A: [I], B: [I], C: [I], D: [I]}\n  expressions:\n"
                     "    - A[i] = erf(X[i])\n    - B[i] = tanh(X[i])\n"
                     "    - C[i] = gelu(X[i])\n    - D[i] = gelu_tanh(X[i])\n";
  Diag d = {0};
  Cascade *c = spec_parse("t.yaml", text, strlen(text), &d);
  Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
  CHECK(s != NULL);
  if (!s) {
    cascade_free(c);
    return;
  }
  Tensors in = {0}, res = {0};
  int64_t shape[1] = {M};
  Array *x = array_new(1, shape);
  for (int i = 0; i < M; i++)
    x->data[i] = (float)(-10 + 0.01 * i);
  tensors_put(&in, "X", x, true);
  ExecOpts eo = {.buffer_bytes = 1 << 20};
  CHECK(exec_run(c, s, &in, &eo, &res, NULL, NULL, &d));
  const char *outs[4] = {"A", "B", "C", "D"};
  Op ops[4] = {OP_ERF, OP_TANH, OP_GELU, OP_GELU_TANH};
  for (int k = 0; k < 4; k++) {
    const Array *y = tensors_get(&res, outs[k]);
    double worst = 0;
    for (int i = 0; y && i < M; i++) {
      double want = libm_op(ops[k], x->data[i], 0, 0);
      double scale = fabs(want) > 1 ? fabs(want) : 1;
      worst = fmax(worst, fabs(y->data[i] - want) / scale);
    }
    if (!y || worst > 1e-6)
      test_fail(__FILE__, __LINE__, "%s: worst difference %g", outs[k], worst);
  }
  tensors_free(&in);
  tensors_free(&res);
  shape_free(s);
  cascade_free(c);
}

/* What the model charges: every op of the table evaluated I times costs
 * I times its COST row (here expanded independently of work.c), and the
 * new ops' figures as docs/architecture.md states them. */
TEST(ops_prices) {
  for (int o = 0; o < OP_COUNT; o++) {
    Op op = (Op)o;
    double want[OPC_COUNT] = {0};
    switch (op) {
#define C(cls, k) want[OPC_##cls] += (k) * (double)N;
#define X(id, text, arity, prec, cost)                                       \
  case OP_##id:                                                             \
    cost break;
      IR_OPS(X)
#undef X
#undef C
    case OP_COUNT:
      break;
    }
    char *text = op_spec(op);
    Diag d = {0};
    Cascade *c = spec_parse("t.yaml", text, strlen(text), &d);
    Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
    if (s) {
      Work w;
      model_work(c, s, c->einsums[0], &w);
      for (int k = 0; k < OPC_COUNT; k++)
        if (w.ops[k] != want[k])
          test_fail(__FILE__, __LINE__, "%s: %s ops %g, expected %g",
                    op_text(op), opclass_name((OpClass)k), w.ops[k], want[k]);
    } else {
      test_fail(__FILE__, __LINE__, "%s: %s", text, d.msg);
    }
    shape_free(s);
    cascade_free(c);
    free(text);
  }
  /* The figures of docs/architecture.md, per evaluation. */
  struct {
    const char *expr;
    double add, mul, div, exp, silu, max;
  } rows[] = {
      {"tanh(X[i])", 1, 2, 0, 0, 1, 0},
      {"erf(X[i])", 6, 7, 1, 1, 0, 0},
      {"gelu(X[i])", 7, 10, 1, 1, 0, 0},
      {"gelu_tanh(X[i])", 3, 8, 0, 0, 1, 0},
      {"abs(X[i])", 1, 0, 0, 0, 0, 0},
      {"where(X[i] < W[i], X[i], -inf)", 0, 0, 0, 0, 0, 2},
  };
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    char text[512];
    snprintf(text, sizeof text,
             "shape: {I: 4}\neinsum:\n  declaration: {X: [I], W: [I], "
             "Y: [I]}\n  expressions:\n    - Y[i] = %s\n",
             rows[r].expr);
    Diag d = {0};
    Cascade *c = spec_parse("t.yaml", text, strlen(text), &d);
    Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
    CHECK(s != NULL);
    if (s) {
      Work w;
      model_work(c, s, c->einsums[0], &w);
      CHECK_NEAR(w.ops[OPC_ADD], 4 * rows[r].add, 0);
      CHECK_NEAR(w.ops[OPC_MUL], 4 * rows[r].mul, 0);
      CHECK_NEAR(w.ops[OPC_DIV], 4 * rows[r].div, 0);
      CHECK_NEAR(w.ops[OPC_EXP], 4 * rows[r].exp, 0);
      CHECK_NEAR(w.ops[OPC_SILU], 4 * rows[r].silu, 0);
      CHECK_NEAR(w.ops[OPC_MAX], 4 * rows[r].max, 0);
    }
    shape_free(s);
    cascade_free(c);
  }
}

/* vm_op over an array (the vector loop's lanes: sixteen with AVX-512,
 * eight with AVX2) gives each value exactly what it gives that value
 * alone (the scalar remainder of the same loop): no lane's arithmetic is
 * fused or reordered. 61 values: whole vectors and a remainder. */
TEST(ops_vector_lanes_equal_one_value) {
  enum { M = 61 };
  float a[M], b[M], c[M], y[M];
  for (int i = 0; i < M; i++) {
    a[i] = (float)(xs[i % N] * (1 + 0.37 * (i / N)));
    b[i] = (float)ws[(i + 3) % N];
    c[i] = (float)third(i % N);
  }
  for (int o = 0; o < OP_COUNT; o++) {
    Op op = (Op)o;
    vm_op(op, y, a, b, c, M);
    for (int i = 0; i < M; i++) {
      float one = vm_op1(op, a[i], b[i], c[i]);
      if (!(one == y[i] || (isnan(one) && isnan(y[i]))))
        test_fail(__FILE__, __LINE__, "%s(%g, %g, %g): %.9g in a vector, "
                  "%.9g alone", op_text(op), a[i], b[i], c[i], y[i], one);
    }
  }
}
