/* cmd_diff.c — `mambalaya diff A.json B.json`: what changed between two
 * results. */
#include "cli.h"

#include <stdlib.h>

typedef struct DiffArgs {
  const char *files[2];
  double tolerance;
} DiffArgs;

static const Opt diff_opts[] = {
    {"A.json", OPT_PATH, offsetof(DiffArgs, files[0]), NULL,
     .flags = OPT_POSITIONAL},
    {"B.json", OPT_PATH, offsetof(DiffArgs, files[1]), NULL,
     .flags = OPT_POSITIONAL},
    {"--tolerance", OPT_DOUBLE, offsetof(DiffArgs, tolerance), "R",
     .help = "numbers within a relative R are the same (default 0: exactly)",
     .lo = 0, .hi = 1, .flags = OPT_HI_OPEN},
};
static const OptTable diff_table = OPT_TABLE(diff_opts);

static int diff(const Parsed *p, void *opts) {
  const DiffArgs *o = opts;
  json_t *xy[2];
  Diag d = {0};
  if (!report_load_results(o->files, xy, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  json_t *x = xy[0], *y = xy[1];
  char why[256];
  if (!report_comparable(x, y, why, sizeof why)) {
    fprintf(stderr, "%s: %s and %s: %s\n", p->cmd, o->files[0], o->files[1],
            why);
    json_decref(x);
    json_decref(y);
    return EXIT_INPUT;
  }
  Buf b = {0};
  int n = report_diff(&b, x, y, o->tolerance);
  emit(&b);
  buf_free(&b);
  json_decref(x);
  json_decref(y);
  return n > 0 ? 1 : 0;
}

const Command diff_command = {
    "diff", "what changed between two --json results",
    .about =
        "Compare two results written with --json (classify, fuse, eval,\n"
        "reproduce, sweep): first what differs in their inputs (spec,\n"
        "architecture and their SHA-256, model, settings, options, tool\n"
        "version), then every figure that changed, by its path, with the\n"
        "relative change of numbers. Records are matched by name (Einsums,\n"
        "components, points), so a reordering is no change.\n",
    .opts = &diff_table,
    .notes = "Two results of different commands (eval and fuse), or a file\n"
             "that is not a result, are refused as not comparable.\n"
             "Exit status: 0 no difference, 1 some difference, 2 bad input\n"
             "or results that are not comparable.\n",
    .example = "mambalaya eval mamba1 --json > out/a.json\n"
               "mambalaya eval mamba1 --arch h100 --json > out/b.json\n"
               "mambalaya diff out/a.json out/b.json\n",
    .size = sizeof(DiffArgs), .run = diff,
};
