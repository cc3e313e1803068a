/* cmd_reproduce.c — `mambalaya reproduce`: the paper's whole evaluation,
 * for the paper's setup or any other. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mambalaya reproduce [--out DIR] [--format LIST] [--json]\n"
    "                           [--spec SPEC] [--model M] [--set NAME=V]...\n"
    "                           [--arch ARCH] [model options]\n"
    "\n"
    "Run the paper's evaluation: every design (best unfused, ideal, the\n"
    "MARCA-like and Geens-like accelerators, the four fusion strategies)\n"
    "priced for prefill and decode, end to end in three scenarios, and over\n"
    "I = 2^0..2^20; print a table of the designs and, where the setup is\n"
    "the paper's, every figure of the paper beside ours with the ratio\n"
    "ours/paper. Writes every figure (in each format of --format), every\n"
    "plotted series (figures.csv), the figures beside the paper's\n"
    "(targets.csv) and an index.html showing them all into DIR, creating\n"
    "it if missing; stdout is written only after them. The files land\n"
    "together: a failed or interrupted run leaves DIR as it was.\n"
    "\n"
    "The paper's setup is the default: the shipped mamba1 cascade, models\n"
    "mamba-370m (and mamba-2.8b for a second sweep), the shipped mambalaya\n"
    "architecture, B=64, prefill at I=2048. Any other spec, model,\n"
    "architecture or setting runs the same evaluation and draws the same\n"
    "figures for it, labelled with it; the paper's values are shown only\n"
    "for what the paper evaluated (an edited copy of a shipped file is not\n"
    "the paper's).\n"
    "\n"
    "  --out DIR      where the figures go (default: out)\n"
    "  --format LIST  the figures' formats, of svg, pdf, png (default:\n"
    "                 svg,pdf: SVG for the browser, as index.html shows it,\n"
    "                 PDF for papers; add png for slides: it takes about\n"
    "                 four times as long as the rest together)\n"
    "  --json         print {\"setup\", \"targets\": {KEY: {\"ours\",\n"
    "                 \"paper\", ...}}, \"designs\"}\n"
    "  --spec SPEC    the cascade (default: the shipped mamba1)\n"
    "  --model M      the model preset (default: the spec's own)\n"
    "  --set NAME=V   B: the batch (default 64); I: the prefill's tokens\n"
    "                 (default 2048); any other rank or parameter as given\n"
    "  --arch ARCH    the architecture (default: the shipped mambalaya)\n"
    "\n"
    "Model options (as for eval; every design gets them over its defaults;\n"
    "the figures choose sequential or pipelined, achieved or ideal):\n"
    "example: mambalaya reproduce --spec mamba2 --model mamba2-370m "
    "--out out/mamba2\n"
    "         mambalaya reproduce --reserve-share 0.8 --out out/share80\n";

/* The shipped file (under DIR, "specs" or "archs") that NAME denotes:
 * the name of one ("mamba1"), or a path to a byte-for-byte copy of one.
 * NULL for anything else. */
static const char *shipped_identity(const char *dir, const char *name) {
  if (!name) /* the default: the paper's */
    return strcmp(dir, "specs") == 0 ? "specs/mamba1.yaml"
                                     : "archs/mambalaya.yaml";
  size_t len = 0;
  char *text = read_file(name, &len);
  size_t n = strlen(dir);
  const char *found = NULL;
  for (const EmbeddedFile *f = embedded_files; f->name && !found; f++) {
    if (strncmp(f->name, dir, n) != 0 || f->name[n] != '/')
      continue;
    if (text) {
      if (f->len == len && memcmp(f->data, text, len) == 0)
        found = f->name;
    } else {
      /* Not a file: open_spec and open_arch take it as a shipped name. */
      const char *base = f->name + n + 1, *dot = strrchr(base, '.');
      size_t stem = dot ? (size_t)(dot - base) : strlen(base);
      if (strcmp(base, name) == 0 ||
          (strlen(name) == stem && strncmp(base, name, stem) == 0))
        found = f->name;
    }
  }
  free(text);
  return found;
}

int cmd_reproduce(int argc, char **argv) {
  Args a = {.cmd = "mambalaya reproduce", .argc = argc, .argv = argv, .i = 1};
  SpecOpts o = {.spec = "mamba1"};
  const char *out = "out", *arch_name = NULL; /* the shipped mambalaya */
  unsigned formats = 1u << FMT_SVG | 1u << FMT_PDF;
  ModelOverrides mopts = model_no_overrides();
  int k, err;
  while ((k = args_next(&a)) > 0) {
    if (k == 2)
      return args_unknown(&a);
    if (args_is(&a, "--help") || args_is(&a, "-h")) {
      const char *split = strstr(usage, "example:");
      fwrite(usage, 1, (size_t)(split - usage), stdout);
      fputs(model_opts_help, stdout);
      fputs("\n", stdout);
      fputs(split, stdout);
      return 0;
    } else if (args_is(&a, "--out")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      out = a.val;
    } else if (args_is(&a, "--format")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      formats = parse_formats(a.val);
      if (!formats)
        return usage_error(&a,
                           "--format expects a list of svg, pdf and png, "
                           "got '%s'",
                           a.val);
    } else if (args_is(&a, "--spec")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      o.spec = a.val;
    } else if (args_is(&a, "--arch")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      arch_name = a.val;
    } else if (args_is(&a, "--pipelined") || args_is(&a, "--ideal")) {
      return usage_error(&a, "%s: reproduce prices every design both "
                             "sequential and pipelined, achieved and ideal",
                         a.opt);
    } else if (model_opt(&a, &mopts, &err) || spec_opt(&a, &o, &err)) {
      if (err)
        return err;
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
  if (!arch) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  /* load_spec checks the model and the settings against the spec, and
   * that its shape binds; the evaluation binds its own points. */
  Cascade *c;
  Shape *s;
  if ((err = load_spec(&o, &c, &s))) {
    arch_free(arch);
    return err;
  }
  shape_free(s);
  ReproSetup setup = {.spec = c,
                      .spec_shipped = shipped_identity("specs", o.spec),
                      .arch = arch,
                      .arch_shipped = shipped_identity("archs", arch_name),
                      .model = o.model,
                      .nsets = o.nsets,
                      .sets = o.sets,
                      .opts = mopts};
  Repro *r = repro_run(&setup, &d);
  OutSet *set = outset_new(out);
  const char *inputs[] = {input_path("specs", o.spec),
                          input_path("archs", arch_name)};
  for (int i = 0; i < 2; i++)
    if (inputs[i])
      outset_protect(set, inputs[i]);
  int status = 0;
  bool refused = false;
  if (!r) {
    diag_print(&d, stderr);
    status = EXIT_INPUT;
  } else if (!report_figures(r, set, formats, &d) ||
             !outset_commit(set, &refused, &d)) {
    /* Nothing on stdout: the figures are part of what was asked. */
    diag_print(&d, stderr);
    status = refused ? EXIT_INPUT : EXIT_RUN;
  } else {
    Buf b = {0};
    if (o.json) {
      json_t *j = report_repro_json(r);
      Inputs in = {.command = "reproduce",
                   .spec = o.spec,
                   .model = o.model ? o.model : c->model,
                   .nsets = o.nsets,
                   .sets = o.sets,
                   .arch = arch_name ? arch_name : "mambalaya",
                   .overrides = &mopts};
      report_json_with_inputs(&b, j, &in);
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
