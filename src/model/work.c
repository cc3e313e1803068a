/* work.c — the operations an Einsum performs, by class. */
#include "model.h"

#include <string.h>

static bool has_read(const Expr *x) {
  if (!x)
    return false;
  return x->kind == EX_READ || has_read(x->a) || has_read(x->b);
}

static void add_unary(double *ops, UnOp op, double n) {
  switch (op) {
  case UN_NEG:
    ops[OPC_ADD] += n;
    break;
  case UN_EXP:
    ops[OPC_EXP] += n;
    break;
  case UN_LOG:
    ops[OPC_LOG] += n;
    break;
  case UN_SQRT:
  case UN_RSQRT:
    ops[OPC_SQRT] += n;
    break;
  case UN_SIGMOID:
  case UN_SILU:
    ops[OPC_SILU] += n;
    break;
  case UN_SOFTPLUS: /* log(1 + exp(v)) */
    ops[OPC_EXP] += n;
    ops[OPC_ADD] += n;
    ops[OPC_LOG] += n;
    break;
  case UN_RECIP:
    ops[OPC_DIV] += n;
    break;
  case UN_COUNT:
    break;
  }
}

static OpClass binop_class(BinOp op) {
  switch (op) {
  case BI_ADD:
  case BI_SUB:
    return OPC_ADD;
  case BI_MUL:
    return OPC_MUL;
  case BI_DIV:
    return OPC_DIV;
  case BI_MAX:
  case BI_MIN:
  case BI_COUNT:
    break;
  }
  return OPC_MAX;
}

/* Operations of one evaluation of X, times N; constants are free. */
static void count(const Expr *x, double n, double *ops) {
  if (!has_read(x))
    return;
  if (x->kind == EX_UNARY) {
    add_unary(ops, x->un, n);
    count(x->a, n, ops);
  } else if (x->kind == EX_BINARY) {
    ops[binop_class(x->bin)] += n;
    count(x->a, n, ops);
    count(x->b, n, ops);
  }
}

static VarSet expr_vars(const Expr *x) {
  if (!x)
    return 0;
  if (x->kind == EX_READ)
    return access_vars(x->acc);
  return expr_vars(x->a) | expr_vars(x->b);
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
  if (t->kind == EX_BINARY && t->bin == BI_MUL && has_read(t->a) &&
      has_read(t->b)) {
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
  if (x->kind == EX_BINARY && (x->bin == BI_ADD || x->bin == BI_SUB)) {
    count_terms(x->a, s, e, out_pts, ops, nterms);
    count_terms(x->b, s, e, out_pts, ops, nterms);
    return;
  }
  (*nterms)++;
  if (!has_read(x))
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
