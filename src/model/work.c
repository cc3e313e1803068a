/* work.c — the operations an Einsum performs, by class, and whether it is
 * a matrix operation (docs/model.md §1–2). */
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

/* A product's factors: a * b / c -> numerators a, b; denominator c. */
enum { MAX_FACTORS = 16 };
typedef struct Factors {
  int n;
  const Expr *f[MAX_FACTORS];
  bool den[MAX_FACTORS];
} Factors;

static void factors_of(const Expr *x, bool den, Factors *fs) {
  if ((expr_is(x, OP_MUL) || expr_is(x, OP_DIV)) && fs->n < MAX_FACTORS - 1) {
    factors_of(x->a, den, fs);
    factors_of(x->b, expr_is(x, OP_DIV) ? !den : den, fs);
    return;
  }
  fs->f[fs->n] = x;
  fs->den[fs->n++] = den;
}

/* Is read A reused across the term's iteration space TERM: does it lack
 * one of the term's variables (a broadcast), or fold a window onto one
 * coordinate (TTX[i+f])? */
static bool reused(const Cascade *c, const Shape *s, const Einsum *e,
                   const Access *a, VarSet term) {
  if ((term & ~access_vars(a)) != 0)
    return true;
  for (int k = 0; k < a->n; k++)
    if (!index_injective(c, s, e, &a->idx[k]))
      return true;
  return false;
}

typedef struct Ctx {
  const Cascade *c;
  const Shape *s;
  const Einsum *e;
  Work *w;
} Ctx;

/* One additive term summed over PTS points (its variables and the
 * output's) onto OUT_PTS outputs. Factors that do not depend on the
 * reduced variables are taken out of the sum (sum_k a_k c = c sum_k a_k):
 * applied once per output, so a constant or a per-output normalizer never
 * multiplies the contraction's count. The factors that do are multiplied
 * per point; with two or more, the last multiply and the sum's add are one
 * MACC. A product of exactly two reads that are both reused is a matrix
 * operation. */
static void reduce_term(const Ctx *x, const Expr *t, double pts,
                        double out_pts) {
  double *ops = x->w->ops;
  if (pts <= out_pts) {
    count(t, pts, ops);
    return;
  }
  const Einsum *e = x->e;
  VarSet red = einsum_reduced_vars(e);
  VarSet term = expr_vars(t) | e->out_vars;
  Factors fs = {0};
  factors_of(t, false, &fs);
  int inner = 0, inner_reads = 0;
  bool inner_den = false;
  const Access *reads[2] = {0};
  for (int i = 0; i < fs.n; i++) {
    const Expr *f = fs.f[i];
    if (!expr_varies(f))
      continue; /* a constant: free, taken out of the sum */
    if ((expr_vars(f) & red) == 0) {
      count(f, out_pts, ops); /* taken out: once per output */
      ops[fs.den[i] ? OPC_DIV : OPC_MUL] += out_pts;
      continue;
    }
    count(f, pts, ops);
    if (fs.den[i]) {
      inner_den = true;
      ops[OPC_DIV] += pts;
      continue;
    }
    if (f->kind == EX_READ && inner_reads < 2)
      reads[inner_reads++] = f->acc;
    inner++;
  }
  if (inner >= 2) {
    ops[OPC_MUL] += (inner - 2) * pts;
    ops[OPC_MACC] += pts;
  } else {
    ops[OPC_ADD] += pts; /* the sum's step */
  }
  if (inner == 2 && inner_reads == 2 && !inner_den &&
      reused(x->c, x->s, e, reads[0], term) &&
      reused(x->c, x->s, e, reads[1], term))
    x->w->matrix = true;
}

/* The additive terms of the right-hand side: Einstein's convention sums
 * each over its own variables. */
static void count_terms(const Ctx *x, const Expr *t, double out_pts,
                        int *nterms) {
  if (expr_is(t, OP_ADD) || expr_is(t, OP_SUB)) {
    count_terms(x, t->a, out_pts, nterms);
    count_terms(x, t->b, out_pts, nterms);
    return;
  }
  (*nterms)++;
  if (!expr_varies(t))
    return; /* a constant term costs its addition only */
  double pts = points_of(x->s, x->e, x->e->out_vars | expr_vars(t));
  reduce_term(x, t, pts, out_pts);
}

void model_work(const Cascade *c, const Shape *s, const Einsum *e, Work *w) {
  memset(w, 0, sizeof *w);
  w->points = shape_einsum_points(s, e);
  w->parallel = points_of(s, e, e->out_vars);
  w->reduced = w->parallel > 0 ? w->points / w->parallel : 1;
  w->gemm = einsum_is_gemm(c, e);
  Ctx x = {c, s, e, w};
  if (e->explicit_red && e->red == RED_SUM) {
    /* The whole right-hand side is summed over every reduced variable. */
    reduce_term(&x, e->rhs, w->points, w->parallel);
  } else if (e->explicit_red) {
    count(e->rhs, w->points, w->ops);
    if (w->points > w->parallel) {
      switch (e->red) {
      case RED_MAX:
      case RED_MIN:
        w->ops[OPC_MAX] += w->points;
        break;
      case RED_PROD:
        w->ops[OPC_MUL] += w->points;
        break;
      case RED_SUM:
      case RED_COUNT:
        break;
      }
    }
  } else {
    int nterms = 0;
    count_terms(&x, e->rhs, w->parallel, &nterms);
    /* The top-level + and - combine the terms: one add per extra term
     * per output element. */
    if (nterms > 1)
      w->ops[OPC_ADD] += (nterms - 1) * w->parallel;
  }
  for (int k = 0; k < OPC_COUNT; k++)
    w->total += w->ops[k];
}
