/* cmd_diff.c — `mambalaya diff A.json B.json`: what changed between two
 * results. */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mambalaya diff A.json B.json [--tolerance R]\n"
    "\n"
    "Compare two results written with --json (classify, fuse, eval,\n"
    "reproduce, sweep): first what differs in their inputs (spec,\n"
    "architecture and their SHA-256, model, settings, options, tool\n"
    "version), then every figure that changed, by its path, with the\n"
    "relative change of numbers. Records are matched by name (Einsums,\n"
    "components, points), so a reordering is no change.\n"
    "\n"
    "  --tolerance R  numbers within a relative R are the same (default 0:\n"
    "                 exactly)\n"
    "\n"
    "Two results of different commands (eval and fuse), or a file that is\n"
    "not a result, are refused as not comparable.\n"
    "\n"
    "Exit status: 0 no difference, 1 some difference, 2 bad input or\n"
    "results that are not comparable.\n"
    "\n"
    "example:\n"
    "  mambalaya eval mamba1 --json > out/a.json\n"
    "  mambalaya eval mamba1 --arch h100 --json > out/b.json\n"
    "  mambalaya diff out/a.json out/b.json\n";

int cmd_diff(int argc, char **argv) {
  Args a = {.cmd = "mambalaya diff", .argc = argc, .argv = argv, .i = 1};
  const char *files[2] = {NULL, NULL};
  double tol = 0;
  int k;
  while ((k = args_next(&a))) {
    if (k == 2) {
      if (files[1])
        return args_unknown(&a);
      files[files[0] ? 1 : 0] = a.val;
    } else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (args_is(&a, "--tolerance")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      char *end;
      errno = 0;
      tol = strtod(a.val, &end);
      if (errno || end == a.val || *end || !(tol >= 0) || tol >= 1)
        return usage_error(&a, "--tolerance expects a number in [0, 1), "
                               "got '%s'",
                           a.val);
    } else {
      return args_unknown(&a);
    }
  }
  if (!files[1])
    return usage_error(&a, "give two results (see mambalaya diff --help)");
  json_t *xy[2];
  Diag d = {0};
  if (!report_load_results(files, xy, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  json_t *x = xy[0], *y = xy[1];
  char why[256];
  if (!report_comparable(x, y, why, sizeof why)) {
    fprintf(stderr, "mambalaya diff: %s and %s: %s\n", files[0], files[1],
            why);
    json_decref(x);
    json_decref(y);
    return EXIT_INPUT;
  }
  Buf b = {0};
  int n = report_diff(&b, x, y, tol);
  emit(&b);
  buf_free(&b);
  json_decref(x);
  json_decref(y);
  return n > 0 ? 1 : 0;
}
