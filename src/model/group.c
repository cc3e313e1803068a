/* group.c — one fusion group on the fusion level, the global buffer
 * (docs/model.md §3):
 * what it holds across its Einsums, the tile its loops walk, what goes off
 * chip when that does not fit, and each Einsum's mapping and traffic.
 *
 * Per tile of the group's ranks (the plan's geometry: the tokens, for
 * Mamba) the group holds:
 *   - MADE: a tensor produced in the group, from its producer to its last
 *     reader there (handed over on chip; written once if it escapes);
 *   - SHARED: a tensor the group reads from DRAM in several members, from
 *     the first reader to the last (fetched once per tile);
 *   - WEIGHT: a tensor read from DRAM without the group's ranks, resident
 *     for the whole group when the weights fit in weight_share;
 *   - one step of the recurrence's state.
 * That reservation must fit in reserve_share of the buffer, and each
 * member's own tiles in the rest. The tile is the largest that fits, or,
 * when some member refetches a weight per tile, the fastest (ties: less
 * DRAM traffic, then the larger tile). A tile larger than the largest
 * that fits may overbook the reservation: each held tensor keeps the share
 * of its tile that fits on chip and sends the rest off chip (FLAT's part
 * of a row); it is chosen when it is faster (ties: less traffic) than
 * shrinking the tile, which refetches what the members read per tile --
 * where DRAM is the only level with a bandwidth, so that the choice
 * prices all a tile's time.
 * When no tile fits, held tensors go off chip one at a time, the one
 * adding the least traffic first (the paper's partial fusion, §IV-A),
 * until one does.
 *
 * Its members' nests and bills are members.c's, the design's extra
 * traffic extras.c's (group.h: what they share). */
#include "group.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool has_tile_rank(const Grp *G, int t) {
  for (int j = 0; j < G->nt; j++)
    if (tensor_has_rank(&G->x->c->tensors[t], G->rank[j]))
      return true;
  return false;
}

/* ---- what the group holds ---- */

/* A new held tensor (G->held has room: collect_held's). */
static Held *new_held(Grp *G, int t, HeldKind k) {
  Held *h = &G->held[G->nheld];
  *h = (Held){.tensor = t, .kind = k, .first = -1, .last = -1, .on = true};
  G->held_of[t] = G->nheld++;
  return h;
}

static int by_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

/* The group's tensors, in one pass over its members: produced here and
 * read here (MADE), or read from DRAM here without the group's ranks
 * (WEIGHT) or by several members (SHARED). What the geometry moves for
 * each, once, is its charge. Per-tensor scratch is the context's
 * (Ctx.held), set back to rest for the tensors it touched: a group's
 * pricing takes time in its own size, not the cascade's. */
static void collect_held(Grp *G) {
  const Ctx *x = G->x;
  const Cascade *c = x->c;
  const Plan *p = x->plan;
  const int *m = G->gr->einsums;
  size_t nt = (size_t)c->ntensors + 1;
  HeldScratch *h = x->held;
  int *first = h->first, *last = h->last, *readers = h->readers,
      *made = h->made;
  double *rd = h->rd, *wr = h->wr;
  int nseen = 0, most = 0; /* SEEN: the tensors whose first[] is set */
  for (int j = 0; j < G->n; j++)
    most += c->einsums[m[j]]->nreads;
  int *seen = xmalloc(((size_t)most + 1) * sizeof *seen);
  for (int j = 0; j < G->n; j++)
    for (int k = x->xfer_at[m[j]]; k < x->xfer_at[m[j] + 1]; k++) {
      const Transfer *f = &p->xfers[x->xfer_ord[k]];
      if (f->kind == XFER_READ || f->kind == XFER_WRITE)
        *(f->kind == XFER_WRITE ? &wr[f->tensor] : &rd[f->tensor]) = f->elems;
    }
  for (int j = 0; j < G->n; j++) {
    const Einsum *e = c->einsums[m[j]];
    for (int k = 0; k < e->nreads; k++) {
      int t = e->reads[k]->tensor;
      bool here = made[t] >= 0;
      if (!here && p->src[m[j]][k] != SRC_DRAM)
        continue;
      if (first[t] < 0) {
        first[t] = here ? made[t] : j;
        seen[nseen++] = t;
      }
      if (last[t] != j)
        readers[t]++;
      last[t] = j;
    }
    made[e->out.tensor] = j;
  }
  /* In order of first use, then of tensor: the tensors the members read
   * (SEEN), sorted by that key. */
  long *key = xmalloc(((size_t)nseen + 1) * sizeof *key);
  for (int q = 0; q < nseen; q++)
    key[q] = (long)first[seen[q]] * (long)nt + seen[q];
  qsort(key, (size_t)nseen, sizeof *key, by_long);
  G->held = xmalloc(((size_t)nseen + 1) * sizeof *G->held);
  for (int q = 0; q < nseen; q++) {
    int t = (int)(key[q] % (long)nt), i = first[t];
    HeldKind k = made[t] >= 0 && made[t] < last[t] ? HELD_MADE
                 : !has_tile_rank(G, t)           ? HELD_WEIGHT
                                                  : HELD_SHARED;
    if (k == HELD_SHARED && readers[t] < 2)
      continue;
    Held *hd = new_held(G, t, k);
    hd->first = i;
    hd->last = k == HELD_WEIGHT ? G->n - 1 : last[t];
    hd->charge = k == HELD_MADE ? (p->written[t] ? wr[t] : 0) : rd[t];
  }
  /* Back to rest: every entry set above. */
  for (int j = 0; j < G->n; j++) {
    for (int k = x->xfer_at[m[j]]; k < x->xfer_at[m[j] + 1]; k++)
      rd[p->xfers[x->xfer_ord[k]].tensor] =
          wr[p->xfers[x->xfer_ord[k]].tensor] = 0;
    made[c->einsums[m[j]]->out.tensor] = -1;
  }
  for (int q = 0; q < nseen; q++) {
    first[seen[q]] = last[seen[q]] = -1;
    readers[seen[q]] = 0;
  }
  free(key);
  free(seen);
}

HeldScratch *held_scratch_new(int ntensors) {
  size_t nt = (size_t)ntensors + 1;
  HeldScratch *h = xmalloc(sizeof *h);
  /* Two blocks, the int rows and the double rows: at rest every int row
   * is -1 but READERS, 0, as are RD and WR. */
  int **rows[] = {&h->first, &h->last, &h->made, &h->held_of, &h->readers};
  int nrows = (int)(sizeof rows / sizeof rows[0]);
  int *ints = xmalloc((size_t)nrows * nt * sizeof *ints);
  for (int k = 0; k < nrows; k++)
    *rows[k] = ints + (size_t)k * nt;
  for (size_t t = 0; t < (size_t)(nrows - 1) * nt; t++)
    ints[t] = -1;
  memset(h->readers, 0, nt * sizeof *h->readers);
  h->rd = xcalloc(2 * nt, sizeof *h->rd);
  h->wr = h->rd + nt;
  return h;
}

void held_scratch_free(HeldScratch *h) {
  if (!h)
    return;
  free(h->first); /* the int rows' block */
  free(h->rd);    /* the double rows' */
  free(h);
}

bool model_distance_spills(const Cascade *c, const EdgeIndex *out, int t,
                           int distance) {
  int p = c->tensors[t].producer, last = -1;
  if (distance <= 0 || p < 0)
    return false;
  /* T's edges are its producer's: those alone where they are indexed. */
  int from = out ? out->at[p] : 0, to = out ? out->at[p + 1] : c->nedges;
  for (int q = from; q < to; q++) {
    const Edge *e = &c->edges[out ? out->ord[q] : q];
    if (e->tensor == t && edge_orders(c, e) && e->consumer > last)
      last = e->consumer;
  }
  return last - p > distance;
}

/* The intermediates held in the group that go off chip by choice: the
 * plan's (the search chose them: exactly those), else the fully fused
 * design's distance rule. Only one handed over inside the group and not
 * written anyway: sending a written one off chip is a capacity matter. */
static void design_spills(Grp *G) {
  const Ctx *x = G->x;
  if (x->o.accounting != ACCOUNT_ACHIEVED)
    return;
  const bool *chosen = x->plan->spilled;
  for (int i = 0; i < G->nheld; i++) {
    Held *h = &G->held[i];
    int t = h->tensor;
    if (h->kind != HELD_MADE || x->plan->written[t])
      continue;
    bool off = chosen ? chosen[t]
                      : model_distance_spills(x->c, NULL, t, x->o.spill_distance);
    if (off) {
      h->on = false;
      add_spill(G, t, chosen ? SPILL_CHOSEN : SPILL_DISTANCE);
    }
  }
}

/* Resident weights only when they all fit in weight_share. */
static void weight_residency(Grp *G) {
  double total = 0;
  for (int i = 0; i < G->nheld; i++)
    if (G->held[i].kind == HELD_WEIGHT)
      total += shape_tensor_elems(G->x->s, G->held[i].tensor);
  if (total <= G->x->o.weight_share * G->x->glb)
    return;
  for (int i = 0; i < G->nheld; i++)
    if (G->held[i].kind == HELD_WEIGHT)
      G->held[i].on = false;
}

/* ---- the tile ---- */

/* The recurrence inside the group: the lagged tensor and the rank it
 * iterates, or -1. The first lagged edge into a member, in the cascade's
 * order (the members' incoming edges, Ctx.in: not every edge). */
static int recurrence_of(const Grp *G, int *iter_rank) {
  const Ctx *x = G->x;
  const Cascade *c = x->c;
  int n = 0, most = 0;
  for (int i = 0; i < G->n; i++)
    most += x->in.at[G->gr->einsums[i] + 1] - x->in.at[G->gr->einsums[i]];
  int *lagged = xmalloc(((size_t)most + 1) * sizeof *lagged);
  for (int i = 0; i < G->n; i++)
    for (int q = x->in.at[G->gr->einsums[i]];
         q < x->in.at[G->gr->einsums[i] + 1]; q++)
      if (!edge_orders(c, &c->edges[x->in.ord[q]]))
        lagged[n++] = x->in.ord[q];
  qsort(lagged, (size_t)n, sizeof *lagged, int_ascending);
  int found = -1;
  for (int q = 0; q < n && found < 0; q++) {
    const Edge *e = &c->edges[lagged[q]];
    for (int k = 0; k < e->acc[0]->n && found < 0; k++)
      if (e->acc[0]->idx[k].lag > 0) {
        *iter_rank = c->tensors[e->tensor].ranks[k];
        found = e->tensor;
      }
  }
  free(lagged);
  return found;
}

/* Spread a tile of TOTAL elements over the ranks, innermost first (tokens
 * along i before b: consecutive steps of a recurrence). */
static void spread(Grp *G, double total) {
  for (int k = G->nt - 1; k >= 0; k--) {
    G->tile[k] = total < G->size[k] ? total : G->size[k];
    if (G->tile[k] < 1)
      G->tile[k] = 1;
    total = ceil(total / G->tile[k]);
  }
}

/* The share of held tensor H one tile holds: the tile over the size
 * along each tile rank it has (H->tiled), in the ranks' order. */
static double tile_fraction(const Grp *G, const Held *h) {
  double f = 1;
  for (int k = 0; k < G->nt; k++)
    if (h->tiled >> k & 1)
      f *= G->tile[k] / G->size[k];
  return f;
}

/* Does Einsum E keep (write) a variable over rank R? */
static bool keeps_rank(const Einsum *e, int r) {
  for (int v = 0; v < e->nvars; v++)
    if (e->vars[v].rank == r && VARSET_HAS(e->out_vars, v))
      return true;
  return false;
}

/* Within a tile, the members from FIRST to LAST can run a nested loop over
 * any rank of T that all of them keep (the SSM's D and N): T then lives
 * one sub-tile at a time. The factor its footprint shrinks by. */
static double nested_factor(const Grp *G, int t, int first, int last) {
  const Cascade *c = G->x->c;
  const Tensor *T = &c->tensors[t];
  double f = 1;
  for (int k = 0; k < T->nranks; k++) {
    int r = T->ranks[k];
    bool outer = false;
    for (int j = 0; j < G->nt; j++)
      outer = outer || G->rank[j] == r;
    bool all = !outer;
    for (int i = first; all && i <= last; i++)
      all = keeps_rank(c->einsums[G->gr->einsums[i]], r);
    if (all)
      f *= (double)G->x->s->size[r];
  }
  return f;
}

/* Each held tensor's elements, nested factor and tile ranks, for the
 * group's tile ranks now: they change with neither the tile nor the
 * spills, so they are set once per group (the frame keeps them) and again
 * only when the group drops its tile ranks. */
static void shape_held(Grp *G) {
  for (int i = 0; i < G->nheld; i++) {
    Held *h = &G->held[i];
    h->whole = shape_tensor_elems(G->x->s, h->tensor);
    h->nested = nested_factor(G, h->tensor, h->first, h->last);
    h->tiled = 0;
    for (int k = 0; k < G->nt; k++)
      if (tensor_has_rank(&G->x->c->tensors[h->tensor], G->rank[k]))
        h->tiled |= 1u << k;
  }
  G->shaped = G->nt;
}

static double footprint(const Grp *G, const Held *h) {
  if (h->kind == HELD_WEIGHT || G->whole)
    return h->whole;
  return h->whole * tile_fraction(G, h) / h->nested;
}

/* Kept trial K with room for N members and NHELD held tensors (doubled:
 * the search's groups grow one member at a time). A slot grows only when
 * its candidate tile is tried, at a group's first price (the frame was
 * forgotten: nothing in it is kept), so its arrays are made afresh rather
 * than copied: 80 slots of a member's Mapping each, grown together, were
 * 2 % of `reproduce` in copies and page faults. */
static void kept_room(Kept *k, int n, int nheld) {
  if (k->room_members >= n && k->room_held >= nheld)
    return;
  int twice = 2 * k->room_members, twice_held = 2 * k->room_held;
  k->room_members = n > twice ? n : twice;
  k->room_held = nheld > twice_held ? nheld : twice_held;
  size_t nm = (size_t)k->room_members + 1, nh = (size_t)k->room_held + 1;
#define FRESH(field, count)                                                 \
  free(k->field);                                                           \
  k->field = xmalloc((count) * sizeof *k->field);
  FRESH(on, nh)
  FRESH(have, nm)
  FRESH(map, nm)
  FRESH(elems, nm)
  FRESH(cyc, nm)
  FRESH(foot, nh)
  FRESH(sum, nm)
  FRESH(res_on, nh)
#undef FRESH
  k->set = k->res_set = false;
}

/* Candidate tile AT's slot in G's pricer's frame, with room for G, or
 * NULL (no frame, or no candidate: AT < 0). */
static Kept *kept_at(const Grp *G, int at) {
  Frame *f = G->x->frame;
  if (!f || at < 0)
    return NULL;
  kept_room(&f->kept[at], G->n, G->nheld);
  return &f->kept[at];
}

/* The sum at member K of the footprints FOOT of the held tensors but
 * weights live there and held, in held order (none with hold_whole:
 * they are all fixed). */
static double live_sum(const Grp *G, const double *foot, int k) {
  double at = 0;
  if (G->whole)
    return 0;
  for (int q = G->live_from[k]; q < G->live_from[k + 1]; q++)
    if (G->held[G->live_at[q]].on)
      at += foot[G->live_at[q]];
  return at;
}

/* The footprints FOOT of the held weights (with hold_whole, of every held
 * tensor) held, summed in held order: room for the whole group. */
static double fixed_sum(const Grp *G, const double *foot) {
  double fixed = 0;
  for (int i = 0; i < G->nheld; i++)
    if (G->held[i].on && (G->held[i].kind == HELD_WEIGHT || G->whole))
      fixed += foot[i];
  return fixed;
}

/* Elements held at the peak over the members (PEAK: its position), for the
 * current tile (of TOTAL elements, candidate AT: -1 where none), all of
 * every held tensor's tile on chip; *LIVE (may be NULL) gets the part of
 * them the tensors live at the peak hold (what overbooking scales; weights
 * and the state's step stay whole). Each held tensor's footprint depends
 * on the tile only, and each member's sum on what is held among the
 * tensors live there: the candidate's slot keeps them (kept_at), so
 * another spill variant sums again only where a tensor whose holding
 * changed is live, each sum made as the whole walk makes it. */
static double reservation(const Grp *G, int at, double total, int *peak,
                          double *live) {
  Kept *kp = kept_at(G, at);
  double *foot = kp ? kp->foot : G->fp, *sum = kp ? kp->sum : G->sum;
  double fixed;
  if (kp && kp->res_set && kp->res_nt == G->nt && kp->res_total == total) {
    bool refix = false;
    for (int h = 0; h < G->nheld; h++) {
      const Held *hd = &G->held[h];
      if (kp->res_on[h] == hd->on)
        continue;
      kp->res_on[h] = hd->on;
      if (hd->kind == HELD_WEIGHT || G->whole)
        refix = true;
      else
        for (int k = hd->first; k <= hd->last; k++)
          sum[k] = live_sum(G, foot, k);
    }
    fixed = refix ? fixed_sum(G, foot) : kp->fixed;
  } else {
    for (int i = 0; i < G->nheld; i++)
      foot[i] = footprint(G, &G->held[i]);
    fixed = fixed_sum(G, foot);
    for (int k = 0; k < G->n; k++)
      sum[k] = live_sum(G, foot, k);
    if (kp) {
      kp->res_set = true;
      kp->res_nt = G->nt;
      kp->res_total = total;
      for (int h = 0; h < G->nheld; h++)
        kp->res_on[h] = G->held[h].on;
    }
  }
  if (kp)
    kp->fixed = fixed;
  double best = -1;
  *peak = 0;
  for (int k = 0; k < G->n; k++)
    if (sum[k] > best) {
      best = sum[k];
      *peak = k;
    }
  double res = fixed + fmax(best, 0);
  if (live)
    *live = fmax(best, 0);
  if (G->state_t >= 0) { /* one step of the state, for the tile's rest */
    const Tensor *T = &G->x->c->tensors[G->state_t];
    double f = 1;
    for (int k = 0; k < G->nt; k++)
      if (G->rank[k] != G->iter_rank && tensor_has_rank(T, G->rank[k]))
        f *= G->tile[k] / G->size[k];
    res += shape_tensor_elems(G->x->s, G->state_t) /
           (double)G->x->s->size[G->iter_rank] * f;
  }
  return res;
}

/* ---- choosing the tile ---- */

typedef struct Trial {
  bool ok;
  double latency, traffic; /* cycles, elements */
  int id; /* its number in the context's trace (Ctx.trace), or -1 */
} Trial;

/* The kept trial of candidate tile AT (the current tile, of TOTAL
 * elements, with CAP elements for the members, all of every held tensor's
 * tile on chip), or NULL where none is kept (no group pricer, or an
 * overbooked tile). Into SAME (per member): whether its kept mapping and
 * moves are this trial's -- a member's problem and moves depend on the
 * tile, the capacity and only the held tensors it reads or writes. A
 * slot kept for another tile or capacity is started over (SAME all
 * false). */
static Kept *kept_trial(const Grp *G, int at, double total, double cap,
                        bool *same) {
  Kept *k = G->keep < 1 ? NULL : kept_at(G, at);
  if (!k || !k->set || k->nt != G->nt || k->state_t != G->state_t ||
      k->total != total || k->cap != cap) {
    for (int i = 0; i < G->n; i++)
      same[i] = false;
    if (!k)
      return NULL;
    k->set = true;
    k->nt = G->nt;
    k->state_t = G->state_t;
    k->total = total;
    k->cap = cap;
    for (int i = 0; i < G->n; i++)
      k->have[i] = false;
    return k;
  }
  /* The held tensors held then and not now, or now and not then: the
   * members reading or writing one (its users) map again. */
  memcpy(same, k->have, (size_t)G->n * sizeof *same);
  for (int h = 0; h < G->nheld; h++)
    if (k->on[h] != G->held[h].on)
      for (int q = G->user_from[h]; q < G->user_from[h + 1]; q++)
        same[G->users[q]] = false;
  return k;
}

/* Price the current tile, candidate AT of TOTAL elements (-1: none
 * kept): every member mapped into what the reservation leaves; MAPS gets
 * each member's mapping (in its nest: member_map), its tile's kept trial
 * keeping it too where there is one. A kept member keeps its cycles too
 * (compose_span). */
static Trial try_tile(const Grp *G, double reserve, const Mapping **maps,
                      int at, double total) {
  const Ctx *x = G->x;
  Trial tr = {.ok = true, .id = -1};
  double cap = fmax(x->glb - reserve, 0);
  double *mem = G->mem;
  bool *same = G->same;
  Kept *k = kept_trial(G, at, total, cap, same);
  int i = 0;
  for (; i < G->n && tr.ok; i++) {
    const Mapping *m;
    double elems;
    if (same[i]) {
      m = k->map[i];
      elems = k->elems[i];
    } else {
      m = member_map(G, i, cap);
      elems = m->traffic + held_charges(G, i);
      if (k) {
        k->map[i] = m;
        k->elems[i] = elems;
        k->have[i] = true;
        k->cyc[i] = -1;
      }
    }
    maps[i] = m;
    tr.ok = m->fits;
    tr.traffic += elems;
    mem[i] = elems; /* trial_latency makes them cycles */
  }
  if (k) { /* past a member that does not fit: kept only where it stays */
    for (; i < G->n; i++)
      k->have[i] = k->have[i] && same[i];
    for (int h = 0; h < G->nheld; h++)
      k->on[h] = G->held[h].on;
  }
  if (tr.ok) {
    tr.id = trace_trial(x->trace, mem, G->n, tr.traffic);
    tr.latency = trial_latency(x, G->bound, G->n, mem, k ? k->cyc : NULL);
  }
  return tr;
}

/* A lower bound on try_tile's price for the current tile, without a
 * search: each member's mapping moves every tensor it reads or writes in
 * DRAM at least once (map_price: |A| times its refetches), beside the
 * group's own moves at it. */
static Trial bound_tile(const Grp *G) {
  const Ctx *x = G->x;
  Trial tr = {.ok = true};
  double *mem = G->mem;
  for (int i = 0; i < G->n; i++) {
    const MapProblem *p = member_problem(G, i, 0);
    double elems = held_charges(G, i);
    for (int j = 0; j < p->ntensors; j++)
      if (p->t[j].dram)
        elems += p->t[j].elems;
    tr.traffic += elems;
    mem[i] = elems;
  }
  tr.id = trace_trial(x->trace, mem, G->n, tr.traffic);
  tr.latency = trial_latency(x, G->bound, G->n, mem, NULL);
  return tr;
}

double trial_latency(const Ctx *x, const EinsumEval *bound, int n,
                     double *mem, double *cycles) {
  for (int i = 0; i < n; i++)
    mem[i] = mem[i] * x->word / x->bw;
  return compose_span(x, bound, n, mem, cycles);
}

/* Does some member fetch a weight per tile (a read from DRAM without the
 * group's ranks, not resident)? Then the tile trades those refetches
 * against what the buffer holds, and every tile is priced. */
static bool refetches_weights(const Grp *G) {
  for (int k = 0; k < G->nheld; k++)
    if (G->held[k].kind == HELD_WEIGHT && !G->held[k].on)
      return true;
  return false;
}

static bool better(const Trial *a, const Trial *b) {
  const double eps = 1e-9;
  if (a->latency < b->latency * (1 - eps))
    return true;
  if (a->latency > b->latency * (1 + eps))
    return false;
  return a->traffic < b->traffic * (1 - eps);
}

bool tile_faster(double lat_a, double traffic_a, double lat_b,
                 double traffic_b) {
  return better(&(Trial){.latency = lat_a, .traffic = traffic_a},
                &(Trial){.latency = lat_b, .traffic = traffic_b});
}

/* better, kept in the context's trace: a bill of the price keeps every
 * comparison of times, to check it at another bandwidth or clock
 * (timing.c). */
static bool better_noted(const Grp *G, const Trial *a, const Trial *b) {
  bool yes = better(a, b);
  trace_compare(G->x->trace, a->id, b->id, yes);
  return yes;
}

/* Does DRAM bound the only level with a bandwidth? Then a tile's price
 * (try_tile: compute and DRAM) is all its time, and a tile that overbooks
 * can be weighed against one that fits. Where another level has one (the
 * buffer of eyeriss, the H100's L2 and shared memory, a staging L2), what
 * a larger tile changes there goes unpriced by the choice: the group
 * keeps a tile that fits. */
static bool priced_by_dram(const Arch *a) {
  for (int l = 0; l < a->nlevels; l++)
    if (arch_level_role(a, l) != LEVEL_OFFCHIP &&
        arch_level_has_bandwidth(&a->levels[l]))
      return false;
  return true;
}

/* Set the tile of TOTAL elements (candidate AT) and what it keeps on
 * chip: all of every held tensor's tile when the reservation fits the
 * budget; with OVERBOOK, else, the share of the live tensors' tiles that
 * fits beside the rest (none: 0). Returns the elements reserved, or -1
 * when it does not fit. */
static double set_tile(Grp *G, int at, double total, bool overbook) {
  spread(G, total);
  int pk;
  double live;
  double res = reservation(G, at, total, &pk, &live);
  G->keep = 1;
  G->set_total = total;
  G->set_res = res;
  if (res <= G->budget)
    return res;
  double room = G->budget - (res - live);
  if (!overbook || live <= 0 || room <= 0)
    return G->set_res = -1;
  G->keep = room / live;
  return G->set_res = G->budget;
}

/* Does candidate tile AT of CAND fit (its reservation in the budget,
 * every member in the rest)? TR gets its price, MAPS its mappings
 * (try_tile). RES: its reservation where known (reserved_up_to's), else
 * -1. */
static bool fits(Grp *G, const double *cand, int at, double res, Trial *tr,
                 const Mapping **maps) {
  if (res >= 0) { /* the tile set_tile would set */
    spread(G, cand[at]);
    G->keep = 1;
    G->set_total = cand[at];
    G->set_res = res;
  } else {
    res = set_tile(G, at, cand[at], false);
  }
  if (res < 0)
    return false;
  *tr = try_tile(G, res, maps, at, cand[at]);
  return tr->ok;
}

/* The largest of the NC candidate tiles CAND (ascending) whose
 * reservation fits the budget, or -1: the reservation only grows with
 * the tile, so by bisection, above KNOWN (one known to fit, or -1).
 * *RES gets its reservation where the bisection found it, else -1. */
static int reserved_up_to(Grp *G, const double *cand, int nc, int known,
                          double *res) {
  int lo = known + 1, hi = nc - 1, top = known;
  *res = -1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    double r = set_tile(G, mid, cand[mid], false);
    if (r >= 0) {
      top = mid;
      *res = r;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return top;
}

/* A candidate tile known to fit the reservation of G's holdings now, or
 * -1: the one its pricer found with every held tensor held, for the same
 * tile ranks and recurrence (a spill only lowers the reservation). */
static int fit_known(const Grp *G) {
  const Frame *f = G->x->frame;
  if (!f || f->fit_top < 0 || f->fit_nt != G->nt ||
      f->fit_state != G->state_t)
    return -1;
  return f->fit_top;
}

/* Keep TOP, the largest candidate tile whose reservation fits, where
 * G holds every held tensor (fit_known). */
static void fit_note(const Grp *G, int top) {
  Frame *f = G->x->frame;
  for (int i = 0; f && i < G->nheld; i++)
    if (!G->held[i].on)
      return;
  if (f) {
    f->fit_top = top;
    f->fit_nt = G->nt;
    f->fit_state = G->state_t;
  }
}

/* Choose the tile among those whose reservation and members fit, into
 * MAPS (pointing into the members' nests: member_map, valid until the
 * caller bills them). Returns the chosen total (elements of the tile), or 0 if none
 * fits (then *SMALLEST gets the reservation of the smallest candidate and
 * *PEAK its peak member). Fitting shrinks with the tile (the reservation and
 * every member's tiles grow with it), so without weight refetches the
 * largest fitting tile is found by bisection; the larger ones are then
 * priced overbooked, and one is kept only when it is faster (ties: less
 * traffic, then the smaller tile). With weight refetches every tile is
 * priced. G->keep is the chosen tile's, *RESERVED its reservation. */
static double choose_tile(Grp *G, const Mapping **maps, double *smallest,
                          int *peak, double *reserved) {
  if (G->shaped != G->nt)
    shape_held(G);
  double whole = 1;
  for (int k = 0; k < G->nt; k++)
    whole *= G->size[k];
  double first = G->whole ? whole : 1;
  double cand[TILE_CANDIDATES];
  int nc = 0;
  for (double t = first;; t = fmin(2 * t, whole)) {
    cand[nc++] = t;
    if (t >= whole || nc == TILE_CANDIDATES - 1)
      break;
  }
  Trial tr, best = {0};
  /* Each trial's mappings go into the half of HALF the best so far is
   * not in: B, flipped when the trial is the best. */
  const Mapping **half[2];
  half[0] = xmalloc((2 * (size_t)G->n + 1) * sizeof *half[0]);
  half[1] = half[0] + G->n;
  int b = 0;
  double chosen = 0;
  int pick = -1; /* its candidate */
  int above = nc; /* the first candidate priced overbooked */
  if (!refetches_weights(G)) {
    /* The reservation alone first (no mapping searched): the largest
     * candidate it fits is where the members' fit is tried first. */
    double at_hi;
    int lo = 0, hi = reserved_up_to(G, cand, nc, fit_known(G), &at_hi);
    fit_note(G, hi);
    if (hi < 0) {
      /* not even the smallest tile's reservation fits */
    } else if (fits(G, cand, hi, at_hi, &best, half[!b])) {
      b = !b;
      chosen = cand[pick = hi];
      above = hi + 1;
    } else if (hi == 0) {
      /* the smallest tile's members do not fit */
    } else if (fits(G, cand, 0, -1, &best, half[!b])) {
      b = !b;
      chosen = cand[pick = 0];
      above = 1;
      lo = 1;
      hi--;
      while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (fits(G, cand, mid, -1, &tr, half[!b])) {
          b = !b;
          chosen = cand[pick = mid];
          best = tr;
          above = mid + 1;
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
    }
  } else {
    for (int i = nc - 1; i >= 0; i--) /* ties: the larger tile */
      if (fits(G, cand, i, -1, &tr, half[!b])) {
        if (above == nc)
          above = i + 1;
        if (chosen == 0 || better_noted(G, &tr, &best)) {
          b = !b;
          best = tr;
          chosen = cand[pick = i];
        }
      }
  }
  /* The larger tiles, overbooked, from the smallest up: what they send
   * off chip, their state's step and so their bound only grow with the
   * tile, so the first that cannot fit or cannot win ends the walk. */
  for (int i = above; G->overbook && chosen > 0 && i < nc; i++) {
    double res = set_tile(G, i, cand[i], true);
    if (res < 0)
      break;
    Trial lb = bound_tile(G);
    if (!better_noted(G, &lb, &best))
      break;
    tr = try_tile(G, res, half[!b], -1, cand[i]);
    if (tr.ok && better_noted(G, &tr, &best)) {
      b = !b;
      best = tr;
      chosen = cand[pick = i];
    }
  }
  memcpy(maps, half[b], (size_t)G->n * sizeof *maps);
  free(half[0]);
  if (chosen > 0) { /* set again unless it is the tile set last */
    *reserved = G->set_total == chosen && G->set_res >= 0
                    ? G->set_res
                    : set_tile(G, pick, chosen, true);
  } else {
    spread(G, cand[0]);
    *smallest = reservation(G, 0, cand[0], peak, NULL);
  }
  return chosen;
}

/* The held tensor whose going off chip adds the least DRAM traffic, among
 * those live at member PEAK (or any, with PEAK < 0); -1 if none. */
static int cheapest_spill(const Grp *G, int peak) {
  int best = -1;
  double best_cost = INFINITY;
  for (int k = 0; k < G->nheld; k++) {
    const Held *h = &G->held[k];
    if (!h->on)
      continue;
    if (peak >= 0 && h->kind != HELD_WEIGHT && !G->whole &&
        (peak < h->first || peak > h->last))
      continue;
    double cost = 0;
    for (int i = 0; i < G->n; i++) {
      double rd, wr;
      off_chip_moves(G, h, i, 1, &rd, &wr);
      cost += rd + wr;
    }
    if (cost < best_cost) {
      best_cost = cost;
      best = k;
    }
  }
  return best;
}

/* ---- the group ---- */

static bool too_small(const Grp *G) {
  const Ctx *x = G->x;
  const Cascade *c = x->c;
  const MemLevel *buf = &x->a->levels[x->a->fusion_level];
  Buf names = {0};
  for (int i = 0; i < G->n && i < 6; i++)
    buf_printf(&names, "%s%s", i ? ", " : "",
               c->tensors[c->einsums[G->gr->einsums[i]]->out.tensor].name);
  diag_error(x->diag, x->a->path, buf->loc,
             "%s (%.4g elements) cannot hold one tile of the group of %s%s "
             "(%s), even with everything it can send off chip sent",
             buf->name, x->glb, names.s, G->n > 6 ? ", ..." : "", c->path);
  buf_free(&names);
  return false;
}

/* Is the recurrence's state all the group still reserves room for, every
 * tensor held across its members having gone off chip? Then that room
 * buys nothing: the lagged read is the recurrence's own either way (as
 * the unfused design co-iterates it), and the members' tiles can use it
 * (the MARCA-like baseline at a long sequence: docs/model.md §5). */
static bool idle_state(const Grp *G) {
  if (G->state_t < 0)
    return false;
  for (int k = 0; k < G->nheld; k++)
    if (G->held[k].on && G->held[k].kind != HELD_WEIGHT)
      return false;
  return true;
}

Frame *frame_new(void) {
  Frame *f = xcalloc(1, sizeof(Frame));
  f->fit_top = -1;
  return f;
}

/* S with room for N members and NHELD held tensors (doubled: the
 * search's groups grow one member at a time). */
static void scratch_fit(Scratch *s, int n, int nheld) {
  if (s->members < n) {
    s->members = n > 2 * s->members ? n : 2 * s->members;
    size_t m = (size_t)s->members + 1;
    s->nest = xrealloc(s->nest, m * sizeof *s->nest);
    s->mem = xrealloc(s->mem, m * sizeof *s->mem);
    s->sum = xrealloc(s->sum, m * sizeof *s->sum);
    s->same = xrealloc(s->same, m * sizeof *s->same);
    s->maps = xrealloc(s->maps, m * sizeof *s->maps);
  }
  if (s->held < nheld || !s->fp) {
    s->held = nheld > 2 * s->held ? nheld : 2 * s->held;
    size_t h = (size_t)s->held + 1;
    s->fp = xrealloc(s->fp, h * sizeof *s->fp);
    s->copy = xrealloc(s->copy, h * sizeof *s->copy);
  }
}

static void scratch_free(Scratch *s) {
  free(s->copy);
  free(s->nest);
  free(s->fp);
  free(s->mem);
  free(s->sum);
  free(s->same);
  free(s->maps);
  *s = (Scratch){0};
}

void frame_forget(Frame *f) {
  if (!f)
    return;
  for (int k = 0; f->set && k < f->nheld; k++) /* back to rest */
    f->held_of[f->held[k].tensor] = -1;
  f->set = false;
  f->nests_set = false;
  f->fit_top = -1;
  for (int c = 0; c < TILE_CANDIDATES; c++)
    f->kept[c].set = f->kept[c].res_set = false;
  for (int i = 0; i < f->nbilled; i++)
    f->billed[i].set = false;
  f->bill_set = false;
  f->extras.n = 0;
  f->passes_set = false;
}

void frame_free(Frame *f) {
  if (f) {
    free(f->held);
    free(f->held_from);
    free(f->live_from);
    free(f->live_at);
    free(f->user_from);
    free(f->users);
    for (int c = 0; c < TILE_CANDIDATES; c++) {
      Kept *k = &f->kept[c];
      free(k->on);
      free(k->have);
      free(k->map);
      free(k->elems);
      free(k->cyc);
      free(k->foot);
      free(k->sum);
      free(k->res_on);
    }
    billed_free(f->billed, f->nbilled);
    billed_free(f->next, f->nbilled);
    free(f->billed);
    free(f->next);
    free(f->extras.c);
    free(f->bill_on);
    free(f->dirty);
    free(f->dirty_at);
    scratch_free(&f->scratch);
    pass_facts_free(&f->passes);
  }
  free(f);
}

/* G's lists (Grp.live_from ...) from what it holds, in one pass over the
 * held tensors' live ranges and one over its members' reads, each
 * counting then placing; the arrays are the caller's to keep or free. */
static void held_lists(Grp *G, int **live_from, int **live_at,
                       int **user_from, int **users) {
  const Cascade *c = G->x->c;
  int n = G->n, nh = G->nheld;
  int *lf = xcalloc((size_t)n + 2, sizeof *lf);
  for (int h = 0; h < nh; h++)
    if (G->held[h].kind != HELD_WEIGHT)
      for (int k = G->held[h].first; k <= G->held[h].last; k++)
        lf[k + 1]++;
  for (int k = 0; k < n; k++)
    lf[k + 1] += lf[k];
  int *la = xmalloc(((size_t)lf[n] + 1) * sizeof *la);
  int *at = xmalloc(((size_t)n + 1) * sizeof *at);
  memcpy(at, lf, (size_t)n * sizeof *at);
  for (int h = 0; h < nh; h++) /* in held order at each member */
    if (G->held[h].kind != HELD_WEIGHT)
      for (int k = G->held[h].first; k <= G->held[h].last; k++)
        la[at[k]++] = h;
  free(at);
  int *uf = xcalloc((size_t)nh + 2, sizeof *uf);
  int *last = xmalloc(((size_t)nh + 1) * sizeof *last);
  int *us = NULL;
  for (int pass = 0; pass < 2; pass++) {
    for (int h = 0; h < nh; h++)
      last[h] = -1;
    for (int i = 0; i < n; i++) {
      const Einsum *E = c->einsums[G->gr->einsums[i]];
      for (int r = -1; r < E->nreads; r++) {
        int h = G->held_of[r < 0 ? E->out.tensor : E->reads[r]->tensor];
        if (h < 0 || last[h] == i)
          continue;
        last[h] = i;
        if (pass == 0)
          uf[h + 1]++;
        else
          us[uf[h]++] = i;
      }
    }
    if (pass == 0) { /* counts to starts */
      for (int h = 0; h < nh; h++)
        uf[h + 1] += uf[h];
      us = xmalloc(((size_t)uf[nh] + 1) * sizeof *us);
    } else { /* each start was moved to the next one's: move them back */
      for (int h = nh; h > 0; h--)
        uf[h] = uf[h - 1];
      uf[0] = 0;
    }
  }
  free(last);
  G->live_from = *live_from = lf;
  G->live_at = *live_at = la;
  G->user_from = *user_from = uf;
  G->users = *users = us;
}

/* G's frame found: what it holds (none when nothing is held from one
 * member to another: each member maps freely, untiled) and whether its
 * weights stay resident, where each member's first-used tensors start,
 * its recurrence. */
static void find_frame(Grp *G) {
  collect_held(G);
  bool across = false; /* something held from one member to another */
  for (int k = 0; k < G->nheld; k++)
    across = across || G->held[k].kind != HELD_WEIGHT;
  if (!across) {
    for (int k = 0; k < G->nheld; k++)
      G->held_of[G->held[k].tensor] = -1;
    G->nheld = 0;
    G->nt = 0;
  }
  G->held_from = xmalloc(((size_t)G->n + 1) * sizeof *G->held_from);
  for (int i = 0, k = 0; i <= G->n; i++) {
    while (k < G->nheld && G->held[k].first < i)
      k++;
    G->held_from[i] = k;
  }
  G->state_t = G->nheld > 0 ? recurrence_of(G, &G->iter_rank) : -1;
  shape_held(G);
  weight_residency(G); /* the same for every spill variant */
}

/* G's frame: the context's where it keeps one (its held tensors copied
 * into SC's room, as a variant changes their holding; held_of still set
 * from the first variant), else found (and kept, with its lists). Without
 * a frame the held tensors, their starts (G's) and lists (LISTS) are for
 * price_group to free. */
static void frame_of(Grp *G, Scratch *sc, int *lists[4]) {
  Frame *f = G->x->frame;
  size_t nf = (size_t)G->n + 1;
#define TAKE(name) G->name = f->name;
#define KEEP(name) f->name = G->name;
  if (!f || !f->set) {
    find_frame(G);
    if (!f) {
      held_lists(G, &lists[0], &lists[1], &lists[2], &lists[3]);
      return;
    }
    free(f->live_from);
    free(f->live_at);
    free(f->user_from);
    free(f->users);
    held_lists(G, &f->live_from, &f->live_at, &f->user_from, &f->users);
    f->set = true;
    FRAME_KEPT(KEEP)
    f->held = xrealloc(f->held, ((size_t)G->nheld + 1) * sizeof *f->held);
    f->held_from = xrealloc(f->held_from, nf * sizeof *f->held_from);
    memcpy(f->held, G->held, (size_t)G->nheld * sizeof *f->held);
    memcpy(f->held_from, G->held_from, nf * sizeof *f->held_from);
    f->held_of = G->held_of;
    free(G->held);
    free(G->held_from);
  }
  FRAME_KEPT(TAKE)
  scratch_fit(sc, G->n, f->nheld);
  G->held = sc->copy;
  memcpy(G->held, f->held, (size_t)f->nheld * sizeof *G->held);
  G->held_from = f->held_from;
  G->live_from = f->live_from;
  G->live_at = f->live_at;
  G->user_from = f->user_from;
  G->users = f->users;
#undef TAKE
#undef KEEP
}

bool price_group(Ctx *x, int g, EinsumEval *ev, GroupEval *ge) {
  Grp G = {.x = x, .gr = &x->plan->groups[g], .ev = ev,
           .bound = x->base ? x->base : ev, .shaped = -1};
  G.n = G.gr->n;
  G.whole = x->o.hold_whole;
  G.budget = x->o.reserve_share * x->glb;
  G.keep = 1;
  G.set_res = -1;
  G.overbook = priced_by_dram(x->a);
  G.held_of = x->held->held_of; /* at rest: -1 (set back below) */
  G.nt = G.gr->ntiled;
  memcpy(G.rank, G.gr->tiled, sizeof G.rank);
  for (int k = 0; k < G.nt; k++)
    G.size[k] = (double)x->s->size[G.rank[k]];
  Frame *f = x->frame;
  Scratch mine = {0}, *sc = f ? &f->scratch : &mine;
  scratch_fit(sc, G.n, 0);
  G.nest = sc->nest;
  /* The members' nests: each spill variant's as the group's first's. */
  for (int i = 0; !(f && f->nests_set) && i < G.n; i++)
    G.nest[i] = member_nest(&G, i);
  if (f)
    f->nests_set = x->nests != NULL;
  int *lists[4] = {NULL, NULL, NULL, NULL}; /* frame_of's, without one */
  frame_of(&G, sc, lists);
  scratch_fit(sc, G.n, G.nheld);
  G.fp = sc->fp;
  G.sum = sc->sum;
  G.mem = sc->mem;
  G.same = sc->same;
  design_spills(&G);
  double total = 0, smallest = 0, res = 0;
  int peak = 0;
  /* The chosen tile's mappings (MAPS), in the members' nests. */
  const Mapping **maps = sc->maps;
  for (;;) {
    total = choose_tile(&G, maps, &smallest, &peak, &res);
    if (total > 0)
      break;
    int k = cheapest_spill(&G, smallest > G.budget ? peak : -1);
    if (k >= 0) {
      G.held[k].on = false;
      if (G.held[k].kind != HELD_WEIGHT)
        add_spill(&G, G.held[k].tensor, SPILL_CAPACITY);
      continue;
    }
    if (G.nt == 0 && G.state_t < 0)
      break; /* its members alone do not fit */
    /* Not even the recurrence's state fits beside the members' tiles: the
     * group runs as its members alone (weak fusion), the recurrence
     * co-iterated as in the unfused design. */
    if (G.state_t >= 0)
      add_spill(&G, G.state_t, SPILL_CAPACITY);
    G.state_t = -1;
    G.nt = 0;
  }
  if (total > 0 && idle_state(&G)) {
    G.state_t = -1; /* its room serves nothing: give it to the members */
    G.nt = 0;
    total = choose_tile(&G, maps, &smallest, &peak, &res);
  }
  bool ok = total > 0;
  if (ok) {
    for (int k = 0; G.keep < 1 && k < G.nheld; k++)
      if (overbooked_share(&G, &G.held[k]) > 0)
        add_spill(&G, G.held[k].tensor, SPILL_OVERBOOKED);
    bill_members(&G, maps, res);
    ge->reserve = res;
    ge->ntiled = G.nt;
    memcpy(ge->tiled, G.rank, sizeof ge->tiled);
    memcpy(ge->tile, G.tile, sizeof ge->tile);
  } else {
    too_small(&G);
  }
  ge->budget = G.budget;
  ge->nspills = G.nspills;
  ge->spills = G.spills;
  for (int i = 0; !x->nests && i < G.n; i++)
    nest_free(G.nest[i]);
  if (!f) { /* a frame's are its own, and held_of stays set for them */
    for (int k = 0; k < G.nheld; k++)
      G.held_of[G.held[k].tensor] = -1;
    free(G.held);
    free(G.held_from);
  }
  for (int k = 0; k < 4; k++)
    free(lists[k]);
  scratch_free(&mine);
  return ok;
}
