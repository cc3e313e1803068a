/* bind.c — which unit runs each Einsum, and how fast (docs/model.md §2).
 *
 * The rule, by structure (the paper's §V-B mapped onto it): a matrix
 * operation (work.c: a sum-reduced product of two reused reads, weights or
 * activations) runs on the matrix unit. In a group with one, elementwise
 * work after the first runs there too (the 2D mode: "the GEMM result is
 * already on the 2D array"); elementwise work before it runs on the
 * feeder that broadcasts into the array. A group without one runs on the
 * vector unit (the 1D mode). A spec's `units:` (by role) or an
 * architecture's `binding:` (by unit) overrides the rule; one that puts a
 * matrix operation off the matrix role, where another unit runs it
 * faster, is recorded with its cost (Eval.warnings). A unit runs the
 * operation classes it has a rate for; its `epilogue` unit runs the rest
 * (a GPU's CUDA cores beside its tensor cores).
 *
 * By cost (ModelOpts.bind, the search's policy): each group's Einsums that
 * no override fixes go to the units able to run them in the assignment
 * with the least compute time -- per Einsum under sequential composition,
 * by branch and bound under pipelining (docs/model.md §2). The ideal
 * design takes each Einsum's fastest able unit, a bound for both. */
#include "price.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double fold(double x) { return x >= 1 ? x / ceil(x - 1e-9) : x; }

static bool role_from_name(const char *name, UnitRole *r) {
  for (int k = 0; k < ROLE_COUNT; k++)
    if (strcmp(role_name((UnitRole)k), name) == 0) {
      *r = (UnitRole)k;
      return true;
    }
  return false;
}

/* The unit playing role R: the first with that role, else (no feeder) the
 * vector unit, else the matrix unit, else (an architecture of feeders
 * alone) the first unit: there is always one (arch.c refuses an empty
 * compute list), so a report of what it cannot run names a real unit. */
static int unit_of_role(const Arch *a, UnitRole r) {
  int u = arch_unit(a, r);
  if (u < 0)
    u = arch_unit(a, ROLE_VECTOR);
  if (u < 0)
    u = arch_unit(a, ROLE_MATRIX);
  return u < 0 ? 0 : u;
}

bool unit_runs(const Ctx *x, int e, int u) {
  const Unit *U = &x->a->units[u];
  const Unit *ep = U->epilogue >= 0 ? &x->a->units[U->epilogue] : NULL;
  for (int k = 0; k < OPC_COUNT; k++)
    if (x->work[e].ops[k] > 0 && !(U->rate[k] > 0) &&
        !(ep && ep->rate[k] > 0))
      return false;
  return true;
}

/* ---- speed on one unit ---- */

/* Extent of a class of variables indexing the same tensors (b and i: the
 * tokens) as one spatial dimension. */
static int spatial_dims(const Einsum *e, const Shape *s, double *dim) {
  int n = 0;
  VarSet done = 0;
  for (int v = 0; v < e->nvars; v++) {
    if (VARSET_HAS(done, v))
      continue;
    uint64_t mask_v = 0;
    for (int k = 0; k < e->nreads; k++)
      if (VARSET_HAS(access_vars(e->reads[k]), v))
        mask_v |= (uint64_t)1 << (k % 63);
    double ext = 1;
    for (int w = v; w < e->nvars; w++) {
      uint64_t mask_w = 0;
      for (int k = 0; k < e->nreads; k++)
        if (VARSET_HAS(access_vars(e->reads[k]), w))
          mask_w |= (uint64_t)1 << (k % 63);
      bool same_out = VARSET_HAS(e->out_vars, v) == VARSET_HAS(e->out_vars, w);
      if (mask_w == mask_v && same_out) {
        ext *= (double)s->size[e->vars[w].rank];
        done |= VARSET_BIT(w);
      }
    }
    dim[n++] = ext;
  }
  return n;
}

/* A matrix operation on a 2D array: the best pair of dimensions onto rows
 * and columns. */
static double util_2d(const Ctx *x, int e, const Unit *u) {
  double dim[IR_MAX_VARS];
  int n = spatial_dims(x->c->einsums[e], x->s, dim);
  double best = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (i != j) {
        double u2 = fold(dim[i] / u->rows) * fold(dim[j] / u->cols);
        best = fmax(best, u2);
      }
  return best > 0 ? best : fold(x->work[e].parallel / u->pes);
}

/* Steps to combine P partial results over the unit's network. */
static double combine_steps(RedNet net, double p) {
  if (p <= 1)
    return 0;
  return net == REDNET_TREE ? ceil(log2(p)) : p - 1;
}

/* Cycles of the ops of classes in MASK on unit U at utilization UTIL. */
static double op_cycles(const Work *w, const Unit *u, double util,
                        const bool *mask) {
  double cyc = 0;
  for (int k = 0; k < OPC_COUNT; k++)
    if (mask[k] && w->ops[k] > 0)
      cyc += w->ops[k] / (u->pes * util * u->rate[k]);
  return cyc;
}

static void compute_on(const Ctx *x, int e, int u, EinsumEval *r) {
  const Work *w = &x->work[e];
  const Unit *U = &x->a->units[u];
  bool main_ops[OPC_COUNT], epi_ops[OPC_COUNT];
  bool any_epi = false;
  for (int k = 0; k < OPC_COUNT; k++) {
    main_ops[k] = U->rate[k] > 0;
    epi_ops[k] = !main_ops[k] && w->ops[k] > 0;
    any_epi = any_epi || epi_ops[k];
  }
  r->unit = u;
  r->spread = 1;
  if (U->role == ROLE_MATRIX && w->matrix) {
    r->util = util_2d(x, e, U);
    r->unit_cycles = op_cycles(w, U, r->util, main_ops);
  } else {
    /* One output per PE; a reduction with fewer outputs than PEs may
     * spread each over p PEs that combine their partial results over the
     * unit's network: cycles(p) = work / (outputs x p) + steps(p). */
    double outs = fmax(w->parallel, 1);
    double pmax = U->reduction == REDNET_NONE
                      ? 1
                      : fmin(floor(U->pes / outs), w->reduced);
    double cand[64];
    int nc = 0;
    for (double p = 1; p < pmax && nc < 62; p *= 2)
      cand[nc++] = p;
    cand[nc++] = fmax(pmax, 1);
    double best_p = 1, best = INFINITY;
    for (int i = 0; i < nc; i++) {
      double util = fold(outs * cand[i] / U->pes);
      double cyc = op_cycles(w, U, util, main_ops) +
                   combine_steps(U->reduction, cand[i]);
      if (cyc < best) {
        best = cyc;
        best_p = cand[i];
      }
    }
    r->spread = best_p;
    r->util = fold(outs * best_p / U->pes);
    r->unit_cycles = best;
  }
  r->epilogue = any_epi ? U->epilogue : -1;
  r->epilogue_cycles = 0;
  if (r->epilogue >= 0) {
    const Unit *E = &x->a->units[r->epilogue];
    r->epilogue_cycles =
        op_cycles(w, E, fold(fmax(w->parallel, 1) / E->pes), epi_ops);
  }
  gpu_compute(x, e, r); /* a GPU's waves and efficiencies (gpu.c) */
}

/* What price_compute sets in an EinsumEval (the unit aside), kept
 * (BindKeep): one list, for the struct and the copies both ways. */
#define COMPUTE_KEPT(X)                                                      \
  X(int, epilogue)                                                           \
  X(double, spread)                                                          \
  X(double, util)                                                            \
  X(double, unit_cycles)                                                     \
  X(double, epilogue_cycles)                                                 \
  X(double, compute_cycles)

typedef struct Compute {
  bool set;
#define X(type, name) type name;
  COMPUTE_KEPT(X)
#undef X
} Compute;

/* What binding finds for an Einsum whatever its group: its compute on
 * each unit and the units that can run it (Ctx.bind_keep). */
/* One block: the header, then ON (per Einsum and unit: e * nunits + u),
 * then CANDS (per Einsum; n -1: not yet found). */
typedef struct Cands {
  int n;
  int unit[BIND_MAX_CAND];
} Cands;

struct BindKeep {
  Compute *on;
  Cands *cands;
};

BindKeep *bind_keep_new(const Ctx *x) {
  size_t ne = (size_t)x->c->neinsums + 1, non = ne * (size_t)x->a->nunits;
  _Static_assert(sizeof(BindKeep) % _Alignof(Compute) == 0 &&
                     sizeof(Compute) % _Alignof(Cands) == 0,
                 "the block's parts stay aligned");
  BindKeep *k =
      xcalloc(1, sizeof *k + non * sizeof(Compute) + ne * sizeof(Cands));
  k->on = (Compute *)(k + 1);
  k->cands = (Cands *)(k->on + non);
  for (size_t e = 0; e < ne; e++)
    k->cands[e].n = -1;
  return k;
}

void bind_keep_free(BindKeep *k) { free(k); }

void price_compute(const Ctx *x, int e, int u, EinsumEval *r) {
  Compute *k =
      x->bind_keep
          ? &x->bind_keep->on[(size_t)e * (size_t)x->a->nunits + (size_t)u]
          : NULL;
#define KEEP(type, name) k->name = r->name;
#define TAKE(type, name) r->name = k->name;
  if (!k || !k->set) {
    compute_on(x, e, u, r);
    if (k) {
      k->set = true;
      COMPUTE_KEPT(KEEP)
    }
    return;
  }
  r->unit = u;
  COMPUTE_KEPT(TAKE)
#undef KEEP
#undef TAKE
}

/* ---- the rule ---- */

/* The role the rule gives Einsum E in group G. */
static UnitRole rule_role(const Ctx *x, int g, int e) {
  if (x->work[e].matrix)
    return ROLE_MATRIX;
  if (x->o.bind_alone)
    return ROLE_VECTOR;
  const Group *gr = &x->plan->groups[g];
  int first = -1;
  for (int i = 0; i < gr->n && first < 0; i++)
    if (x->work[gr->einsums[i]].matrix)
      first = i;
  if (first < 0)
    return ROLE_VECTOR;
  for (int i = 0; i < gr->n; i++)
    if (gr->einsums[i] == e)
      return i > first ? ROLE_MATRIX : ROLE_FEEDER;
  return ROLE_VECTOR;
}

/* Report that unit U (with its epilogue) cannot run Einsum E. */
static bool cannot_run(Ctx *x, int e, int u) {
  const Cascade *c = x->c;
  const Unit *U = &x->a->units[u];
  const Unit *ep = U->epilogue >= 0 ? &x->a->units[U->epilogue] : NULL;
  const Einsum *E = c->einsums[e];
  int k = 0;
  while (k < OPC_COUNT - 1 &&
         !(x->work[e].ops[k] > 0 && !(U->rate[k] > 0) &&
           !(ep && ep->rate[k] > 0)))
    k++;
  diag_error(x->diag, x->a->path, U->loc,
             "unit %s cannot run the %s operations of Einsum %s (%s:%d), and "
             "no other unit of %s that can is allowed to: give it a %s rate "
             "or an epilogue unit, or bind %s elsewhere",
             U->name, opclass_name((OpClass)k),
             c->tensors[E->out.tensor].name, c->path, E->loc.line,
             x->a->name, opclass_name((OpClass)k),
             c->tensors[E->out.tensor].name);
  return false;
}

/* An override of E's unit: the architecture's binding, else the spec's
 * units: role, with where it is written (FILE, AT; may be NULL). -1:
 * none; -2: an error (diag set). */
static int override_unit(Ctx *x, int e, const char **file, Loc *at) {
  const Einsum *E = x->c->einsums[e];
  const char *out = x->c->tensors[E->out.tensor].name;
  for (int i = 0; i < x->a->nbindings; i++)
    if (strcmp(x->a->bindings[i].tensor, out) == 0) {
      if (file) {
        *file = x->a->path;
        *at = x->a->bindings[i].loc;
      }
      return x->a->bindings[i].unit;
    }
  if (!E->unit)
    return -1;
  if (file) {
    *file = x->c->path;
    *at = E->unit_loc;
  }
  UnitRole r;
  if (!role_from_name(E->unit, &r) || arch_unit(x->a, r) < 0) {
    diag_error(x->diag, x->c->path, E->unit_loc,
               "units: %s asks for a %s unit, which %s (%s) does not have",
               out, E->unit, x->a->name, x->a->path);
    return -2;
  }
  return arch_unit(x->a, r);
}

/* The unit for role R that can run E: R's own, else the first of the
 * vector, feeder and matrix units that can. -1 if none. */
static int capable_unit(const Ctx *x, int e, UnitRole r) {
  int u = unit_of_role(x->a, r);
  if (u >= 0 && unit_runs(x, e, u)) {
    /* A unit that runs none of E's operations hands all of them to its
     * epilogue: E runs there (elementwise work after a tensor-core GEMM
     * runs on the CUDA cores). */
    const Unit *U = &x->a->units[u];
    bool any = false;
    for (int k = 0; k < OPC_COUNT; k++)
      any = any || (x->work[e].ops[k] > 0 && U->rate[k] > 0);
    return any || U->epilogue < 0 ? u : U->epilogue;
  }
  static const UnitRole order[] = {ROLE_VECTOR, ROLE_FEEDER, ROLE_MATRIX};
  for (int i = 0; i < 3; i++) {
    int v = arch_unit(x->a, order[i]);
    if (v >= 0 && unit_runs(x, e, v))
      return v;
  }
  return -1;
}

/* Cycles of E on unit U with MEM cycles of DRAM traffic, as composed. */
static double cycles_on(const Ctx *x, int e, int u, double mem) {
  EinsumEval r = {0};
  price_compute(x, e, u, &r);
  double c = r.compute_cycles;
  return (x->o.no_overlap ? c + mem : fmax(c, mem)) +
         x->a->units[u].pipeline;
}

/* The units that can run E as its own: every unit with a rate for some
 * of its operations that can run the rest (on its epilogue), or with no
 * epilogue to hand them to. A unit that runs none of E's operations hands
 * them all to its epilogue, which is the candidate then. Returns how many
 * (at most BIND_MAX_CAND). */
static int candidates(const Ctx *x, int e, int *out) {
  BindKeep *keep = x->bind_keep;
  if (keep && keep->cands[e].n >= 0) {
    memcpy(out, keep->cands[e].unit, (size_t)keep->cands[e].n * sizeof *out);
    return keep->cands[e].n;
  }
  int n = 0;
  for (int u = 0; u < x->a->nunits && n < BIND_MAX_CAND; u++) {
    const Unit *U = &x->a->units[u];
    bool any = false;
    for (int k = 0; k < OPC_COUNT; k++)
      any = any || (x->work[e].ops[k] > 0 && U->rate[k] > 0);
    if (unit_runs(x, e, u) && (any || U->epilogue < 0))
      out[n++] = u;
  }
  if (keep) {
    keep->cands[e].n = n;
    memcpy(keep->cands[e].unit, out, (size_t)n * sizeof *out);
  }
  return n;
}

/* The ideal design: the fastest unit able to run E (any plan bound by
 * cost may give it any of them). */
static int ideal_unit(const Ctx *x, int e, double mem) {
  int cand[BIND_MAX_CAND];
  int n = candidates(x, e, cand);
  int best = -1;
  double best_c = INFINITY;
  for (int i = 0; i < n; i++) {
    double c = cycles_on(x, e, cand[i], mem);
    if (c < best_c) {
      best_c = c;
      best = cand[i];
    }
  }
  return best;
}

/* ---- binding by cost ---- */

/* One way to run a free Einsum: on UNIT, busy CYC[0] on array ARR[0] and
 * CYC[1] on ARR[1] (its epilogue's; -1: none), with FILL cycles of
 * pipeline, SEQ cycles one after another (compute + fill). */
typedef struct Choice {
  int unit, arr[2];
  double cyc[2], fill, seq;
} Choice;

typedef struct Free {
  int e, n;
  Choice c[BIND_MAX_CAND];
  double least; /* the least busy time it adds, over its choices */
} Free;

/* Does A do no better than B on any figure (same arrays)? */
static bool dominated(const Choice *a, const Choice *b) {
  return a->arr[0] == b->arr[0] && a->arr[1] == b->arr[1] &&
         b->cyc[0] <= a->cyc[0] && b->cyc[1] <= a->cyc[1] &&
         b->fill <= a->fill;
}

/* E's choices, the dominated ones dropped (a mode of the array that is
 * slower than another mode of it: the same PEs, longer). */
static void free_of(const Ctx *x, int e, Free *f) {
  int cand[BIND_MAX_CAND];
  int n = candidates(x, e, cand);
  f->e = e;
  f->n = 0;
  f->least = INFINITY;
  for (int i = 0; i < n; i++) {
    EinsumEval r = {0};
    price_compute(x, e, cand[i], &r);
    const Unit *U = &x->a->units[cand[i]];
    Choice c = {cand[i],
                {arch_array_of(x->a, cand[i]),
                 r.epilogue >= 0 ? arch_array_of(x->a, r.epilogue) : -1},
                {r.unit_cycles, r.epilogue >= 0 ? r.epilogue_cycles : 0},
                U->pipeline,
                r.compute_cycles + U->pipeline};
    bool drop = false;
    for (int j = 0; j < f->n && !drop; j++)
      drop = dominated(&c, &f->c[j]);
    for (int j = 0; !drop && j < f->n;)
      if (dominated(&f->c[j], &c))
        f->c[j] = f->c[--f->n];
      else
        j++;
    if (!drop)
      f->c[f->n++] = c;
  }
  for (int i = 0; i < f->n; i++)
    f->least = fmin(f->least, f->c[i].cyc[0] + f->c[i].cyc[1]);
}

/* Sequential composition: a group's compute time is the sum of its
 * Einsums', so each takes the unit with the least compute + fill (ties:
 * the rule's, already in x->unit). Exact. */
static void bind_sequential(Ctx *x, const Free *f, int n) {
  for (int i = 0; i < n; i++) {
    int e = f[i].e;
    double now = INFINITY;
    for (int k = 0; k < f[i].n; k++)
      if (f[i].c[k].unit == x->unit[e])
        now = f[i].c[k].seq;
    for (int k = 0; k < f[i].n; k++)
      if (f[i].c[k].seq < now * (1 - 1e-12)) {
        now = f[i].c[k].seq;
        x->unit[e] = f[i].c[k].unit;
      }
  }
}
/* Pipelined composition: a group takes as long as its busiest array plus
 * the longest fill (and DRAM, which no binding changes): a makespan over
 * unrelated machines. Branch and bound over the assignments, the largest
 * Einsums first, from the better of the rule's assignment and a greedy
 * one; a partial assignment is cut when its busiest array, or the average
 * over the arrays with every remaining Einsum at its least, already
 * reaches the best found. Exact within BIND_BUDGET nodes a group; past
 * that the best found stands (counted in Eval.bind_capped). */
enum { BIND_BUDGET = 1 << 16 };

typedef struct Bnb {
  const Free *f;
  int n, narrays;
  double *busy; /* per unit index; only arrays (mode_of < 0) grow */
  double *rest; /* rest[i]: the least busy time f[i..n) add */
  int *pick, *best_pick;
  double best;
  long nodes;
} Bnb;

static double top_busy(const Bnb *b, int nunits) {
  double m = 0;
  for (int u = 0; u < nunits; u++)
    m = fmax(m, b->busy[u]);
  return m;
}

static void branch(Bnb *b, int nunits, int i, double fill, double sum) {
  if (++b->nodes > BIND_BUDGET)
    return;
  double cut = b->best * (1 - 1e-12);
  double top = top_busy(b, nunits);
  if (top + fill >= cut || (sum + b->rest[i]) / b->narrays + fill >= cut)
    return;
  if (i == b->n) {
    b->best = top + fill;
    memcpy(b->best_pick, b->pick, (size_t)b->n * sizeof *b->pick);
    return;
  }
  for (int k = 0; k < b->f[i].n; k++) {
    const Choice *c = &b->f[i].c[k];
    double old0 = b->busy[c->arr[0]];
    double old1 = c->arr[1] >= 0 ? b->busy[c->arr[1]] : 0;
    b->busy[c->arr[0]] += c->cyc[0];
    if (c->arr[1] >= 0)
      b->busy[c->arr[1]] += c->cyc[1];
    b->pick[i] = k;
    branch(b, nunits, i + 1, fmax(fill, c->fill), sum + c->cyc[0] + c->cyc[1]);
    if (c->arr[1] >= 0)
      b->busy[c->arr[1]] = old1;
    b->busy[c->arr[0]] = old0;
  }
}

/* Add Einsum E's compute on unit U to BUSY (per array); its fill. */
static double add_busy(const Ctx *x, int e, int u, double *busy) {
  EinsumEval r = {0};
  price_compute(x, e, u, &r);
  busy[arch_array_of(x->a, u)] += r.unit_cycles;
  if (r.epilogue >= 0)
    busy[arch_array_of(x->a, r.epilogue)] += r.epilogue_cycles;
  return x->a->units[u].pipeline;
}

/* The greedy assignment (each Einsum, largest first, where the span grows
 * least) into B->pick, and its span; BUSY and FILL start from the fixed
 * Einsums'. */
static double greedy(Bnb *b, int nunits, const double *busy0, double fill) {
  memcpy(b->busy, busy0, (size_t)nunits * sizeof *b->busy);
  for (int i = 0; i < b->n; i++) {
    double best = INFINITY;
    for (int k = 0; k < b->f[i].n; k++) {
      const Choice *c = &b->f[i].c[k];
      double t0 = b->busy[c->arr[0]] + c->cyc[0];
      double t1 = c->arr[1] >= 0 ? b->busy[c->arr[1]] + c->cyc[1] : 0;
      double v = fmax(top_busy(b, nunits), fmax(t0, t1)) +
                 fmax(fill, c->fill);
      if (v < best) {
        best = v;
        b->pick[i] = k;
      }
    }
    const Choice *c = &b->f[i].c[b->pick[i]];
    b->busy[c->arr[0]] += c->cyc[0];
    if (c->arr[1] >= 0)
      b->busy[c->arr[1]] += c->cyc[1];
    fill = fmax(fill, c->fill);
  }
  return top_busy(b, nunits) + fill;
}

static int by_least(const void *a, const void *b) {
  double x = ((const Free *)a)->least, y = ((const Free *)b)->least;
  return (x < y) - (x > y);
}

/* Bind F's N Einsums (sorted here) by branch and bound; BUSY0 and FILL
 * are the fixed Einsums' (and the rule's span RULE is the first best). */
static void bind_pipelined(Ctx *x, Free *f, int n, const double *busy0,
                           double fill, double rule) {
  int nu = x->a->nunits;
  qsort(f, (size_t)n, sizeof *f, by_least);
  Bnb b = {.f = f, .n = n, .best = rule};
  b.busy = xcalloc((size_t)nu + 1, sizeof *b.busy);
  b.rest = xcalloc((size_t)n + 1, sizeof *b.rest);
  b.pick = xcalloc((size_t)n + 1, sizeof *b.pick);
  b.best_pick = xcalloc((size_t)n + 1, sizeof *b.best_pick);
  for (int u = 0; u < nu; u++)
    b.narrays += x->a->units[u].mode_of < 0;
  for (int i = n - 1; i >= 0; i--)
    b.rest[i] = b.rest[i + 1] + f[i].least;
  bool found = false;
  double g = greedy(&b, nu, busy0, fill);
  if (g < b.best * (1 - 1e-12)) {
    b.best = g;
    memcpy(b.best_pick, b.pick, (size_t)n * sizeof *b.pick);
    found = true;
  }
  double rule_best = b.best, sum0 = 0;
  memcpy(b.busy, busy0, (size_t)nu * sizeof *b.busy);
  for (int u = 0; u < nu; u++)
    sum0 += busy0[u];
  branch(&b, nu, 0, fill, sum0);
  found = found || b.best < rule_best;
  if (b.nodes > BIND_BUDGET && x->ev)
    x->ev->bind_capped++;
  for (int i = 0; found && i < n; i++)
    x->unit[f[i].e] = f[i].c[b.best_pick[i]].unit;
  free(b.busy);
  free(b.rest);
  free(b.pick);
  free(b.best_pick);
}

/* Bind group G's free Einsums (not FIXED by an override) by cost; the
 * rule's units are in x->unit. */
static void bind_group_cost(Ctx *x, int g, const bool *fixed) {
  const Group *gr = &x->plan->groups[g];
  int nu = x->a->nunits;
  Free *f = xmalloc(((size_t)gr->n + 1) * sizeof *f);
  double *busy0 = xcalloc((size_t)nu + 1, sizeof *busy0);
  double *rule = xcalloc((size_t)nu + 1, sizeof *rule);
  double fill = 0, rule_fill = 0;
  int n = 0;
  for (int i = 0; i < gr->n; i++) {
    int e = gr->einsums[i];
    if (fixed[e]) {
      fill = fmax(fill, add_busy(x, e, x->unit[e], busy0));
      continue;
    }
    rule_fill = fmax(rule_fill, add_busy(x, e, x->unit[e], rule));
    free_of(x, e, &f[n]);
    n += f[n].n > 0;
  }
  double rule_span = 0;
  for (int u = 0; u < nu; u++)
    rule_span = fmax(rule_span, busy0[u] + rule[u]);
  if (x->o.compose == COMPOSE_SEQUENTIAL)
    bind_sequential(x, f, n);
  else if (n > 0)
    bind_pipelined(x, f, n, busy0, fill, rule_span + fmax(fill, rule_fill));
  free(f);
  free(busy0);
  free(rule);
}

/* Bind Einsum E by an override, the ideal's fastest unit (MEM: its DRAM
 * cycles) or the rule; FIXED[E] says whether an override did. False (diag
 * set) when the unit cannot run it. */
static bool bind_einsum(Ctx *x, int e, const double *mem, bool *fixed) {
  int u = override_unit(x, e, NULL, NULL);
  fixed[e] = u >= 0;
  bool ok = true;
  if (u == -2) {
    ok = false;
  } else if (u >= 0) {
    if (!unit_runs(x, e, u))
      ok = cannot_run(x, e, u);
  } else if (x->o.bound) {
    u = ideal_unit(x, e, mem ? mem[e] : 0);
  } else {
    UnitRole r = rule_role(x, x->plan->group_of[e], e);
    u = capable_unit(x, e, r);
    if (u < 0)
      ok = cannot_run(x, e, unit_of_role(x->a, r));
  }
  if (ok && u < 0)
    ok = cannot_run(x, e, unit_of_role(x->a, ROLE_VECTOR));
  if (ok)
    x->unit[e] = u;
  return ok;
}

/* If an override binds E, a matrix operation, to a unit without the
 * matrix role while another unit runs it faster, say what it costs
 * (Eval.warnings). */
static void warn_binding(Ctx *x, int e) {
  const char *file;
  Loc at;
  int u = override_unit(x, e, &file, &at);
  if (u < 0 || !x->work[e].matrix || x->a->units[u].role == ROLE_MATRIX)
    return;
  int best = ideal_unit(x, e, 0);
  double cyc = cycles_on(x, e, u, 0);
  double best_cyc = best >= 0 ? cycles_on(x, e, best, 0) : cyc;
  if (!(best_cyc < cyc))
    return; /* no unit runs it faster: the binding costs nothing */
  Eval *ev = x->ev;
  ev->warnings =
      xrealloc(ev->warnings, (size_t)(ev->nwarnings + 1) * sizeof *ev->warnings);
  ev->warnings[ev->nwarnings++] =
      (BindWarning){e, u, best, cyc, best_cyc, file, at};
}

/* Here rather than in compose.c, which composes these: the latency
 * binding below weighs them too, and compose.c calls bind.c, not back. */
double einsum_cycles(const Ctx *x, const EinsumEval *r, double mem) {
  return (x->o.no_overlap ? r->compute_cycles + mem
                          : fmax(r->compute_cycles, mem)) +
         x->a->units[r->unit].pipeline;
}

int latency_candidates(Ctx *x, int e, int *out) {
  if (x->o.bound || x->o.bind != BIND_COST ||
      x->o.compose != COMPOSE_SEQUENTIAL)
    return -1;
  if (override_unit(x, e, NULL, NULL) != -1)
    return -1; /* bound by the architecture or the spec */
  return candidates(x, e, out);
}

void bind_for_latency(Ctx *x, EinsumEval *r) {
  int e = r->einsum;
  int cand[BIND_MAX_CAND];
  int n = latency_candidates(x, e, cand);
  if (n < 0)
    return;
  double now = einsum_cycles(x, r, r->mem_cycles);
  for (int k = 0; k < n; k++) {
    if (cand[k] == r->unit)
      continue;
    EinsumEval t = *r;
    price_compute(x, e, cand[k], &t);
    double cyc = einsum_cycles(x, &t, t.mem_cycles);
    if (latency_rebinds(cyc, now)) {
      now = cyc;
      *r = t;
    }
  }
  x->unit[e] = r->unit;
}

bool bind_units(Ctx *x, const double *mem) {
  bool *fixed = xcalloc((size_t)x->c->neinsums + 1, sizeof *fixed);
  bool ok = true;
  for (int e = 0; ok && e < x->c->neinsums; e++)
    ok = bind_einsum(x, e, mem, fixed);
  for (int e = 0; ok && e < x->c->neinsums; e++)
    if (fixed[e])
      warn_binding(x, e);
  if (ok && x->o.bind == BIND_COST && !x->o.bound)
    for (int g = 0; g < x->plan->ngroups; g++)
      bind_group_cost(x, g, fixed);
  free(fixed);
  return ok;
}

bool bind_group(Ctx *x, int g) {
  const Group *gr = &x->plan->groups[g];
  bool *fixed = xcalloc((size_t)x->c->neinsums + 1, sizeof *fixed);
  bool ok = !x->o.bound; /* the ideal binds knowing every Einsum's DRAM */
  for (int i = 0; ok && i < gr->n; i++)
    ok = bind_einsum(x, gr->einsums[i], NULL, fixed);
  if (ok && x->o.bind == BIND_COST)
    bind_group_cost(x, g, fixed);
  free(fixed);
  return ok;
}
