/* trace.c — the comparisons of times one group price makes (price.h's
 * Trace): the tile choice (group.c) keeps each trial it weighs by its
 * time and each comparison, where its pricer makes bills (timing.c), and
 * nothing where it does not. */
#include "price.h"

#include <stdlib.h>

int trace_trial(Trace *t, const double *elems, int n, double traffic) {
  if (!t)
    return -1;
  for (int i = 0; i < n; i++)
    VEC_PUSH(t->elems, t->nelems, t->cap_elems, elems[i]);
  VEC_PUSH(t->trial, t->ntrials, t->cap_trials,
           ((TraceTrial){t->nelems - n, n, traffic}));
  return t->ntrials - 1;
}

void trace_compare(Trace *t, int a, int b, bool better) {
  if (t)
    VEC_PUSH(t->cmp, t->ncmp, t->cap_cmp, ((TraceCompare){a, b, better}));
}

void trace_clear(Trace *t) {
  if (t)
    t->ntrials = t->nelems = t->ncmp = 0;
}

void trace_free(Trace *t) {
  if (t) {
    free(t->trial);
    free(t->elems);
    free(t->cmp);
  }
  free(t);
}
