/* bind.c — which unit runs each Einsum, and how fast (docs/model.md §2).
 *
 * The rule, by structure (the paper's §V-B mapped onto it): a matrix
 * operation (work.c: a sum-reduced product of two reused reads, weights or
 * activations) runs on the matrix unit. In a group with one, elementwise
 * work after the first runs there too (the 2D mode: "the GEMM result is
 * already on the 2D array"); elementwise work before it runs on the
 * feeder that broadcasts into the array. A group without one runs on the
 * vector unit (the 1D mode). A spec's `units:` (by role) or an
 * architecture's `binding:` (by unit) overrides the rule. A unit runs the
 * operation classes it has a rate for; its `epilogue` unit runs the rest
 * (a GPU's CUDA cores beside its tensor cores). */
#include "price.h"

#include <math.h>
#include <stdio.h>
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
 * vector unit, else the matrix unit. */
static int unit_of_role(const Arch *a, UnitRole r) {
  int u = arch_unit(a, r);
  if (u < 0)
    u = arch_unit(a, ROLE_VECTOR);
  if (u < 0)
    u = arch_unit(a, ROLE_MATRIX);
  return u;
}

int op_unit(const Arch *a, int u, OpClass k) {
  const Unit *U = &a->units[u];
  return U->rate[k] > 0 || U->epilogue < 0 ? u : U->epilogue;
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

void price_compute(const Ctx *x, int e, int u, EinsumEval *r) {
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
  r->compute_cycles = fmax(r->unit_cycles, r->epilogue_cycles);
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
 * units: role. -1: none; -2: an error (diag set). */
static int override_unit(Ctx *x, int e) {
  const Einsum *E = x->c->einsums[e];
  const char *out = x->c->tensors[E->out.tensor].name;
  for (int i = 0; i < x->a->nbindings; i++)
    if (strcmp(x->a->bindings[i].tensor, out) == 0)
      return x->a->bindings[i].unit;
  if (!E->unit)
    return -1;
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

/* The ideal design: the fastest of every unit able to run E, whatever
 * the rule would give it -- a plan may bind E anywhere (an architecture's
 * `binding:`, the search's binding by cost), so no design runs E faster. */
static int ideal_unit(const Ctx *x, int e, double mem) {
  int best = -1;
  double best_c = INFINITY;
  for (int u = 0; u < x->a->nunits; u++) {
    if (!unit_runs(x, e, u))
      continue;
    double c = cycles_on(x, e, u, mem);
    if (c < best_c) {
      best_c = c;
      best = u;
    }
  }
  return best;
}

bool bind_units(Ctx *x, const double *mem) {
  for (int e = 0; e < x->c->neinsums; e++) {
    int u = override_unit(x, e);
    if (u == -2)
      return false;
    if (u >= 0) {
      if (!unit_runs(x, e, u))
        return cannot_run(x, e, u);
    } else if (x->o.bound) {
      u = ideal_unit(x, e, mem ? mem[e] : 0);
    } else {
      UnitRole r = rule_role(x, x->plan->group_of[e], e);
      u = capable_unit(x, e, r);
      if (u < 0)
        return cannot_run(x, e, unit_of_role(x->a, r));
    }
    if (u < 0)
      return cannot_run(x, e, unit_of_role(x->a, ROLE_VECTOR));
    x->unit[e] = u;
  }
  return true;
}
