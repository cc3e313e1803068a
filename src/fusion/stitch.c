/* stitch.c — forming fusion groups: the paper's greedy walk, Algorithm 1
 * as printed, and an exact search. */
#include "fusion.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  unsigned classes; /* FC_BIT of each class a group may contain */
} strategies[] = {STRATEGIES(TABLE_ROW)};
_Static_assert(sizeof strategies / sizeof strategies[0] == ST_COUNT,
               "a row per strategy");

static const char *const stitcher_names[] = {STITCHERS(NAME_ENTRY)};
_Static_assert(sizeof stitcher_names / sizeof stitcher_names[0] ==
                   STITCH_COUNT,
               "a name per stitcher");

const char *strategy_name(Strategy s) { return strategies[s].name; }
const char *stitcher_name(Stitcher s) { return stitcher_names[s]; }

bool strategy_from_name(const char *name, Strategy *s) {
  for (int i = 0; i < ST_COUNT; i++)
    if (strcmp(strategies[i].name, name) == 0) {
      *s = (Strategy)i;
      return true;
    }
  return false;
}

bool stitcher_from_name(const char *name, Stitcher *s) {
  for (int i = 0; i < STITCH_COUNT; i++)
    if (strcmp(stitcher_names[i], name) == 0) {
      *s = (Stitcher)i;
      return true;
    }
  return false;
}

bool strategy_allows(Strategy s, FusionClass k) {
  return (strategies[s].classes & FC_BIT(k)) != 0;
}

/* ---- a plan's label: the rule the stitchers follow, checked on plans
 * read from files (planfile.c) and on Algorithm 1's ---- */

static const char *einsum_out(const Cascade *c, int e) {
  return c->tensors[c->einsums[e]->out.tensor].name;
}

/* The classes strategy ST allows, "RI, RSb" (or "none"), into BUF. */
static const char *allowed_list(Strategy st, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int k = 0; k < FC_COUNT; k++)
    if (strategy_allows(st, (FusionClass)k))
      len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "",
                              fusion_class_name((FusionClass)k));
  if (!len)
    snprintf(buf, n, "none");
  return buf;
}

bool edge_in_recurrence(const Cascade *c, const Edge *e) {
  int r = c->recurrence[e->producer];
  return r >= 0 && r == c->recurrence[e->consumer];
}

bool one_recurrence(const Cascade *c, int n, const int *einsums) {
  int r = c->recurrence[einsums[0]];
  for (int i = 1; i < n; i++)
    if (r < 0 || c->recurrence[einsums[i]] != r)
      return false;
  return true;
}

/* Unfused allows no fusion at all: a group of two Einsums that share no
 * edge (a merged TTX and RX) is still two Einsums fused. A recurrence's
 * Einsums are the exception: they cannot run apart (plan_can_run). */
static bool check_unfused(const Cascade *c, const Plan *p, const char *file,
                          Diag *d) {
  for (int g = 0; g < p->ngroups; g++)
    if (!one_recurrence(c, p->groups[g].n, p->groups[g].einsums)) {
      diag_error(d, file, (Loc){0, 0},
                 "group %d holds %d Einsums (%s, %s%s), but strategy "
                 "'unfused' puts each Einsum in a group of its own: label "
                 "the plan with the strategy it follows, or \"any\"",
                 g + 1, p->groups[g].n,
                 einsum_out(c, p->groups[g].einsums[0]),
                 einsum_out(c, p->groups[g].einsums[1]),
                 p->groups[g].n > 2 ? ", ..." : "");
      return false;
    }
  return true;
}

bool plan_check_label(const Cascade *c, const Pair *pairs, const Plan *p,
                      const char *file, Diag *d) {
  if (p->any)
    return true;
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    int g = p->group_of[e->producer];
    if (edge_in_recurrence(c, e) || g != p->group_of[e->consumer] ||
        strategy_allows(p->strategy, pairs[i].cls))
      continue;
    char allowed[64];
    diag_error(d, file, (Loc){0, 0},
               "group %d holds the edge %s -> %s (through %s), of class %s, "
               "which strategy '%s' does not allow (it allows %s): label the "
               "plan \"any\" to price it by its content",
               g + 1, einsum_out(c, e->producer), einsum_out(c, e->consumer),
               c->tensors[e->tensor].name, fusion_class_name(pairs[i].cls),
               strategy_name(p->strategy),
               allowed_list(p->strategy, allowed, sizeof allowed));
    return false;
  }
  return p->strategy != ST_UNFUSED || check_unfused(c, p, file, d);
}

bool plan_label_from_name(const char *name, Strategy *st, bool *any) {
  *any = strcmp(name, PLAN_LABEL_ANY) == 0;
  if (*any) {
    *st = ST_FULL; /* merged like full; no class is refused */
    return true;
  }
  return strategy_from_name(name, st);
}

const char *plan_label(const Plan *p) {
  return p->any ? PLAN_LABEL_ANY : strategy_name(p->strategy);
}

/* Edges between node N and the nodes in [first, last] of the order, in
 * either direction: how many, and whether all are allowed. */
static void edges_with_group(const Cascade *c, const Pair *pairs,
                             const Nodes *m, int n, int first, int last,
                             Strategy st, int *count, bool *allowed) {
  *count = 0;
  *allowed = true;
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    int a = m->node_of[e->producer], b = m->node_of[e->consumer];
    int other = a == n ? b : b == n ? a : -1;
    if (other < 0 || other == n || other < first || other > last)
      continue;
    (*count)++;
    *allowed = *allowed && strategy_allows(st, pairs[i].cls);
  }
}

/* group_start[k] = 1 where a new group begins at node k. */
static void stitch_greedy(const Cascade *c, const Pair *pairs, const Nodes *m,
                          Strategy st, char *group_start) {
  int first = 0;
  for (int k = 0; k < m->n; k++) {
    int count = 0; /* k == 0 starts a group without asking */
    bool allowed = true;
    if (k > 0)
      edges_with_group(c, pairs, m, k, first, k - 1, st, &count, &allowed);
    if (k == 0 || count == 0 || !allowed) {
      group_start[k] = 1;
      first = k;
    }
  }
}

/* The ranks (by name) a node iterates over, as a bit set. */
static uint64_t iter_space(const Cascade *c, const Node *nd) {
  uint64_t s = 0;
  for (int i = 0; i < nd->n; i++) {
    const Einsum *e = c->einsums[nd->einsums[i]];
    for (int v = 0; v < e->nvars; v++)
      s |= (uint64_t)1 << e->vars[v].rank;
  }
  return s;
}

static bool alg1_joins(Strategy st, uint64_t prev, uint64_t curr) {
  bool equal = prev == curr;
  bool subset = (curr & ~prev) == 0;   /* curr ⊆ prev */
  bool superset = (prev & ~curr) == 0; /* curr ⊇ prev */
  switch (st) {
  case ST_UNFUSED:
    return false;
  case ST_RI:
    return equal;
  case ST_RI_RSB:
    return subset;
  case ST_RI_RSB_RSP:
    return subset || superset;
  case ST_FULL:
  case ST_COUNT:
    break;
  }
  return true; /* Algorithm 1 has no RD test: full joins everything */
}

/* Algorithm 1 (§III-E) as printed: a group opens with two Einsums; the
 * next joins while the intersection of its iteration space with the last
 * member's compares as the strategy allows with the previous
 * intersection. */
static void stitch_alg1(const Cascade *c, const Nodes *m, Strategy st,
                        char *group_start) {
  int k = 0;
  while (k < m->n) {
    group_start[k] = 1;
    if (k + 1 >= m->n || st == ST_UNFUSED) {
      k++;
      continue;
    }
    uint64_t up = iter_space(c, &m->nodes[k + 1]);
    uint64_t prev = iter_space(c, &m->nodes[k]) & up;
    int i = k + 2;
    while (i < m->n) {
      uint64_t dwn = iter_space(c, &m->nodes[i]);
      uint64_t curr = up & dwn;
      if (!alg1_joins(st, prev, curr))
        break;
      prev = curr;
      up = dwn;
      i++;
    }
    k = i;
  }
}

/* Per merged node, the edges to other nodes: which node, and whether the
 * strategy allows fusing across it. */
typedef struct Adj {
  int n;
  int *other;
  bool *allowed;
} Adj;

static Adj *node_adjacency(const Cascade *c, const Pair *pairs,
                           const Nodes *m, Strategy st) {
  Adj *adj = xcalloc((size_t)m->n + 1, sizeof *adj);
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    int a = m->node_of[e->producer], b = m->node_of[e->consumer];
    if (a == b)
      continue;
    for (int side = 0; side < 2; side++) {
      Adj *x = &adj[side ? b : a];
      x->other = xrealloc(x->other, (size_t)(x->n + 1) * sizeof *x->other);
      x->allowed =
          xrealloc(x->allowed, (size_t)(x->n + 1) * sizeof *x->allowed);
      x->other[x->n] = side ? a : b;
      x->allowed[x->n] = strategy_allows(st, pairs[i].cls);
      x->n++;
    }
  }
  return adj;
}

static void adjacency_free(Adj *adj, int n) {
  for (int i = 0; i < n; i++) {
    free(adj[i].other);
    free(adj[i].allowed);
  }
  free(adj);
}

/* Exact search: dynamic programming over where groups start. A segment
 * is valid when every edge inside it is of an allowed class; its cost is
 * the off-chip traffic of intermediates it causes (geometry.c), or 1 per
 * group. Segments grow to the left from each end, so validity and cost
 * are updated a node at a time: O(n^2) segments in O(n * edges). */
static void stitch_global(const Cascade *c, const Shape *s, const Pair *pairs,
                          const Nodes *m, Strategy st, Objective obj,
                          char *group_start) {
  int n = m->n;
  bool by_traffic = obj == OBJ_TRAFFIC && s && s->complete;
  SegCost *sc = by_traffic ? segcost_new(c, s, m) : NULL;
  Adj *adj = node_adjacency(c, pairs, m, st);
  double *best = xmalloc(((size_t)n + 1) * sizeof *best);
  int *groups = xmalloc(((size_t)n + 1) * sizeof *groups);
  int *from = xmalloc(((size_t)n + 1) * sizeof *from);
  best[0] = 0;
  groups[0] = 0;
  for (int b = 1; b <= n; b++) {
    best[b] = INFINITY;
    groups[b] = 0;
    from[b] = b - 1;
    if (sc)
      segcost_start(sc, b - 1);
    for (int a = b; a >= 1; a--) {
      /* Segment = nodes a-1 .. b-1: node a-1's edges into [a, b-1] must
       * all be allowed. */
      bool allowed = true;
      const Adj *x = &adj[a - 1];
      for (int k = 0; k < x->n && allowed; k++)
        if (x->other[k] >= a && x->other[k] <= b - 1)
          allowed = x->allowed[k];
      if (!allowed)
        break;
      double cost = sc ? segcost_grow(sc) : 1;
      double tot = best[a - 1] + cost;
      int g = groups[a - 1] + 1;
      double secondary = by_traffic ? g : 0;
      double cur_secondary = by_traffic ? groups[b] : 0;
      if (tot < best[b] || (tot == best[b] && secondary < cur_secondary)) {
        best[b] = tot;
        groups[b] = g;
        from[b] = a - 1;
      }
    }
  }
  for (int b = n; b > 0; b = from[b])
    group_start[from[b]] = 1;
  adjacency_free(adj, n);
  segcost_free(sc);
  free(best);
  free(groups);
  free(from);
}

/* Fill the groups from group_of, then the geometry. */
static void fill_groups(const Cascade *c, const Shape *s, Plan *p) {
  size_t ne = (size_t)c->neinsums + 1;
  p->groups = xcalloc(ne, sizeof *p->groups);
  p->members = xcalloc(ne, sizeof *p->members);
  for (int i = 0; i < c->neinsums; i++)
    if (p->group_of[i] + 1 > p->ngroups)
      p->ngroups = p->group_of[i] + 1;
  int *start = xmalloc(((size_t)p->ngroups + 1) * sizeof *start);
  fusion_partition(c->neinsums, p->group_of, p->ngroups, p->members, start);
  for (int g = 0; g < p->ngroups; g++) {
    p->groups[g].n = start[g + 1] - start[g];
    p->groups[g].einsums = p->members + start[g];
  }
  free(start);
  plan_geometry(c, s, p);
}

/* Does GROUP_OF number its groups 0, 1, ... with none empty? fill_groups
 * sizes the groups by it. */
static bool dense_groups(const Cascade *c, const int *group_of, Diag *d) {
  bool *used = xcalloc((size_t)c->neinsums + 1, sizeof *used);
  int ng = 0;
  bool ok = true;
  for (int e = 0; e < c->neinsums && ok; e++) {
    ok = group_of[e] >= 0 && group_of[e] < c->neinsums;
    if (ok && group_of[e] + 1 > ng)
      ng = group_of[e] + 1;
    if (ok)
      used[group_of[e]] = true;
  }
  for (int g = 0; g < ng && ok; g++)
    if (!used[g]) {
      diag_error(d, c->path, (Loc){0, 0}, "group %d holds no Einsum", g + 1);
      ok = false;
    }
  if (!ok && !d->failed)
    diag_error(d, c->path, (Loc){0, 0}, "a group number out of range");
  free(used);
  return ok;
}

bool plan_can_run(const Cascade *c, const int *group_of, Diag *d) {
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    int gp = group_of[e->producer], gc = group_of[e->consumer];
    if (gp <= gc)
      continue;
    const char *t = c->tensors[e->tensor].name;
    char cut[256] = "";
    if (edge_in_recurrence(c, e))
      snprintf(cut, sizeof cut,
               ": it cuts the recurrence of %s and %s, whose Einsums advance "
               "together, a step at a time, and must share a group",
               einsum_out(c, e->consumer), einsum_out(c, e->producer));
    diag_error(d, c->path, c->einsums[e->consumer]->loc,
               "this plan cannot run: %s (group %d) reads %s%s, which group "
               "%d produces later%s",
               einsum_out(c, e->consumer), gc + 1, t,
               e->lagged ? " of an earlier step" : "", gp + 1, cut);
    return false;
  }
  return true;
}

Plan *fusion_plan_groups(const Cascade *c, const Shape *s, Strategy st,
                         const int *group_of, Diag *d) {
  if (!dense_groups(c, group_of, d) || !plan_can_run(c, group_of, d))
    return NULL;
  Plan *p = xcalloc(1, sizeof *p);
  p->strategy = st;
  p->stitcher = STITCH_GREEDY;
  p->nodes = st == ST_UNFUSED ? fusion_singletons(c) : fusion_merge(c, s);
  p->group_of = xcalloc((size_t)c->neinsums + 1, sizeof *p->group_of);
  memcpy(p->group_of, group_of, sizeof(int) * (size_t)c->neinsums);
  fill_groups(c, s, p);
  return p;
}

Plan *fusion_plan_alone(const Cascade *c, const Shape *s, const Nodes *nodes) {
  int *group_of = xcalloc((size_t)c->neinsums + 1, sizeof *group_of);
  for (int k = 0; k < nodes->n; k++)
    for (int q = 0; q < nodes->nodes[k].n; q++)
      group_of[nodes->nodes[k].einsums[q]] = k;
  Diag ignore = {0}; /* NULL where they cannot run */
  Plan *p = fusion_plan_groups(c, s, ST_FULL, group_of, &ignore);
  free(group_of);
  return p;
}

/* The set of UNIT's sets (rep: per Einsum, one Einsum of its set), with
 * each recurrence's sets joined. */
static void units_close(const Cascade *c, const int *unit, int *rep) {
  int n = c->neinsums;
  memcpy(rep, unit, sizeof(int) * (size_t)n);
  for (int e = 0; e < n; e++) {
    int r = c->recurrence[e];
    if (r < 0 || rep[r] == rep[e])
      continue;
    int from = rep[e], to = rep[r];
    for (int k = 0; k < n; k++)
      rep[k] = rep[k] == from ? to : rep[k];
  }
}

Plan *fusion_plan_units(const Cascade *c, const Shape *s, Strategy st,
                        const int *unit, Diag *d) {
  int n = c->neinsums;
  size_t ne = (size_t)n + 1;
  int *rep = xmalloc(ne * sizeof *rep);
  int *indeg = xcalloc(ne, sizeof *indeg);
  int *group_of = xmalloc(ne * sizeof *group_of);
  bool *done = xcalloc(ne, sizeof *done);
  units_close(c, unit, rep);
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    if (rep[e->producer] != rep[e->consumer])
      indeg[rep[e->consumer]]++;
  }
  /* Kahn's: the set holding the earliest Einsum among the ready ones. If
   * none is ready, the sets read each other: the first left takes the
   * next number, and plan_can_run names the read that cannot be served. */
  for (int g = 0;; g++) {
    int u = -1, first = -1;
    for (int e = 0; e < n && u < 0; e++)
      if (!done[rep[e]]) {
        first = first < 0 ? rep[e] : first;
        u = indeg[rep[e]] == 0 ? rep[e] : -1;
      }
    u = u < 0 ? first : u;
    if (u < 0)
      break;
    done[u] = true;
    for (int e = 0; e < n; e++)
      if (rep[e] == u)
        group_of[e] = g;
    for (int i = 0; i < c->nedges; i++) {
      const Edge *e = &c->edges[i];
      if (rep[e->producer] == u && rep[e->consumer] != u)
        indeg[rep[e->consumer]]--;
    }
  }
  Plan *p = fusion_plan_groups(c, s, st, group_of, d);
  free(rep);
  free(indeg);
  free(group_of);
  free(done);
  return p;
}

Plan *fusion_plan(const Cascade *c, const Shape *s, const Pair *pairs,
                  Strategy st, Stitcher how, Objective obj, Diag *d) {
  if (how == STITCH_ALG1 && c->nranks > 64) {
    diag_error(d, c->path, (Loc){0, 0},
               "Algorithm 1 compares rank sets of at most 64 ranks; this "
               "cascade has %d",
               c->nranks);
    return NULL;
  }
  Plan *p = xcalloc(1, sizeof *p);
  p->strategy = st;
  p->stitcher = how;
  p->objective = obj;
  p->nodes = st == ST_UNFUSED ? fusion_singletons(c) : fusion_merge(c, s);
  const Nodes *m = p->nodes;
  char *start = xcalloc((size_t)m->n + 1, 1);
  if (st == ST_UNFUSED)
    memset(start, 1, (size_t)m->n);
  else if (how == STITCH_GREEDY)
    stitch_greedy(c, pairs, m, st, start);
  else if (how == STITCH_ALG1)
    stitch_alg1(c, m, st, start);
  else
    stitch_global(c, s, pairs, m, st, obj, start);
  p->group_of = xcalloc((size_t)c->neinsums + 1, sizeof *p->group_of);
  int g = -1;
  for (int k = 0; k < m->n; k++) {
    if (start[k] || g < 0)
      g++;
    for (int i = 0; i < m->nodes[k].n; i++)
      p->group_of[m->nodes[k].einsums[i]] = g;
  }
  free(start);
  fill_groups(c, s, p);
  /* Algorithm 1 as printed compares rank sets, not classes: a group it
   * forms may hold an edge its strategy forbids (the §III-E example's
   * Z -> Y is RD under ri+rsb+rsp). Such a plan follows no named
   * strategy, and says so. Greedy and global plans always pass. */
  Diag scratch = {0};
  p->any = !plan_check_label(c, pairs, p, c->path, &scratch);
  return p;
}

