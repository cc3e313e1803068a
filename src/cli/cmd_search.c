/* cmd_search.c — `mambalaya search SPEC`: the best schedule, its bound and
 * its gap (src/search/search.h, docs/search.md). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage_head[] =
    "usage: mambalaya search SPEC [--arch ARCH] [--model M] [--set NAME=V]...\n"
    "                             [--objective O] [--phase P] [--plan-out FILE]\n"
    "                             [model options] [--json]\n"
    "\n"
    "Find the schedule of the cascade in SPEC that minimizes the objective on\n"
    "an accelerator: every partition of the merged cascade into contiguous\n"
    "groups that can run, each group priced by the model (a dynamic program,\n"
    "exact over that space), and every named design's plan under every\n"
    "stitcher beside it. Prints the space, the plan found, its cost, the\n"
    "lower bound (the ideal design) and the gap, then the schedule as `eval`\n"
    "prints it (docs/search.md).\n"
    "\n"
    "  --arch ARCH       architecture (default: mambalaya)\n"
    "  --objective O     latency (default), energy, edp or traffic\n"
    "  --phase P         prefill (the spec's sizes) or decode\n"
    "  --plan-out FILE   write the plan found, as `fuse --json` writes one:\n"
    "                    `eval --plan FILE` and `exec --plan FILE` take it\n";

static const char usage_tail[] =
    "  --model, --set    as for classify\n"
    "  --json            print JSON: the objective, found, lower_bound, gap,\n"
    "                    the space, the plan, the schedule and the bound as\n"
    "                    eval --json prints them, and the inputs\n"
    "\n"
    "example:\n"
    "  mambalaya search mamba1 --model mamba-370m --arch h100 "
    "--plan-out best.json\n"
    "  mambalaya eval mamba1 --model mamba-370m --arch h100 --plan best.json\n";

typedef struct SearchOpts {
  SpecOpts spec;
  ModelOverrides model;
  const char *arch, *plan_out;
  SearchObjective objective;
} SearchOpts;

/* One option of `search` (or of the shared spec and model sets). */
static int search_opt(Args *a, SearchOpts *o) {
  int err = 0;
  if (args_is(a, "--arch") || args_is(a, "--plan-out")) {
    const char **to = args_is(a, "--arch") ? &o->arch : &o->plan_out;
    if (!args_value(a))
      return EXIT_INPUT;
    *to = a->val;
  } else if (args_is(a, "--objective")) {
    if (!args_value(a))
      return EXIT_INPUT;
    if (!search_objective_from_name(a->val, &o->objective))
      return usage_error(a, "--objective expects latency, energy, edp or "
                            "traffic, got '%s'",
                         a->val);
  } else if (args_is(a, "--phase")) {
    if (!args_value(a))
      return EXIT_INPUT;
    if (strcmp(a->val, "prefill") && strcmp(a->val, "decode"))
      return usage_error(a, "--phase expects prefill or decode, got '%s'",
                         a->val);
    o->spec.decode = strcmp(a->val, "decode") == 0;
  } else if (!model_opt(a, &o->model, &err) && !spec_opt(a, &o->spec, &err)) {
    return args_unknown(a);
  }
  return err;
}

/* Parse the command line into O: 0, -1 after --help, or an exit status. */
static int parse(int argc, char **argv, SearchOpts *o) {
  Args a = {.cmd = "mambalaya search", .argc = argc, .argv = argv, .i = 1};
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2 && !o->spec.spec) {
      o->spec.spec = a.val;
    } else if (k == 2) {
      return args_unknown(&a);
    } else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage_head, stdout);
      fputs(model_opts_help, stdout);
      fputs(usage_tail, stdout);
      return -1;
    } else if ((err = search_opt(&a, o))) {
      return err;
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  if (!o->spec.spec)
    return usage_error(&a, "missing SPEC (see mambalaya search --help)");
  const char *inputs[] = {input_path("specs", o->spec.spec)};
  if (o->plan_out && (err = check_output(&a, o->plan_out, inputs, 1)))
    return err;
  if (o->spec.decode && o->model.state_io < 0)
    o->model.state_io = 1; /* a decode step reads and writes its state */
  return 0;
}

/* The result as text or JSON into B, and the plan into --plan-out. */
static int report(const SearchOpts *o, const Cascade *c, const Shape *s,
                  const Arch *arch, const SearchResult *r) {
  Buf b = {0};
  int status = 0;
  if (o->spec.json) {
    json_t *j = report_search_json(c, arch, r, o->objective);
    Inputs in = spec_inputs("search", &o->spec, c, s);
    in.arch = o->arch ? o->arch : "mambalaya";
    in.phase = o->spec.decode ? "decode" : "prefill";
    in.objective = search_objective_name(o->objective);
    in.opts = &r->best->opts;
    report_json_with_inputs(&b, j, &in);
    json_decref(j);
  } else {
    report_search_text(&b, c, arch, r, o->objective);
  }
  if (o->plan_out) {
    json_t *p = report_plan_json(c, r->best->plan);
    char *text = json_dumps(p, JSON_INDENT(2));
    json_decref(p);
    if (!write_file_atomic(o->plan_out, text, strlen(text))) {
      fprintf(stderr, "mambalaya search: cannot write %s: %s\n", o->plan_out,
              strerror(errno));
      status = EXIT_RUN;
    }
    free(text);
  }
  if (status == 0)
    emit(&b);
  buf_free(&b);
  return status;
}

static int search_loaded(const SearchOpts *o, const Cascade *c,
                         const Shape *s, const Arch *arch) {
  if (!s->complete) {
    fprintf(stderr, "mambalaya search: %s has ranks without sizes: give a "
                    "shape section or --set RANK=N\n",
            o->spec.spec);
    return EXIT_INPUT;
  }
  Diag d = {0};
  Pair *pairs = fusion_classify(c, s);
  MapMemo *memo = map_memo_new(false);
  SearchResult *r =
      search_best(c, s, arch, pairs, &o->model, o->objective, memo, &d);
  int status = r ? report(o, c, s, arch, r) : EXIT_INPUT;
  if (!r)
    diag_print(&d, stderr);
  search_free(r);
  map_memo_free(memo);
  free(pairs);
  return status;
}

int cmd_search(int argc, char **argv) {
  SearchOpts o = {.model = model_no_overrides(), .objective = SO_LATENCY};
  int err = parse(argc, argv, &o);
  if (err)
    return err < 0 ? 0 : err;
  Diag d = {0};
  Arch *arch = open_arch(o.arch, &d);
  if (!arch) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  Cascade *c;
  Shape *s;
  if ((err = load_spec(&o.spec, &c, &s))) {
    arch_free(arch);
    return err;
  }
  int status = search_loaded(&o, c, s, arch);
  shape_free(s);
  cascade_free(c);
  arch_free(arch);
  return status;
}
