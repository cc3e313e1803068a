/* geometry.c — what a plan moves: how each read is served, which tensors
 * go off chip, and the elements of every off-chip transfer (fusion.h). */
#include "fusion.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Does every tensor a member of EINSUMS (N of them) produces or reads, of
 * those some Einsum produces, have rank R? */
static bool shared_by_group(const Cascade *c, int n, const int *einsums,
                            int r) {
  for (int i = 0; i < n; i++) {
    const Einsum *E = c->einsums[einsums[i]];
    for (int k = -1; k < E->nreads; k++) {
      const Tensor *T =
          &c->tensors[k < 0 ? E->out.tensor : E->reads[k]->tensor];
      if (T->producer >= 0 && !tensor_has_rank(T, r))
        return false;
    }
  }
  return true;
}

int group_tile_ranks(const Cascade *c, int n, const int *einsums,
                     int *ranks) {
  if (n == 0)
    return 0;
  /* A tile rank is one of every produced tensor's, the first member's
   * output's among them: its ranks, in their order, each once. */
  const Tensor *T = &c->tensors[c->einsums[einsums[0]]->out.tensor];
  int nr = 0;
  for (int k = 0; k < T->nranks && nr < IR_MAX_RANKS; k++) {
    int r = T->ranks[k];
    bool seen = false;
    for (int q = 0; q < nr; q++)
      seen = seen || ranks[q] == r;
    if (!seen && shared_by_group(c, n, einsums, r))
      ranks[nr++] = r;
  }
  return nr;
}

int plan_tile_ranks(const Cascade *c, const bool *member, int *ranks) {
  int *list = xmalloc(((size_t)c->neinsums + 1) * sizeof *list), n = 0;
  for (int e = 0; e < c->neinsums; e++)
    if (member[e])
      list[n++] = e;
  n = group_tile_ranks(c, n, list, ranks);
  free(list);
  return n;
}

/* ---- boxes of one tensor, and their union ---- */

typedef struct Boxes {
  int n, cap, ndims;
  Span (*box)[IR_MAX_RANKS];
  double elems; /* of their union */
} Boxes;

static void boxes_clear(Boxes *b, int ndims) {
  b->n = 0;
  b->ndims = ndims;
  b->elems = 0;
}

/* Add a box; recompute the union only when it is new. */
static void boxes_add(Boxes *b, const Span *box) {
  for (int i = 0; i < b->n; i++)
    if (memcmp(b->box[i], box, sizeof(Span) * (size_t)b->ndims) == 0)
      return;
  if (b->n == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 4;
    b->box = xrealloc(b->box, (size_t)b->cap * sizeof *b->box);
  }
  memcpy(b->box[b->n++], box, sizeof(Span) * (size_t)b->ndims);
  b->elems = b->n == 1 ? spans_elems(box, b->ndims)
                       : spans_union((const Span(*)[IR_MAX_RANKS])b->box,
                                     b->n, b->ndims);
}

/* The spans an access touches over its Einsum's whole iteration space. */
static void full_spans(const Shape *s, const Einsum *e, const Access *a,
                       Span *box) {
  Region r;
  region_full(s, e, &r);
  access_spans(s, a, &r, box);
}

static double whole(const Shape *s, int t) {
  return shape_tensor_elems(s, t);
}

/* How many steps before the start of T's initialized rank access A
 * reaches over its Einsum's whole iteration space (0: none). */
static int64_t reach_before_start(const Shape *s, const Einsum *e,
                                  const Access *a) {
  const Einsum *ini = s->c->tensors[a->tensor].init;
  if (!ini)
    return 0;
  Region r;
  region_full(s, e, &r);
  Span sp = index_span(s, &a->idx[ini->out.cond_dim], &r);
  return sp.count > 0 && sp.first < 0 ? -sp.first : 0;
}

double einsum_read_elems(const Shape *s, int e, int t) {
  const Einsum *E = s->c->einsums[e];
  Boxes b = {0};
  boxes_clear(&b, s->c->tensors[t].nranks);
  for (int k = 0; k < E->nreads; k++)
    if (E->reads[k]->tensor == t) {
      Span box[IR_MAX_RANKS];
      full_spans(s, E, E->reads[k], box);
      boxes_add(&b, box);
    }
  free(b.box);
  return b.elems;
}

/* What T's initialization reads for the REACH steps before the start, per
 * input tensor, into BOXES. */
static void init_boxes(const Shape *s, int t, int64_t reach, Boxes *boxes) {
  const Einsum *ini = s->c->tensors[t].init;
  Region reg;
  region_full(s, ini, &reg);
  int v = ini->out.idx[ini->out.cond_dim].var[0];
  reg.lo[v] = -reach;
  reg.hi[v] = 0;
  for (int k = 0; k < ini->nreads; k++) {
    Span box[IR_MAX_RANKS];
    access_spans(s, ini->reads[k], &reg, box);
    boxes_add(&boxes[ini->reads[k]->tensor], box);
  }
}

void einsum_state_elems(const Shape *s, int e, double *elems) {
  const Cascade *c = s->c;
  const Einsum *E = c->einsums[e];
  Boxes *boxes = xcalloc((size_t)c->ntensors + 1, sizeof *boxes);
  for (int t = 0; t < c->ntensors; t++)
    boxes_clear(&boxes[t], c->tensors[t].nranks);
  for (int k = 0; k < E->nreads; k++) {
    int64_t reach = reach_before_start(s, E, E->reads[k]);
    if (reach > 0)
      init_boxes(s, E->reads[k]->tensor, reach, boxes);
  }
  for (int t = 0; t < c->ntensors; t++) {
    elems[t] += boxes[t].elems;
    free(boxes[t].box);
  }
  free(boxes);
}

double state_write_elems(const Shape *s, int t) {
  const Cascade *c = s->c;
  int k, st = init_state_source(c, t, &k);
  if (st < 0)
    return 0;
  double all = shape_tensor_elems(s, st);
  if (k < 0)
    return all;
  double slots = (double)s->size[c->tensors[st].ranks[k]];
  int cond = c->tensors[t].init->out.cond_dim;
  double fresh = (double)s->size[c->tensors[t].ranks[cond]];
  double steps = c->tensors[st].append ? fresh : fmin(fresh, slots);
  return slots > 0 ? all / slots * steps : 0;
}

/* ---- the geometry ---- */

static ReadSrc read_src(const Cascade *c, const int *group_of, int e,
                        const Access *a) {
  if (read_in_recurrence(c, e, a))
    return SRC_RECURRENCE;
  int p = c->tensors[a->tensor].producer;
  if (p >= 0 && group_of[p] == group_of[e])
    return SRC_HANDOVER;
  return SRC_DRAM;
}

/* What filling a plan's geometry one group at a time keeps per tensor:
 * the cascade's edges by tensor (which groups read it), and the group
 * being filled's reads of it. Made once per cascade: plan_geometry's
 * for one plan, a Regroup's for all of its groups. */
typedef struct Fill {
  const Cascade *c;
  const Shape *s;
  int cap;      /* of the plan's xfers */
  EdgeIndex reads; /* the cascade's edges by tensor */
  Boxes *boxes; /* per tensor, for the group being filled */
  int *first;   /* per tensor: the Einsum the group charges it at, or -1 */
  bool *done;   /* per tensor: charged in this group */
  int *inits, ninits; /* scratch: tensors with an initialization */
} Fill;

static Fill *fill_new(const Cascade *c, const Shape *s) {
  size_t nt = (size_t)c->ntensors + 1;
  Fill *f = xcalloc(1, sizeof *f);
  f->c = c;
  f->s = s;
  f->reads = cascade_edge_index(c, EDGES_BY_TENSOR);
  f->boxes = xcalloc(nt, sizeof *f->boxes);
  f->first = xmalloc(nt * sizeof *f->first);
  f->done = xcalloc(nt, sizeof *f->done);
  f->inits = xmalloc(nt * sizeof *f->inits);
  for (int t = 0; t < c->ntensors; t++) {
    f->first[t] = -1;
    boxes_clear(&f->boxes[t], c->tensors[t].nranks);
  }
  return f;
}

static void fill_free(Fill *f) {
  for (int t = 0; t < f->c->ntensors; t++)
    free(f->boxes[t].box);
  free(f->boxes);
  free(f->first);
  free(f->done);
  free(f->inits);
  edge_index_free(&f->reads);
  free(f);
}

/* Does T go off chip under GROUP_OF: a result, or read by another group
 * than its producer's? */
static bool escapes(const Fill *f, const int *group_of, int t) {
  const Cascade *c = f->c;
  const Tensor *T = &c->tensors[t];
  if (T->producer < 0)
    return false;
  if (T->output)
    return true;
  for (int k = f->reads.at[t]; k < f->reads.at[t + 1]; k++)
    if (group_of[c->edges[f->reads.ord[k]].consumer] !=
        group_of[T->producer])
      return true;
  return false;
}

/* Whether T, produced in some group, goes off chip: P's written and
 * onchip. */
static void fill_written(const Fill *f, Plan *p, int t) {
  p->written[t] = escapes(f, p->group_of, t);
  p->onchip[t] = f->c->tensors[t].producer >= 0 && !p->written[t];
}

static void add_xfer(Fill *f, Plan *p, int e, int t, XferKind k,
                     double elems) {
  if (p->nxfers == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 64;
    p->xfers = xrealloc(p->xfers, (size_t)f->cap * sizeof *p->xfers);
  }
  p->xfers[p->nxfers++] = (Transfer){e, t, k, elems};
}

/* The tensors with an initialization that group G reads, ascending, into
 * F's inits. */
static void group_inits(Fill *f, const Group *g) {
  const Cascade *c = f->c;
  f->ninits = 0;
  for (int i = 0; i < g->n; i++) {
    const Einsum *e = c->einsums[g->einsums[i]];
    for (int k = 0; k < e->nreads; k++) {
      int t = e->reads[k]->tensor;
      if (c->tensors[t].init && !f->done[t]) {
        f->done[t] = true;
        f->inits[f->ninits++] = t;
      }
    }
  }
  for (int q = 0; q < f->ninits; q++)
    f->done[f->inits[q]] = false;
  qsort(f->inits, (size_t)f->ninits, sizeof *f->inits, int_ascending);
}

/* The inputs of the initializations that group G's reads before the start
 * need: per input tensor, the union over the group of what the
 * initialization reads for the steps they reach; charged at the group's
 * first Einsum that reaches before a start, input by input in tensor
 * order. */
static void group_state(Fill *f, Plan *p, const Group *g) {
  const Cascade *c = f->c;
  const Shape *s = f->s;
  group_inits(f, g);
  int ninputs = 0; /* the inputs charged, after the inits in f->inits */
  int *inputs = f->inits + f->ninits;
  for (int q = 0; q < f->ninits; q++) {
    int t = f->inits[q];
    const Einsum *ini = c->tensors[t].init;
    int64_t reach = 0;
    int at = -1;
    for (int i = 0; i < g->n; i++) {
      const Einsum *e = c->einsums[g->einsums[i]];
      for (int k = 0; k < e->nreads; k++)
        if (e->reads[k]->tensor == t) {
          int64_t r = reach_before_start(s, e, e->reads[k]);
          if (r > 0 && at < 0)
            at = g->einsums[i];
          reach = r > reach ? r : reach;
        }
    }
    if (reach == 0)
      continue;
    for (int k = 0; k < ini->nreads; k++) {
      int in = ini->reads[k]->tensor;
      if (f->first[in] < 0)
        inputs[ninputs++] = in;
      if (f->first[in] < 0 || at < f->first[in])
        f->first[in] = at;
    }
    init_boxes(s, t, reach, f->boxes);
  }
  qsort(inputs, (size_t)ninputs, sizeof *inputs, int_ascending);
  for (int q = 0; q < ninputs; q++) {
    int t = inputs[q];
    if (c->tensors[t].producer < 0 && f->boxes[t].n > 0)
      add_xfer(f, p, f->first[t], t, XFER_STATE, f->boxes[t].elems);
    boxes_clear(&f->boxes[t], c->tensors[t].nranks);
    f->first[t] = -1;
  }
}

/* Group G's reads from off-chip memory and its writes, in its order,
 * appended to P's transfers (its members' src and written filled). */
static void group_xfers(Fill *f, Plan *p, int gi) {
  const Cascade *c = f->c;
  const Shape *s = f->s;
  const Group *g = &p->groups[gi];
  /* The union of each tensor's DRAM reads over the group. */
  for (int i = 0; i < g->n; i++) {
    int e = g->einsums[i];
    const Einsum *E = c->einsums[e];
    for (int k = 0; k < E->nreads; k++) {
      int t = E->reads[k]->tensor;
      if (p->src[e][k] != SRC_DRAM)
        continue;
      Span box[IR_MAX_RANKS];
      full_spans(s, E, E->reads[k], box);
      if (f->first[t] < 0)
        f->first[t] = e;
      boxes_add(&f->boxes[t], box);
    }
  }
  for (int i = 0; i < g->n; i++) {
    int e = g->einsums[i];
    const Einsum *E = c->einsums[e];
    for (int k = 0; k < E->nreads; k++) {
      int t = E->reads[k]->tensor;
      if (f->first[t] != e || f->done[t])
        continue;
      f->done[t] = true;
      add_xfer(f, p, e, t, XFER_READ, f->boxes[t].elems);
    }
    int out = E->out.tensor;
    if (p->written[out])
      add_xfer(f, p, e, out, XFER_WRITE, whole(s, out));
    double st = state_write_elems(s, out);
    if (st > 0)
      add_xfer(f, p, e, c->tensors[out].init->rhs->acc->tensor,
               XFER_STATE_OUT, st);
  }
  for (int i = 0; i < g->n; i++) {
    const Einsum *E = c->einsums[g->einsums[i]];
    for (int k = 0; k < E->nreads; k++) {
      int t = E->reads[k]->tensor;
      f->first[t] = -1;
      f->done[t] = false;
      boxes_clear(&f->boxes[t], c->tensors[t].nranks);
    }
  }
  group_state(f, p, g);
}

void plan_geometry(const Cascade *c, const Shape *s, Plan *p) {
  size_t nt = (size_t)c->ntensors + 1;
  Fill *f = fill_new(c, s);
  p->neinsums = c->neinsums;
  p->src = xcalloc((size_t)c->neinsums + 1, sizeof *p->src);
  for (int e = 0; e < c->neinsums; e++) {
    const Einsum *E = c->einsums[e];
    p->src[e] = xcalloc((size_t)E->nreads + 1, sizeof **p->src);
    for (int k = 0; k < E->nreads; k++)
      p->src[e][k] = read_src(c, p->group_of, e, E->reads[k]);
  }
  p->written = xcalloc(nt, sizeof *p->written);
  p->onchip = xcalloc(nt, sizeof *p->onchip);
  for (int t = 0; t < c->ntensors; t++)
    fill_written(f, p, t);
  for (int g = 0; g < p->ngroups; g++) {
    Group *gr = &p->groups[g];
    gr->ntiled = group_tile_ranks(c, gr->n, gr->einsums, gr->tiled);
  }
  p->nxfers = 0;
  p->offchip_elems = 0;
  if (s && s->complete) {
    for (int g = 0; g < p->ngroups; g++)
      group_xfers(f, p, g);
    for (int i = 0; i < p->nxfers; i++)
      if ((p->xfers[i].kind == XFER_READ ||
           p->xfers[i].kind == XFER_WRITE) &&
          tensor_is_intermediate(c, p->xfers[i].tensor))
        p->offchip_elems += p->xfers[i].elems;
  }
  fill_free(f);
}

/* ---- one group patched into the every-node-alone plan ---- */

struct Regroup {
  const Cascade *c;
  Fill *f;
  Plan *alone; /* every node its own group: group k is node k */
  Plan *one;   /* alone with one run of nodes patched into one group */
  int *node_at; /* node k's members: alone->members[node_at[k] ..
                   node_at[k + 1]) */
  int i, j;      /* the run patched into one (i == j: none) */
};

Regroup *regroup_new(const Cascade *c, const Shape *s, Plan *alone) {
  Regroup *rg = xcalloc(1, sizeof *rg);
  rg->c = c;
  rg->f = fill_new(c, s);
  rg->alone = alone;
  if (rg->alone) {
    rg->one = plan_copy(c, rg->alone);
    int n = alone->ngroups;
    rg->node_at = xmalloc(((size_t)n + 1) * sizeof *rg->node_at);
    for (int k = 0; k < n; k++)
      rg->node_at[k] = (int)(rg->alone->groups[k].einsums -
                             rg->alone->members);
    rg->node_at[n] = c->neinsums;
    rg->f->cap = rg->one->nxfers; /* plan_copy's room */
  }
  return rg;
}

void regroup_free(Regroup *rg) {
  if (!rg)
    return;
  plan_free(rg->alone);
  plan_free(rg->one);
  fill_free(rg->f);
  free(rg->node_at);
  free(rg);
}

/* Put ONE's entries for the members of nodes [I, J) and their outputs
 * back as ALONE has them. */
static void regroup_undo(Regroup *rg) {
  const Cascade *c = rg->c;
  Plan *one = rg->one, *alone = rg->alone;
  int from = rg->node_at[rg->i], to = rg->node_at[rg->j];
  for (int q = from; q < to; q++) {
    int e = alone->members[q], t = c->einsums[e]->out.tensor;
    one->members[q] = e;
    one->group_of[e] = alone->group_of[e];
    memcpy(one->src[e], alone->src[e],
           (size_t)c->einsums[e]->nreads * sizeof *one->src[e]);
    one->written[t] = alone->written[t];
    one->onchip[t] = alone->onchip[t];
  }
  Group *g = &one->groups[rg->i];
  *g = alone->groups[rg->i];
  g->einsums = one->members + from;
  rg->j = rg->i;
}

Plan *regroup_plan(Regroup *rg, int i, int j) {
  if (!rg->alone)
    return NULL;
  if (rg->j > rg->i)
    regroup_undo(rg);
  if (j == i + 1)
    return rg->alone;
  const Cascade *c = rg->c;
  Plan *one = rg->one;
  int from = rg->node_at[i], to = rg->node_at[j];
  rg->i = i, rg->j = j;
  int *m = one->members + from, n = to - from; /* in cascade order */
  qsort(m, (size_t)n, sizeof *m, int_ascending);
  for (int q = 0; q < n; q++)
    one->group_of[m[q]] = i;
  for (int q = 0; q < n; q++) {
    const Einsum *E = c->einsums[m[q]];
    for (int k = 0; k < E->nreads; k++)
      one->src[m[q]][k] = read_src(c, one->group_of, m[q], E->reads[k]);
    fill_written(rg->f, one, E->out.tensor);
  }
  Group *g = &one->groups[i];
  g->n = n;
  g->einsums = m;
  g->ntiled = group_tile_ranks(c, n, m, g->tiled);
  one->nxfers = 0;
  one->offchip_elems = 0;
  if (rg->f->s && rg->f->s->complete)
    group_xfers(rg->f, one, i);
  return one;
}

/* ---- the cost of a segment, for the global stitcher ----
 *
 * The same rule as plan_geometry, restricted to intermediates, for a
 * segment [left, right] of merged nodes that grows to the left one node at
 * a time, so that the stitcher prices all O(n^2) segments in O(n * reads).
 * Per-tensor state is stamped with the segment's right end instead of
 * being cleared. */
struct SegCost {
  const Cascade *c;
  const Shape *s;
  const Nodes *m;
  int *last_node;   /* per tensor: the last node that consumes it */
  bool *inter;      /* per tensor: an intermediate */
  Span (*spans)[IR_MAX_RANKS]; /* per read (flattened): its full spans */
  bool *rec;        /* per read (flattened): inside a recurrence */
  int *read_base;   /* per Einsum: index of its first read in spans */
  int stamp;        /* the current segment's right end + 1 */
  int *seen;        /* per tensor: stamp of the state below */
  bool *inside;     /* per tensor: produced inside the segment */
  Boxes *boxes;     /* per tensor: the segment's reads of it */
  int right, left;
  double cost;
};

SegCost *segcost_new(const Cascade *c, const Shape *s, const Nodes *m) {
  SegCost *sc = xcalloc(1, sizeof *sc);
  size_t nt = (size_t)c->ntensors + 1;
  sc->c = c;
  sc->s = s;
  sc->m = m;
  /* The five per-tensor tables in one zeroed block at boxes (segcost_free
   * frees it), the widest type first: each starts aligned. */
  sc->boxes = xcalloc(nt, sizeof(Boxes) + 2 * sizeof(int) + 2 * sizeof(bool));
  sc->last_node = (int *)(sc->boxes + nt);
  sc->seen = sc->last_node + nt;
  sc->inter = (bool *)(sc->seen + nt);
  sc->inside = sc->inter + nt;
  for (int t = 0; t < c->ntensors; t++) {
    sc->last_node[t] = -1;
    sc->inter[t] = tensor_is_intermediate(c, t);
  }
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    int q = m->node_of[e->consumer];
    if (q > sc->last_node[e->tensor])
      sc->last_node[e->tensor] = q;
  }
  sc->read_base = xcalloc((size_t)c->neinsums + 1, sizeof *sc->read_base);
  int nreads = 0;
  for (int e = 0; e < c->neinsums; e++) {
    sc->read_base[e] = nreads;
    nreads += c->einsums[e]->nreads;
  }
  size_t nr = (size_t)nreads + 1; /* the per-read tables: one block too */
  sc->spans = xcalloc(nr, sizeof *sc->spans + sizeof *sc->rec);
  sc->rec = (bool *)(sc->spans + nr);
  for (int e = 0; e < c->neinsums; e++) {
    const Einsum *E = c->einsums[e];
    for (int k = 0; k < E->nreads; k++) {
      full_spans(s, E, E->reads[k], sc->spans[sc->read_base[e] + k]);
      sc->rec[sc->read_base[e] + k] = read_in_recurrence(c, e, E->reads[k]);
    }
  }
  return sc;
}

void segcost_free(SegCost *sc) {
  if (!sc)
    return;
  for (int t = 0; t < sc->c->ntensors; t++)
    free(sc->boxes[t].box);
  free(sc->boxes); /* and the other per-tensor tables */
  free(sc->spans); /* and rec */
  free(sc->read_base);
  free(sc);
}

static void touch(SegCost *sc, int t) {
  if (sc->seen[t] == sc->stamp)
    return;
  sc->seen[t] = sc->stamp;
  sc->inside[t] = false;
  boxes_clear(&sc->boxes[t], sc->c->tensors[t].nranks);
}

/* Start an empty segment that will end at node RIGHT. */
void segcost_start(SegCost *sc, int right) {
  sc->right = right;
  sc->left = right + 1;
  sc->stamp++;
  sc->cost = 0;
}

/* Add node LEFT - 1 at the left end; returns the segment's cost. */
double segcost_grow(SegCost *sc) {
  const Cascade *c = sc->c;
  const Node *nd = &sc->m->nodes[--sc->left];
  for (int i = 0; i < nd->n; i++) {
    int e = nd->einsums[i];
    int t = c->einsums[e]->out.tensor;
    if (!sc->inter[t])
      continue;
    touch(sc, t);
    sc->inside[t] = true;
    sc->cost -= sc->boxes[t].elems; /* its readers here no longer fetch it */
    if (c->tensors[t].output || sc->last_node[t] > sc->right)
      sc->cost += shape_tensor_elems(sc->s, t);
  }
  for (int i = 0; i < nd->n; i++) {
    int e = nd->einsums[i];
    const Einsum *E = c->einsums[e];
    for (int k = 0; k < E->nreads; k++) {
      int t = E->reads[k]->tensor;
      if (!sc->inter[t] || sc->rec[sc->read_base[e] + k])
        continue;
      touch(sc, t);
      if (sc->inside[t])
        continue;
      sc->cost -= sc->boxes[t].elems;
      boxes_add(&sc->boxes[t], sc->spans[sc->read_base[e] + k]);
      sc->cost += sc->boxes[t].elems;
    }
  }
  return sc->cost;
}
