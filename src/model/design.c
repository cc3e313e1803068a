/* design.c — the designs of §VI (and FLAT) and their default options. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The DESIGNS table, row by row. */
static const struct {
  const char *name, *label;
  Strategy strategy;
  ModelOpts baseline; /* the fields its row sets; the rest are zero */
} designs[] = {
#define X(id, name, label, strategy, ...) {name, label, strategy, {__VA_ARGS__}},
    DESIGNS(X)
#undef X
};
_Static_assert(sizeof designs / sizeof designs[0] == DES_COUNT,
               "a row per design");

static const char *const spill_names[] = {"capacity", "distance",
                                          "two-pass", "chosen",
                                          "overbooked"};
_Static_assert(sizeof spill_names / sizeof spill_names[0] == SPILL_COUNT,
               "a name per spill reason");

const char *spill_reason_name(SpillReason r) { return spill_names[r]; }

static const char *const bind_names[] = {"rule", "cost"};
_Static_assert(sizeof bind_names / sizeof bind_names[0] == BIND_COUNT,
               "a name per binding policy");

const char *bind_policy_name(BindPolicy b) { return bind_names[b]; }

const char *design_name(Design d) { return designs[d].name; }
const char *design_label(Design d) { return designs[d].label; }
Strategy design_strategy(Design d) { return designs[d].strategy; }

const char *design_plan_label(Design d, const Plan *p, char *buf, size_t n) {
  if (d == design_of_strategy(ST_FULL) && p && p->ngroups > 1)
    snprintf(buf, n, "All classes (%d groups)", p->ngroups);
  else
    snprintf(buf, n, "%s", designs[d].label);
  return buf;
}

bool design_from_name(const char *name, Design *d) {
  for (int i = 0; i < DES_COUNT; i++)
    if (strcmp(designs[i].name, name) == 0) {
      *d = (Design)i;
      return true;
    }
  return false;
}

const char *design_names(char *buf, size_t n) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < DES_COUNT && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
                            designs[i].name);
  return buf;
}

bool design_is_strategy(Design d) {
  const ModelOpts *b = &designs[d].baseline;
  return designs[d].strategy != ST_UNFUSED && b->plan == PLAN_STITCHED &&
         !b->bound;
}

/* The plain row of a strategy: its design without baseline behaviour
 * (unfused for ST_UNFUSED, not ideal or the baselines). */
Design design_of_strategy(Strategy s) {
  for (int i = 0; i < DES_COUNT; i++) {
    const ModelOpts *b = &designs[i].baseline;
    if (designs[i].strategy == s && b->plan == PLAN_STITCHED && !b->bound)
      return (Design)i;
  }
  return DES_UNFUSED;
}

ModelOpts model_default_opts(Design d) {
  ModelOpts o = designs[d].baseline;
#define DEFAULT(K, name, field, type, def, ...) o.field = def;
  MODEL_OPTIONS(DEFAULT)
#undef DEFAULT
  return o;
}
