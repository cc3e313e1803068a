/* cmd_import.c — `mambalaya import FORMAT FILE`: a peer's workload as a
 * spec of ours, to read and edit (docs/compat.md). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mambalaya import accelforge|timeloop FILE [--set NAME=VALUE]... "
    "[--out SPEC] [--rendered]\n"
    "\n"
    "Write the spec that FILE, an AccelForge workload (a Jinja template,\n"
    "rendered by python3-jinja2) or a Timeloop problem, translates to: the\n"
    "cascade classify, fuse, eval, exec and sweep load when given FILE.\n"
    "Assumptions and what is read but not modelled are comment lines.\n"
    "\n"
    "  --set NAME=VALUE  a template variable (a number or a word:\n"
    "                    --set ATTENTION_TYPE=grouped_query), repeatable\n"
    "  --out SPEC        write the spec to SPEC (default: standard output)\n"
    "  --rendered        print FILE as its templating renders it (what the\n"
    "                    line numbers of its errors refer to)\n"
    "\n"
    "Example: mambalaya import accelforge llama3_8B.yaml --set BATCH_SIZE=1 "
    "--set N_NEW_TOKENS=2048 --set DECODE=0\n";

typedef struct ImportOpts {
  const char *format, *file, *out;
  bool rendered;
  const char **vars; /* NAME=VALUE, as given */
  int nvars, vars_cap;
  SpecOpts sets; /* the numeric ones, which also bind scalars */
} ImportOpts;

static int parse_args(int argc, char **argv, ImportOpts *o) {
  Args a = {.cmd = "mambalaya import", .argc = argc, .argv = argv, .i = 1,
            .usage = usage};
  int k;
  while ((k = args_next(&a)) > 0) {
    if (k == 2 && !o->format)
      o->format = a.val;
    else if (k == 2 && !o->file)
      o->file = a.val;
    else if (k == 2)
      return args_unknown(&a);
    else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage, stdout);
      return -1; /* done: exit 0 */
    } else if (args_is(&a, "--rendered"))
      o->rendered = true;
    else if (args_is(&a, "--out")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      o->out = a.val;
    } else if (args_is(&a, "--set")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      const char *eq = strchr(a.val, '=');
      if (!eq || eq == a.val)
        return usage_error(&a, "--set expects NAME=VALUE, got '%s'", a.val);
      VEC_PUSH(o->vars, o->nvars, o->vars_cap, a.val);
      char *end;
      errno = 0;
      double v = strtod(eq + 1, &end);
      if (!*end && end != eq + 1 && !errno)
        spec_set(&o->sets, a.val, (size_t)(eq - a.val), v);
    } else {
      return args_unknown(&a);
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  if (!o->format || !o->file)
    return usage_error(&a, "expected a format and a file (see mambalaya "
                           "import --help)");
  if (strcmp(o->format, "accelforge") && strcmp(o->format, "timeloop"))
    return usage_error(&a, "unknown format '%s' (expected accelforge or "
                           "timeloop)", o->format);
  if (o->rendered && strcmp(o->format, "accelforge"))
    return usage_error(&a, "--rendered is for AccelForge templates");
  if (o->nvars && strcmp(o->format, "accelforge"))
    return usage_error(&a, "--set is for AccelForge templates (a Timeloop "
                           "problem's instance gives its sizes)");
  if (o->out) {
    const char *in[] = {o->file};
    return check_output(&a, o->out, in, 1);
  }
  return 0;
}

static int run(const ImportOpts *o) {
  Diag d = {0};
  size_t len;
  char *text = read_input(o->file, INPUT_TEXT_MAX, &len, &d);
  SpecFormat want = strcmp(o->format, "accelforge") ? SPEC_TIMELOOP
                                                    : SPEC_ACCELFORGE;
  SpecLoad l = {.sets = o->sets.sets, .nsets = o->sets.nsets,
                .vars = o->vars, .nvars = o->nvars};
  Buf out = {0};
  bool ok = text != NULL;
  if (ok && spec_format(text, len) != want) {
    diag_error(&d, o->file, (Loc){1, 1}, "not %s file: it has no '%s' "
               "section", want == SPEC_TIMELOOP ? "a Timeloop problem"
                                                : "an AccelForge workload",
               want == SPEC_TIMELOOP ? "problem" : "workload");
    ok = false;
  }
  if (ok)
    ok = o->rendered ? spec_render_accelforge(o->file, &l, &out, &d)
                     : spec_translate(want, o->file, text, len, &l, &out, &d);
  free(text);
  int status = 0;
  if (!ok) {
    diag_print(&d, stderr);
    status = EXIT_INPUT;
  } else if (o->out && !write_file_atomic(o->out, out.s, out.len)) {
    fprintf(stderr, "mambalaya import: cannot write %s: %s\n", o->out,
            strerror(errno));
    status = EXIT_RUN;
  } else if (!o->out) {
    emit(&out);
  }
  buf_free(&out);
  return status;
}

int cmd_import(int argc, char **argv) {
  ImportOpts o = {0};
  int err = parse_args(argc, argv, &o);
  if (!err)
    err = run(&o);
  free(o.vars);
  spec_opts_free(&o.sets);
  return err < 0 ? 0 : err;
}
