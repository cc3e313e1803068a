/* merge.c — shared-input merging (§IV): consumers of one tensor that can
 * share a single pass over it become one node; so do a recurrence's
 * Einsums, which no plan may part. */
#include "fusion.h"

#include <stdlib.h>
#include <string.h>

/* Two constant expressions written alike (coefficients, offsets). */
static bool same_const(const Expr *a, const Expr *b) {
  if (!a || !b)
    return a == b;
  if (a->kind != b->kind)
    return false;
  switch (a->kind) {
  case EX_NUM:
    return a->num == b->num;
  case EX_SYM:
    return a->sym == b->sym;
  case EX_OP:
    return a->op == b->op && same_const(a->a, b->a) &&
           same_const(a->b, b->b) && same_const(a->c, b->c);
  case EX_VAR:
  case EX_READ:
    return false;
  }
  return false;
}

/* Do two reads of the same tensor index it the same way, up to the names
 * of the variables? */
static bool same_access(const Access *a, const Access *b) {
  if (a->n != b->n)
    return false;
  for (int k = 0; k < a->n; k++) {
    const Index *x = &a->idx[k], *y = &b->idx[k];
    if (x->nterms != y->nterms || !same_const(x->off, y->off))
      return false;
    for (int t = 0; t < x->nterms; t++)
      if (!same_const(x->coef[t], y->coef[t]))
        return false;
  }
  return true;
}

/* Which coordinates of the shared tensor a consumer reduces over, and how
 * many reduced variables it has beyond them. */
static void reduced_coords(const Einsum *q, const Access *a, uint32_t *coords,
                           int *extra) {
  VarSet red = einsum_reduced_vars(q), seen = 0;
  *coords = 0;
  for (int k = 0; k < a->n; k++)
    for (int t = 0; t < a->idx[k].nterms; t++)
      if (VARSET_HAS(red, a->idx[k].var[t])) {
        *coords |= 1u << k;
        seen |= VARSET_BIT(a->idx[k].var[t]);
      }
  *extra = varset_count(red & ~seen);
}

/* The reads of TENSOR by Einsum Q, if all are alike and none is lagged. */
static const Access *uniform_read(const Einsum *q, int tensor) {
  const Access *first = NULL;
  for (int k = 0; k < q->nreads; k++) {
    const Access *a = q->reads[k];
    if (a->tensor != tensor)
      continue;
    for (int i = 0; i < a->n; i++)
      if (a->idx[i].lag > 0)
        return NULL;
    if (first && !same_access(first, a))
      return NULL;
    if (!first)
      first = a;
  }
  return first;
}

/* Can consumers X and Y of TENSOR share one pass over it? */
static bool compatible(const Cascade *c, const Shape *s, int tensor, int x,
                       int y) {
  const Access *ax = uniform_read(c->einsums[x], tensor);
  const Access *ay = uniform_read(c->einsums[y], tensor);
  if (!ax || !ay || !same_access(ax, ay))
    return false;
  VarSet r, b;
  if (fusion_classify_reads(c, s, tensor, x, &r, &b) !=
      fusion_classify_reads(c, s, tensor, y, &r, &b))
    return false;
  uint32_t cx, cy;
  int nx, ny;
  reduced_coords(c->einsums[x], ax, &cx, &nx);
  reduced_coords(c->einsums[y], ay, &cy, &ny);
  return cx == cy && nx == ny;
}

static int find(int *parent, int x) {
  while (parent[x] != x)
    x = parent[x] = parent[parent[x]];
  return x;
}

/* Disjoint sets of Einsums, each with its member list (threaded through
 * next[], from head[root]), and the ordering edges (edge_orders) as
 * successor lists, to walk the graph of the sets. */
typedef struct Sets {
  int *parent, *head, *next, *tail;
  int *start, *succ; /* Einsum x's successors: succ[start[x] .. start[x+1]) */
  int *mark, stamp;  /* per set root: reached in walk number stamp */
  int *stack;
} Sets;

static void sets_init(const Cascade *c, Sets *u) {
  int n = c->neinsums;
  size_t sz = (size_t)n + 1;
  /* The six per-Einsum arrays in one block, at parent (sets_free). */
  u->parent = xcalloc(6 * sz, sizeof(int));
  u->head = u->parent + sz;
  u->next = u->head + sz;
  u->tail = u->next + sz;
  u->mark = u->tail + sz;
  u->stack = u->mark + sz;
  u->stamp = 0;
  for (int i = 0; i < n; i++) {
    u->parent[i] = u->head[i] = u->tail[i] = i;
    u->next[i] = -1;
  }
  u->start = xcalloc(sz + 1, sizeof(int));
  for (int i = 0; i < c->nedges; i++)
    if (edge_orders(c, &c->edges[i]))
      u->start[c->edges[i].producer + 1]++;
  for (int i = 0; i < n; i++)
    u->start[i + 1] += u->start[i];
  u->succ = xmalloc(((size_t)u->start[n] + 1) * sizeof(int));
  int *fill = xcalloc(sz, sizeof *fill);
  for (int i = 0; i < c->nedges; i++)
    if (edge_orders(c, &c->edges[i])) {
      int p = c->edges[i].producer;
      u->succ[u->start[p] + fill[p]++] = c->edges[i].consumer;
    }
  free(fill);
}

static void sets_free(Sets *u) {
  free(u->parent); /* with head, next, tail, mark and stack */
  free(u->start);
  free(u->succ);
}

/* Join the sets rooted at RA and RB, the lower root the new one. */
static void link_sets(Sets *u, int ra, int rb) {
  if (ra > rb) {
    int t = ra;
    ra = rb;
    rb = t;
  }
  u->parent[rb] = ra;
  u->next[u->tail[ra]] = u->head[rb];
  u->tail[ra] = u->tail[rb];
}

/* Every recurrence one set: its Einsums advance together, a step at a
 * time, so no plan may part them (plan_can_run). Its root is its first
 * Einsum, which names it (Cascade.recurrence). */
static void join_recurrences(const Cascade *c, Sets *u) {
  for (int e = 0; e < c->neinsums; e++) {
    int r = c->recurrence[e];
    if (r >= 0 && r != e)
      link_sets(u, find(u->parent, r), find(u->parent, e));
  }
}

/* Does the set rooted at FROM reach the set rooted at TO in the graph of
 * the sets (a set reaches what any of its members reaches)? */
static bool set_reaches(Sets *u, int from, int to) {
  int top = 0;
  u->stamp++;
  u->mark[from] = u->stamp;
  u->stack[top++] = from;
  while (top > 0) {
    int r = u->stack[--top];
    for (int x = u->head[r]; x >= 0; x = u->next[x])
      for (int k = u->start[x]; k < u->start[x + 1]; k++) {
        int y = find(u->parent, u->succ[k]);
        if (y == to)
          return true;
        if (u->mark[y] != u->stamp) {
          u->mark[y] = u->stamp;
          u->stack[top++] = y;
        }
      }
  }
  return false;
}

/* Merge the sets of A and B unless one depends on the other: a member of
 * one reaches a member of the other, directly or through other merged
 * sets, along edges that order Einsums (a lagged read from outside a
 * recurrence included: YO reading HS[c-1] must follow HS). The sets'
 * graph stays acyclic, so the merged nodes have a topological order. */
static void try_union(const Cascade *c, Sets *u, int a, int b) {
  int ra = find(u->parent, a), rb = find(u->parent, b);
  if (ra == rb)
    return;
  for (int i = u->head[ra]; i >= 0; i = u->next[i])
    for (int j = u->head[rb]; j >= 0; j = u->next[j])
      if (cascade_reaches(c, i, j) || cascade_reaches(c, j, i))
        return;
  if (set_reaches(u, ra, rb) || set_reaches(u, rb, ra))
    return;
  link_sets(u, ra, rb);
}

/* Order nodes topologically along the edges that order Einsums
 * (edge_orders), earliest first among the ready ones, so that the
 * cascade's written order is kept wherever the merging allows. */
/* The ready nodes, least number on top (a binary heap). */
typedef struct Ready {
  int n, *at;
} Ready;

static void ready_push(Ready *r, int v) {
  int i = r->n++;
  for (; i > 0 && r->at[(i - 1) / 2] > v; i = (i - 1) / 2)
    r->at[i] = r->at[(i - 1) / 2];
  r->at[i] = v;
}

static int ready_pop(Ready *r) {
  int top = r->at[0], v = r->at[--r->n], i = 0;
  for (;;) {
    int k = 2 * i + 1;
    if (k >= r->n)
      break;
    if (k + 1 < r->n && r->at[k + 1] < r->at[k])
      k++;
    if (r->at[k] >= v)
      break;
    r->at[i] = r->at[k];
    i = k;
  }
  r->at[i] = v;
  return top;
}

static void order_nodes(const Cascade *c, Nodes *m) {
  int n = m->n;
  int *indeg = xcalloc((size_t)n + 1, sizeof *indeg);
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    int a = m->node_of[e->producer], b = m->node_of[e->consumer];
    if (edge_orders(c, e) && a != b)
      indeg[b]++;
  }
  EdgeIndex out = cascade_edge_index(c, EDGES_BY_PRODUCER);
  Ready ready = {0, xmalloc(((size_t)n + 1) * sizeof *ready.at)};
  for (int j = 0; j < n; j++) /* nodes are listed by first member */
    if (indeg[j] == 0)
      ready_push(&ready, j);
  Node *sorted = xcalloc((size_t)n + 1, sizeof *sorted);
  int *new_index = xcalloc((size_t)n + 1, sizeof *new_index);
  for (int k = 0; k < n; k++) {
    int pick = ready_pop(&ready);
    new_index[pick] = k;
    sorted[k] = m->nodes[pick];
    const Node *nd = &m->nodes[pick];
    for (int q = 0; q < nd->n; q++) /* the edges out of its members */
      for (int o = out.at[nd->einsums[q]]; o < out.at[nd->einsums[q] + 1];
           o++) {
        const Edge *e = &c->edges[out.ord[o]];
        int b = m->node_of[e->consumer];
        if (edge_orders(c, e) && b != pick && --indeg[b] == 0)
          ready_push(&ready, b);
      }
  }
  for (int i = 0; i < c->neinsums; i++)
    m->node_of[i] = new_index[m->node_of[i]];
  memcpy(m->nodes, sorted, (size_t)n * sizeof *sorted);
  edge_index_free(&out);
  free(ready.at);
  free(sorted);
  free(indeg);
  free(new_index);
}

void fusion_partition(int n, const int *of, int nparts, int *members,
                      int *start) {
  memset(start, 0, ((size_t)nparts + 1) * sizeof *start);
  for (int i = 0; i < n; i++)
    start[of[i] + 1]++;
  for (int p = 0; p < nparts; p++)
    start[p + 1] += start[p];
  int *at = xmalloc(((size_t)nparts + 1) * sizeof *at);
  memcpy(at, start, ((size_t)nparts + 1) * sizeof *at);
  for (int i = 0; i < n; i++)
    members[at[of[i]]++] = i;
  free(at);
}

/* Empty Nodes for C, and its three tables, in one zeroed block (nodes_free
 * frees it): the nodes, then node_of and members. */
static Nodes *nodes_alloc(const Cascade *c) {
  size_t ne = (size_t)c->neinsums + 1;
  Nodes *m = xcalloc(1, sizeof *m + ne * (sizeof(Node) + 2 * sizeof(int)));
  m->nodes = (Node *)(m + 1);
  m->node_of = (int *)(m->nodes + ne);
  m->members = m->node_of + ne;
  return m;
}
_Static_assert(sizeof(Nodes) % _Alignof(Node) == 0 &&
                   sizeof(Node) % _Alignof(int) == 0,
               "a Nodes' tables follow it in its block, aligned");

Nodes *nodes_copy(const Cascade *c, const Nodes *from) {
  size_t ne = (size_t)c->neinsums + 1;
  Nodes *m = nodes_alloc(c);
  m->n = from->n;
  memcpy(m->node_of, from->node_of, ne * sizeof *m->node_of);
  memcpy(m->members, from->members, ne * sizeof *m->members);
  for (int k = 0; k < m->n; k++) /* the same slices of the copy */
    m->nodes[k] = (Node){from->nodes[k].n,
                         m->members + (from->nodes[k].einsums - from->members)};
  return m;
}

/* The nodes of the sets PARENT makes, numbered by first member, then put
 * in stitching order; their members in one block. */
static Nodes *nodes_from_parents(const Cascade *c, int *parent) {
  size_t ne = (size_t)c->neinsums + 1;
  Nodes *m = nodes_alloc(c);
  int *root_node = xmalloc(ne * sizeof *root_node);
  for (int i = 0; i < c->neinsums; i++)
    root_node[i] = -1;
  for (int i = 0; i < c->neinsums; i++) {
    int r = find(parent, i);
    if (root_node[r] < 0)
      root_node[r] = m->n++;
    m->node_of[i] = root_node[r];
  }
  int *start = root_node; /* reused: m->n + 1 <= ne entries */
  fusion_partition(c->neinsums, m->node_of, m->n, m->members, start);
  for (int k = 0; k < m->n; k++)
    m->nodes[k] = (Node){start[k + 1] - start[k], m->members + start[k]};
  free(root_node);
  order_nodes(c, m);
  return m;
}


Nodes *fusion_merge(const Cascade *c, const Shape *s) {
  Sets u;
  sets_init(c, &u);
  join_recurrences(c, &u);
  /* Each tensor's readers, in cascade order (inputs included: Q, K and V
   * share the input X). */
  int *start = xcalloc((size_t)c->ntensors + 2, sizeof *start);
  int total = 0;
  for (int e = 0; e < c->neinsums; e++)
    for (int k = 0; k < c->einsums[e]->nreads; k++)
      start[c->einsums[e]->reads[k]->tensor + 1]++, total++;
  for (int t = 0; t < c->ntensors; t++)
    start[t + 1] += start[t];
  int *readers = xmalloc(((size_t)total + 1) * sizeof *readers);
  int *fill = xcalloc((size_t)c->ntensors + 1, sizeof *fill);
  for (int e = 0; e < c->neinsums; e++)
    for (int k = 0; k < c->einsums[e]->nreads; k++) {
      int t = c->einsums[e]->reads[k]->tensor;
      if (fill[t] == 0 || readers[start[t] + fill[t] - 1] != e)
        readers[start[t] + fill[t]++] = e;
    }
  for (int t = 0; t < c->ntensors; t++)
    for (int i = 0; i < fill[t]; i++)
      for (int j = i + 1; j < fill[t]; j++) {
        int x = readers[start[t] + i], y = readers[start[t] + j];
        if (find(u.parent, x) != find(u.parent, y) &&
            compatible(c, s, t, x, y))
          try_union(c, &u, x, y);
      }
  free(readers);
  free(fill);
  free(start);
  Nodes *m = nodes_from_parents(c, u.parent);
  sets_free(&u);
  return m;
}

Nodes *fusion_singletons(const Cascade *c) {
  int *parent = xmalloc(((size_t)c->neinsums + 1) * sizeof *parent);
  for (int i = 0; i < c->neinsums; i++) /* a recurrence is one node */
    parent[i] = c->recurrence[i] >= 0 ? c->recurrence[i] : i;
  Nodes *m = nodes_from_parents(c, parent);
  free(parent);
  return m;
}

void nodes_free(Nodes *m) { free(m); /* with its tables (nodes_alloc) */ }
