/* level.c — the search over fusion levels (search.h): the program of
 * search.c at every level the architecture can take as its fusion level
 * (arch_fusion_candidates: the loader's own rule), each on a copy of the
 * architecture with the level moved, the best of them kept.
 *
 * A level's program is exact at that level; a plan's price at one level
 * does not depend on what another level would have given it, so the best
 * over the levels is the optimum of their union. The bound is the least of
 * the levels' ideals in the objective's figure (at each level the ideal
 * bounds every schedule priced there). */
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

/* Add Q's counts to R's: the space and what was priced, over the levels. */
static void add_counts(SearchResult *r, const SearchResult *q) {
  r->partitions += q->partitions;
  r->groups += q->groups;
  r->priced += q->priced;
  r->variants += q->variants;
  r->named += q->named;
  r->skipped += q->skipped;
  r->named_skipped += q->named_skipped;
  r->bind_capped += q->bind_capped;
  r->stopped = r->stopped || q->stopped;
  r->timed_out = r->timed_out || q->timed_out;
}

/* Q's front joined to R's, filtered again. */
static void merge_fronts(SearchResult *r, const SearchResult *q) {
  if (q->npareto == 0)
    return;
  r->pareto = xrealloc(r->pareto, (size_t)(r->npareto + q->npareto) *
                                      sizeof *r->pareto);
  memcpy(r->pareto + r->npareto, q->pareto,
         (size_t)q->npareto * sizeof *q->pareto);
  r->npareto += q->npareto;
  search_pareto_filter(r);
}

/* Exchange R's schedule (the best, its figure, where it comes from, its
 * level and architecture) with Q's. */
static void swap_schedule(SearchResult *r, SearchResult *q) {
  SearchResult t = *r;
  r->best = q->best, q->best = t.best;
  r->found = q->found, q->found = t.found;
  r->from = q->from, q->from = t.from;
  r->fusion_level = q->fusion_level, q->fusion_level = t.fusion_level;
  r->arch = q->arch, q->arch = t.arch;
}

/* Fold Q (one more level's search; freed here) into R: its counts, its
 * front, its schedule where it is better, its bound where it is lower. */
static void merge(SearchResult *r, SearchResult *q) {
  add_counts(r, q);
  merge_fronts(r, q);
  if (q->found < r->found)
    swap_schedule(r, q);
  if (q->lower < r->lower) {
    Eval *bound = r->bound;
    r->bound = q->bound, q->bound = bound;
    r->lower = q->lower;
  }
  search_free(q);
}

/* The search at A's level LEVEL, on a copy of A (A itself when it is the
 * only candidate: not a byte of a single-candidate figure can move). */
static SearchResult *at_level(const Cascade *c, const Shape *s, const Arch *a,
                              int level, bool alone, const Pair *pairs,
                              const ModelOverrides *o, SearchObjective obj,
                              const SearchControl *ctl, MapMemo *memo,
                              Diag *d) {
  Arch *copy = alone ? NULL : arch_with_fusion_level(a, level);
  SearchResult *r = search_at_level(c, s, copy ? copy : a, pairs, o, obj,
                                    ctl, memo, d);
  if (!r) {
    arch_free(copy);
    return NULL;
  }
  r->arch = copy;
  r->fusion_level = level;
  return r;
}

/* Name the level on the plan found when the search chose among several
 * (a plan file then carries it: eval --plan prices it there); a copy
 * that is A's own level is dropped. */
static void settle(SearchResult *r, const Arch *a, int levels, long budget) {
  r->levels = levels;
  r->budget = budget;
  if (levels > 1)
    snprintf(r->best->plan->fusion_level,
             sizeof r->best->plan->fusion_level, "%s",
             a->levels[r->fusion_level].name);
  if (r->fusion_level == a->fusion_level) {
    arch_free(r->arch);
    r->arch = NULL;
  }
}

SearchResult *search_best_within(const Cascade *c, const Shape *s,
                                 const Arch *a, const Pair *pairs,
                                 const ModelOverrides *o, SearchObjective obj,
                                 long budget, MapMemo *memo, Diag *d) {
  SearchControl ctl = {.budget = budget};
  return search_best_ctl(c, s, a, pairs, o, obj, &ctl, memo, d);
}

/* Progress is told once the whole search has run for a few seconds and
 * every few seconds after, however many levels it spans (each level's
 * steps report at every one). */
enum { PROGRESS_AFTER_S = 3, PROGRESS_EVERY_S = 5 };

/* Level K of N's share of CTL: the budget left after R's pricing, the
 * time left after the levels before, the progress scaled into its part
 * of the whole. */
typedef struct LevelCtl {
  SearchControl ctl;
  const SearchControl *whole;
  int k, n;
  double t0;        /* when the whole search started */
  double *reported; /* when progress was last told, over every level */
} LevelCtl;

static void level_progress(void *ctx, double done, double elapsed) {
  const LevelCtl *l = ctx;
  (void)elapsed;
  double t = now_seconds() - l->t0;
  if (t < PROGRESS_AFTER_S || t - *l->reported < PROGRESS_EVERY_S)
    return;
  *l->reported = t;
  l->whole->progress(l->whole->ctx, (l->k + done) / l->n, t);
}

SearchResult *search_best_ctl(const Cascade *c, const Shape *s,
                              const Arch *a, const Pair *pairs,
                              const ModelOverrides *o, SearchObjective obj,
                              const SearchControl *ctl, MapMemo *memo,
                              Diag *d) {
  long budget = ctl->budget;
  double t0 = now_seconds(), reported = -PROGRESS_EVERY_S;
  int *cand = xmalloc((size_t)a->nlevels * sizeof *cand);
  int n = arch_fusion_candidates(a, cand);
  for (int k = 1; k < n; k++) /* A's own level first: it keeps ties */
    if (cand[k] == a->fusion_level)
      cand[k] = cand[0], cand[0] = a->fusion_level;
  SearchResult *r = NULL;
  for (int k = 0; k < n; k++) {
    long left = budget; /* one budget over every level */
    if (budget > 0 && r)
      left = budget > r->priced ? budget - r->priced : 1;
    double spent = now_seconds() - t0; /* and one time limit */
    if (r && ctl->seconds > 0 && spent >= ctl->seconds) {
      r->timed_out = true; /* the other levels are not priced */
      break;
    }
    LevelCtl lc = {{left, ctl->seconds > 0 ? ctl->seconds - spent : 0,
                    ctl->progress ? level_progress : NULL, NULL},
                   ctl, k, n, t0, &reported};
    lc.ctl.ctx = &lc;
    SearchResult *q = at_level(c, s, a, cand[k], n == 1, pairs, o, obj,
                               &lc.ctl, memo, d);
    if (!q) {
      search_free(r);
      r = NULL;
      break;
    }
    if (r)
      merge(r, q);
    else
      r = q;
  }
  free(cand);
  if (r)
    settle(r, a, n, budget);
  return r;
}
