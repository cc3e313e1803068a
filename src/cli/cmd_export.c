/* cmd_export.c — `mambalaya export timeloop SPEC --out DIR`: each Einsum
 * of a cascade, with the loop nest the accelerator model chose for it, as
 * a Timeloop problem and mapping, to cross-check the model's traffic with
 * Timeloop's (docs/compat.md). */
#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { EXPORT_TIMELOOP, EXPORT_FORMATS };
static const char *format_at(int i) {
  (void)i;
  return "timeloop";
}
static const OptChoices format_choices = {"format", format_at, EXPORT_FORMATS,
                                          NULL, false};

typedef struct ExportOpts {
  int format;
  SpecOpts spec;
  const char *out, *arch;
  int design;
} ExportOpts;

static const Opt export_opts[] = {
    {"FORMAT", OPT_ENUM, offsetof(ExportOpts, format), NULL,
     .flags = OPT_POSITIONAL, .choices = &format_choices},
    {"--out", OPT_PATH, offsetof(ExportOpts, out), "DIR",
     .help = "the directory to write (created)", .flags = OPT_REQUIRED},
    {"--arch", OPT_STRING, offsetof(ExportOpts, arch), "ARCH",
     .help = "architecture (default: mambalaya)"},
    {"--design", OPT_ENUM, offsetof(ExportOpts, design), "D",
     .help = "whose loop nests (default: unfused)", .flags = OPT_LIST,
     .choices = &design_choices},
};
static const OptTable export_table = OPT_TABLE(export_opts);

/* Timeloop's name of variable V: its name in upper case. */
static void dim_name(const Einsum *e, int v, Buf *b) {
  for (const char *p = e->vars[v].name; *p; p++)
    buf_printf(b, "%c", toupper((unsigned char)*p));
  /* Two variables that differ in case only (h and H) are two dimensions:
   * the later one gets its index, so that no name is given twice. */
  for (int w = 0; w < v; w++)
    if (strcasecmp(e->vars[w].name, e->vars[v].name) == 0) {
      buf_printf(b, "%d", v);
      break;
    }
}

/* One coordinate: [[V], [W, kN]] with a named coefficient kN = N. */
static void projection(const Shape *s, const Einsum *e, const Index *ix,
                       Buf *b, Buf *coefs, Buf *notes) {
  buf_printf(b, "          - [");
  for (int t = 0; t < ix->nterms; t++) {
    double c = ix->coef[t] ? shape_eval(s, ix->coef[t]) : 1;
    buf_printf(b, "%s[", t ? ", " : "");
    dim_name(e, ix->var[t], b);
    if (c != 1) {
      buf_printf(b, ", k%g]", c);
      char line[64];
      snprintf(line, sizeof line, "      - {name: k%g, default: %g}\n", c, c);
      if (!coefs->s || !strstr(coefs->s, line))
        buf_printf(coefs, "%s", line);
    } else {
      buf_printf(b, "]");
    }
  }
  buf_printf(b, "]\n");
  double off = ix->off ? shape_eval(s, ix->off) : 0;
  if (off != 0)
    buf_printf(notes, "# an offset of %g in an index is dropped (Timeloop's "
                      "projections have none)\n", off);
}

/* One data space: T with its access A's projection. */
static void data_space(const Cascade *c, const Shape *s, const Einsum *e,
                       const Access *a, bool out, Buf *b, Buf *coefs,
                       Buf *notes) {
  buf_printf(b, "      - name: %s\n        projection:\n",
             c->tensors[a->tensor].name);
  for (int k = 0; k < a->n; k++)
    if (a->idx[k].nterms) /* a constant coordinate has no projection */
      projection(s, e, &a->idx[k], b, coefs, notes);
    else
      buf_printf(notes, "# %s's coordinate %d is a constant: dropped "
                        "(Timeloop's projections are sums of dimensions)\n",
                 c->tensors[a->tensor].name, k + 1);
  if (out)
    buf_printf(b, "        read-write: True\n");
}

/* The note on an Einsum that reads no tensor (MK[l,s] = s <= l): a
 * Timeloop problem has two to eight data spaces, so its file does not
 * load as one (tests/fuzz/fuzz_export.c knows it by this text). */
#define EXPORT_NO_INPUT                                                      \
  "reads no tensor: Timeloop's problems have two data spaces at least, so " \
  "this file states the Einsum but does not load"

/* TEXT as YAML comments, every line of it: an Einsum written over several
 * lines (a folded or quoted string) must not leave a line uncommented. */
static void comment_lines(Buf *b, const char *text) {
  for (const char *l = text; *l;) {
    size_t n = strcspn(l, "\r\n"); /* YAML breaks lines at either */
    buf_printf(b, "# %.*s\n", (int)n, l);
    l += n + (l[n] != 0);
  }
}

static void problem(const Cascade *c, const Shape *s, const Einsum *e,
                    Buf *b) {
  Buf spaces = {0}, coefs = {0}, notes = {0};
  VarSet used = access_vars(&e->out); /* the dimensions a data space has */
  for (int r = 0; r < e->nreads; r++) {
    const Access *a = e->reads[r];
    bool seen = a->n == 0;
    for (int q = 0; q < r; q++)
      seen = seen || e->reads[q]->tensor == a->tensor;
    if (!seen && a->tensor != e->out.tensor)
      used |= access_vars(a);
    if (a->tensor == e->out.tensor) /* a recurrence reads its output */
      buf_printf(&notes, "# %s is read as well as written: its one data "
                 "space is the read-write one\n", c->tensors[a->tensor].name);
    else if (seen && a->n)
      buf_printf(&notes, "# %s is read twice: one data space, at its first "
                 "read's indices\n", c->tensors[a->tensor].name);
    else if (!seen)
      data_space(c, s, e, a, false, &spaces, &coefs, &notes);
  }
  if (!spaces.len) /* Timeloop needs two data spaces at least */
    buf_printf(&notes, "# %s\n", EXPORT_NO_INPUT);
  data_space(c, s, e, &e->out, true, &spaces, &coefs, &notes);
  for (int v = 0; v < e->nvars; v++)
    if (!VARSET_HAS(used, v)) /* only a dropped read had it */
      buf_printf(&notes, "# %s indexes no data space kept: not a dimension "
                 "(Timeloop iterates it once)\n", e->vars[v].name);
  comment_lines(b, e->text);
  buf_printf(b, "# (Timeloop computes a multiply-accumulate of the data "
                "spaces)\n%s", notes.s ? notes.s : "");
  buf_printf(b, "problem:\n  shape:\n    name: %s\n    dimensions: [",
             c->tensors[e->out.tensor].name);
  const char *sep = "";
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(used, v)) {
      buf_printf(b, "%s", sep);
      dim_name(e, v, b);
      sep = ", ";
    }
  buf_printf(b, "]\n");
  if (coefs.len)
    buf_printf(b, "    coefficients:\n%s", coefs.s);
  buf_printf(b, "    data-spaces:\n%s  instance:\n", spaces.s);
  for (int v = 0; v < e->nvars; v++) {
    if (!VARSET_HAS(used, v))
      continue;
    buf_printf(b, "    ");
    dim_name(e, v, b);
    buf_printf(b, ": %lld\n", (long long)s->size[e->vars[v].rank]);
  }
  buf_free(&spaces);
  buf_free(&coefs);
  buf_free(&notes);
}

/* The tile of variable V in the model's mapping "m/512 d/256": its
 * extent when the mapping does not tile it. */
static double tile_of(const EinsumEval *ev, const Einsum *e, int v,
                      double extent) {
  const char *name = e->vars[v].name;
  size_t n = strlen(name);
  for (const char *p = ev->mapping; (p = strstr(p, name)); p += n)
    if ((p == ev->mapping || p[-1] == ' ') && p[n] == '/')
      return atof(p + n + 1);
  return extent;
}

static void level(const Einsum *e, const Shape *s, const EinsumEval *ev,
                  bool outer, Buf *b) {
  buf_printf(b, "  - target: %s\n    type: temporal\n    factors:",
             outer ? "DRAM" : "Buffer");
  for (int v = 0; v < e->nvars; v++) {
    double x = (double)s->size[e->vars[v].rank];
    double t = tile_of(ev, e, v, x);
    buf_printf(b, " ");
    dim_name(e, v, b);
    buf_printf(b, "=%.0f", outer ? ceil(x / t) : t);
  }
  /* Timeloop lists the loops innermost first: the ones the model does not
   * tile, then its tiled loops, innermost (the last of its order) first. */
  buf_printf(b, "\n    permutation: [");
  int n = 0;
  for (int v = e->nvars - 1; v >= 0; v--) {
    double x = (double)s->size[e->vars[v].rank];
    if (tile_of(ev, e, v, x) == x) {
      buf_printf(b, "%s", n++ ? ", " : "");
      dim_name(e, v, b);
    }
  }
  for (const char *p = ev->mapping + strlen(ev->mapping); p > ev->mapping;) {
    const char *end = p;
    while (p > ev->mapping && p[-1] != ' ')
      p--;
    for (int v = 0; v < e->nvars; v++) {
      size_t len = strlen(e->vars[v].name);
      if (strncmp(p, e->vars[v].name, len) == 0 && p[len] == '/' &&
          p + len < end) {
        buf_printf(b, "%s", n++ ? ", " : "");
        dim_name(e, v, b);
      }
    }
    while (p > ev->mapping && p[-1] == ' ')
      p--;
  }
  buf_printf(b, "]\n");
}

static void mapping(const Einsum *e, const Shape *s, const EinsumEval *ev,
                    Buf *b) {
  buf_printf(b, "# the model's loop nest for:\n");
  comment_lines(b, e->text);
  buf_printf(b, "# %s (DRAM above the Buffer that holds the tiles; rename the "
                "targets after your architecture's levels)\nmapping:\n",
             ev->mapping);
  level(e, s, ev, true, b);
  level(e, s, ev, false, b);
}

/* The files' names fit a file name (NAME_MAX): refused before the work,
 * not when the set is staged. */
static int check_names(const char *cmd, const Cascade *c) {
  for (int k = 0; k < c->neinsums; k++) {
    const char *t = c->tensors[c->einsums[k]->out.tensor].name;
    if (strlen(t) + strlen("00_.problem.yaml") > 255)
      return usage_error(cmd, "the tensor name '%.40s...' (%zu bytes) is too "
                              "long for a file name", t, strlen(t));
  }
  return 0;
}

/* Stage each Einsum's problem and mapping into SET. */
static bool put_files(OutSet *set, const Cascade *c, const Shape *s,
                      const Eval *ev, Diag *d) {
  bool ok = true;
  for (int k = 0; ok && k < ev->n; k++) {
    const Einsum *e = c->einsums[ev->e[k].einsum];
    Buf p = {0}, m = {0};
    char name[300];
    problem(c, s, e, &p);
    mapping(e, s, &ev->e[k], &m);
    const char *t = c->tensors[e->out.tensor].name;
    snprintf(name, sizeof name, "%02d_%s.problem.yaml", k + 1, t);
    ok = outset_put(set, name, p.s, p.len, d);
    snprintf(name, sizeof name, "%02d_%s.mapping.yaml", k + 1, t);
    ok = ok && outset_put(set, name, m.s, m.len, d);
    buf_free(&p);
    buf_free(&m);
  }
  return ok;
}

static int run(const Parsed *p, const ExportOpts *o) {
  Diag dd = {0};
  if (!output_dir_check(o->out, &dd))
    return input_failed(&dd);
  Cascade *c;
  Shape *s;
  int err = load_spec(p->cmd, &o->spec, true, &c, &s);
  if (!err && (err = check_names(p->cmd, c))) {
    shape_free(s);
    cascade_free(c);
  }
  if (err)
    return err;
  Diag d = {0};
  Arch *a = open_arch(o->arch, &d);
  inputset_add(p->inputs, input_path("archs", o->arch));
  Pair *pairs = a ? fusion_classify(c, s) : NULL;
  ModelOpts mo = model_default_opts((Design)o->design);
  Eval *ev =
      a ? model_eval(c, s, a, pairs, (Design)o->design, &mo, &d) : NULL;
  OutSet *set = ev ? outset_new(o->out) : NULL;
  bool ok = set != NULL;
  if (set)
    outset_protect_inputs(set, p->inputs);
  ok = ok && put_files(set, c, s, ev, &d);
  bool refused = !set;
  ok = ok && outset_commit(set, &refused, &d);
  if (!ok)
    diag_print(&d, stderr);
  outset_free(set);
  eval_free(ev);
  free(pairs);
  arch_free(a);
  shape_free(s);
  cascade_free(c);
  return ok ? 0 : refused ? EXIT_INPUT : EXIT_RUN;
}

static int export(const Parsed *p, void *opts) {
  return run(p, opts);
}

const Command export_command = {
    "export", "each Einsum as a Timeloop problem and mapping",
    .about =
        "Write each Einsum of SPEC as a Timeloop problem (NN_NAME.problem.yaml:\n"
        "its variables the dimensions, its tensors the data spaces, the output\n"
        "read-write) and the loop nest the model chose for it on ARCH under\n"
        "design D (NN_NAME.mapping.yaml: a DRAM level over a Buffer level, the\n"
        "tiles the Buffer holds). Timeloop computes a multiply-accumulate; what\n"
        "it cannot say (other operators, index offsets, a tensor read twice)\n"
        "is a comment in the problem.\n",
    .opts = &export_table,
    .uses = {USE_SPEC(ExportOpts)},
    .example = "mambalaya export timeloop mamba1 --set B=1 --set I=64 --out "
               "out/timeloop\n",
    .size = sizeof(ExportOpts), .run = export,
};
