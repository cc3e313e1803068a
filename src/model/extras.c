/* extras.c — the fully fused design's extra traffic in a fusion group
 * (achieved accounting, docs/model.md §3; the paper's §IV-E and §VI-C):
 * RD partial products written off chip, and tensors that need two passes
 * over a rank the group's traversal splits. */
#include "group.h"

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

/* Does member I write its output's partial products off chip (§IV-E, RD
 * fusion: "allow partial products of the upstream intermediate tensor to
 * write to main memory, then trigger the downstream Einsum on the final
 * write")? When rd_partials is on, for an output the group holds, does not
 * write anyway, and hands over to an RD consumer in the group (its first
 * such edge: RD_EDGE, rd_edges). SPLIT (per rank) gets the ranks whose
 * reduction that splits: the upstream's reduced ranks, walked one tile at
 * a time (partial products exist only then), but a recurrence's rank
 * (ITER, iterated_ranks), which is walked step by step anyway. */
static bool writes_partials(const Grp *G, int i, const int *rd_edge,
                            const bool *iter, bool *split) {
  const Ctx *x = G->x;
  const Einsum *E = x->c->einsums[G->gr->einsums[i]];
  int t = E->out.tensor, h = G->held_of[t];
  if (!x->o.rd_partials || h < 0 || !G->held[h].on ||
      G->held[h].kind != HELD_MADE || x->plan->written[t] || rd_edge[h] < 0)
    return false;
  const Pair *pr = &x->pairs[rd_edge[h]];
  for (int v = 0; v < E->nvars; v++)
    if (VARSET_HAS(pr->reduced, v) && !iter[E->vars[v].rank])
      split[E->vars[v].rank] = true;
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

/* FuseMax's pass analysis: T needs two passes in the group when one
 * reader's data flows into a reduction over one of T's ranks whose result
 * another reader of T waits for (RMSNorm's LEX; Mamba's X), and the
 * group's traversal splits that rank (splits_reduction): where it holds
 * the rank whole, the reduction completes within the tile and the waiting
 * reader finds T still on chip (one pass: FuseMax's 256-key chunk, a
 * token's model dimension in a group without RD partial products). */
static bool needs_two_passes(const Grp *G, const bool *split, int t,
                             const int *reader, int nreaders) {
  const Cascade *c = G->x->c;
  const int *m = G->gr->einsums;
  for (int ri = 0; ri < G->n; ri++) {
    int r = m[ri];
    if (!reduces_rank_of(c, c->einsums[r], t) ||
        !splits_reduction(G, split, t, r))
      continue;
    bool fed = false, waits = false;
    for (int i = 0; i < nreaders; i++) {
      int q = reader[i];
      if (cascade_reaches(c, q, r))
        fed = true;
      else if (q != r && cascade_reaches(c, r, q))
        waits = true;
    }
    if (fed && waits)
      return true;
  }
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
  *pf = (PassFacts){0};
}

/* PF's facts of G (its held tensors before any spill): the ranks its
 * lagged reads iterate, each held tensor's first RD hand-over and its
 * readers (the previous facts freed). */
static void pass_facts(const Grp *G, PassFacts *pf) {
  pass_facts_free(pf);
  pf->iter = xcalloc((size_t)G->x->c->nranks + 1, sizeof *pf->iter);
  pf->rd_edge = xmalloc(((size_t)G->nheld + 1) * sizeof *pf->rd_edge);
  iterated_ranks(G, pf->iter);
  rd_edges(G, pf->rd_edge);
  pf->reader = held_readers(G, &pf->read_from);
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
  Frame *f = x->frame;
  PassFacts own = {0}, *pf = f ? &f->passes : &own;
  if (!f || !f->passes_set) {
    pass_facts(G, pf);
    if (f)
      f->passes_set = true;
  }
  const bool *iter = pf->iter;
  const int *rd_edge = pf->rd_edge, *reader = pf->reader,
            *read_from = pf->read_from;
  bool *split = xcalloc((size_t)c->nranks + 1, sizeof *split);
  bool *partials = xcalloc((size_t)G->n + 1, sizeof *partials);
  for (int i = 0; i < G->n; i++)
    partials[i] = writes_partials(G, i, rd_edge, iter, split);
  for (int i = 0; i < G->n; i++) {
    int e = G->gr->einsums[i];
    int t = c->einsums[e]->out.tensor;
    int h = G->held_of[t];
    bool held = h >= 0 && G->held[h].on && G->held[h].kind == HELD_MADE;
    double n = held || partials[i] ? G->held[h].whole : 0; /* its
                                                   elements (shape_held) */
    /* Only a held tensor: one off chip is read from DRAM by every reader
     * already. */
    if (x->o.two_pass && x->inter[t] && held) {
      const int *rs = &reader[read_from[h]];
      int nr = read_from[h + 1] - read_from[h];
      if (nr > 1 && needs_two_passes(G, split, t, rs, nr)) {
        if (!x->plan->written[t])
          charges_push(extras, i, t, n, true, false);
        int last = i;
        for (int j = i + 1; j < G->n; j++)
          if (G->gr->einsums[j] == rs[nr - 1])
            last = j;
        charges_push(extras, last, t, n, false, false);
        add_spill(G, t, SPILL_TWO_PASS);
      }
    }
    if (partials[i])
      charges_push(extras, i, t, n, true, true);
  }
  if (!f)
    pass_facts_free(&own);
  free(partials);
  free(split);
}
