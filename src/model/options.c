/* options.c — the model's options (MODEL_OPTIONS in model.h) as values:
 * the unset overrides, the apply step, and each option's row and value as
 * data for the front ends that iterate them. The defaults are
 * design.c's (they start from a design's row). */
#include "model.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

const char *compose_name(Compose c) {
  return c == COMPOSE_PIPELINED ? "pipelined" : "sequential";
}

const char *accounting_name(Accounting a) {
  return a == ACCOUNT_IDEAL ? "ideal" : "achieved";
}

/* A switch sets its field to 1: the enums it stands for agree. */
_Static_assert(COMPOSE_PIPELINED == 1 && ACCOUNT_IDEAL == 1,
               "a switch's value is 1");

/* Each kind's unset value, and whether V is one. */
#define UNSET_BOOL -1
#define UNSET_SWITCH -1
#define UNSET_ENUM -1
#define UNSET_INT -1
#define UNSET_SHARE NAN
#define IS_SET_BOOL(v) ((v) >= 0)
#define IS_SET_SWITCH(v) ((v) >= 0)
#define IS_SET_ENUM(v) ((v) >= 0)
#define IS_SET_INT(v) ((v) >= 0)
#define IS_SET_SHARE(v) (!isnan(v))

ModelOverrides model_no_overrides(void) {
  return (ModelOverrides){
#define UNSET(K, name, ...) .name = UNSET_##K,
      MODEL_OPTIONS(UNSET)
#undef UNSET
  };
}

ModelOpts model_opts_with(const ModelOverrides *f, Design d) {
  ModelOpts o = model_default_opts(d);
#define APPLY(K, name, field, type, ...)                                     \
  if (IS_SET_##K(f->name))                                                   \
    o.field = (type)f->name;
  MODEL_OPTIONS(APPLY)
#undef APPLY
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

/* ---- the options as data ---- */

const ModelOptionInfo model_option_info[] = {
#define INFO(K, name, field, type, def, flag, arg, hi, names, noun, sweep, \
             ...)                                                            \
  {#name, #field, MOK_##K, hi, noun, sweep},
    MODEL_OPTIONS(INFO)
#undef INFO
};
_Static_assert(sizeof model_option_info / sizeof model_option_info[0] ==
                   MO_COUNT,
               "a row per option");

const char *model_option_value_name(ModelOption k, int v) {
  switch (k) {
#define NAME_OF(K, name, field, type, def, flag, arg, hi, names, ...)        \
  case MO_##name: {                                                          \
    const char *(*fn)(type) = names;                                         \
    return fn && v >= 0 && v < hi ? fn((type)v) : NULL;                      \
  }
    MODEL_OPTIONS(NAME_OF)
#undef NAME_OF
  case MO_COUNT:
    break;
  }
  return NULL;
}

double model_opt_value(const ModelOpts *o, ModelOption k) {
  switch (k) {
#define VALUE(K, name, field, ...)                                           \
  case MO_##name:                                                            \
    return (double)o->field;
    MODEL_OPTIONS(VALUE)
#undef VALUE
  case MO_COUNT:
    break;
  }
  return NAN;
}

/* Where each option lies in ModelOverrides: an int, or a share's
 * double. */
static const size_t override_at[] = {
#define AT(K, name, ...) offsetof(ModelOverrides, name),
    MODEL_OPTIONS(AT)
#undef AT
};
_Static_assert(sizeof override_at / sizeof override_at[0] == MO_COUNT,
               "a place per option");

double model_override_value(const ModelOverrides *o, ModelOption k) {
  const char *at = (const char *)o + override_at[k];
  if (model_option_info[k].kind == MOK_SHARE) {
    double v;
    memcpy(&v, at, sizeof v);
    return v; /* NAN: unset */
  }
  int v;
  memcpy(&v, at, sizeof v);
  return v >= 0 ? v : NAN;
}

void model_override_set(ModelOverrides *o, ModelOption k, double v) {
  char *at = (char *)o + override_at[k];
  if (model_option_info[k].kind == MOK_SHARE)
    memcpy(at, &v, sizeof v);
  else {
    int i = isnan(v) ? -1 : (int)v;
    memcpy(at, &i, sizeof i);
  }
}
