/* plan.c — a plan's memory: a copy that owns its arrays, and freeing one
 * (fusion.h). Below stitch.c and geometry.c, which both make and keep
 * plans. */
#include "fusion.h"

#include <stdlib.h>
#include <string.h>

static void *dup_mem(const void *src, size_t n) {
  void *d = xmalloc(n ? n : 1);
  if (n)
    memcpy(d, src, n);
  return d;
}

Plan *plan_copy(const Cascade *c, const Plan *p) {
  size_t ne = (size_t)c->neinsums + 1, nt = (size_t)c->ntensors + 1;
  Plan *q = xmalloc(sizeof *q);
  *q = *p;
  q->nodes = nodes_copy(c, p->nodes);
  q->groups = dup_mem(p->groups, ne * sizeof *q->groups);
  q->members = dup_mem(p->members, ne * sizeof *q->members);
  for (int g = 0; g < p->ngroups; g++)
    q->groups[g].einsums =
        q->members + (p->groups[g].einsums - p->members);
  q->group_of = dup_mem(p->group_of, ne * sizeof *q->group_of);
  q->src = xcalloc(ne, sizeof *q->src);
  for (int e = 0; e < c->neinsums; e++)
    q->src[e] = dup_mem(p->src[e],
                        ((size_t)c->einsums[e]->nreads + 1) * sizeof **q->src);
  q->written = dup_mem(p->written, nt * sizeof *q->written);
  q->onchip = dup_mem(p->onchip, nt * sizeof *q->onchip);
  q->xfers = dup_mem(p->xfers, (size_t)p->nxfers * sizeof *q->xfers);
  q->spilled = p->spilled ? dup_mem(p->spilled, nt * sizeof *q->spilled)
                          : NULL;
  return q;
}

void plan_free(Plan *p) {
  if (!p)
    return;
  free(p->members);
  for (int e = 0; p->src && e < p->neinsums; e++)
    free(p->src[e]);
  free(p->src);
  free(p->written);
  free(p->xfers);
  free(p->groups);
  free(p->group_of);
  free(p->onchip);
  free(p->spilled);
  nodes_free(p->nodes);
  free(p);
}
