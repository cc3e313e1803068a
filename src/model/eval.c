/* eval.c — pricing one plan: the work and binding of every Einsum, each
 * group on the fusion level (group.c), the DRAM traffic, every level's
 * bytes (levels.c), the composition into a layer's latency (compose.c),
 * and energy. */
#include "price.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plan ---- */

/* The RI group holding the recurrence (its lagged edge): the region MARCA
 * and Geens et al. fuse. Every other Einsum stands alone, but another
 * recurrence's (fusion_plan_units keeps each whole). */
static Plan *recurrence_plan(const Cascade *c, const Shape *s,
                             const Pair *pairs) {
  Diag d = {0};
  Plan *ri = fusion_plan(c, s, pairs, ST_RI, STITCH_GREEDY, OBJ_GROUPS, &d);
  int region = -1;
  for (int i = 0; i < c->nedges; i++)
    if (!edge_orders(c, &c->edges[i]))
      region = ri->group_of[c->edges[i].consumer];
  int *unit = xcalloc((size_t)c->neinsums + 1, sizeof *unit);
  for (int i = 0; i < c->neinsums; i++)
    unit[i] = region >= 0 && ri->group_of[i] == region
                  ? ri->groups[region].einsums[0]
                  : i;
  Plan *p = fusion_plan_units(c, s, ST_UNFUSED, unit, &d);
  free(unit);
  plan_free(ri);
  return p;
}

Plan *model_plan(const Cascade *c, const Shape *s, const Pair *pairs,
                 Design des, const ModelOpts *o, Diag *d) {
  if (o->plan == PLAN_RECURRENCE)
    return recurrence_plan(c, s, pairs);
  if (o->plan == PLAN_ATTENTION)
    return flat_plan(c, s, d);
  Strategy st = design_strategy(des);
  return fusion_plan(c, s, pairs, st, st == ST_UNFUSED ? STITCH_GREEDY
                                                       : o->stitch,
                     OBJ_TRAFFIC, d);
}

/* ---- traffic ---- */

void ctx_index_xfers(Ctx *x) {
  const Plan *p = x->plan;
  int n = x->c->neinsums;
  free(x->xfer_ord);
  x->xfer_at = xrealloc(x->xfer_at, ((size_t)n + 2) * sizeof *x->xfer_at);
  x->xfer_ord = xmalloc(((size_t)p->nxfers + 1) * sizeof *x->xfer_ord);
  memset(x->xfer_at, 0, ((size_t)n + 2) * sizeof *x->xfer_at);
  for (int i = 0; i < p->nxfers; i++) /* counts, one ahead */
    x->xfer_at[p->xfers[i].einsum + 2]++;
  for (int e = 0; e < n; e++)
    x->xfer_at[e + 2] += x->xfer_at[e + 1];
  for (int i = 0; i < p->nxfers; i++) /* a stable placement */
    x->xfer_ord[x->xfer_at[p->xfers[i].einsum + 1]++] = i;
}

/* The ideal design's traffic: each input read once, by its first reader
 * in the cascade, as much as that reader touches; each output that is no
 * intermediate written once; the decode state (with state_io) read once,
 * by the first Einsum reaching before a start, for its own reach. No
 * design moves less at any Einsum, so no design is faster (§5). */
static void ideal_traffic(Ctx *x, EinsumEval *r) {
  const Cascade *c = x->c;
  bool *seen = xcalloc((size_t)c->ntensors + 1, sizeof *seen);
  double *st = xcalloc((size_t)c->ntensors + 1, sizeof *st);
  for (int e = 0; e < c->neinsums; e++) {
    const Einsum *E = c->einsums[e];
    for (int k = 0; k < E->nreads; k++) {
      int t = E->reads[k]->tensor;
      if (c->tensors[t].producer >= 0 || seen[t])
        continue;
      seen[t] = true;
      charge(x, &r[e], t, einsum_read_elems(x->s, e, t), false, false);
    }
    int out = E->out.tensor;
    if (c->tensors[out].output && !x->inter[out])
      charge(x, &r[e], out, shape_tensor_elems(x->s, out), true, false);
    if (!x->o.state_io)
      continue;
    memset(st, 0, ((size_t)c->ntensors + 1) * sizeof *st);
    einsum_state_elems(x->s, e, st);
    for (int t = 0; t < c->ntensors; t++)
      if (st[t] > 0 && !seen[t]) {
        seen[t] = true;
        charge(x, &r[e], t, st[t], false, true);
      }
    double w = state_write_elems(x->s, out); /* the next pass's state */
    if (w > 0)
      charge(x, &r[e], c->tensors[out].init->rhs->acc->tensor, w, true, true);
  }
  for (int e = 0; e < c->neinsums; e++) {
    r[e].ideal_intra = r[e].intra_read + r[e].intra_write;
    r[e].ideal_inter = 0;
  }
  free(seen);
  free(st);
}

/* ---- energy ---- */

/* The energy of Einsum evaluation R's operations of class K. */
static double op_pj(const Ctx *x, const EinsumEval *r, int k) {
  return r->work.ops[k] * x->a->op_pj[k];
}

/* R's energy: its operations' and its levels' (price_levels'). */
static void einsum_energy(const Ctx *x, EinsumEval *r) {
  double ops = 0;
  for (int k = 0; k < OPC_COUNT; k++)
    ops += op_pj(x, r, k);
  const LevelUse *u =
      &x->ev->use[(size_t)(r - x->ev->e) * (size_t)x->a->nlevels];
  r->energy_pj = ops;
  for (int l = 0; l < x->a->nlevels; l++)
    r->energy_pj += u[l].energy_pj;
}

/* R's operations' energy added to the layer's, by the unit that runs
 * each class. */
static void ops_total(const Ctx *x, const EinsumEval *r) {
  double ops = 0;
  for (int k = 0; k < OPC_COUNT; k++) {
    double e = op_pj(x, r, k);
    ops += e;
    x->ev->unit_energy[op_unit(x->a, r->unit, (OpClass)k)] += e;
  }
  x->ev->energy_ops += ops;
}

/* ---- the whole evaluation ---- */

/* Per Einsum, per read: the elements the read touches. */
static double **touched(const Cascade *c, const Shape *s) {
  double **t = xmalloc(((size_t)c->neinsums + 1) * sizeof *t);
  for (int e = 0; e < c->neinsums; e++) {
    const Einsum *E = c->einsums[e];
    t[e] = xmalloc(((size_t)E->nreads + 1) * sizeof **t);
    for (int k = 0; k < E->nreads; k++)
      t[e][k] = einsum_read_elems(s, e, E->reads[k]->tensor);
  }
  return t;
}

/* Every level's totals back to none used. */
static void eval_reset_levels(Eval *ev, const Arch *a) {
  for (int l = 0; l < a->nlevels; l++)
    ev->level[l] = (LevelUse){.instances = a->levels[l].instances,
                              .fits = true};
}

/* An evaluation with room for every Einsum of the cascade and NGROUPS
 * groups (the label and the plan are the caller's to set). */
static Eval *eval_new(const Ctx *x, int ngroups) {
  const Cascade *c = x->c;
  size_t nt = (size_t)c->ntensors + 1;
  Eval *ev = xcalloc(1, sizeof *ev);
  ev->design = x->d;
  ev->opts = x->o;
  ev->n = c->neinsums;
  ev->e = xcalloc((size_t)c->neinsums + 1, sizeof *ev->e);
  ev->ngroups = ngroups;
  ev->g = xcalloc((size_t)ngroups + 1, sizeof *ev->g);
  ev->tensor_read = xcalloc(nt, sizeof(double));
  ev->tensor_write = xcalloc(nt, sizeof(double));
  ev->unit_energy = xcalloc((size_t)x->a->nunits + 1, sizeof(double));
  /* Per Einsum and level: its reads and output, and room for the decode
   * state it moves. */
  int L = x->a->nlevels, most = 0;
  for (int e = 0; e < c->neinsums; e++)
    most = c->einsums[e]->nreads > most ? c->einsums[e]->nreads : most;
  ev->nlevels = L;
  ev->nslots = most + 4;
  ev->use = xcalloc((size_t)c->neinsums * (size_t)L + 1, sizeof *ev->use);
  ev->level = xcalloc((size_t)L, sizeof *ev->level);
  eval_reset_levels(ev, x->a);
  size_t nl = (size_t)c->neinsums * (size_t)L;
  ev->tuse = xmalloc((nl * (size_t)ev->nslots + 1) * sizeof *ev->tuse);
  ev->ntuse = xcalloc(nl + 1, sizeof *ev->ntuse);
  return ev;
}

/* Point X->a and X->glb at the architecture group G of X's plan is fused
 * at (the copies share the given one's units and clock: composing the
 * layer needs none of them). */
static void ctx_at_group(Ctx *x, int g) {
  x->a = x->group_at && x->group_at[g] ? x->group_at[g] : x->arch;
  x->glb = x->a->levels[x->a->fusion_level].capacity / x->a->word_bytes;
}

/* Group G's traffic (its Einsums evaluated in X->ev, their compute
 * known): the plan's geometry, or its mapping (achieved accounting). */
static bool price_group_traffic(Ctx *x, int g) {
  ctx_at_group(x, g);
  Eval *ev = x->ev;
  ev->g[g].level = x->a->fusion_level;
  bool achieved = x->o.accounting == ACCOUNT_ACHIEVED && !x->o.bound;
  GroupEval *ge = &ev->g[g];
  EinsumEval *e = &ev->e[ge->first];
  if (achieved)
    return price_group(x, g, e, ge);
  for (int i = 0; i < ge->n; i++) {
    member_restart(x, i, &e[i]);
    if (!x->o.bound)
      geometry_traffic(x, e[i].einsum, &e[i], true, true, NULL);
  }
  for (int i = 0; i < ge->n; i++) {
    e[i].fits = true; /* the algorithmic minimum maps nothing */
    snprintf(e[i].mapping, sizeof e[i].mapping, "-");
    level_set_mapping(x, &e[i], NULL, NULL);
    if (x->redo)
      x->redo[i] = true;
  }
  return true;
}

/* Every Einsum's traffic, in execution order. */
static bool price_traffic(Ctx *x) {
  for (int g = 0; g < x->ev->ngroups; g++)
    if (!price_group_traffic(x, g))
      return false;
  return true;
}

/* Einsum evaluation R, its traffic charged: every level's bytes, its
 * cycles and energy (the layer's totals are einsum_total's). */
static void price_einsum(Ctx *x, EinsumEval *r) {
  ctx_at_group(x, r->group);
  price_levels(x, r);
  bind_for_latency(x, r);
  if (r->compute_cycles >= r->mem_cycles)
    r->bound = -1; /* compute bounds it, not the slowest level */
  r->cycles = einsum_cycles(x, r, r->mem_cycles);
  einsum_energy(x, r);
}

/* Einsum evaluation R, priced, added to the layer's totals (in the order
 * of the Einsums, as every total is a sum over them). */
static void einsum_total(Ctx *x, const EinsumEval *r) {
  Eval *ev = x->ev;
  ctx_at_group(x, r->group);
  levels_total(x, r);
  ops_total(x, r);
  ev->read += r->read;
  ev->write += r->write;
  ev->inter += r->inter_read + r->inter_write;
  ev->intra += r->intra_read + r->intra_write;
  ev->ideal_inter += r->ideal_inter;
  ev->ideal_intra += r->ideal_intra;
  ev->ops += r->work.total;
}

double dram_bytes_per_cycle(const Arch *a) {
  return a->levels[0].bandwidth / a->clock_hz;
}

/* X's pricing of anything on A under O: the work, the intermediates and
 * what each read touches, for every Einsum (no plan yet). */
static void ctx_init(Ctx *x, const Cascade *c, const Shape *s, const Arch *a,
                     const Pair *pairs, Design d, const ModelOpts *o,
                     MapMemo *memo, Diag *diag) {
  *x = (Ctx){.c = c, .s = s, .a = a, .pairs = pairs, .d = d, .o = *o,
             .memo = memo, .diag = diag, .arch = a};
  x->word = a->word_bytes;
  x->glb = a->levels[a->fusion_level].capacity / a->word_bytes;
  x->bw = dram_bytes_per_cycle(a);
  size_t nt = (size_t)c->ntensors + 1, ne = (size_t)c->neinsums + 1;
  x->work = xcalloc(ne, sizeof *x->work);
  x->unit = xcalloc(ne, sizeof *x->unit);
  x->inter = xcalloc(nt, sizeof *x->inter);
  for (int t = 0; t < c->ntensors; t++)
    x->inter[t] = tensor_is_intermediate(c, t);
  for (int e = 0; e < c->neinsums; e++)
    model_work(c, s, c->einsums[e], &x->work[e]);
  x->touch = touched(c, s);
  x->held = held_scratch_new(c->ntensors);
  x->in = cascade_edge_index(c, EDGES_BY_CONSUMER);
}

static void ctx_free(Ctx *x) {
  held_scratch_free(x->held);
  for (int l = 0; x->at_level && l < x->arch->nlevels; l++)
    arch_free(x->at_level[l]);
  free(x->at_level);
  free(x->group_at);
  free(x->work);
  free(x->unit);
  free(x->inter);
  for (int e = 0; e < x->c->neinsums; e++)
    free(x->touch[e]);
  free(x->touch);
  free(x->xfer_at);
  free(x->xfer_ord);
  edge_index_free(&x->in);
}

/* The architecture each group of X's plan names as its fusion level
 * (X->group_at, X->at_level), each name checked against the loader's rule;
 * false (diag set) where one names no level that can be the fusion level
 * (a plan file's names are checked with their place by the command:
 * plan_levels_check). */
static bool ctx_group_levels(Ctx *x) {
  const Plan *p = x->plan;
  const Arch *a = x->arch;
  for (int g = 0; g < p->ngroups; g++) {
    const char *name = p->groups[g].level;
    if (!name[0])
      continue;
    int l = arch_level_named(a, name), at;
    if (l < 0 || arch_fusion_problem(a, l, &at) != FUSION_OK) {
      Buf why = {0};
      if (l >= 0)
        arch_fusion_why(a, l, &why);
      diag_error(x->diag, a->path, (Loc){0, 0}, "group %d's fusion level: "
                 "%s", g + 1, l >= 0 ? why.s : "no such memory level");
      buf_free(&why);
      return false;
    }
    if (l == a->fusion_level)
      continue;
    if (!x->at_level)
      x->at_level = xcalloc((size_t)a->nlevels, sizeof *x->at_level);
    if (!x->group_at)
      x->group_at = xcalloc((size_t)p->ngroups + 1, sizeof *x->group_at);
    if (!x->at_level[l])
      x->at_level[l] = arch_with_fusion_level(a, l);
    x->group_at[g] = x->at_level[l];
  }
  return true;
}

/* The ideal design's traffic (its units depend on it): into EV's Einsums
 * (at POS[e]), and each Einsum's DRAM cycles, returned. */
static double *bound_traffic(Ctx *x, const int *pos) {
  const Cascade *c = x->c;
  size_t ne = (size_t)c->neinsums + 1;
  EinsumEval *byid = xcalloc(ne, sizeof *byid);
  double *mem = xcalloc(ne, sizeof *mem);
  for (int e = 0; e < c->neinsums; e++)
    byid[e].einsum = e; /* its charges are recorded by Einsum */
  ideal_traffic(x, byid);
  for (int e = 0; e < c->neinsums; e++) {
    EinsumEval *r = &x->ev->e[pos[e]];
    byid[e].einsum = e;
    byid[e].group = r->group;
    byid[e].work = r->work;
    *r = byid[e];
    mem[e] = (r->read + r->write) / x->bw;
  }
  free(byid);
  return mem;
}

/* Lay the plan's groups out in execution order in X->ev: each Einsum's
 * position into POS. */
static void lay_out(Ctx *x, int *pos) {
  const Plan *plan = x->plan;
  Eval *ev = x->ev;
  int k = 0;
  for (int g = 0; g < plan->ngroups; g++) {
    ev->g[g].first = k;
    ev->g[g].n = plan->groups[g].n;
    for (int i = 0; i < plan->groups[g].n; i++) {
      int e = plan->groups[g].einsums[i];
      pos[e] = k;
      ev->e[k].einsum = e;
      ev->e[k].group = g;
      ev->e[k].work = x->work[e];
      k++;
    }
  }
}

/* The hand-off from fusion/: a plan's groups run every Einsum of C once. */
static bool covers_once(const Cascade *c, const Plan *p) {
  int *seen = xcalloc((size_t)c->neinsums + 1, sizeof *seen);
  bool ok = p->neinsums == c->neinsums;
  for (int g = 0; ok && g < p->ngroups; g++)
    for (int i = 0; ok && i < p->groups[g].n; i++) {
      int e = p->groups[g].einsums[i];
      ok = e >= 0 && e < c->neinsums && seen[e]++ == 0;
    }
  for (int e = 0; ok && e < c->neinsums; e++)
    ok = seen[e] == 1;
  free(seen);
  return ok;
}

/* The hand-off to the reports: DRAM's bytes are the intermediates' and
 * the rest's, every byte in one of the two. */
static bool parts_add_up(const Eval *ev) {
  double all = ev->read + ev->write, parts = ev->inter + ev->intra;
  return fabs(all - parts) <= 1e-9 * fmax(1, all);
}

Eval *model_eval_at_level(const Cascade *c, const Shape *s, const Arch *a,
                          const Pair *pairs, Design d, Plan *plan,
                          const ModelOpts *o, MapMemo *memo, Diag *diag) {
  if (!plan)
    return NULL;
  assert(covers_once(c, plan));
  Ctx x;
  ctx_init(&x, c, s, a, pairs, d, o, memo, diag);
  x.plan = plan;
  if (!ctx_group_levels(&x)) {
    ctx_free(&x);
    plan_free(plan); /* owned, as on every failure */
    return NULL;
  }
  ctx_index_xfers(&x);
  Eval *ev = eval_new(&x, plan->ngroups);
  ev->plan = plan;
  design_plan_label(d, plan, ev->label, sizeof ev->label);
  x.ev = ev;
  int *pos = xcalloc((size_t)c->neinsums + 1, sizeof *pos);
  lay_out(&x, pos);
  double *mem = x.o.bound ? bound_traffic(&x, pos) : NULL;
  bool ok = bind_units(&x, mem);
  for (int i = 0; ok && i < ev->n; i++)
    price_compute(&x, ev->e[i].einsum, x.unit[ev->e[i].einsum], &ev->e[i]);
  ok = ok && price_traffic(&x);
  for (int i = 0; ok && i < ev->n; i++) {
    price_einsum(&x, &ev->e[i]);
    einsum_total(&x, &ev->e[i]);
  }
  if (ok) {
    compose_layer(&x);
    ev->energy_pj =
        ev->energy_dram + ev->energy_glb + ev->energy_reg + ev->energy_ops;
    assert(parts_add_up(ev));
  }
  free(mem);
  free(pos);
  ctx_free(&x);
  if (!ok) {
    eval_free(ev);
    return NULL;
  }
  return ev;
}

/* The figure BY of group G of EV, then the one that breaks its ties. */
static void group_figure(const Eval *ev, int g, IdealBy by, double *k1,
                         double *k2) {
  const GroupEval *ge = &ev->g[g];
  double energy = 0, bytes = 0;
  for (int k = ge->first; k < ge->first + ge->n; k++) {
    energy += ev->e[k].energy_pj;
    bytes += ev->e[k].read + ev->e[k].write;
  }
  *k1 = by == IDEAL_BY_ENERGY ? energy : by == IDEAL_BY_TRAFFIC ? bytes
                                                                 : ge->cycles;
  *k2 = by == IDEAL_BY_TIME ? energy : ge->cycles;
}

/* Is A's figure BY (the layer's) below B's, ties broken as group_figure
 * breaks them? */
static bool ideal_below(const Eval *a, const Eval *b, IdealBy by) {
  double fa[3] = {a->seconds, a->energy_pj, a->read + a->write};
  double fb[3] = {b->seconds, b->energy_pj, b->read + b->write};
  int tie = by == IDEAL_BY_TIME ? 1 : 0;
  return fa[by] < fb[by] || (fa[by] == fb[by] && fa[tie] < fb[tie]);
}

Eval *model_ideal_least(const Cascade *c, const Shape *s, const Arch *a,
                        const Pair *pairs, Design d, Plan *plan,
                        const ModelOpts *o, IdealBy by, MapMemo *memo,
                        Diag *diag) {
  int *cand = xmalloc((size_t)a->nlevels * sizeof *cand);
  int n = arch_fusion_candidates(a, cand);
  if (!plan || n <= 1) {
    free(cand);
    return model_eval_at_level(c, s, a, pairs, d, plan, o, memo, diag);
  }
  Eval **at = xcalloc((size_t)n, sizeof *at);
  bool ok = true;
  for (int k = 0; ok && k < n; k++) {
    Arch *copy = arch_with_fusion_level(a, cand[k]);
    at[k] = model_eval_at_level(c, s, copy, pairs, d, plan_copy(c, plan), o,
                                memo, diag);
    arch_free(copy);
    ok = at[k] != NULL;
  }
  Eval *best = NULL;
  for (int g = 0; ok && g < plan->ngroups; g++) {
    int pick = 0; /* each group's least over the levels (docs/model.md §5) */
    for (int k = 1; k < n; k++) {
      double a1, a2, b1, b2;
      group_figure(at[k], g, by, &a1, &a2);
      group_figure(at[pick], g, by, &b1, &b2);
      if (a1 < b1 || (a1 == b1 && a2 < b2))
        pick = k;
    }
    snprintf(plan->groups[g].level, sizeof plan->groups[g].level, "%s",
             cand[pick] == a->fusion_level ? "" : a->levels[cand[pick]].name);
  }
  if (ok) {
    best = model_eval_at_level(c, s, a, pairs, d, plan, o, memo, diag);
    plan = NULL; /* owned by best */
    ok = best != NULL;
  }
  /* Under sequential composition the layer's figure is the sum of its
   * groups', so the mixed plan is the least; the pipelined bound's span is
   * the whole cascade's, and a single level's may be lower. */
  for (int k = 0; ok && k < n; k++)
    if (ideal_below(at[k], best, by)) {
      eval_free(best);
      best = at[k];
      at[k] = NULL;
    }
  for (int k = 0; k < n; k++)
    eval_free(at[k]);
  free(at);
  free(cand);
  if (!ok) {
    plan_free(plan);
    eval_free(best);
    return NULL;
  }
  return best;
}

Eval *model_eval_memo(const Cascade *c, const Shape *s, const Arch *a,
                      const Pair *pairs, Design d, Plan *plan,
                      const ModelOpts *o, MapMemo *memo, Diag *diag) {
  if (plan && o->bound && arch_fusion_candidates(a, NULL) > 1)
    return model_ideal_least(c, s, a, pairs, d, plan, o, IDEAL_BY_TIME, memo,
                             diag);
  return model_eval_at_level(c, s, a, pairs, d, plan, o, memo, diag);
}

/* ---- one group alone ---- */

GroupPricer *model_group_pricer_new(const Cascade *c, const Shape *s,
                                    const Arch *a, const Pair *pairs,
                                    Design d, const ModelOpts *o,
                                    MapMemo *memo, Diag *diag) {
  if (o->bound)
    return NULL; /* its units and its span are the whole cascade's */
  GroupPricer *gp = xcalloc(1, sizeof *gp);
  ctx_init(&gp->x, c, s, a, pairs, d, o, memo, diag);
  gp->x.ev = eval_new(&gp->x, c->neinsums);
  gp->x.nests = xcalloc((size_t)c->neinsums + 1, sizeof *gp->x.nests);
  gp->x.inner = xcalloc((size_t)c->neinsums + 1, sizeof *gp->x.inner);
  gp->x.bind_keep = bind_keep_new(&gp->x);
  gp->x.frame = frame_new();
  gp->x.no_totals = true;
  gp->g = -1;
  gp->computed = xcalloc((size_t)c->neinsums + 1, sizeof *gp->computed);
  gp->x.base = gp->computed;
  gp->x.redo = xcalloc((size_t)c->neinsums + 1, sizeof *gp->x.redo);
  return gp;
}

void model_group_pricer_free(GroupPricer *gp) {
  if (!gp)
    return;
  eval_free(gp->x.ev);
  nests_free(gp->x.nests, gp->x.c->neinsums);
  inner_free(gp->x.inner, gp->x.c->neinsums);
  bind_keep_free(gp->x.bind_keep);
  frame_free(gp->x.frame);
  trace_free(gp->x.trace);
  ctx_free(&gp->x);
  free(gp->computed);
  free(gp->x.redo);
  free(gp);
}

const Eval *model_group_bind(GroupPricer *gp, Plan *plan, int g) {
  Ctx *x = &gp->x;
  Eval *ev = x->ev;
  const Group *gr = &plan->groups[g];
  x->plan = plan;
  ctx_index_xfers(x);
  frame_forget(x->frame);
  gp->g = -1;
  ev->bind_capped = 0;
  for (int i = 0; i < gr->n; i++)
    ev->e[i] = (EinsumEval){.einsum = gr->einsums[i], .group = g,
                            .work = x->work[gr->einsums[i]]};
  if (!bind_group(x, g))
    return NULL;
  for (int i = 0; i < gr->n; i++) {
    price_compute(x, ev->e[i].einsum, x->unit[ev->e[i].einsum], &ev->e[i]);
    gp->computed[i] = ev->e[i];
  }
  gp->g = g;
  return ev;
}

const Eval *model_group_price(GroupPricer *gp, double start) {
  Ctx *x = &gp->x;
  Eval *ev = x->ev;
  int g = gp->g;
  if (g < 0)
    return NULL;
  /* Its members stay as the last price left them: each is priced again
   * from its binding where it changes (member_restart). */
  int n = x->plan->groups[g].n;
  trace_clear(x->trace);
  free(ev->g[g].spills);
  ev->g[g] = (GroupEval){.first = 0, .n = n};
  if (!price_group_traffic(x, g))
    return NULL;
  for (int i = 0; i < n; i++)
    if (x->redo[i])
      price_einsum(x, &ev->e[i]);
  compose_group(x, g, start);
  return ev;
}

Eval *model_eval_plan(const Cascade *c, const Shape *s, const Arch *a,
                      const Pair *pairs, Design d, Plan *plan,
                      const ModelOpts *o, Diag *diag) {
  return model_eval_memo(c, s, a, pairs, d, plan, o, NULL, diag);
}

Eval *model_eval(const Cascade *c, const Shape *s, const Arch *a,
                 const Pair *pairs, Design d, const ModelOpts *o,
                 Diag *diag) {
  Plan *p = model_plan(c, s, pairs, d, o, diag);
  return p ? model_eval_memo(c, s, a, pairs, d, p, o, NULL, diag) : NULL;
}

void eval_free(Eval *e) {
  if (!e)
    return;
  for (int g = 0; g < e->ngroups; g++)
    free(e->g[g].spills);
  plan_free(e->plan);
  free(e->e);
  free(e->g);
  free(e->tensor_read);
  free(e->tensor_write);
  free(e->unit_energy);
  free(e->use);
  free(e->level);
  free(e->tuse);
  free(e->ntuse);
  free(e->warnings);
  free(e);
}
