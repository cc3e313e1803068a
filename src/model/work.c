/* work.c — the operations an Einsum performs, by class. */
#include "model.h"

#include <string.h>

/* Add N evaluations of OP to OPS, by class: ops.h's COST column. */
static void add_op(double *ops, Op op, double n) {
  switch (op) {
#define C(cls, k) ops[OPC_##cls] += (k) * n;
#define X(id, text, arity, prec, cost)                                        \
  case OP_##id:                                                               \
    cost break;
    IR_OPS(X)
#undef X
#undef C
  case OP_COUNT:
    break;
  }
}

/* Operations of one evaluation of X, times N; constants are free. */
static void count(const Expr *x, double n, double *ops) {
  if (!expr_varies(x))
    return;
  if (x->kind == EX_OP) {
    add_op(ops, x->op, n);
    count(x->a, n, ops);
    count(x->b, n, ops);
    count(x->c, n, ops);
  }
}

static double points_of(const Shape *s, const Einsum *e, VarSet vars) {
  double n = 1;
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(vars, v))
      n *= (double)s->size[e->vars[v].rank];
  return n;
}

/* A sum-reduced product: its multiply and add are one MACC. */
static void reduce_term(const Expr *t, double pts, double out_pts,
                        double *ops) {
  if (pts <= out_pts) {
    count(t, pts, ops);
    return;
  }
  if (expr_is(t, OP_MUL) && expr_varies(t->a) && expr_varies(t->b)) {
    count(t->a, pts, ops);
    count(t->b, pts, ops);
    ops[OPC_MACC] += pts;
    return;
  }
  count(t, pts, ops);
  ops[OPC_ADD] += pts;
}

/* The additive terms of the right-hand side: Einstein's convention sums
 * each over its own variables. */
static void count_terms(const Expr *x, const Shape *s, const Einsum *e,
                        double out_pts, double *ops, int *nterms) {
  if (expr_is(x, OP_ADD) || expr_is(x, OP_SUB)) {
    count_terms(x->a, s, e, out_pts, ops, nterms);
    count_terms(x->b, s, e, out_pts, ops, nterms);
    return;
  }
  (*nterms)++;
  if (!expr_varies(x))
    return; /* a constant term costs its addition only */
  double pts = points_of(s, e, e->out_vars | expr_vars(x));
  reduce_term(x, pts, out_pts, ops);
}

void model_work(const Cascade *c, const Shape *s, const Einsum *e, Work *w) {
  memset(w, 0, sizeof *w);
  w->points = shape_einsum_points(s, e);
  w->parallel = points_of(s, e, e->out_vars);
  w->gemm = einsum_is_gemm(c, e);
  w->linear = einsum_is_linear(c, e);
  if (e->explicit_red) {
    count(e->rhs, w->points, w->ops);
    if (w->points > w->parallel) {
      switch (e->red) {
      case RED_SUM:
        w->ops[OPC_ADD] += w->points;
        break;
      case RED_MAX:
      case RED_MIN:
        w->ops[OPC_MAX] += w->points;
        break;
      case RED_PROD:
        w->ops[OPC_MUL] += w->points;
        break;
      case RED_COUNT:
        break;
      }
    }
  } else {
    int nterms = 0;
    count_terms(e->rhs, s, e, w->parallel, w->ops, &nterms);
    /* The top-level + and - combine the terms: one add per extra term
     * per output element. */
    if (nterms > 1)
      w->ops[OPC_ADD] += (nterms - 1) * w->parallel;
  }
  for (int k = 0; k < OPC_COUNT; k++)
    w->total += w->ops[k];
}
