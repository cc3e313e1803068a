/* cmd_classify.c — `mambalaya classify SPEC`: the pair table. */
#include "cli.h"

#include <stdlib.h>

static const char usage[] =
    "usage: mambalaya classify SPEC [--merge] [--model M] [--set NAME=VALUE]... "
    "[--json]\n"
    "\n"
    "Classify every producer->consumer pair of the cascade in SPEC as RI\n"
    "(rank-isomorphic), RSb (rank-subsetted: the producer reduces), RSp\n"
    "(rank-supersetted: the consumer broadcasts) or RD (rank-disjoint: both),\n"
    "relative to the intermediate tensor they share (paper SIII-C).\n"
    "\n"
    "  --merge          classify between Einsums after shared-input merging\n"
    "  --model M        model preset for the shape (default: the spec's)\n"
    "  --set NAME=V     override a rank size or parameter (repeatable)\n"
    "  --json           print JSON: {\"edges\": [{\"producer\", \"consumer\",\n"
    "                   \"tensor\", \"class\", \"shared_ranks\", ...}]}\n"
    "\n"
    "Example: mambalaya classify mamba1 --merge\n";

int cmd_classify(int argc, char **argv) {
  Args a = {.cmd = "mambalaya classify", .argc = argc, .argv = argv, .i = 1};
  SpecOpts o = {0};
  bool merge = false;
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2) {
      if (o.spec)
        return args_unknown(&a);
      o.spec = a.val;
    } else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (args_is(&a, "--merge")) {
      merge = true;
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
    return usage_error(&a, "missing SPEC (see mambalaya classify --help)");
  Cascade *c;
  Shape *s;
  if ((err = load_spec(&o, &c, &s)))
    return err;
  Pair *pairs = fusion_classify(c, s);
  Nodes *nodes = merge ? fusion_merge(c, s) : NULL;
  Buf b = {0};
  if (o.json) {
    json_t *j = report_pairs_json(c, s, pairs, nodes);
    Inputs in = spec_inputs("classify", &o, c, s);
    report_json_with_inputs(&b, j, &in);
    json_decref(j);
  } else {
    report_pairs_text(&b, c, s, pairs, nodes);
  }
  emit(&b);
  buf_free(&b);
  nodes_free(nodes);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  return 0;
}
