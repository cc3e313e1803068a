/* stitch.c — forming fusion groups: the paper's greedy walk, Algorithm 1
 * as printed, and an exact search. */
#include "fusion.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const strategy_names[ST_COUNT] = {
    "unfused", "ri", "ri+rsb", "ri+rsb+rsp", "full"};
static const char *const stitcher_names[STITCH_COUNT] = {"greedy", "alg1",
                                                         "global"};

const char *strategy_name(Strategy s) { return strategy_names[s]; }
const char *stitcher_name(Stitcher s) { return stitcher_names[s]; }

bool strategy_from_name(const char *name, Strategy *s) {
  for (int i = 0; i < ST_COUNT; i++)
    if (strcmp(strategy_names[i], name) == 0) {
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
  switch (s) {
  case ST_UNFUSED:
    return false;
  case ST_RI:
    return k == FC_RI;
  case ST_RI_RSB:
    return k == FC_RI || k == FC_RSB;
  case ST_RI_RSB_RSP:
    return k != FC_RD;
  case ST_FULL:
  case ST_COUNT:
    break;
  }
  return true;
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
    int count;
    bool allowed;
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

double fusion_offchip_elems(const Cascade *c, const Shape *s,
                            const int *group_of) {
  if (!s || !s->complete)
    return 0;
  double total = 0;
  int *seen = xmalloc(((size_t)c->neinsums + 1) * sizeof *seen);
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (T->producer < 0)
      continue;
    int g = group_of[T->producer];
    int nseen = 0;
    for (int i = 0; i < c->nedges; i++) {
      const Edge *e = &c->edges[i];
      int h = group_of[e->consumer];
      if (e->tensor != t || h == g)
        continue;
      bool dup = false;
      for (int j = 0; j < nseen; j++)
        dup = dup || seen[j] == h;
      if (!dup)
        seen[nseen++] = h;
    }
    if (nseen > 0) /* written once, read by each other group */
      total += shape_tensor_elems(s, t) * (1 + nseen);
  }
  free(seen);
  return total;
}

/* Off-chip intermediate elements charged to one contiguous segment
 * [a, b] of nodes: what it writes for readers outside and what it reads
 * from producers outside (once per segment). Additive over segments. */
static double segment_traffic(const Cascade *c, const Shape *s,
                              const Nodes *m, int a, int b) {
  double total = 0;
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (T->producer < 0)
      continue;
    int pn = m->node_of[T->producer];
    bool inside = pn >= a && pn <= b;
    bool read_inside = false, read_outside = false;
    for (int i = 0; i < c->nedges; i++) {
      const Edge *e = &c->edges[i];
      if (e->tensor != t)
        continue;
      int q = m->node_of[e->consumer];
      if (q >= a && q <= b)
        read_inside = true;
      else
        read_outside = true;
    }
    if ((inside && read_outside) || (!inside && read_inside))
      total += shape_tensor_elems(s, t);
  }
  return total;
}

/* Exact search: dynamic programming over where groups start. A segment
 * is valid when every edge inside it is of an allowed class. */
static void stitch_global(const Cascade *c, const Shape *s, const Pair *pairs,
                          const Nodes *m, Strategy st, Objective obj,
                          char *group_start) {
  int n = m->n;
  bool by_traffic = obj == OBJ_TRAFFIC && s && s->complete;
  double *best = xmalloc(((size_t)n + 1) * sizeof *best);
  int *groups = xmalloc(((size_t)n + 1) * sizeof *groups);
  int *from = xmalloc(((size_t)n + 1) * sizeof *from);
  best[0] = 0;
  groups[0] = 0;
  for (int b = 1; b <= n; b++) {
    best[b] = INFINITY;
    groups[b] = 0;
    from[b] = b - 1;
    for (int a = b; a >= 1; a--) {
      /* Segment = nodes a-1 .. b-1. Adding node a-1 to [a, b-1]: its
       * edges with the rest must be allowed (checked incrementally). */
      if (a < b) {
        int count;
        bool allowed;
        edges_with_group(c, pairs, m, a - 1, a, b - 1, st, &count, &allowed);
        if (!allowed)
          break;
      }
      double cost = by_traffic ? segment_traffic(c, s, m, a - 1, b - 1) : 1;
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
  free(best);
  free(groups);
  free(from);
}

/* Fill the groups, the on-chip tensors and the traffic from group_of. */
static void fill_groups(const Cascade *c, const Shape *s, Plan *p) {
  p->groups = xcalloc((size_t)c->neinsums + 1, sizeof *p->groups);
  for (int i = 0; i < c->neinsums; i++)
    if (p->group_of[i] + 1 > p->ngroups)
      p->ngroups = p->group_of[i] + 1;
  for (int g = 0; g < p->ngroups; g++)
    p->groups[g].einsums = xcalloc((size_t)c->neinsums, sizeof(int));
  for (int i = 0; i < c->neinsums; i++) {
    Group *g = &p->groups[p->group_of[i]];
    g->einsums[g->n++] = i;
  }
  p->onchip = xcalloc((size_t)c->ntensors + 1, sizeof *p->onchip);
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    bool on = T->producer >= 0 && !T->output;
    for (int i = 0; on && i < c->nedges; i++)
      if (c->edges[i].tensor == t &&
          p->group_of[c->edges[i].consumer] != p->group_of[T->producer])
        on = false;
    p->onchip[t] = on;
  }
  p->offchip_elems = fusion_offchip_elems(c, s, p->group_of);
}

Plan *fusion_plan_groups(const Cascade *c, const Shape *s, Strategy st,
                         const int *group_of) {
  Plan *p = xcalloc(1, sizeof *p);
  p->strategy = st;
  p->stitcher = STITCH_GREEDY;
  p->nodes = st == ST_UNFUSED ? fusion_singletons(c) : fusion_merge(c, s);
  p->group_of = xcalloc((size_t)c->neinsums + 1, sizeof *p->group_of);
  memcpy(p->group_of, group_of, sizeof(int) * (size_t)c->neinsums);
  fill_groups(c, s, p);
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
  return p;
}

void plan_free(Plan *p) {
  if (!p)
    return;
  for (int g = 0; g < p->ngroups; g++)
    free(p->groups[g].einsums);
  free(p->groups);
  free(p->group_of);
  free(p->onchip);
  nodes_free(p->nodes);
  free(p);
}
