/* design.c — the designs of §VI (and FLAT) and their default options. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The DESIGNS table, row by row. */
static const struct {
  const char *name, *label, *help;
  Strategy strategy;
  ModelOpts baseline; /* the fields its row sets; the rest are zero */
} designs[] = {
#define X(id, name, label, strategy, help, ...)                             \
  {name, label, help, strategy, {__VA_ARGS__}},
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
const char *design_help(Design d) { return designs[d].help; }
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
  o.compose = COMPOSE_SEQUENTIAL;
  o.accounting = ACCOUNT_ACHIEVED;
  o.state_io = false;
  o.stitch = STITCH_GREEDY;
  /* The named designs bind by the paper's rule (§V-B), as the paper
   * prices them; the search binds by cost (docs/model.md §2). */
  o.bind = BIND_RULE;
  o.reserve_share = 0.75;
  o.weight_share = 0.5;
  /* The paper states these for full fusion (§IV-E, §VI); each fires only
   * where a group holds what it is about (a reduction read on both sides
   * over a rank its tile splits, a far reader, an RD pair), so they price
   * any plan by its content. FLAT holds whole rows of the scores: a row's
   * reductions complete on chip, so it writes no partial products (its
   * tile holds the reduced rank whole: two passes never fire). */
  bool rows = o.plan == PLAN_ATTENTION;
  o.two_pass = true;
  o.spill_distance = 12;
  o.rd_partials = !rows;
  return o;
}

ModelOverrides model_no_overrides(void) {
  return (ModelOverrides){.state_io = -1, .two_pass = -1, .rd_partials = -1,
                          .spill_distance = -1, .stitch = -1,
                          .bind = -1,
                          .reserve_share = NAN, .weight_share = NAN};
}

ModelOpts model_opts_with(const ModelOverrides *f, Design d) {
  ModelOpts o = model_default_opts(d);
  if (f->pipelined)
    o.compose = COMPOSE_PIPELINED;
  if (f->ideal)
    o.accounting = ACCOUNT_IDEAL;
  if (f->state_io >= 0)
    o.state_io = f->state_io;
  if (f->no_overlap)
    o.no_overlap = true;
  if (f->two_pass >= 0)
    o.two_pass = f->two_pass;
  if (f->rd_partials >= 0)
    o.rd_partials = f->rd_partials;
  if (f->spill_distance >= 0)
    o.spill_distance = f->spill_distance;
  if (f->stitch >= 0)
    o.stitch = (Stitcher)f->stitch;
  if (f->bind >= 0)
    o.bind = (BindPolicy)f->bind;
  if (!isnan(f->reserve_share))
    o.reserve_share = f->reserve_share;
  if (!isnan(f->weight_share))
    o.weight_share = f->weight_share;
  return o;
}

ModelOpts model_opts_for_plan(const ModelOverrides *f, Design d,
                              const Plan *p) {
  _Static_assert(PLAN_BIND_RULE == BIND_RULE + 1 &&
                     PLAN_BIND_COST == BIND_COST + 1,
                 "a plan's binding is the policy, one ahead");
  ModelOpts o = model_opts_with(f, d);
  if (f->bind < 0 && p && p->bind != PLAN_BIND_UNSAID)
    o.bind = (BindPolicy)(p->bind - 1);
  return o;
}
