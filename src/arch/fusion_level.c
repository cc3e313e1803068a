/* fusion_level.c — which memory levels can be the fusion level, why one
 * cannot, and an architecture with another level as its fusion level
 * (arch.h, "the fusion level"): the rule the loader checks a file's
 * choice by and the search's candidates follow. */
#include "arch.h"

#include <stdlib.h>
#include <string.h>

FusionProblem arch_fusion_problem(const Arch *a, int l, int *at) {
  *at = l;
  if (l <= 0)
    return FUSION_OFFCHIP;
  for (int i = 0; i <= l; i++) {
    *at = i;
    if (a->levels[i].instances > 1)
      return FUSION_INSTANCES;
    if (i > 0 && i < l && a->levels[i].capacity < a->levels[l].capacity)
      return FUSION_STAGING;
  }
  *at = l;
  return l == a->nlevels - 1 && a->nlevels > 2 ? FUSION_REGISTERS
                                               : FUSION_OK;
}

void arch_fusion_why(const Arch *a, int l, Buf *b) {
  int at;
  const MemLevel *f = &a->levels[l], *lv;
  switch (arch_fusion_problem(a, l, &at)) {
  case FUSION_OFFCHIP:
    buf_printf(b, "memory level '%s' is off chip: a fusion group keeps its "
                  "intermediates on chip (mark an on-chip level "
                  "'fusion: true')",
               f->name);
    return;
  case FUSION_REGISTERS:
    buf_printf(b, "memory level '%s' is the innermost, where each Einsum's "
                  "operands meet the PEs: a fusion group keeps what it holds "
                  "between Einsums in a level above it",
               f->name);
    return;
  case FUSION_INSTANCES:
    lv = &a->levels[at];
    buf_printf(b, "memory level '%s' is not inside the fusion level '%s': "
                  "only the stores inside it (per-PE or per-core) may have "
                  "instances",
               lv->name, f->name);
    return;
  case FUSION_STAGING:
    lv = &a->levels[at];
    buf_printf(b, "memory level '%s' (", lv->name);
    buf_bytes(b, lv->capacity);
    buf_printf(b, ") stages what the fusion level '%s' (", f->name);
    buf_bytes(b, f->capacity);
    buf_printf(b, ") exchanges with off-chip memory: it must hold at least "
                  "as much, or be the fusion level ('fusion: true')");
    return;
  case FUSION_OK:
  case FUSION_PROBLEM_COUNT:
    break;
  }
}

int arch_fusion_candidates(const Arch *a, int *out) {
  int n = 0, at;
  for (int l = 1; l < a->nlevels; l++)
    if (arch_fusion_problem(a, l, &at) == FUSION_OK) {
      if (out)
        out[n] = l;
      n++;
    }
  return n;
}

Arch *arch_with_fusion_level(const Arch *a, int level) {
  int at;
  if (level < 0 || level >= a->nlevels ||
      arch_fusion_problem(a, level, &at) != FUSION_OK)
    return NULL;
  Arch *copy = xmalloc(sizeof *copy);
  *copy = *a;
  copy->arena = (Arena){0};
  copy->levels =
      arena_alloc(&copy->arena, (size_t)a->nlevels * sizeof *copy->levels);
  for (int l = 0; l < a->nlevels; l++) {
    copy->levels[l] = a->levels[l];
    copy->levels[l].fusion = l == level;
  }
  copy->fusion_level = level;
  return copy;
}

_Static_assert(offsetof(MemLevel, name) == 0,
               "find_named reads a level's name at its start");

int arch_level_named(const Arch *a, const char *name) {
  return find_named(a->levels, a->nlevels, sizeof *a->levels, name);
}

/* The candidates' names, "GlobalBuffer, L2", into B. */
static void candidate_names(const Arch *a, Buf *b) {
  int *cand = xmalloc((size_t)a->nlevels * sizeof *cand);
  int n = arch_fusion_candidates(a, cand);
  for (int k = 0; k < n; k++)
    buf_printf(b, "%s%s", k ? ", " : "", a->levels[cand[k]].name);
  free(cand);
}

int arch_fusion_named(const Arch *a, const char *name, const char *field,
                      const char *file, Loc at, Diag *d) {
  int l = arch_level_named(a, name), why_at;
  if (l >= 0 && arch_fusion_problem(a, l, &why_at) == FUSION_OK)
    return l;
  Buf why = {0}, names = {0};
  if (l >= 0)
    arch_fusion_why(a, l, &why);
  else
    buf_printf(&why, "%s has no memory level '%s'", a->path, name);
  candidate_names(a, &names);
  diag_error(d, file, at, "%s: %s (the fusion levels %s can take: %s)",
             field, why.s, a->name, names.s);
  buf_free(&why);
  buf_free(&names);
  return -1;
}

Arch *arch_with_fusion_named(const Arch *a, const char *name,
                             const char *file, Loc at, Diag *d) {
  int l = arch_fusion_named(a, name, "\"fusion_level\"", file, at, d);
  return l >= 0 ? arch_with_fusion_level(a, l) : NULL;
}
