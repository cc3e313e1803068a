/* classify.c — RI, RSb, RSp or RD for every producer->consumer pair. */
#include "fusion.h"

#include <string.h>

static const char *const class_names[] = {FUSION_CLASSES(NAME_ENTRY)};
_Static_assert(sizeof class_names / sizeof class_names[0] == FC_COUNT,
               "a name per class");

const char *fusion_class_name(FusionClass k) { return class_names[k]; }

/* Variables that a window read folds onto one coordinate of T: in
 * TTX[b, i+f-F+1, d] the element at i' is read for every (i, f) with
 * i+f-F+1 = i', so f reuses it. The variable kept as "the" coordinate is
 * one the consumer also writes (i); the others are the window's. */
static VarSet window_vars(const Cascade *c, const Shape *s, const Einsum *q,
                          const Access *a) {
  VarSet w = 0;
  for (int k = 0; k < a->n; k++) {
    const Index *ix = &a->idx[k];
    if (ix->nterms < 2 || index_injective(c, s, q, ix))
      continue;
    int keep = ix->var[0];
    for (int t = 0; t < ix->nterms; t++)
      if (VARSET_HAS(q->out_vars, ix->var[t])) {
        keep = ix->var[t];
        break;
      }
    for (int t = 0; t < ix->nterms; t++)
      if (ix->var[t] != keep)
        w |= VARSET_BIT(ix->var[t]);
  }
  return w;
}

/* Compared through T, the producer iterates a rank the consumer does not
 * when it reduces a variable away from T, or when the consumer reads a
 * coordinate of T only at a constant index (RNV[b,h,M1-1,p,f]: the last
 * step of a recurrence): the producer's variable there is one loop of its
 * space that no loop of the consumer's matches. The consumer iterates a
 * rank the producer does not when some read of T leaves one of its
 * variables out, each read judged on its own: the element a read takes
 * is reused across the variables that read ignores (ACS[l] - ACS[s]
 * reuses ACS[l] over s and ACS[s] over l), and across the extra variables
 * of a window. */
FusionClass fusion_classify_reads(const Cascade *c, const Shape *s,
                                  int tensor, int consumer, VarSet *reduced,
                                  VarSet *broadcast) {
  const Einsum *q = c->einsums[consumer];
  int producer = c->tensors[tensor].producer;
  const Einsum *p = producer >= 0 ? c->einsums[producer] : NULL;
  bool iterated[IR_MAX_RANKS] = {false};
  *reduced = p ? einsum_reduced_vars(p) : 0;
  *broadcast = 0;
  for (int k = 0; k < q->nreads; k++) {
    const Access *a = q->reads[k];
    if (a->tensor != tensor)
      continue;
    *broadcast |= (einsum_all_vars(q) & ~access_vars(a)) |
                  window_vars(c, s, q, a);
    for (int d = 0; d < a->n; d++)
      iterated[d] = iterated[d] || a->idx[d].nterms > 0;
  }
  for (int d = 0; p && d < p->out.n; d++)
    if (!iterated[d])
      *reduced |= VARSET_BIT(p->out.idx[d].var[0]);
  if (*reduced && *broadcast)
    return FC_RD;
  if (*reduced)
    return FC_RSB;
  if (*broadcast)
    return FC_RSP;
  return FC_RI;
}

Pair *fusion_classify(const Cascade *c, const Shape *s) {
  Pair *pairs = xcalloc((size_t)c->nedges + 1, sizeof *pairs);
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    pairs[i].edge = e;
    pairs[i].cls = fusion_classify_reads(c, s, e->tensor, e->consumer,
                                         &pairs[i].reduced,
                                         &pairs[i].broadcast);
  }
  return pairs;
}
