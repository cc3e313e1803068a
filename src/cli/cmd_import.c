/* cmd_import.c — `mambalaya import FORMAT FILE`: a peer's workload as a
 * spec of ours, or an AccelForge architecture as an architecture of ours,
 * to read and edit (docs/compat.md). */
#include "cli.h"

#include "../workload/accelforge_arch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum {
  IMPORT_ACCELFORGE,
  IMPORT_TIMELOOP,
  IMPORT_ACCELFORGE_ARCH,
  IMPORT_FORMATS
};
static const char *const format_names[] = {"accelforge", "timeloop",
                                           "accelforge-arch"};
_Static_assert(sizeof format_names / sizeof format_names[0] ==
                   IMPORT_FORMATS,
               "one name per format");
static const char *format_at(int i) { return format_names[i]; }
static const OptChoices format_choices = {"format", format_at, IMPORT_FORMATS,
                                          NULL, false};

typedef struct ImportOpts {
  int format;
  const char *file, *out;
  bool rendered;
  const char **vars; /* NAME=VALUE, as given */
  int nvars, vars_cap;
  SpecOpts sets; /* the numeric ones, which also bind scalars */
} ImportOpts;

/* --set NAME=VALUE: a template variable, a number or a word; a number also
 * binds the scalar of that name. */
static int parse_var(const char *cmd, const char *val, void *field) {
  ImportOpts *o = field;
  const char *eq = strchr(val, '=');
  if (!eq || eq == val)
    return usage_error(cmd, "--set expects NAME=VALUE, got '%s'", val);
  char *end;
  errno = 0;
  double v = strtod(eq + 1, &end);
  bool number = !*end && end != eq + 1;
  /* The command line's rule for numbers (no nan, inf, hex, overflow). */
  if (number && !parse_decimal(eq + 1, &v))
    return usage_error(cmd, "--set %s: a number must be a finite plain "
                            "decimal (16, 2.5, 1e3)", val);
  VEC_PUSH(o->vars, o->nvars, o->vars_cap, val);
  if (number)
    spec_set(&o->sets, val, (size_t)(eq - val), v);
  return 0;
}

static void import_fini(void *base) {
  ImportOpts *o = base;
  free(o->vars);
  free(o->sets.sets);
  arena_free(&o->sets.names);
}

static const Opt import_opts[] = {
    {"FORMAT", OPT_ENUM, offsetof(ImportOpts, format), NULL,
     .flags = OPT_POSITIONAL, .choices = &format_choices},
    {"FILE", OPT_PATH, offsetof(ImportOpts, file), NULL,
     .flags = OPT_POSITIONAL},
    {"--set", OPT_CUSTOM, 0, "NAME=VALUE",
     .help = "a template variable (a number or a word: --set "
             "ATTENTION_TYPE=grouped_query), repeatable",
     .flags = OPT_REPEAT, .parse = parse_var},
    {"--out", OPT_PATH, offsetof(ImportOpts, out), "SPEC",
     .help = "write the spec to SPEC (default: standard output)"},
    {"--rendered", OPT_FLAG, offsetof(ImportOpts, rendered), NULL,
     .help = "print FILE as its templating renders it (what the line numbers "
             "of its errors refer to)"},
};
static const OptTable import_table = {
    import_opts, (int)(sizeof import_opts / sizeof import_opts[0]),
    import_fini, NULL};

static int check_args(const char *cmd, const ImportOpts *o) {
  if (o->rendered && o->format == IMPORT_TIMELOOP)
    return usage_error(cmd, "--rendered is for AccelForge templates");
  if (o->nvars && o->format == IMPORT_TIMELOOP)
    return usage_error(cmd, "--set is for AccelForge templates (a Timeloop "
                            "problem's instance gives its sizes)");
  if (o->out) {
    const char *in[] = {o->file};
    return check_output(cmd, o->out, in, 1);
  }
  return 0;
}

/* An AccelForge architecture's translation into OUT, as the loader loads
 * it (so that what is written loads). */
static bool import_arch(const Parsed *p, const ImportOpts *o,
                        const char *text, size_t len, Buf *out, Diag *d) {
  if (!accelforge_arch_format(text, len))
    return diag_fail(d, o->file, (Loc){1, 1}, "not an AccelForge "
                     "architecture: it has no 'arch' section");
  if (o->rendered) {
    SpecLoad l = {.vars = o->vars, .nvars = o->nvars, .read = p->inputs};
    return spec_render_accelforge(o->file, &l, out, d);
  }
  Arch *a = arch_parse_accelforge(o->file, text, len, o->vars, o->nvars,
                                  p->inputs, out, d);
  arch_free(a);
  return a != NULL;
}

static int run(const Parsed *p, const ImportOpts *o) {
  Diag d = {0};
  size_t len;
  char *text = read_input(o->file, INPUT_TEXT_MAX, &len, &d);
  inputset_add(p->inputs, o->file);
  if (text && o->format == IMPORT_ACCELFORGE_ARCH) {
    Buf out = {0};
    bool ok = import_arch(p, o, text, len, &out, &d);
    free(text);
    int status = ok ? 0 : EXIT_INPUT;
    if (!ok)
      diag_print(&d, stderr);
    else if (o->out)
      status = write_output(p->cmd, o->out, out.s, out.len, p->inputs);
    else
      emit(&out);
    buf_free(&out);
    return status;
  }
  SpecFormat want =
      o->format == IMPORT_TIMELOOP ? SPEC_TIMELOOP : SPEC_ACCELFORGE;
  SpecLoad l = {.sets = o->sets.sets, .nsets = o->sets.nsets,
                .vars = o->vars, .nvars = o->nvars, .read = p->inputs};
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
  } else if (o->out) {
    status = write_output(p->cmd, o->out, out.s, out.len, p->inputs);
  } else {
    emit(&out);
  }
  buf_free(&out);
  return status;
}

static int import(const Parsed *p, void *opts) {
  const ImportOpts *o = opts;
  int err = check_args(p->cmd, o);
  return err ? err : run(p, o);
}

const Command import_command = {
    "import", "an AccelForge or Timeloop workload as a spec, an AccelForge "
              "architecture as ours",
    .about =
        "Write the spec that FILE, an AccelForge workload (a Jinja template,\n"
        "rendered by python3-jinja2) or a Timeloop problem, translates to: the\n"
        "cascade classify, fuse, eval, exec and sweep load when given FILE.\n"
        "With accelforge-arch, the architecture an AccelForge architecture\n"
        "translates to: what --arch FILE loads.\n"
        "Assumptions and what is read but not modelled are comment lines.\n",
    .opts = &import_table,
    .example = "mambalaya import accelforge llama3_8B.yaml --set "
               "BATCH_SIZE=1 --set N_NEW_TOKENS=2048 --set DECODE=0\n",
    .size = sizeof(ImportOpts), .run = import,
};
