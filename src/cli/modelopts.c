/* modelopts.c — the model's options on the command line (eval, reproduce),
 * the names of the library's enums as options take them, and plans read
 * back from `fuse --json`. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the names of the library's enums ---- */

static const char *strategy_at(int i) { return strategy_name((Strategy)i); }
static const char *stitcher_at(int i) { return stitcher_name((Stitcher)i); }
static const char *design_at(int i) { return design_name((Design)i); }
static const char *objective_at(int i) {
  return i == OBJ_GROUPS ? "groups" : "traffic";
}

const OptChoices strategy_choices = {"strategy", strategy_at, ST_COUNT,
                                     "all", false};
const OptChoices exec_strategy_choices = {"strategy", strategy_at, ST_COUNT,
                                          "interpreter", true};
const OptChoices stitcher_choices = {"stitcher", stitcher_at, STITCH_COUNT,
                                     NULL, false};
const OptChoices design_choices = {"design", design_at, DES_COUNT, NULL,
                                   false};
const OptChoices objective_choices = {"objective", objective_at, 2, NULL,
                                      false};
static const char *search_objective_at(int i) {
  return search_objective_name((SearchObjective)i);
}
const OptChoices search_objective_choices = {"objective", search_objective_at,
                                             SO_COUNT, NULL, false};

/* ---- the model's options ---- */

#define MO(field) offsetof(ModelOverrides, field)
static const Opt model_opts[] = {
    {"--stitch", OPT_ENUM, MO(stitch), "HOW",
     .help = "greedy (default), alg1 or global: how the fused designs stitch "
             "their groups",
     .choices = &stitcher_choices},
    {"--pipelined", OPT_SWITCH, MO(pipelined), NULL,
     .help = "compose a group's Einsums by parallel pipelining", .lo = 1},
    {"--ideal", OPT_SWITCH, MO(ideal), NULL,
     .help = "the plan's algorithmic-minimum traffic instead of the mapping "
             "search's",
     .lo = 1},
    {"--state-io", OPT_SWITCH, MO(state_io), NULL,
     .help = "count the decode state (H0, the convolution history, a KV "
             "cache): read before the pass, the steps it adds written after "
             "(default: on for --phase decode, off for a prefill, as the "
             "paper)",
     .lo = 1},
    {"--no-state-io", OPT_SWITCH, MO(state_io), NULL,
     .help = "do not count the decode state", .lo = 0},
    {"--no-overlap", OPT_SWITCH, MO(no_overlap), NULL,
     .help = "an Einsum's compute and DRAM transfers do not overlap", .lo = 1},
    {"--reserve-share", OPT_DOUBLE, MO(reserve_share), "X",
     .help = "share of the buffer a group may hold across its Einsums "
             "(default 0.75)",
     .lo = 0, .hi = 1, .flags = OPT_LO_OPEN},
    {"--weight-share", OPT_DOUBLE, MO(weight_share), "X",
     .help = "a group's weights stay resident when they fit in this share of "
             "the buffer (default 0.5)",
     .lo = 0, .hi = 1},
    {"--two-pass", OPT_SWITCH, MO(two_pass), NULL,
     .help = "FuseMax's second pass over LEX and X (default: on for full only)",
     .lo = 1},
    {"--no-two-pass", OPT_SWITCH, MO(two_pass), NULL,
     .help = "no second pass", .lo = 0},
    {"--rd-partials", OPT_SWITCH, MO(rd_partials), NULL,
     .help = "RD pairs write partial products (default: on for full only)",
     .lo = 1},
    {"--no-rd-partials", OPT_SWITCH, MO(rd_partials), NULL,
     .help = "RD pairs write no partial products", .lo = 0},
    {"--spill-distance", OPT_INT, MO(spill_distance), "N",
     .help = "send an on-chip intermediate off chip when its last reader is "
             "more than N Einsums later (default: 12 for full, 0 = never "
             "otherwise)",
     .lo = 0, .hi = 1000000},
};
const OptTable model_options = OPT_TABLE(model_opts);

/* ---- plans from `fuse --json` ---- */

static Plan *plan_error(Diag *d, const char *path, int line, int col,
                        const char *msg) {
  diag_error(d, path, (Loc){line, col}, "%s", msg);
  return NULL;
}

Plan *load_plan_file(const char *path, const Cascade *c, const Shape *s,
                     Diag *d) {
  json_error_t je;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return plan_error(d, path, je.line, je.column, je.text);
  json_t *plans = json_object_get(root, "plans");
  json_t *p = root;
  char msg[1600];
  if (plans) {
    if (!json_is_array(plans) || json_array_size(plans) != 1) {
      json_decref(root);
      snprintf(msg, sizeof msg,
               "holds %zu plans: write one with `fuse --strategy S --json`",
               json_is_array(plans) ? json_array_size(plans) : (size_t)0);
      return plan_error(d, path, 0, 0, msg);
    }
    p = json_array_get(plans, 0);
  }
  json_t *groups = json_object_get(p, "groups");
  const char *sname = json_string_value(json_object_get(p, "strategy"));
  Strategy st = ST_FULL;
  if (!json_is_array(groups) || !sname || !strategy_from_name(sname, &st)) {
    json_decref(root);
    return plan_error(d, path, 0, 0,
                      "not a plan: expected {\"strategy\": S, \"groups\": "
                      "[[EINSUM, ...], ...]} as `fuse --json` writes");
  }
  int *group_of = xmalloc(((size_t)c->neinsums + 1) * sizeof *group_of);
  for (int e = 0; e < c->neinsums; e++)
    group_of[e] = -1;
  bool ok = true;
  for (size_t g = 0; ok && g < json_array_size(groups); g++) {
    json_t *names = json_array_get(groups, g);
    for (size_t i = 0; ok && i < json_array_size(names); i++) {
      const char *n = json_string_value(json_array_get(names, i));
      int t = n ? cascade_tensor(c, n) : -1;
      int e = t >= 0 ? c->tensors[t].producer : -1;
      if (e < 0) {
        snprintf(msg, sizeof msg, "group %zu names '%s', which no Einsum of "
                                  "%s produces",
                 g + 1, n ? n : "(not a string)", c->path);
        ok = false;
      } else if (group_of[e] >= 0) {
        snprintf(msg, sizeof msg, "%s is in groups %d and %zu", n,
                 group_of[e] + 1, g + 1);
        ok = false;
      } else {
        group_of[e] = (int)g;
      }
    }
  }
  for (int e = 0; ok && e < c->neinsums; e++)
    if (group_of[e] < 0) {
      snprintf(msg, sizeof msg, "no group holds %s (every Einsum of %s must "
                                "be in one)",
               einsum_name(c, e), c->path);
      ok = false;
    }
  Plan *plan = NULL;
  if (ok) {
    Diag pd = {0};
    plan = fusion_plan_groups(c, s, st, group_of, &pd);
    if (!plan) {
      snprintf(msg, sizeof msg, "%s", pd.msg);
      ok = false;
    }
  }
  free(group_of);
  json_decref(root);
  if (!ok)
    return plan_error(d, path, 0, 0, msg);
  return plan;
}
