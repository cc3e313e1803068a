/* modelopts.c — the model's options on the command line (eval, reproduce)
 * and the names of the library's enums as options take them. Plans read
 * back from `fuse --json` are src/fusion/planfile.c's. */
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
/* The executors' --strategy: the interpreter, a strategy, or best (the
 * search's plan: EXEC_BEST). */
static const char *exec_strategy_at(int i) {
  return i == EXEC_BEST ? "best" : strategy_name((Strategy)i);
}
const OptChoices exec_strategy_choices = {"strategy", exec_strategy_at,
                                          EXEC_BEST + 1, "interpreter", true};
const OptChoices stitcher_choices = {"stitcher", stitcher_at, STITCH_COUNT,
                                     NULL, false};
const OptChoices design_choices = {"design", design_at, DES_COUNT, NULL,
                                   false};
/* best (value -1) is not a model design: the commands that take it run
 * the search (docs/search.md, "best elsewhere"). */
const OptChoices design_or_best_choices = {"design", design_at, DES_COUNT,
                                           "best", false};
const OptChoices objective_choices = {"objective", objective_at, 2, NULL,
                                      false};
static const char *search_objective_at(int i) {
  return search_objective_name((SearchObjective)i);
}
static const char *bind_at(int i) { return bind_policy_name((BindPolicy)i); }
static const OptChoices bind_choices = {"binding", bind_at, BIND_COUNT, NULL,
                                        false};
const OptChoices search_objective_choices = {"objective", search_objective_at,
                                             SO_COUNT, NULL, false};

/* ---- the model's options ---- */

#define MO(field) offsetof(ModelOverrides, field)
static const Opt model_opts[] = {
    {"--stitch", OPT_ENUM, MO(stitch), "HOW",
     .help = "greedy (default), alg1 or global: how the fused designs stitch "
             "their groups",
     .choices = &stitcher_choices},
    {"--bind", OPT_ENUM, MO(bind), "HOW",
     .help = "rule (the paper's §V-B; default for named designs) or cost "
             "(each group's Einsums on the units with the least compute "
             "time; default for search)",
     .choices = &bind_choices},
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
