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
const OptChoices search_objective_choices = {"objective", search_objective_at,
                                             SO_COUNT, NULL, false};

/* ---- the model's options ----
 *
 * Made from MODEL_OPTIONS (model.h): a BOOL's --flag and --no-flag, a
 * SWITCH's --flag, an ENUM's --flag NAME (its names from the model), an
 * INT's --flag N, a SHARE's --flag X. */

#define CHOICES_BOOL(name, noun, hi)
#define CHOICES_SWITCH(name, noun, hi)
#define CHOICES_INT(name, noun, hi)
#define CHOICES_SHARE(name, noun, hi)
#define CHOICES_ENUM(name, noun, hi)                                         \
  static const char *name##_at(int i) {                                      \
    return model_option_value_name(MO_##name, i);                            \
  }                                                                          \
  static const OptChoices name##_choices = {noun, name##_at, hi, NULL, false};
#define CHOICES(K, name, field, type, def, flag, arg, hi, names, noun, ...)  \
  CHOICES_##K(name, noun, hi)
MODEL_OPTIONS(CHOICES)

#define MO(field) offsetof(ModelOverrides, field)
#define ROW_BOOL(name, flag, arg, max, text)                                  \
  {"--" flag, OPT_SWITCH, MO(name), NULL, .help = text, .lo = 1},            \
      {"--no-" flag, OPT_SWITCH, MO(name), NULL,                             \
       .help = "the opposite of --" flag, .lo = 0},
#define ROW_SWITCH(name, flag, arg, max, text)                                \
  {"--" flag, OPT_SWITCH, MO(name), NULL, .help = text, .lo = 1},
#define ROW_ENUM(name, flag, arg, max, text)                                  \
  {"--" flag, OPT_ENUM, MO(name), arg, .help = text,                         \
   .choices = &name##_choices},
#define ROW_INT(name, flag, arg, max, text)                                   \
  {"--" flag, OPT_INT, MO(name), arg, .help = text, .lo = 0, .hi = max},
#define ROW_SHARE(name, flag, arg, max, text)                                 \
  {"--" flag, OPT_DOUBLE, MO(name), arg, .help = text, .lo = 0, .hi = max,    \
   .flags = OPT_LO_OPEN},
#define ROW(K, name, field, type, def, flag, arg, hi, names, noun, sweep,  \
            help)                                                            \
  ROW_##K(name, flag, arg, hi, help)
static const Opt model_opts[] = {MODEL_OPTIONS(ROW)};
const OptTable model_options = OPT_TABLE(model_opts);
