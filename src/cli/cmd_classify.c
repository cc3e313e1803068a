/* cmd_classify.c — `mambalaya classify SPEC`: the pair table. */
#include "cli.h"

#include <stdlib.h>

typedef struct ClassifyArgs {
  SpecOpts spec;
  bool merge;
} ClassifyArgs;

static const Opt classify_opts[] = {
    {"--merge", OPT_FLAG, offsetof(ClassifyArgs, merge), NULL,
     .help = "classify between Einsums after shared-input merging"},
    {"--json", OPT_FLAG, offsetof(ClassifyArgs, spec.json), NULL,
     .help = "print JSON: {\"edges\": [{\"producer\", \"consumer\", "
             "\"tensor\", \"class\", \"shared_ranks\", ...}]}"},
};
static const OptTable classify_table = OPT_TABLE(classify_opts);

static int classify(const Parsed *p, void *opts) {
  const ClassifyArgs *o = opts;
  Cascade *c;
  Shape *s;
  int err = load_spec(p->cmd, &o->spec, false, &c, &s);
  if (err)
    return err;
  Pair *pairs = fusion_classify(c, s);
  Nodes *nodes = o->merge ? fusion_merge(c, s) : NULL;
  if (o->spec.json) {
    Inputs in = spec_inputs("classify", &o->spec, c, s);
    emit_json(report_pairs_json(c, s, pairs, nodes), &in);
  } else {
    Buf b = {0};
    report_pairs_text(&b, c, s, pairs, nodes);
    emit(&b);
    buf_free(&b);
  }
  nodes_free(nodes);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  return 0;
}

const Command classify_command = {
    "classify", "classify every producer->consumer pair (RI, RSb, RSp, RD)",
    .about =
        "Classify every producer->consumer pair of the cascade in SPEC as RI\n"
        "(rank-isomorphic), RSb (rank-subsetted: the producer reduces), RSp\n"
        "(rank-supersetted: the consumer broadcasts) or RD (rank-disjoint:\n"
        "both), relative to the intermediate tensor they share (paper\n"
        "SIII-C).\n",
    .opts = &classify_table,
    .uses = {USE_SPEC(ClassifyArgs)},
    .example = "mambalaya classify mamba1 --merge\n",
    .size = sizeof(ClassifyArgs), .run = classify,
};
