/* cmd_eval.c — `mambalaya eval SPEC`: price one configuration. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mambalaya eval SPEC [--arch ARCH] [--model M] [--set NAME=V]...\n"
    "                           [--design D | --strategy S] [--phase P]\n"
    "                           [--pipelined] [--ideal] [--state-io] [--json]\n"
    "\n"
    "Price a fusion plan of the cascade in SPEC on an accelerator: each\n"
    "Einsum's unit, operations, mapping, DRAM traffic and latency, each\n"
    "group's latency, and the layer's totals and energy (paper SV-VI).\n"
    "SPEC and ARCH are paths or shipped names (mamba1, mamba2; mambalaya,\n"
    "h100).\n"
    "\n"
    "  --arch ARCH     architecture (default: mambalaya)\n"
    "  --design D      unfused, ideal, marca, geens, ri, ri+rsb, ri+rsb+rsp,\n"
    "                  full (default: full)\n"
    "  --strategy S    the same as --design for the four strategies\n"
    "  --phase P       prefill (the spec's I) or decode (I = 1)\n"
    "  --pipelined     compose a group's Einsums by parallel pipelining\n"
    "  --ideal         algorithmic-minimum traffic instead of the mapping\n"
    "                  search's\n"
    "  --state-io      count the decode state (H0, the convolution history)\n"
    "  --no-overlap    an Einsum's compute and DRAM transfers do not overlap\n"
    "  --model, --set, --json   as for classify\n";

int cmd_eval(int argc, char **argv) {
  Args a = {.cmd = "mambalaya eval", .argc = argc, .argv = argv, .i = 1};
  SpecOpts o = {0};
  const char *arch_name = NULL; /* the shipped mambalaya */
  Design design = DES_FULL;
  bool pipelined = false, ideal = false, state_io = false, decode = false;
  bool no_overlap = false;
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2) {
      if (o.spec)
        return args_unknown(&a);
      o.spec = a.val;
    } else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (args_is(&a, "--arch")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      arch_name = a.val;
    } else if (args_is(&a, "--design") || args_is(&a, "--strategy")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      if (!design_from_name(a.val, &design))
        return usage_error(&a,
                           "unknown design '%s' (expected unfused, ideal, "
                           "marca, geens, ri, ri+rsb, ri+rsb+rsp or full)",
                           a.val);
    } else if (args_is(&a, "--phase")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      if (strcmp(a.val, "prefill") && strcmp(a.val, "decode"))
        return usage_error(&a, "--phase expects prefill or decode, got '%s'",
                           a.val);
      decode = strcmp(a.val, "decode") == 0;
    } else if (args_is(&a, "--pipelined")) {
      pipelined = true;
    } else if (args_is(&a, "--ideal")) {
      ideal = true;
    } else if (args_is(&a, "--state-io")) {
      state_io = true;
    } else if (args_is(&a, "--no-overlap")) {
      no_overlap = true;
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
    return usage_error(&a, "missing SPEC (see mambalaya eval --help)");
  if (decode && !spec_set(&o, "I", 1, 1))
    return usage_error(&a, "--phase decode sets I=1: give at most %d --set "
                           "options with it",
                       MAX_SETS - 1);
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
  if (!s->complete) {
    fprintf(stderr, "mambalaya eval: %s has ranks without sizes: give a "
                    "shape section or --set RANK=N\n",
            o.spec);
    shape_free(s);
    cascade_free(c);
    arch_free(arch);
    return EXIT_INPUT;
  }
  Pair *pairs = fusion_classify(c, s);
  ModelOpts mo = model_default_opts(design);
  mo.compose = pipelined ? COMPOSE_PIPELINED : COMPOSE_SEQUENTIAL;
  if (ideal)
    mo.accounting = ACCOUNT_IDEAL;
  mo.state_io = state_io;
  mo.no_overlap = no_overlap;
  Eval *ev = model_eval(c, s, arch, pairs, design, &mo, &d);
  int status = 0;
  if (!ev) {
    diag_print(&d, stderr);
    status = EXIT_INPUT;
  } else {
    Buf b = {0};
    if (o.json) {
      json_t *j = report_eval_json(c, arch, ev);
      report_json(&b, j);
      json_decref(j);
    } else {
      report_eval_text(&b, c, arch, ev);
    }
    emit(&b);
    buf_free(&b);
  }
  eval_free(ev);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(arch);
  return status;
}
