/* scan.c — a linear recurrence and its read-out as one kernel.
 *
 * A selective state-space layer (Mamba-1 and Mamba-2, but nothing here
 * knows either) writes its state update as four elementwise Einsums and a
 * contraction:
 *
 *   U[x]    = F[x] * G[x]            (optional: the input term)
 *   T[x]    = A[x] * S[x, i-1]       (the decay of the previous state)
 *   S[x]    = U[x] + T[x]            (the state)
 *   Y[x\n]  = C[x] * S[x]  :: sum(n) (optional: the read-out, over the
 *                                     state's innermost rank)
 *
 * Run Einsum by Einsum, every step of the recurrence is four passes over
 * the state, each through the vector machine, with U and T materialized.
 * Recognized (like a GEMM), they run as one pass per step: each row of the
 * state advances through the steps with the read-out taken as it is made;
 * U and T are written only where something outside the pattern reads them.
 * Every product and sum is rounded as the vector machine rounds it (fp32
 * products, the sums of two terms in fp32, the read-out accumulated in
 * double), so the results are the same numbers. */
#include "run.h"

#include <stdlib.h>
#include <string.h>

/* ---- recognizing the pattern ---- */

static bool elementwise(const Einsum *e) {
  return !e->explicit_red && (einsum_all_vars(e) & ~e->out_vars) == 0;
}

static bool plain_access(const Access *a) {
  for (int k = 0; k < a->n; k++)
    if (!a->idx[k].plain)
      return false;
  return true;
}

/* Does A read, at every dimension, E's output variable of that dimension,
 * except (LAG_DIM >= 0) one step back along LAG_DIM? */
static bool same_coords(const Einsum *e, const Access *a, int lag_dim) {
  if (a->n != e->out.n)
    return false;
  for (int k = 0; k < a->n; k++) {
    const Index *ix = &a->idx[k];
    bool lagged = k == lag_dim;
    if (ix->nterms != 1 || ix->var[0] != e->out.idx[k].var[0] ||
        (lagged ? ix->lag != 1 || ix->coef[0] : !ix->plain))
      return false;
  }
  return true;
}

/* The two reads of a binary OP of reads, or false. */
static bool two_reads(const Expr *x, Op op, const Access **a,
                      const Access **b) {
  if (!expr_is(x, op) || x->a->kind != EX_READ || x->b->kind != EX_READ)
    return false;
  *a = x->a->acc;
  *b = x->b->acc;
  return true;
}

static int lag_dim(const Access *a) {
  for (int k = 0; k < a->n; k++)
    if (a->idx[k].lag > 0)
      return k;
  return -1;
}

/* T = A * S[i-1] and S = U + T: fills the Scan's T, S, U and A. */
static bool match_core(const Cascade *c, int et, int es, Scan *sc) {
  const Einsum *T = c->einsums[et], *S = c->einsums[es];
  const Access *x, *y, *u, *t;
  if (!elementwise(T) || !elementwise(S) ||
      !two_reads(T->rhs, OP_MUL, &x, &y) ||
      !two_reads(S->rhs, OP_ADD, &u, &t))
    return false;
  if (x->tensor == S->out.tensor) { /* S[i-1] * A */
    const Access *s = x;
    x = y;
    y = s;
  }
  if (u->tensor == T->out.tensor) {
    const Access *s = u;
    u = t;
    t = s;
  }
  int ld = lag_dim(y);
  if (y->tensor != S->out.tensor || t->tensor != T->out.tensor || ld < 0 ||
      ld == S->out.n - 1 || T->out.n != S->out.n ||
      !same_coords(T, y, ld) || !same_coords(S, t, -1) ||
      !same_coords(S, u, -1) || !plain_access(x) ||
      x->tensor == S->out.tensor)
    return false;
  sc->mul = et;
  sc->add = es;
  sc->decay = x;
  sc->lagged = y;
  sc->input = u;
  sc->lag_dim = ld;
  return true;
}

/* U = F * G, producing the input U of S. */
static bool match_input(const Cascade *c, int ep, Scan *sc) {
  const Einsum *P = c->einsums[ep];
  const Access *f, *g;
  if (!elementwise(P) || P->out.tensor != sc->input->tensor ||
      !two_reads(P->rhs, OP_MUL, &f, &g) || !plain_access(f) ||
      !plain_access(g))
    return false;
  sc->prod = ep;
  sc->f = f;
  sc->g = g;
  return true;
}

/* Y = C * S reduced over S's innermost variable. */
static bool match_readout(const Cascade *c, int ey, Scan *sc) {
  const Einsum *Y = c->einsums[ey], *S = c->einsums[sc->add];
  const Access *a, *b;
  if ((Y->explicit_red && Y->red != RED_SUM) ||
      !two_reads(Y->rhs, OP_MUL, &a, &b))
    return false;
  if (a->tensor == S->out.tensor) {
    const Access *s = a;
    a = b;
    b = s;
  }
  if (b->tensor != S->out.tensor || a->tensor == S->out.tensor ||
      !plain_access(a) || !plain_access(b) || !plain_access(&Y->out))
    return false;
  VarSet red = einsum_all_vars(Y) & ~Y->out_vars;
  if (red != VARSET_BIT(b->idx[b->n - 1].var[0]))
    return false;
  for (int k = 0; k + 1 < b->n; k++)
    if (!VARSET_HAS(Y->out_vars, b->idx[k].var[0]))
      return false;
  sc->out = ey;
  sc->coef = a;
  sc->state = b;
  return true;
}

int scan_match(const Cascade *c, const int *order, const int *scc, int n,
               Scan *sc) {
  memset(sc, 0, sizeof *sc);
  sc->prod = sc->out = sc->dprod = sc->fprod = -1;
  int at = 0;
  /* The input term's product comes first, when it is there. */
  bool lead = n >= 3 && scc[order[0]] < 0;
  if (lead)
    at = 1;
  if (n < at + 2 || scc[order[at]] < 0 || scc[order[at]] != scc[order[at + 1]] ||
      (at + 2 < n && scc[order[at + 2]] == scc[order[at]]))
    return 0;
  if (!match_core(c, order[at], order[at + 1], sc) &&
      !match_core(c, order[at + 1], order[at], sc))
    return 0;
  if (lead && !match_input(c, order[0], sc))
    return 0;
  int len = at + 2;
  if (len < n && match_readout(c, order[len], sc))
    len++;
  sc->npos = len;
  return len;
}

/* E = [exp](P * Q), every access plain: P and Q in *P, *Q, and whether
 * the exp is there in *EXPD; false for any other form. */
static bool product_of_reads(const Einsum *e, const Access **p,
                             const Access **q, bool *expd) {
  const Expr *x = e->rhs;
  *expd = expr_is(x, OP_EXP);
  if (*expd)
    x = x->a;
  return elementwise(e) && !e->explicit_red && plain_access(&e->out) &&
         two_reads(x, OP_MUL, p, q) && plain_access(*p) && plain_access(*q);
}

static bool made_by_pattern(const Cascade *c, const Scan *sc, int t) {
  const int e[] = {sc->prod, sc->mul, sc->add, sc->out, sc->dprod, sc->fprod};
  for (size_t k = 0; k < sizeof e / sizeof e[0]; k++)
    if (e[k] >= 0 && c->einsums[e[k]]->out.tensor == t)
      return true;
  return false;
}

/* Einsum E as the decay's producer (exp of a product) or the input
 * factor's (a product), filling SC's; false otherwise. */
static bool match_producer(const Cascade *c, int e, Scan *sc) {
  const Einsum *P = c->einsums[e];
  const Access *p, *q;
  bool expd;
  if (!product_of_reads(P, &p, &q, &expd))
    return false;
  int t = P->out.tensor;
  const Einsum *S = c->einsums[sc->add], *T = c->einsums[sc->mul],
               *U = c->einsums[sc->prod];
  /* Reading nothing the pattern makes (its values are there before the
   * kernel runs). */
  if (made_by_pattern(c, sc, p->tensor) || made_by_pattern(c, sc, q->tensor))
    return false;
  /* The decay laid out as the state and read at the reader's
   * coordinates, so that a row of it is a row of the state. */
  if (expd && sc->dprod < 0 && t == sc->decay->tensor &&
      P->out.n == S->out.n && same_coords(T, sc->decay, -1)) {
    sc->dprod = e;
    sc->dp = p;
    sc->dq = q;
    return true;
  }
  /* The factor read plainly by the input term, as the state's
   * coordinates or a part of them (Mamba-2's Bbar, one row for the
   * channels of a head): producer_dims places it. */
  const Access *f = t == sc->f->tensor ? sc->f : sc->g;
  if (!expd && sc->fprod < 0 && t != sc->decay->tensor &&
      f->tensor == t && f->n == P->out.n && f->n <= U->out.n &&
      (P->out.n < S->out.n || same_coords(U, f, -1))) {
    sc->fprod = e;
    sc->fp = p;
    sc->fq = q;
    return true;
  }
  return false;
}

/* Does the decay's read vary along the state's innermost rank? */
static bool decay_varies_inner(const Cascade *c, const Scan *sc) {
  const Einsum *T = c->einsums[sc->mul];
  int inner = T->out.idx[T->out.n - 1].var[0];
  for (int k = 0; k < sc->decay->n; k++)
    if (sc->decay->idx[k].var[0] == inner)
      return true;
  return false;
}

int scan_match_folded(const Cascade *c, const int *order, const int *scc,
                      int n, Scan *sc) {
  if (n >= 5 && scc[order[0]] < 0 && scc[order[1]] < 0) {
    int len = scan_match(c, order + 2, scc, n - 2, sc);
    if (len > 0 && sc->prod >= 0 && match_producer(c, order[0], sc) &&
        match_producer(c, order[1], sc)) {
      sc->npos = len + 2;
      return sc->npos;
    }
  }
  /* The factor's producer alone, before a decay constant along the row
   * (Mamba-2's, one per head, which the AVX-512 paths read as it is). */
  if (n < 4 || scc[order[0]] >= 0)
    return 0;
  int len = scan_match(c, order + 1, scc, n - 1, sc);
  if (len == 0 || sc->prod < 0 || decay_varies_inner(c, sc) ||
      !match_producer(c, order[0], sc) || sc->fprod < 0)
    return 0;
  sc->npos = len + 1;
  return sc->npos;
}

/* ---- running it ---- */

/* One operand, addressed by the state's dimensions: element
 * base + sum_k lin[k] * x_k of DATA. */
typedef struct Opnd {
  float *data;
  const uint16_t *half; /* a folded producer's 16-bit read: DATA NULL */
  DType dtype;
  int64_t lin[IR_MAX_RANKS];
  int64_t base;
} Opnd;

typedef struct Kern {
  int nd, ld;  /* the state's dimensions; the recurrence's */
  Region reg;  /* over the state's dimensions */
  Opnd s, lag, t, u, a, f, g, in, c, y;
  /* Folded producers (Scan.dprod, fprod): the decay exp(DP * DQ) and the
   * factor F = FP * FQ computed a row at a time (A and F then unbound). */
  Opnd dp, dq, fp, fq;
  bool fold;
  /* The factor's producer folded alone (Scan.fprod without dprod: F =
   * FP * FQ, Mamba-2's Bbar): a head's steps at once by factor_steps,
   * else a step of a group's rows at a time by fold_rows. */
  bool factor;
  bool write_t, write_u, prod, readout;
  bool s_all; /* S written at every step, not only the last */
  int rows[IR_MAX_RANKS], nrows; /* the dimensions a row is one point of */
  int64_t nrow;                  /* rows in all */
} Kern;

/* The state dimension each of E's variables is (-1: none), through ACC,
 * which reads or writes the state's shape at E's coordinates. */
static void dims_of(const Einsum *e, const Access *acc, int *dim) {
  for (int v = 0; v < e->nvars; v++)
    dim[v] = -1;
  for (int k = 0; k < acc->n; k++)
    dim[acc->idx[k].var[0]] = k;
}

/* Address ACC (plain, or one step back; DIM: its Einsum's variables as state
 * dimensions) through its tensor's view; false when the view lacks values,
 * is not fp32, or does not hold every element the region reads. */
static bool operand_in(const View *v, const Access *acc, const int *dim,
                       const Region *reg, Opnd *o) {
  memset(o, 0, sizeof *o);
  o->data = v->data;
  o->half = v->half;
  o->dtype = v->dtype;
  for (int k = 0; k < acc->n; k++) {
    const Index *ix = &acc->idx[k];
    int d = dim[ix->var[0]];
    if (d < 0)
      return false;
    int64_t off = -(int64_t)ix->lag;
    if (reg->lo[d] + off < v->origin[k] ||
        reg->hi[d] + off > v->origin[k] + v->extent[k])
      return false;
    o->lin[d] += v->stride[k];
    o->base += (off - v->origin[k]) * v->stride[k];
  }
  return true;
}

static bool operand(const Run *r, const Access *acc, const int *dim,
                    const Region *reg, Opnd *o) {
  const View *v = &r->views[acc->tensor];
  return v->data && v->dtype == DT_F32 && operand_in(v, acc, dim, reg, o);
}

/* As operand, also for a 16-bit input (a folded producer's weight). */
static bool operand_any(const Run *r, const Access *acc, const int *dim,
                        const Region *reg, Opnd *o) {
  const View *v = &r->views[acc->tensor];
  return (v->data || v->half) && operand_in(v, acc, dim, reg, o);
}

/* The region of Einsum E (over its variables) in state dimensions; false
 * when it differs from REG where both are given. */
static bool region_agrees(const Einsum *e, const int *dim, const Region *er,
                          Region *reg, bool set) {
  for (int v = 0; v < e->nvars; v++) {
    int d = dim[v];
    if (d < 0)
      return false;
    if (set) {
      reg->lo[d] = er->lo[v];
      reg->hi[d] = er->hi[v];
    } else if (reg->lo[d] != er->lo[v] || reg->hi[d] != er->hi[v]) {
      return false;
    }
  }
  return true;
}

/* Along the innermost dimension every operand is contiguous or constant,
 * and the written ones contiguous. */
static bool inner_ok(const Kern *k) {
  int in = k->nd - 1;
  const Opnd *rd[] = {&k->lag, &k->a, k->prod ? &k->f : &k->in,
                      k->prod ? &k->g : &k->in, k->readout ? &k->c : &k->a};
  for (size_t i = 0; i < sizeof rd / sizeof rd[0]; i++)
    if (rd[i]->lin[in] != 0 && rd[i]->lin[in] != 1)
      return false;
  return k->s.lin[in] == 1 && (!k->write_t || k->t.lin[in] == 1) &&
         (!k->write_u || k->u.lin[in] == 1) &&
         (!k->readout || k->y.lin[in] == 0);
}

/* The region of Einsum E among the pattern's positions. */
static const Region *region_of(const Scan *sc, const int *order,
                               const Region *base, int e) {
  for (int p = 0; p < sc->npos; p++)
    if (order[p] == e)
      return &base[p];
  return NULL;
}

/* The state dimension each variable of the folded producer E is, through
 * its reader in the pattern (the decay's, T; the factor's, U), whose
 * output is laid out as the state: dimension k of E's output is read
 * there with the variable of some state dimension. */
static void producer_dims(const Cascade *c, const Scan *sc, int e, int *dim) {
  const Einsum *E = c->einsums[e];
  int t = E->out.tensor;
  bool decay = e == sc->dprod;
  const Einsum *R = c->einsums[decay ? sc->mul : sc->prod];
  const Access *a = decay ? sc->decay : sc->f->tensor == t ? sc->f : sc->g;
  int rdim[IR_MAX_VARS];
  dims_of(R, &R->out, rdim);
  for (int v = 0; v < E->nvars; v++)
    dim[v] = -1;
  for (int k = 0; k < E->out.n; k++)
    dim[E->out.idx[k].var[0]] = rdim[a->idx[k].var[0]];
}

/* The product P * Q of Einsum E (a folded producer) over the state's
 * region: P and Q bound, the 16-bit one (if any) as Q, contiguous along
 * the innermost dimension; false where they do not suit. */
static bool bind_product(const Run *r, const Scan *sc, const int *order,
                         const Region *base, int e, const Access *p,
                         const Access *q, Kern *k, Opnd *op, Opnd *oq) {
  const Einsum *E = r->c->einsums[e];
  int dim[IR_MAX_VARS], in = k->nd - 1;
  producer_dims(r->c, sc, e, dim);
  if (!region_agrees(E, dim, region_of(sc, order, base, e), &k->reg, false) ||
      !operand_any(r, p, dim, &k->reg, op) ||
      !operand_any(r, q, dim, &k->reg, oq))
    return false;
  /* The 16-bit one as Q; of two fp32 ones, the one constant along the
   * row as P (m1_layout; a product of two fp32 values is the same
   * either way round). */
  if (op->dtype != DT_F32 ||
      (oq->dtype == DT_F32 && op->lin[in] != 0 && oq->lin[in] == 0)) {
    Opnd s = *op;
    *op = *oq;
    *oq = s;
  }
  return op->dtype == DT_F32 && (op->lin[in] == 0 || op->lin[in] == 1) &&
         (oq->dtype == DT_F32 ? oq->lin[in] == 0 || oq->lin[in] == 1
                              : oq->lin[in] == 1);
}

/* The folded producers: the decay's (which must vary along the
 * innermost dimension, Mamba-1's; a constant one, Mamba-2's per head, is
 * better materialized for the AVX-512 paths) and the factor's. */
static bool bind_folded(const Run *r, const Scan *sc, const int *order,
                        const Region *base, Kern *k) {
  int in = k->nd - 1;
  return bind_product(r, sc, order, base, sc->dprod, sc->dp, sc->dq, k,
                      &k->dp, &k->dq) &&
         (k->dp.lin[in] != 0 || k->dq.lin[in] != 0) &&
         bind_product(r, sc, order, base, sc->fprod, sc->fp, sc->fq, k,
                      &k->fp, &k->fq);
}

/* The input term's factors: folded, the produced one is F (a row buffer)
 * and the other G; else the contiguous one first. */
static bool bind_factors(const Run *r, const Scan *sc, const int *order,
                         const Region *base, Kern *k) {
  const Einsum *P = r->c->einsums[sc->prod];
  int dim[IR_MAX_VARS];
  dims_of(P, &P->out, dim);
  if (!region_agrees(P, dim, region_of(sc, order, base, sc->prod), &k->reg,
                     false))
    return false;
  if (k->fold || k->factor) {
    int made = r->c->einsums[sc->fprod]->out.tensor;
    return operand(r, sc->f->tensor == made ? sc->g : sc->f, dim, &k->reg,
                   &k->g);
  }
  if (!operand(r, sc->f, dim, &k->reg, &k->f) ||
      !operand(r, sc->g, dim, &k->reg, &k->g))
    return false;
  if (k->f.lin[k->nd - 1] == 0) { /* the contiguous factor first */
    Opnd s = k->f;
    k->f = k->g;
    k->g = s;
  }
  return true;
}

/* Address every operand for the pattern's regions (BASE, by position in
 * ORDER); false where the kernel does not apply to their views. */
static bool kern_bind(const Run *r, const Scan *sc, const int *order,
                      const Region *base, Kern *k) {
  const Cascade *c = r->c;
  const Einsum *S = c->einsums[sc->add], *T = c->einsums[sc->mul];
  int dim[IR_MAX_VARS];
  k->nd = S->out.n;
  k->ld = sc->lag_dim;
  dims_of(S, &S->out, dim);
  region_agrees(S, dim, region_of(sc, order, base, sc->add), &k->reg, true);
  bool ok = operand(r, &S->out, dim, &k->reg, &k->s) &&
            (k->prod || operand(r, sc->input, dim, &k->reg, &k->in)) &&
            (!k->write_t || operand(r, &T->out, dim, &k->reg, &k->t));
  dims_of(T, &T->out, dim);
  ok = ok &&
       region_agrees(T, dim, region_of(sc, order, base, sc->mul), &k->reg,
                     false) &&
       operand(r, sc->lagged, dim, &k->reg, &k->lag) &&
       (k->fold ? bind_folded(r, sc, order, base, k)
                : operand(r, sc->decay, dim, &k->reg, &k->a)) &&
       (!k->factor || bind_product(r, sc, order, base, sc->fprod, sc->fp,
                                   sc->fq, k, &k->fp, &k->fq));
  if (ok && k->prod)
    ok = bind_factors(r, sc, order, base, k);
  if (ok && k->readout) {
    const Einsum *Y = c->einsums[sc->out];
    dims_of(Y, sc->state, dim);
    ok = region_agrees(Y, dim, region_of(sc, order, base, sc->out), &k->reg,
                       false) &&
         operand(r, sc->coef, dim, &k->reg, &k->c) &&
         operand(r, &Y->out, dim, &k->reg, &k->y);
  }
  return ok && inner_ok(k);
}

static int64_t offset(const Opnd *o, const int64_t *x, int nd) {
  int64_t off = o->base;
  for (int d = 0; d < nd; d++)
    off += o->lin[d] * x[d];
  return off;
}

/* Where one step of one row reads and writes; each moves by its operand's
 * stride along the recurrence from a step to the next. */
typedef struct Ptrs {
  float *s, *t, *u, *y;
  const float *a, *f, *g, *c;
  int64_t dp, dq, fp, fq; /* the folded producers' reads: offsets */
} Ptrs;

static void ptrs_at(const Kern *k, const int64_t *x, Ptrs *p) {
  int nd = k->nd;
  p->s = k->s.data + offset(&k->s, x, nd);
  /* Folded, A and F are row buffers, set per row (fold_step, run_rows). */
  p->a = k->fold ? NULL : k->a.data + offset(&k->a, x, nd);
  p->f = k->fold || k->factor ? NULL
         : k->prod            ? k->f.data + offset(&k->f, x, nd)
                              : k->in.data + offset(&k->in, x, nd);
  if (k->fold) {
    p->dp = offset(&k->dp, x, nd);
    p->dq = offset(&k->dq, x, nd);
  }
  if (k->fold || k->factor) {
    p->fp = offset(&k->fp, x, nd);
    p->fq = offset(&k->fq, x, nd);
  }
  p->g = k->prod ? k->g.data + offset(&k->g, x, nd) : NULL;
  p->c = k->readout ? k->c.data + offset(&k->c, x, nd) : NULL;
  p->y = k->readout ? k->y.data + offset(&k->y, x, nd) : NULL;
  p->t = k->write_t ? k->t.data + offset(&k->t, x, nd) : NULL;
  p->u = k->write_u ? k->u.data + offset(&k->u, x, nd) : NULL;
}

#define INLINE static inline __attribute__((always_inline))

/* Move every pointer one step along state dimension D. */
INLINE void ptrs_move(const Kern *k, Ptrs *p, int d) {
  p->s += k->s.lin[d];
  if (k->fold) {
    p->dp += k->dp.lin[d];
    p->dq += k->dq.lin[d];
  } else {
    p->a += k->a.lin[d];
  }
  if (k->fold || k->factor) {
    p->fp += k->fp.lin[d];
    p->fq += k->fq.lin[d];
  } else {
    p->f += (k->prod ? k->f : k->in).lin[d];
  }
  /* The absent operands stay NULL: no offset is applied to them. */
  if (k->prod)
    p->g += k->g.lin[d];
  if (k->readout) {
    p->c += k->c.lin[d];
    p->y += k->y.lin[d];
  }
  if (k->write_t)
    p->t += k->t.lin[d];
  if (k->write_u)
    p->u += k->u.lin[d];
}

static void ptrs_step(const Kern *k, Ptrs *p) { ptrs_move(k, p, k->ld); }

/* One step of one row: N elements along the innermost dimension, the
 * state from HP into H (which may be HP: a state advanced in place).
 * SA, SF, SG, SC: whether the decay, the factors
 * (or the input) and C move along it (1) or stay (0). The compiler
 * specializes the calls below. */
INLINE double step_row(const Ptrs *p, int64_t n, float *h, const float *hp,
                       int sa, int sf, int sg, int sc) {
  const float *restrict a = p->a, *restrict f = p->f, *restrict g = p->g,
                        *restrict c = p->c;
  float *t = p->t, *u = p->u;
  if (t || u) /* the terms kept too */
    for (int64_t m = 0; m < n; m++) {
      float in = g ? f[m * sf] * g[m * sg] : f[m * sf];
      float dec = a[m * sa] * hp[m];
      h[m] = in + dec;
      if (t)
        t[m] = dec;
      if (u)
        u[m] = in;
    }
  else if (g)
    for (int64_t m = 0; m < n; m++)
      h[m] = f[m * sf] * g[m * sg] + a[m * sa] * hp[m];
  else
    for (int64_t m = 0; m < n; m++)
      h[m] = f[m * sf] + a[m * sa] * hp[m];
  if (!c)
    return 0;
  /* Eight partial sums in double, so that the loop vectorizes. */
  double q[8] = {0};
  int64_t m = 0;
  for (; m + 8 <= n; m += 8)
    for (int j = 0; j < 8; j++)
      q[j] += (double)(c[(m + j) * sc] * h[m + j]);
  for (; m < n; m++)
    q[0] += (double)(c[m * sc] * h[m]);
  return ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
}

/* Rows run ROW_GROUP at a time, step by step: neighbouring rows share
 * the operands that do not vary along them (Mamba-2's B and C for every
 * channel of a head, Mamba-1's for every channel), read once from the
 * outer caches per step for the group instead of once per row. */
enum { ROW_GROUP = 8 };

/* Row OFF of O (N elements, stride S along them) into OUT as fp32. */
static void read_row(const Opnd *o, int64_t off, int64_t s, int64_t n,
                     float *out) {
  if (o->half) { /* contiguous (bind_product) */
    kernel_widen(o->dtype, o->half + off, out, n);
    return;
  }
  for (int64_t m = 0; m < n; m++)
    out[m] = o->data[off + m * s];
}

/* OUT *= P's row at PO (stride SP: 0 or 1, bind_product); one fp32
 * multiplication each, as the vector machine rounds the producer's
 * product. */
static void times_row(const float *p, int64_t sp, int64_t n, float *out) {
  if (sp == 0)
    for (int64_t m = 0; m < n; m++)
      out[m] = p[0] * out[m];
  else
    for (int64_t m = 0; m < n; m++)
      out[m] = p[m] * out[m];
}

/* OUT[j * N + m] = P * Q at row j of G (offsets PO[j], QO[j]): Q's rows
 * read at once where they lie one after another. */
static void product_rows(const Opnd *p, const int64_t *po, const Opnd *q,
                         const int64_t *qo, int in, int g, int64_t n,
                         float *out) {
  bool whole = q->lin[in] == 1;
  for (int j = 1; whole && j < g; j++)
    whole = qo[j] == qo[0] + j * n;
  if (whole)
    read_row(q, qo[0], 1, g * n, out);
  for (int j = 0; j < g; j++) {
    if (!whole)
      read_row(q, qo[j], q->lin[in], n, out + j * n);
    times_row(p->data + po[j], p->lin[in], n, out + j * n);
  }
}

/* The folded producers' values for the current step of G rows (at P):
 * row j's decay exp(DP * DQ) at A + j * N (where the decay is folded)
 * and factor FP * FQ at F + j * N, as the vector machine computes them
 * (the product, then vm_op's exp, one call for the G rows). */
static void fold_rows(const Kern *k, const Ptrs *p, int g, int64_t n,
                      float *a, float *f) {
  int in = k->nd - 1;
  int64_t dp[ROW_GROUP], dq[ROW_GROUP], fp[ROW_GROUP], fq[ROW_GROUP];
  for (int j = 0; j < g; j++) {
    dp[j] = p[j].dp;
    dq[j] = p[j].dq;
    fp[j] = p[j].fp;
    fq[j] = p[j].fq;
  }
  if (k->fold) {
    product_rows(&k->dp, dp, &k->dq, dq, in, g, n, a);
    vm_op(OP_EXP, a, a, NULL, NULL, (int)(g * n));
  }
  product_rows(&k->fp, fp, &k->fq, fq, in, g, n, f);
}

/* One step of one row on its folded values A and F (fold_rows): G's
 * stride SG along the row. */
INLINE double fold_step(const Ptrs *p, int64_t n, float *h, const float *hp,
                        int sg, const float *a, const float *f) {
  Ptrs q = *p;
  q.a = a;
  q.f = f;
  return sg == 0 ? step_row(&q, n, h, hp, 1, 1, 0, 1)
                 : step_row(&q, n, h, hp, 1, 1, sg, 1);
}

#if defined(__x86_64__)
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f,avx2,fma")))

/* Mamba-2's step (the decay and one input factor constant along the row,
 * the other factor and C contiguous, N a multiple of 16), sixteen lanes at
 * a time in one pass: the state fused-multiply-added, the read-out summed
 * as products fused into four vectors of partial sums (two terms each at
 * N = 128), the four added lane by lane, the sixteen lanes summed in
 * double. Rounded otherwise than step_row (the
 * fused products, the partial sums), within the tests' 1e-5 of it; H may
 * be HP (a state updated in place: each element is read before it is
 * written). */
/* The sum of V's sixteen lanes, in double. */
AVX512 static double lanes_sum(__m512 v) {
  __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  return _mm512_reduce_add_pd(_mm512_add_pd(
      _mm512_cvtps_pd(_mm512_castps512_ps256(v)), _mm512_cvtps_pd(hi)));
}

/* Sixteen elements at M: the state H = A.HP + F.G, and ACC += C.H. */
#define M2_LANES(m, acc)                                                      \
  do {                                                                        \
    __m512 hv_ = _mm512_fmadd_ps(                                             \
        va, _mm512_loadu_ps(hp + (m)),                                        \
        _mm512_mul_ps(_mm512_loadu_ps(p->f + (m)), vg));                      \
    _mm512_storeu_ps(h + (m), hv_);                                           \
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(p->c + (m)), hv_, acc);             \
  } while (0)

AVX512 static double step_m2_avx512(const Ptrs *p, int64_t n, float *h,
                                    const float *hp) {
  __m512 va = _mm512_set1_ps(*p->a), vg = _mm512_set1_ps(*p->g);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t m = 0;
  for (; m + 64 <= n; m += 64) { /* four chains of fused adds, not one */
    M2_LANES(m, acc[0]);
    M2_LANES(m + 16, acc[1]);
    M2_LANES(m + 32, acc[2]);
    M2_LANES(m + 48, acc[3]);
  }
  for (; m < n; m += 16)
    M2_LANES(m, acc[0]);
  return lanes_sum(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]),
                                 _mm512_add_ps(acc[2], acc[3])));
}
#else
static double step_m2_avx512(const Ptrs *p, int64_t n, float *h,
                             const float *hp) {
  return step_row(p, n, h, hp, 0, 1, 0, 1);
}
#endif


/* The coordinates of row ROW's first step. */
static void row_coords(const Kern *k, int64_t row, int64_t *x) {
  int in = k->nd - 1;
  for (int j = k->nrows - 1; j >= 0; j--) {
    int d = k->rows[j];
    int64_t ext = k->reg.hi[d] - k->reg.lo[d];
    x[d] = k->reg.lo[d] + row % ext;
    row /= ext;
  }
  x[in] = k->reg.lo[in];
  x[k->ld] = k->reg.lo[k->ld];
}

/* Where a row's first step reads and writes: its pointers, the previous
 * state's, and its coordinates. */
typedef struct RowAt {
  Ptrs p;
  const float *hp;
  int64_t x[IR_MAX_RANKS];
} RowAt;

static void row_at(const Kern *k, int64_t row, RowAt *at) {
  row_coords(k, row, at->x);
  at->hp = k->lag.data + offset(&k->lag, at->x, k->nd);
  ptrs_at(k, at->x, &at->p);
}

/* AT to the next row: the rows' last dimension one further, the pointers
 * moved along it, or (when a dimension wraps) computed again. A decode
 * step's row is short (Mamba-1's 16 elements), so its addressing must
 * cost little next to it. */
static void row_next(const Kern *k, RowAt *at) {
  int last = k->nrows - 1, d = last >= 0 ? k->rows[last] : 0;
  if (last >= 0 && at->x[d] + 1 < k->reg.hi[d]) {
    at->x[d]++;
    at->hp += k->lag.lin[d];
    ptrs_move(k, &at->p, d);
    return;
  }
  for (int j = last; j >= 0; j--) {
    d = k->rows[j];
    if (++at->x[d] < k->reg.hi[d])
      break;
    at->x[d] = k->reg.lo[d];
  }
  at->hp = k->lag.data + offset(&k->lag, at->x, k->nd);
  ptrs_at(k, at->x, &at->p);
}

/* The floats of run_rows' buffer. */
static size_t rows_buf_floats(const Kern *k) {
  return 4 * ROW_GROUP *
         (size_t)(k->reg.hi[k->nd - 1] - k->reg.lo[k->nd - 1] + 1);
}

/* Rows [lo, hi): each through every step, its state written to S where
 * something reads it there (the last step: the next tile's halo, the next
 * pass's state), else kept in BUF (2 x ROW_GROUP x the innermost extent),
 * which is followed by 2 x ROW_GROUP rows for the folded producers'
 * values (rows_buf_floats in all). */
INLINE void run_rows(const Kern *k, int64_t lo, int64_t hi, float *buf,
                     bool wide) {
  int in = k->nd - 1;
  int64_t n = k->reg.hi[in] - k->reg.lo[in];
  float *fold = buf + 2 * ROW_GROUP * n;
  int64_t steps = k->reg.hi[k->ld] - k->reg.lo[k->ld];
  int sa = (int)k->a.lin[in],
      sf = k->factor ? 1 : (int)(k->prod ? k->f : k->in).lin[in];
  int sg = k->prod ? (int)k->g.lin[in] : 0;
  RowAt at;
  row_at(k, lo, &at);
  for (int64_t row = lo; row < hi; row += ROW_GROUP) {
    int g = hi - row < ROW_GROUP ? (int)(hi - row) : ROW_GROUP;
    Ptrs p[ROW_GROUP];
    const float *hp[ROW_GROUP];
    for (int j = 0; j < g; j++) {
      hp[j] = at.hp;
      p[j] = at.p;
      row_next(k, &at);
    }
    for (int64_t i = 0; i < steps; i++) {
      if (k->fold || k->factor)
        fold_rows(k, p, g, n, fold, fold + ROW_GROUP * n);
      for (int j = 0; j < g; j++) {
        float *h = k->s_all || i == steps - 1 ? p[j].s
                                              : buf + (2 * j + (i & 1)) * n;
        double acc;
        if (k->factor) /* the factor alone folded: F a row buffer */
          p[j].f = fold + (ROW_GROUP + j) * n;
        /* The layouts of Mamba-2 (a constant decay) and Mamba-1 (a decay
         * per element), the factors' contiguous one first; any other. */
        if (wide)
          acc = step_m2_avx512(&p[j], n, h, hp[j]);
        else if (k->fold)
          acc = fold_step(&p[j], n, h, hp[j], sg, fold + j * n,
                          fold + (ROW_GROUP + j) * n);
        else if (sf == 1 && sg == 0 && sa == 0)
          acc = step_row(&p[j], n, h, hp[j], 0, 1, 0, 1);
        else if (sf == 1 && sg == 0 && sa == 1)
          acc = step_row(&p[j], n, h, hp[j], 1, 1, 0, 1);
        else
          acc = step_row(&p[j], n, h, hp[j], sa, sf, sg, 1);
        hp[j] = h;
        if (p[j].y)
          *p[j].y = (float)acc;
        ptrs_step(k, &p[j]);
      }
    }
  }
}

static void rows_base(const Kern *k, int64_t lo, int64_t hi, float *buf) {
  run_rows(k, lo, hi, buf, false);
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static void
rows_avx2(const Kern *k, int64_t lo, int64_t hi, float *buf) {
  run_rows(k, lo, hi, buf, false);
}

/* The sums of eight vectors' sixteen lanes, lane j of the result V[j]'s:
 * the halves added, then pairs of vectors added lane by lane in a tree
 * (horizontal adds), so that the eight sums cost what about two of
 * lanes_sum's do. In fp32: each lane already holds a partial sum of
 * N / 16 products, and the tree adds at most sixteen. */
_Static_assert(ROW_GROUP == 8, "sums8 reduces eight rows' read-outs");
AVX512 static __m256 sums8(const __m512 *v) {
  __m256 h[8];
  for (int j = 0; j < 8; j++)
    h[j] = _mm256_add_ps(_mm512_castps512_ps256(v[j]),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(
                             _mm512_castps_pd(v[j]), 1)));
  __m256 a = _mm256_hadd_ps(h[0], h[1]), b = _mm256_hadd_ps(h[2], h[3]);
  __m256 c = _mm256_hadd_ps(h[4], h[5]), d = _mm256_hadd_ps(h[6], h[7]);
  __m256 ab = _mm256_hadd_ps(a, b), cd = _mm256_hadd_ps(c, d);
  /* ab: lanes 0-3 rows 0-3 (low halves), 4-7 rows 0-3 (high halves) */
  __m256 lo = _mm256_permute2f128_ps(ab, cd, 0x20);
  __m256 hi = _mm256_permute2f128_ps(ab, cd, 0x31);
  return _mm256_add_ps(lo, hi);
}

/* One decode step of ROW_GROUP rows that share the decay, F and C (the
 * channels of one Mamba-2 head), from the state in memory (row j at HP +
 * j * PQ) into H (H + j * HQ), a row at a time, end to end, so that the
 * state streams through in address order, which the hardware prefetcher
 * follows (the rows together made mamba2-130m's F16 decode 5 % slower);
 * each row's read-out in a vector of its own, the eight summed together
 * at the end (sums8); Y (Y + j * YQ) and G (G + j * GQ) per row. */
AVX512 static void group_step(int64_t n, float a, const float *f,
                              const float *c, const float *g, int64_t gq,
                              const float *hp, int64_t pq, float *h,
                              int64_t hq, float *y, int64_t yq) {
  __m512 va = _mm512_set1_ps(a), acc[ROW_GROUP];
  for (int j = 0; j < ROW_GROUP; j++) {
    __m512 vg = _mm512_set1_ps(g[j * gq]);
    acc[j] = _mm512_setzero_ps();
    for (int64_t m = 0; m < n; m += 16) {
      __m512 hv = _mm512_fmadd_ps(va, _mm512_loadu_ps(hp + j * pq + m),
                                  _mm512_mul_ps(_mm512_loadu_ps(f + m), vg));
      _mm512_storeu_ps(h + j * hq + m, hv);
      acc[j] = _mm512_fmadd_ps(_mm512_loadu_ps(c + m), hv, acc[j]);
    }
  }
  float sum[ROW_GROUP];
  _mm256_storeu_ps(sum, sums8(acc));
  for (int j = 0; j < ROW_GROUP; j++)
    y[j * yq] = sum[j];
}

/* A later step's F, C and the group's G into the cache: a step's
 * operands lie a whole row of their tensors apart from the last step's
 * (Bbar 12 KiB, X 6 KiB on mamba2-130m), too far for the hardware
 * prefetcher to follow beside the state's stream, and the step stalled on
 * them. */
enum { AHEAD = 4 };
AVX512 static void fetch_step(int64_t n, const float *f, const float *c,
                              const float *g, int64_t gq) {
  for (int64_t m = 0; m < n; m += 16) {
    _mm_prefetch((const char *)(f + m), _MM_HINT_T0);
    _mm_prefetch((const char *)(c + m), _MM_HINT_T0);
  }
  _mm_prefetch((const char *)g, _MM_HINT_T0);
  _mm_prefetch((const char *)(g + (ROW_GROUP - 1) * gq), _MM_HINT_T0);
}

/* A group of ROW_GROUP rows through its steps: where each operand of
 * step I lies (X + I * X_LD), and row j's (+ j * X_Q). */
typedef struct M2Group {
  int64_t n, steps;
  const float *a, *f, *g, *c, *lag;
  float *y, *s;
  int64_t a_ld, f_ld, g_ld, c_ld, y_ld, s_ld; /* along the recurrence */
  int64_t g_q, y_q, s_q, lag_q;                /* along the rows */
  bool s_all;
} M2Group;

/* The read-outs of two rows (ACC0's lanes and ACC1's) into Y0 and Y1,
 * summed in the same tree as sums8's (the halves added lane by lane,
 * then pairs, then pairs of pairs, the quads last): the same numbers. */
AVX512 static inline __attribute__((always_inline)) void
sums2(__m512 acc0, __m512 acc1, float *y0, float *y1) {
  __m256 h0 = _mm256_add_ps(_mm512_castps512_ps256(acc0),
                            _mm256_castpd_ps(_mm512_extractf64x4_pd(
                                _mm512_castps_pd(acc0), 1)));
  __m256 h1 = _mm256_add_ps(_mm512_castps512_ps256(acc1),
                            _mm256_castpd_ps(_mm512_extractf64x4_pd(
                                _mm512_castps_pd(acc1), 1)));
  __m256 p = _mm256_hadd_ps(h0, h1);
  __m256 q = _mm256_hadd_ps(p, p); /* lanes 0, 1: the low quads; 4, 5: high */
  __m128 r = _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1));
  _mm_store_ss(y0, r);
  _mm_store_ss(y1, _mm_movehdup_ps(r));
}

/* The most vectors of a row's state that pair_steps holds: two rows of
 * them and the step's operands fill the 32 registers. */
enum { PAIR_MAX_NV = 8 };

/* Rows J and J + 1 of group Q through every step, their state (NV
 * vectors a row, a constant: NV <= PAIR_MAX_NV) held in registers from the
 * previous state (LAG) to the last step's. Each element is computed as
 * group_step computes it (the same operations in the same order): the
 * same numbers, without a load and a store of the state per element and
 * step, nor eight rows' pointers to keep (the state's load and store
 * were a third of the operations, 2.4 x 10^9 element-steps in a
 * mamba2-130m prefill). The pairs of a group read the same F and C, each
 * from L2 (a pair over a block of steps from L1, the state in memory
 * between blocks, was no faster from 64 steps on, slower below). */
AVX512 static inline __attribute__((always_inline)) void
pair_steps(const M2Group *q, int nv, int j) {
  __m512 h0[PAIR_MAX_NV], h1[PAIR_MAX_NV];
  const float *lag = q->lag + j * q->lag_q;
  for (int v = 0; v < nv; v++) {
    h0[v] = _mm512_loadu_ps(lag + 16 * v);
    h1[v] = _mm512_loadu_ps(lag + q->lag_q + 16 * v);
  }
  for (int64_t i = 0; i < q->steps; i++) {
    if (i + AHEAD < q->steps)
      fetch_step(q->n, q->f + (i + AHEAD) * q->f_ld,
                 q->c + (i + AHEAD) * q->c_ld, q->g + (i + AHEAD) * q->g_ld,
                 q->g_q);
    const float *f = q->f + i * q->f_ld, *c = q->c + i * q->c_ld,
                *g = q->g + i * q->g_ld + j * q->g_q;
    __m512 va = _mm512_set1_ps(q->a[i * q->a_ld]);
    __m512 vg0 = _mm512_set1_ps(g[0]), vg1 = _mm512_set1_ps(g[q->g_q]);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int v = 0; v < nv; v++) {
      __m512 fv = _mm512_loadu_ps(f + 16 * v), cv = _mm512_loadu_ps(c + 16 * v);
      h0[v] = _mm512_fmadd_ps(va, h0[v], _mm512_mul_ps(fv, vg0));
      h1[v] = _mm512_fmadd_ps(va, h1[v], _mm512_mul_ps(fv, vg1));
      acc0 = _mm512_fmadd_ps(cv, h0[v], acc0);
      acc1 = _mm512_fmadd_ps(cv, h1[v], acc1);
    }
    float *y = q->y + i * q->y_ld + j * q->y_q;
    sums2(acc0, acc1, y, y + q->y_q);
    if (q->s_all || i == q->steps - 1) {
      float *s = q->s + i * q->s_ld + j * q->s_q;
      for (int v = 0; v < nv; v++) {
        _mm512_storeu_ps(s + 16 * v, h0[v]);
        _mm512_storeu_ps(s + q->s_q + 16 * v, h1[v]);
      }
    }
  }
}

/* pair_steps for the group's state width (NV a constant in each call). */
AVX512 static void pair_run(const M2Group *q, int j) {
  switch (q->n / 16) {
#define PAIR_NV(nv)                                                           \
  case nv:                                                                    \
    pair_steps(q, nv, j);                                                     \
    break;
    PAIR_NV(1) PAIR_NV(2) PAIR_NV(3) PAIR_NV(4)
    PAIR_NV(5) PAIR_NV(6) PAIR_NV(7) PAIR_NV(8)
#undef PAIR_NV
  }
}
_Static_assert(PAIR_MAX_NV == 8, "pair_run instantiates pair_steps to 8");
_Static_assert(ROW_GROUP % 2 == 0, "pair_steps takes the rows two by two");

/* Sixteen values of O from element OFF as fp32 (O contiguous there). */
AVX512 static inline __m512 load16(const Opnd *o, int64_t off) {
  if (!o->half)
    return _mm512_loadu_ps(o->data + off);
  __m256i h = _mm256_loadu_si256((const __m256i *)(o->half + off));
  if (o->dtype == DT_F16)
    return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The folded factor F = FP * FQ (m2_layout) of every step of the rows at
 * X into OUT (a row of N a step): one fp32 product each, as the vector
 * machine rounds the producer's. Where the factor is broadcast over the
 * rows (Mamba-2's Bbar over a head's channels), this is a head's once,
 * kept in the cache for its groups, where the producer wrote 512 x 128
 * values a head to memory for the scan to read back. */
AVX512 static void factor_steps(const Kern *k, const int64_t *x, float *out) {
  int nd = k->nd, ld = k->ld;
  int64_t n = k->reg.hi[nd - 1] - k->reg.lo[nd - 1];
  int64_t steps = k->reg.hi[ld] - k->reg.lo[ld];
  const float *p = k->fp.data + offset(&k->fp, x, nd);
  int64_t qo = offset(&k->fq, x, nd);
  for (int64_t i = 0; i < steps; i++) {
    __m512 vp = _mm512_set1_ps(p[i * k->fp.lin[ld]]);
    for (int64_t m = 0; m < n; m += 16)
      _mm512_storeu_ps(out + i * n + m,
                       _mm512_mul_ps(vp, load16(&k->fq, qo + m)));
    qo += k->fq.lin[ld];
  }
}

/* ROW_GROUP rows from X (consecutive along the rows' innermost dimension
 * DQ) through every step: a decode step by group_step, a prompt's steps
 * two rows at a time by pair_steps. F: the factor's steps (factor_steps),
 * a row of the innermost extent each, or NULL: the bound F. */
AVX512 static void group_m2(const Kern *k, const int64_t *x, int dq,
                            const float *f) {
  int nd = k->nd, ld = k->ld;
  M2Group q = {
      .n = k->reg.hi[nd - 1] - k->reg.lo[nd - 1],
      .steps = k->reg.hi[ld] - k->reg.lo[ld],
      .a = k->a.data + offset(&k->a, x, nd),
      .f = k->f.data + offset(&k->f, x, nd),
      .g = k->g.data + offset(&k->g, x, nd),
      .c = k->c.data + offset(&k->c, x, nd),
      .lag = k->lag.data + offset(&k->lag, x, nd),
      .y = k->y.data + offset(&k->y, x, nd),
      .s = k->s.data + offset(&k->s, x, nd),
      .a_ld = k->a.lin[ld], .f_ld = k->f.lin[ld], .g_ld = k->g.lin[ld],
      .c_ld = k->c.lin[ld], .y_ld = k->y.lin[ld], .s_ld = k->s.lin[ld],
      .g_q = k->g.lin[dq], .y_q = k->y.lin[dq], .s_q = k->s.lin[dq],
      .lag_q = k->lag.lin[dq], .s_all = k->s_all};
  if (f) {
    q.f = f;
    q.f_ld = q.n;
  }
  if (q.steps == 1)
    group_step(q.n, q.a[0], q.f, q.c, q.g, q.g_q, q.lag, q.lag_q, q.s, q.s_q,
               q.y, q.y_q);
  else
    for (int j = 0; j < ROW_GROUP; j += 2)
      pair_run(&q, j);
}

/* Do K's groups of rows share the decay, F and C (group_m2), and does a
 * row's state fit in pair_steps' registers where it runs? */
static bool m2_shared(const Kern *k) {
  int dq = k->rows[k->nrows - 1], nd = k->nd;
  bool f = k->factor ? k->fp.lin[dq] == 0 && k->fq.lin[dq] == 0
                     : k->f.lin[dq] == 0;
  return f && k->a.lin[dq] == 0 && k->c.lin[dq] == 0 &&
         (k->reg.hi[k->ld] - k->reg.lo[k->ld] == 1 ||
          k->reg.hi[nd - 1] - k->reg.lo[nd - 1] <= 16 * PAIR_MAX_NV);
}

/* Rows [lo, hi) with step_m2_avx512's layout: whole groups of rows that
 * share the decay, F and C by group_m2 (a prompt's where a row's state
 * fits in pair_steps' registers), the others row by row. BUF is
 * followed by the folded factor's steps (factor_steps), made again only
 * where a group reads another row of it than the last group did. */
AVX512 static void rows_m2_avx512(const Kern *k, int64_t lo, int64_t hi,
                                  float *buf) {
  int dq = k->rows[k->nrows - 1], nd = k->nd;
  bool shared = m2_shared(k);
  float *f = k->factor ? buf + rows_buf_floats(k) : NULL;
  int64_t made_p = -1, made_q = -1;
  for (int64_t row = lo; row < hi; row += ROW_GROUP) {
    int64_t x[IR_MAX_RANKS], end = hi - row < ROW_GROUP ? hi : row + ROW_GROUP;
    row_coords(k, row, x);
    if (shared && end - row == ROW_GROUP && nd > 0 &&
        x[dq] + ROW_GROUP <= k->reg.hi[dq]) {
      if (f && (offset(&k->fp, x, nd) != made_p ||
                offset(&k->fq, x, nd) != made_q)) {
        factor_steps(k, x, f);
        made_p = offset(&k->fp, x, nd);
        made_q = offset(&k->fq, x, nd);
      }
      group_m2(k, x, dq, f);
    } else {
      run_rows(k, row, end, buf, true);
    }
  }
}

/* Element J rows and I steps on from B (an offset into O) along the
 * rows' last dimension D and the recurrence's LD. */
static inline int64_t m1_at(const Opnd *o, int64_t b, int d, int ld, int64_t j,
                            int64_t i) {
  return b + j * o->lin[d] + i * o->lin[ld];
}

/* One step of one row on its decay DEC: H = (F * FQ) * G + DEC * HP, each
 * product and the sum rounded in fp32 as the vector machine rounds the
 * Einsums (so the state is the interpreter's, bit for bit), and the
 * read-out's products C * H summed in double, sixteen lanes at a time
 * (step_row sums them in another order: within the tests' 1e-5). */
AVX512 static double step_m1_avx512(int64_t n, float f, const Opnd *fq,
                                    int64_t fo, float g, const float *c,
                                    const float *dec, float *h,
                                    const float *hp) {
  __m512 vf = _mm512_set1_ps(f), vg = _mm512_set1_ps(g);
  __m512d acc = _mm512_setzero_pd();
  for (int64_t m = 0; m < n; m += 16) {
    __m512 u = _mm512_mul_ps(_mm512_mul_ps(vf, load16(fq, fo + m)), vg);
    __m512 hv = _mm512_add_ps(
        u, _mm512_mul_ps(_mm512_loadu_ps(dec + m), _mm512_loadu_ps(hp + m)));
    _mm512_storeu_ps(h + m, hv);
    __m512 ch = _mm512_mul_ps(_mm512_loadu_ps(c + m), hv);
    __m256 top =
        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ch), 1));
    acc = _mm512_add_pd(
        acc, _mm512_add_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(ch)),
                           _mm512_cvtps_pd(top)));
  }
  return _mm512_reduce_add_pd(acc);
}

/* The first step of the group three groups on (G rows each, from AT)
 * into the cache: its decays' vectors (DQ) and previous states (HP),
 * each row N elements. A decode step reads them from memory once, in
 * short runs (a part of the pool's), where the hardware prefetcher has
 * not caught up yet: the step stalled on them (fetched one group ahead,
 * the scan took 28 us a layer; three, 27). */
AVX512 static void m1_fetch(const Kern *k, const RowAt *at, int d, int g,
                            int64_t n) {
  size_t qs = k->dq.half ? 2 : 4;
  const char *q = k->dq.half ? (const char *)(k->dq.half + at->p.dq)
                             : (const char *)(k->dq.data + at->p.dq);
  for (int j = 3 * g; j < 4 * g; j++)
    for (int64_t m = 0; m < n; m += 16) {
      _mm_prefetch(q + qs * (size_t)(j * k->dq.lin[d] + m), _MM_HINT_T0);
      _mm_prefetch((const char *)(at->hp + j * k->lag.lin[d] + m), _MM_HINT_T0);
    }
}

/* G rows from AT (consecutive along the rows' last dimension D) through
 * every step: at each step the group's decays exp(DP * DQ) together (the
 * product in fp32, the exp by one vm_op call, as the vector machine
 * computes them), then each row's step. Every operand is addressed from
 * the group's first row by its strides (m1_at): the generic path
 * (fold_rows, fold_step) spent about 30 ns a row of sixteen on copying
 * and moving its pointers, and mamba-130m's decode scan took 46 us a
 * layer. */
AVX512 static void group_m1(const Kern *k, const RowAt *at, int d, int g,
                            float *buf) {
  int in = k->nd - 1, ld = k->ld;
  int64_t n = k->reg.hi[in] - k->reg.lo[in];
  int64_t steps = k->reg.hi[ld] - k->reg.lo[ld];
  float *dec = buf + 2 * ROW_GROUP * n;
  const Ptrs *b = &at->p;
  const float *hp[ROW_GROUP];
  for (int j = 0; j < g; j++)
    hp[j] = at->hp + j * k->lag.lin[d];
  m1_fetch(k, at, d, g, n);
  for (int64_t i = 0; i < steps; i++) {
    for (int j = 0; j < g; j++) {
      __m512 dv = _mm512_set1_ps(k->dp.data[m1_at(&k->dp, b->dp, d, ld, j, i)]);
      int64_t qo = m1_at(&k->dq, b->dq, d, ld, j, i);
      for (int64_t m = 0; m < n; m += 16)
        _mm512_storeu_ps(dec + j * n + m,
                         _mm512_mul_ps(dv, load16(&k->dq, qo + m)));
    }
    vm_op(OP_EXP, dec, dec, NULL, NULL, (int)(g * n));
    bool kept = k->s_all || i == steps - 1;
    for (int j = 0; j < g; j++) {
      float *h = kept ? b->s + m1_at(&k->s, 0, d, ld, j, i)
                      : buf + (2 * j + (i & 1)) * n;
      double y = step_m1_avx512(
          n, k->fp.data[m1_at(&k->fp, b->fp, d, ld, j, i)], &k->fq,
          m1_at(&k->fq, b->fq, d, ld, j, i), b->g[m1_at(&k->g, 0, d, ld, j, i)],
          b->c + m1_at(&k->c, 0, d, ld, j, i), dec + j * n, h, hp[j]);
      b->y[m1_at(&k->y, 0, d, ld, j, i)] = (float)y;
      hp[j] = h;
    }
  }
}

/* Rows [lo, hi) with Mamba-1's layout (m1_layout), in groups of up to
 * ROW_GROUP consecutive along the rows' last dimension. */
AVX512 static void rows_m1_avx512(const Kern *k, int64_t lo, int64_t hi,
                                  float *buf) {
  int d = k->rows[k->nrows - 1];
  for (int64_t row = lo; row < hi;) {
    RowAt at;
    row_at(k, row, &at);
    int64_t g = hi - row;
    if (g > ROW_GROUP)
      g = ROW_GROUP;
    if (g > k->reg.hi[d] - at.x[d])
      g = k->reg.hi[d] - at.x[d];
    group_m1(k, &at, d, (int)g, buf);
    row += g;
  }
}

/* Does K have Mamba-1's layout (the folded decay exp(DP * DQ) and factor
 * FP * FQ, DP, FP and G constant along the row, DQ, FQ and C contiguous,
 * N a multiple of 16), on a CPU that runs rows_m1_avx512? */
static bool m1_layout(const Kern *k) {
  int in = k->nd - 1;
  int64_t n = k->reg.hi[in] - k->reg.lo[in];
  return k->fold && k->readout && !k->write_t && !k->write_u && k->nrows > 0 &&
         k->dp.lin[in] == 0 && k->dq.lin[in] == 1 && k->fp.lin[in] == 0 &&
         k->fq.lin[in] == 1 && k->g.lin[in] == 0 && k->c.lin[in] == 1 &&
         n % 16 == 0 && __builtin_cpu_supports("avx512f");
}

/* Does K have step_m2_avx512's layout (a folded factor's P constant
 * along the row and Q contiguous: factor_steps'), on a CPU that runs it? */
static bool m2_layout(const Kern *k) {
  int in = k->nd - 1;
  int64_t n = k->reg.hi[in] - k->reg.lo[in];
  bool f = k->factor ? k->fp.lin[in] == 0 && k->fq.lin[in] == 1
                     : k->f.lin[in] == 1;
  return k->prod && k->readout && !k->write_t && !k->write_u &&
         k->a.lin[in] == 0 && f && k->g.lin[in] == 0 &&
         k->c.lin[in] == 1 && n % 16 == 0 &&
         __builtin_cpu_supports("avx512f");
}
#endif

typedef struct Share {
  const Kern *k;
  int64_t per;
} Share;

static void rows_task(void *arg, int i, int n) {
  const Share *sh = arg;
  int64_t lo = (int64_t)i * sh->per, hi = lo + sh->per;
  (void)n;
  if (hi > sh->k->nrow)
    hi = sh->k->nrow;
  if (lo >= hi)
    return;
  const Kern *k = sh->k;
  size_t floats = rows_buf_floats(k);
  if (k->factor) /* factor_steps' */
    floats += (size_t)((k->reg.hi[k->ld] - k->reg.lo[k->ld]) *
                       (k->reg.hi[k->nd - 1] - k->reg.lo[k->nd - 1]));
  float *buf = xmalloc(floats * sizeof(float));
#if defined(__x86_64__)
  if (m2_layout(k))
    rows_m2_avx512(k, lo, hi, buf);
  else if (m1_layout(k))
    rows_m1_avx512(k, lo, hi, buf);
  else if (vm_have_avx2())
    rows_avx2(k, lo, hi, buf);
  else
#endif
    rows_base(k, lo, hi, buf);
  free(buf);
}

bool scan_read_inside(const Run *r, const Scan *sc, int t) {
  const Cascade *c = r->c;
  if (c->tensors[t].output || r->o->keep_all)
    return false;
  for (int k = 0; k < c->nedges; k++) {
    int e = c->edges[k].consumer;
    if (c->edges[k].tensor == t && e != sc->mul && e != sc->add &&
        e != sc->prod && e != sc->out)
      return false;
  }
  return true;
}

bool scan_run(Run *r, const Scan *sc, const int *order, const Region *base,
              bool write_t, bool write_u) {
  int ts = r->c->einsums[sc->add]->out.tensor;
  Kern k = {.write_t = write_t, .write_u = write_u, .prod = sc->prod >= 0,
            .readout = sc->out >= 0, .fold = sc->dprod >= 0,
            .factor = sc->fprod >= 0 && sc->dprod < 0,
            .s_all = !scan_read_inside(r, sc, ts) ||
                     tensor_state_steps(r->s, ts) > 1};
  if (!kern_bind(r, sc, order, base, &k))
    return false;
  k.nrow = 1;
  for (int d = 0; d < k.nd - 1; d++)
    if (d != k.ld) {
      k.rows[k.nrows++] = d;
      k.nrow *= k.reg.hi[d] - k.reg.lo[d];
    }
  if (k.write_u && k.prod) {
    const Einsum *P = r->c->einsums[sc->prod];
    int dim[IR_MAX_VARS];
    dims_of(P, &P->out, dim);
    if (!operand(r, &P->out, dim, &k.reg, &k.u) ||
        k.u.lin[k.nd - 1] != 1)
      return false;
  }
  k.write_u = k.write_u && k.prod;
  Pool *pool = r->o->pool;
  /* Too little work to hand to the pool: on this thread. */
  int64_t steps = k.reg.hi[k.ld] - k.reg.lo[k.ld];
  double work = (double)k.nrow * (double)steps *
                (double)(k.reg.hi[k.nd - 1] - k.reg.lo[k.nd - 1]);
  int workers = pool && work >= VM_MIN_SHARED_WORK ? pool_size(pool) : 1;
  /* A prompt's rows in four parts a thread, so that a late thread takes
   * fewer; a decode step's (one step each, alike) in one: each part is a
   * hand-off (mamba-130m's decode scan: 4 us a layer less). */
  int64_t parts = workers > 1 ? (steps > 1 ? 4 : 1) * (int64_t)workers : 1;
  if (parts > k.nrow)
    parts = k.nrow;
  /* Whole groups of rows per part (run_rows). */
  int64_t per = parts ? (k.nrow + parts - 1) / parts : 0;
  Share sh = {.k = &k, .per = (per + ROW_GROUP - 1) / ROW_GROUP * ROW_GROUP};
  if (parts > 1)
    pool_run(pool, rows_task, &sh, (int)parts);
  else if (parts == 1)
    rows_task(&sh, 0, 1);
  return true;
}

bool scan_internal(const Run *r, const Scan *sc, int t) {
  return !r->c->tensors[t].init && scan_read_inside(r, sc, t);
}
