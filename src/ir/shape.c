/* shape.c — binding a cascade's symbolic sizes for one model. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { UNSEEN, BUSY, DONE };

typedef struct Binder {
  const Cascade *c;
  const ModelSizes *model;
  const Setting *set;
  int nset;
  Shape *s;
  char *rank_state, *sym_state, *param_state;
  double *param_val;
  Diag *d;
  bool failed;
} Binder;

static double eval(Binder *b, const Expr *e);
static double bind_sym(Binder *b, int sym);

/* The last of N settings called NAME (the last --set wins), or NULL. */
static const Setting *find_in(const Setting *set, int n, const char *name) {
  for (int i = n - 1; i >= 0; i--)
    if (strcmp(set[i].name, name) == 0)
      return &set[i];
  return NULL;
}

static const Setting *find_setting(const Binder *b, const char *name) {
  return find_in(b->set, b->nset, name);
}

static void cycle_error(Binder *b, Loc loc, const char *what,
                        const char *name) {
  if (!b->failed)
    diag_error(b->d, b->c->path, loc, "%s %s depends on itself", what, name);
  b->failed = true;
}

static double bind_rank(Binder *b, int r) {
  const Rank *rk = &b->c->ranks[r];
  if (b->rank_state[r] == DONE)
    return (double)b->s->size[r];
  if (b->rank_state[r] == BUSY) {
    cycle_error(b, rk->size ? rk->size_loc : rk->loc, "the size of",
                rk->name);
    return NAN;
  }
  b->rank_state[r] = BUSY;
  double v = NAN;
  const Setting *st = find_setting(b, rk->name);
  Loc loc = rk->size ? rk->size_loc : rk->loc;
  if (st)
    v = st->value;
  else if (rk->size)
    v = eval(b, rk->size);
  if (!isnan(v) && (v < 1 || v != floor(v) || v > MAX_RANK_SIZE)) {
    if (!b->failed)
      diag_error(b->d, b->c->path, loc,
                 "rank %s has size %g: a size must be a positive integer "
                 "of at most %g",
                 rk->name, v, MAX_RANK_SIZE);
    b->failed = true;
    v = NAN;
  }
  b->s->size[r] = isnan(v) ? 0 : (int64_t)v;
  b->rank_state[r] = DONE;
  return v;
}

/* A parameter's value, noting whether a name it reads has none (NaN
 * then means "unknown", not "not a number"). */
typedef struct ParamEval {
  Binder *b;
  bool unknown;
} ParamEval;

static double param_sym(void *ctx, int sym) {
  ParamEval *pe = ctx;
  double v = bind_sym(pe->b, sym);
  pe->unknown = pe->unknown || isnan(v);
  return v;
}

static double bind_param(Binder *b, int p) {
  const Param *pa = &b->c->params[p];
  if (b->param_state[p] == DONE)
    return b->param_val[p];
  if (b->param_state[p] == BUSY) {
    cycle_error(b, pa->loc, "parameter", pa->name);
    return NAN;
  }
  b->param_state[p] = BUSY;
  ParamEval pe = {b, false};
  double v = expr_eval_const(pa->value, param_sym, &pe);
  if (!isfinite(v) && !pe.unknown) {
    if (!b->failed)
      diag_error(b->d, b->c->path, pa->loc,
                 "parameter %s is %s: a parameter must be a finite number",
                 pa->name, isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
    b->failed = true;
    v = NAN;
  }
  b->param_val[p] = v;
  b->param_state[p] = DONE;
  return v;
}

/* A symbol: --set, then a rank's size, then a spec parameter, then a model
 * parameter. */
static double bind_sym(Binder *b, int sym) {
  if (b->sym_state[sym] == DONE)
    return b->s->sym[sym];
  const char *name = b->c->syms[sym].name;
  double v = NAN;
  const Setting *st = find_setting(b, name);
  const Setting *ms = b->model ? find_in(b->model->set, b->model->n, name)
                               : NULL;
  int r = cascade_rank(b->c, name);
  int p = cascade_param(b->c, name);
  if (st)
    v = st->value;
  else if (r >= 0)
    v = bind_rank(b, r);
  else if (p >= 0)
    v = bind_param(b, p);
  else if (ms)
    v = ms->value;
  b->s->sym[sym] = v;
  b->sym_state[sym] = DONE;
  return v;
}

static double binder_sym(void *ctx, int sym) { return bind_sym(ctx, sym); }

static double eval(Binder *b, const Expr *e) {
  return expr_eval_const(e, binder_sym, b);
}

bool shape_setting_known(const Cascade *c, const char *name) {
  if (cascade_rank(c, name) >= 0 || cascade_param(c, name) >= 0)
    return true;
  for (int k = 0; k < c->nsyms; k++)
    if (strcmp(c->syms[k].name, name) == 0)
      return true;
  return false;
}

Shape *shape_bind(const Cascade *c, const ModelSizes *model,
                  const Setting *set, int nset, bool require, Diag *d) {
  /* The shape and its two tables in one block: shape_free frees it. */
  size_t nsize = (size_t)c->nranks + 1, nsym = (size_t)c->nsyms + 1;
  Shape *s = xcalloc(1, sizeof *s + nsize * sizeof *s->size +
                            nsym * sizeof *s->sym);
  s->c = c;
  s->model = model;
  s->size = (int64_t *)(s + 1);
  s->sym = (double *)(s->size + nsize);
  Binder b = {.c = c,
              .model = model,
              .set = set,
              .nset = nset,
              .s = s,
              .rank_state = xcalloc((size_t)c->nranks + 1, 1),
              .sym_state = xcalloc((size_t)c->nsyms + 1, 1),
              .param_state = xcalloc((size_t)c->nparams + 1, 1),
              .param_val = xcalloc((size_t)c->nparams + 1, sizeof(double)),
              .d = d};
  for (int r = 0; r < c->nranks; r++)
    bind_rank(&b, r);
  for (int i = 0; i < c->nsyms; i++)
    bind_sym(&b, i);
  /* Unknown names first: they explain the ranks left without a size. */
  for (int i = 0; require && !b.failed && i < c->nsyms; i++)
    if (isnan(s->sym[i])) {
      diag_error(d, c->path, c->syms[i].loc,
                 "unknown name '%s': not a rank, a parameter of the spec's "
                 "params section, or a model parameter%s",
                 c->syms[i].name,
                 model ? "" : " (no --model preset is selected)");
      b.failed = true;
    }
  /* Another name of a rank has its size: --set may not part them. */
  for (int r = 0; !b.failed && r < c->nranks; r++) {
    const Rank *rk = &c->ranks[r];
    if (rk->same_as >= 0 && s->size[r] != s->size[rk->same_as]) {
      diag_error(d, c->path, rk->size_loc,
                 "rank %s is another name of %s (size %lld), but is given "
                 "size %lld: set %s instead",
                 rk->name, c->ranks[rk->same_as].name,
                 (long long)s->size[rk->same_as], (long long)s->size[r],
                 c->ranks[rk->same_as].name);
      b.failed = true;
    }
  }
  s->complete = true;
  for (int r = 0; r < c->nranks; r++)
    if (s->size[r] == 0) {
      s->complete = false;
      if (require && !b.failed) {
        const Rank *rk = &c->ranks[r];
        if (rk->size)
          diag_error(d, c->path, rk->size_loc,
                     "rank %s has no valid size: its expression is not a "
                     "number",
                     rk->name);
        else
          diag_error(d, c->path, rk->loc,
                     "missing shape binding: rank %s has no size (bind it in "
                     "the shape section or with --set %s=N)",
                     rk->name, rk->name);
        b.failed = true;
      }
    }
  free(b.rank_state);
  free(b.sym_state);
  free(b.param_state);
  free(b.param_val);
  if (b.failed) {
    shape_free(s);
    return NULL;
  }
  return s;
}

Shape *shape_bind_filled(const Cascade *c, const ModelSizes *model,
                         const Setting *set, int nset, int64_t fill,
                         Diag *d) {
  Diag ignore = {0};
  Shape *s = shape_bind(c, model, set, nset, false, &ignore);
  if (!s)
    return shape_bind(c, model, set, nset, true, d);
  size_t cap = (size_t)nset + (size_t)c->nranks + (size_t)c->nsyms + 1;
  Setting *all = xcalloc(cap, sizeof *all);
  memcpy(all, set, sizeof *all * (size_t)nset);
  int n = nset;
  for (int r = 0; r < c->nranks; r++)
    if (s->size[r] == 0)
      all[n++] = (Setting){c->ranks[r].name, (double)fill};
  for (int k = 0; k < c->nsyms; k++)
    if (isnan(s->sym[k]) && cascade_rank(c, c->syms[k].name) < 0)
      all[n++] = (Setting){c->syms[k].name, 1};
  shape_free(s);
  s = shape_bind(c, model, all, n, true, d);
  free(all);
  return s;
}

_Static_assert(sizeof(Shape) % _Alignof(int64_t) == 0 &&
                   _Alignof(double) <= _Alignof(int64_t),
               "a Shape's tables follow it in its block, aligned");

void shape_free(Shape *s) { free(s); /* with its tables (shape_bind) */ }

static double table_sym(void *ctx, int sym) {
  return ((const Shape *)ctx)->sym[sym];
}

double shape_eval(const Shape *s, const Expr *e) {
  return expr_eval_const(e, table_sym, (void *)s);
}

double shape_tensor_elems(const Shape *s, int tensor) {
  const Tensor *t = &s->c->tensors[tensor];
  double n = 1;
  for (int k = 0; k < t->nranks; k++)
    n *= (double)s->size[t->ranks[k]];
  return n;
}

double shape_einsum_points(const Shape *s, const Einsum *e) {
  double n = 1;
  for (int v = 0; v < e->nvars; v++)
    n *= (double)s->size[e->vars[v].rank];
  return n;
}

/* Mixed radix: sorted by |coefficient|, each coefficient must exceed the
 * largest value the smaller terms can reach. */
static bool mixed_radix(const Shape *s, const Einsum *e, const Index *ix,
                        bool *known) {
  double coef[IR_MAX_TERMS], size[IR_MAX_TERMS];
  *known = false;
  for (int t = 0; t < ix->nterms; t++) {
    coef[t] = ix->coef[t] ? fabs(shape_eval(s, ix->coef[t])) : 1;
    size[t] = (double)s->size[e->vars[ix->var[t]].rank];
    if (isnan(coef[t]) || size[t] <= 0)
      return false;
    if (size[t] < 2) /* judge the structure, not a degenerate extent */
      size[t] = 2;
  }
  *known = true;
  for (int i = 1; i < ix->nterms; i++) /* insertion sort by coefficient */
    for (int j = i; j > 0 && coef[j] < coef[j - 1]; j--) {
      double tc = coef[j], ts = size[j];
      coef[j] = coef[j - 1], size[j] = size[j - 1];
      coef[j - 1] = tc, size[j - 1] = ts;
    }
  double reach = 0;
  for (int t = 0; t < ix->nterms; t++) {
    if (coef[t] <= reach)
      return false;
    reach += coef[t] * (size[t] - 1);
  }
  return true;
}

bool index_injective(const Cascade *c, const Shape *s, const Einsum *e,
                     const Index *ix) {
  if (ix->nterms <= 1)
    return true;
  bool known = false;
  if (s) {
    bool inj = mixed_radix(s, e, ix, &known);
    if (known)
      return inj;
  }
  /* Sizes unknown: only the split pattern RANK*p + q, q ranging over RANK. */
  if (ix->nterms != 2)
    return false;
  for (int t = 0; t < 2; t++) {
    const Expr *k = ix->coef[t], *one = ix->coef[1 - t];
    bool unit = !one || (one->kind == EX_NUM && one->num == 1);
    int q_rank = e->vars[ix->var[1 - t]].rank;
    if (k && k->kind == EX_SYM && unit &&
        strcmp(c->syms[k->sym].name, c->ranks[q_rank].name) == 0)
      return true;
  }
  return false;
}

int64_t tensor_state_steps(const Shape *s, int t) {
  const Cascade *c = s->c;
  int k, st = init_state_source(c, t, &k);
  if (st < 0)
    return 0;
  if (k < 0)
    return 1;
  int64_t n = s->size[c->tensors[st].ranks[k]];
  if (c->tensors[st].append)
    n += s->size[c->tensors[t].ranks[c->tensors[t].init->out.cond_dim]];
  return n;
}
