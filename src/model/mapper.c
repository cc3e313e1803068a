/* mapper.c — the mapping search: a tiling of one loop nest between DRAM
 * and the global buffer that moves the least data.
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
 * Pruning, exact: a variable that indexes every DRAM tensor never
 * multiplies anything (tile 1: least footprint); one that indexes no DRAM
 * tensor is left whole (it is on chip); variables indexing the same
 * tensors, always as plain indices, are one class (b and i: the tokens);
 * and the innermost loop's tile never multiplies anything either. */
#include "model.h"

#include <math.h>
#include <stdio.h>
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
    if (m == all && plain) {
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

void map_price(const MapProblem *p, Mapping *m) {
  double n[MAP_MAX_VARS];
  for (int v = 0; v < p->nvars; v++)
    n[v] = ceil_div(p->size[v], m->tile[v]);
  m->traffic = 0;
  m->footprint = 0;
  for (int t = 0; t < p->ntensors; t++) {
    const MapTensor *T = &p->t[t];
    m->read[t] = m->write[t] = 0;
    if (!T->dram)
      continue;
    double fp = 1;
    for (int k = 0; k < T->ndims; k++) {
      double ext = 1;
      for (int v = 0; v < p->nvars; v++)
        if (VARSET_HAS(T->dim_vars[k], v))
          ext += T->dim_coef[k][v] * (m->tile[v] - 1);
      fp *= ext;
    }
    m->footprint += fp;
    int last = -1;
    for (int j = 0; j < m->norder; j++)
      if (VARSET_HAS(T->vars, m->order[j]))
        last = j;
    double mult = 1;
    for (int j = 0; j < last; j++)
      if (!VARSET_HAS(T->vars, m->order[j]))
        mult *= n[m->order[j]];
    if (T->output) {
      m->write[t] = T->elems * mult;
      m->read[t] = T->elems * (mult - 1);
    } else {
      m->read[t] = T->elems * mult;
    }
    m->traffic += m->read[t] + m->write[t];
  }
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
  double ctile[MAX_CLASSES];
  Mapping cur, best;
  bool have;
} Search;

static bool better(const Mapping *a, const Mapping *b) {
  if (a->fits != b->fits)
    return a->fits;
  if (!a->fits) /* nothing fits: the smallest footprint */
    return a->footprint < b->footprint - 1e-9;
  if (a->traffic < b->traffic * (1 - 1e-12))
    return true;
  if (a->traffic > b->traffic * (1 + 1e-12))
    return false;
  return a->footprint < b->footprint - 1e-9;
}

/* Build the variable-level mapping for the current permutation and class
 * tiles, price it, keep the best. */
static void try_current(Search *s) {
  const MapProblem *p = s->p;
  const Reduced *r = s->r;
  Mapping *m = &s->cur;
  for (int v = 0; v < p->nvars; v++)
    m->tile[v] = p->size[v];
  for (int v = 0; v < p->nvars; v++)
    if (VARSET_HAS(r->neutral_small, v))
      m->tile[v] = 1;
  m->norder = 0;
  /* Group-fixed classes outermost, then neutral ones, then the search's. */
  for (int c = 0; c < r->nclass; c++)
    if (r->fixed[c]) {
      spread_tile(p, r->members[c], r->fixed_tile[c], m->tile);
      for (int v = 0; v < p->nvars; v++)
        if (VARSET_HAS(r->members[c], v) && m->tile[v] < p->size[v])
          m->order[m->norder++] = v;
    }
  for (int v = 0; v < p->nvars; v++)
    if (VARSET_HAS(r->neutral_small, v))
      m->order[m->norder++] = v;
  for (int k = 0; k < r->nfree; k++) {
    int c = s->perm[k];
    spread_tile(p, r->members[c], k < s->nperm ? s->ctile[c] : 1, m->tile);
    for (int v = 0; v < p->nvars; v++)
      if (VARSET_HAS(r->members[c], v) && m->tile[v] < p->size[v])
        m->order[m->norder++] = v;
  }
  map_price(p, m);
  m->evaluated = 0;
  s->best.evaluated++;
  if (!s->have || better(m, &s->best)) {
    long ev = s->best.evaluated;
    s->best = *m;
    s->best.evaluated = ev;
    s->have = true;
  }
}

/* Enumerate tiles for positions [k, nfree-1): the innermost keeps tile 1
 * (its tile multiplies nothing; 1 is the least footprint). */
static void enum_tiles(Search *s, int k) {
  const Reduced *r = s->r;
  if (k >= r->nfree - 1 || k >= s->nperm) {
    if (r->nfree > 0)
      s->ctile[s->perm[r->nfree - 1]] = 1;
    try_current(s);
    return;
  }
  int c = s->perm[k];
  double opt[48];
  int n = tile_options(r->size[c], s->base, opt);
  for (int i = 0; i < n; i++) {
    s->ctile[c] = opt[i];
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

void map_search(const MapProblem *p, Mapping *best) {
  Reduced r;
  reduce_problem(p, &r);
  Search s = {.p = p, .r = &r, .base = 2};
  for (int k = 0; k < r.nfree; k++)
    s.perm[k] = r.free_classes[k];
  /* Beyond MAP_MAX_PERM_CLASSES, the largest classes are searched and the
   * others kept innermost in their written order. */
  s.nperm = r.nfree;
  if (s.nperm > MAP_MAX_PERM_CLASSES) {
    for (int i = 0; i < r.nfree; i++)
      for (int j = i + 1; j < r.nfree; j++)
        if (r.size[s.perm[j]] > r.size[s.perm[i]]) {
          int t = s.perm[i];
          s.perm[i] = s.perm[j];
          s.perm[j] = t;
        }
    s.nperm = MAP_MAX_PERM_CLASSES;
  }
  int coarsened = 0;
  while (space(&s, s.base) > MAP_BUDGET && s.base < 1e12) {
    s.base *= s.base;
    coarsened++;
  }
  enum_perms(&s, 0);
  *best = s.best;
  best->coarsened = coarsened;
}
