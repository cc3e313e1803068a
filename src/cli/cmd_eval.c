/* cmd_eval.c — `mambalaya eval SPEC`: price one configuration. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char usage_head[] =
    "usage: mambalaya eval SPEC [--arch ARCH] [--model M] [--set NAME=V]...\n"
    "                           [--design D | --strategy S | --plan FILE]\n"
    "                           [--phase P] [model options] [--json | --csv]\n"
    "\n"
    "Price a fusion plan of the cascade in SPEC on an accelerator: each\n"
    "Einsum's unit, operations, mapping, DRAM traffic and latency, each\n"
    "group's tile, what it holds and what it spilled, and the layer's\n"
    "totals and energy (paper SV-VI; docs/model.md). SPEC and ARCH are\n"
    "paths or shipped names (mamba1, mamba2, transformer; mambalaya, h100).\n"
    "\n"
    "  --arch ARCH     architecture (default: mambalaya)\n"
    "  --design D      unfused, ideal, marca, geens, flat, ri, ri+rsb,\n"
    "                  ri+rsb+rsp, full (default: full)\n"
    "  --strategy S    the same as --design for the four strategies\n"
    "  --plan FILE     price the plan in FILE, as `fuse --json` writes it\n"
    "                  (priced with its strategy's rules)\n"
    "  --phase P       prefill (the spec's sizes) or decode (the sequence\n"
    "                  rank, `sequence:` in the spec, set to 1)\n"
    "  --csv           print one row per Einsum as CSV (a header line, then\n"
    "                  the rows in execution order)\n";

static const char usage_tail[] =
    "  --model, --set  as for classify\n"
    "  --json          print JSON, with the inputs that produced it (spec,\n"
    "                  architecture and their SHA-256, model, settings,\n"
    "                  options, tool version) and the area and energy of\n"
    "                  every component\n"
    "\n"
    "example:\n"
    "  mambalaya fuse mamba2 --strategy ri+rsb+rsp --stitch global --json "
    "> p.json\n"
    "  mambalaya eval mamba2 --plan p.json --phase decode --arch h100\n";

int cmd_eval(int argc, char **argv) {
  Args a = {.cmd = "mambalaya eval", .argc = argc, .argv = argv, .i = 1};
  SpecOpts o = {0};
  ModelOverrides mf = model_no_overrides();
  const char *arch_name = NULL, *plan_file = NULL; /* the shipped mambalaya */
  Design design = DES_FULL;
  bool design_given = false, csv = false;
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2) {
      if (o.spec)
        return args_unknown(&a);
      o.spec = a.val;
    } else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage_head, stdout);
      fputs(model_opts_help, stdout);
      fputs(usage_tail, stdout);
      return 0;
    } else if (args_is(&a, "--arch")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      arch_name = a.val;
    } else if (args_is(&a, "--csv")) {
      csv = true;
    } else if (args_is(&a, "--plan")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      plan_file = a.val;
    } else if (args_is(&a, "--design") || args_is(&a, "--strategy")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      if (!design_from_name(a.val, &design))
        return usage_error(&a,
                           "unknown design '%s' (expected unfused, ideal, "
                           "marca, geens, ri, ri+rsb, ri+rsb+rsp or full)",
                           a.val);
      design_given = true;
    } else if (args_is(&a, "--phase")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      if (strcmp(a.val, "prefill") && strcmp(a.val, "decode"))
        return usage_error(&a, "--phase expects prefill or decode, got '%s'",
                           a.val);
      o.decode = strcmp(a.val, "decode") == 0;
    } else if (model_opt(&a, &mf, &err) || spec_opt(&a, &o, &err)) {
      if (err)
        return err;
    } else {
      return args_unknown(&a);
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  if (!o.spec)
    return usage_error(&a, "missing SPEC (see mambalaya eval --help)");
  if (o.decode && mf.state_io < 0)
    mf.state_io = 1; /* a decode step reads and writes its state */
  if (plan_file && design_given)
    return usage_error(&a, "--plan gives the plan: drop --design/--strategy");
  if (csv && o.json)
    return usage_error(&a, "--csv and --json: pick one");
  Diag d = {0};
  Arch *arch = open_arch(arch_name, &d);
  if (!arch) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  Cascade *c;
  Shape *s;
  if ((err = load_spec(&o, &c, &s))) {
    arch_free(arch);
    return err;
  }
  int status = 0;
  Pair *pairs = NULL;
  Eval *ev = NULL;
  if (!s->complete) {
    fprintf(stderr, "mambalaya eval: %s has ranks without sizes: give a "
                    "shape section or --set RANK=N\n",
            o.spec);
    status = EXIT_INPUT;
    goto done;
  }
  pairs = fusion_classify(c, s);
  if (plan_file) {
    Plan *p = load_plan_file(plan_file, c, s, &d);
    if (!p) {
      diag_print(&d, stderr);
      status = EXIT_INPUT;
      goto done;
    }
    design = design_of_strategy(p->strategy);
    ModelOpts mo = model_opts_with(&mf, design);
    ev = model_eval_plan(c, s, arch, pairs, design, p, &mo, &d);
  } else {
    ModelOpts mo = model_opts_with(&mf, design);
    ev = model_eval(c, s, arch, pairs, design, &mo, &d);
  }
  if (!ev) {
    diag_print(&d, stderr);
    status = EXIT_INPUT;
  } else {
    Buf b = {0};
    if (o.json) {
      json_t *j = report_eval_json(c, arch, ev);
      Inputs in = spec_inputs("eval", &o, c, s);
      in.arch = arch_name ? arch_name : "mambalaya";
      in.plan = plan_file;
      in.design = design_name(design);
      in.phase = o.decode ? "decode" : "prefill";
      in.opts = &ev->opts;
      report_json_with_inputs(&b, j, &in);
      json_decref(j);
    } else if (csv) {
      report_eval_csv(&b, c, arch, ev);
    } else {
      report_eval_text(&b, c, arch, ev);
    }
    emit(&b);
    buf_free(&b);
  }
done:
  eval_free(ev);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(arch);
  return status;
}
