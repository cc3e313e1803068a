/* pareto.c — the front of a study's points over its objectives, per
 * group (a prefill and a decode step are not compared; nor, with
 * front_per: tokens, 512 tokens and 8192). Points are
 * sorted by their objective vectors: whatever dominates a point comes
 * before it, so one pass keeping the undominated ones finds the front in
 * O(n x front). */
#include "study.h"

#include <math.h>
#include <stdlib.h>

typedef struct Cand {
  double obj[SWEEP_MAX_OBJECTIVES];
  long point;
} Cand;


static int by_objectives(const void *x, const void *y) {
  const Cand *a = x, *b = y;
  for (int k = 0; k < SWEEP_MAX_OBJECTIVES; k++) {
    if (a->obj[k] < b->obj[k])
      return -1;
    if (a->obj[k] > b->obj[k])
      return 1;
  }
  return (a->point > b->point) - (a->point < b->point);
}

/* Is A at least as good as B in every objective and better in one? */
static bool dominates(const Cand *a, const Cand *b, int n) {
  bool better = false;
  for (int k = 0; k < n; k++) {
    if (a->obj[k] > b->obj[k])
      return false;
    better = better || a->obj[k] < b->obj[k];
  }
  return better;
}

void sweep_front(const Study *s, const PointResult *res, bool *on) {
  long n = s->npoints;
  Cand *c = xcalloc((size_t)n + 1, sizeof *c);
  Cand **front = xcalloc((size_t)n + 1, sizeof *front);
  int *group_of = xcalloc((size_t)n + 1, sizeof *group_of);
  char **labels;
  int ng = study_groups(s, group_of, &labels);
  for (long i = 0; i < n; i++)
    on[i] = false;
  for (int g = 0; g < ng; g++) {
    long m = 0;
    for (long i = 0; i < n; i++) {
      if (group_of[i] != g || res[i].error[0])
        continue;
      Cand *x = &c[m];
      bool finite = true;
      for (int k = 0; k < SWEEP_MAX_OBJECTIVES; k++) {
        x->obj[k] = k < s->nobjectives ? res[i].fig[s->objectives[k]] : 0;
        finite = finite && isfinite(x->obj[k]);
      }
      x->point = i;
      m += finite;
    }
    qsort(c, (size_t)m, sizeof *c, by_objectives);
    long nf = 0;
    for (long i = 0; i < m; i++) {
      bool dominated = false;
      for (long j = 0; j < nf && !dominated; j++)
        dominated = dominates(front[j], &c[i], s->nobjectives);
      if (!dominated) {
        front[nf++] = &c[i];
        on[c[i].point] = true;
      }
    }
  }
  for (int g = 0; g < ng; g++)
    free(labels[g]);
  free(labels);
  free(group_of);
  free(front);
  free(c);
}
