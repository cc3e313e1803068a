/* cmd_exec.c — `mambalaya exec SPEC`: run any cascade on real tensors,
 * with the interpreter or under a fusion plan, and compare what the
 * executor moved off chip with what the model prices for that plan. */
#include "cli.h"

#include "../exec/exec.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INPUT_FILES = 16, MAX_RANGES = 64 };

typedef struct Range {
  const char *name; /* NULL: every input */
  double lo, hi;
} Range;

typedef struct InputFiles {
  const char *path[MAX_INPUT_FILES];
  int n;
} InputFiles;

typedef struct Ranges {
  Range r[MAX_RANGES];
  int n;
} Ranges;

typedef struct ExecArgs {
  SpecOpts spec;
  InputFiles inputs;
  uint64_t seed; /* with --random */
  Ranges ranges;
  ExecutorOpts ex;
  int stitch;
  const char *out, *next, *keep;
  bool check;
  double tolerance;
  bool random;       /* --random given */
  double max_memory; /* --max-memory; 0: what the machine has */
} ExecArgs;

/* ---- options ---- */

static int parse_input_file(const char *cmd, const char *val, void *field) {
  InputFiles *f = field;
  if (f->n == MAX_INPUT_FILES)
    return usage_error(cmd, "at most %d --inputs files", MAX_INPUT_FILES);
  f->path[f->n++] = val;
  return 0;
}

/* [NAME=]LO:HI */
static bool parse_range(const char *s, Range *r) {
  const char *eq = strchr(s, '='), *num = eq ? eq + 1 : s;
  double lo, hi;
  size_t n = decimal_length(num);
  char text[64];
  if (n == 0 || n >= sizeof text || num[n] != ':' || eq == s)
    return false;
  snprintf(text, sizeof text, "%.*s", (int)n, num);
  if (!parse_decimal(text, &lo) || !parse_decimal(num + n + 1, &hi) ||
      hi < lo)
    return false;
  *r = (Range){eq ? s : NULL, lo, hi}; /* NAME=..., cut at the '=' */
  return true;
}

static int parse_range_opt(const char *cmd, const char *val, void *field) {
  Ranges *rs = field;
  if (rs->n == MAX_RANGES)
    return usage_error(cmd, "at most %d --range options", MAX_RANGES);
  if (!parse_range(val, &rs->r[rs->n]))
    return usage_error(cmd, "--range expects [NAME=]LO:HI with LO <= HI, "
                            "got '%s'",
                       val);
  rs->n++;
  return 0;
}

/* Does range R name tensor NAME? */
static bool range_names(const Range *r, const char *name) {
  size_t n = (size_t)(strchr(r->name, '=') - r->name);
  return strlen(name) == n && strncmp(r->name, name, n) == 0;
}

#define EO(field) offsetof(ExecArgs, field)
static const Opt exec_opts[] = {
    {"--inputs", OPT_CUSTOM, EO(inputs), "FILE",
     .help = "a safetensors file of input tensors, named as in the spec "
             "(repeatable: weights in one, activations in another); every "
             "input must come from one, or from --random",
     .flags = OPT_REPEAT, .parse = parse_input_file},
    {"--random", OPT_SEED, EO(seed), "SEED",
     .help = "uniform random values for the inputs no file gives (each from "
             "SEED and its name), in [-1, 1) unless --range says otherwise"},
    {"--range", OPT_CUSTOM, EO(ranges), "[NAME=]LO:HI",
     .help = "the range of NAME, or of every input NAME is not given "
             "(positive for a variance: --range VAR=0.5:2)",
     .flags = OPT_REPEAT, .parse = parse_range_opt},
    {"--stitch", OPT_ENUM, EO(stitch), "HOW",
     .help = "greedy (default), alg1 or global: how the plan is stitched (as "
             "for fuse)",
     .choices = &stitcher_choices},
    PHASE_OPT(ExecArgs),
    {"--out", OPT_PATH, EO(out), "FILE",
     .help = "write the outputs (or the --keep tensors) to FILE, atomically"},
    {"--keep", OPT_STRING, EO(keep), "T,...",
     .help = "the tensors --out writes: any produced tensor or input"},
    {"--next", OPT_PATH, EO(next), "FILE",
     .help = "write the state a following pass continues from: each "
             "initialization's input (H0, a convolution's history, a KV cache "
             "grown by this pass's tokens)"},
    {"--check", OPT_FLAG, EO(check), NULL,
     .help = "run the interpreter too and report the worst relative "
             "difference of every output (and of the next state): max |x - "
             "ref| / max |ref|; exit 1 if one exceeds the tolerance, or holds "
             "a NaN (on either side, even NaN against NaN)"},
    MAX_MEMORY_OPT(ExecArgs, max_memory, "a run whose inputs and arrays"),
    {"--tolerance", OPT_DOUBLE, EO(tolerance), "X",
     .help = "for --check (default 1e-5)", .lo = 0, .hi = INFINITY},
    {"--json", OPT_FLAG, EO(spec.json), NULL,
     .help = "print JSON: {\"spec\", \"sizes\", \"plan\", \"outputs\", "
             "\"check\", \"traffic\": {\"tensors\": [{\"tensor\", "
             "\"read_bytes\", \"write_bytes\", \"model_read_bytes\", "
             "\"model_write_bytes\"}], ...}, \"seconds\", ...}"},
};
static const OptTable exec_table = OPT_TABLE(exec_opts);

static void exec_init(void *opts) {
  *(ExecArgs *)opts = (ExecArgs){.ex = executor_defaults(),
                                 .stitch = STITCH_GREEDY, .tolerance = 1e-5};
}

/* ---- inputs ---- */

/* Is tensor T read by some Einsum or initialization (an input exec_run
 * needs)? */
/* An input the run needs: no Einsum produces it, some Einsum or
 * initialization reads it. */
static bool needed_input(const Cascade *c, int t) {
  return c->tensors[t].producer < 0 && tensor_is_read(c, t);
}

static void shape_of(const Cascade *c, const Shape *s, int t, int64_t *shape) {
  for (int k = 0; k < c->tensors[t].nranks; k++)
    shape[k] = s->size[c->tensors[t].ranks[k]];
}

static void shape_text(Buf *b, const int64_t *shape, int n) {
  buf_printf(b, "[");
  for (int k = 0; k < n; k++)
    buf_printf(b, "%s%lld", k ? ", " : "", (long long)shape[k]);
  buf_printf(b, "]");
}

/* Every tensor of file PATH into IN: each must be an input of C, of its
 * shape, and given by no earlier file. */
static bool read_inputs(const Cascade *c, const Shape *s, const char *path,
                        Tensors *in, Diag *d) {
  StFile *f = st_open(path, d);
  if (!f)
    return false;
  bool ok = true;
  for (int i = 0; ok && i < f->n; i++) {
    const StEntry *e = &f->entries[i];
    int t = cascade_tensor(c, e->name);
    if (t < 0 || !needed_input(c, t)) {
      diag_error(d, path, (Loc){0, 0}, "%s is not an input of %s (%s)", e->name,
                 c->path, t < 0 ? "no such tensor" : "an Einsum produces it");
      ok = false;
      break;
    }
    if (tensors_get(in, e->name)) {
      diag_error(d, path, (Loc){0, 0},
                 "%s is given twice (by an earlier --inputs file)", e->name);
      ok = false;
      break;
    }
    int64_t want[IR_MAX_RANKS];
    shape_of(c, s, t, want);
    bool same = e->ndim == c->tensors[t].nranks;
    for (int k = 0; same && k < e->ndim; k++)
      same = e->shape[k] == want[k];
    if (!same) {
      Buf got = {0}, exp = {0};
      shape_text(&got, e->shape, e->ndim);
      shape_text(&exp, want, c->tensors[t].nranks);
      diag_error(d, path, (Loc){0, 0},
                 "%s has shape %s, but %s declares it %s (at %d:%d) with "
                 "these sizes",
                 e->name, got.s, c->path, exp.s, c->tensors[t].loc.line,
                 c->tensors[t].loc.col);
      buf_free(&got);
      buf_free(&exp);
      ok = false;
      break;
    }
    tensors_put(in, e->name, st_array(f, e), true);
  }
  st_close(f);
  return ok;
}

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform values in [LO, HI) from SEED and NAME alone. */
static Array *random_array(int n, const int64_t *shape, uint64_t seed,
                           const char *name, double lo, double hi) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a of the name */
  for (const char *p = name; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  uint64_t st = seed ^ h;
  Array *a = array_new(n, shape);
  for (int64_t i = 0; a && i < a->n; i++)
    a->data[i] =
        (float)(lo + (hi - lo) * (double)(splitmix(&st) >> 11) * 0x1.0p-53);
  return a;
}

/* Every --range NAME=... names an input of C; false after a message. */
static bool ranges_known(const Ranges *rs, const Cascade *c) {
  for (int i = 0; i < rs->n; i++) {
    const Range *r = &rs->r[i];
    bool found = !r->name;
    for (int t = 0; !found && t < c->ntensors; t++)
      found = needed_input(c, t) && range_names(r, c->tensors[t].name);
    if (!found) {
      fprintf(stderr, "mambalaya exec: --range %s: not an input of %s\n",
              r->name, c->path);
      return false;
    }
  }
  return true;
}

/* The range of input NAME: the last --range naming it, else the last for
 * every input, else [-1, 1). */
static Range range_of(const Ranges *rs, const char *name) {
  Range out = {NULL, -1, 1};
  bool named = false;
  for (int i = 0; i < rs->n; i++) {
    const Range *r = &rs->r[i];
    bool mine = r->name && range_names(r, name);
    if (mine || (!r->name && !named)) {
      out = *r;
      named = named || mine;
    }
  }
  return out;
}

/* Input T of C, random (with --random); false after a message. */
static bool random_input(const ExecArgs *o, const Cascade *c, const Shape *s,
                         int t, Tensors *in) {
  const Tensor *T = &c->tensors[t];
  if (!o->random) {
    Diag d = {0};
    diag_error(&d, c->path, T->loc,
               "no value for the input %s: give it in an --inputs file, or "
               "use --random SEED",
               T->name);
    diag_print(&d, stderr);
    return false;
  }
  Range r = range_of(&o->ranges, T->name);
  int64_t shape[IR_MAX_RANKS];
  shape_of(c, s, t, shape);
  Array *a = random_array(T->nranks, shape, o->seed, T->name, r.lo, r.hi);
  if (!a) {
    fprintf(stderr, "mambalaya exec: input %s is too large\n", T->name);
    return false;
  }
  tensors_put(in, T->name, a, true);
  return true;
}

/* The inputs the files give, and each --range naming an input. Exit
 * status, 0 on success. */
static int read_input_files(const ExecArgs *o, const Cascade *c,
                            const Shape *s, Tensors *in) {
  Diag d = {0};
  for (int i = 0; i < o->inputs.n; i++)
    if (!read_inputs(c, s, o->inputs.path[i], in, &d))
      return input_failed(&d);
  return ranges_known(&o->ranges, c) ? 0 : EXIT_INPUT;
}

/* The inputs no file gave: random (with --random). Exit status, 0 on
 * success. */
static int random_inputs(const ExecArgs *o, const Cascade *c, const Shape *s,
                         Tensors *in) {
  for (int t = 0; t < c->ntensors; t++)
    if (needed_input(c, t) && !tensors_get(in, c->tensors[t].name) &&
        !random_input(o, c, s, t, in))
      return EXIT_INPUT;
  return 0;
}

/* ---- comparing ---- */

/* max |x - ref| / max |ref| over the finite values; equal values
 * (infinities included, a masked score) differ by 0, an infinity where
 * the other has something else by infinity; a NaN on either side, even
 * against a NaN, makes it NaN: --check fails. */
static double rel_diff(const Array *x, const Array *ref) {
  if (!x || !ref || x->n != ref->n)
    return INFINITY;
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < ref->n; i++) {
    double a = x->data[i], b = ref->data[i];
    if (isnan(a) || isnan(b)) /* matches nothing, not even a NaN */
      return NAN;
    if (isfinite(b))
      scale = fmax(scale, fabs(b));
    if (a == b)
      continue;
    if (!isfinite(a) || !isfinite(b))
      return INFINITY;
    worst = fmax(worst, fabs(a - b));
  }
  return worst == 0 ? 0 : worst / (scale > 0 ? scale : 1e-30);
}

typedef struct Diff {
  const char *name; /* in RES or in NEXT */
  bool state;       /* a next-state tensor */
  double rel;
} Diff;

/* ---- the report ---- */

typedef struct ExecResult {
  const Cascade *c;
  const Shape *s;
  const ExecArgs *o;
  const Plan *plan; /* NULL: the interpreter */
  json_t *plan_json;
  const ExecStats *st; /* with a plan */
  const Eval *ev;      /* the model, with a plan */
  double word;         /* the model architecture's bytes per element */
  Tensors *written;    /* what --out writes (or would) */
  Tensors *next;
  Diff *diffs;
  int ndiffs;
  double seconds;
} ExecResult;

/* Tensor T's off-chip bytes: read and written as the executor counted
 * them, then as the model prices them (in fp32). False when all are 0. */
static bool traffic(const ExecResult *r, int t, double v[4]) {
  double scale = 4 / r->word;
  v[0] = r->st->read[t];
  v[1] = r->st->write[t];
  v[2] = scale * r->ev->tensor_read[t];
  v[3] = scale * r->ev->tensor_write[t];
  return v[0] + v[1] + v[2] + v[3] != 0;
}

static json_t *shape_json(const Array *a) {
  json_t *j = json_array();
  for (int k = 0; k < a->ndim; k++)
    json_array_append_new(j, json_integer(a->shape[k]));
  return j;
}

static const char *const traffic_keys[4] = {
    "read_bytes", "write_bytes", "model_read_bytes", "model_write_bytes"};

static json_t *traffic_json(const ExecResult *r) {
  const Cascade *c = r->c;
  json_t *tr = json_object(), *rows = json_array();
  double sum[4] = {0, 0, 0, 0}, v[4];
  for (int t = 0; t < c->ntensors; t++) {
    if (!traffic(r, t, v))
      continue;
    json_t *o = json_object();
    json_object_set_new(o, "tensor", json_string(c->tensors[t].name));
    json_object_set_new(o, "intermediate",
                        json_boolean(tensor_is_intermediate(c, t)));
    for (int k = 0; k < 4; k++) {
      json_object_set_new(o, traffic_keys[k], report_real(v[k]));
      sum[k] += v[k];
    }
    json_array_append_new(rows, o);
  }
  json_object_set_new(tr, "tensors", rows);
  for (int k = 0; k < 4; k++)
    json_object_set_new(tr, traffic_keys[k], report_real(sum[k]));
  json_object_set_new(tr, "offchip_intermediate_bytes",
                      report_real(4 * r->plan->offchip_elems));
  return tr;
}

static json_t *check_json(const ExecResult *r) {
  json_t *chk = json_array();
  for (int i = 0; i < r->ndiffs; i++) {
    const Diff *df = &r->diffs[i];
    json_t *rel = isfinite(df->rel) ? report_real(df->rel)
                  : json_string(isnan(df->rel) ? "nan" : "inf");
    json_array_append_new(chk, json_pack("{s:s, s:b, s:o}", "tensor",
                                         df->name, "next_state", df->state,
                                         "max_rel_diff", rel));
  }
  return chk;
}

static json_t *outputs_json(const Tensors *written) {
  json_t *outs = json_array();
  for (int i = 0; i < written->n; i++)
    json_array_append_new(outs, json_pack("{s:s, s:o}", "tensor",
                                          written->names[i], "shape",
                                          shape_json(written->arrays[i])));
  return outs;
}

static json_t *result_json(const ExecResult *r) {
  const Cascade *c = r->c;
  json_t *root = json_object();
  json_object_set_new(root, "spec", json_string(c->path));
  json_t *sizes = json_object();
  for (int k = 0; k < c->nranks; k++)
    if (c->ranks[k].same_as < 0)
      json_object_set_new(sizes, c->ranks[k].name, json_integer(r->s->size[k]));
  json_object_set_new(root, "sizes", sizes);
  json_object_set_new(root, "executor",
                      json_string(r->plan ? "fused" : "interpreter"));
  json_object_set_new(root, "plan",
                      r->plan_json ? json_incref(r->plan_json) : json_null());
  json_object_set_new(root, "outputs", outputs_json(r->written));
  json_object_set_new(root, "out",
                      r->o->out ? json_string(r->o->out) : json_null());
  if (r->o->check) {
    json_object_set_new(root, "check", check_json(r));
    json_object_set_new(root, "tolerance", report_real(r->o->tolerance));
  }
  if (r->plan) {
    json_object_set_new(root, "traffic", traffic_json(r));
    json_object_set_new(root, "peak_bytes", report_real(r->st->peak_bytes));
  }
  json_object_set_new(root, "seconds", report_real(r->seconds));
  return root;
}

/* "exec SPEC (SIZES): PLAN, SECONDS" */
static void headline_text(Buf *b, const ExecResult *r) {
  const Cascade *c = r->c;
  buf_printf(b, "exec %s (", c->path);
  for (int k = 0, first = 1; k < c->nranks; k++)
    if (c->ranks[k].same_as < 0) {
      buf_printf(b, "%s%s=%lld", first ? "" : " ", c->ranks[k].name,
                 (long long)r->s->size[k]);
      first = 0;
    }
  buf_printf(b, "): ");
  if (r->plan)
    buf_printf(b, "%s plan, %s stitching, %d group%s",
               strategy_name(r->plan->strategy),
               stitcher_name(r->plan->stitcher), r->plan->ngroups,
               r->plan->ngroups == 1 ? "" : "s");
  else
    buf_printf(b, "the interpreter");
  buf_printf(b, ", %.3g s\n", r->seconds);
}

static void traffic_text(Buf *b, const ExecResult *r) {
  buf_printf(b, "off-chip bytes, counted by the executor | the model's "
                "ideal accounting (fp32):\n");
  buf_printf(b, "  %-12s %14s %14s | %14s %14s\n", "tensor", "read", "write",
             "read", "write");
  double sum[4] = {0, 0, 0, 0}, v[4];
  for (int t = 0; t < r->c->ntensors; t++) {
    if (!traffic(r, t, v))
      continue;
    buf_printf(b, "  %-12s %14.0f %14.0f | %14.0f %14.0f%s\n",
               r->c->tensors[t].name, v[0], v[1], v[2], v[3],
               v[0] == v[2] && v[1] == v[3] ? "" : "  differs");
    for (int k = 0; k < 4; k++)
      sum[k] += v[k];
  }
  buf_printf(b, "  %-12s %14.0f %14.0f | %14.0f %14.0f\n", "total", sum[0],
             sum[1], sum[2], sum[3]);
  buf_printf(b, "  peak tensor memory %.0f bytes\n", r->st->peak_bytes);
}

static void result_text(Buf *b, const ExecResult *r) {
  headline_text(b, r);
  for (int i = 0; i < r->written->n; i++) {
    buf_printf(b, "  %s ", r->written->names[i]);
    shape_text(b, r->written->arrays[i]->shape, r->written->arrays[i]->ndim);
    buf_printf(b, "%s%s\n", r->o->out ? " -> " : "",
               r->o->out ? r->o->out : "");
  }
  if (r->next && r->next->n)
    buf_printf(b, "  next state: %d tensor%s -> %s\n", r->next->n,
               r->next->n == 1 ? "" : "s", r->o->next);
  if (r->o->check) {
    buf_printf(b,
               "check against the interpreter (max |x - ref| / max "
               "|ref|, tolerance %g):\n",
               r->o->tolerance);
    for (int i = 0; i < r->ndiffs; i++)
      buf_printf(b, "  %-12s %.3g%s\n", r->diffs[i].name, r->diffs[i].rel,
                 r->diffs[i].state ? "  (next state)" : "");
  }
  if (r->plan)
    traffic_text(b, r);
}

/* ---- running ---- */

/* --keep's names: the tensors --out writes, from the results (keep_all)
 * or the inputs. */
static int pick_written(const ExecArgs *o, const Cascade *c, const Tensors *in,
                        const Tensors *res, Tensors *written) {
  if (!o->keep) {
    for (int i = 0; i < res->n; i++)
      if (c->tensors[cascade_tensor(c, res->names[i])].output)
        tensors_put(written, res->names[i], res->arrays[i], false);
    return 0;
  }
  const char *p = o->keep;
  while (*p) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    char name[128];
    if (n == 0 || n >= sizeof name) {
      fprintf(stderr,
              "mambalaya exec: --keep: expected tensor names "
              "separated by ',', got '%s'\n",
              o->keep);
      return EXIT_INPUT;
    }
    memcpy(name, p, n);
    name[n] = 0;
    Array *a = tensors_get(res, name);
    if (!a)
      a = tensors_get(in, name);
    if (!a) {
      fprintf(stderr, "mambalaya exec: --keep %s: no tensor of %s\n", name,
              c->path);
      return EXIT_INPUT;
    }
    tensors_put(written, name, a, false);
    p += n + (end ? 1 : 0);
  }
  return 0;
}

/* Write T to PATH, never over one of the run's inputs IN: an exit
 * status. */
static int save(const Tensors *t, const char *path, const Cascade *c,
                const char *executor, const InputSet *in) {
  StWriter *w = st_writer_new();
  for (int i = 0; i < t->n; i++)
    st_writer_add(w, t->names[i], t->arrays[i], DT_F32);
  st_writer_meta(w, "spec", c->path);
  st_writer_meta(w, "executor", executor);
  return write_safetensors("mambalaya exec", path, w, in);
}

/* Run the interpreter as the reference and compare every output (and the
 * next state) with RES (and NEXT). */
static bool check(const Cascade *c, const Shape *s, const Tensors *in,
                  Pool *pool, const Tensors *res, const Tensors *next,
                  ExecResult *r) {
  Tensors ref = {0}, rnext = {0};
  ExecOpts io = {.pool = pool, .keep_all = true};
  Diag d = {0};
  if (!exec_run(c, s, in, &io, &ref, next ? &rnext : NULL, NULL, &d)) {
    diag_print(&d, stderr);
    return false;
  }
  r->diffs =
      xcalloc((size_t)(res->n + (next ? next->n : 0)) + 1, sizeof *r->diffs);
  for (int i = 0; i < res->n; i++)
    if (c->tensors[cascade_tensor(c, res->names[i])].output)
      r->diffs[r->ndiffs++] =
          (Diff){res->names[i], false,
                 rel_diff(res->arrays[i], tensors_get(&ref, res->names[i]))};
  for (int i = 0; next && i < next->n; i++)
    r->diffs[r->ndiffs++] =
        (Diff){next->names[i], true,
               rel_diff(next->arrays[i], tensors_get(&rnext, next->names[i]))};
  tensors_free(&ref);
  tensors_free(&rnext);
  return true;
}

/* The model's ideal accounting for PLAN (owned by the Eval from here on),
 * the decode state included: what the executor counts. */
static Eval *model_of(const Cascade *c, const Shape *s, Plan *plan,
                      double *word) {
  Diag d = {0};
  Arch *a = open_arch("mambalaya", &d);
  if (!a) {
    plan_free(plan);
    diag_print(&d, stderr);
    return NULL;
  }
  Design des = design_of_strategy(plan->strategy);
  ModelOpts mo = model_default_opts(des);
  mo.accounting = ACCOUNT_IDEAL;
  mo.state_io = true;
  /* A group's fusion level (a plan file's "group_levels", named for the
   * architecture it was searched on) moves no byte of the plan's geometry
   * at ideal accounting: priced at this architecture's own level. */
  for (int g = 0; g < plan->ngroups; g++)
    plan->groups[g].level[0] = 0;
  Pair *pairs = fusion_classify(c, s);
  Eval *ev = model_eval_plan(c, s, a, pairs, des, plan, &mo, &d);
  if (!ev)
    diag_print(&d, stderr);
  *word = a->word_bytes;
  free(pairs);
  arch_free(a);
  return ev;
}

/* One run's state, freed by run_free. */
typedef struct ExecRun {
  Tensors in, res, next, written;
  Plan *plan;
  Eval *ev;
  ExecStats st;
  Pool *pool;
  ExecResult r;
} ExecRun;

/* The plan --plan, --strategy (best: the search's) and --stitch give
 * (none for the interpreter). */
static int make_plan(const ExecArgs *o, const Cascade *c, const Shape *s,
                     Plan **plan) {
  Diag d = {0};
  Pair *pairs = fusion_classify(c, s);
  bool ok = executor_plan(&o->ex, (Stitcher)o->stitch, OBJ_TRAFFIC, c, s,
                          pairs, plan, &d);
  free(pairs);
  return ok ? 0 : input_failed(&d);
}

/* The executor (and with --check the interpreter) over the inputs. */
static int execute(const ExecArgs *o, const Cascade *c, const Shape *s,
                   ExecRun *x) {
  x->pool = pool_new(o->ex.threads);
  ExecOpts eo = {.plan = x->plan,
                 .buffer_bytes = o->ex.buffer,
                 .pool = x->pool,
                 .keep_all = o->keep != NULL};
  Diag d = {0};
  double t0 = now_seconds();
  if (!exec_run(c, s, &x->in, &eo, &x->res, o->next ? &x->next : NULL,
                x->plan ? &x->st : NULL, &d)) {
    diag_print(&d, stderr);
    return EXIT_RUN;
  }
  x->r.seconds = now_seconds() - t0;
  x->r.st = &x->st;
  int status = pick_written(o, c, &x->in, &x->res, &x->written);
  if (status)
    return status;
  x->r.next = o->next ? &x->next : NULL;
  if (o->check && !check(c, s, &x->in, x->pool, &x->res, x->r.next, &x->r))
    return EXIT_RUN;
  return 0;
}

/* The model's accounting of the plan beside the executor's (the Eval
 * takes the plan). */
static int price_plan(const Cascade *c, const Shape *s, ExecRun *x) {
  if (!x->plan)
    return 0;
  x->r.plan_json = report_plan_json(c, x->plan);
  x->ev = model_of(c, s, x->plan, &x->r.word);
  x->plan = NULL;
  x->r.plan = x->ev ? x->ev->plan : NULL;
  x->r.ev = x->ev;
  return x->ev ? 0 : EXIT_INPUT;
}

/* Write --out and --next, print the result; exit 1 past the tolerance. */
static int finish(const ExecArgs *o, const Cascade *c, ExecRun *x) {
  const char *executor = x->r.plan ? "fused" : "interpreter";
  const InputSet *in = o->spec.inputs;
  int st = 0;
  if ((o->out && (st = save(&x->written, o->out, c, executor, in))) ||
      (o->next && (st = save(&x->next, o->next, c, "next state", in))))
    return st;
  Buf b = {0};
  if (o->spec.json) {
    json_t *j = result_json(&x->r);
    report_json(&b, j);
    json_decref(j);
  } else {
    result_text(&b, &x->r);
  }
  emit(&b);
  buf_free(&b);
  int status = 0;
  for (int i = 0; i < x->r.ndiffs; i++)
    if (isnan(x->r.diffs[i].rel)) {
      fprintf(stderr,
              "mambalaya exec: %s holds a NaN (in this run, the "
              "interpreter's or both): a NaN is never a match\n",
              x->r.diffs[i].name);
      status = EXIT_RUN;
    } else if (!(x->r.diffs[i].rel <= o->tolerance)) {
      fprintf(stderr,
              "mambalaya exec: %s differs from the interpreter by %g, more "
              "than the tolerance %g\n",
              x->r.diffs[i].name, x->r.diffs[i].rel, o->tolerance);
      status = EXIT_RUN;
    }
  return status;
}

static void run_free(ExecRun *x) {
  json_decref(x->r.plan_json);
  free(x->r.diffs);
  eval_free(x->ev);
  plan_free(x->plan);
  exec_stats_free(&x->st);
  pool_free(x->pool);
  tensors_free(&x->written); /* borrowed arrays */
  tensors_free(&x->in);
  tensors_free(&x->res);
  tensors_free(&x->next);
}

/* Refuse, before any random input is made, a run whose inputs, arrays
 * (exec_bytes: every tensor for the interpreter, or the plan's off-chip
 * tensors and tile buffer, and with --keep the copies of its on-chip
 * ones) and --check's reference run exceed the budget: what `run` does
 * for a language model. */
static int check_exec_memory(const ExecArgs *o, const Cascade *c,
                             const Shape *s, const Plan *plan) {
  double need = exec_bytes(c, s, plan, o->ex.buffer);
  for (int t = 0; t < c->ntensors; t++)
    if (needed_input(c, t) || (plan && o->keep && plan->onchip[t]))
      need += 4 * shape_tensor_elems(s, t);
  if (o->check)
    need += exec_bytes(c, s, NULL, 0);
  return check_memory("mambalaya exec", "this run", need,
                      memory_budget(o->max_memory), o->max_memory > 0);
}

static int run(const ExecArgs *o, const Cascade *c, const Shape *s) {
  ExecRun x = {.r = {.c = c, .s = s, .o = o}};
  x.r.written = &x.written;
  int status = read_input_files(o, c, s, &x.in);
  if (!status)
    status = make_plan(o, c, s, &x.plan);
  if (!status)
    status = check_exec_memory(o, c, s, x.plan);
  if (!status)
    status = random_inputs(o, c, s, &x.in);
  x.r.plan = x.plan;
  if (!status)
    status = execute(o, c, s, &x);
  if (!status)
    status = price_plan(c, s, &x);
  if (!status)
    status = finish(o, c, &x);
  run_free(&x);
  return status;
}

/* The options that go together, and outputs that can be written and
 * overwrite no input: refused before any work. */
static int check_args(const Parsed *p, const ExecArgs *o) {
  bool fused = o->ex.strategy >= 0 && o->ex.strategy != EXEC_BEST,
       stitch = opt_given(p, "--stitch");
  if (o->ex.plan_file && stitch)
    return usage_error(p->cmd, "--plan gives the plan: drop --stitch");
  if (stitch && !fused)
    return usage_error(p->cmd, "--stitch needs a --strategy other than the "
                               "interpreter and best");
  if (o->check && o->ex.strategy < 0 && !o->ex.plan_file)
    return usage_error(p->cmd, "--check compares a plan with the "
                               "interpreter: give --strategy or --plan");
  if (o->keep && !o->out)
    return usage_error(p->cmd,
                       "--keep says what --out writes: give --out FILE");
  const char *in[MAX_INPUT_FILES + 2] = {input_path("specs", o->spec.spec),
                                         o->ex.plan_file};
  memcpy(in + 2, o->inputs.path, sizeof o->inputs.path);
  for (int i = 0; i < o->inputs.n + 2; i++) /* the run's, for the writes */
    inputset_add(p->inputs, in[i]);
  const char *outs[2] = {o->out, o->next};
  int err;
  for (int i = 0; i < 2; i++)
    if (outs[i] &&
        (err = check_output(p->cmd, outs[i], in, o->inputs.n + 2)))
      return err;
  if (o->out && o->next &&
      (strcmp(o->out, o->next) == 0 || same_file(o->out, o->next)))
    return usage_error(p->cmd, "--out and --next name the same file");
  return 0;
}

static int exec_cmd(const Parsed *p, void *opts) {
  ExecArgs *o = opts;
  o->random = opt_given(p, "--random");
  int status = check_args(p, o);
  Cascade *c;
  Shape *s;
  if (status || (status = load_spec(p->cmd, &o->spec, true, &c, &s)))
    return status;
  status = run(o, c, s);
  shape_free(s);
  cascade_free(c);
  return status;
}

const Command exec_command = {
    "exec",
    "run a cascade on tensors (interpreter or plan), check, count bytes",
    .about =
        "Run the cascade in SPEC on fp32 tensors (docs/executor.md): Einsum\n"
        "by Einsum (the interpreter), or group by group under a fusion plan\n"
        "(the fused executor, which counts every byte it moves off chip).\n"
        "SPEC is a path or a shipped name (mamba1, fusemax_1pass,\n"
        "prenorm_decode, ...).\n",
    .opts = &exec_table,
    .uses = {USE_EXECUTOR(ExecArgs, ex), USE_SPEC(ExecArgs)},
    .notes =
        "With a plan, the bytes the executor counted are printed beside the\n"
        "model's for the same plan (its ideal accounting, the decode state\n"
        "included, in fp32 bytes): they agree tensor by tensor.\n",
    .example =
        "mambalaya exec fusemax_1pass --set B=1 --set H=2 --set M1=4 "
        "--set M0=64 \\\n"
        "    --random 1 --strategy ri+rsb+rsp --check --out av.safetensors\n"
        "mambalaya fuse mamba2_chunked --strategy full --stitch global --json "
        "> p.json\n"
        "mambalaya exec mamba2_chunked --plan p.json --inputs in.safetensors "
        "--json\n",
    .size = sizeof(ExecArgs), .init = exec_init, .run = exec_cmd,
};
