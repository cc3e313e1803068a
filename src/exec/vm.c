/* vm.c — evaluating one Einsum over a region: compile its terms into
 * programs over vector registers, walk the output in contiguous chunks,
 * reduce, and hand plain contractions to kernel_gemm. */
#include "job.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The loops that run units are compiled twice, for AVX2 and for the
 * baseline (run_units): everything they call inline comes with them. */
#define INLINE static inline __attribute__((always_inline))

/* ---- views and reads ---- */

View view_of(float *data, const int64_t *shape, int n) {
  View v = {.data = data, .n = n};
  int64_t stride = 1;
  for (int k = n - 1; k >= 0; k--) {
    v.extent[k] = shape[k];
    v.stride[k] = stride;
    stride *= shape[k];
  }
  return v;
}

View view_of_array(const Array *a) {
  View v = view_of(a->data, a->shape, a->ndim);
  v.half = a->half;
  v.dtype = a->dtype;
  return v;
}

static bool view_has_values(const View *v) { return v->data || v->half; }

/* Elements a view spans from its first: the widened copy's length. */
static int64_t view_span(const View *v) {
  int64_t span = 1;
  for (int k = 0; k < v->n; k++) {
    if (v->extent[k] == 0)
      return 0;
    span += (v->extent[k] - 1) * v->stride[k];
  }
  return span;
}

static int64_t index_value(const Shape *s, const Index *ix,
                           const int64_t *x) {
  double v = ix->off ? shape_eval(s, ix->off) : 0;
  for (int t = 0; t < ix->nterms; t++)
    v += (ix->coef[t] ? shape_eval(s, ix->coef[t]) : 1) * (double)x[ix->var[t]];
  return (int64_t)llround(v);
}

static float scalar_expr(const Env *env, const Expr *x, const int64_t *vars);

/* The value of an initialization at T's coordinates (a read before the
 * start of its conditioned rank). */
static float init_value(const Env *env, const Einsum *init,
                        const int64_t *coords) {
  int64_t vars[IR_MAX_VARS] = {0};
  for (int k = 0; k < init->out.n; k++)
    vars[init->out.idx[k].var[0]] = coords[k];
  return scalar_expr(env, init->rhs, vars);
}

float vm_read(const Env *env, int t, const int64_t *coords) {
  const Tensor *T = &env->c->tensors[t];
  for (int k = 0; k < T->nranks; k++) {
    if (coords[k] < 0)
      return T->init && T->init->out.cond_dim == k
                 ? init_value(env, T->init, coords)
                 : 0.0f;
    if (coords[k] >= env->s->size[T->ranks[k]])
      return 0.0f;
  }
  const View *v = &env->views[t];
  int64_t off = 0;
  for (int k = 0; k < T->nranks; k++) {
    int64_t rel = coords[k] - v->origin[k];
    if (!view_has_values(v) || rel < 0 || rel >= v->extent[k]) {
      *env->fault = 1;
      return NAN;
    }
    off += rel * v->stride[k];
  }
  return v->data ? v->data[off] : dtype_half_value(v->dtype, v->half[off]);
}

static float scalar_read(const Env *env, const Access *a, const int64_t *x) {
  int64_t coords[IR_MAX_RANKS];
  for (int k = 0; k < a->n; k++)
    coords[k] = index_value(env->s, &a->idx[k], x);
  return vm_read(env, a->tensor, coords);
}

static float scalar_expr(const Env *env, const Expr *x, const int64_t *vars) {
  switch (x->kind) {
  case EX_NUM:
    return (float)x->num;
  case EX_SYM:
    return (float)env->s->sym[x->sym];
  case EX_VAR:
    return (float)vars[x->var];
  case EX_READ:
    return scalar_read(env, x->acc, vars);
  case EX_OP: {
    float v[OP_MAX_ARITY] = {0, 0, 0};
    const Expr *arg[OP_MAX_ARITY] = {x->a, x->b, x->c};
    for (int k = 0; k < op_arity(x->op); k++)
      v[k] = scalar_expr(env, arg[k], vars);
    return vm_op1(x->op, v[0], v[1], v[2]);
  }
  }
  return NAN;
}

/* ---- compiling ---- */

static int compile(Job *j, Term *t, const Expr *x) {
  Ins in = {.dst = t->nregs};
  if (!expr_varies(x)) { /* a constant subexpression, folded once */
    in.op = I_CONST;
    in.val = (float)shape_eval(j->env->s, x);
  } else if (x->kind == EX_READ) {
    in.op = I_LOAD;
    in.acc = acc_index(j, x->acc);
  } else if (x->kind == EX_VAR) {
    in.op = I_VAR;
    in.var = x->var;
    j->values = true;
  } else {
    in.op = I_OP;
    in.fn = x->op;
    const Expr *arg[OP_MAX_ARITY] = {x->a, x->b, x->c};
    int *reg[OP_MAX_ARITY] = {&in.a, &in.b, &in.c};
    for (int k = 0; k < op_arity(x->op); k++)
      if ((*reg[k] = compile(j, t, arg[k])) < 0)
        return -1;
  }
  in.dst = t->nregs++;
  if (t->nins == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 16;
    t->ins = xrealloc(t->ins, sizeof *t->ins * (size_t)t->cap);
  }
  t->ins[t->nins++] = in;
  return in.dst;
}

static int count_terms(const Expr *x) {
  if (expr_is(x, OP_ADD) || expr_is(x, OP_SUB))
    return count_terms(x->a) + count_terms(x->b);
  return 1;
}

static void split_terms(Job *j, const Expr *x, double sign) {
  if (expr_is(x, OP_ADD) || expr_is(x, OP_SUB)) {
    split_terms(j, x->a, sign);
    split_terms(j, x->b, expr_is(x, OP_SUB) ? -sign : sign);
    return;
  }
  j->terms[j->nterms++] = (Term){.x = x, .sign = sign};
}

/* Can guard G fail anywhere in region R? Its index is affine: check the
 * region's corners. */
static bool guard_fails_in(const Guard *g, const Region *r) {
  int64_t mn = g->off, mx = g->off;
  for (int t = 0; t < g->nterms; t++) {
    int64_t c = g->coef[t], lo = r->lo[g->var[t]], hi = r->hi[g->var[t]] - 1;
    mn += c >= 0 ? c * lo : c * hi;
    mx += c >= 0 ? c * hi : c * lo;
  }
  return mn < g->lo || mx >= g->hi;
}

/* Offsets of a read: coordinate k is sum coef*x + off; lin[v] collects
 * stride_k * coef over the coordinates. */
static void compile_access(const Job *j, Acc *c) {
  const Access *a = c->a;
  const View *v = c->v;
  const Tensor *T = &j->env->c->tensors[a->tensor];
  Region full;
  region_full(j->env->s, j->e, &full);
  memset(c->lin, 0, sizeof c->lin);
  c->base = 0;
  c->nguard = 0;
  for (int k = 0; k < a->n; k++) {
    const Index *ix = &a->idx[k];
    int64_t off = ix->off ? (int64_t)llround(shape_eval(j->env->s, ix->off)) : 0;
    c->base += (off - v->origin[k]) * v->stride[k];
    Guard *g = &c->guard[c->nguard];
    g->dim = k;
    g->nterms = ix->nterms;
    g->off = off;
    for (int t = 0; t < ix->nterms; t++) {
      int64_t coef =
          ix->coef[t] ? (int64_t)llround(shape_eval(j->env->s, ix->coef[t])) : 1;
      c->lin[ix->var[t]] += coef * v->stride[k];
      g->var[t] = ix->var[t];
      g->coef[t] = coef;
    }
    if (ix->plain)
      continue;
    /* A view may start before 0: its elements there hold what reads
     * before the start see (run_alloc, the fused executor's halos). */
    int64_t size = j->env->s->size[T->ranks[k]];
    g->lo = v->origin[k];
    g->hi = v->origin[k] + v->extent[k] < size ? v->origin[k] + v->extent[k]
                                               : size;
    /* A coordinate that stays inside the view over the Einsum's whole
     * iteration space (a flattened channel, Q*p+q over all of D) is no
     * guard: the read is as plain as any, and may go to kernel_gemm. */
    if (guard_fails_in(g, &full))
      c->nguard++;
  }
}

/* Mark the guards that move with the chunk's variables. */
static void mark_lane_guards(const Job *j, Acc *c) {
  for (int g = 0; g < c->nguard; g++) {
    Guard *gd = &c->guard[g];
    gd->per_lane = false;
    for (int t = 0; t < gd->nterms; t++)
      for (int k = 0; k < j->w.nchunk; k++)
        gd->per_lane = gd->per_lane || gd->var[t] == j->w.cvar[k];
  }
}


/* Which reads must check their guards in the current region (most need
 * not: halos and fronts hold what lags and windows reach). */
static void update_guards(Job *j) {
  j->guards = false;
  for (int a = 0; a < j->nacc; a++) {
    Acc *c = &j->acc[a];
    c->live = false;
    for (int g = 0; g < c->nguard; g++)
      c->live = c->live || guard_fails_in(&c->guard[g], &j->reg);
    j->guards = j->guards || c->live;
  }
}

static bool guard_holds(const Guard *g, const int64_t *x) {
  int64_t idx = g->off;
  for (int t = 0; t < g->nterms; t++)
    idx += g->coef[t] * x[g->var[t]];
  return idx >= g->lo && idx < g->hi;
}

/* ---- the walk over the output ---- */

static bool covers(const View *v, int k, int64_t lo, int64_t hi) {
  return lo == v->origin[k] && hi == v->origin[k] + v->extent[k];
}

/* Chunks decompose alike (so one table of lane offsets serves them all)
 * when the lane count is a multiple of the inner extents' product Q_m and
 * divides Q_{m+1}: then no chunk straddles a Q_{m+1} block, and inside one
 * every chunk starts at a multiple of Q_m. Prefer the most lanes. */
static void choose_lanes(Walk *w) {
  w->lanes = w->flat < VM_LANES ? (int)w->flat : VM_LANES;
  w->uniform = w->nchunk <= 1;
  if (w->flat <= VM_LANES) {
    w->uniform = true;
    return;
  }
  /* The most lanes that divide a run of the innermost dimensions (so that
   * every chunk decomposes alike): Mamba-2's [p, q] tensors take 256
   * (four heads of 64), not 64. */
  int64_t q = 1;
  bool found = false;
  for (int k = w->nchunk - 1; k >= 0 && q <= VM_LANES; k--) {
    int64_t next = q * w->cext[k];
    for (int64_t l = (VM_LANES / q) * q; l >= q; l -= q)
      if (next % l == 0 && l >= VM_LANES / 8 && (!found || l > w->lanes)) {
        w->lanes = (int)l;
        w->uniform = found = true;
        break;
      }
    q = next;
  }
}

static void plan_walk(Job *j) {
  const Einsum *e = j->e;
  const View *out = j->out;
  Walk *w = &j->w;
  memset(w, 0, sizeof *w);
  int n = e->out.n;
  int first_chunk = n;
  int64_t expect = 1;
  for (int k = n - 1; k >= 0; k--) {
    int v = e->out.idx[k].var[0];
    if (out->stride[k] != expect)
      break;
    first_chunk = k;
    expect = out->stride[k] * (j->reg.hi[v] - j->reg.lo[v]);
    if (!covers(out, k, j->reg.lo[v], j->reg.hi[v]))
      break; /* a partial dimension ends the contiguous run */
  }
  w->flat = 1;
  for (int k = first_chunk; k < n; k++) {
    int v = e->out.idx[k].var[0];
    w->cvar[w->nchunk] = v;
    w->cext[w->nchunk] = j->reg.hi[v] - j->reg.lo[v];
    w->flat *= w->cext[w->nchunk];
    w->nchunk++;
  }
  int64_t outer = 1;
  for (int k = 0; k < first_chunk; k++) {
    int v = e->out.idx[k].var[0];
    w->ovar[w->nouter] = v;
    w->olo[w->nouter] = j->reg.lo[v];
    w->oext[w->nouter] = j->reg.hi[v] - j->reg.lo[v];
    outer *= w->oext[w->nouter];
    w->nouter++;
  }
  choose_lanes(w);
  w->blocks = (w->flat + w->lanes - 1) / w->lanes;
  w->units = outer * w->blocks;
}

static AccKind classify_acc(const Job *j, const Acc *c) {
  const Walk *w = &j->w;
  bool zero = true, contig = true;
  int64_t expect = 1;
  for (int k = w->nchunk - 1; k >= 0; k--) {
    int64_t l = c->lin[w->cvar[k]];
    if (w->cext[k] == 1)
      continue; /* a variable that does not move */
    zero = zero && l == 0;
    contig = contig && l == expect;
    expect *= w->cext[k];
  }
  if (w->nchunk == 0)
    return K_BCAST;
  return zero ? K_BCAST : contig ? K_CONTIG : K_GATHER;
}

/* ---- running a unit of work ---- */


static void lanes_of(const Walk *w, int64_t f0, int nl, const Region *r,
                     int64_t *lane_x) {
  int64_t pos[IR_MAX_RANKS];
  int64_t f = f0;
  for (int k = w->nchunk - 1; k >= 0; k--) {
    pos[k] = f % w->cext[k];
    f /= w->cext[k];
  }
  for (int l = 0; l < nl; l++) {
    for (int k = 0; k < w->nchunk; k++)
      lane_x[k * VM_LANES + l] = r->lo[w->cvar[k]] + pos[k];
    for (int k = w->nchunk - 1; k >= 0; k--) {
      if (++pos[k] < w->cext[k])
        break;
      pos[k] = 0;
    }
  }
}

/* Load a read for lanes [0, nl) into DST, or point into the tensor where
 * its lanes are consecutive: x holds every variable's value (the chunk
 * variables at lane 0). Returns where the lanes are. */
/* BASE + the sum of LIN[v] * X[v] over N variables, a term at a time.
 * X was just written an element at a time, and a vector load of it
 * (GCC vectorizes this sum) waits until those stores reach the cache: a
 * store-forwarding stall, which took a third of the walk's time in a
 * prefill. The empty asm keeps the sum scalar. */
INLINE int64_t linear_offset(int64_t base, const int64_t *lin,
                             const int64_t *x, int n) {
  for (int v = 0; v < n; v++) {
    base += lin[v] * x[v];
    __asm__("" : "+r"(base));
  }
  return base;
}

INLINE const float *load(const Job *j, const Scratch *sc, int ai,
                         AccKind kind, int64_t step, const int64_t *x, int nl,
                         float *dst) {
  const Acc *c = &j->acc[ai];
  const Walk *w = &j->w;
  int64_t off = linear_offset(c->base, c->lin, x, j->e->nvars);
  /* off is at lane 0 (x holds lane 0's chunk values). A coordinate that
   * is not a plain variable may leave the view or the tensor (a window, a
   * lag): then the lanes concerned read through vm_read. */
  if (c->live) {
    bool ok = true, lanes = false;
    for (int g = 0; g < c->nguard; g++) {
      lanes = lanes || c->guard[g].per_lane;
      ok = ok && guard_holds(&c->guard[g], x);
    }
    int64_t lx[IR_MAX_VARS];
    if (lanes) {
      memcpy(lx, x, sizeof(int64_t) * (size_t)j->e->nvars);
      for (int l = 1; l < nl && ok; l++) {
        for (int k = 0; k < w->nchunk; k++)
          lx[w->cvar[k]] = sc->lane_x[k * VM_LANES + l];
        for (int g = 0; g < c->nguard && ok; g++)
          ok = guard_holds(&c->guard[g], lx);
      }
    }
    if (!ok) {
      memcpy(lx, x, sizeof(int64_t) * (size_t)j->e->nvars);
      for (int l = 0; l < nl; l++) {
        for (int k = 0; k < w->nchunk; k++)
          lx[w->cvar[k]] = sc->lane_x[k * VM_LANES + l];
        dst[l] = scalar_read(j->env, c->a, lx);
      }
      return dst;
    }
  }
  const float *data = c->v->data;
  switch (kind) {
  case K_BCAST: {
    float val = data[off];
    for (int l = 0; l < nl; l++)
      dst[l] = val;
    break;
  }
  case K_CONTIG:
    return data + off;
  case K_STRIDED:
    for (int l = 0; l < nl; l++)
      dst[l] = data[off + l * step];
    break;
  case K_REPEAT: {
    int run = (int)c->run, l = 0;
    if (run % 8 == 0) /* whole vectors of one value */
      for (const float *v = data + off; l + run <= nl; l += run, v += step)
        for (int m = 0; m < run; m += 8)
          for (int k = 0; k < 8; k++)
            dst[l + m + k] = *v;
    for (; l < nl; l += run) {
      float val = data[off + (l / run) * step];
      int end = l + run < nl ? l + run : nl;
      for (int m = l; m < end; m++)
        dst[m] = val;
    }
    break;
  }
  case K_CYCLE:
    for (int l = 0; l < nl; l += (int)c->run) {
      int len = l + (int)c->run < nl ? (int)c->run : nl - l;
      memcpy(dst + l, data + off, sizeof(float) * (size_t)len);
    }
    break;
  case K_GATHER: {
    const int64_t *g = (j->w.uniform ? j->table : sc->gather) +
                       (size_t)ai * VM_LANES;
    for (int l = 0; l < nl; l++)
      dst[l] = data[off + g[l]];
    break;
  }
  }
  return dst;
}

/* Variable V's value at each lane: along the row variable (ROW), from the
 * lanes' chunk variables, or the same for all lanes. (Floats hold
 * positions exactly up to 2^24.) */
INLINE void index_values(const Job *j, const Term *t, const Scratch *sc,
                         int v, const int64_t *x, int nl, bool row,
                         float *d) {
  const Walk *w = &j->w;
  if (row && v == t->row_var) {
    for (int l = 0; l < nl; l++)
      d[l] = (float)(x[v] + l);
    return;
  }
  for (int k = 0; !row && k < w->nchunk; k++)
    if (w->cvar[k] == v) {
      for (int l = 0; l < nl; l++)
        d[l] = (float)sc->lane_x[k * VM_LANES + l];
      return;
    }
  for (int l = 0; l < nl; l++)
    d[l] = (float)x[v];
}

/* Run a term's program, with its lanes along the walk's chunk or (ROW)
 * along the term's row variable; its last instruction writes into FINAL
 * when given (the output chunk). Returns where the result lies. */
INLINE const float *run_program(const Job *j, const Term *t, Scratch *sc,
                                const int64_t *x, int nl, float *final,
                                bool row) {
  const float **src = sc->src;
  for (int i = 0; i < t->nins; i++) {
    const Ins *in = &t->ins[i];
    float *d = final && i == t->nins - 1
                   ? final
                   : sc->regs + (size_t)in->dst * VM_LANES;
    switch (in->op) {
    case I_LOAD: {
      const Acc *c = &j->acc[in->acc];
      src[in->dst] =
          row ? load(j, sc, in->acc, t->row_kind[in->acc],
                     t->row_step[in->acc], x, nl, d)
              : load(j, sc, in->acc, c->kind, c->step, x, nl, d);
      break;
    }
    case I_CONST:
      for (int l = 0; l < nl; l++)
        d[l] = in->val;
      src[in->dst] = d;
      break;
    case I_VAR:
      index_values(j, t, sc, in->var, x, nl, row, d);
      src[in->dst] = d;
      break;
    case I_OP:
      vm_op(in->fn, d, src[in->a], src[in->b], src[in->c], nl);
      src[in->dst] = d;
      break;
    }
  }
  return src[t->result];
}

static double reduce_identity(RedOp op) {
  switch (op) {
  case RED_MAX:
    return -INFINITY;
  case RED_MIN:
    return INFINITY;
  case RED_PROD:
    return 1;
  default:
    return 0;
  }
}

/* Step X to the next point of the region's variables RV (NR of them, the
 * last fastest): false after the last point. */
INLINE bool next_point(const Job *j, const int *rv, int nr, int64_t *x) {
  int k = nr - 1;
  while (k >= 0 && ++x[rv[k]] == j->reg.hi[rv[k]]) {
    x[rv[k]] = j->reg.lo[rv[k]];
    k--;
  }
  return k >= 0;
}

/* Is term T the product of two reads (a window's weight times its input:
 * a convolution's taps)? Its sum then runs as one pass per point. */
static bool product_of_two_reads(const Term *t) {
  const Ins *in = t->ins;
  return t->nins == 3 && in[0].op == I_LOAD && in[1].op == I_LOAD &&
         in[2].op == I_OP && in[2].fn == OP_MUL && in[2].a == in[0].dst &&
         in[2].b == in[1].dst;
}

/* Accumulate one term over its reduced variables for the unit's lanes:
 * a sum straight into OUT, another reduction through SC->acc. A sum of
 * products of two reads multiplies and adds in one pass (the same fp32
 * product, added in double in the same order): mamba2-130m's convolution
 * of X, 4 taps over 512 x 1536 values a layer, took 78 ms of a 512-token
 * prompt's 1.3 s of CPU through run_program, 52-57 this way. */
INLINE void run_term(const Job *j, const Term *t, Scratch *sc, int64_t *x,
                     int nl, double *out) {
  const Einsum *e = j->e;
  RedOp op = e->explicit_red ? e->red : RED_SUM;
  double id = reduce_identity(op), sign = t->sign;
  if (op != RED_SUM)
    for (int l = 0; l < nl; l++)
      sc->acc[l] = id;
  int rv[IR_MAX_VARS], nr = 0;
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(t->red, v)) {
      rv[nr++] = v;
      x[v] = j->reg.lo[v];
    }
  if (op == RED_SUM && product_of_two_reads(t)) {
    const Ins *in = t->ins;
    const Acc *ca = &j->acc[in[0].acc], *cb = &j->acc[in[1].acc];
    float *da = sc->regs + (size_t)in[0].dst * VM_LANES;
    float *db = sc->regs + (size_t)in[1].dst * VM_LANES;
    do {
      const float *a = load(j, sc, in[0].acc, ca->kind, ca->step, x, nl, da);
      const float *b = load(j, sc, in[1].acc, cb->kind, cb->step, x, nl, db);
      if (sign > 0) /* (times SIGN in the loop, as below: 72 ms, not 52) */
        for (int l = 0; l < nl; l++)
          out[l] += a[l] * b[l];
      else
        for (int l = 0; l < nl; l++)
          out[l] -= a[l] * b[l];
    } while (next_point(j, rv, nr, x));
    return;
  }
  for (;;) {
    const float *res = run_program(j, t, sc, x, nl, NULL, false);
    switch (op) {
    case RED_SUM:
      for (int l = 0; l < nl; l++)
        out[l] += sign * res[l];
      break;
    case RED_MAX:
      for (int l = 0; l < nl; l++)
        sc->acc[l] = res[l] > sc->acc[l] ? res[l] : sc->acc[l];
      break;
    case RED_MIN:
      for (int l = 0; l < nl; l++)
        sc->acc[l] = res[l] < sc->acc[l] ? res[l] : sc->acc[l];
      break;
    case RED_PROD:
      for (int l = 0; l < nl; l++)
        sc->acc[l] *= res[l];
      break;
    case RED_COUNT:
      break;
    }
    if (!next_point(j, rv, nr, x))
      break;
  }
  if (op != RED_SUM)
    for (int l = 0; l < nl; l++)
      out[l] += sign * sc->acc[l];
}

/* Reduce N values into ACC in double precision: eight partial results,
 * so that the loop vectorizes. */
INLINE double reduce_row(RedOp op, double acc, const float *v, int n) {
  double p[8] = {acc};
  int m = 0;
  switch (op) {
  case RED_SUM:
    for (; m + 8 <= n; m += 8)
      for (int k = 0; k < 8; k++)
        p[k] += v[m + k];
    for (; m < n; m++)
      p[0] += v[m];
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  case RED_MAX:
    for (; m < n; m++)
      acc = v[m] > acc ? v[m] : acc;
    return acc;
  case RED_MIN:
    for (; m < n; m++)
      acc = v[m] < acc ? v[m] : acc;
    return acc;
  case RED_PROD:
    for (; m < n; m++)
      acc *= v[m];
    return acc;
  case RED_COUNT:
    break;
  }
  return acc;
}

/* A term a row at a time: for each output lane, its lanes run along the
 * row variable, in pieces of VM_LANES, over every point of the other
 * reduced variables. */
INLINE void run_term_row(const Job *j, const Term *t, Scratch *sc,
                         int64_t *x, int nl, double *out) {
  const Einsum *e = j->e;
  const Walk *w = &j->w;
  RedOp op = e->explicit_red ? e->red : RED_SUM;
  int rv[IR_MAX_VARS], nr = 0, row = t->row_var, fold = t->row_fold;
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(t->red, v) && v != row && v != fold)
      rv[nr++] = v;
  if (fold >= 0)
    x[fold] = j->reg.lo[fold]; /* the row runs on through its points */
  int64_t lo = j->reg.lo[row], hi = lo + row_length(j, row, fold);
  for (int l = 0; l < nl; l++) {
    for (int k = 0; k < w->nchunk; k++)
      x[w->cvar[k]] = sc->lane_x[k * VM_LANES + l];
    for (int k = 0; k < nr; k++)
      x[rv[k]] = j->reg.lo[rv[k]];
    double acc = reduce_identity(op);
    for (;;) {
      for (int64_t r0 = lo; r0 < hi; r0 += VM_LANES) {
        int m = (int)(hi - r0 < VM_LANES ? hi - r0 : VM_LANES);
        x[row] = r0;
        acc = reduce_row(op, acc, run_program(j, t, sc, x, m, NULL, true), m);
      }
      if (!next_point(j, rv, nr, x))
        break;
    }
    out[l] += t->sign * acc;
  }
  for (int k = 0; k < w->nchunk; k++)
    x[w->cvar[k]] = sc->lane_x[k * VM_LANES];
}

/* Recognize runs and cycles in a table of lane offsets (relative to lane
 * 0), so that the loads become broadcasts and copies. */
static void find_pattern(Acc *c, const int64_t *g, int lanes) {
  bool strided = lanes > 1;
  for (int l = 0; strided && l < lanes; l++)
    strided = g[l] == l * g[1];
  if (strided) { /* every chunk alike: the same value, or consecutive */
    c->kind = g[1] == 0 ? K_BCAST : g[1] == 1 ? K_CONTIG : K_STRIDED;
    c->step = g[1];
    return;
  }
  int run = 1;
  while (run < lanes && g[run] == 0)
    run++;
  if (run > 1 && run < lanes && lanes % run == 0) {
    int64_t step = g[run];
    bool ok = true;
    for (int l = 0; ok && l < lanes; l++)
      ok = g[l] == (l / run) * step;
    if (ok) {
      c->kind = K_REPEAT;
      c->run = run;
      c->step = step;
      return;
    }
  }
  int period = 1;
  while (period < lanes && g[period] == period)
    period++;
  if (period > 1 && period < lanes && lanes % period == 0) {
    bool ok = true;
    for (int l = 0; ok && l < lanes; l++)
      ok = g[l] == l % period;
    if (ok) {
      c->kind = K_CYCLE;
      c->run = period;
    }
  }
}

/* Offsets of every gathered read at each lane, relative to lane 0. */
static void lane_offsets(const Job *j, const int64_t *lane_x, int nl,
                         int64_t *table) {
  const Walk *w = &j->w;
  for (int a = 0; a < j->nacc; a++) {
    if (j->acc[a].kind != K_GATHER)
      continue;
    int64_t *g = table + (size_t)a * VM_LANES;
    for (int l = 0; l < nl; l++) {
      int64_t off = 0;
      for (int k = 0; k < w->nchunk; k++)
        off += j->acc[a].lin[w->cvar[k]] *
               (lane_x[k * VM_LANES + l] - lane_x[k * VM_LANES]);
      g[l] = off;
    }
  }
}

INLINE void run_unit(const Job *j, Scratch *sc, int64_t u) {
  const Walk *w = &j->w;
  int64_t o = u / w->blocks, blk = u % w->blocks;
  int64_t x[IR_MAX_VARS];
  for (int v = 0; v < j->e->nvars; v++)
    x[v] = 0;
  for (int k = w->nouter - 1; k >= 0; k--) {
    x[w->ovar[k]] = w->olo[k] + o % w->oext[k];
    o /= w->oext[k];
  }
  int64_t f0 = blk * w->lanes;
  int nl = (int)(w->flat - f0 < w->lanes ? w->flat - f0 : w->lanes);
  /* Every lane's chunk variables are needed only where a guard may send
   * lanes through vm_read, where a term takes an index variable's value,
   * or for a walk whose chunks decompose differently; lane 0's always. */
  if (j->guards || j->rows || j->values || !w->uniform) {
    lanes_of(w, f0, nl, &j->reg, sc->lane_x);
    for (int k = 0; k < w->nchunk; k++)
      x[w->cvar[k]] = sc->lane_x[k * VM_LANES];
  } else {
    int64_t f = f0;
    for (int k = w->nchunk - 1; k >= 0; k--) {
      x[w->cvar[k]] = j->reg.lo[w->cvar[k]] + f % w->cext[k];
      f /= w->cext[k];
    }
  }
  /* Lane offsets of the gathered reads (relative to lane 0): from the
   * shared table when every chunk decomposes alike. */
  if (!w->uniform)
    lane_offsets(j, sc->lane_x, nl, sc->gather);
  /* The output chunk is contiguous from the unit's first element. */
  int64_t off = linear_offset(j->out_base, j->out_lin, x, j->e->nvars);
  float *dst = j->out->data + off;
  /* One elementwise term: its result register is the output. */
  const Term *t0 = &j->terms[0];
  if (j->nterms == 1 && t0->red == 0 && t0->sign == 1 && !j->accumulate &&
      !j->e->explicit_red) {
    const float *res = run_program(j, t0, sc, x, nl, dst, false);
    if (res != dst) /* the term is a plain read */
      memcpy(dst, res, sizeof(float) * (size_t)nl);
    return;
  }
  double out[VM_LANES];
  for (int l = 0; l < nl; l++)
    out[l] = 0;
  for (int t = 0; t < j->nterms; t++)
    if (j->terms[t].row_var >= 0)
      run_term_row(j, &j->terms[t], sc, x, nl, out);
    else if (!j->terms[t].gemm_done)
      run_term(j, &j->terms[t], sc, x, nl, out);
  if (j->accumulate)
    for (int l = 0; l < nl; l++)
      dst[l] += (float)out[l];
  else
    for (int l = 0; l < nl; l++)
      dst[l] = (float)out[l];
}

static void run_units_base(const Job *j, Scratch *sc, int64_t lo,
                           int64_t hi) {
  for (int64_t u = lo; u < hi; u++)
    run_unit(j, sc, u);
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static void
run_units_avx2(const Job *j, Scratch *sc, int64_t lo, int64_t hi) {
  for (int64_t u = lo; u < hi; u++)
    run_unit(j, sc, u);
}
#endif

static void run_units(const Job *j, Scratch *sc, int64_t lo, int64_t hi) {
#if defined(__x86_64__)
  if (vm_have_avx2()) {
    run_units_avx2(j, sc, lo, hi);
    return;
  }
#endif
  run_units_base(j, sc, lo, hi);
}

/* A chain (vm_exec_chain): every member's unit U before the next unit,
 * so that what one member writes is still in L1 when the next reads it.
 * Returns the member whose read fell outside its view (the members share
 * one fault flag), or -1. */
INLINE int run_chain_units(Job *const *j, int n, int64_t units) {
  for (int64_t u = 0; u < units; u++)
    for (int k = 0; k < n; k++) {
      run_unit(j[k], &j[k]->serial, u);
      if (*j[k]->env->fault)
        return k;
    }
  return -1;
}

static int run_chain_base(Job *const *j, int n, int64_t units) {
  return run_chain_units(j, n, units);
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static int
run_chain_avx2(Job *const *j, int n, int64_t units) {
  return run_chain_units(j, n, units);
}
#endif

static int run_chain(Job *const *j, int n, int64_t units) {
#if defined(__x86_64__)
  if (vm_have_avx2())
    return run_chain_avx2(j, n, units);
#endif
  return run_chain_base(j, n, units);
}

typedef struct Share {
  const Job *j;
  int64_t per;
} Share;

static void scratch_init(const Job *j, Scratch *sc) {
  int nregs = 1;
  for (int t = 0; t < j->nterms; t++)
    if (j->terms[t].nregs > nregs)
      nregs = j->terms[t].nregs;
  /* One block at regs (scratch_free frees it): the registers first, where
   * malloc aligns them for the vector loops, a multiple of 8 bytes long
   * (VM_LANES floats each), then the 8-byte tables. */
  size_t nx = (size_t)(j->w.nchunk + 1) * VM_LANES,
         ng = (size_t)(j->nacc + 1) * VM_LANES;
  sc->regs = xmalloc(sizeof(float) * (size_t)nregs * VM_LANES +
                     sizeof(float *) * (size_t)nregs +
                     sizeof(double) * VM_LANES + sizeof(int64_t) * (nx + ng));
  sc->src = (const float **)(sc->regs + (size_t)nregs * VM_LANES);
  sc->acc = (double *)(sc->src + nregs);
  sc->lane_x = (int64_t *)(sc->acc + VM_LANES);
  sc->gather = sc->lane_x + nx;
}

static void scratch_free(Scratch *sc) { free(sc->regs); /* the block */ }
_Static_assert(VM_LANES * sizeof(float) % sizeof(int64_t) == 0,
               "scratch_init's tables after the registers start aligned");

static void run_share(void *arg, int i, int n) {
  const Share *sh = arg;
  const Job *j = sh->j;
  int64_t lo = (int64_t)i * sh->per, hi = lo + sh->per;
  if (hi > j->w.units)
    hi = j->w.units;
  (void)n;
  if (lo >= hi)
    return;
  Scratch sc;
  scratch_init(j, &sc);
  run_units(j, &sc, lo, hi);
  scratch_free(&sc);
}

/* ---- the entry points ---- */

Job *vm_prepare(const Env *env, const Einsum *e) {
  Job *j = xcalloc(1, sizeof *j);
  j->env = env;
  j->e = e;
  size_t nr = (size_t)e->nreads + 1; /* acc and seen: one block, at acc */
  j->acc = xcalloc(nr, sizeof *j->acc + sizeof *j->seen);
  j->seen = (View *)(j->acc + nr);
  for (int k = 0; k < e->nreads; k++)
    j->acc[j->nacc++].a = e->reads[k];
  j->terms = xcalloc(e->explicit_red ? 1 : (size_t)count_terms(e->rhs),
                     sizeof *j->terms);
  if (e->explicit_red)
    j->terms[j->nterms++] = (Term){.x = e->rhs, .sign = 1};
  else
    split_terms(j, e->rhs, 1);
  for (int t = 0; t < j->nterms; t++) {
    Term *tm = &j->terms[t];
    tm->red = (e->explicit_red ? einsum_all_vars(e) : expr_vars(tm->x)) &
              ~e->out_vars;
    tm->result = compile(j, tm, tm->x);
  }
  return j;
}

double vm_job_held(const Job *j) {
  double bytes = 0;
  for (int t = 0; t < j->nterms; t++)
    bytes += kernel_gemm_pack_bytes(j->terms[t].pack);
  for (int k = 0; j->wide && k < j->nacc; k++)
    bytes += j->wide[k].data ? 4.0 * (double)view_span(&j->wide[k].view) : 0;
  return bytes;
}

void vm_job_release(Job *j) {
  for (int t = 0; t < j->nterms; t++) {
    kernel_gemm_pack_free(j->terms[t].pack);
    j->terms[t].pack = NULL;
    j->terms[t].gemm_runs = 0;
  }
  for (int k = 0; j->wide && k < j->nacc; k++) {
    free(j->wide[k].data);
    j->wide[k].data = j->wide[k].view.data = NULL;
  }
}

void vm_job_free(Job *j) {
  if (!j)
    return;
  vm_job_release(j);
  free(j->wide);
  for (int t = 0; t < j->nterms; t++) {
    free(j->terms[t].ins);
    free(j->terms[t].row_step); /* and row_kind */
  }
  free(j->terms);
  free(j->acc); /* and seen */
  free(j->table);
  scratch_free(&j->serial);
  free(j);
}

/* Laid out alike: a job compiled for A runs on B, reading B's values
 * where they lie (nothing of A's values is kept across runs: widened
 * copies and packed weights are made again, see vm_job_release). */
static bool view_same(const View *a, const View *b) {
  if (a->n != b->n || a->dtype != b->dtype || !view_has_values(b))
    return false;
  for (int k = 0; k < a->n; k++)
    if (a->origin[k] != b->origin[k] || a->extent[k] != b->extent[k] ||
        a->stride[k] != b->stride[k])
      return false;
  return true;
}

static bool same_extents(const Job *j, const Region *r) {
  for (int v = 0; v < j->e->nvars; v++)
    if (r->hi[v] - r->lo[v] != j->reg.hi[v] - j->reg.lo[v])
      return false;
  return true;
}

/* Is the job compiled for a region shaped like R, over views laid out
 * alike? Then a run over R only moves the walk (a recurrence's next step,
 * the next tile, the next decode step). */
static bool still_bound(const Job *j, const Region *r) {
  if (!j->bound || !same_extents(j, r))
    return false;
  const View *views = j->env->views;
  for (int k = 0; k < j->nacc; k++)
    if (!view_same(&j->seen[k], &views[j->acc[k].a->tensor]))
      return false;
  return view_same(&j->seen[j->nacc], &views[j->e->out.tensor]);
}

/* Read K through an fp32 copy of its view when the view is 16-bit. */
static void widen_read(Job *j, int k) {
  Acc *c = &j->acc[k];
  if (c->v->dtype == DT_F32)
    return;
  if (!j->wide)
    j->wide = xcalloc((size_t)j->nacc + 1, sizeof *j->wide);
  Wide *w = &j->wide[k];
  const View *v = c->v;
  int64_t span = view_span(v);
  free(w->data);
  w->data = xmalloc((size_t)(span ? span : 1) * sizeof(float));
  kernel_widen(v->dtype, v->half, w->data, span);
  w->view = *v;
  w->view.data = w->data;
  w->view.half = NULL;
  w->view.dtype = DT_F32;
  w->used = true;
  c->v = &w->view;
}

/* A new run of a bound job: widen its 16-bit reads' values again (from
 * the inputs' views, laid out as when it bound). */
static void rewiden(Job *j) {
  for (int k = 0; j->wide && k < j->nacc; k++)
    if (j->wide[k].used && !j->wide[k].data) {
      j->acc[k].v = &j->env->views[j->acc[k].a->tensor];
      widen_read(j, k);
    }
}

/* Compile the reads, the walk and the kernel_gemm terms for J->reg. */
static bool bind(Job *j, Diag *d) {
  const Env *env = j->env;
  const Einsum *e = j->e;
  j->bound = false;
  j->out = &env->views[e->out.tensor];
  for (int k = 0; k < j->nacc; k++) {
    Acc *c = &j->acc[k];
    c->v = &env->views[c->a->tensor];
    if (!view_has_values(c->v)) {
      diag_error(d, env->c->path, c->a->loc,
                 "%s is not available to the Einsum reading it",
                 env->c->tensors[c->a->tensor].name);
      return false;
    }
    compile_access(j, c);
    j->seen[k] = *c->v;
  }
  j->seen[j->nacc] = *j->out;
  Acc out = {.a = &e->out, .v = j->out};
  compile_access(j, &out);
  memcpy(j->out_lin, out.lin, sizeof out.lin);
  j->out_base = out.base;
  plan_walk(j);
  for (int a = 0; a < j->nacc; a++) {
    j->acc[a].kind = classify_acc(j, &j->acc[a]);
    mark_lane_guards(j, &j->acc[a]);
  }
  update_guards(j);
  j->accumulate = false;
  j->rows = false;
  for (int t = 0; t < j->nterms; t++) {
    j->terms[t].gemm_done = vm_plan_gemm(j, &j->terms[t]);
    j->accumulate = j->accumulate || j->terms[t].gemm_done;
    j->terms[t].row_var = j->terms[t].row_fold = -1;
    if (!j->terms[t].gemm_done)
      vm_plan_row(j, &j->terms[t]);
    j->rows = j->rows || j->terms[t].row_var >= 0;
  }
  for (int t = 0; t < j->nterms; t++)
    for (int i = 0; !j->terms[t].gemm_done && i < j->terms[t].nins; i++)
      if (j->terms[t].ins[i].op == I_LOAD)
        widen_read(j, j->terms[t].ins[i].acc);
  if (j->w.uniform && j->w.units > 0) { /* one lane-offset table for all */
    if (!j->table)
      j->table = xmalloc(sizeof(int64_t) * (size_t)(j->nacc + 1) * VM_LANES);
    int64_t *lane_x =
        xmalloc(sizeof(int64_t) * (size_t)(j->w.nchunk + 1) * VM_LANES);
    lanes_of(&j->w, 0, j->w.lanes, &j->reg, lane_x);
    lane_offsets(j, lane_x, j->w.lanes, j->table);
    free(lane_x);
    for (int a = 0; a < j->nacc; a++)
      if (j->acc[a].kind == K_GATHER)
        find_pattern(&j->acc[a], j->table + (size_t)a * VM_LANES,
                     j->w.lanes);
  }
  j->bound = true;
  return true;
}

/* Move a bound walk to the current region (of the same shape). */
static void move_walk(Job *j) {
  for (int k = 0; k < j->w.nouter; k++)
    j->w.olo[k] = j->reg.lo[j->w.ovar[k]];
  update_guards(j);
}

static double job_work(const Job *j) {
  double work = 0;
  for (int t = 0; t < j->nterms; t++) {
    if (j->terms[t].gemm_done)
      continue;
    double points = (double)j->w.units * j->w.lanes;
    for (int v = 0; v < j->e->nvars; v++)
      if (VARSET_HAS(j->terms[t].red, v))
        points *= (double)(j->reg.hi[v] - j->reg.lo[v]);
    work += points;
  }
  return work;
}

/* Bind J for R (or, bound for a region shaped alike, move it there);
 * *SAME: it was. */
static bool bind_for(Job *j, const Region *r, bool *same, Diag *d) {
  *same = still_bound(j, r);
  j->reg = *r;
  if (*same) {
    move_walk(j);
    rewiden(j);
    return true;
  }
  return bind(j, d);
}

bool vm_gemv(Job *j, const Region *r, Gemm *g, Diag *d) {
  /* A job bound as something else over a region shaped alike is that
   * again where the views keep their layout (the interpreter's, from run
   * to run): decided without comparing every view. (Were a layout to
   * change, the product would only run alone, by vm_exec.) */
  if (j->nterms != 1 ||
      (j->bound && !j->terms[0].gemm_done && same_extents(j, r)))
    return false;
  bool same;
  if (!bind_for(j, r, &same, d) || !j->terms[0].gemm_done)
    return false;
  *g = vm_gemm_at(j, &j->terms[0]);
  /* W's rows contiguous along k, as the dot path reads them. */
  return g->batch == 1 && !g->accumulate &&
         ((g->n == 1 && g->a_k == 1) || (g->m == 1 && g->b_k == 1));
}

/* J's scratch for a run on the calling thread (SAME: bound as before,
 * whose walk's chunk count it was made for). */
static void serial_scratch(Job *j, bool same) {
  if (!same)
    scratch_free(&j->serial);
  if (!same || !j->serial.regs)
    scratch_init(j, &j->serial);
}

static bool report_fault(const Job *j, Diag *d) {
  const Env *env = j->env;
  if (*env->fault) {
    diag_error(d, env->c->path, j->e->loc,
               "%s: a read fell outside the tensor's available part",
               env->c->tensors[j->e->out.tensor].name);
    return false;
  }
  return true;
}

/* Run J, bound for its region (SAME: as it was for the last run). */
static bool run_bound(Job *j, bool same, Diag *d) {
  const Env *env = j->env;
  bool rest = j->nterms == 0;
  for (int t = 0; t < j->nterms; t++) {
    if (j->terms[t].gemm_done)
      vm_run_gemm(j, &j->terms[t]);
    rest = rest || !j->terms[t].gemm_done;
  }
  if (rest && j->w.units > 0) {
    int workers = env->pool && job_work(j) >= VM_MIN_SHARED_WORK
                      ? pool_size(env->pool)
                      : 1;
    int64_t parts = workers > 1 ? 4 * workers : 1;
    if (parts > j->w.units)
      parts = j->w.units;
    Share sh = {.j = j, .per = (j->w.units + parts - 1) / parts};
    if (env->pool && parts > 1) {
      pool_run(env->pool, run_share, &sh, (int)parts);
    } else {
      /* The walk's chunk count is fixed while the job stays bound. */
      serial_scratch(j, same);
      run_units(j, &j->serial, 0, j->w.units);
    }
  }
  return report_fault(j, d);
}

bool vm_exec(Job *j, const Region *r, Diag *d) {
  bool same;
  return bind_for(j, r, &same, d) && run_bound(j, same, d);
}

/* ---- chains of Einsums ---- */

/* Does J, bound, run all its terms in the walk's units (none by
 * kernel_gemm), on the calling thread? */
static bool chain_member(const Job *j) {
  return !j->accumulate && j->w.units > 0 &&
         !(j->env->pool && job_work(j) >= VM_MIN_SHARED_WORK);
}

/* Are A's and B's outputs walked alike: unit u, lane l the same output
 * position of both (so that a member's unit finds what the earlier ones
 * wrote at its elements, and nothing they write later)? */
static bool walks_alike(const Job *a, const Job *b) {
  const Walk *x = &a->w, *y = &b->w;
  if (x->nchunk != y->nchunk || x->nouter != y->nouter ||
      x->flat != y->flat || x->blocks != y->blocks ||
      x->units != y->units || x->lanes != y->lanes ||
      x->uniform != y->uniform)
    return false;
  for (int k = 0; k < x->nchunk; k++)
    if (x->cext[k] != y->cext[k])
      return false;
  for (int k = 0; k < x->nouter; k++)
    if (x->oext[k] != y->oext[k])
      return false;
  return true;
}

/* Offset of the element that access (BASE, LIN) of job J takes at the
 * walk's position: outer coordinates O, chunk coordinates C (relative to
 * the region's start). */
static int64_t walk_offset(const Job *j, int64_t base, const int64_t *lin,
                           const int64_t *o, const int64_t *c) {
  int64_t off = base;
  for (int k = 0; k < j->w.nouter; k++)
    off += lin[j->w.ovar[k]] * (j->w.olo[k] + o[k]);
  for (int k = 0; k < j->w.nchunk; k++)
    off += lin[j->w.cvar[k]] * (j->reg.lo[j->w.cvar[k]] + c[k]);
  return off;
}

/* Does read C of job J take, at every position of the walk, the element
 * job M writes there (J and M walked alike)? The same offset at the
 * walk's start and the same step along each of its dimensions; and no
 * guard that may send a lane elsewhere. */
static bool reads_as_written(const Job *j, const Acc *c, const Job *m) {
  if (c->live || c->v != m->out)
    return false;
  int64_t zero[IR_MAX_RANKS] = {0};
  if (walk_offset(j, c->base, c->lin, zero, zero) !=
      walk_offset(m, m->out_base, m->out_lin, zero, zero))
    return false;
  for (int k = 0; k < j->w.nouter; k++)
    if (c->lin[j->w.ovar[k]] != m->out_lin[m->w.ovar[k]])
      return false;
  for (int k = 0; k < j->w.nchunk; k++)
    if (c->lin[j->w.cvar[k]] != m->out_lin[m->w.cvar[k]])
      return false;
  for (int v = 0; v < j->e->nvars; v++) { /* nothing else moves the read */
    bool walked = false;
    for (int k = 0; k < j->w.nouter; k++)
      walked = walked || j->w.ovar[k] == v;
    for (int k = 0; k < j->w.nchunk; k++)
      walked = walked || j->w.cvar[k] == v;
    if (!walked && c->lin[v] != 0)
      return false;
  }
  return true;
}

/* May job J[K] join the chain J[0..K)? It must be a chain member walked
 * as the first, read what the others write only as they write it, and
 * write nothing they read or write. */
static bool joins_chain(Job *const *j, int k) {
  const Job *jk = j[k];
  if (!chain_member(jk) || !walks_alike(j[0], jk))
    return false;
  int tk = jk->e->out.tensor;
  for (int m = 0; m < k; m++) {
    if (j[m]->e->out.tensor == tk)
      return false;
    for (int a = 0; a < j[m]->nacc; a++)
      if (j[m]->acc[a].a->tensor == tk)
        return false;
  }
  for (int a = 0; a < jk->nacc; a++) {
    const Acc *c = &jk->acc[a];
    if (c->a->tensor == tk)
      return false;
    for (int m = 0; m < k; m++)
      if (c->a->tensor == j[m]->e->out.tensor &&
          !reads_as_written(jk, c, j[m]))
        return false;
  }
  return true;
}

int vm_exec_chain(Job *const *j, const Region *r, int n, int *chained,
                  Diag *d) {
  bool same;
  *chained = 0;
  if (!bind_for(j[0], &r[0], &same, d))
    return -1;
  if (n < 2 || !chain_member(j[0]))
    return run_bound(j[0], same, d) ? 1 : -1;
  serial_scratch(j[0], same);
  int len = 1;
  bool ends = false; /* J[LEN], bound, ends the chain: run it alone */
  for (; len < n; len++) {
    if (!bind_for(j[len], &r[len], &same, d))
      return -1;
    ends = !joins_chain(j, len);
    if (ends)
      break;
    serial_scratch(j[len], same);
  }
  if (len == 1) {
    if (!run_bound(j[0], true, d))
      return -1;
  } else {
    int fault = run_chain(j, len, j[0]->w.units);
    if (fault >= 0) {
      report_fault(j[fault], d);
      return -1;
    }
    *chained = len;
  }
  if (ends && !run_bound(j[len], same, d))
    return -1;
  return len + ends;
}
