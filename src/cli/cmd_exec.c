/* cmd_exec.c — `mambalaya exec SPEC`: run any cascade on real tensors,
 * with the interpreter or under a fusion plan, and compare what the
 * executor moved off chip with what the model prices for that plan. */
#include "cli.h"

#include "../exec/exec.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mambalaya exec SPEC [--inputs FILE]... [--random SEED]\n"
    "                           [--range [NAME=]LO:HI]... [--strategy S]\n"
    "                           [--stitch HOW | --plan FILE] [--model M]\n"
    "                           [--set NAME=V]... [--phase P] [--buffer B]\n"
    "                           [--threads N] [--out FILE] [--keep T,...]\n"
    "                           [--next FILE] [--check] [--tolerance X]\n"
    "                           [--max-memory B] [--json]\n"
    "\n"
    "Run the cascade in SPEC on fp32 tensors (docs/executor.md): Einsum by\n"
    "Einsum (the interpreter), or group by group under a fusion plan (the\n"
    "fused executor, which counts every byte it moves off chip). SPEC is a\n"
    "path or a shipped name (mamba1, fusemax_1pass, prenorm_decode, ...).\n"
    "\n"
    "  --inputs FILE    a safetensors file of input tensors, named as in the\n"
    "                   spec (repeatable: weights in one, activations in\n"
    "                   another); every input must come from one, or from\n"
    "  --random SEED    uniform random values for the inputs no file gives\n"
    "                   (each from SEED and its name), in [-1, 1) unless\n"
    "  --range [NAME=]LO:HI  sets the range of NAME, or of every input\n"
    "                   NAME is not given (positive for a variance:\n"
    "                   --range VAR=0.5:2)\n"
    "  --strategy S     interpreter (default), or the fused executor with the\n"
    "                   plan of unfused, ri, ri+rsb, ri+rsb+rsp or full\n"
    "  --stitch HOW     greedy (default), alg1 or global: how the plan is\n"
    "                   stitched (as for fuse)\n"
    "  --plan FILE      run the plan in FILE, as `fuse --json` writes it\n"
    "                   (--strategy S picks one of a file of several)\n"
    "  --model, --set   the sizes, as for classify; --phase decode sets the\n"
    "                   spec's sequence rank to 1\n"
    "  --buffer BYTES   the fused executor's tile buffer (default 2MiB;\n"
    "                   suffixes k, M, G, KiB, MiB, GiB)\n"
    "  --threads N      worker threads (default: the CPUs, at most 16)\n"
    "  --out FILE       write the outputs (or the --keep tensors) to FILE,\n"
    "                   atomically\n"
    "  --keep T,...     the tensors --out writes: any produced tensor or\n"
    "                   input\n"
    "  --next FILE      write the state a following pass continues from:\n"
    "                   each initialization's input (H0, a convolution's\n"
    "                   history, a KV cache grown by this pass's tokens)\n"
    "  --check          run the interpreter too and report the worst\n"
    "                   relative difference of every output (and of the next\n"
    "                   state): max |x - ref| / max |ref|; exit 1 if one\n"
    "                   exceeds the tolerance, or holds a NaN (on either\n"
    "                   side, even NaN against NaN)\n"
    "  --max-memory B   refuse (exit 2) a run whose inputs and arrays would\n"
    "                   need more memory than B (default: what the machine\n"
    "                   has available)\n"
    "  --tolerance X    for --check (default 1e-5)\n"
    "  --json           print JSON: {\"spec\", \"sizes\", \"plan\",\n"
    "                   \"outputs\", \"check\", \"traffic\": {\"tensors\":\n"
    "                   [{\"tensor\", \"read_bytes\", \"write_bytes\",\n"
    "                   \"model_read_bytes\", \"model_write_bytes\"}],\n"
    "                   ...}, \"seconds\", ...}\n"
    "\n"
    "With a plan, the bytes the executor counted are printed beside the\n"
    "model's for the same plan (its ideal accounting, the decode state\n"
    "included, in fp32 bytes): they agree tensor by tensor.\n"
    "\n"
    "examples:\n"
    "  mambalaya exec fusemax_1pass --set B=1 --set H=2 --set M1=4 "
    "--set M0=64 \\\n"
    "      --random 1 --strategy ri+rsb+rsp --check --out av.safetensors\n"
    "  mambalaya fuse mamba2_chunked --strategy full --stitch global --json "
    "> p.json\n"
    "  mambalaya exec mamba2_chunked --plan p.json --inputs in.safetensors "
    "--json\n";

enum { MAX_INPUT_FILES = 16, MAX_RANGES = 64 };

typedef struct Range {
  const char *name; /* NULL: every input */
  double lo, hi;
} Range;

typedef struct ExecArgs {
  SpecOpts spec;
  const char *inputs[MAX_INPUT_FILES];
  int ninputs;
  bool random;
  uint64_t seed;
  Range ranges[MAX_RANGES];
  int nranges;
  bool fused;
  Strategy strategy;
  Stitcher stitch;
  bool stitch_given;
  const char *plan_file, *out, *next, *keep;
  double buffer;
  int threads;
  bool check;
  double tolerance;
  double max_memory; /* --max-memory; 0: what the machine has */
} ExecArgs;

/* ---- options ---- */

static bool parse_range(const char *s, Range *r) {
  const char *eq = strchr(s, '='), *num = eq ? eq + 1 : s;
  char *end;
  errno = 0;
  r->lo = strtod(num, &end);
  if (errno || end == num || *end != ':' || !isfinite(r->lo))
    return false;
  const char *h = end + 1;
  r->hi = strtod(h, &end);
  if (errno || end == h || *end || !isfinite(r->hi) || r->hi < r->lo)
    return false;
  r->name = NULL;
  if (eq) {
    if (eq == s)
      return false;
    r->name = s; /* NAME=..., cut at the '=' when matched */
  }
  return true;
}

/* Does range R name tensor NAME? */
static bool range_names(const Range *r, const char *name) {
  size_t n = (size_t)(strchr(r->name, '=') - r->name);
  return strlen(name) == n && strncmp(r->name, name, n) == 0;
}

static int exec_opt(Args *a, ExecArgs *o, bool *handled) {
  *handled = true;
  int err = 0;
  static const char *const with_value[] = {
      "--inputs", "--random",    "--range",   "--strategy", "--stitch",
      "--plan",   "--buffer",    "--threads", "--out",      "--keep",
      "--next",   "--tolerance", "--phase",   "--max-memory"};
  size_t k = 0, nk = sizeof with_value / sizeof with_value[0];
  while (k < nk && !args_is(a, with_value[k]))
    k++;
  if (args_is(a, "--check")) {
    o->check = true;
    return 0;
  }
  if (k == nk) {
    *handled = false;
    return 0;
  }
  if (!args_value(a))
    return EXIT_INPUT;
  const char *v = a->val;
  long n;
  if (args_is(a, "--inputs")) {
    if (o->ninputs == MAX_INPUT_FILES)
      return usage_error(a, "at most %d --inputs files", MAX_INPUT_FILES);
    o->inputs[o->ninputs++] = v;
  } else if (args_is(a, "--random")) {
    char *end;
    errno = 0;
    unsigned long long s = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-')
      return usage_error(a,
                         "--random expects a seed (a non-negative "
                         "integer), got '%s'",
                         v);
    o->random = true;
    o->seed = s;
  } else if (args_is(a, "--range")) {
    if (o->nranges == MAX_RANGES)
      return usage_error(a, "at most %d --range options", MAX_RANGES);
    if (!parse_range(v, &o->ranges[o->nranges]))
      return usage_error(a,
                         "--range expects [NAME=]LO:HI with LO <= HI, "
                         "got '%s'",
                         v);
    o->nranges++;
  } else if (args_is(a, "--strategy")) {
    o->fused = strcmp(v, "interpreter") != 0;
    if (o->fused && !strategy_from_name(v, &o->strategy))
      return usage_error(a,
                         "unknown strategy '%s' (expected interpreter, "
                         "unfused, ri, ri+rsb, ri+rsb+rsp or full)",
                         v);
  } else if (args_is(a, "--stitch")) {
    if (!stitcher_from_name(v, &o->stitch))
      return usage_error(
          a, "unknown stitcher '%s' (expected greedy, alg1 or global)", v);
    o->stitch_given = true;
  } else if (args_is(a, "--plan")) {
    o->plan_file = v;
  } else if (args_is(a, "--buffer")) {
    if (!parse_bytes(v, &o->buffer) || o->buffer < 1)
      return usage_error(a,
                         "--buffer expects a size in bytes (e.g. 2MiB), "
                         "got '%s'",
                         v);
  } else if (args_is(a, "--threads")) {
    if (!parse_count(v, 1, 256, &n))
      return usage_error(a, "--threads expects 1 to 256, got '%s'", v);
    o->threads = (int)n;
  } else if (args_is(a, "--out")) {
    o->out = v;
  } else if (args_is(a, "--keep")) {
    o->keep = v;
  } else if (args_is(a, "--next")) {
    o->next = v;
  } else if (args_is(a, "--max-memory")) {
    if (!parse_bytes(v, &o->max_memory) || !(o->max_memory >= 1))
      return usage_error(a, "--max-memory expects a size in bytes (e.g. "
                            "8GiB), got '%s'",
                         v);
  } else if (args_is(a, "--tolerance")) {
    char *end;
    errno = 0;
    o->tolerance = strtod(v, &end);
    if (errno || end == v || *end || !(o->tolerance >= 0) ||
        !isfinite(o->tolerance))
      return usage_error(a, "--tolerance expects a number >= 0, got '%s'", v);
  } else { /* --phase */
    if (strcmp(v, "prefill") && strcmp(v, "decode"))
      return usage_error(a, "--phase expects prefill or decode, got '%s'", v);
    o->spec.decode = strcmp(v, "decode") == 0;
  }
  return err;
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

/* The inputs the files give, and each --range naming an input. Exit
 * status, 0 on success. */
static int read_input_files(const ExecArgs *o, const Cascade *c,
                            const Shape *s, Tensors *in) {
  Diag d = {0};
  for (int i = 0; i < o->ninputs; i++)
    if (!read_inputs(c, s, o->inputs[i], in, &d)) {
      diag_print(&d, stderr);
      return EXIT_INPUT;
    }
  for (int i = 0; i < o->nranges; i++) {
    const Range *r = &o->ranges[i];
    if (!r->name)
      continue;
    bool found = false;
    for (int t = 0; !found && t < c->ntensors; t++)
      found = needed_input(c, t) && range_names(r, c->tensors[t].name);
    if (!found) {
      fprintf(stderr, "mambalaya exec: --range %s: not an input of %s\n",
              r->name, c->path);
      return EXIT_INPUT;
    }
  }
  return 0;
}

/* The inputs no file gave: random (with --random). Exit status, 0 on
 * success. */
static int random_inputs(const ExecArgs *o, const Cascade *c, const Shape *s,
                         Tensors *in) {
  Diag d = {0};
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (!needed_input(c, t) || tensors_get(in, T->name))
      continue;
    if (!o->random) {
      diag_error(&d, c->path, T->loc,
                 "no value for the input %s: give it in an --inputs file, "
                 "or use --random SEED",
                 T->name);
      diag_print(&d, stderr);
      return EXIT_INPUT;
    }
    /* The last --range naming it, else the last for every input. */
    double lo = -1, hi = 1;
    bool named = false;
    for (int i = 0; i < o->nranges; i++) {
      const Range *r = &o->ranges[i];
      bool mine = r->name && range_names(r, T->name);
      if (mine || (!r->name && !named)) {
        lo = r->lo;
        hi = r->hi;
        named = named || mine;
      }
    }
    int64_t shape[IR_MAX_RANKS];
    shape_of(c, s, t, shape);
    Array *a = random_array(T->nranks, shape, o->seed, T->name, lo, hi);
    if (!a) {
      fprintf(stderr, "mambalaya exec: input %s is too large\n", T->name);
      return EXIT_INPUT;
    }
    tensors_put(in, T->name, a, true);
  }
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

/* The model's bytes of tensor T in fp32, what the executor moves. */
static double model_bytes(const ExecResult *r, int t, bool write) {
  return 4 * (write ? r->ev->tensor_write[t] : r->ev->tensor_read[t]) / r->word;
}

static json_t *shape_json(const Array *a) {
  json_t *j = json_array();
  for (int k = 0; k < a->ndim; k++)
    json_array_append_new(j, json_integer(a->shape[k]));
  return j;
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
  json_t *outs = json_array();
  for (int i = 0; i < r->written->n; i++) {
    json_t *o = json_object();
    json_object_set_new(o, "tensor", json_string(r->written->names[i]));
    json_object_set_new(o, "shape", shape_json(r->written->arrays[i]));
    json_array_append_new(outs, o);
  }
  json_object_set_new(root, "outputs", outs);
  json_object_set_new(root, "out",
                      r->o->out ? json_string(r->o->out) : json_null());
  if (r->o->check) {
    json_t *chk = json_array();
    for (int i = 0; i < r->ndiffs; i++) {
      json_t *o = json_object();
      json_object_set_new(o, "tensor", json_string(r->diffs[i].name));
      json_object_set_new(o, "next_state", json_boolean(r->diffs[i].state));
      json_object_set_new(o, "max_rel_diff",
                          isfinite(r->diffs[i].rel)
                              ? report_real(r->diffs[i].rel)
                              : json_string(isnan(r->diffs[i].rel) ? "nan"
                                                                   : "inf"));
      json_array_append_new(chk, o);
    }
    json_object_set_new(root, "check", chk);
    json_object_set_new(root, "tolerance", report_real(r->o->tolerance));
  }
  if (r->plan) {
    json_t *tr = json_object(), *rows = json_array();
    double sum[4] = {0, 0, 0, 0};
    for (int t = 0; t < c->ntensors; t++) {
      double v[4] = {r->st->read[t], r->st->write[t], model_bytes(r, t, 0),
                     model_bytes(r, t, 1)};
      if (v[0] + v[1] + v[2] + v[3] == 0)
        continue;
      json_t *o = json_object();
      json_object_set_new(o, "tensor", json_string(c->tensors[t].name));
      json_object_set_new(o, "intermediate",
                          json_boolean(tensor_is_intermediate(c, t)));
      json_object_set_new(o, "read_bytes", report_real(v[0]));
      json_object_set_new(o, "write_bytes", report_real(v[1]));
      json_object_set_new(o, "model_read_bytes", report_real(v[2]));
      json_object_set_new(o, "model_write_bytes", report_real(v[3]));
      json_array_append_new(rows, o);
      for (int k = 0; k < 4; k++)
        sum[k] += v[k];
    }
    json_object_set_new(tr, "tensors", rows);
    json_object_set_new(tr, "read_bytes", report_real(sum[0]));
    json_object_set_new(tr, "write_bytes", report_real(sum[1]));
    json_object_set_new(tr, "model_read_bytes", report_real(sum[2]));
    json_object_set_new(tr, "model_write_bytes", report_real(sum[3]));
    json_object_set_new(tr, "offchip_intermediate_bytes",
                        report_real(4 * r->plan->offchip_elems));
    json_object_set_new(root, "traffic", tr);
    json_object_set_new(root, "peak_bytes", report_real(r->st->peak_bytes));
  }
  json_object_set_new(root, "seconds", report_real(r->seconds));
  return root;
}

static void result_text(Buf *b, const ExecResult *r) {
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
  if (!r->plan)
    return;
  buf_printf(b, "off-chip bytes, counted by the executor | the model's "
                "ideal accounting (fp32):\n");
  buf_printf(b, "  %-12s %14s %14s | %14s %14s\n", "tensor", "read", "write",
             "read", "write");
  double sum[4] = {0, 0, 0, 0};
  for (int t = 0; t < c->ntensors; t++) {
    double v[4] = {r->st->read[t], r->st->write[t], model_bytes(r, t, 0),
                   model_bytes(r, t, 1)};
    if (v[0] + v[1] + v[2] + v[3] == 0)
      continue;
    buf_printf(b, "  %-12s %14.0f %14.0f | %14.0f %14.0f%s\n",
               c->tensors[t].name, v[0], v[1], v[2], v[3],
               v[0] == v[2] && v[1] == v[3] ? "" : "  differs");
    for (int k = 0; k < 4; k++)
      sum[k] += v[k];
  }
  buf_printf(b, "  %-12s %14.0f %14.0f | %14.0f %14.0f\n", "total", sum[0],
             sum[1], sum[2], sum[3]);
  buf_printf(b, "  peak tensor memory %.0f bytes\n", r->st->peak_bytes);
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

static bool save(const Tensors *t, const char *path, const Cascade *c,
                 const char *executor) {
  StWriter *w = st_writer_new();
  for (int i = 0; i < t->n; i++)
    st_writer_add(w, t->names[i], t->arrays[i], DT_F32);
  st_writer_meta(w, "spec", c->path);
  st_writer_meta(w, "executor", executor);
  Diag d = {0};
  bool ok = st_writer_save(w, path, &d);
  st_writer_free(w);
  if (!ok)
    diag_print(&d, stderr);
  return ok;
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
  Pair *pairs = fusion_classify(c, s);
  Eval *ev = model_eval_plan(c, s, a, pairs, des, plan, &mo, &d);
  if (!ev)
    diag_print(&d, stderr);
  *word = a->word_bytes;
  free(pairs);
  arch_free(a);
  return ev;
}

/* Refuse, before any input is made, a run whose inputs, arrays
 * (exec_bytes: every tensor for the interpreter, or the plan's off-chip
 * tensors and tile buffer) and --check's reference run exceed the
 * budget: what `run` does for a language model. */
static int check_exec_memory(const ExecArgs *o, const Cascade *c,
                             const Shape *s, const Plan *plan) {
  double need = exec_bytes(c, s, plan, o->buffer);
  for (int t = 0; t < c->ntensors; t++)
    if (needed_input(c, t))
      need += 4 * shape_tensor_elems(s, t);
  if (o->check)
    need += exec_bytes(c, s, NULL, 0);
  Args a = {.cmd = "mambalaya exec"};
  return check_memory(&a, "this run", need, memory_budget(o->max_memory),
                      o->max_memory > 0);
}

static int run(const ExecArgs *o, const Cascade *c, const Shape *s) {
  Tensors in = {0}, res = {0}, next = {0}, written = {0};
  Plan *plan = NULL;
  Eval *ev = NULL;
  ExecStats st = {0};
  Pool *pool = NULL;
  ExecResult r = {.c = c, .s = s, .o = o, .written = &written};
  Diag d = {0};
  int status = 0;
  if (o->plan_file) {
    plan = plan_read_file(o->plan_file,
                          o->fused ? strategy_name(o->strategy) : NULL, c, s,
                          &d);
    if (!plan) {
      diag_print(&d, stderr);
      status = EXIT_INPUT;
      goto done;
    }
  } else if (o->fused) {
    Pair *pairs = fusion_classify(c, s);
    plan = fusion_plan(c, s, pairs, o->strategy, o->stitch, OBJ_TRAFFIC, &d);
    free(pairs);
    if (!plan) {
      diag_print(&d, stderr);
      status = EXIT_INPUT;
      goto done;
    }
  }
  if ((status = read_input_files(o, c, s, &in)) ||
      (status = check_exec_memory(o, c, s, plan)) ||
      (status = random_inputs(o, c, s, &in)))
    goto done;
  r.plan = plan;
  pool = pool_new(o->threads);
  ExecOpts eo = {.plan = plan,
                 .buffer_bytes = o->buffer,
                 .pool = pool,
                 .keep_all = o->keep != NULL};
  double t0 = now_seconds();
  if (!exec_run(c, s, &in, &eo, &res, o->next ? &next : NULL,
                plan ? &st : NULL, &d)) {
    diag_print(&d, stderr);
    status = EXIT_RUN;
    goto done;
  }
  r.seconds = now_seconds() - t0;
  r.st = &st;
  if ((status = pick_written(o, c, &in, &res, &written)))
    goto done;
  r.next = o->next ? &next : NULL;
  if (o->check && !check(c, s, &in, pool, &res, r.next, &r)) {
    status = EXIT_RUN;
    goto done;
  }
  if (plan) {
    r.plan_json = report_plan_json(c, plan);
    ev = model_of(c, s, plan, &r.word); /* takes the plan */
    r.plan = ev ? ev->plan : NULL;
    plan = NULL;
    if (!ev) {
      status = EXIT_INPUT;
      goto done;
    }
    r.ev = ev;
  }
  if ((o->out &&
       !save(&written, o->out, c, r.plan ? "fused" : "interpreter")) ||
      (o->next && !save(&next, o->next, c, "next state"))) {
    status = EXIT_RUN;
    goto done;
  }
  Buf b = {0};
  if (o->spec.json) {
    json_t *j = result_json(&r);
    report_json(&b, j);
    json_decref(j);
  } else {
    result_text(&b, &r);
  }
  emit(&b);
  buf_free(&b);
  for (int i = 0; i < r.ndiffs; i++)
    if (isnan(r.diffs[i].rel)) {
      fprintf(stderr,
              "mambalaya exec: %s holds a NaN (in this run, the "
              "interpreter's or both): a NaN is never a match\n",
              r.diffs[i].name);
      status = EXIT_RUN;
    } else if (!(r.diffs[i].rel <= o->tolerance)) {
      fprintf(stderr,
              "mambalaya exec: %s differs from the interpreter by %g, more "
              "than the tolerance %g\n",
              r.diffs[i].name, r.diffs[i].rel, o->tolerance);
      status = EXIT_RUN;
    }
done:
  json_decref(r.plan_json);
  free(r.diffs);
  eval_free(ev);
  plan_free(plan);
  exec_stats_free(&st);
  pool_free(pool);
  tensors_free(&written); /* borrowed arrays */
  tensors_free(&in);
  tensors_free(&res);
  tensors_free(&next);
  return status;
}

int cmd_exec(int argc, char **argv) {
  Args a = {.cmd = "mambalaya exec", .argc = argc, .argv = argv, .i = 1};
  ExecArgs o = {
      .buffer = 2 << 20, .threads = default_threads(), .tolerance = 1e-5};
  int k, err;
  while ((k = args_next(&a)) > 0) {
    bool handled;
    if (k == 2) {
      if (o.spec.spec)
        return args_unknown(&a);
      o.spec.spec = a.val;
    } else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if ((err = exec_opt(&a, &o, &handled)) || handled) {
      if (err)
        return err;
    } else if (spec_opt(&a, &o.spec, &err)) {
      if (err)
        return err;
    } else {
      return args_unknown(&a);
    }
  }
  if (k < 0)
    return EXIT_INPUT;
  if (!o.spec.spec)
    return usage_error(&a, "missing SPEC (see mambalaya exec --help)");
  if (o.plan_file && o.stitch_given)
    return usage_error(&a, "--plan gives the plan: drop --stitch");
  if (o.stitch_given && !o.fused)
    return usage_error(&a, "--stitch needs a --strategy other than the "
                           "interpreter");
  if (o.check && !o.fused && !o.plan_file)
    return usage_error(&a, "--check compares a plan with the interpreter: "
                           "give --strategy or --plan");
  if (o.keep && !o.out)
    return usage_error(&a, "--keep says what --out writes: give --out FILE");
  /* Outputs that cannot be written, or would overwrite an input: refused
   * before any work. */
  const char *in[MAX_INPUT_FILES + 2];
  int nin = 0;
  in[nin++] = input_path("specs", o.spec.spec);
  in[nin++] = o.plan_file;
  for (int i = 0; i < o.ninputs; i++)
    in[nin++] = o.inputs[i];
  const char *outs[2] = {o.out, o.next};
  for (int i = 0; i < 2; i++)
    if (outs[i] && (err = check_output(&a, outs[i], in, nin)))
      return err;
  if (o.out && o.next && (strcmp(o.out, o.next) == 0 || same_file(o.out, o.next)))
    return usage_error(&a, "--out and --next name the same file");
  Cascade *c;
  Shape *s;
  if ((err = load_spec(&o.spec, &c, &s)))
    return err;
  int status;
  if (!s->complete) {
    fprintf(stderr,
            "mambalaya exec: %s has ranks without sizes: give a "
            "shape section or --set RANK=N\n",
            o.spec.spec);
    status = EXIT_INPUT;
  } else {
    status = run(&o, c, s);
  }
  shape_free(s);
  cascade_free(c);
  return status;
}
