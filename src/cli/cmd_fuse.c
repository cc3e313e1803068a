/* cmd_fuse.c — `mambalaya fuse SPEC`: fusion groups under each strategy. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct FuseArgs {
  SpecOpts spec;
  int strategy; /* -1: all */
  int stitch, objective;
  const char *dot;
} FuseArgs;

static const Opt fuse_opts[] = {
    {"--strategy", OPT_ENUM, offsetof(FuseArgs, strategy), "S",
     .help = "(default: all)", .flags = OPT_LIST,
     .choices = &strategy_choices},
    {"--stitch", OPT_ENUM, offsetof(FuseArgs, stitch), "HOW",
     .help = "greedy (default; the paper's walk, pairwise classes), alg1 "
             "(Algorithm 1 as printed: iteration-space intersections), global "
             "(exact search)",
     .choices = &stitcher_choices},
    {"--objective", OPT_ENUM, offsetof(FuseArgs, objective), "O",
     .help = "for --stitch global: traffic (default: fewest off-chip "
             "intermediate elements, then fewest groups) or groups",
     .choices = &objective_choices},
    {"--json", OPT_FLAG, offsetof(FuseArgs, spec.json), NULL,
     .help = "print JSON: {\"strategy\", \"groups\": [[OUT, ...]]}; with "
             "--strategy all, {\"plans\": [...]}"},
    {"--dot", OPT_PATH, offsetof(FuseArgs, dot), "FILE",
     .help = "write the plan as a Graphviz graph, groups as clusters (needs "
             "one --strategy)"},
};
static const OptTable fuse_table = OPT_TABLE(fuse_opts);

static void fuse_init(void *opts) {
  *(FuseArgs *)opts = (FuseArgs){.strategy = -1, .stitch = STITCH_GREEDY,
                                 .objective = OBJ_TRAFFIC};
}

/* What fuse prints and draws: the text or JSON plans, the graph. */
typedef struct FuseOut {
  Buf text, dot;
  json_t *plans;
} FuseOut;

/* Each strategy's plan (all of them, or the one asked for) into OUT;
 * false after a message. */
static bool plan_each(const FuseArgs *o, const Cascade *c, const Shape *s,
                      FuseOut *out) {
  Pair *pairs = fusion_classify(c, s);
  int first = o->strategy < 0 ? 0 : o->strategy;
  int last = o->strategy < 0 ? ST_COUNT - 1 : o->strategy;
  bool ok = true;
  for (int i = first; ok && i <= last; i++) {
    Diag d = {0};
    Plan *p = fusion_plan(c, s, pairs, (Strategy)i, (Stitcher)o->stitch,
                          (Objective)o->objective, &d);
    if (!(ok = p != NULL)) {
      diag_print(&d, stderr);
      break;
    }
    if (o->spec.json)
      json_array_append_new(out->plans, report_plan_json(c, p));
    else
      report_plan_text(&out->text, c, p);
    if (o->dot)
      report_plan_dot(&out->dot, c, pairs, p);
    plan_free(p);
  }
  free(pairs);
  return ok;
}

static void print_json(const FuseArgs *o, const Cascade *c, const Shape *s,
                       json_t *plans) {
  Inputs in = spec_inputs("fuse", &o->spec, c, s);
  in.strategy = o->strategy < 0 ? "all" : strategy_name(o->strategy);
  in.stitch = stitcher_name(o->stitch);
  in.objective = objective_choices.name(o->objective);
  if (o->strategy >= 0) {
    emit_json(json_incref(json_array_get(plans, 0)), &in);
    return;
  }
  json_t *root = json_object();
  json_object_set_new(root, "spec", json_string(c->path));
  json_object_set_new(root, "plans", json_incref(plans));
  emit_json(root, &in);
}

static int fuse(const Parsed *p, void *opts) {
  const FuseArgs *o = opts;
  if (o->dot && o->strategy < 0)
    return usage_error(p->cmd, "--dot needs a single --strategy");
  const char *inputs[] = {input_path("specs", o->spec.spec)};
  int err;
  if (o->dot && (err = check_output(p->cmd, o->dot, inputs, 1)))
    return err;
  Cascade *c;
  Shape *s;
  if ((err = load_spec(p->cmd, &o->spec, false, &c, &s)))
    return err;
  FuseOut out = {.plans = json_array()};
  int status = plan_each(o, c, s, &out) ? 0 : EXIT_INPUT;
  if (status == 0 && o->dot)
    status = write_output(p->cmd, o->dot, out.dot.s, out.dot.len, p->inputs);
  if (status == 0 && o->spec.json)
    print_json(o, c, s, out.plans);
  else if (status == 0)
    emit(&out.text);
  json_decref(out.plans);
  buf_free(&out.text);
  buf_free(&out.dot);
  shape_free(s);
  cascade_free(c);
  return status;
}

const Command fuse_command = {
    "fuse", "stitch the cascade into fusion groups per strategy",
    .about = "Merge Einsums that share an input, then stitch the cascade into "
             "fusion\ngroups (paper SIII-E, SIV).\n",
    .opts = &fuse_table,
    .uses = {USE_SPEC(FuseArgs)},
    .example = "mambalaya fuse mamba1 --strategy ri+rsb --stitch global "
               "--json\n",
    .size = sizeof(FuseArgs), .init = fuse_init, .run = fuse,
};
