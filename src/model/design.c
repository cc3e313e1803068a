/* design.c — the designs of §VI and their default options. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const names[DES_COUNT] = {
    "unfused", "ideal", "marca", "geens", "ri", "ri+rsb", "ri+rsb+rsp",
    "full"};
static const char *const labels[DES_COUNT] = {
    "Best unfused", "Ideal fusion", "MARCA-like", "Geens-like",
    "RI",           "RI+RSb",       "RI+RSb+RSp", "Fully fused"};

_Static_assert(sizeof names / sizeof names[0] == DES_COUNT, "a name per design");
_Static_assert(sizeof labels / sizeof labels[0] == DES_COUNT,
               "a label per design");

static const char *const spill_names[SPILL_COUNT] = {"capacity", "distance",
                                                     "two-pass"};

const char *spill_reason_name(SpillReason r) { return spill_names[r]; }

const char *design_name(Design d) { return names[d]; }

const char *design_plan_label(Design d, const Plan *p, char *buf, size_t n) {
  if (d == DES_FULL && p && p->ngroups > 1)
    snprintf(buf, n, "All classes (%d groups)", p->ngroups);
  else
    snprintf(buf, n, "%s", labels[d]);
  return buf;
}
const char *design_label(Design d) { return labels[d]; }

bool design_from_name(const char *name, Design *d) {
  for (int i = 0; i < DES_COUNT; i++)
    if (strcmp(names[i], name) == 0) {
      *d = (Design)i;
      return true;
    }
  return false;
}

Strategy design_strategy(Design d) {
  switch (d) {
  case DES_RI:
    return ST_RI;
  case DES_RI_RSB:
    return ST_RI_RSB;
  case DES_RI_RSB_RSP:
    return ST_RI_RSB_RSP;
  case DES_FULL:
    return ST_FULL;
  default:
    return ST_UNFUSED;
  }
}

Design design_of_strategy(Strategy s) {
  static const Design of[ST_COUNT] = {DES_UNFUSED, DES_RI, DES_RI_RSB,
                                      DES_RI_RSB_RSP, DES_FULL};
  return of[s];
}

ModelOpts model_default_opts(Design d) {
  ModelOpts o = {
      .compose = COMPOSE_SEQUENTIAL,
      .accounting = ACCOUNT_ACHIEVED,
      .state_io = false,
      .stitch = STITCH_GREEDY,
      .reserve_share = 0.75,
      .weight_share = 0.5,
  };
  if (d == DES_FULL) {
    o.two_pass = true;
    o.spill_distance = 12;
    o.rd_partials = true;
  }
  return o;
}

ModelOverrides model_no_overrides(void) {
  return (ModelOverrides){.state_io = -1, .two_pass = -1, .rd_partials = -1,
                          .spill_distance = -1, .stitch = -1,
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
  if (!isnan(f->reserve_share))
    o.reserve_share = f->reserve_share;
  if (!isnan(f->weight_share))
    o.weight_share = f->weight_share;
  return o;
}
