/* level.c — the fusion levels the search tries (search.h): every level the
 * architecture can take as its fusion level (arch_fusion_candidates: the
 * loader's own rule), each as a copy of the architecture with the level
 * moved, the architecture's own first (it keeps a tie); search.c's program
 * prices each candidate group at each of them, so a plan may fuse each
 * group at its own level (docs/search.md, "The space", item 6).
 *
 * The result is reported on the architecture its best was priced on: a
 * plan whose groups share a level moved off the architecture's own keeps
 * that level's copy (and names it: its plan file's "fusion_level"); a plan
 * that mixes levels names each group's and is reported on the given
 * architecture. */
#include "search.h"

#include <stdlib.h>
#include <string.h>

SearchResult *search_best(const Cascade *c, const Shape *s, const Arch *a,
                          const Pair *pairs, const ModelOverrides *o,
                          SearchObjective obj, MapMemo *memo, Diag *d) {
  return search_best_within(c, s, a, pairs, o, obj, 0, memo, d);
}

const Arch *search_arch(const SearchResult *r, const Arch *a) {
  return r->arch ? r->arch : a;
}

SearchResult *search_best_within(const Cascade *c, const Shape *s,
                                 const Arch *a, const Pair *pairs,
                                 const ModelOverrides *o, SearchObjective obj,
                                 long budget, MapMemo *memo, Diag *d) {
  SearchControl ctl = {.budget = budget};
  return search_best_ctl(c, s, a, pairs, o, obj, &ctl, memo, d);
}

/* Progress is told once the search has run for a few seconds and every
 * few seconds after (the program reports at every step). */
enum { PROGRESS_AFTER_S = 3, PROGRESS_EVERY_S = 5 };

typedef struct Told {
  const SearchControl *whole;
  double reported; /* when progress was last told */
} Told;

static void told_progress(void *ctx, double done, double elapsed) {
  Told *t = ctx;
  if (elapsed < PROGRESS_AFTER_S || elapsed - t->reported < PROGRESS_EVERY_S)
    return;
  t->reported = elapsed;
  t->whole->progress(t->whole->ctx, done, elapsed);
}

/* Where R's best was priced at a level moved off A's own, for the whole
 * plan: R keeps that level's copy (of the N in COPY, per candidate; NULL
 * for A's own; taken out of it) and the plan names it where the search
 * chose among several. */
static void settle(SearchResult *r, const Arch *a, const SearchLevel *lv,
                   Arch **copy, int n) {
  for (int k = 0; k < n; k++)
    if (lv[k].level == r->fusion_level && copy[k]) {
      r->arch = copy[k];
      copy[k] = NULL;
    }
  if (n > 1 && r->fusion_level >= 0)
    snprintf(r->best->plan->fusion_level,
             sizeof r->best->plan->fusion_level, "%s",
             a->levels[r->fusion_level].name);
}

SearchResult *search_best_ctl(const Cascade *c, const Shape *s,
                              const Arch *a, const Pair *pairs,
                              const ModelOverrides *o, SearchObjective obj,
                              const SearchControl *ctl, MapMemo *memo,
                              Diag *d) {
  int *cand = xmalloc((size_t)a->nlevels * sizeof *cand);
  int n = arch_fusion_candidates(a, cand);
  for (int k = 1; k < n; k++) /* A's own level first: it keeps ties */
    if (cand[k] == a->fusion_level)
      cand[k] = cand[0], cand[0] = a->fusion_level;
  SearchLevel *lv = xcalloc((size_t)n + 1, sizeof *lv);
  Arch **copy = xcalloc((size_t)n + 1, sizeof *copy);
  for (int k = 0; k < n; k++) {
    if (cand[k] != a->fusion_level)
      copy[k] = arch_with_fusion_level(a, cand[k]);
    lv[k] = (SearchLevel){cand[k], copy[k] ? copy[k] : a};
  }
  Told told = {ctl, -PROGRESS_EVERY_S};
  SearchControl mine = *ctl;
  if (ctl->progress) {
    mine.progress = told_progress;
    mine.ctx = &told;
  }
  SearchResult *r =
      search_levels(c, s, a, lv, n, pairs, o, obj, &mine, memo, d);
  if (r)
    settle(r, a, lv, copy, n);
  for (int k = 0; k < n; k++)
    arch_free(copy[k]);
  free(copy);
  free(lv);
  free(cand);
  return r;
}
