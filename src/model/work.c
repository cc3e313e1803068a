/* work.c — the operations an Einsum performs, by class, and whether it is
 * a matrix operation (docs/model.md §1–2). */
#include "model.h"

#include <math.h>
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

typedef struct Ctx {
  const Cascade *c;
  const Shape *s;
  const Einsum *e;
  Work *w;
} Ctx;

/* ---- masks: a where() whose condition bounds the loops ----
 *
 * where(c, a, b) with c an affine comparison of the Einsum's variables
 * (`j <= i`, `j <= m + T`, `i - j < W`) cuts the iteration space: a
 * mapping bounds its loops by c, so a is computed only at the points
 * inside, b only at those outside, and neither the comparison nor the
 * select costs anything (docs/model.md §1, "Masks"). */

/* Add SCALE x the affine form of X (constants into *K, variables'
 * coefficients into A) to them; false if X is not affine in the
 * variables (a read, a function, a product of two variables). */
static bool affine(const Ctx *x, const Expr *t, double scale, double *a,
                   double *k) {
  switch (t->kind) {
  case EX_NUM:
  case EX_SYM:
    *k += scale * shape_eval(x->s, t);
    return true;
  case EX_VAR:
    a[t->var] += scale;
    return true;
  case EX_READ:
    return false;
  case EX_OP:
    break;
  }
  if (t->op == OP_ADD || t->op == OP_SUB)
    return affine(x, t->a, scale, a, k) &&
           affine(x, t->b, t->op == OP_SUB ? -scale : scale, a, k);
  if (t->op == OP_NEG)
    return affine(x, t->a, -scale, a, k);
  if (t->op == OP_MUL && !expr_varies(t->a))
    return affine(x, t->b, scale * shape_eval(x->s, t->a), a, k);
  if (t->op == OP_MUL && !expr_varies(t->b))
    return affine(x, t->a, scale * shape_eval(x->s, t->b), a, k);
  return false;
}

/* sum_{v=0}^{n-1} max(al + be v, 0), al and be whole numbers. */
static double sum_positive(double al, double be, double n) {
  if (be == 0)
    return al > 0 ? n * al : 0;
  if (be > 0) {
    double v0 = al > 0 ? 0 : floor(-al / be) + 1;
    return v0 >= n ? 0 : (n - v0) * al + be * (n - 1 + v0) * (n - v0) / 2;
  }
  double v1 = al <= 0 ? -1 : fmin(ceil(al / -be) - 1, n - 1);
  return (v1 + 1) * al + be * v1 * (v1 + 1) / 2;
}

/* The share of the points of the variables in A (extents from the shape)
 * where sum_v A[v] v <= B: exact (closed form) when at most two variables
 * occur and one has coefficient +-1; else 1 (charged whole). */
static double share_below(const Ctx *x, const double *a, double b) {
  int vars[IR_MAX_VARS], nv = 0, unit = -1;
  for (int v = 0; v < x->e->nvars; v++)
    if (a[v] != 0) {
      vars[nv++] = v;
      if (fabs(a[v]) == 1)
        unit = v;
    }
  if (nv == 0)
    return b >= 0 ? 1 : 0;
  if (nv > 2 || unit < 0)
    return 1;
  int other = nv == 2 ? (vars[0] == unit ? vars[1] : vars[0]) : -1;
  double ne = (double)x->s->size[x->e->vars[unit].rank];
  double no = other < 0 ? 1 : (double)x->s->size[x->e->vars[other].rank];
  double ao = other < 0 ? 0 : a[other];
  /* For each value o of the other variable, the unit one's values in
   * [0, ne) with +-u <= b - ao o: clamp(al + be o, 0, ne) of them (ao
   * whole; else charged whole). */
  if (ao != floor(ao))
    return 1;
  double al = a[unit] > 0 ? floor(b) + 1 : ne - ceil(-b), be = -ao;
  double in = sum_positive(al, be, no) - sum_positive(al - ne, be, no);
  return in / (ne * no);
}

/* If C is a mask (an affine comparison of variables), the share of the
 * points inside it; else -1. */
static double mask_share(const Ctx *x, const Expr *c) {
  if (!c || c->kind != EX_OP)
    return -1;
  bool flip = c->op == OP_GT || c->op == OP_GE;
  bool strict = c->op == OP_LT || c->op == OP_GT;
  if (!(c->op == OP_LE || c->op == OP_LT || flip))
    return -1;
  double a[IR_MAX_VARS] = {0}, k = 0;
  /* lhs - rhs (<= or <) 0; flipped: rhs - lhs. */
  if (!affine(x, flip ? c->b : c->a, 1, a, &k) ||
      !affine(x, flip ? c->a : c->b, -1, a, &k))
    return -1;
  /* sum a v <= -k, or < -k: the sum is whole, so <= ceil(-k) - 1. */
  return share_below(x, a, strict ? ceil(-k) - 1 : floor(-k));
}

/* Operations of one evaluation of T, times N; constants are free; a
 * mask's branches each over its own points. */
static void count(const Ctx *x, const Expr *t, double n, double *ops) {
  if (!expr_varies(t) || t->kind != EX_OP)
    return;
  double in = t->op == OP_WHERE ? mask_share(x, t->a) : -1;
  if (in >= 0) {
    count(x, t->b, n * in, ops);
    count(x, t->c, n * (1 - in), ops);
    return;
  }
  add_op(ops, t->op, n);
  count(x, t->a, n, ops);
  count(x, t->b, n, ops);
  count(x, t->c, n, ops);
}

/* The share of points inside T's mask when T is where(mask, a, ID), ID
 * the identity of the reduction over it (0 for a sum): the points outside
 * add nothing and are not computed. -1 when T is no such where. */
static double masked_share(const Ctx *x, const Expr *t, double id) {
  if (!expr_is(t, OP_WHERE) || expr_varies(t->c) ||
      shape_eval(x->s, t->c) != id)
    return -1;
  return mask_share(x, t->a);
}

/* The share of a reduction's steps that run: masked_share, 1 if none. */
static double steps_share(const Ctx *x, const Expr *t, double id) {
  double in = masked_share(x, t, id);
  return in >= 0 ? in : 1;
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

/* The share of a product's points that its masks keep: each factor
 * where(mask, a, 0) zeroes the product outside the mask, so the sum runs
 * over the points inside (the shares multiply: exact for one mask) and
 * the factor is A there. */
static double unmask(const Ctx *x, Factors *fs) {
  double share = 1;
  for (int i = 0; i < fs->n; i++) {
    double in = fs->den[i] ? -1 : masked_share(x, fs->f[i], 0);
    if (in >= 0) {
      share *= in;
      fs->f[i] = fs->f[i]->b;
    }
  }
  return share;
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
    count(x, t, pts, ops);
    return;
  }
  const Einsum *e = x->e;
  VarSet red = einsum_reduced_vars(e);
  VarSet term = expr_vars(t) | e->out_vars;
  Factors fs = {0};
  factors_of(t, false, &fs);
  pts *= unmask(x, &fs);
  int inner = 0, inner_reads = 0;
  bool inner_den = false;
  const Access *reads[2] = {0};
  for (int i = 0; i < fs.n; i++) {
    const Expr *f = fs.f[i];
    if (!expr_varies(f))
      continue; /* a constant: free, taken out of the sum */
    if ((expr_vars(f) & red) == 0) {
      count(x, f, out_pts, ops); /* taken out: once per output */
      ops[fs.den[i] ? OPC_DIV : OPC_MUL] += out_pts;
      continue;
    }
    count(x, f, pts, ops);
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

/* `:: max(...)`, min, prod: the right-hand side at every point, and the
 * reduction's step at every point its mask keeps (a masked point holds
 * the reduction's identity: -inf for max, inf for min, 1 for prod). */
static void reduce_explicit(const Ctx *x) {
  Work *w = x->w;
  const Einsum *e = x->e;
  count(x, e->rhs, w->points, w->ops);
  if (!(w->points > w->parallel))
    return;
  switch (e->red) {
  case RED_MAX:
    w->ops[OPC_MAX] += w->points * steps_share(x, e->rhs, -INFINITY);
    break;
  case RED_MIN:
    w->ops[OPC_MAX] += w->points * steps_share(x, e->rhs, INFINITY);
    break;
  case RED_PROD:
    w->ops[OPC_MUL] += w->points * steps_share(x, e->rhs, 1);
    break;
  case RED_SUM:
  case RED_COUNT:
    break;
  }
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
    reduce_explicit(&x);
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
