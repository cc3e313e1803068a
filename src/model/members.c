/* members.c — each member of a fusion group (group.c): its loop nest
 * between DRAM and the buffer with what the group holds, the elements it
 * moves when the group sends a held tensor off chip, and its bill -- its
 * mapping's moves, the group's once-per-group moves at it, its share of
 * the design's extras (extras.c) -- made where a variant may change it
 * (the members using a tensor whose holding changed, or whose share of
 * the extras did), and charged where it changed since the group's last
 * price (a group pricer's spill variants: a member's charges and mapping
 * are all a variant changes of it). */
#include "group.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Is read K of Einsum E on chip whatever the group holds? A read inside
 * a recurrence a step back is: that step is the recurrence's state, which
 * the group reserves room for (reservation). A read inside it at the
 * same step (Mamba-1's H reading HH) is an ordinary hand-over: if the
 * group sent the tensor off chip, it is read back. */
static bool reads_state(const Ctx *x, int e, int k) {
  return x->plan->src[e][k] == SRC_RECURRENCE &&
         access_lagged(x->c->einsums[e]->reads[k]);
}

/* Does member I's read K come from DRAM in its own mapping (not held)? */
static bool own_read(const Grp *G, int i, int k) {
  const Ctx *x = G->x;
  int e = G->gr->einsums[i];
  int t = x->c->einsums[e]->reads[k]->tensor;
  int h = G->held_of[t];
  if (reads_state(x, e, k))
    return false;
  switch (x->plan->src[e][k]) {
  case SRC_RECURRENCE:
    return h >= 0 && !G->held[h].on;
  case SRC_HANDOVER:
    return h < 0 || !G->held[h].on;
  case SRC_DRAM:
    break;
  }
  return h < 0 || !G->held[h].on;
}

/* Does member I's mapping write its output to DRAM? */
static bool own_write(const Grp *G, int i) {
  const Ctx *x = G->x;
  int t = x->c->einsums[G->gr->einsums[i]]->out.tensor;
  int h = G->held_of[t];
  if (h >= 0 && G->held[h].on)
    return false; /* held; written once from the buffer if it escapes */
  return x->plan->written[t] || h >= 0;
}

/* Member I's loop nest between DRAM and the buffer, built once per group.
 * What changes between tiles -- which tensors move (the group holds
 * some), the group's tiles, the capacity -- is set by member_problem. */
static Nest *build_nest(const Grp *G, int i) {
  int ei = G->gr->einsums[i];
  const Einsum *e = G->x->c->einsums[ei];
  /* Not zeroed: its problem's coefficient tables are 49 KB, of which the
   * search reads only what einsum_nest sets (clear_tensor), and zeroing
   * them was 5 % of a search (every whole plan priced builds its nests). */
  Nest *n = xmalloc(sizeof *n);
  n->read_at = xmalloc(((size_t)e->nreads + 1) * sizeof *n->read_at);
  einsum_nest(G->x, ei, &n->p, n->tensor_of, n->read_at);
  int nranks = G->x->c->nranks;
  n->out_var = xmalloc(((size_t)nranks + 1) * sizeof *n->out_var);
  for (int r = 0; r < nranks; r++)
    n->out_var[r] = -1;
  for (int v = n->p.nvars - 1; v >= 0; v--) {
    int r = e->vars[v].rank;
    if (VARSET_HAS(e->out_vars, v) && r >= 0 && r < nranks)
      n->out_var[r] = v;
  }
  n->p.capacity = 0; /* member_problem sets it, and the tiles */
  n->norder = 0;     /* no mapping text yet */
  n->text[0] = '\0';
  n->posed = NULL;
  n->slot = NULL;
  n->nposed = n->nblocks = n->nslots = 0;
  return n;
}

/* Member I's loop nest: kept across groups where the context keeps
 * them (member_problem sets every field a group changes). */
Nest *member_nest(const Grp *G, int i) {
  Nest **keep = G->x->nests;
  if (!keep)
    return build_nest(G, i);
  int e = G->gr->einsums[i];
  if (!keep[e])
    keep[e] = build_nest(G, i);
  return keep[e];
}

void nest_free(Nest *n) {
  if (n) {
    free(n->read_at);
    free(n->out_var);
    for (int b = 0; b < n->nblocks; b++)
      free(n->posed[b]);
    free(n->posed);
    free(n->slot);
  }
  free(n);
}

void nests_free(Nest **nests, int n) {
  for (int e = 0; nests && e < n; e++)
    nest_free(nests[e]);
  free(nests);
}

/* What the group sets of member I's problem: which of its tensors move
 * (bit J: tensor J), the group's variables and their tiles. */
typedef struct Posing {
  uint64_t moves;
  VarSet outer;
  double outer_tile[MAP_MAX_VARS];
} Posing;
_Static_assert(MAP_MAX_TENSORS <= 64, "which tensors move: one word");

static void posing_of(const Grp *G, int i, Posing *q) {
  const Einsum *e = G->x->c->einsums[G->gr->einsums[i]];
  const MapProblem *p = &G->nest[i]->p;
  const int *at = G->nest[i]->read_at;
  uint64_t out = (uint64_t)1 << (p->ntensors - 1);
  q->moves = 0;
  for (int k = 0; k < e->nreads; k++)
    if (at[k] >= 0 && !(q->moves >> at[k] & 1) && own_read(G, i, k))
      q->moves |= (uint64_t)1 << at[k];
  q->moves = (q->moves & ~out) | (own_write(G, i) ? out : 0);
  q->outer = 0;
  for (int k = 0; k < G->nt; k++) {
    int v = G->nest[i]->out_var[G->rank[k]];
    if (v >= 0) {
      q->outer |= VARSET_BIT(v);
      q->outer_tile[v] = G->tile[k];
    }
  }
}

/* Member I's problem set as Q poses it, with CAPACITY elements of
 * buffer. */
static const MapProblem *pose(const Grp *G, int i, const Posing *q,
                              double capacity) {
  MapProblem *p = &G->nest[i]->p;
  for (int j = 0; j < p->ntensors; j++)
    p->t[j].dram = q->moves >> j & 1;
  p->outer = q->outer;
  for (VarSet b = q->outer; b; b &= b - 1)
    p->outer_tile[__builtin_ctzll(b)] = q->outer_tile[__builtin_ctzll(b)];
  p->capacity = capacity;
  return p;
}

/* Member I's problem with the group's current holdings and tile, and
 * CAPACITY elements of buffer. */
const MapProblem *member_problem(const Grp *G, int i, double capacity) {
  Posing q;
  posing_of(G, i, &q);
  return pose(G, i, &q, capacity);
}

/* A problem a nest posed, by what member_problem sets of it (the rest
 * of the nest is fixed when it is built): which tensors move, the
 * group's variables and tiles, the capacity; and its mapping. A member
 * poses the same problem in many of the groups and tiles a search
 * prices, and finding it here costs a few words where the memo's key is
 * the whole problem (and, in `reproduce`, a lock the threads share). */
enum { POSED_WORDS = 3 + MAP_MAX_VARS, POSED_BLOCK = 64 };

typedef struct Posed {
  uint64_t hash;
  int nwords;
  uint64_t key[POSED_WORDS];
  Mapping answer;
} Posed;

/* A slot: the problem's place among them + 1 (0: empty), and its hash's
 * high bits, so that a probe reads a problem only where they match. */
typedef struct PosedSlot {
  uint32_t tag;
  int at;
} PosedSlot;

/* The key of the problem Q poses with CAPACITY elements of buffer. */
static int posed_key(const Posing *q, double capacity, uint64_t *w) {
  int n = 0;
  w[n++] = q->moves;
  w[n++] = q->outer;
  memcpy(&w[n++], &capacity, sizeof *w);
  for (VarSet b = q->outer; b; b &= b - 1)
    memcpy(&w[n++], &q->outer_tile[__builtin_ctzll(b)], sizeof *w);
  return n;
}

/* Are the N words at A and B the same? (A key is a few words: inline,
 * where memcmp's call cost more than the comparison.) */
static bool same_words(const uint64_t *a, const uint64_t *b, int n) {
  for (int k = 0; k < n; k++)
    if (a[k] != b[k])
      return false;
  return true;
}

static Posed *posed_at(const Nest *n, int k) {
  return &n->posed[k / POSED_BLOCK][k % POSED_BLOCK];
}

/* The slot of the problem with KEY (NW words, hash H) in N: its place,
 * or the empty slot it would take. */
static PosedSlot *posed_slot(const Nest *n, uint64_t h, const uint64_t *key,
                             int nw) {
  size_t mask = (size_t)n->nslots - 1;
  uint32_t tag = (uint32_t)(h >> 32);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    PosedSlot *s = &n->slot[i];
    if (!s->at)
      return s;
    if (s->tag != tag)
      continue;
    const Posed *e = posed_at(n, s->at - 1);
    if (e->hash == h && e->nwords == nw && same_words(e->key, key, nw))
      return s;
  }
}

/* Room in N for one more problem: its slots kept at most half full. */
static void posed_room(Nest *n) {
  if (n->nposed == n->nblocks * POSED_BLOCK) {
    n->posed = xrealloc(n->posed, (size_t)(n->nblocks + 1) * sizeof *n->posed);
    n->posed[n->nblocks++] = xmalloc(POSED_BLOCK * sizeof **n->posed);
  }
  if (2 * (n->nposed + 1) <= n->nslots)
    return;
  free(n->slot);
  n->nslots = n->nslots ? 2 * n->nslots : 64;
  n->slot = xcalloc((size_t)n->nslots, sizeof *n->slot);
  for (int k = 0; k < n->nposed; k++) {
    const Posed *e = posed_at(n, k);
    *posed_slot(n, e->hash, e->key, e->nwords) =
        (PosedSlot){(uint32_t)(e->hash >> 32), k + 1};
  }
}

const Mapping *member_map(const Grp *G, int i, double capacity) {
  Posing q;
  posing_of(G, i, &q);
  Nest *n = G->nest[i];
  uint64_t key[POSED_WORDS];
  int nw = posed_key(&q, capacity, key);
  uint64_t h = hash_words(key, nw);
  posed_room(n);
  PosedSlot *s = posed_slot(n, h, key, nw);
  if (s->at)
    return &posed_at(n, s->at - 1)->answer;
  Posed *e = posed_at(n, n->nposed++);
  map_search_memo(G->x->memo, pose(G, i, &q, capacity), &e->answer);
  e->hash = h;
  e->nwords = nw;
  memcpy(e->key, key, (size_t)nw * sizeof *key);
  *s = (PosedSlot){(uint32_t)(h >> 32), n->nposed};
  return &e->answer;
}

/* Does member I read held tensor H from the buffer (a recurrence's
 * state excepted: it stays on chip whatever the group holds)? */
static bool reads_held(const Grp *G, const Held *h, int i) {
  const Ctx *x = G->x;
  int e = G->gr->einsums[i];
  const Einsum *E = x->c->einsums[e];
  if (i < h->first + (h->kind == HELD_MADE) || i > h->last)
    return false;
  for (int j = 0; j < E->nreads; j++)
    if (E->reads[j]->tensor == h->tensor && !reads_state(x, e, j))
      return true;
  return false;
}

/* The elements member I moves when SHARE of held tensor H goes off chip:
 * a made tensor is written by its producer (if it was not anyway) and read
 * back by each reader; a shared one is fetched by each reader after the
 * first; a weight, by each reader. *RD and *WR get them. */
void off_chip_moves(const Grp *G, const Held *h, int i, double share,
                           double *rd, double *wr) {
  double n = share * h->whole;
  *rd = *wr = 0;
  if (share <= 0)
    return;
  if (h->kind == HELD_MADE && i == h->first &&
      !G->x->plan->written[h->tensor])
    *wr = n;
  if (reads_held(G, h, i) &&
      !(h->kind == HELD_SHARED && i == h->first))
    *rd = n;
}

/* The share of held tensor H's tile the current tile sends off chip: what
 * overbooking leaves out (a weight and a tensor the group no longer holds
 * are no part of it). */
double overbooked_share(const Grp *G, const Held *h) {
  return h->on && h->kind != HELD_WEIGHT ? 1 - G->keep : 0;
}

/* Elements the group moves once at member I: its held tensors' first
 * fetch (at their first reader), held escaping tensors' write, and what
 * an overbooked tile sends off chip and back. */
double held_charges(const Grp *G, int i) {
  double n = 0;
  if (G->keep >= 1) { /* nothing overbooked: the first fetches alone */
    for (int k = G->held_from[i]; k < G->held_from[i + 1]; k++)
      if (G->held[k].on)
        n += G->held[k].charge;
    return n;
  }
  /* Overbooked: the tensors live at I move (held is in order of first
   * use; one dead at I moves nothing there). */
  for (int k = 0; k < G->held_from[i + 1]; k++) {
    const Held *h = &G->held[k];
    if (!h->on || h->last < i)
      continue;
    if (h->first == i)
      n += h->charge;
    double rd, wr;
    off_chip_moves(G, h, i, overbooked_share(G, h), &rd, &wr);
    n += rd + wr;
  }
  return n;
}

/* Member I's mapping M as text (mapping_text, which reads its loops
 * alone) into TEXT: its nest's kept text where M's loops are those it was
 * last made for. */
static void member_text(const Grp *G, int i, const Mapping *m, char *text) {
  Nest *n = G->nest[i];
  bool same = n->norder == m->norder && n->text[0] != '\0';
  for (int j = 0; same && j < m->norder; j++)
    same = n->order[j] == m->order[j] &&
           n->tile[m->order[j]] == m->tile[m->order[j]];
  if (!same) {
    mapping_text(G->x->c->einsums[G->gr->einsums[i]], m, n->text,
                 sizeof n->text);
    n->norder = m->norder;
    for (int j = 0; j < m->norder; j++) {
      n->order[j] = m->order[j];
      n->tile[m->order[j]] = m->tile[m->order[j]];
    }
  }
  memcpy(text, n->text, sizeof n->text);
}

/* Member I's own bill into B: its mapping M's moves (with CAP elements
 * of buffer) and the group's once-per-group moves at it, in the order
 * they are charged, with M's facts. */
static void bill_member(const Grp *G, int i, const Mapping *m, double cap,
                        Billed *b) {
  const MapProblem *p = &G->nest[i]->p; /* its tensors alone read */
  const int *tensor_of = G->nest[i]->tensor_of;
  b->own.n = 0;
  for (int j = 0; j < p->ntensors; j++) {
    if (m->read[j] > 0)
      charges_push(&b->own, i, tensor_of[j], m->read[j], false, false);
    if (m->write[j] > 0)
      charges_push(&b->own, i, tensor_of[j], m->write[j], true, false);
  }
  /* Nothing overbooked: only the tensors first used here move (held is
   * in order of first use); else those live here. */
  int from = G->keep >= 1 ? G->held_from[i] : 0;
  for (int k = from; k < G->held_from[i + 1]; k++) {
    const Held *h = &G->held[k];
    if (!h->on || h->last < i)
      continue;
    if (h->first == i && h->charge > 0)
      charges_push(&b->own, i, h->tensor, h->charge, h->kind == HELD_MADE,
                   false);
    double rd, wr;
    off_chip_moves(G, h, i, overbooked_share(G, h), &rd, &wr);
    if (rd > 0)
      charges_push(&b->own, i, h->tensor, rd, false, false);
    if (wr > 0)
      charges_push(&b->own, i, h->tensor, wr, true, false);
  }
  billed_facts(b, m, G->nt, cap);
}

/* Member I priced from its binding under bill B (its mapping M of
 * problem P): the plan's geometry (the decode state it moves, logged in
 * B), its own charges, its share of the design's extras, its mapping. */
static void charge_member(Grp *G, int i, Billed *b, const Mapping *m,
                          const MapProblem *p) {
  Ctx *x = G->x;
  EinsumEval *r = &G->ev[i];
  member_restart(x, i, r);
  b->geo.n = 0;
  geometry_traffic(x, r->einsum, r, false, true, &b->geo);
  charges_apply(x, r, &b->own);
  charges_apply(x, r, &b->extra);
  r->footprint = m->footprint;
  r->capacity = p->capacity;
  r->fits = m->fits;
  member_text(G, i, m, r->mapping);
  level_set_mapping(x, r, m, p);
}

/* Charge the members of G at its chosen tile (CAP elements of buffer
 * for them, MAPS their mappings) whose bills may have changed (DIRTY_AT,
 * N of them, in member order; their shares of the design's extras already
 * in NEXT: share_extras): each one's bill made; one billed as at the
 * group's last price (its pricer's, KEPT: the members' bills then) keeps
 * its evaluation from it, as its charges and mapping are all that a
 * variant changes of it; the others are priced from their binding
 * (x->redo says which; a member not dirty is not). The per-tensor totals
 * then, in the order the whole plan's pricing charges them: the
 * geometry's of every member, their own, the design's extras (the
 * group's, in order: EXTRAS). NEXT is scratch for as many bills. */
static void charge_members(Grp *G, const Mapping *const *maps, double cap,
                           const int *dirty_at, int n, Billed *kept,
                           Billed *next, const Charges *extras) {
  Ctx *x = G->x;
  for (int d = 0; d < n; d++) {
    int i = dirty_at[d];
    bill_member(G, i, maps[i], cap, &next[i]);
    next[i].set = true;
  }
  for (int d = 0; d < n; d++) {
    int i = dirty_at[d];
    bool redo = !billed_same(&kept[i], &next[i]);
    if (x->redo)
      x->redo[i] = redo;
    if (!redo)
      continue;
    Billed swap = kept[i];
    kept[i] = next[i];
    next[i] = swap;
    charge_member(G, i, &kept[i], maps[i], member_problem(G, i, cap));
  }
  if (x->no_totals)
    return;
  for (int i = 0; i < G->n; i++)
    charges_total(x, &kept[i].geo);
  for (int i = 0; i < G->n; i++)
    charges_total(x, &kept[i].own);
  charges_total(x, extras);
}

/* Does member I read or write tensor T? */
static bool uses_tensor(const Grp *G, int i, int t) {
  const Einsum *E = G->x->c->einsums[G->gr->einsums[i]];
  for (int r = 0; r < E->nreads; r++)
    if (E->reads[r]->tensor == t)
      return true;
  return E->out.tensor == t;
}

static void mark_dirty(Frame *f, int i) {
  if (!f->dirty[i]) {
    f->dirty[i] = true;
    f->dirty_at[f->ndirty++] = i;
  }
}

/* The members of G whose own bills this variant may change since F's
 * bills were made (into F->dirty_at): every member where none were, the
 * tile, its recurrence or the capacity (CAP) differs or the tile
 * overbooks; else those reading or writing a held tensor whose holding
 * changed. A member's mapping problem depends on the tile, the capacity
 * and the holding of the tensors it reads or writes alone (kept_trial),
 * and its once-per-group moves on the holding of those it uses first. */
static void dirty_members(const Grp *G, Frame *f, double cap) {
  bool all = !f->bill_set || G->keep < 1 ||
             f->bill_nt != G->nt || f->bill_state != G->state_t ||
             f->bill_cap != cap;
  for (int k = 0; !all && k < G->nt; k++)
    all = f->bill_tile[k] != G->tile[k];
  f->ndirty = 0;
  if (all) {
    for (int i = 0; i < G->n; i++)
      mark_dirty(f, i);
    return;
  }
  for (int h = 0; h < G->nheld; h++) {
    const Held *hd = &G->held[h];
    if (f->bill_on[h] == hd->on)
      continue;
    for (int i = hd->first; i <= hd->last; i++) /* its live range: its
                                                    users */
      if (uses_tensor(G, i, hd->tensor))
        mark_dirty(f, i);
  }
}

/* Each share of the design's extras (EXTRAS now) into its member's next
 * bill (F->next), for the members dirty and those that may bear one
 * (PassFacts.sharer: design_extras found them with the group's extras);
 * those of the latter whose share changed since F's last price (a
 * member's bill keeps its share then) made dirty too. */
static void share_extras(Frame *f, const Charges *extras) {
  const PassFacts *pf = &f->passes;
  int nsharer = f->passes_set ? pf->nsharer : 0; /* else no extras */
  for (int d = 0; d < f->ndirty; d++)
    f->next[f->dirty_at[d]].extra.n = 0;
  for (int s = 0; s < nsharer; s++)
    f->next[pf->sharer[s]].extra.n = 0;
  for (int k = 0; k < extras->n; k++) {
    const Charge *c = &extras->c[k];
    charges_push(&f->next[c->member].extra, c->member, c->t, c->n, c->write,
                 c->intra);
  }
  for (int s = 0; s < nsharer; s++) {
    int i = pf->sharer[s];
    if (!f->dirty[i] &&
        !charges_same(&f->next[i].extra, &f->billed[i].extra))
      mark_dirty(f, i);
  }
}

/* F's room for the bills of G's members and its holdings. */
static void bill_room(const Grp *G, Frame *f) {
  if (f->nbilled < G->n) {
    size_t nm = (size_t)G->n + 1;
    f->billed = xrealloc(f->billed, nm * sizeof *f->billed);
    f->next = xrealloc(f->next, nm * sizeof *f->next);
    f->dirty = xrealloc(f->dirty, nm * sizeof *f->dirty);
    f->dirty_at = xrealloc(f->dirty_at, nm * sizeof *f->dirty_at);
    for (int i = f->nbilled; i < G->n; i++) {
      f->billed[i] = f->next[i] = (Billed){0};
      f->dirty[i] = false;
    }
    f->nbilled = G->n;
  }
  if (f->bill_room < G->nheld) {
    f->bill_room = G->nheld;
    f->bill_on = xrealloc(f->bill_on, ((size_t)G->nheld + 1) *
                                          sizeof *f->bill_on);
  }
}

/* charge_members with the bills kept where the context keeps a frame (a
 * group pricer's: its last price's), for only the members whose bills
 * may have changed (dirty_members, share_extras: the others' are as
 * they were, so is their evaluation), else none (every member priced
 * from its binding). */
void bill_members(Grp *G, const Mapping *const *maps, double res) {
  Frame *f = G->x->frame;
  double cap = fmax(G->x->glb - res, 0);
  if (!f) {
    Billed *b = xcalloc(2 * (size_t)G->n + 1, sizeof *b);
    int *all = xmalloc(((size_t)G->n + 1) * sizeof *all);
    for (int i = 0; i < G->n; i++)
      all[i] = i;
    Charges extras = {0};
    design_extras(G, &extras);
    for (int k = 0; k < extras.n; k++) {
      const Charge *c = &extras.c[k];
      charges_push(&b[G->n + c->member].extra, c->member, c->t, c->n,
                   c->write, c->intra);
    }
    charge_members(G, maps, cap, all, G->n, b, b + G->n, &extras);
    billed_free(b, 2 * G->n);
    free(b);
    free(all);
    free(extras.c);
    return;
  }
  bill_room(G, f);
  f->extras.n = 0;
  dirty_members(G, f, cap);
  if (G->x->no_totals && extras_per_member(G)) {
    /* A share that changed is a dirty member's: its output's holding
     * changed, and it writes that output. */
    for (int d = 0; d < f->ndirty; d++)
      member_extras(G, f->dirty_at[d], &f->next[f->dirty_at[d]].extra);
  } else {
    design_extras(G, &f->extras);
    share_extras(f, &f->extras);
  }
  qsort(f->dirty_at, (size_t)f->ndirty, sizeof *f->dirty_at,
        int_ascending);
  if (G->x->redo) /* a member not dirty keeps its evaluation */
    memset(G->x->redo, 0, (size_t)G->n * sizeof *G->x->redo);
  charge_members(G, maps, cap, f->dirty_at, f->ndirty, f->billed, f->next,
                 &f->extras);
  for (int d = 0; d < f->ndirty; d++)
    f->dirty[f->dirty_at[d]] = false;
  f->bill_set = true;
  f->bill_nt = G->nt;
  f->bill_state = G->state_t;
  f->bill_cap = cap;
  memcpy(f->bill_tile, G->tile, sizeof f->bill_tile);
  for (int h = 0; h < G->nheld; h++)
    f->bill_on[h] = G->held[h].on;
}
