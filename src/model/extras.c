/* extras.c — the fully fused design's extra traffic in a fusion group
 * (achieved accounting, docs/model.md §3; the paper's §IV-E and §VI-C):
 * RD partial products written off chip, and tensors that need two passes
 * over a rank the group's traversal splits. */
#include "group.h"

#include <limits.h>
#include <stdlib.h>

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

/* The ranks a read inside the group iterates, into ITER (per rank): a
 * lagged read's, a recurrence's rank, walked step by step whatever the
 * tile. */
static void iterated_ranks(const Grp *G, bool *iter) {
  const Cascade *c = G->x->c;
  const Plan *p = G->x->plan;
  const Ctx *x = G->x;
  int g = p->group_of[G->gr->einsums[0]];
  for (int i = 0; i < G->n; i++) /* the edges into the members */
    for (int q = x->in.at[G->gr->einsums[i]];
         q < x->in.at[G->gr->einsums[i] + 1]; q++) {
      const Edge *e = &c->edges[x->in.ord[q]];
      if (p->group_of[e->producer] != g)
        continue;
      for (int a = 0; a < e->nacc; a++)
        for (int j = 0; j < e->acc[a]->n; j++)
          if (e->acc[a]->idx[j].lag > 0)
            iter[c->tensors[e->tensor].ranks[j]] = true;
    }
}

/* Per held tensor, the first edge (in the cascade's order) that hands it
 * to an RD consumer in the group, or -1, into RD_EDGE: one pass over the
 * members' incoming edges for the whole group. */
static void rd_edges(const Grp *G, int *rd_edge) {
  const Ctx *x = G->x;
  const Cascade *c = x->c;
  for (int h = 0; h < G->nheld; h++)
    rd_edge[h] = -1;
  for (int i = 0; i < G->n; i++) /* the edges into the members: the least */
    for (int q = x->in.at[G->gr->einsums[i]];
         q < x->in.at[G->gr->einsums[i] + 1]; q++) {
      int k = x->in.ord[q], h = G->held_of[c->edges[k].tensor];
      if (h >= 0 && (rd_edge[h] < 0 || k < rd_edge[h]) &&
          x->pairs[k].cls == FC_RD)
        rd_edge[h] = k;
    }
}

/* May member I write its output's partial products off chip (§IV-E, RD
 * fusion: "allow partial products of the upstream intermediate tensor to
 * write to main memory, then trigger the downstream Einsum on the final
 * write")? When rd_partials is on, for an output the group makes, does not
 * write anyway, and hands over to an RD consumer in the group (its first
 * such edge: RD_EDGE, rd_edges) -- it does where the group holds it.
 * SPLITS gets the ranks whose reduction that splits (the count returned):
 * the upstream's reduced ranks, walked one tile at a time (partial
 * products exist only then), but a recurrence's rank (ITER,
 * iterated_ranks), which is walked step by step anyway. */
static bool may_write_partials(const Grp *G, int i, const int *rd_edge,
                               const bool *iter, int *splits, int *nsplits) {
  const Ctx *x = G->x;
  const Einsum *E = x->c->einsums[G->gr->einsums[i]];
  int t = E->out.tensor, h = G->held_of[t];
  *nsplits = 0;
  if (!x->o.rd_partials || h < 0 || G->held[h].kind != HELD_MADE ||
      x->plan->written[t] || rd_edge[h] < 0)
    return false;
  const Pair *pr = &x->pairs[rd_edge[h]];
  for (int v = 0; v < E->nvars; v++)
    if (VARSET_HAS(pr->reduced, v) && !iter[E->vars[v].rank])
      splits[(*nsplits)++] = E->vars[v].rank;
  return true;
}

/* Does the group's traversal split a rank of T that Einsum R reduces over
 * -- a tiled rank whose tile is short of its extent, or a rank an RD
 * upstream's partial products split (SPLIT, writes_partials)? Then R sees
 * T one part at a time and cannot finish before the part is gone. */
static bool splits_reduction(const Grp *G, const bool *split, int t, int r) {
  const Cascade *c = G->x->c;
  const Einsum *E = c->einsums[r];
  VarSet red = einsum_reduced_vars(E);
  for (int v = 0; v < E->nvars; v++) {
    int rk = E->vars[v].rank;
    if (!VARSET_HAS(red, v) || !tensor_has_rank(&c->tensors[t], rk))
      continue;
    if (split[rk])
      return true;
    for (int j = 0; j < G->nt; j++)
      if (rk == G->rank[j] && G->tile[j] < G->size[j])
        return true;
  }
  return false;
}

/* FuseMax's pass analysis, its facts of the cascade: a member R whose
 * reduction over one of T's ranks one reader of T feeds and another
 * waits for (RMSNorm's LEX; Mamba's X). */
static bool waits_on_reduction(const Grp *G, int t, int r,
                               const int *reader, int nreaders) {
  const Cascade *c = G->x->c;
  if (!reduces_rank_of(c, c->einsums[r], t))
    return false;
  bool fed = false, waits = false;
  for (int i = 0; i < nreaders; i++) {
    int q = reader[i];
    if (cascade_reaches(c, q, r))
      fed = true;
    else if (q != r && cascade_reaches(c, r, q))
      waits = true;
  }
  return fed && waits;
}

/* And its test of a variant: T (candidate K) needs two passes in the
 * group when the group's traversal splits the rank such a member reduces
 * (splits_reduction): where it holds the rank whole, the reduction
 * completes within the tile and the waiting reader finds T still on chip
 * (one pass: FuseMax's 256-key chunk, a token's model dimension in a
 * group without RD partial products). */
static bool needs_two_passes(const Grp *G, const PassFacts *pf,
                             const bool *split, int t, int k) {
  for (int q = pf->waiter_from[k]; q < pf->waiter_from[k + 1]; q++)
    if (splits_reduction(G, split, t, pf->waiter[q]))
      return true;
  return false;
}

/* Each held tensor's readers after its first use, as Einsums in member
 * order: held tensor H's are READ_BY[(*FROM)[H] .. (*FROM)[H + 1]) of the
 * array returned (both the caller's to free); one pass over the members'
 * reads to count them, one to place them. */
static int *held_readers(const Grp *G, int **from) {
  const Cascade *c = G->x->c;
  int *start = xcalloc((size_t)G->nheld + 2, sizeof *start);
  int *last = xmalloc(((size_t)G->nheld + 1) * sizeof *last);
  int *read_by = NULL;
  for (int pass = 0; pass < 2; pass++) {
    for (int h = 0; h < G->nheld; h++)
      last[h] = -1;
    for (int j = 0; j < G->n; j++) {
      const Einsum *E = c->einsums[G->gr->einsums[j]];
      for (int k = 0; k < E->nreads; k++) {
        int h = G->held_of[E->reads[k]->tensor];
        if (h < 0 || j <= G->held[h].first || last[h] == j)
          continue;
        last[h] = j;
        if (pass == 0)
          start[h + 1]++;
        else
          read_by[start[h]++] = G->gr->einsums[j];
      }
    }
    if (pass == 0) { /* counts to starts */
      for (int h = 0; h < G->nheld; h++)
        start[h + 1] += start[h];
      read_by = xmalloc(((size_t)start[G->nheld] + 1) * sizeof *read_by);
    } else { /* each start was moved to the next one's: move them back */
      for (int h = G->nheld; h > 0; h--)
        start[h] = start[h - 1];
      start[0] = 0;
    }
  }
  free(last);
  *from = start;
  return read_by;
}

void pass_facts_free(PassFacts *pf) {
  free(pf->iter);
  free(pf->rd_edge);
  free(pf->reader);
  free(pf->read_from);
  free(pf->member);
  free(pf->split_from);
  free(pf->splits);
  free(pf->last);
  free(pf->sharer);
  free(pf->cand_of);
  free(pf->partial_ok);
  free(pf->two_ok);
  free(pf->waiter_from);
  free(pf->waiter);
  free(pf->split);
  *pf = (PassFacts){0};
}

/* Per candidate of PF that may need two passes, its WAITER members
 * (PassFacts): at most every member each. Reach follows the cascade's
 * order (a non-lagged edge runs forward), so a waiter lies between its
 * tensor's first and last readers: only those are asked. */
static void waiters(const Grp *G, PassFacts *pf) {
  const Cascade *c = G->x->c;
  pf->waiter_from = xmalloc(((size_t)pf->ncand + 1) * sizeof *pf->waiter_from);
  pf->waiter = xmalloc(((size_t)pf->ncand * G->n + 1) * sizeof *pf->waiter);
  int nw = 0;
  for (int k = 0; k < pf->ncand; k++) {
    pf->waiter_from[k] = nw;
    int t = c->einsums[G->gr->einsums[pf->member[k]]]->out.tensor;
    int h = G->held_of[t];
    const int *rs = &pf->reader[pf->read_from[h]];
    int nr = pf->read_from[h + 1] - pf->read_from[h];
    int lo = INT_MAX, hi = -1;
    for (int i = 0; i < nr; i++) {
      lo = rs[i] < lo ? rs[i] : lo;
      hi = rs[i] > hi ? rs[i] : hi;
    }
    for (int ri = 0; pf->two_ok[k] && ri < G->n; ri++) {
      int r = G->gr->einsums[ri];
      if (r >= lo && r <= hi && waits_on_reduction(G, t, r, rs, nr))
        pf->waiter[nw++] = r;
    }
  }
  pf->waiter_from[pf->ncand] = nw;
}

/* PF's members that may bear an extra charge (PassFacts), from its facts
 * of G: the others bear none whatever G spills or tiles. */
static void extra_candidates(const Grp *G, PassFacts *pf) {
  const Ctx *x = G->x;
  const Cascade *c = x->c;
  size_t n = (size_t)G->n + 1;
  pf->member = xmalloc(n * sizeof *pf->member);
  pf->split_from = xmalloc((n + 1) * sizeof *pf->split_from);
  pf->last = xmalloc(n * sizeof *pf->last);
  pf->partial_ok = xmalloc(n * sizeof *pf->partial_ok);
  pf->two_ok = xmalloc(n * sizeof *pf->two_ok);
  pf->split = xcalloc((size_t)c->nranks + 1, sizeof *pf->split);
  pf->cand_of = xmalloc(n * sizeof *pf->cand_of);
  pf->any_two = false;
  int most = 0; /* room for the ranks: each candidate's variables */
  for (int i = 0; i < G->n; i++)
    most += c->einsums[G->gr->einsums[i]]->nvars;
  pf->splits = xmalloc(((size_t)most + 1) * sizeof *pf->splits);
  int nc = 0, ns = 0;
  pf->split_from[0] = 0;
  for (int i = 0; i < G->n; i++) {
    int t = c->einsums[G->gr->einsums[i]]->out.tensor, h = G->held_of[t];
    pf->cand_of[i] = -1;
    if (h < 0 || G->held[h].kind != HELD_MADE)
      continue;
    int k;
    bool partial = may_write_partials(G, i, pf->rd_edge, pf->iter,
                                      &pf->splits[ns], &k);
    const int *rs = &pf->reader[pf->read_from[h]];
    int nr = pf->read_from[h + 1] - pf->read_from[h];
    bool two = x->o.two_pass && x->inter[t] && nr > 1;
    if (!partial && !two)
      continue;
    int last = i;
    for (int j = i + 1; two && j < G->n; j++)
      if (G->gr->einsums[j] == rs[nr - 1])
        last = j;
    pf->cand_of[i] = nc;
    pf->any_two = pf->any_two || two;
    pf->member[nc] = i;
    pf->partial_ok[nc] = partial;
    pf->two_ok[nc] = two;
    pf->last[nc] = last;
    ns += k;
    pf->split_from[++nc] = ns;
  }
  pf->ncand = nc;
  waiters(G, pf);
  bool *shares = xcalloc(n, sizeof *shares);
  for (int k = 0; k < nc; k++)
    shares[pf->member[k]] = shares[pf->last[k]] = true;
  pf->sharer = xmalloc(n * sizeof *pf->sharer);
  pf->nsharer = 0;
  for (int i = 0; i < G->n; i++)
    if (shares[i])
      pf->sharer[pf->nsharer++] = i;
  free(shares);
}

/* PF's facts of G (its held tensors before any spill): the ranks its
 * lagged reads iterate, each held tensor's first RD hand-over and its
 * readers, the members that may bear an extra charge (the previous facts
 * freed). */
static void pass_facts(const Grp *G, PassFacts *pf) {
  pass_facts_free(pf);
  pf->iter = xcalloc((size_t)G->x->c->nranks + 1, sizeof *pf->iter);
  pf->rd_edge = xmalloc(((size_t)G->nheld + 1) * sizeof *pf->rd_edge);
  iterated_ranks(G, pf->iter);
  rd_edges(G, pf->rd_edge);
  pf->reader = held_readers(G, &pf->read_from);
  extra_candidates(G, pf);
}

/* G's pass facts: its pricer's frame's, found once per group, else
 * OWN's, found now (the caller's to free). */
static PassFacts *facts_of(Grp *G, PassFacts *own) {
  Frame *f = G->x->frame;
  PassFacts *pf = f ? &f->passes : own;
  if (!f || !f->passes_set) {
    pass_facts(G, pf);
    if (f)
      f->passes_set = true;
  }
  return pf;
}

/* Candidate K's partial products into EXTRAS where the group holds its
 * output (T, held tensor H). */
static void partial_charge(const Grp *G, const PassFacts *pf, int k, int t,
                           int h, Charges *extras) {
  if (pf->partial_ok[k] && G->held[h].on)
    charges_push(extras, pf->member[k], t, G->held[h].whole, true, true);
}

bool extras_per_member(Grp *G) {
  if (G->x->o.accounting != ACCOUNT_ACHIEVED)
    return true;
  return G->x->frame && !facts_of(G, NULL)->any_two;
}

void member_extras(Grp *G, int i, Charges *extra) {
  extra->n = 0;
  if (G->x->o.accounting != ACCOUNT_ACHIEVED)
    return;
  const PassFacts *pf = &G->x->frame->passes;
  int k = pf->cand_of[i];
  if (k < 0)
    return;
  int t = G->x->c->einsums[G->gr->einsums[i]]->out.tensor;
  partial_charge(G, pf, k, t, G->held_of[t], extra);
}

/* The paper's full-fusion rules on top of the mappings: an RD pair inside
 * the group writes the upstream's partial products (intra-Einsum traffic,
 * §VI-C), which splits the upstream's reduced ranks; a tensor needing two
 * passes over a split rank is written (if it was not) and read again at
 * its last reader (inter-Einsum traffic: §VI-C's X and LEX). Their
 * charges, in order, into EXTRAS (each with its member). */
void design_extras(Grp *G, Charges *extras) {
  Ctx *x = G->x;
  const Cascade *c = x->c;
  if (x->o.accounting != ACCOUNT_ACHIEVED)
    return;
  PassFacts own = {0}, *pf = facts_of(G, &own);
  bool *split = pf->split;
  /* The ranks the partial products split, where the group holds the
   * output: read only by the two-pass test (set back to rest below). */
  for (int k = 0; pf->any_two && k < pf->ncand; k++) {
    int i = pf->member[k];
    int h = G->held_of[c->einsums[G->gr->einsums[i]]->out.tensor];
    if (pf->partial_ok[k] && G->held[h].on)
      for (int q = pf->split_from[k]; q < pf->split_from[k + 1]; q++)
        split[pf->splits[q]] = true;
  }
  for (int k = 0; k < pf->ncand; k++) {
    int i = pf->member[k];
    int t = c->einsums[G->gr->einsums[i]]->out.tensor;
    int h = G->held_of[t];
    if (!G->held[h].on) /* off chip: read from DRAM by every reader
                           already, and no partial products */
      continue;
    if (pf->two_ok[k]) {
      double n = G->held[h].whole; /* its elements (shape_held) */
      if (needs_two_passes(G, pf, split, t, k)) {
        if (!x->plan->written[t])
          charges_push(extras, i, t, n, true, false);
        charges_push(extras, pf->last[k], t, n, false, false);
        add_spill(G, t, SPILL_TWO_PASS);
      }
    }
    partial_charge(G, pf, k, t, h, extras);
  }
  for (int k = 0; pf->any_two && k < pf->ncand; k++)
    for (int q = pf->split_from[k]; q < pf->split_from[k + 1]; q++)
      split[pf->splits[q]] = false;
  if (&own == pf)
    pass_facts_free(&own);
}
