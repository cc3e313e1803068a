/* flat.c — FLAT's plan (Kao et al., "FLAT: An Optimized Dataflow for
 * Mitigating Attention Bottlenecks", ASPLOS 2023): each attention block of
 * a cascade — the score GEMM QK, the softmax over the keys, the GEMM with
 * the values AV — one group, every other Einsum alone (docs/model.md §5).
 *
 * The block is found by structure, not by name:
 *
 *   S  a batched matrix operation (work.c's matrix, with an output
 *      variable that indexes every read: the batch and the heads), the
 *      scores;
 *   the softmax: every Einsum reachable from S through edges into
 *      non-matrix Einsums;
 *   Y  the first batched matrix operation fed by S or the softmax that
 *      sum-reduces a rank of S's output which S does not reduce (the keys),
 *      where some Einsum of the softmax feeding Y reduces that rank too
 *      (the row maximum or the denominator).
 *
 * A GEMM of weights is not batched, so an MLP behind an RMSNorm (a
 * reduction over the width, then a GEMM over it) is no block, nor is
 * Mamba's convolution (batched over channels, but no batched matrix
 * operation follows it); Mamba-2's chunked SSD (C·Bᵀ, a decay mask, then
 * the product with X) reduces nothing over the keys between its two
 * products. The group's tile ranks (plan_tile_ranks) are then the block's
 * shared ranks — the batch, the heads and the queries — so it holds whole
 * rows of the keys: FLAT's row granularity. */
#include "price.h"

#include <stdlib.h>

/* Is E a matrix operation with an output variable indexing every read? */
static bool batched_matrix(const Work *w, const Einsum *E) {
  if (!w->matrix)
    return false;
  VarSet every = E->out_vars;
  for (int k = 0; k < E->nreads; k++)
    every &= access_vars(E->reads[k]);
  return every != 0;
}

/* Does E reduce a variable over rank R? */
static bool reduces_rank(const Einsum *E, int r) {
  VarSet red = einsum_reduced_vars(E);
  for (int v = 0; v < E->nvars; v++)
    if (VARSET_HAS(red, v) && E->vars[v].rank == r)
      return true;
  return false;
}

/* The keys Y reduces: a rank of S's output that S does not reduce, that Y
 * sum-reduces and that an Einsum of the softmax (IN, reaching Y) reduces
 * too. */
static bool reduces_keys(const Cascade *c, int s, int y, const bool *in) {
  const Tensor *T = &c->tensors[c->einsums[s]->out.tensor];
  if (c->einsums[y]->red != RED_SUM)
    return false;
  for (int k = 0; k < T->nranks; k++) {
    int r = T->ranks[k];
    if (reduces_rank(c->einsums[s], r) || !reduces_rank(c->einsums[y], r))
      continue;
    for (int e = 0; e < c->neinsums; e++)
      if (in[e] && e != s && cascade_reaches(c, e, y) &&
          reduces_rank(c->einsums[e], r))
        return true;
  }
  return false;
}

/* Mark in IN the block starting at S (S, its softmax, Y) and return Y,
 * or -1 (IN cleared) when S starts none. TAKEN: Einsums of earlier
 * blocks. */
static int find_block(const Cascade *c, const Work *w, int s,
                      const bool *taken, bool *in) {
  int n = c->neinsums;
  for (int e = 0; e < n; e++)
    in[e] = e == s;
  for (bool grew = true; grew;) { /* the softmax: closure through
                                     non-matrix consumers */
    grew = false;
    for (int i = 0; i < c->nedges; i++) {
      const Edge *ed = &c->edges[i];
      int q = ed->consumer;
      if (edge_orders(c, ed) && in[ed->producer] && !in[q] && !taken[q] &&
          !w[q].matrix)
        in[q] = grew = true;
    }
  }
  int y = -1;
  for (int i = 0; i < c->nedges; i++) {
    const Edge *ed = &c->edges[i];
    int q = ed->consumer;
    if (edge_orders(c, ed) && in[ed->producer] && !taken[q] && q != s &&
        batched_matrix(&w[q], c->einsums[q]) && reduces_keys(c, s, q, in) &&
        (y < 0 || q < y))
      y = q;
  }
  if (y >= 0)
    in[y] = true;
  for (int e = 0; e < n; e++)
    in[e] = in[e] && y >= 0;
  return y;
}

/* Drop from IN every Einsum that reads, through an Einsum outside IN,
 * something IN produces: the group must run as one. */
static void make_convex(const Cascade *c, bool *in) {
  int n = c->neinsums;
  for (bool shrank = true; shrank;) {
    shrank = false;
    for (int e = 0; e < n; e++) {
      if (!in[e])
        continue;
      for (int o = 0; o < n && in[e]; o++)
        if (!in[o] && cascade_reaches(c, o, e))
          for (int m = 0; m < n; m++)
            if (in[m] && cascade_reaches(c, m, o)) {
              in[e] = false;
              shrank = true;
              break;
            }
    }
  }
}

Plan *flat_plan(const Cascade *c, const Shape *s, Diag *d) {
  int n = c->neinsums;
  Work *w = xcalloc((size_t)n + 1, sizeof *w);
  for (int e = 0; e < n; e++)
    model_work(c, s, c->einsums[e], &w[e]);
  int *unit = xmalloc(((size_t)n + 1) * sizeof *unit);
  bool *taken = xcalloc((size_t)n + 1, sizeof *taken);
  bool *in = xcalloc((size_t)n + 1, sizeof *in);
  for (int e = 0; e < n; e++)
    unit[e] = e;
  for (int e = 0; e < n; e++) {
    int y = taken[e] || !batched_matrix(&w[e], c->einsums[e])
                ? -1
                : find_block(c, w, e, taken, in);
    if (y < 0)
      continue;
    make_convex(c, in);
    if (!in[e] || !in[y]) /* no longer the two products */
      continue;
    for (int m = 0; m < n; m++)
      if (in[m]) {
        unit[m] = e; /* its members follow S in the cascade */
        taken[m] = true;
      }
  }
  /* Each block one group, every other Einsum its own (a recurrence's
   * Einsums one), in an order they can run. */
  Plan *p = fusion_plan_units(c, s, ST_UNFUSED, unit, d);
  free(in);
  free(taken);
  free(unit);
  free(w);
  return p;
}
