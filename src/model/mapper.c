/* mapper.c — the mapping search: a tiling of one loop nest between DRAM
 * and the global buffer that moves the least data, and of each level
 * inside it within the tile of the level above.
 *
 * A mapping is an order of tile loops (outermost first) and a tile size
 * per variable; n_v = ceil(size_v / tile_v) tiles. A tensor A is fetched
 * once per iteration of the loops down to the innermost one that indexes
 * it; loops in that range that do not index A refetch the same tile:
 *
 *     traffic(A) = |A| x prod { n_v : v before last(A), v not in A }
 *
 * For the output, the loops not indexing it are reductions: each refetch
 * writes partial sums out and reads them back. A window index (i+f-F+1)
 * keeps its halo on chip as tiles slide, so it moves |A| once.
 *
 * A level inside the fusion level tiles within the tiles of the levels
 * above it (MapProblem.above): its loops come after theirs in one nest,
 * each variable's tile within its last tile above, and the rule above
 * runs over that whole nest -- an output whose reduction a level above
 * steps crosses this boundary once per step (Timeloop's count).
 *
 * Pruning, exact: a variable that indexes every tensor, with no loop
 * fixed above this level's, is tiled 1 outermost, where it multiplies
 * nothing (the least footprint); one that indexes no DRAM
 * tensor is left whole (it is on chip); variables indexing the same
 * tensors, always as plain indices, are one class (b and i: the tokens);
 * the innermost loop's tile never multiplies anything either; and once a
 * mapping fits, a partial one whose loops so far already make its
 * tensors move more is not completed (the loops after them can only add
 * refetches). */
#include "model.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_CLASSES = MAP_MAX_VARS };

/* The search runs over classes of variables. */
typedef struct Reduced {
  int nclass;
  VarSet members[MAX_CLASSES];
  double size[MAX_CLASSES];
  bool fixed[MAX_CLASSES]; /* tiled by the group: outermost, given tile */
  double fixed_tile[MAX_CLASSES];
  int free_classes[MAX_CLASSES]; /* the classes to enumerate */
  int nfree;
  VarSet neutral_small; /* universal variables: tile 1 */
  VarSet neutral_whole; /* on-chip-only variables: untiled */
} Reduced;

static double ceil_div(double a, double b) { return ceil(a / b - 1e-12); }

/* Which DRAM tensors a variable indexes, and whether only plainly. */
static uint32_t tensor_mask(const MapProblem *p, int v, bool *plain) {
  uint32_t m = 0;
  *plain = true;
  for (int t = 0; t < p->ntensors; t++) {
    const MapTensor *T = &p->t[t];
    if (!VARSET_HAS(T->vars, v))
      continue;
    if (T->dram)
      m |= 1u << t;
    for (int k = 0; k < T->ndims; k++)
      if (VARSET_HAS(T->dim_vars[k], v) && T->dim_vars[k] != VARSET_BIT(v))
        *plain = false;
  }
  return m;
}

/* Does variable V index every tensor, on chip too? Then, outermost, its
 * loop multiplies nothing at this boundary nor at the ones below (below
 * loops fixed above it, it would: they would come before a loop every
 * tensor depends on). */
static bool indexes_every(const MapProblem *p, int v) {
  for (int t = 0; t < p->ntensors; t++)
    if (!VARSET_HAS(p->t[t].vars, v))
      return false;
  return true;
}

static void reduce_problem(const MapProblem *p, Reduced *r) {
  memset(r, 0, sizeof *r);
  uint32_t all = 0;
  for (int t = 0; t < p->ntensors; t++)
    if (p->t[t].dram)
      all |= 1u << t;
  uint32_t cls_mask[MAX_CLASSES];
  bool cls_plain[MAX_CLASSES];
  for (int v = 0; v < p->nvars; v++) {
    if (p->size[v] <= 1)
      continue;
    bool plain;
    uint32_t m = tensor_mask(p, v, &plain);
    if (VARSET_HAS(p->outer, v)) {
      int c = r->nclass++;
      r->members[c] = VARSET_BIT(v);
      r->size[c] = p->size[v];
      r->fixed[c] = true;
      r->fixed_tile[c] = p->outer_tile[v];
      cls_mask[c] = m;
      cls_plain[c] = false;
      continue;
    }
    if (m == 0) {
      r->neutral_whole |= VARSET_BIT(v);
      continue;
    }
    if (m == all && plain && !p->outer && !p->nabove &&
        indexes_every(p, v)) {
      r->neutral_small |= VARSET_BIT(v);
      continue;
    }
    int c = -1;
    for (int k = 0; plain && k < r->nclass; k++)
      if (!r->fixed[k] && cls_plain[k] && cls_mask[k] == m)
        c = k;
    if (c < 0) {
      c = r->nclass++;
      r->members[c] = 0;
      r->size[c] = 1;
      cls_mask[c] = m;
      cls_plain[c] = plain;
      r->free_classes[r->nfree++] = c;
    }
    r->members[c] |= VARSET_BIT(v);
    r->size[c] *= p->size[v];
  }
}

/* Spread a class's tile over its member variables, innermost (highest
 * index) first. */
static void spread_tile(const MapProblem *p, VarSet members, double tile,
                        double *var_tile) {
  for (int v = p->nvars - 1; v >= 0; v--) {
    if (!VARSET_HAS(members, v))
      continue;
    double t = tile < p->size[v] ? tile : p->size[v];
    if (t < 1)
      t = 1;
    var_tile[v] = t;
    tile = ceil_div(tile, t);
  }
}

/* A problem's DRAM tensors with each coordinate's terms listed (the
 * variables it uses, ascending, and their coefficients): what pricing a
 * mapping reads, built once per problem. */
enum { PREP_MAX_DIMS = MAP_MAX_TENSORS * IR_MAX_RANKS,
       PREP_MAX_TERMS = PREP_MAX_DIMS * MAP_MAX_VARS };

typedef struct Prep {
  int ndram;
  int tensor[MAP_MAX_TENSORS];      /* the DRAM tensors, in problem order */
  VarSet vars[MAP_MAX_TENSORS];     /* and of each, what traffic_of reads */
  double elems[MAP_MAX_TENSORS];
  bool output[MAP_MAX_TENSORS];
  /* Per DRAM tensor, the refetches the loops above (MapProblem.above)
   * make: over all of them when a loop of this level indexes it, else up
   * to the last that does. */
  double above_all[MAP_MAX_TENSORS], above_last[MAP_MAX_TENSORS];
  int first_dim[MAP_MAX_TENSORS + 1]; /* tensor i's coordinates: dims
                                         [first_dim[i], first_dim[i+1]) */
  int first_term[PREP_MAX_DIMS + 1];
  int term_var[PREP_MAX_TERMS];
  double term_coef[PREP_MAX_TERMS];
  /* The search's constant part: tiles and loops of the group-fixed and
   * neutral classes, and each class's variables, innermost first. */
  double base_tile[MAP_MAX_VARS];
  int base_order[MAP_MAX_VARS], base_norder;
  int nmembers[MAX_CLASSES];
  int member_desc[MAX_CLASSES][MAP_MAX_VARS];
} Prep;

/* Tensor T's refetches by the loops above: *ALL over every one of them,
 * *LAST over those before the last that indexes T. */
static void above_refetch(const MapProblem *p, const MapTensor *T,
                          double *all, double *last) {
  double m = 1;
  *last = 1;
  for (int j = 0; j < p->nabove; j++) {
    if (VARSET_HAS(T->vars, p->above[j].var))
      *last = m;
    else
      m *= p->above[j].trips;
    if (p->above[j].group)
      *last = m; /* the group's other Einsums run inside each step */
  }
  *all = m;
}

/* Q lists P's DRAM tensors, or with ALL every tensor (what crosses the
 * boundary below, whose levels tile within this one's tiles). */
static void prep_tensors(const MapProblem *p, Prep *q, bool all) {
  int nd = 0, nterm = 0;
  q->ndram = 0;
  for (int t = 0; t < p->ntensors; t++) {
    const MapTensor *T = &p->t[t];
    if (!T->dram && !all)
      continue;
    q->first_dim[q->ndram] = nd;
    above_refetch(p, T, &q->above_all[q->ndram], &q->above_last[q->ndram]);
    q->vars[q->ndram] = T->vars;
    q->elems[q->ndram] = T->elems;
    q->output[q->ndram] = T->output;
    q->tensor[q->ndram++] = t;
    for (int k = 0; k < T->ndims; k++) {
      q->first_term[nd++] = nterm;
      for (int v = 0; v < p->nvars; v++)
        if (VARSET_HAS(T->dim_vars[k], v)) {
          q->term_var[nterm] = v;
          q->term_coef[nterm++] = T->dim_coef[k][v];
        }
    }
  }
  q->first_dim[q->ndram] = nd;
  q->first_term[nd] = nterm;
}

/* Elements a mapping with tiles TILE holds: per DRAM tensor, the product
 * over its coordinates of the range they span -- Timeloop's tile, the box
 * a level stores: a window's overlap counted once, a stride's gaps and a
 * flattened index's holes (256*c+l) counted in. Past STOP, the sum so
 * far (every tensor holds a positive count: the rest would only add). */
static double footprint_of(const Prep *q, const double *tile, double stop) {
  double total = 0;
  for (int i = 0; i < q->ndram; i++) {
    double fp = 1;
    for (int k = q->first_dim[i]; k < q->first_dim[i + 1]; k++) {
      double ext = 1;
      for (int j = q->first_term[k]; j < q->first_term[k + 1]; j++)
        ext += q->term_coef[j] * (tile[q->term_var[j]] - 1);
      fp *= ext;
    }
    total += fp;
    if (total > stop)
      break;
  }
  return total;
}

/* The trips of each of ORDER's N loops under tiles TILE. */
static void loop_trips(const MapProblem *p, const double *tile,
                       const int *order, int n, double *trips) {
  for (int j = 0; j < n; j++)
    trips[j] = ceil_div(p->size[order[j]], tile[order[j]]);
}

/* Elements moved, per tensor into READ and WRITE (0 for on-chip ones;
 * both NULL: the sum alone, what the search compares -- a candidate's
 * counts are kept only when it becomes the best), and in all, by the
 * loops ORDER (NORDER of them, of TRIPS trips). Past STOP, the sum so far
 * (READ and WRITE then partly set: no count is negative, so the rest
 * would only add). */
static double traffic_of(const MapProblem *p, const Prep *q,
                         const double *trips, const int *order, int norder,
                         double *read, double *write, double stop) {
  for (int t = 0; read && t < p->ntensors; t++)
    read[t] = write[t] = 0;
  /* The group's loops lead the order: its other Einsums run inside each
   * of their steps, so nothing of this one stays across them. */
  int group = 0;
  while (group < norder && VARSET_HAS(p->outer, order[group]))
    group++;
  double traffic = 0;
  for (int i = 0; i < q->ndram; i++) {
    int t = q->tensor[i];
    VarSet vars = q->vars[i];
    int last = group > 0 ? group : -1;
    for (int j = group; j < norder; j++)
      if (VARSET_HAS(vars, order[j]))
        last = j;
    double mult = last < 0 ? q->above_last[i] : q->above_all[i];
    for (int j = 0; j < last; j++)
      if (!VARSET_HAS(vars, order[j]))
        mult *= trips[j];
    double rd = q->output[i] ? q->elems[i] * (mult - 1) : q->elems[i] * mult;
    double wr = q->output[i] ? q->elems[i] * mult : 0;
    if (read) {
      read[t] = rd;
      write[t] = wr;
    }
    traffic += rd + wr;
    if (traffic > stop)
      break;
  }
  return traffic;
}

void map_price(const MapProblem *p, Mapping *m) {
  Prep q;
  prep_tensors(p, &q, false);
  double trips[MAP_MAX_VARS];
  loop_trips(p, m->tile, m->order, m->norder, trips);
  m->footprint = footprint_of(&q, m->tile, INFINITY);
  m->traffic = traffic_of(p, &q, trips, m->order, m->norder, m->read,
                          m->write, INFINITY);
  m->fits = m->footprint <= p->capacity;
}

/* Tile candidates of a class: powers of BASE below its size, and the
 * size. */
static int tile_options(double size, double base, double *opt) {
  int n = 0;
  for (double t = 1; t < size && n < 40; t *= base)
    opt[n++] = t;
  opt[n++] = size;
  return n;
}

typedef struct Search {
  const MapProblem *p;
  const Reduced *r;
  double base; /* tile candidates: powers of base */
  int nperm;   /* the first nperm free classes are permuted; the rest stay
                  innermost, in order, with tile 1 */
  int perm[MAX_CLASSES];
  /* The current candidate, built a class at a time as the enumeration
   * descends (place_class): its variables' tiles, and its loops, outermost
   * first -- the group-fixed and neutral ones (Prep's), then the classes
   * in perm's order, class K's from order_at[K]. A candidate differs from
   * the last one in its deepest classes alone, so only those are redone. */
  double tile[MAP_MAX_VARS];
  int order[MAP_MAX_VARS];
  double trips[MAP_MAX_VARS]; /* each loop's */
  int order_at[MAX_CLASSES + 1];
  const Prep *q;
  Prep *below;       /* every tensor: what the next level in would move
                        if it held a whole tile of this one (made at the
                        first tie: below_made) */
  bool below_made;
  double best_below; /* the best's, once below_known */
  bool below_known;  /* (found when a tie first needs it) */
  Mapping best;
  bool have;
} Search;

/* Class perm[K] at tile T: its variables' tiles (spread innermost
 * first) and its loops (those it does not take whole) after the classes
 * before it. */
static void place_class(Search *s, int k, double t) {
  const MapProblem *p = s->p;
  const Prep *q = s->q;
  int c = s->perm[k];
  for (int i = 0; i < q->nmembers[c]; i++) { /* innermost var first */
    int v = q->member_desc[c][i];
    double tv = t < p->size[v] ? t : p->size[v];
    if (tv < 1)
      tv = 1;
    s->tile[v] = tv;
    t = ceil_div(t, tv);
  }
  int n = s->order_at[k];
  for (int i = q->nmembers[c] - 1; i >= 0; i--) {
    int v = q->member_desc[c][i];
    if (s->tile[v] < p->size[v]) {
      s->trips[n] = ceil_div(p->size[v], s->tile[v]);
      s->order[n++] = v;
    }
  }
  s->order_at[k + 1] = n;
}

/* Can a candidate holding F elements not beat the best so far, whatever
 * it moves? It would have to fit where the best does not, or (neither
 * fitting) hold less. Then its traffic is not computed. */
static bool hopeless(const Search *s, double f) {
  const Mapping *b = &s->best;
  if (!s->have || f <= s->p->capacity)
    return false;
  return b->fits || !(f < b->footprint - 1e-9);
}

/* Between two fitting candidates moving the same: the one whose tile
 * leaves the levels inside less to move (BELOW: every tensor's count
 * were the next level in to hold a whole tile), then the one holding
 * more (room for them to reuse). */
static bool better_below(const Search *s, double below, double fp) {
  const Mapping *b = &s->best;
  if (below < s->best_below * (1 - 1e-12))
    return true;
  if (below > s->best_below * (1 + 1e-12))
    return false;
  return fp > b->footprint + 1e-9;
}

/* Price the current candidate (every class placed, holding FP
 * elements) and keep it if it
 * is better: it fits where the best does not; or both fit and it moves
 * less, then holds more (the levels inside tile within what it holds: a
 * larger tile leaves them more reuse); or neither fits and it holds
 * less. What the levels inside would move is found only where the
 * traffic ties (for the best too: a pure function of its tiles). */
static void try_current(Search *s, double fp) {
  const MapProblem *p = s->p;
  const double *tile = s->tile;
  const int *order = s->order;
  int norder = s->order_at[s->r->nfree];
  s->best.evaluated++;
  if (hopeless(s, fp))
    return;
  bool fits = fp <= p->capacity;
  const Mapping *b = &s->best;
  /* Where both fit, one moving more than the best is not kept: its
   * traffic is summed only as far as that shows. */
  double stop = s->have && fits && b->fits ? b->traffic * (1 + 1e-12)
                                           : INFINITY;
  double traffic =
      traffic_of(p, s->q, s->trips, order, norder, NULL, NULL, stop);
  bool known = false;
  double below = 0;
  if (s->have && fits && b->fits) {
    if (traffic > b->traffic * (1 + 1e-12))
      return;
    if (!(traffic < b->traffic * (1 - 1e-12))) {
      if (!s->below_made) { /* the first tie: most searches meet none */
        prep_tensors(p, s->below, true);
        s->below_made = true;
      }
      if (!s->below_known) {
        double trips[MAP_MAX_VARS];
        loop_trips(p, b->tile, b->order, b->norder, trips);
        s->best_below = traffic_of(p, s->below, trips, b->order, b->norder,
                                   NULL, NULL, INFINITY);
      }
      s->below_known = true;
      below = traffic_of(p, s->below, s->trips, order, norder, NULL, NULL,
                         INFINITY);
      known = true;
      if (!better_below(s, below, fp))
        return;
    }
  }
  Mapping *m = &s->best;
  memcpy(m->tile, tile, sizeof(double) * (size_t)p->nvars);
  m->norder = norder;
  memcpy(m->order, order, sizeof(int) * (size_t)norder);
  /* Its counts, summed whole as the comparison summed them. */
  m->traffic = traffic_of(p, s->q, s->trips, order, norder, m->read,
                          m->write, INFINITY);
  m->footprint = fp;
  m->fits = fits;
  s->best_below = below;
  s->below_known = known;
  s->have = true;
}

/* The classes from position K on (those before it placed): the
 * unsearched ones past nperm at tile 1, then the innermost's tile, which
 * multiplies nothing: the largest that fits beside the others (what the
 * levels inside get to tile), or 1 when none does; and that candidate
 * priced, with the footprint its choice found. */
static void leaf(Search *s, int k) {
  const Reduced *r = s->r;
  int in = r->nfree - 1;
  for (int j = k; j < in; j++)
    place_class(s, j, 1);
  if (in >= 0 && in < s->nperm) {
    double opt[48];
    int n = tile_options(r->size[s->perm[in]], s->base, opt);
    for (int i = n - 1; i > 0; i--) {
      place_class(s, in, opt[i]);
      double fp = footprint_of(s->q, s->tile, s->p->capacity);
      if (fp <= s->p->capacity) {
        try_current(s, fp);
        return;
      }
    }
  }
  if (in >= 0)
    place_class(s, in, 1);
  /* (Past the capacity, its footprint matters only where the best does
   * not fit: hopeless.) */
  try_current(s, footprint_of(s->q, s->tile,
                              s->have && s->best.fits ? s->p->capacity
                                                      : INFINITY));
}

/* Can no candidate below position K (the classes before it placed) beat
 * the best? Where the best fits, one that does not fit cannot, and one
 * that fits must move no more than it. Each tensor moves at least what
 * the loops placed make it move: the loops after them only add indexing
 * loops (which move its last one no earlier) and refetches of at least
 * one trip. (A margin far above rounding: a tie is kept.) */
static bool outmoved(const Search *s, int k) {
  if (!s->have || !s->best.fits)
    return false;
  double most = s->best.traffic * (1 + 1e-6);
  return traffic_of(s->p, s->q, s->trips, s->order, s->order_at[k], NULL,
                    NULL, most) > most;
}

/* Enumerate tiles for positions [k, nfree-1), then the leaf's; not below
 * a placement that cannot beat the best (outmoved). */
static void enum_tiles(Search *s, int k) {
  const Reduced *r = s->r;
  if (k >= r->nfree - 1 || k >= s->nperm) {
    leaf(s, k);
    return;
  }
  double opt[48];
  int n = tile_options(r->size[s->perm[k]], s->base, opt);
  for (int i = 0; i < n; i++) {
    place_class(s, k, opt[i]);
    if (!outmoved(s, k + 1))
      enum_tiles(s, k + 1);
  }
}

static void enum_perms(Search *s, int k) {
  if (k >= s->nperm) {
    enum_tiles(s, 0);
    return;
  }
  for (int i = k; i < s->nperm; i++) {
    int t = s->perm[k];
    s->perm[k] = s->perm[i];
    s->perm[i] = t;
    enum_perms(s, k + 1);
    s->perm[i] = s->perm[k];
    s->perm[k] = t;
  }
}

/* Candidates the search prices with tiles at powers of BASE. */
static double space(const Search *s, double base) {
  const Reduced *r = s->r;
  double n = 1, smallest = 1e300;
  for (int k = 0; k < s->nperm; k++) {
    double opt[48];
    double t = tile_options(r->size[s->perm[k]], base, opt);
    n *= t * (k + 1); /* its tiles, and the orders */
    smallest = fmin(smallest, t);
  }
  return s->nperm > 0 ? n / smallest : 1; /* the innermost keeps tile 1 */
}

/* The tiles and loops every candidate shares: the group-fixed classes
 * outermost at their given tiles, then the neutral variables at tile 1;
 * and each class's variables, innermost first. */
static void prep_search(const MapProblem *p, const Reduced *r, Prep *q) {
  prep_tensors(p, q, false);
  for (int v = 0; v < p->nvars; v++)
    q->base_tile[v] = VARSET_HAS(r->neutral_small, v) ? 1 : p->size[v];
  q->base_norder = 0;
  for (int c = 0; c < r->nclass; c++)
    if (r->fixed[c]) {
      spread_tile(p, r->members[c], r->fixed_tile[c], q->base_tile);
      for (int v = 0; v < p->nvars; v++)
        if (VARSET_HAS(r->members[c], v) && q->base_tile[v] < p->size[v])
          q->base_order[q->base_norder++] = v;
    }
  for (int v = 0; v < p->nvars; v++)
    if (VARSET_HAS(r->neutral_small, v))
      q->base_order[q->base_norder++] = v;
  for (int c = 0; c < r->nclass; c++) {
    q->nmembers[c] = 0;
    for (int v = p->nvars - 1; v >= 0; v--)
      if (VARSET_HAS(r->members[c], v))
        q->member_desc[c][q->nmembers[c]++] = v;
  }
}

/* The hand-off to the pricing: every tiled loop's tile is at least one
 * point and at most its variable's extent (a tile covers its rank, the
 * last one partly where it does not divide it). */
static bool tiles_within(const MapProblem *p, const Mapping *m) {
  for (int k = 0; k < m->norder; k++) {
    int v = m->order[k];
    if (v < 0 || v >= p->nvars || !(m->tile[v] >= 1) ||
        m->tile[v] > p->size[v])
      return false;
  }
  return true;
}

/* PERM's free classes, the largest first. */
static void largest_first(const Reduced *r, int *perm) {
  for (int i = 0; i < r->nfree; i++)
    for (int j = i + 1; j < r->nfree; j++)
      if (r->size[perm[j]] > r->size[perm[i]]) {
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
      }
}

void map_search(const MapProblem *p, Mapping *best) {
  Reduced r;
  reduce_problem(p, &r);
  Prep q;
  prep_search(p, &r, &q);
  Prep below; /* (on the stack: a search that needs it needs it once) */
  Search s = {.p = p, .r = &r, .base = 2, .q = &q, .below = &below};
  memcpy(s.tile, q.base_tile, sizeof s.tile);
  memcpy(s.order, q.base_order, sizeof(int) * (size_t)q.base_norder);
  s.order_at[0] = q.base_norder;
  loop_trips(p, s.tile, s.order, q.base_norder, s.trips);
  for (int k = 0; k < r.nfree; k++)
    s.perm[k] = r.free_classes[k];
  /* Beyond MAP_MAX_PERM_CLASSES, the largest classes are searched and the
   * others kept innermost in their written order. */
  s.nperm = r.nfree;
  if (s.nperm > MAP_MAX_PERM_CLASSES) {
    largest_first(&r, s.perm);
    s.nperm = MAP_MAX_PERM_CLASSES;
  }
  int coarsened = 0;
  while (space(&s, s.base) > MAP_BUDGET && s.base < 1e12) {
    s.base *= s.base;
    coarsened++;
  }
  int pinned = r.nfree - s.nperm;
  enum_perms(&s, 0);
  *best = s.best;
  best->coarsened = coarsened;
  best->pinned = pinned;
  assert(tiles_within(p, best));
}
