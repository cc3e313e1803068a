/* cmd_fuse.c — `mambalaya fuse SPEC`: fusion groups under each strategy. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mambalaya fuse SPEC [--strategy S] [--stitch HOW] [--objective O]\n"
    "                           [--model M] [--set NAME=VALUE]... [--json] "
    "[--dot FILE]\n"
    "\n"
    "Merge Einsums that share an input, then stitch the cascade into fusion\n"
    "groups (paper SIII-E, SIV).\n"
    "\n"
    "  --strategy S   unfused, ri, ri+rsb, ri+rsb+rsp, full, or all (default)\n"
    "  --stitch HOW   greedy (default; the paper's walk, pairwise classes),\n"
    "                 alg1 (Algorithm 1 as printed: iteration-space\n"
    "                 intersections), global (exact search)\n"
    "  --objective O  for --stitch global: traffic (default: fewest off-chip\n"
    "                 intermediate elements, then fewest groups) or groups\n"
    "  --model M      model preset for the shape (default: the spec's)\n"
    "  --set NAME=V   override a rank size or parameter (repeatable)\n"
    "  --json         print JSON: {\"strategy\", \"groups\": [[OUT, ...]]};\n"
    "                 with --strategy all, {\"plans\": [...]}\n"
    "  --dot FILE     write the plan as a Graphviz graph, groups as clusters\n"
    "                 (needs one --strategy)\n";

int cmd_fuse(int argc, char **argv) {
  Args a = {.cmd = "mambalaya fuse", .argc = argc, .argv = argv, .i = 1};
  SpecOpts o = {0};
  bool all = true;
  Strategy st = ST_FULL;
  Stitcher how = STITCH_GREEDY;
  Objective obj = OBJ_TRAFFIC;
  const char *dot = NULL;
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2) {
      if (o.spec)
        return args_unknown(&a);
      o.spec = a.val;
    } else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (args_is(&a, "--strategy")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      all = strcmp(a.val, "all") == 0;
      if (!all && !strategy_from_name(a.val, &st))
        return usage_error(&a,
                           "unknown strategy '%s' (expected unfused, ri, "
                           "ri+rsb, ri+rsb+rsp, full or all)",
                           a.val);
    } else if (args_is(&a, "--stitch")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      if (!stitcher_from_name(a.val, &how))
        return usage_error(
            &a, "unknown stitcher '%s' (expected greedy, alg1 or global)",
            a.val);
    } else if (args_is(&a, "--objective")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      if (strcmp(a.val, "traffic") == 0)
        obj = OBJ_TRAFFIC;
      else if (strcmp(a.val, "groups") == 0)
        obj = OBJ_GROUPS;
      else
        return usage_error(
            &a, "unknown objective '%s' (expected traffic or groups)", a.val);
    } else if (args_is(&a, "--dot")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      dot = a.val;
    } else if (spec_opt(&a, &o, &err)) {
      if (err)
        return err;
    } else {
      return args_unknown(&a);
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  if (!o.spec)
    return usage_error(&a, "missing SPEC (see mambalaya fuse --help)");
  if (dot && all)
    return usage_error(&a, "--dot needs a single --strategy");
  const char *inputs[] = {input_path("specs", o.spec)};
  if (dot && (err = check_output(&a, dot, inputs, 1)))
    return err;

  Cascade *c;
  Shape *s;
  if ((err = load_spec(&o, &c, &s)))
    return err;
  Pair *pairs = fusion_classify(c, s);
  Buf out = {0}, dotbuf = {0};
  json_t *plans = json_array();
  int status = 0;
  for (int i = all ? 0 : (int)st; i <= (all ? ST_COUNT - 1 : (int)st); i++) {
    Diag d = {0};
    Plan *p = fusion_plan(c, s, pairs, (Strategy)i, how, obj, &d);
    if (!p) {
      diag_print(&d, stderr);
      status = EXIT_INPUT;
      break;
    }
    if (o.json)
      json_array_append_new(plans, report_plan_json(c, p));
    else
      report_plan_text(&out, c, p);
    if (dot)
      report_plan_dot(&dotbuf, c, pairs, p);
    plan_free(p);
  }
  if (status == 0 && o.json) {
    Inputs in = spec_inputs("fuse", &o, c, s);
    in.strategy = all ? "all" : strategy_name(st);
    in.stitch = stitcher_name(how);
    in.objective = obj == OBJ_TRAFFIC ? "traffic" : "groups";
    if (all) {
      json_t *root = json_object();
      json_object_set_new(root, "spec", json_string(c->path));
      json_object_set_new(root, "plans", json_incref(plans));
      report_json_with_inputs(&out, root, &in);
      json_decref(root);
    } else {
      report_json_with_inputs(&out, json_array_get(plans, 0), &in);
    }
  }
  if (status == 0 && dot && !write_file_atomic(dot, dotbuf.s, dotbuf.len)) {
    fprintf(stderr, "mambalaya fuse: cannot write %s: %s\n", dot,
            strerror(errno));
    status = EXIT_RUN;
  }
  if (status == 0)
    emit(&out);
  json_decref(plans);
  buf_free(&out);
  buf_free(&dotbuf);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  return status;
}
