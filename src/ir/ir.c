/* ir.c — building the Cascade and deriving its dependence graph. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int varset_count(VarSet s) { return __builtin_popcountll(s); }

/* ---- construction ---- */

/* Append ITEM to C's named table NAME (the array c->NAME, its count N,
 * capacity CAP and name hash HASH): the new entry is c->N - 1. */
#define PUSH_NAMED(c, NAME, N, CAP, HASH, item)                              \
  do {                                                                       \
    VEC_PUSH((c)->NAME, (c)->N, (c)->CAP, (item));                           \
    names_add(&(c)->HASH, (c)->NAME, (c)->N, sizeof *(c)->NAME);             \
  } while (0)

Cascade *cascade_new(const char *path) {
  Cascade *c = xcalloc(1, sizeof *c);
  c->path = arena_strdup(&c->arena, path ? path : "<spec>");
  c->sequence = -1;
  return c;
}

void cascade_free(Cascade *c) {
  if (!c)
    return;
  free(c->ranks);
  free(c->tensors);
  free(c->einsums);
  free(c->syms);
  free(c->params);
  free(c->edges);
  names_free(&c->rank_names);
  names_free(&c->tensor_names);
  names_free(&c->sym_names);
  names_free(&c->param_names);
  arena_free(&c->arena);
  free(c);
}

_Static_assert(offsetof(Rank, name) == 0 && offsetof(Tensor, name) == 0 &&
                   offsetof(Sym, name) == 0 && offsetof(Param, name) == 0,
               "find_named reads an entry's name at its start");

int cascade_rank(const Cascade *c, const char *name) {
  return names_find(&c->rank_names, c->ranks, c->nranks, sizeof *c->ranks,
                    name);
}

int cascade_add_rank(Cascade *c, const char *name, Loc loc) {
  int r = cascade_rank(c, name);
  if (r >= 0)
    return r;
  Rank rk = {.name = arena_strdup(&c->arena, name), .loc = loc, .same_as = -1};
  PUSH_NAMED(c, ranks, nranks, ranks_cap, rank_names, rk);
  return c->nranks - 1;
}

int cascade_tensor(const Cascade *c, const char *name) {
  return names_find(&c->tensor_names, c->tensors, c->ntensors,
                    sizeof *c->tensors, name);
}

int cascade_add_tensor(Cascade *c, const char *name, Loc loc, int nranks,
                       const int *ranks) {
  Tensor t = {.name = arena_strdup(&c->arena, name),
              .loc = loc,
              .nranks = nranks,
              .producer = -1};
  t.ranks = arena_alloc(&c->arena, sizeof(int) * (size_t)(nranks ? nranks : 1));
  if (nranks)
    memcpy(t.ranks, ranks, sizeof(int) * (size_t)nranks);
  PUSH_NAMED(c, tensors, ntensors, tensors_cap, tensor_names, t);
  return c->ntensors - 1;
}

int cascade_sym(Cascade *c, const char *name, Loc loc) {
  int i = names_find(&c->sym_names, c->syms, c->nsyms, sizeof *c->syms,
                     name);
  if (i >= 0)
    return i;
  Sym s = {.name = arena_strdup(&c->arena, name), .loc = loc};
  PUSH_NAMED(c, syms, nsyms, syms_cap, sym_names, s);
  return c->nsyms - 1;
}

int cascade_param(const Cascade *c, const char *name) {
  return names_find(&c->param_names, c->params, c->nparams,
                    sizeof *c->params, name);
}

int cascade_add_param(Cascade *c, Param p) {
  PUSH_NAMED(c, params, nparams, params_cap, param_names, p);
  return c->nparams - 1;
}

void cascade_add_einsum(Cascade *c, Einsum *e) {
  e->id = c->neinsums;
  VEC_PUSH(c->einsums, c->neinsums, c->einsums_cap, e);
}

/* ---- queries ---- */

VarSet access_vars(const Access *a) {
  VarSet s = 0;
  for (int k = 0; k < a->n; k++)
    for (int t = 0; t < a->idx[k].nterms; t++)
      s |= VARSET_BIT(a->idx[k].var[t]);
  return s;
}

VarSet einsum_all_vars(const Einsum *e) {
  return e->nvars == 64 ? ~(VarSet)0 : VARSET_BIT(e->nvars) - 1;
}

VarSet einsum_reduced_vars(const Einsum *e) {
  return einsum_all_vars(e) & ~e->out_vars;
}

bool access_lagged(const Access *a) {
  for (int k = 0; k < a->n; k++)
    if (a->idx[k].lag > 0)
      return true;
  return false;
}

static bool access_windowed(const Access *a) {
  for (int k = 0; k < a->n; k++)
    if (!a->idx[k].plain)
      return true;
  return false;
}

/* Collect the operands of a product tree (a * b * c), looking through
 * division by a third tensor (SN*V/SD is still a product of SN and V). */
static int product_reads(const Expr *x, const Access **out, int n, int max) {
  if (x->kind == EX_READ) {
    if (n < max)
      out[n++] = x->acc;
    return n;
  }
  if (expr_is(x, OP_MUL)) {
    n = product_reads(x->a, out, n, max);
    return product_reads(x->b, out, n, max);
  }
  if (expr_is(x, OP_DIV))
    return product_reads(x->a, out, n, max);
  return n;
}

bool einsum_is_gemm(const Cascade *c, const Einsum *e) {
  (void)c;
  if (e->red != RED_SUM || einsum_reduced_vars(e) == 0)
    return false;
  /* The first additive term carries the contraction (a bias may follow). */
  const Expr *t = e->rhs;
  while (expr_is(t, OP_ADD) || expr_is(t, OP_SUB))
    t = t->a;
  const Access *ops[8];
  int n = product_reads(t, ops, 0, 8);
  if (n != 2)
    return false;
  VarSet a = access_vars(ops[0]), b = access_vars(ops[1]);
  VarSet red = einsum_reduced_vars(e);
  bool contracts = (a & b & red) != 0;
  bool a_own = (a & ~b & e->out_vars) != 0;
  bool b_own = (b & ~a & e->out_vars) != 0;
  return contracts && a_own && b_own;
}

int cascade_sequence_rank(const Cascade *c) {
  if (c->sequence >= 0)
    return c->sequence;
  for (int t = 0; t < c->ntensors; t++) {
    const Einsum *ini = c->tensors[t].init;
    if (ini)
      return c->tensors[t].ranks[ini->out.cond_dim];
  }
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    for (int k = 0; e->lagged && k < e->acc[0]->n; k++)
      if (e->acc[0]->idx[k].lag > 0)
        return c->tensors[e->tensor].ranks[k];
  }
  return cascade_rank(c, "I");
}

bool tensor_is_read(const Cascade *c, int t) {
  for (int i = 0; i < c->neinsums; i++)
    for (int k = 0; k < c->einsums[i]->nreads; k++)
      if (c->einsums[i]->reads[k]->tensor == t)
        return true;
  return tensor_is_init_read(c, t);
}

bool tensor_is_init_read(const Cascade *c, int t) {
  for (int u = 0; u < c->ntensors; u++) {
    const Einsum *ini = c->tensors[u].init;
    for (int k = 0; ini && k < ini->nreads; k++)
      if (ini->reads[k]->tensor == t)
        return true;
  }
  return false;
}

bool tensor_has_rank(const Tensor *T, int r) {
  for (int k = 0; k < T->nranks; k++)
    if (T->ranks[k] == r)
      return true;
  return false;
}

bool tensor_is_intermediate(const Cascade *c, int t) {
  return c->tensors[t].intermediate;
}

bool read_in_recurrence(const Cascade *c, int einsum, const Access *a) {
  int p = c->tensors[a->tensor].producer;
  return p >= 0 && c->recurrence[einsum] >= 0 &&
         c->recurrence[einsum] == c->recurrence[p];
}

static int edge_key(const Edge *e, EdgeKey by) {
  return by == EDGES_BY_PRODUCER ? e->producer
         : by == EDGES_BY_CONSUMER ? e->consumer
                                   : e->tensor;
}

EdgeIndex cascade_edge_index(const Cascade *c, EdgeKey by) {
  int nkeys = by == EDGES_BY_TENSOR ? c->ntensors : c->neinsums;
  EdgeIndex x = {xcalloc((size_t)nkeys + 2, sizeof *x.at),
                 xmalloc(((size_t)c->nedges + 1) * sizeof *x.ord)};
  for (int k = 0; k < c->nedges; k++) /* counts, one ahead */
    x.at[edge_key(&c->edges[k], by) + 2]++;
  for (int i = 0; i < nkeys; i++)
    x.at[i + 2] += x.at[i + 1];
  for (int k = 0; k < c->nedges; k++) /* a stable placement */
    x.ord[x.at[edge_key(&c->edges[k], by) + 1]++] = k;
  return x;
}

void edge_index_free(EdgeIndex *x) {
  free(x->at);
  free(x->ord);
  *x = (EdgeIndex){0};
}

bool edge_orders(const Cascade *c, const Edge *e) {
  return !e->lagged || c->recurrence[e->consumer] < 0 ||
         c->recurrence[e->consumer] != c->recurrence[e->producer];
}

int init_history_dim(const Einsum *ini) {
  if (ini->rhs->kind != EX_READ)
    return -1;
  const Access *a = ini->rhs->acc;
  int v = ini->out.idx[ini->out.cond_dim].var[0];
  for (int k = 0; k < a->n; k++)
    for (int j = 0; j < a->idx[k].nterms; j++)
      if (a->idx[k].var[j] == v)
        return k;
  return -1;
}

int init_state_source(const Cascade *c, int t, int *k) {
  const Einsum *ini = c->tensors[t].init;
  if (!ini || ini->rhs->kind != EX_READ)
    return -1;
  *k = init_history_dim(ini);
  return ini->rhs->acc->tensor;
}

static const char *const redop_names[] = {"sum", "max", "min", "prod"};
_Static_assert(sizeof redop_names / sizeof redop_names[0] == RED_COUNT,
               "a name per reduction");

bool redop_from_name(const char *name, RedOp *op) {
  for (int i = 0; i < RED_COUNT; i++)
    if (strcmp(redop_names[i], name) == 0) {
      *op = (RedOp)i;
      return true;
    }
  return false;
}

bool expr_is(const Expr *x, Op op) { return x->kind == EX_OP && x->op == op; }

bool expr_varies(const Expr *x) {
  if (!x)
    return false;
  return x->kind == EX_READ || x->kind == EX_VAR || expr_varies(x->a) ||
         expr_varies(x->b) || expr_varies(x->c);
}

VarSet expr_vars(const Expr *x) {
  if (!x)
    return 0;
  if (x->kind == EX_READ)
    return access_vars(x->acc);
  if (x->kind == EX_VAR)
    return VARSET_BIT(x->var);
  return expr_vars(x->a) | expr_vars(x->b) | expr_vars(x->c);
}

/* ---- the dependence graph ---- */

static Edge *find_edge(Cascade *c, int p, int q, int t) {
  for (int i = 0; i < c->nedges; i++)
    if (c->edges[i].producer == p && c->edges[i].consumer == q &&
        c->edges[i].tensor == t)
      return &c->edges[i];
  return NULL;
}

static void add_read(Cascade *c, int *cap, int consumer, const Access *a) {
  const Tensor *t = &c->tensors[a->tensor];
  if (t->producer < 0)
    return;
  Edge *e = find_edge(c, t->producer, consumer, a->tensor);
  if (!e) {
    Edge ne = {.producer = t->producer,
               .consumer = consumer,
               .tensor = a->tensor,
               .lagged = true};
    VEC_PUSH(c->edges, c->nedges, *cap, ne);
    e = &c->edges[c->nedges - 1];
  }
  if (e->nacc < 4)
    e->acc[e->nacc++] = a;
  e->lagged = e->lagged && access_lagged(a);
  e->windowed = e->windowed || access_windowed(a);
}

bool cascade_reaches(const Cascade *c, int from, int to) {
  return (c->reach[(size_t)from * (size_t)c->reach_words + (size_t)to / 64] >>
          (to % 64)) & 1u;
}

/* The transitive closure of the non-lagged edges, one bit row per Einsum:
 * a depth-first walk from each (so a cycle, reported by check_order, is
 * handled too). n^2/8 bytes: 12.5 MB for 10 000 Einsums. */
static void build_reach(Cascade *c) {
  int n = c->neinsums;
  c->reach_words = (n + 63) / 64;
  size_t words = (size_t)n * (size_t)c->reach_words + 1;
  c->reach = arena_alloc(&c->arena, words * sizeof(uint64_t));
  /* Successors through non-lagged edges: the edges by producer. */
  EdgeIndex out = cascade_edge_index(c, EDGES_BY_PRODUCER);
  int *stack = xmalloc(((size_t)c->nedges + (size_t)n + 1) * sizeof *stack);
  for (int from = 0; from < n; from++) {
    uint64_t *row = c->reach + (size_t)from * (size_t)c->reach_words;
    int top = 0;
    stack[top++] = from;
    row[from / 64] |= (uint64_t)1 << (from % 64);
    while (top > 0) {
      int x = stack[--top];
      for (int k = out.at[x]; k < out.at[x + 1]; k++) {
        const Edge *e = &c->edges[out.ord[k]];
        int y = e->consumer;
        if (!e->lagged && !((row[y / 64] >> (y % 64)) & 1u)) {
          row[y / 64] |= (uint64_t)1 << (y % 64);
          stack[top++] = y;
        }
      }
    }
  }
  free(stack);
  edge_index_free(&out);
}

/* The recurrences: the strongly connected components of the dependence
 * graph, lagged edges included, that hold a cycle (two Einsums or more, or
 * one reading its own earlier iteration). Kosaraju's two walks, without
 * recursion: finishing order forwards, then components backwards. */
static void find_recurrences(Cascade *c) {
  int n = c->neinsums, m = c->nedges;
  c->recurrence = arena_alloc(&c->arena, sizeof(int) * ((size_t)n + 1));
  /* Successors and predecessors: the edges by producer and by consumer,
   * each list in edge order. */
  EdgeIndex out = cascade_edge_index(c, EDGES_BY_PRODUCER),
            in = cascade_edge_index(c, EDGES_BY_CONSUMER);
  const int *fwd = out.at, *bwd = in.at;
  int *succ = xmalloc(((size_t)m + 1) * sizeof *succ);
  int *pred = xmalloc(((size_t)m + 1) * sizeof *pred);
  for (int i = 0; i < m; i++) {
    succ[i] = c->edges[out.ord[i]].consumer;
    pred[i] = c->edges[in.ord[i]].producer;
  }
  int *order = xmalloc(((size_t)n + 1) * sizeof *order);
  int *stack = xmalloc(((size_t)n + 1) * sizeof *stack);
  int *next = xcalloc((size_t)n + 1, sizeof *next); /* next successor */
  bool *seen = xcalloc((size_t)n + 1, sizeof *seen);
  int norder = 0;
  for (int r = 0; r < n; r++) {
    if (seen[r])
      continue;
    int top = 0;
    stack[top++] = r;
    seen[r] = true;
    next[r] = fwd[r];
    while (top > 0) {
      int x = stack[top - 1];
      if (next[x] < fwd[x + 1]) {
        int y = succ[next[x]++];
        if (!seen[y]) {
          seen[y] = true;
          next[y] = fwd[y];
          stack[top++] = y;
        }
      } else {
        order[norder++] = x;
        top--;
      }
    }
  }
  for (int i = 0; i < n; i++)
    c->recurrence[i] = -2; /* unassigned */
  int *members = xmalloc(((size_t)n + 1) * sizeof *members);
  for (int k = norder - 1; k >= 0; k--) {
    int r = order[k];
    if (c->recurrence[r] != -2)
      continue;
    int top = 0, nm = 0, first = r;
    stack[top++] = r;
    c->recurrence[r] = -3; /* in the component being collected */
    while (top > 0) {
      int x = stack[--top];
      members[nm++] = x;
      first = x < first ? x : first;
      for (int j = bwd[x]; j < bwd[x + 1]; j++)
        if (c->recurrence[pred[j]] == -2) {
          c->recurrence[pred[j]] = -3;
          stack[top++] = pred[j];
        }
    }
    bool cycle = nm > 1;
    for (int j = fwd[r]; !cycle && j < fwd[r + 1]; j++)
      cycle = succ[j] == r; /* reads its own earlier iteration */
    for (int j = 0; j < nm; j++)
      c->recurrence[members[j]] = cycle ? first : -1;
  }
  free(members);
  free(seen);
  free(next);
  free(stack);
  free(order);
  free(pred);
  free(succ);
  edge_index_free(&in);
  edge_index_free(&out);
}

/* Every read that orders its Einsums (edge_orders) comes after its
 * producer; a cycle is closed only by lagged reads. */
static bool check_order(Cascade *c, Diag *d) {
  bool ok = true;
  for (int i = 0; ok && i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    if (!edge_orders(c, e) || e->producer < e->consumer)
      continue;
    const Einsum *q = c->einsums[e->consumer];
    const Einsum *p = c->einsums[e->producer];
    const char *t = c->tensors[e->tensor].name;
    if (cascade_reaches(c, e->consumer, e->producer))
      diag_error(d, c->path, e->acc[0]->loc,
                 "cycle through %s: it is read here and depends on this "
                 "Einsum's result (%s, line %d) in the same iteration; only "
                 "an iterative rank (a read such as %s[..., i-1, ...]) may "
                 "close a cycle",
                 t, c->tensors[q->out.tensor].name, q->loc.line, t);
    else
      diag_error(d, c->path, e->acc[0]->loc,
                 "%s is read before the Einsum that produces it (line %d): "
                 "list Einsums in dependence order",
                 t, p->loc.line);
    ok = false;
  }
  return ok;
}

/* Does some read of T index coordinate DIM with anything but a plain
 * variable (a lag i-1, a window i+f-F+1), so that it may reach before the
 * start? */
static bool read_before_start(const Cascade *c, int t, int dim) {
  for (int i = 0; i < c->neinsums; i++) {
    const Einsum *e = c->einsums[i];
    for (int k = 0; k < e->nreads; k++)
      if (e->reads[k]->tensor == t && dim < e->reads[k]->n &&
          !e->reads[k]->idx[dim].plain)
        return true;
  }
  return false;
}

static bool check_inits(Cascade *c, Diag *d) {
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (!T->init)
      continue;
    if (T->producer < 0) {
      diag_error(d, c->path, T->init->loc,
                 "initialization of %s, which no Einsum produces: inputs need "
                 "no initialization",
                 T->name);
      return false;
    }
    if (!read_before_start(c, t, T->init->out.cond_dim)) {
      diag_error(d, c->path, T->init->loc,
                 "initialization of %s, which is never read before its start "
                 "(by a lagged read such as %s[..., i-1, ...] or a window)",
                 T->name, T->name);
      return false;
    }
    for (int k = 0; k < T->init->nreads; k++) {
      const Access *a = T->init->reads[k];
      const Tensor *src = &c->tensors[a->tensor];
      if (src->producer >= 0) {
        diag_error(d, c->path, a->loc,
                   "initialization of %s may read only inputs, but %s is "
                   "produced by the Einsum at line %d",
                   T->name, src->name, c->einsums[src->producer]->loc.line);
        return false;
      }
    }
  }
  return true;
}

bool cascade_finish(Cascade *c, Diag *d) {
  for (int i = 0; i < c->neinsums; i++) {
    Einsum *e = c->einsums[i];
    Tensor *t = &c->tensors[e->out.tensor];
    if (t->producer >= 0) {
      diag_error(d, c->path, e->out.loc,
                 "duplicate output: %s is already written by the Einsum at "
                 "line %d",
                 t->name, c->einsums[t->producer]->loc.line);
      return false;
    }
    t->producer = i;
  }
  int cap = 0;
  for (int i = 0; i < c->neinsums; i++) {
    Einsum *e = c->einsums[i];
    for (int k = 0; k < e->nreads; k++)
      add_read(c, &cap, i, e->reads[k]);
  }
  for (int i = 0; i < c->nedges; i++) {
    Tensor *T = &c->tensors[c->edges[i].tensor];
    T->nconsumers++;
    T->intermediate |= c->edges[i].consumer != T->producer;
  }
  build_reach(c);
  find_recurrences(c);
  if (!check_order(c, d) || !check_inits(c, d))
    return false;
  bool any_output = false;
  for (int t = 0; t < c->ntensors; t++)
    any_output = any_output || c->tensors[t].output;
  if (!any_output)
    for (int t = 0; t < c->ntensors; t++) {
      Tensor *T = &c->tensors[t];
      T->output = T->producer >= 0 && !T->intermediate;
    }
  return true;
}

/* ---- constant expressions ---- */

double expr_eval_const(const Expr *e, double (*sym)(void *ctx, int sym),
                       void *ctx) {
  switch (e->kind) {
  case EX_NUM:
    return e->num;
  case EX_SYM:
    return sym(ctx, e->sym);
  case EX_OP: {
    double v[OP_MAX_ARITY] = {0, 0, 0};
    const Expr *arg[OP_MAX_ARITY] = {e->a, e->b, e->c};
    for (int k = 0; k < op_arity(e->op); k++)
      v[k] = expr_eval_const(arg[k], sym, ctx);
    return op_apply(e->op, v[0], v[1], v[2]);
  }
  case EX_VAR:
  case EX_READ:
    break;
  }
  return NAN;
}
