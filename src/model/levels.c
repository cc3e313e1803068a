/* levels.c — every memory level's bytes, time and energy for one Einsum
 * (docs/model.md §4, "Memory levels").
 *
 * Each boundary between two adjacent levels moves what the one rule of
 * mapper.c says a tiling moves across it:
 *   - off-chip memory <-> the fusion level: the group's mapping (group.c),
 *     charged as the Einsum's DRAM traffic; a staging level between them
 *     passes those bytes through (written in, read out, each way);
 *   - the fusion level <-> each level inside it: the Einsum's own best
 *     tiling onto one instance of that level (map_search, every tensor
 *     crossing), its iteration space split over the instances (the output
 *     variables, largest first), times the instances in use -- an operand
 *     every instance needs is sent to each (no multicast);
 *   - the innermost level <-> the PEs: every iteration point reads each
 *     operand once and updates its output (a reduction reads the partial
 *     sum back: points - outputs reads).
 * A level's reads are what it sends across either of its boundaries, its
 * writes what it receives. */
#include "price.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void level_add(const Ctx *x, const EinsumEval *r, int l, int t, double read,
               double write) {
  Eval *ev = x->ev;
  if (!ev || (read == 0 && write == 0))
    return;
  size_t at = (size_t)r->einsum * (size_t)ev->nlevels + (size_t)l;
  TensorUse *u = &ev->tuse[at * (size_t)ev->nslots];
  int *n = &ev->ntuse[at], j = 0;
  while (j < *n && u[j].tensor != t)
    j++;
  if (j == *n) {
    if (j == ev->nslots)
      return; /* no room: the level's totals still count it */
    u[(*n)++] = (TensorUse){.tensor = t};
  }
  u[j].read += read;
  u[j].write += write;
}

/* U as nothing used yet: no bytes, one instance, fitting, no mapping,
 * and, but with KEEP_LOOPS, no loops (the fields a level's use has, set
 * one by one: the loops past nloops are no part of it, and a group
 * pricer clears every member's levels for every spill variant). */
static void use_clear(LevelUse *u, bool keep_loops) {
  u->read = u->write = u->cycles = u->energy_pj = u->footprint = 0;
  u->instances = 1;
  u->fits = true;
  u->mapping[0] = '\0';
  if (!keep_loops)
    u->nloops = u->coarsened = u->pinned = 0;
}

/* *DST = *SRC but the loops past its nloops. */
static void use_copy(LevelUse *dst, const LevelUse *src) {
  memcpy(dst, src, offsetof(LevelUse, loop));
  memcpy(dst->loop, src->loop, (size_t)src->nloops * sizeof *src->loop);
  dst->coarsened = src->coarsened;
  dst->pinned = src->pinned;
}

/* The elements of a tensor P's iteration space reads: per coordinate,
 * the values it takes -- at most the range its terms span (a window,
 * p+r), at most the product of their sizes (a flattened index, 256*c+l,
 * whose range has holes). An instance's share of a tensor is this over
 * its slice against this over the whole. */
static double extent(const MapProblem *p, const MapTensor *T) {
  double n = 1;
  for (int k = 0; k < T->ndims; k++) {
    double range = 1, product = 1;
    for (int v = 0; v < p->nvars; v++)
      if (VARSET_HAS(T->dim_vars[k], v)) {
        range += T->dim_coef[k][v] * (p->size[v] - 1);
        product *= p->size[v];
      }
    n *= fmin(range, product);
  }
  return n;
}

/* Split P's output variables over N instances, the largest first: the
 * instances in use. Each tensor keeps its share of its elements. */
static double split(MapProblem *p, VarSet out, double n) {
  double before[MAP_MAX_TENSORS], used = 1;
  if (n <= 1)
    return 1;
  for (int t = 0; t < p->ntensors; t++)
    before[t] = extent(p, &p->t[t]);
  while (n > 1) {
    int big = -1;
    for (int v = 0; v < p->nvars; v++)
      if (VARSET_HAS(out, v) && p->size[v] > 1 &&
          (big < 0 || p->size[v] > p->size[big]))
        big = v;
    if (big < 0)
      break;
    /* Slices of PER points: as many instances as that takes (256 over
     * 168 instances is 128 slices of 2), the rest left for the next. */
    double per = ceil(p->size[big] / fmin(n, p->size[big]) - 1e-12);
    double f = ceil(p->size[big] / per - 1e-12);
    p->size[big] = per;
    used *= f;
    n = floor(n / f + 1e-12);
  }
  for (int t = 0; t < p->ntensors; t++)
    if (before[t] > 0)
      p->t[t].elems *= extent(p, &p->t[t]) / before[t];
  return used;
}

/* Append LOOP to P's loops above (its trips at least 2: others are no
 * loop). */
static void push_above(MapProblem *p, NestLoop loop) {
  if (loop.trips > 1 && p->nabove < NEST_MAX_LOOPS)
    p->above[p->nabove++] = loop;
}

/* Record M's loops into U: its temporal loops over the tiles of all the
 * instances at once (a split variable's tile times its split), then the
 * split over the instances (SPLIT[v]: 1 where none). */
static void record_loops(const MapProblem *p, const Mapping *m,
                         const double *split, LevelUse *u) {
  u->nloops = 0;
  u->coarsened = m->coarsened;
  u->pinned = m->pinned;
  for (int j = 0; j < m->norder && u->nloops < NEST_MAX_LOOPS; j++) {
    int v = m->order[j];
    double tile = m->tile[v];
    u->loop[u->nloops++] = (NestLoop){
        .var = v, .tile = tile * split[v],
        .trips = ceil(p->size[v] / tile - 1e-12),
        .group = VARSET_HAS(p->outer, v)};
  }
  for (int v = 0; v < p->nvars && u->nloops < NEST_MAX_LOOPS; v++)
    if (split[v] > 1)
      u->loop[u->nloops++] = (NestLoop){.var = v, .tile = p->size[v],
                                        .trips = split[v], .spatial = true};
}

/* The boundary above inner level L, whose parent splits each of its tiles
 * over FANOUT instances of L: one instance's tiling within the tile of
 * the level above, scaled to the *USED instances in use (updated), into
 * DOWN/UP (elements per problem tensor); U gets the footprint, fit,
 * instances and loops. P becomes the nest one instance of L sees: its
 * loops added above, its tile the size (the next level tiles within
 * it). */
static void inner_boundary(Ctx *x, const EinsumEval *r, int l, double fanout,
                           MapProblem *p, double *used, double *down,
                           double *up, LevelUse *u) {
  const MemLevel *lv = &x->a->levels[l];
  double before[MAP_MAX_VARS], split_of[MAP_MAX_VARS];
  memcpy(before, p->size, sizeof before);
  *used *= split(p, x->c->einsums[r->einsum]->out_vars, fanout);
  for (int v = 0; v < p->nvars; v++)
    split_of[v] = ceil(before[v] / p->size[v] - 1e-12);
  p->capacity = lv->capacity / x->word;
  Mapping m;
  map_search_memo(x->memo, p, &m);
  for (int t = 0; t < p->ntensors; t++) {
    down[t] = m.read[t] * *used;
    up[t] = m.write[t] * *used;
  }
  u->footprint = m.footprint;
  u->fits = m.fits;
  u->instances = *used;
  mapping_text(x->c->einsums[r->einsum], &m, u->mapping, sizeof u->mapping);
  record_loops(p, &m, split_of, u);
  for (int j = 0; j < m.norder; j++) {
    int v = m.order[j];
    push_above(p, (NestLoop){.var = v, .tile = m.tile[v],
                             .trips = ceil(p->size[v] / m.tile[v] - 1e-12)});
  }
  for (int v = 0; v < p->nvars; v++)
    p->size[v] = m.tile[v];
}

/* The fusion level's loops (U, from the group's mapping) above P: each
 * variable's size becomes its last tile there. */
static void fusion_loops_above(const LevelUse *u, MapProblem *p) {
  p->nabove = 0;
  for (int j = 0; j < u->nloops; j++) {
    const NestLoop *lp = &u->loop[j];
    if (lp->var >= p->nvars)
      continue;
    push_above(p, lp[0]);
    p->size[lp->var] = lp->tile;
  }
}

/* How many instances of inner level L each instance of the level above
 * it feeds (the fusion level counts as one: the group's mapping is the
 * whole buffer's). */
static double fanout(const Arch *a, int l) {
  double parent = l - 1 > a->fusion_level ? a->levels[l - 1].instances : 1;
  double n = round(a->levels[l].instances / fmax(parent, 1));
  return n < 1 ? 1 : n;
}

void level_set_mapping(const Ctx *x, const EinsumEval *r, const Mapping *m,
                       const MapProblem *p) {
  Eval *ev = x->ev;
  if (!ev)
    return;
  LevelUse *u = &ev->use[(size_t)(r - ev->e) * (size_t)ev->nlevels +
                         (size_t)x->a->fusion_level];
  u->nloops = u->coarsened = u->pinned = 0;
  if (!m)
    return;
  double none[MAP_MAX_VARS];
  for (int v = 0; v < MAP_MAX_VARS; v++)
    none[v] = 1;
  record_loops(p, m, none, u);
}

/* The PEs' accesses to the innermost level, per problem tensor. */
static void compute_boundary(const Ctx *x, const EinsumEval *r,
                             const int *read_at, const MapProblem *p,
                             double *down, double *up) {
  const Einsum *e = x->c->einsums[r->einsum];
  double points = r->work.points, outs = r->work.parallel;
  memset(down, 0, sizeof(double) * (size_t)p->ntensors);
  memset(up, 0, sizeof(double) * (size_t)p->ntensors);
  for (int k = 0; k < e->nreads; k++)
    if (read_at[k] >= 0)
      down[read_at[k]] += points;
  up[p->ntensors - 1] = points;
  down[p->ntensors - 1] += points - outs;
}

/* Off-chip traffic (level 0, charged) through the staging levels into the
 * fusion level. */
static void outer_levels(const Ctx *x, const EinsumEval *r) {
  const Eval *ev = x->ev;
  int f = x->a->fusion_level;
  const TensorUse *d;
  int n = eval_tensors(ev, (int)(r - ev->e), 0, &d);
  for (int j = 0; j < n; j++) {
    double rd = d[j].read, wr = d[j].write;
    for (int l = 1; l < f; l++)
      level_add(x, r, l, d[j].tensor, rd + wr, rd + wr);
    level_add(x, r, f, d[j].tensor, wr, rd);
  }
}

/* One Einsum's levels inside the fusion level, kept (Ctx.inner): the
 * bytes it records at each, in order, and each level's use. */
typedef struct InnerAdd {
  int l, t;
  double read, write;
} InnerAdd;

typedef struct Inner {
  int n, cap;
  InnerAdd *add;
  LevelUse *use; /* per level; those inside the fusion level set */
  LevelUse above; /* the fusion level's loops they were nested in */
  struct Inner *next; /* the Einsum's other kept loops, used longest ago
                         last */
} Inner;

/* The fusion level's loops kept per Einsum (most recently used first):
 * a group pricer's spill variants and tiles take a member back and forth
 * between a few of them, and one kept alone was found again at two
 * prices in three. */
enum { INNER_KEPT = 8 };

/* Are the fusion level's loops in A and B the same, in every field the
 * levels inside read (a group's loop refetches: mapper.c)? */
static bool same_loops(const LevelUse *a, const LevelUse *b) {
  if (a->nloops != b->nloops)
    return false;
  for (int j = 0; j < a->nloops; j++)
    if (a->loop[j].var != b->loop[j].var || a->loop[j].tile != b->loop[j].tile ||
        a->loop[j].trips != b->loop[j].trips ||
        a->loop[j].group != b->loop[j].group ||
        a->loop[j].spatial != b->loop[j].spatial)
      return false;
  return true;
}

void inner_free(Inner **inner, int n) {
  for (int e = 0; inner && e < n; e++)
    for (Inner *k = inner[e], *next; k; k = next) {
      next = k->next;
      free(k->add);
      free(k->use);
      free(k);
    }
  free(inner);
}

/* level_add, recorded into KEEP (unless NULL). */
static void inner_add(const Ctx *x, const EinsumEval *r, Inner *keep, int l,
                      int t, double read, double write) {
  level_add(x, r, l, t, read, write);
  if (keep)
    VEC_PUSH(keep->add, keep->n, keep->cap,
             ((InnerAdd){l, t, read, write}));
}

/* The bound's boundary above inner level L: what any nest moves across
 * it at the least -- every tensor once (each read down, the output up),
 * over every instance of L -- into DOWN/UP and U. */
static void compulsory_boundary(const Ctx *x, int l, const MapProblem *p,
                                double *down, double *up, LevelUse *u) {
  for (int t = 0; t < p->ntensors; t++) {
    down[t] = p->t[t].output ? 0 : p->t[t].elems;
    up[t] = p->t[t].output ? p->t[t].elems : 0;
  }
  u->instances = x->a->levels[l].instances;
  snprintf(u->mapping, sizeof u->mapping, "-");
}

/* Every boundary inside the fusion level, down to the PEs (recorded into
 * KEEP unless NULL): the nest's, or for a bound what any nest moves at
 * the least (a nest's instances in use and tiles depend on the levels
 * above it, so one level's best alone bounds nothing). */
static void inner_levels(Ctx *x, EinsumEval *r, LevelUse *use, Inner *keep) {
  const Arch *a = x->a;
  const Einsum *e = x->c->einsums[r->einsum];
  int *read_at = xmalloc(((size_t)e->nreads + 1) * sizeof *read_at);
  int tensor_of[MAP_MAX_TENSORS];
  MapProblem nest;
  einsum_nest(x, r->einsum, &nest, tensor_of, read_at);
  for (int t = 0; t < nest.ntensors; t++)
    nest.t[t].dram = true; /* every tensor crosses an inner boundary */
  fusion_loops_above(&use[a->fusion_level], &nest);
  double down[MAP_MAX_TENSORS], up[MAP_MAX_TENSORS], used = 1;
  for (int l = a->fusion_level + 1; l <= a->nlevels; l++) {
    if (l < a->nlevels && x->o.bound)
      compulsory_boundary(x, l, &nest, down, up, &use[l]);
    else if (l < a->nlevels)
      inner_boundary(x, r, l, fanout(a, l), &nest, &used, down, up, &use[l]);
    else
      compute_boundary(x, r, read_at, &nest, down, up);
    for (int t = 0; t < nest.ntensors; t++) {
      double dn = down[t] * x->word, u = up[t] * x->word;
      inner_add(x, r, keep, l - 1, tensor_of[t], dn, u);
      if (l < a->nlevels)
        inner_add(x, r, keep, l, tensor_of[t], u, dn);
    }
  }
  free(read_at);
}

/* The kept entry of Einsum E's list HEAD for the fusion level's loops
 * ABOVE, moved to the front; else NULL, and *SPARE the entry to fill
 * (a new one while the list is short, else the one used longest ago,
 * moved to the front). */
static Inner *inner_find(Inner **head, const LevelUse *above, int L,
                         Inner **spare) {
  Inner **at = head, **last = head;
  int n = 0;
  for (; *at; at = &(*at)->next, n++) {
    if (same_loops(&(*at)->above, above))
      break;
    last = at;
  }
  Inner *k = *at;
  if (!k && n < INNER_KEPT) {
    k = xcalloc(1, sizeof *k);
    k->use = xcalloc((size_t)L + 1, sizeof *k->use);
    *spare = k;
  } else if (!k) {
    k = *last; /* the last: used longest ago */
    *last = NULL;
    *spare = k;
  } else {
    *at = k->next;
    *spare = NULL;
  }
  if (k != *head) {
    k->next = *head;
    *head = k;
  }
  return *spare ? NULL : k;
}

/* inner_levels, kept per Einsum where the context keeps them: they
 * depend on its group only through its loops at the fusion level (a
 * group pricer meets the same ones again and again). */
static void inner_levels_kept(Ctx *x, EinsumEval *r, LevelUse *use) {
  if (!x->inner) {
    inner_levels(x, r, use, NULL);
    return;
  }
  int L = x->a->nlevels, f = x->a->fusion_level;
  Inner *spare;
  Inner *k = inner_find(&x->inner[r->einsum], &use[f], L, &spare);
  if (!k) {
    k = spare;
    k->n = 0;
    k->above = use[f];
    inner_levels(x, r, use, k);
    memcpy(k->use, use, (size_t)L * sizeof *use);
    return;
  }
  for (int i = 0; i < k->n; i++)
    level_add(x, r, k->add[i].l, k->add[i].t, k->add[i].read,
              k->add[i].write);
  for (int l = f + 1; l < L; l++)
    use_copy(&use[l], &k->use[l]);
}

/* Cycles to move BYTES at BW bytes per cycle (0 when unlimited). */
static double busy(double bytes, double bw) {
  return isfinite(bw) ? bytes / bw : 0;
}

double level_cycles(const MemLevel *lv, double instances, double clock_hz,
                    double read, double write) {
  /* Bytes per cycle over the instances in use: both ways together, and
   * each way alone; the slowest bounds. */
  double k = instances / clock_hz;
  return fmax(busy(read + write, lv->bandwidth * k),
              fmax(busy(read, lv->read_bandwidth * k),
                   busy(write, lv->write_bandwidth * k)));
}

/* Sum a level's tensors into U, with its time and energy. */
static void level_totals(const Ctx *x, EinsumEval *r, int l, LevelUse *u) {
  const MemLevel *lv = &x->a->levels[l];
  const TensorUse *t;
  int n = eval_tensors(x->ev, (int)(r - x->ev->e), l, &t);
  u->read = u->write = 0;
  for (int j = 0; j < n; j++) {
    u->read += t[j].read;
    u->write += t[j].write;
  }
  u->cycles = level_cycles(lv, u->instances, x->a->clock_hz, u->read,
                           u->write);
  u->energy_pj = u->read * lv->read_pj + u->write * lv->write_pj;
}

void price_levels(Ctx *x, EinsumEval *r) {
  Eval *ev = x->ev;
  const Arch *a = x->a;
  int f = a->fusion_level;
  LevelUse *use = &ev->use[(size_t)(r - ev->e) * (size_t)ev->nlevels];
  for (int l = 0; l < a->nlevels; l++) /* the fusion level's loops are
                                           the group's (level_set_mapping) */
    use_clear(&use[l], l == f);
  use[f].footprint = r->footprint;
  use[f].fits = r->fits;
  outer_levels(x, r);
  inner_levels_kept(x, r, use);
  r->mem_cycles = 0;
  r->bound = -1;
  for (int l = 0; l < a->nlevels; l++) {
    LevelUse *u = &use[l];
    level_totals(x, r, l, u);
    if (u->cycles > r->mem_cycles) {
      r->mem_cycles = u->cycles;
      r->bound = l;
    }
  }
}

void levels_total(Ctx *x, const EinsumEval *r) {
  Eval *ev = x->ev;
  const Arch *a = x->a;
  int f = a->fusion_level;
  const LevelUse *use = &ev->use[(size_t)(r - ev->e) * (size_t)ev->nlevels];
  for (int l = 0; l < a->nlevels; l++) {
    const LevelUse *u = &use[l];
    LevelRole role = arch_level_role(a, l);
    *(role == LEVEL_OFFCHIP ? &ev->energy_dram
      : l <= f              ? &ev->energy_glb
                            : &ev->energy_reg) += u->energy_pj;
    LevelUse *tot = &ev->level[l];
    tot->read += u->read;
    tot->write += u->write;
    tot->cycles += u->cycles;
    tot->energy_pj += u->energy_pj;
    tot->fits = tot->fits && u->fits;
  }
}

int eval_tensors(const Eval *ev, int i, int l, const TensorUse **t) {
  size_t at = (size_t)ev->e[i].einsum * (size_t)ev->nlevels + (size_t)l;
  *t = &ev->tuse[at * (size_t)ev->nslots];
  return ev->ntuse[at];
}
