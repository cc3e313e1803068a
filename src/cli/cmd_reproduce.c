/* cmd_reproduce.c — `mambalaya reproduce`: the paper's whole evaluation. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mambalaya reproduce [--out DIR] [--json] [--spec SPEC] "
    "[--arch ARCH]\n"
    "\n"
    "Run the paper's evaluation (Mamba-1, B=64, prefill at I=2048, decode at\n"
    "I=1, mamba-370m and mamba-2.8b, I = 2^0..2^20, every design) and print\n"
    "every figure of the paper beside ours with the ratio ours/paper. Writes\n"
    "the figures as SVG, every plotted series (figures.csv), the figures\n"
    "beside the paper's (targets.csv) and an index.html showing them all\n"
    "into DIR, creating it if missing; stdout is written only after them.\n"
    "The files land together: a failed or interrupted run leaves DIR as it\n"
    "was.\n"
    "\n"
    "  --out DIR     where the figures go (default: out)\n"
    "  --json        print {\"targets\": {KEY: {\"ours\", \"paper\", ...}}}\n"
    "  --spec SPEC   the cascade (default: the shipped mamba1)\n"
    "  --arch ARCH   the architecture (default: the shipped mambalaya)\n"
    "\n"
    "Example: mambalaya reproduce --out figs --json > figures.json\n";

int cmd_reproduce(int argc, char **argv) {
  Args a = {.cmd = "mambalaya reproduce", .argc = argc, .argv = argv, .i = 1};
  /* NULL: the shipped mamba1 and mambalaya. */
  const char *out = "out", *spec = NULL, *arch_name = NULL;
  bool json = false;
  int k;
  while ((k = args_next(&a)) > 0) {
    if (k == 2)
      return args_unknown(&a);
    if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (args_is(&a, "--json")) {
      json = true;
    } else if (args_is(&a, "--out")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      out = a.val;
    } else if (args_is(&a, "--spec")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      spec = a.val;
    } else if (args_is(&a, "--arch")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      arch_name = a.val;
    } else {
      return args_unknown(&a);
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  Diag d = {0};
  if (!output_dir_check(out, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  Arch *arch = open_arch(arch_name, &d);
  Cascade *c = arch ? open_spec(spec, &d) : NULL;
  if (!c) {
    diag_print(&d, stderr);
    arch_free(arch);
    return EXIT_INPUT;
  }
  Repro *r = repro_run(c, arch, &d);
  OutSet *set = outset_new(out);
  const char *inputs[] = {input_path("specs", spec),
                          input_path("archs", arch_name)};
  for (int i = 0; i < 2; i++)
    if (inputs[i])
      outset_protect(set, inputs[i]);
  int status = 0;
  bool refused = false;
  if (!r) {
    diag_print(&d, stderr);
    status = EXIT_INPUT;
  } else if (!report_figures(r, set, &d) ||
             !outset_commit(set, &refused, &d)) {
    /* Nothing on stdout: the figures are part of what was asked. */
    diag_print(&d, stderr);
    status = refused ? EXIT_INPUT : EXIT_RUN;
  } else {
    Buf b = {0};
    if (json) {
      json_t *j = report_repro_json(r);
      report_json(&b, j);
      json_decref(j);
    } else {
      report_repro_text(&b, r);
      size_t n = strlen(out);
      buf_printf(&b, "figures written to %s%sindex.html\n", out,
                 n > 0 && out[n - 1] == '/' ? "" : "/");
    }
    emit(&b);
    buf_free(&b);
  }
  outset_free(set);
  repro_free(r);
  cascade_free(c);
  arch_free(arch);
  return status;
}
