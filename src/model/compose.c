/* compose.c — Einsums composed into a group's and a layer's latency:
 * one after another, or pipelined across the units (§VI "parallel
 * pipelining"), and the ideal design's lower bound: its units checked
 * against each Einsum's whole memory time, and the pipelined bound
 * (docs/model.md §5). */
#include "price.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The units a pipelined span counts on the stack: every shipped
 * architecture has a few; a file with more counts them on the heap. The
 * span is taken for every trial of every tile choice and every bill's
 * time, where an allocation each cost a quarter of the time. */
enum { SPAN_UNITS = 16 };

/* Parallel pipelining: every unit and the DRAM channel at once; the
 * group takes as long as its busiest resource. MEM: each Einsum's memory
 * time, or NULL for their own (mem_cycles). */
static double pipelined_span(const Arch *a, const EinsumEval *ev, int n,
                             const double *mem) {
  double own[SPAN_UNITS];
  double *busy = a->nunits <= SPAN_UNITS
                     ? memset(own, 0, sizeof own)
                     : xcalloc((size_t)a->nunits, sizeof *busy);
  double fill = 0, dram = 0, span = 0;
  for (int i = 0; i < n; i++) {
    busy[arch_array_of(a, ev[i].unit)] += ev[i].unit_cycles;
    if (ev[i].epilogue >= 0)
      busy[arch_array_of(a, ev[i].epilogue)] += ev[i].epilogue_cycles;
    fill = fmax(fill, a->units[ev[i].unit].pipeline);
    dram += mem ? mem[i] : ev[i].mem_cycles;
  }
  span = dram;
  for (int u = 0; u < a->nunits; u++)
    span = fmax(span, busy[u]);
  if (busy != own)
    free(busy);
  return span + fill;
}

double compose_span(const Ctx *x, const EinsumEval *ev, int n,
                    const double *mem, double *cycles) {
  if (x->o.compose == COMPOSE_SEQUENTIAL) {
    double t = 0;
    for (int i = 0; i < n; i++) {
      if (cycles && cycles[i] < 0)
        cycles[i] = einsum_cycles(x, &ev[i], mem[i]);
      t += cycles ? cycles[i] : einsum_cycles(x, &ev[i], mem[i]);
    }
    return t;
  }
  return pipelined_span(x->a, ev, n, mem);
}

/* ---- the ideal design under parallel pipelining ----
 *
 * The whole cascade as one group: a lower bound, not a schedule. A
 * pipelined plan takes at least (compose_span) its busiest physical unit's
 * busy time, and at least the sum of its Einsums' memory times, which is at
 * least any one level's bytes / that level's bandwidth. So, whatever plan
 * and binding, a plan takes at least the largest of:
 *   - the slowest Einsum on the fastest unit able to run it;
 *   - the fractional assignment bound: the least T such that the Einsums
 *     can be split over the units able to run them with every physical
 *     unit's busy time <= T (the modes of one array share its PEs, so
 *     their loads add up). By LP duality that is the largest, over
 *     weights w >= 0 on the physical units summing to 1, of
 *     sum_e min_u (w . the busy time E adds to each physical unit when
 *     bound to u): any binding's busiest unit carries at least the
 *     w-weighted mean of the loads, which is at least that sum. Any w
 *     gives a valid bound; the search below finds the best to ~1e-7;
 *   - for every level with a bandwidth, the ideal's bytes there (no plan
 *     moves fewer at any Einsum, §5) over that bandwidth: the level's
 *     cycles summed over the Einsums;
 * plus the shortest pipeline fill of any unit able to run an Einsum. */

/* The busy time each Einsum adds to each physical unit, per unit it could
 * run on. */
typedef struct Loads {
  int n, nu, np;  /* Einsums, units, physical units */
  int *phys;      /* [np]: the physical units' indices into Arch.units */
  int *slot;      /* [nu]: each unit's physical unit, as an index < np */
  bool *ok;       /* [e * nu + u]: U can run E */
  double *busy;   /* [(e * nu + u) * np + k]: on physical unit k */
} Loads;

/* The loads of every Einsum on every unit able to run it; *LONGEST gets
 * the slowest Einsum's least compute time, *FILL the least pipeline of a
 * unit able to run one. */
static void loads_build(const Ctx *x, Loads *L, double *longest,
                        double *fill) {
  const Arch *a = x->a;
  int nu = a->nunits, n = x->c->neinsums;
  *L = (Loads){.n = n, .nu = nu};
  L->phys = xcalloc((size_t)nu + 1, sizeof *L->phys);
  L->slot = xcalloc((size_t)nu + 1, sizeof *L->slot);
  for (int u = 0; u < nu; u++)
    if (arch_array_of(a, u) == u)
      L->phys[L->np++] = u;
  for (int u = 0; u < nu; u++)
    for (int k = 0; k < L->np; k++)
      if (L->phys[k] == arch_array_of(a, u))
        L->slot[u] = k;
  L->ok = xcalloc((size_t)n * (size_t)nu + 1, sizeof *L->ok);
  L->busy = xcalloc((size_t)n * (size_t)nu * (size_t)L->np + 1,
                    sizeof *L->busy);
  *longest = 0;
  *fill = INFINITY;
  for (int e = 0; e < n; e++) {
    double least = INFINITY;
    for (int u = 0; u < nu; u++) {
      if (!unit_runs(x, e, u))
        continue;
      EinsumEval r = {0};
      price_compute(x, e, u, &r);
      L->ok[e * nu + u] = true;
      double *b = &L->busy[((size_t)e * nu + u) * L->np];
      b[L->slot[u]] += r.unit_cycles;
      if (r.epilogue >= 0)
        b[L->slot[r.epilogue]] += r.epilogue_cycles;
      least = fmin(least, r.compute_cycles);
      *fill = fmin(*fill, a->units[u].pipeline);
    }
    if (isfinite(least))
      *longest = fmax(*longest, least);
  }
}

static void loads_free(Loads *L) {
  free(L->phys);
  free(L->slot);
  free(L->ok);
  free(L->busy);
}

/* sum_e min_u (W . E's loads on u): a lower bound on the busiest
 * physical unit of any binding, for any W >= 0 summing to 1. */
static double weighted_load(const Loads *L, const double *w) {
  double sum = 0;
  for (int e = 0; e < L->n; e++) {
    double least = INFINITY;
    for (int u = 0; u < L->nu; u++) {
      if (!L->ok[e * L->nu + u])
        continue;
      const double *b = &L->busy[((size_t)e * L->nu + u) * L->np];
      double v = 0;
      for (int k = 0; k < L->np; k++)
        v += w[k] * b[k];
      least = fmin(least, v);
    }
    if (isfinite(least))
      sum += least;
  }
  return sum;
}

/* The largest weighted_load over W[k..np) >= 0 summing to REST (W[0..k)
 * fixed): nested ternary searches, exact for a concave function (the
 * largest over the later weights of a concave function is concave in the
 * earlier one). The value returned is one that W reached, so a valid
 * bound however far the search falls short. Fewer steps per weight as
 * the weights grow in number (every shipped architecture has one or two
 * physical units). */
static double best_weights(const Loads *L, double *w, int k, double rest) {
  if (k == L->np - 1) {
    w[k] = rest;
    return weighted_load(L, w);
  }
  static const int steps[] = {0, 0, 100, 40, 16};
  int nsteps = L->np < 5 ? steps[L->np] : 8;
  double lo = 0, hi = rest, best = 0;
  for (int it = 0; it < nsteps; it++) {
    double m[2] = {lo + (hi - lo) / 3, hi - (hi - lo) / 3}, f[2];
    for (int s = 0; s < 2; s++) {
      w[k] = m[s];
      f[s] = best_weights(L, w, k + 1, rest - m[s]);
      best = fmax(best, f[s]);
    }
    if (f[0] < f[1])
      lo = m[0];
    else
      hi = m[1];
  }
  return best;
}

/* The least busy time of the busiest physical unit over every fractional
 * assignment (see above). */
static double assignment_bound(const Loads *L) {
  double *w = xcalloc((size_t)L->np + 1, sizeof *w);
  double b = L->np > 0 ? best_weights(L, w, 0, 1) : 0;
  free(w);
  return b;
}

/* The most cycles any one level with a bandwidth needs for the ideal's
 * bytes (price_levels summed them over the Einsums). */
static double level_bound(const Ctx *x) {
  double most = 0;
  for (int l = 0; l < x->ev->nlevels; l++)
    most = fmax(most, x->ev->level[l].cycles);
  return most;
}

static double ideal_pipelined(const Ctx *x) {
  Loads L;
  double longest, fill;
  loads_build(x, &L, &longest, &fill);
  double units = assignment_bound(&L);
  loads_free(&L);
  return fmax(fmax(level_bound(x), units), longest) +
         (isfinite(fill) ? fill : 0);
}

/* The level whose time is Einsum I's memory time (price_levels). */
static int slowest_level(const Eval *ev, int i) {
  const LevelUse *u = &ev->use[(size_t)i * (size_t)ev->nlevels];
  int most = -1;
  for (int l = 0; l < ev->nlevels; l++)
    if (u[l].cycles > 0 && (most < 0 || u[l].cycles > u[most].cycles))
      most = l;
  return most;
}

/* The ideal design's units were chosen knowing each Einsum's DRAM time
 * only (bind.c); its slowest level is known now. Where another unit able
 * to run it gives a shorter Einsum with that memory time (a unit with a
 * deeper pipeline was faster while memory was short), run it there: the
 * sequential ideal is then each Einsum's least time on any unit, which no
 * binding beats. Its operations' energy follows it. */
static void ideal_rebind(Ctx *x) {
  const Arch *a = x->a;
  Eval *ev = x->ev;
  for (int i = 0; i < ev->n; i++) {
    EinsumEval *r = &ev->e[i];
    for (int u = 0; u < a->nunits; u++) {
      if (u == r->unit || !unit_runs(x, r->einsum, u))
        continue;
      EinsumEval t = *r;
      price_compute(x, r->einsum, u, &t);
      t.cycles = einsum_cycles(x, &t, t.mem_cycles);
      if (!(t.cycles < r->cycles))
        continue;
      for (int k = 0; k < OPC_COUNT; k++) {
        double e = r->work.ops[k] * a->op_pj[k];
        ev->unit_energy[op_unit(a, r->unit, (OpClass)k)] -= e;
        ev->unit_energy[op_unit(a, u, (OpClass)k)] += e;
      }
      t.bound = t.compute_cycles >= t.mem_cycles ? -1 : slowest_level(ev, i);
      *r = t;
      x->unit[r->einsum] = u;
    }
  }
}

/* The ideal's pipelined span is the whole cascade's (ideal_pipelined),
 * not a group's. */
static bool ideal_pipe(const Ctx *x) {
  return x->o.bound && x->o.compose == COMPOSE_PIPELINED;
}

/* The fixed cycles group G pays before its members: a GPU runs the group
 * as one kernel; the bound pays one kernel for the layer, the least any
 * plan pays. */
static double kernel_cycles(const Ctx *x, int g) {
  return x->o.bound && g > 0 ? 0 : gpu_kernel_cycles(x->a);
}

static bool pipelines(const Ctx *x) {
  return x->o.compose == COMPOSE_PIPELINED && !ideal_pipe(x);
}

/* The span of a group's N members E from cycle T (past its kernel):
 * pipelined, or one after another from the layer's clock T, as the
 * layer's schedule reads -- the clock's advance. */
static double members_span(const Ctx *x, const EinsumEval *e, int n,
                           double t) {
  if (pipelines(x))
    return pipelined_span(x->a, e, n, NULL);
  double clock = t;
  for (int i = 0; i < n; i++)
    clock += e[i].cycles;
  return clock - t;
}

double compose_cycles(const Ctx *x, int g, const EinsumEval *e, int n,
                      double t) {
  double kernel = kernel_cycles(x, g);
  return members_span(x, e, n, t + kernel) + kernel;
}

double compose_group(Ctx *x, int g, double t) {
  const Arch *a = x->a; /* its units and clock are every level's copy's */
  GroupEval *ge = &x->ev->g[g];
  EinsumEval *e = &x->ev->e[ge->first];
  ge->start = t;
  double kernel = kernel_cycles(x, g);
  t += kernel;
  ge->mem_cycles = 0;
  for (int i = 0; i < ge->n; i++) {
    ge->mem_cycles += e[i].mem_cycles;
    ge->busy[a->units[e[i].unit].role] += e[i].unit_cycles;
    if (e[i].epilogue >= 0)
      ge->busy[a->units[e[i].epilogue].role] += e[i].epilogue_cycles;
  }
  double span = members_span(x, e, ge->n, t);
  if (pipelines(x)) {
    for (int i = 0; i < ge->n; i++) {
      e[i].start = t;
      e[i].end = t + span;
    }
  } else { /* each member's start and end on the clock members_span ran */
    double clock = t;
    for (int i = 0; i < ge->n; i++) {
      e[i].start = clock;
      clock += e[i].cycles;
      e[i].end = clock;
    }
  }
  ge->cycles = span + kernel;
  ge->end = ge->start + ge->cycles;
  return ge->cycles;
}

void compose_layer(Ctx *x) {
  Eval *ev = x->ev;
  double t = 0;
  if (x->o.bound)
    ideal_rebind(x);
  for (int g = 0; g < ev->ngroups; g++)
    t += compose_group(x, g, t);
  if (ideal_pipe(x)) { /* one span for the whole cascade */
    t = ideal_pipelined(x);
    for (int i = 0; i < ev->n; i++) {
      ev->e[i].start = 0;
      ev->e[i].end = t;
    }
    for (int g = 0; g < ev->ngroups; g++) {
      ev->g[g].start = 0;
      ev->g[g].end = ev->g[g].cycles = t;
    }
  }
  ev->cycles = t;
  ev->seconds = t / x->a->clock_hz;
}
