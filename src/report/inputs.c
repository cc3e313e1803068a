/* inputs.c — what a result was computed from, written into every --json
 * (docs/results.md): the tool, the command, the spec, the model and the
 * settings, the architecture, the options; each file named by its path
 * and the SHA-256 of the bytes read, so that two results can be told
 * apart (`mambalaya diff`) and rerun. */
#include "report.h"

#include <math.h>

#include "../embed/embed.h"

/* {"name", "path", "shipped", "sha256"}: the input NAME (as given)
 * resolves to under DIR; null if it cannot be read any more. */
static json_t *source_json(const char *dir, const char *name) {
  Source src;
  Diag ignore = {0}; /* unreadable now: null, as documented */
  if (!source_open(dir, name, &src, &ignore))
    return json_null();
  json_t *o = json_object();
  json_object_set_new(o, "name", name ? json_string(name) : json_null());
  json_object_set_new(o, "path", json_string(src.path));
  json_object_set_new(o, "shipped", json_boolean(src.shipped));
  json_object_set_new(o, "sha256", json_string(src.sha256));
  source_free(&src);
  return o;
}

/* Option K's value V as JSON: a name, a bool, a count or a share. */
static json_t *option_json(ModelOption k, double v) {
  const char *name = model_option_value_name(k, (int)v);
  if (name)
    return json_string(name);
  switch (model_option_info[k].kind) {
  case MOK_BOOL:
  case MOK_SWITCH:
    return json_boolean(v != 0);
  case MOK_INT:
  case MOK_ENUM:
    return json_integer((json_int_t)v);
  case MOK_SHARE:
    break;
  }
  return report_real(v);
}

/* Every option, by its ModelOpts field ("compose": "pipelined"). */
json_t *report_opts_json(const ModelOpts *o) {
  json_t *j = json_object();
  for (int k = 0; k < MO_COUNT; k++)
    json_object_set_new(j, model_option_info[k].field,
                        option_json((ModelOption)k,
                                    model_opt_value(o, (ModelOption)k)));
  return j;
}

/* The options given, by their names ("pipelined": true). */
json_t *report_overrides_json(const ModelOverrides *o) {
  json_t *j = json_object();
  for (int k = 0; k < MO_COUNT; k++) {
    double v = model_override_value(o, (ModelOption)k);
    if (isnan(v))
      continue;
    /* A switch's name says what it sets: true, not its field's name. */
    bool is_switch = model_option_info[k].kind == MOK_SWITCH;
    json_object_set_new(j, model_option_info[k].name,
                        is_switch ? json_boolean(v != 0)
                                  : option_json((ModelOption)k, v));
  }
  return j;
}

json_t *report_inputs_json(const Inputs *in) {
  json_t *o = json_object();
  json_object_set_new(o, "tool", json_string("mambalaya " MAMBALAYA_VERSION));
  json_object_set_new(o, "command", json_string(in->command));
  if (in->spec)
    json_object_set_new(o, "spec", source_json("specs", in->spec));
  if (in->model)
    json_object_set_new(o, "model", json_string(in->model));
  if (in->nsets > 0 || in->shape) {
    json_t *set = json_object();
    for (int i = 0; i < in->nsets; i++)
      json_object_set_new(set, in->sets[i].name, report_real(in->sets[i].value));
    json_object_set_new(o, "settings", set);
  }
  if (in->shape) {
    const Cascade *c = in->shape->c;
    json_t *ranks = json_object();
    for (int r = 0; r < c->nranks; r++)
      if (in->shape->size[r] > 0)
        json_object_set_new(ranks, c->ranks[r].name,
                            json_integer((json_int_t)in->shape->size[r]));
    json_object_set_new(o, "ranks", ranks);
  }
  if (in->phase)
    json_object_set_new(o, "phase", json_string(in->phase));
  if (in->arch)
    json_object_set_new(o, "architecture", source_json("archs", in->arch));
  if (in->plan)
    json_object_set_new(o, "plan", source_json(".", in->plan));
  if (in->design)
    json_object_set_new(o, "design", json_string(in->design));
  if (in->strategy)
    json_object_set_new(o, "strategy", json_string(in->strategy));
  if (in->stitch)
    json_object_set_new(o, "stitch", json_string(in->stitch));
  if (in->objective)
    json_object_set_new(o, "objective", json_string(in->objective));
  if (in->opts)
    json_object_set_new(o, "options", report_opts_json(in->opts));
  else if (in->overrides)
    json_object_set_new(o, "options", report_overrides_json(in->overrides));
  return o;
}

void report_json_with_inputs(Buf *b, json_t *root, const Inputs *in) {
  json_object_set_new(root, "inputs", report_inputs_json(in));
  report_json(b, root);
}
