/* eval.c — pricing one design: the plan, the binding of every Einsum to a
 * unit, the tiling of each fusion group, each Einsum's mapping and costs,
 * and their composition into a layer's latency, traffic and energy. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Share of the global buffer a group may reserve for what stays on chip
 * across its Einsums (intermediate tiles, the recurrence's state,
 * resident weights); the rest holds each Einsum's own operand tiles. */
#define RESERVE_SHARE 0.75

typedef struct Ctx {
  const Cascade *c;
  const Shape *s;
  const Arch *a;
  const Pair *pairs;
  Design d;
  ModelOpts o;
  Plan *plan;
  double word; /* bytes per element */
  double glb;  /* elements the global buffer holds */
  double bw;   /* DRAM bytes per cycle */
  bool *inter;     /* per tensor: read by an Einsum other than its producer */
  bool *onchip;    /* per tensor: never leaves the chip in this design */
  bool *two_pass;  /* per tensor: read a second time (full fusion) */
  bool *rd_spill;  /* per tensor: an RD upstream writing partial products */
  int *unit;       /* per Einsum */
  Eval *ev;
  Diag *diag;
} Ctx;

/* ---- the plan ---- */

/* The RI group holding the recurrence (a lagged edge): the region MARCA
 * and Geens et al. fuse. Every other Einsum stands alone. */
static Plan *recurrence_plan(const Cascade *c, const Shape *s,
                             const Pair *pairs) {
  Diag d = {0};
  Plan *ri = fusion_plan(c, s, pairs, ST_RI, STITCH_GREEDY, OBJ_GROUPS, &d);
  int region = -1;
  for (int i = 0; i < c->nedges; i++)
    if (c->edges[i].lagged)
      region = ri->group_of[c->edges[i].consumer];
  int *group_of = xcalloc((size_t)c->neinsums + 1, sizeof *group_of);
  int g = -1, prev = -2;
  for (int i = 0; i < c->neinsums; i++) {
    bool in = region >= 0 && ri->group_of[i] == region;
    if (!in || prev != region)
      g++;
    group_of[i] = g;
    prev = in ? region : -2;
  }
  Plan *p = fusion_plan_groups(c, s, ST_UNFUSED, group_of);
  free(group_of);
  plan_free(ri);
  return p;
}

static Plan *design_plan(const Ctx *x) {
  switch (x->d) {
  case DES_MARCA:
  case DES_GEENS:
    return recurrence_plan(x->c, x->s, x->pairs);
  default: {
    Diag d = {0};
    return fusion_plan(x->c, x->s, x->pairs, design_strategy(x->d),
                       STITCH_GREEDY, OBJ_GROUPS, &d);
  }
  }
}

/* ---- which tensors stay on chip ---- */

static int last_reader(const Cascade *c, int t) {
  int last = -1;
  for (int i = 0; i < c->nedges; i++)
    if (c->edges[i].tensor == t && !c->edges[i].lagged &&
        c->edges[i].consumer > last)
      last = c->edges[i].consumer;
  return last;
}

static const Pair *pair_of(const Ctx *x, int producer, int consumer, int t) {
  for (int i = 0; i < x->c->nedges; i++) {
    const Edge *e = x->pairs[i].edge;
    if (e->producer == producer && e->consumer == consumer && e->tensor == t)
      return &x->pairs[i];
  }
  return NULL;
}

/* Does Einsum R reduce over a variable that indexes a rank of tensor T
 * (by rank name: the pass analysis follows the data, not the loops)? */
static bool reduces_rank_of(const Cascade *c, const Einsum *r, int t) {
  VarSet red = einsum_reduced_vars(r);
  const Tensor *T = &c->tensors[t];
  for (int v = 0; v < r->nvars; v++)
    if (VARSET_HAS(red, v))
      for (int k = 0; k < T->nranks; k++)
        if (T->ranks[k] == r->vars[v].rank)
          return true;
  return false;
}

/* FuseMax's pass analysis: T needs two passes in its group when one
 * reader's data flows into a reduction over one of T's ranks whose result
 * another reader of T waits for (RMSNorm's LEX; Mamba's X). */
static bool needs_two_passes(const Ctx *x, int t, int g) {
  const Cascade *c = x->c;
  const int *group_of = x->plan->group_of;
  for (int r = 0; r < c->neinsums; r++) {
    if (group_of[r] != g || !reduces_rank_of(c, c->einsums[r], t))
      continue;
    bool fed = false, waits = false;
    for (int i = 0; i < c->nedges; i++) {
      const Edge *e = &c->edges[i];
      if (e->tensor != t || e->lagged || group_of[e->consumer] != g)
        continue;
      if (cascade_reaches(c, e->consumer, r))
        fed = true;
      else if (e->consumer != r && cascade_reaches(c, r, e->consumer))
        waits = true;
    }
    if (fed && waits)
      return true;
  }
  return false;
}

static void decide_residency(Ctx *x) {
  const Cascade *c = x->c;
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    x->onchip[t] = x->plan->onchip[t];
    for (int i = 0; i < c->nedges; i++)
      if (c->edges[i].tensor == t && c->edges[i].consumer != T->producer)
        x->inter[t] = true;
    if (T->producer < 0 || x->o.accounting == ACCOUNT_IDEAL)
      continue;
    int g = x->plan->group_of[T->producer];
    if (x->onchip[t] && x->o.spill_distance > 0 &&
        last_reader(c, t) - T->producer > x->o.spill_distance)
      x->onchip[t] = false; /* sent off chip: a long dependency chain */
    if (x->o.two_pass && x->inter[t])
      x->two_pass[t] = needs_two_passes(x, t, g);
    if (x->o.rd_partials && x->onchip[t])
      for (int i = 0; i < c->nedges; i++) {
        const Edge *e = &c->edges[i];
        const Pair *p = pair_of(x, e->producer, e->consumer, t);
        if (e->tensor == t && p && p->cls == FC_RD)
          x->rd_spill[t] = true;
      }
  }
}

/* ---- binding (§V-B) ---- */

static int unit_for(const Arch *a, UnitRole want) {
  int u = arch_unit(a, want);
  if (u < 0 && want == ROLE_FEEDER)
    u = arch_unit(a, ROLE_VECTOR);
  if (u < 0)
    u = arch_unit(a, ROLE_VECTOR);
  if (u < 0)
    u = arch_unit(a, ROLE_MATRIX);
  return u;
}

/* Linear operations (GEMMs, convolutions: sum-reduced products with a
 * weight) on the matrix unit. In a group with a linear operation,
 * elementwise work after the first one stays on the matrix unit (2D mode);
 * elementwise work before it runs on the feeder that broadcasts into the
 * array (only when the strategy fuses RSp pairs: otherwise no such group
 * exists). Groups of elementwise Einsums only run on the vector unit (1D
 * mode). */
static void bind(Ctx *x) {
  const Cascade *c = x->c;
  for (int g = 0; g < x->plan->ngroups; g++) {
    const Group *gr = &x->plan->groups[g];
    int first_gemm = -1;
    for (int i = gr->n - 1; i >= 0; i--)
      if (einsum_is_linear(c, c->einsums[gr->einsums[i]]))
        first_gemm = gr->einsums[i];
    for (int i = 0; i < gr->n; i++) {
      int e = gr->einsums[i];
      UnitRole r;
      if (einsum_is_linear(c, c->einsums[e]))
        r = ROLE_MATRIX;
      else if (first_gemm < 0)
        r = ROLE_VECTOR;
      else if (e > first_gemm)
        r = ROLE_MATRIX;
      else
        r = ROLE_FEEDER;
      x->unit[e] = unit_for(x->a, r);
    }
  }
}

/* ---- spatial utilization ---- */

static double fold(double x) { return x >= 1 ? x / ceil(x - 1e-9) : x; }

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

static double utilization(const Ctx *x, int ei, const Work *w) {
  const Unit *u = &x->a->units[x->unit[ei]];
  if (u->role != ROLE_MATRIX || !w->linear)
    return fold(w->parallel / u->pes);
  /* A contraction on a 2D array: the best pair of dimensions. */
  double dim[IR_MAX_VARS];
  int n = spatial_dims(x->c->einsums[ei], x->s, dim);
  double best = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (i != j) {
        double u2 = fold(dim[i] / u->rows) * fold(dim[j] / u->cols);
        if (u2 > best)
          best = u2;
      }
  return best > 0 ? best : fold(w->parallel / u->pes);
}

/* DRAM traffic of one Einsum, in elements. */
typedef struct Traffic {
  double read, write; /* achieved */
  double inter_r, inter_w, intra_r, intra_w;
  double ideal_inter, ideal_intra;
} Traffic;

/* ---- the tiling of a fusion group ---- */

typedef struct GroupTile {
  int nranks;
  int rank[IR_MAX_RANKS];
  double tile[IR_MAX_RANKS];
  double reserve; /* elements held across the group's Einsums */
  bool *resident; /* per tensor: an input kept in the buffer */
} GroupTile;

static double rank_size(const Ctx *x, int r) { return (double)x->s->size[r]; }

static bool has_rank(const Tensor *T, int r) {
  for (int k = 0; k < T->nranks; k++)
    if (T->ranks[k] == r)
      return true;
  return false;
}

static bool reads(const Einsum *e, int t) {
  for (int k = 0; k < e->nreads; k++)
    if (e->reads[k]->tensor == t)
      return true;
  return false;
}

/* The group's common outer loops: the ranks shared by every on-chip
 * intermediate and by every produced tensor the group reads from or writes
 * to DRAM (the tokens, for Mamba). Tiling any other rank outside would
 * refetch some DRAM tensor per tile; inputs without these ranks (weights)
 * are held resident instead. */
static void group_ranks(const Ctx *x, const Group *gr, GroupTile *gt) {
  const Cascade *c = x->c;
  const int *group_of = x->plan->group_of;
  int g = group_of[gr->einsums[0]];
  bool any = false;
  bool common[256] = {0};
  for (int r = 0; r < c->nranks && r < 256; r++)
    common[r] = true;
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (T->producer < 0)
      continue;
    bool made_here = group_of[T->producer] == g;
    bool read_here = false;
    for (int i = 0; i < gr->n; i++)
      read_here = read_here || reads(c->einsums[gr->einsums[i]], t);
    if (!made_here && !read_here)
      continue;
    int readers = 0;
    for (int i = 0; i < gr->n; i++)
      readers += reads(c->einsums[gr->einsums[i]], t);
    if ((made_here && x->onchip[t]) || readers > 1)
      any = true; /* something is held across members */
    for (int r = 0; r < c->nranks && r < 256; r++)
      common[r] = common[r] && has_rank(T, r);
  }
  for (int t = 0; t < c->ntensors; t++) {
    int readers = 0;
    for (int i = 0; i < gr->n; i++)
      readers += reads(c->einsums[gr->einsums[i]], t);
    if (readers > 1 && c->tensors[t].producer < 0 && c->tensors[t].nranks > 0)
      any = true; /* a shared input (the merged GEMMs' activation) */
  }
  gt->nranks = 0;
  if (!any)
    return;
  /* In declaration order of the group's first output (outermost first). */
  const Tensor *T = &c->tensors[c->einsums[gr->einsums[0]]->out.tensor];
  for (int k = 0; k < T->nranks; k++)
    if (common[T->ranks[k]] && gt->nranks < IR_MAX_RANKS)
      gt->rank[gt->nranks++] = T->ranks[k];
}

/* The recurrence inside (or feeding) a group: the lagged tensor and the
 * rank it iterates over, or -1. */
static int recurrence_of(const Ctx *x, int g, int *iter_rank) {
  const Cascade *c = x->c;
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    if (!e->lagged || x->plan->group_of[e->consumer] != g)
      continue;
    for (int k = 0; k < e->acc[0]->n; k++)
      if (e->acc[0]->idx[k].lag > 0) {
        *iter_rank = c->tensors[e->tensor].ranks[k];
        return e->tensor;
      }
  }
  return -1;
}

static double tile_fraction(const Ctx *x, const GroupTile *gt,
                            const Tensor *T) {
  double f = 1;
  for (int k = 0; k < gt->nranks; k++)
    if (has_rank(T, gt->rank[k]))
      f *= gt->tile[k] / rank_size(x, gt->rank[k]);
  return f;
}

/* The part of tensor T one group tile covers. */
static double tile_elems(const Ctx *x, const GroupTile *gt, int t) {
  return shape_tensor_elems(x->s, t) * tile_fraction(x, gt, &x->c->tensors[t]);
}

/* Does Einsum E iterate a variable over rank R that it keeps (writes)? */
static bool keeps_rank(const Einsum *e, int r) {
  for (int v = 0; v < e->nvars; v++)
    if (e->vars[v].rank == r && VARSET_HAS(e->out_vars, v))
      return true;
  return false;
}

/* Within a group tile, the members from FIRST to LAST can run a nested
 * loop over any rank of T that all of them keep (the SSM's D and N): T
 * then lives one sub-tile at a time. The factor T's footprint shrinks by. */
static double nested_factor(const Ctx *x, const GroupTile *gt, int t,
                            int first, int last) {
  const Cascade *c = x->c;
  const Tensor *T = &c->tensors[t];
  double f = 1;
  for (int k = 0; k < T->nranks; k++) {
    int r = T->ranks[k];
    bool outer = false;
    for (int j = 0; j < gt->nranks; j++)
      outer = outer || gt->rank[j] == r;
    if (outer)
      continue;
    bool all = true;
    for (int e = first; all && e <= last; e++)
      if (x->plan->group_of[e] == x->plan->group_of[first])
        all = keeps_rank(c->einsums[e], r);
    if (all)
      f *= rank_size(x, r);
  }
  return f;
}

/* What the buffer must hold across the group's Einsums for one tile: at
 * each member, the tiles alive there (an on-chip intermediate from its
 * producer to its last reader; an activation read by several members from
 * the first to the last), at the peak; plus the recurrence's state and the
 * resident weights. */
static double reservation(const Ctx *x, int g, const GroupTile *gt,
                          double weights, int state_t, int iter_rank) {
  const Cascade *c = x->c;
  const Group *gr = &x->plan->groups[g];
  double peak = 0;
  for (int k = 0; k < gr->n; k++) {
    int at = gr->einsums[k];
    double live = 0;
    for (int t = 0; t < c->ntensors; t++) {
      const Tensor *T = &c->tensors[t];
      if (gt->resident[t])
        continue;
      int first = -1, last = -1;
      if (T->producer >= 0 && x->plan->group_of[T->producer] == g &&
          x->onchip[t])
        first = T->producer;
      int readers = 0;
      for (int i = 0; i < gr->n; i++)
        if (reads(c->einsums[gr->einsums[i]], t)) {
          readers++;
          if (first < 0)
            first = gr->einsums[i];
          last = gr->einsums[i];
        }
      bool held = first >= 0 && last >= 0 &&
                  (first == T->producer || (readers > 1 && gt->nranks > 0));
      if (held && x->d == DES_MARCA) { /* whole, for the whole group */
        live += tile_elems(x, gt, t);
        continue;
      }
      if (held && first <= at && at <= last)
        live += tile_elems(x, gt, t) / nested_factor(x, gt, t, first, last);
    }
    peak = fmax(peak, live);
  }
  double res = weights + peak;
  if (state_t >= 0) { /* one step of the recurrence, for the tile's rest */
    const Tensor *T = &c->tensors[state_t];
    double f = 1;
    for (int k = 0; k < gt->nranks; k++)
      if (gt->rank[k] != iter_rank && has_rank(T, gt->rank[k]))
        f *= gt->tile[k] / rank_size(x, gt->rank[k]);
    res += shape_tensor_elems(x->s, state_t) / rank_size(x, iter_rank) * f;
  }
  return res;
}

/* Spread a tile of TOTAL elements over the group's ranks, innermost first
 * (tokens along i before b: consecutive steps of a recurrence). */
static void spread(const Ctx *x, GroupTile *gt, double total) {
  for (int k = gt->nranks - 1; k >= 0; k--) {
    double sz = rank_size(x, gt->rank[k]);
    gt->tile[k] = total < sz ? total : sz;
    if (gt->tile[k] < 1)
      gt->tile[k] = 1;
    total = ceil(total / gt->tile[k]);
  }
}

static void map_einsum(const Ctx *x, int ei, const GroupTile *gt,
                       Traffic *tr, char *desc, size_t ndesc);

/* Does some member fetch a weight per tile (a non-resident input without
 * the group's ranks)? Then the tile size trades weight refetches against
 * what the buffer can hold, and is searched. */
static bool refetches_weights(const Ctx *x, int g, const GroupTile *gt) {
  const Cascade *c = x->c;
  const Group *gr = &x->plan->groups[g];
  for (int i = 0; i < gr->n; i++) {
    const Einsum *e = c->einsums[gr->einsums[i]];
    for (int k = 0; k < e->nreads; k++) {
      const Tensor *T = &c->tensors[e->reads[k]->tensor];
      bool shared = false;
      for (int r = 0; r < gt->nranks; r++)
        shared = shared || has_rank(T, gt->rank[r]);
      if (T->producer < 0 && !gt->resident[e->reads[k]->tensor] && !shared)
        return true;
    }
  }
  return false;
}

/* The group's latency with tile GT: each member's time, its compute known
 * (COMPUTE) and its DRAM traffic from its mapping. */
static double group_cost(const Ctx *x, int g, const GroupTile *gt,
                         const double *compute) {
  const Group *gr = &x->plan->groups[g];
  double total = 0;
  Ctx probe = *x;
  probe.ev = NULL; /* a trial: record nothing per tensor */
  for (int i = 0; i < gr->n; i++) {
    Traffic tr = {0};
    char desc[8];
    map_einsum(&probe, gr->einsums[i], gt, &tr, desc, sizeof desc);
    double mem = (tr.read + tr.write) * x->word / x->bw;
    total += x->o.no_overlap ? compute[i] + mem : fmax(compute[i], mem);
  }
  return total;
}

/* Choose the group's tile. When weights stay resident, the largest tile
 * whose reservation fits; when some are fetched per tile, the fitting tile
 * of least latency (every power of two is tried). MARCA-like keeps whole
 * intermediates; when even the smallest tile does not fit, the group's
 * intermediates spill (weak fusion). */
static void choose_group_tile(Ctx *x, int g, GroupTile *gt,
                              const double *compute) {
  const Cascade *c = x->c;
  const Group *gr = &x->plan->groups[g];
  group_ranks(x, gr, gt);
  int iter_rank = -1;
  int state_t = recurrence_of(x, g, &iter_rank);
  /* Inputs without the group's ranks (weights) stay resident if they fit. */
  double weights = 0;
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (T->producer >= 0)
      continue;
    bool used = false, shared = false;
    for (int i = 0; i < gr->n; i++)
      used = used || reads(c->einsums[gr->einsums[i]], t);
    for (int k = 0; k < gt->nranks; k++)
      shared = shared || has_rank(T, gt->rank[k]);
    if (used && !shared && gt->nranks > 0) {
      gt->resident[t] = true;
      weights += shape_tensor_elems(x->s, t);
    }
  }
  if (weights > x->o.weight_share * x->glb) {
    for (int t = 0; t < c->ntensors; t++)
      gt->resident[t] = false;
    weights = 0;
  }
  double whole = 1;
  for (int k = 0; k < gt->nranks; k++)
    whole *= rank_size(x, gt->rank[k]);
  spread(x, gt, 1);
  gt->reserve = reservation(x, g, gt, weights, state_t, iter_rank);
  if (gt->nranks == 0)
    return;
  bool search = refetches_weights(x, g, gt);
  GroupTile cur = *gt;
  double best_cost = INFINITY, best_total = 0;
  bool found = false;
  double first = x->d == DES_MARCA && state_t >= 0 ? whole : 1;
  for (double total = first;; total = fmin(2 * total, whole)) {
    spread(x, &cur, total);
    double res = reservation(x, g, &cur, weights, state_t, iter_rank);
    if (res <= RESERVE_SHARE * x->glb) {
      cur.reserve = res;
      double cost = search ? group_cost(x, g, &cur, compute) : -total;
      if (cost < best_cost) {
        best_cost = cost;
        best_total = total;
        found = true;
      }
    }
    if (total >= whole)
      break;
  }
  if (found) {
    spread(x, gt, best_total);
    gt->reserve = reservation(x, g, gt, weights, state_t, iter_rank);
    return;
  }
  /* Nothing fits: weak fusion, the intermediates go off chip. */
  for (int i = 0; i < gr->n; i++)
    x->onchip[c->einsums[gr->einsums[i]]->out.tensor] = false;
  gt->nranks = 0;
  gt->reserve = weights;
}

/* ---- one Einsum ---- */

static bool first_reader_in_group(const Ctx *x, int e, int t) {
  const Cascade *c = x->c;
  int g = x->plan->group_of[e];
  for (int i = 0; i < e; i++)
    if (x->plan->group_of[i] == g && reads(c->einsums[i], t))
      return false;
  return true;
}

/* A read inside a recurrence: the lagged read itself (H[i-1]), or any
 * read between two Einsums of one cycle closed by a lagged read (HH -> H).
 * A recurrence must be co-iterated along its rank in every design, even
 * the unfused one, so these values pass on chip (each Einsum still writes
 * its whole output). */
static bool recurrence_read(const Ctx *x, int e, int t) {
  const Cascade *c = x->c;
  int p = c->tensors[t].producer;
  for (int i = 0; i < c->nedges; i++) {
    const Edge *ed = &c->edges[i];
    if (ed->consumer == e && ed->tensor == t && ed->lagged)
      return true;
  }
  if (p < 0 || !cascade_reaches(c, p, e))
    return false;
  /* Same cycle: E reaches P back through a lagged edge. */
  for (int i = 0; i < c->nedges; i++) {
    const Edge *ed = &c->edges[i];
    if (ed->lagged && ed->consumer != ed->producer &&
        cascade_reaches(c, e, ed->producer) &&
        cascade_reaches(c, ed->consumer, p))
      return true;
  }
  return false;
}

/* Does this read of T by E come from DRAM? In a tiled group, an
 * activation read by several members is fetched once per tile and held;
 * a weight is held only when resident, else each reader fetches it. */
static bool read_from_dram(const Ctx *x, const GroupTile *gt, int e, int t) {
  const Tensor *T = &x->c->tensors[t];
  bool shared = false;
  for (int r = 0; r < gt->nranks; r++)
    shared = shared || has_rank(T, gt->rank[r]);
  if (T->producer < 0) {
    if (gt->resident[t])
      return false; /* charged once for the group */
    return !shared || first_reader_in_group(x, e, t);
  }
  if (recurrence_read(x, e, t))
    return false; /* the recurrence's state stays on chip */
  if (x->d == DES_IDEAL && x->inter[t])
    return false;
  if (x->onchip[t] && x->plan->group_of[T->producer] == x->plan->group_of[e])
    return false;
  return gt->nranks == 0 || first_reader_in_group(x, e, t);
}

static bool write_to_dram(const Ctx *x, int t) {
  if (x->d == DES_IDEAL && x->inter[t])
    return false;
  return !x->onchip[t];
}

static void add_access(const Ctx *x, const Einsum *e, const Access *a,
                       MapTensor *m) {
  m->vars |= access_vars(a);
  m->ndims = a->n;
  for (int k = 0; k < a->n; k++) {
    const Index *ix = &a->idx[k];
    for (int t = 0; t < ix->nterms; t++) {
      int v = ix->var[t];
      double coef = ix->coef[t] ? fabs(shape_eval(x->s, ix->coef[t])) : 1;
      m->dim_vars[k] |= VARSET_BIT(v);
      m->dim_coef[k][v] = coef;
    }
  }
  (void)e;
}


static void charge_tensor(const Ctx *x, int t, double r, double w) {
  x->ev->tensor_read[t] += r * x->word;
  x->ev->tensor_write[t] += w * x->word;
}

static void charge(Traffic *tr, bool inter, double r, double w) {
  tr->read += r;
  tr->write += w;
  if (inter) {
    tr->inter_r += r;
    tr->inter_w += w;
  } else {
    tr->intra_r += r;
    tr->intra_w += w;
  }
}

static void map_einsum(const Ctx *x, int ei, const GroupTile *gt,
                       Traffic *tr, char *desc, size_t ndesc) {
  const Cascade *c = x->c;
  const Einsum *e = c->einsums[ei];
  MapProblem p = {0};
  int tensor_of[MAP_MAX_TENSORS];
  p.nvars = e->nvars < MAP_MAX_VARS ? e->nvars : MAP_MAX_VARS;
  for (int v = 0; v < p.nvars; v++)
    p.size[v] = rank_size(x, e->vars[v].rank);
  for (int k = 0; k < e->nreads && p.ntensors < MAP_MAX_TENSORS - 1; k++) {
    int t = e->reads[k]->tensor;
    int j = 0;
    while (j < p.ntensors && tensor_of[j] != t)
      j++;
    if (j == p.ntensors) {
      tensor_of[p.ntensors] = t;
      MapTensor *m = &p.t[p.ntensors++];
      m->elems = shape_tensor_elems(x->s, t);
      m->dram = read_from_dram(x, gt, ei, t);
    }
    add_access(x, e, e->reads[k], &p.t[j]);
  }
  int out = e->out.tensor;
  tensor_of[p.ntensors] = out;
  MapTensor *mo = &p.t[p.ntensors++];
  mo->elems = shape_tensor_elems(x->s, out);
  mo->output = true;
  mo->dram = write_to_dram(x, out);
  add_access(x, e, &e->out, mo);

  /* The group's tile: its ranks are the outermost loops. */
  for (int k = 0; k < gt->nranks; k++)
    for (int v = 0; v < p.nvars; v++)
      if (e->vars[v].rank == gt->rank[k] && VARSET_HAS(e->out_vars, v)) {
        p.outer |= VARSET_BIT(v);
        p.outer_tile[v] = gt->tile[k];
        break;
      }
  p.capacity = x->glb - gt->reserve;
  if (p.capacity < 1)
    p.capacity = 1;

  Mapping m;
  if (x->o.accounting == ACCOUNT_ACHIEVED) {
    map_search(&p, &m);
  } else { /* the algorithmic minimum: everything once */
    memset(&m, 0, sizeof m);
    for (int j = 0; j < p.ntensors; j++)
      if (p.t[j].dram) {
        m.read[j] = p.t[j].output ? 0 : p.t[j].elems;
        m.write[j] = p.t[j].output ? p.t[j].elems : 0;
      }
  }
  for (int j = 0; j < p.ntensors; j++) {
    int t = tensor_of[j];
    bool inter = x->inter[t];
    if (gt->resident[t] && first_reader_in_group(x, ei, t)) {
      /* Loaded once for the whole group, then held. */
      double n = shape_tensor_elems(x->s, t);
      charge(tr, inter, n, 0);
      if (x->ev)
        charge_tensor(x, t, n, 0);
      if (inter)
        tr->ideal_inter += n;
      else
        tr->ideal_intra += n;
    }
    charge(tr, inter, m.read[j], m.write[j]);
    if (x->ev)
      charge_tensor(x, t, m.read[j], m.write[j]);
    if (p.t[j].dram) {
      if (inter)
        tr->ideal_inter += p.t[j].elems;
      else
        tr->ideal_intra += p.t[j].elems;
    }
  }
  /* Buf descriptions of the loop nest: "v/tile" outermost first. */
  size_t len = 0;
  desc[0] = 0;
  if (x->o.accounting == ACCOUNT_ACHIEVED)
    for (int j = 0; j < m.norder && len + 24 < ndesc; j++) {
      int v = m.order[j];
      len += (size_t)snprintf(desc + len, ndesc - len, "%s%s/%.0f",
                              j ? " " : "", e->vars[v].name, m.tile[v]);
    }
  if (len == 0)
    snprintf(desc, ndesc, "%s", "-");
}

/* The paper's full-fusion rules, on top of the mapping's traffic. */
static void extra_traffic(const Ctx *x, int ei, Traffic *tr) {
  const Cascade *c = x->c;
  const Einsum *e = c->einsums[ei];
  int out = e->out.tensor;
  double n_out = shape_tensor_elems(x->s, out);
  if (x->rd_spill[out] || (x->two_pass[out] && x->onchip[out])) {
    charge(tr, true, 0, n_out); /* partial products / kept for a 2nd pass */
    charge_tensor(x, out, 0, n_out);
  }
  for (int t = 0; t < c->ntensors; t++) {
    if (!x->two_pass[t] || !reads(e, t))
      continue;
    int last = last_reader(c, t);
    if (last == ei) {
      charge(tr, x->inter[t], shape_tensor_elems(x->s, t), 0);
      charge_tensor(x, t, shape_tensor_elems(x->s, t), 0);
    }
  }
}

/* Whether E reads T at a point that can reach before the start of T's
 * rank (a lag, a window), where T's initialization supplies the value. */
static bool reads_before_start(const Cascade *c, const Einsum *e, int t) {
  const Einsum *ini = c->tensors[t].init;
  if (!ini)
    return false;
  for (int k = 0; k < e->nreads; k++)
    if (e->reads[k]->tensor == t &&
        !e->reads[k]->idx[ini->out.cond_dim].plain)
      return true;
  return false;
}

/* The decode state: reads before the start take the initialization, whose
 * inputs (H0, the convolution history) are read once per group, by its
 * first Einsum that reaches before the start. */
static void state_traffic(const Ctx *x, int ei, Traffic *tr) {
  const Cascade *c = x->c;
  const Einsum *e = c->einsums[ei];
  int g = x->plan->group_of[ei];
  for (int k = 0; k < e->nreads; k++) {
    int t = e->reads[k]->tensor;
    const Tensor *T = &c->tensors[t];
    bool first = reads_before_start(c, e, t);
    for (int j = 0; j < k && first; j++)
      first = e->reads[j]->tensor != t; /* each tensor once per Einsum */
    for (int i = 0; i < ei && first; i++)
      first = x->plan->group_of[i] != g ||
              !reads_before_start(c, c->einsums[i], t);
    if (!first)
      continue;
    for (int j = 0; j < T->init->nreads; j++) {
      int s = T->init->reads[j]->tensor;
      double n = shape_tensor_elems(x->s, s);
      charge(tr, false, n, 0);
      charge_tensor(x, s, n, 0);
      tr->ideal_intra += n;
    }
  }
}

/* Work, binding utilization and compute cycles of Einsum EI. */
static bool price_compute(Ctx *x, int ei, EinsumEval *r) {
  const Cascade *c = x->c;
  const Unit *u = &x->a->units[x->unit[ei]];
  r->einsum = ei;
  r->group = x->plan->group_of[ei];
  r->unit = x->unit[ei];
  model_work(c, x->s, c->einsums[ei], &r->work);
  r->util = utilization(x, ei, &r->work);
  double cyc = 0;
  for (int k = 0; k < OPC_COUNT; k++) {
    if (r->work.ops[k] <= 0)
      continue;
    if (u->rate[k] <= 0) {
      diag_error(x->diag, c->path, c->einsums[ei]->loc,
                 "%s: unit %s cannot run %s operations (no rate in %s)",
                 c->tensors[c->einsums[ei]->out.tensor].name, u->name,
                 opclass_name((OpClass)k), x->a->path);
      return false;
    }
    cyc += r->work.ops[k] / (u->pes * r->util * u->rate[k]);
  }
  r->compute_cycles = cyc;
  return true;
}

/* Its DRAM traffic under the group's tile, and the resulting cycles. */
static void price_traffic(Ctx *x, int ei, const GroupTile *gt,
                          EinsumEval *r) {
  const Cascade *c = x->c;
  const Unit *u = &x->a->units[x->unit[ei]];
  Traffic tr = {0};
  map_einsum(x, ei, gt, &tr, r->mapping, sizeof r->mapping);
  if (x->o.accounting == ACCOUNT_ACHIEVED)
    extra_traffic(x, ei, &tr);
  if (x->o.state_io)
    state_traffic(x, ei, &tr);
  double w = x->word;
  r->read = tr.read * w;
  r->write = tr.write * w;
  r->inter_read = tr.inter_r * w;
  r->inter_write = tr.inter_w * w;
  r->intra_read = tr.intra_r * w;
  r->intra_write = tr.intra_w * w;
  r->ideal_inter = tr.ideal_inter * w;
  r->ideal_intra = tr.ideal_intra * w;
  r->mem_cycles = (r->read + r->write) / x->bw;
  r->cycles = (x->o.no_overlap ? r->compute_cycles + r->mem_cycles
                               : fmax(r->compute_cycles, r->mem_cycles)) +
              u->pipeline;
  /* The buffer sees every operand once per Einsum; registers, three
   * accesses per operation. */
  double glb = shape_tensor_elems(x->s, c->einsums[ei]->out.tensor);
  for (int k = 0; k < c->einsums[ei]->nreads; k++)
    glb += shape_tensor_elems(x->s, c->einsums[ei]->reads[k]->tensor);
  r->glb_bytes = glb * w + r->read + r->write;
  r->reg_bytes = 3 * r->work.total * w;
}

/* ---- composition and totals ---- */

static const MemLevel *level(const Arch *a, int k) {
  return &a->levels[k < a->nlevels ? k : a->nlevels - 1];
}

static void energy(const Ctx *x, EinsumEval *r) {
  const Arch *a = x->a;
  const MemLevel *dram = level(a, 0), *glb = level(a, 1);
  const MemLevel *reg = level(a, a->nlevels - 1);
  double d = r->read * dram->read_pj + r->write * dram->write_pj;
  double g = r->glb_bytes * 0.5 * (glb->read_pj + glb->write_pj);
  double rg = r->reg_bytes * 0.5 * (reg->read_pj + reg->write_pj);
  double ops = 0;
  for (int k = 0; k < OPC_COUNT; k++)
    ops += r->work.ops[k] * a->op_pj[k];
  r->energy_pj = d + g + rg + ops;
  Eval *ev = x->ev;
  ev->energy_dram += d;
  ev->energy_glb += g;
  ev->energy_reg += rg;
  ev->energy_ops += ops;
}

/* Matrix and vector modes share PEs: their busy time adds up. */
static int physical(const Arch *a, int unit) {
  while (a->units[unit].mode_of >= 0)
    unit = a->units[unit].mode_of;
  return unit;
}

/* Sequential composition: one Einsum after another, each taking the
 * longer of its compute and its DRAM transfers. */
static double compose_sequential(const Ctx *x, GroupEval *ge, double t) {
  Eval *ev = x->ev;
  double clock = t;
  for (int i = ge->first; i < ge->first + ge->n; i++) {
    ev->e[i].start = clock;
    clock += ev->e[i].cycles;
    ev->e[i].end = clock;
  }
  return clock - t;
}

/* Parallel pipelining: every unit and the DRAM channel work at once; the
 * group takes as long as its busiest resource (matrix and vector modes
 * share PEs, so their busy times add up). */
static double compose_pipelined(const Ctx *x, GroupEval *ge, double t) {
  Eval *ev = x->ev;
  const Arch *a = x->a;
  double busy[32] = {0}, fill = 0;
  for (int i = ge->first; i < ge->first + ge->n; i++) {
    const EinsumEval *r = &ev->e[i];
    int pu = physical(a, r->unit);
    if (pu < 32)
      busy[pu] += r->compute_cycles;
    fill = fmax(fill, a->units[r->unit].pipeline);
  }
  double span = ge->mem_cycles;
  for (int u = 0; u < 32; u++)
    span = fmax(span, busy[u]);
  span += fill;
  for (int i = ge->first; i < ge->first + ge->n; i++) {
    ev->e[i].start = t;
    ev->e[i].end = t + span;
  }
  return span;
}

static void compose(Ctx *x) {
  Eval *ev = x->ev;
  const Arch *a = x->a;
  double t = 0;
  for (int g = 0; g < ev->ngroups; g++) {
    GroupEval *ge = &ev->g[g];
    ge->start = t;
    ge->mem_cycles = 0;
    for (int i = ge->first; i < ge->first + ge->n; i++) {
      const EinsumEval *r = &ev->e[i];
      ge->busy[a->units[r->unit].role] += r->compute_cycles;
      ge->mem_cycles += r->mem_cycles;
    }
    ge->cycles = x->o.compose == COMPOSE_PIPELINED
                     ? compose_pipelined(x, ge, t)
                     : compose_sequential(x, ge, t);
    t += ge->cycles;
    ge->end = t;
  }
  ev->cycles = t;
  ev->seconds = t / a->clock_hz;
}

Eval *model_eval(const Cascade *c, const Shape *s, const Arch *a,
                 const Pair *pairs, Design d, const ModelOpts *o,
                 Diag *diag) {
  Ctx x = {.c = c, .s = s, .a = a, .pairs = pairs, .d = d, .o = *o,
           .diag = diag};
  if (arch_unit(a, ROLE_MATRIX) < 0 && arch_unit(a, ROLE_VECTOR) < 0) {
    diag_error(diag, a->path, (Loc){0, 0},
               "architecture %s has no matrix or vector unit", a->name);
    return NULL;
  }
  x.plan = design_plan(&x);
  x.word = a->word_bytes;
  x.glb = a->nlevels > 1 ? a->levels[1].capacity / a->word_bytes : INFINITY;
  x.bw = a->levels[0].bandwidth / a->clock_hz;
  size_t nt = (size_t)c->ntensors + 1;
  x.inter = xcalloc(nt, sizeof(bool));
  x.onchip = xcalloc(nt, sizeof(bool));
  x.two_pass = xcalloc(nt, sizeof(bool));
  x.rd_spill = xcalloc(nt, sizeof(bool));
  x.unit = xcalloc((size_t)c->neinsums + 1, sizeof(int));
  decide_residency(&x);
  bind(&x);

  Eval *ev = xcalloc(1, sizeof *ev);
  x.ev = ev;
  ev->design = d;
  ev->opts = *o;
  ev->plan = x.plan;
  ev->n = c->neinsums;
  ev->e = xcalloc((size_t)c->neinsums + 1, sizeof *ev->e);
  ev->ngroups = x.plan->ngroups;
  ev->g = xcalloc((size_t)x.plan->ngroups + 1, sizeof *ev->g);
  ev->tensor_read = xcalloc(nt, sizeof(double));
  ev->tensor_write = xcalloc(nt, sizeof(double));
  bool ok = true;
  int k = 0;
  GroupTile gt = {.resident = xcalloc(nt, sizeof(bool))};
  double *compute = xcalloc((size_t)c->neinsums + 1, sizeof(double));
  for (int g = 0; ok && g < x.plan->ngroups; g++) {
    const Group *gr = &x.plan->groups[g];
    ev->g[g].first = k;
    ev->g[g].n = gr->n;
    for (int i = 0; ok && i < gr->n; i++) {
      ok = price_compute(&x, gr->einsums[i], &ev->e[k + i]);
      compute[i] = ev->e[k + i].compute_cycles;
    }
    if (!ok)
      break;
    memset(gt.resident, 0, nt * sizeof(bool));
    choose_group_tile(&x, g, &gt, compute);
    for (int i = 0; i < gr->n; i++) {
      EinsumEval *r = &ev->e[k++];
      price_traffic(&x, gr->einsums[i], &gt, r);
      energy(&x, r);
      ev->read += r->read;
      ev->write += r->write;
      ev->inter += r->inter_read + r->inter_write;
      ev->intra += r->intra_read + r->intra_write;
      ev->ideal_inter += r->ideal_inter;
      ev->ideal_intra += r->ideal_intra;
      ev->ops += r->work.total;
    }
  }
  free(compute);
  free(gt.resident);
  if (ok) {
    compose(&x);
    ev->energy_pj =
        ev->energy_dram + ev->energy_glb + ev->energy_reg + ev->energy_ops;
  }
  free(x.inter);
  free(x.onchip);
  free(x.two_pass);
  free(x.rd_spill);
  free(x.unit);
  if (!ok) {
    eval_free(ev);
    return NULL;
  }
  return ev;
}

void eval_free(Eval *e) {
  if (!e)
    return;
  plan_free(e->plan);
  free(e->e);
  free(e->g);
  free(e->tensor_read);
  free(e->tensor_write);
  free(e);
}
