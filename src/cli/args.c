/* args.c — what the commands that read a spec share: --model and --set,
 * token lists, inputs, outputs and memory, spec loading. */
#include "cli.h"

#include "../search/search.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* The ids of TEXT into OUT->ids (OUT->nseq rows of OUT->len); false
 * after a message. */
static bool scan_token_rows(const char *cmd, const char *text,
                            TokenList *out) {
  int n = 0, cap = 0, rows = 1, row_len = 0, first_len = -1;
  const char *p = text;
  for (;;) {
    while (blank(*p))
      p++;
    char *end = (char *)p;
    errno = 0;
    long v = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
    /* At most 64 MiB of text (INPUT_TEXT_MAX): n cannot overflow. */
    if (end == p || errno || v < 0 || v > INT_MAX) {
      usage_error(cmd, "--tokens: expected a token id (a non-negative "
                       "integer) at '%.24s'",
                  *p ? p : "the end");
      return false;
    }
    VEC_PUSH(out->ids, n, cap, (int)v);
    row_len++;
    for (p = end; blank(*p); p++)
      ;
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p != ';' && *p) {
      usage_error(cmd, "--tokens: unexpected '%c' (ids are separated by ',' "
                       "and rows by ';')",
                  *p);
      return false;
    }
    if (first_len >= 0 && row_len != first_len) {
      usage_error(cmd, "--tokens: row %d has %d tokens, the first has %d",
                  rows, row_len, first_len);
      return false;
    }
    first_len = row_len;
    row_len = 0;
    if (!*p || !*++p) /* the end, or a trailing ';' */
      break;
    rows++;
  }
  out->nseq = rows;
  out->len = first_len;
  return true;
}

bool parse_token_list(const char *cmd, const char *text, int batch,
                      TokenList *out) {
  TokenList t = {0};
  bool ok = scan_token_rows(cmd, text, &t);
  int n = t.nseq * t.len;
  if (ok && t.nseq > 1 && batch && batch != t.nseq) {
    usage_error(cmd, "--batch %d, but --tokens has %d rows", batch, t.nseq);
    ok = false;
  }
  if (ok) {
    batch = t.nseq > 1 ? t.nseq : batch ? batch : 1;
    if (n % batch) {
      usage_error(cmd, "--tokens: %d tokens do not split into %d sequences",
                  n, batch);
      ok = false;
    }
  }
  if (!ok) {
    free(t.ids);
    return false;
  }
  *out = (TokenList){t.ids, batch, n / batch};
  return true;
}


static bool parse_setting(const char *s, Setting *out) {
  const char *eq = strchr(s, '=');
  return eq && eq != s && parse_decimal(eq + 1, &out->value);
}

bool spec_set(SpecOpts *o, const char *name, size_t len, double value) {
  Setting st = {arena_strndup(&o->names, name, len), value};
  VEC_PUSH(o->sets, o->nsets, o->sets_cap, st);
  return true;
}

static void spec_opts_fini(void *base) {
  SpecOpts *o = base;
  free(o->sets);
  arena_free(&o->names);
}

int parse_set(const char *cmd, const char *val, void *field) {
  SpecOpts *o = field;
  Setting st;
  if (!parse_setting(val, &st))
    return usage_error(cmd,
                       "--set expects NAME=NUMBER (a plain decimal number "
                       "such as 16, 2.5 or 1e3), got '%s'",
                       val);
  /* The name must be NUL-terminated: copy it out of argv. */
  spec_set(o, val, (size_t)(strchr(val, '=') - val), st.value);
  return 0;
}

static const Opt spec_opts[] = {
    /* after the command's own positionals (export FORMAT SPEC) */
    {"SPEC", OPT_STRING, offsetof(SpecOpts, spec), NULL,
     .flags = OPT_POSITIONAL},
    {"--model", OPT_STRING, offsetof(SpecOpts, model), "M",
     .help = "model preset for the shape (default: the spec's)"},
    {"--set", OPT_CUSTOM, 0, "NAME=V",
     .help = "override a rank size or parameter (repeatable)",
     .flags = OPT_REPEAT,
     .parse = parse_set},
};
/* The spec and what it includes join the run's inputs (SpecOpts). */
static void spec_opts_inputs(void *base, InputSet *in) {
  ((SpecOpts *)base)->inputs = in;
}

const OptTable spec_options = {spec_opts,
                               (int)(sizeof spec_opts / sizeof spec_opts[0]),
                               spec_opts_fini, spec_opts_inputs};

static const char *phase_name(int i) {
  return i == PHASE_DECODE ? "decode" : "prefill";
}
const OptChoices phase_choices = {"phase", phase_name, 2, NULL, false};

/* ---- shipped names and paths ---- */

const char *input_path(const char *dir, const char *name) {
  /* NULL, a default, is shipped. */
  return name && !embedded_named(dir, name) ? name : NULL;
}

/* The source NAME stands for (embed.h's rule: a bare name is the shipped
 * file), with a warning when a file of that name is here too: the user may
 * have meant it (./NAME says so). */
static bool open_source(const char *dir, const char *name, Source *src,
                        Diag *d) {
  if (!source_open(dir, name, src, d))
    return false;
  struct stat st;
  if (src->shipped && name && stat(name, &st) == 0 && !S_ISDIR(st.st_mode)) {
    Buf b = {0};
    buf_escaped(&b, name);
    fprintf(stderr,
            "mambalaya: warning: '%s' is the shipped %s (%s); write ./%s "
            "for the file in this directory\n",
            b.s, strcmp(dir, "specs") ? "architecture" : "spec", src->path,
            b.s);
    buf_free(&b);
  }
  return true;
}

/* The source of the spec (DIR "specs") or architecture ("archs") NAME,
 * parsed by PARSE. */
static void *open_parsed(const char *dir, const char *name, Diag *d,
                         void *(*parse)(const char *path, const char *text,
                                        size_t len, Diag *d)) {
  Source src;
  if (!open_source(dir, name, &src, d))
    return NULL;
  void *parsed = parse(src.path, src.text, src.len, d);
  source_free(&src);
  return parsed;
}

static void *parse_spec(const char *path, const char *text, size_t len,
                        Diag *d) {
  return spec_open_text(path, text, len, d);
}

void print_arch_notes(const char *path, const char *notes) {
  for (const char *s = notes; *s;) {
    const char *nl = strchr(s, '\n');
    fprintf(stderr, "%s: note: %.*s\n", path, (int)(nl - s), s);
    s = nl + 1;
  }
}

/* An architecture, its loading's notes on stderr. */
static void *parse_arch(const char *path, const char *text, size_t len,
                        Diag *d) {
  Arch *a = arch_parse(path, text, len, d);
  if (a)
    print_arch_notes(path, a->notes);
  return a;
}

Spec *open_spec_doc(const char *name, Diag *d) {
  return open_parsed("specs", name, d, parse_spec);
}

Cascade *open_spec(const char *name, Diag *d) {
  return open_spec_set(name, NULL, d);
}

Cascade *open_spec_set(const char *name, const SpecOpts *o, Diag *d) {
  Source src;
  if (!open_source("specs", name, &src, d))
    return NULL;
  SpecLoad l = {.sets = o ? o->sets : NULL, .nsets = o ? o->nsets : 0,
                .notes = stderr, .read = o ? o->inputs : NULL};
  if (!src.shipped)
    inputset_add(l.read, src.path);
  Cascade *c = spec_parse_with(src.path, src.text, src.len, &l, d);
  source_free(&src);
  return c;
}

Arch *open_arch(const char *name, Diag *d) {
  return open_parsed("archs", name, d, parse_arch);
}

/* ---- outputs and memory ---- */

int check_output(const char *cmd, const char *path,
                 const char *const *inputs, int n) {
  Diag d = {0};
  if (!output_check(path, &d))
    return input_failed(&d);
  for (int i = 0; i < n; i++)
    if (inputs[i] && same_file(path, inputs[i]))
      return usage_error(cmd, "refusing to write %s: it is the input %s",
                         path, inputs[i]);
  return 0;
}

int write_output(const char *cmd, const char *path, const void *data,
                 size_t len, const InputSet *in) {
  Diag d = {0};
  bool refused;
  if (output_write(path, data, len, in, &refused, &d))
    return 0;
  Buf b = {0};
  buf_escaped(&b, path);
  buf_printf(&b, ": ");
  buf_escaped(&b, d.msg);
  fprintf(stderr, "%s: %s\n", cmd, b.s);
  buf_free(&b);
  return refused ? EXIT_INPUT : EXIT_RUN;
}

int write_safetensors(const char *cmd, const char *path, StWriter *w,
                      const InputSet *in) {
  size_t len;
  unsigned char *img = st_writer_image(w, &len);
  st_writer_free(w);
  int status = write_output(cmd, path, img, len, in);
  free(img);
  return status;
}

double memory_budget(double max_memory) {
  if (max_memory > 0)
    return max_memory;
  uint64_t m = memory_available();
  return m ? (double)m : INFINITY;
}

int check_memory(const char *cmd, const char *what, double need,
                 double budget, bool given) {
  if (need <= budget)
    return 0;
  Buf n = {0}, b = {0};
  buf_bytes(&n, need);
  buf_bytes(&b, budget);
  usage_error(cmd, "%s needs %s of memory, more than the %s %s", what, n.s,
              b.s,
              given ? "that --max-memory allows"
                    : "this machine has available (see --max-memory)");
  buf_free(&n);
  buf_free(&b);
  return EXIT_INPUT;
}

int input_failed(const Diag *d) {
  diag_print(d, stderr);
  return EXIT_INPUT;
}

/* ---- loading a spec ---- */

/* The preset --model (else the spec's own) names, into *P (NULL: none);
 * false after a message. */
static bool find_preset(const SpecOpts *o, const Cascade *c,
                        const Preset **p) {
  const char *model = o->model ? o->model : c->model;
  *p = model ? preset_find(model) : NULL;
  if (!model || *p)
    return true;
  Buf b = {0};
  buf_printf(&b, "mambalaya: unknown model '");
  buf_escaped(&b, model);
  buf_printf(&b, "' (");
  Nearest near = nearest_start(model);
  for (int i = 0; preset_at(i); i++)
    nearest_offer(&near, preset_at(i)->sizes.name);
  buf_did_you_mean(&b, &near);
  buf_printf(&b, "expected one of");
  for (int i = 0; preset_at(i); i++)
    buf_printf(&b, "%s %s", i ? "," : "", preset_at(i)->sizes.name);
  fprintf(stderr, "%s)\n", b.s);
  buf_free(&b);
  return false;
}

/* Every --set names something of the spec, and the preset is of the
 * spec's Mamba version; false after a message. */
static bool check_settings(const SpecOpts *o, const Cascade *c,
                           const Preset *preset) {
  for (int i = 0; i < o->nsets; i++)
    if (!shape_setting_known(c, o->sets[i].name) &&
        !preset_is_param(o->sets[i].name)) {
      Buf b = {0}, sp = {0};
      buf_escaped(&b, o->sets[i].name);
      buf_escaped(&sp, o->spec);
      fprintf(stderr,
              "mambalaya: --set %s: not a rank, parameter or model parameter "
              "of %s\n",
              b.s, sp.s);
      buf_free(&b);
      buf_free(&sp);
      return false;
    }
  const Preset *own = preset && c->model ? preset_find(c->model) : NULL;
  if (own && own->version != preset->version) {
    fprintf(stderr,
            "mambalaya: %s is written for Mamba-%d models (its model is "
            "%s), but %s is a Mamba-%d model: pick a matching --model, or "
            "give the sizes with --set\n",
            o->spec, own->version, own->sizes.name, preset->sizes.name,
            preset->version);
    return false;
  }
  return true;
}

/* --phase decode: the sequence rank set to 1 in SETS (*N of them, room
 * for one more); false after a message. */
static bool decode_setting(const SpecOpts *o, const Cascade *c, Setting *sets,
                           int *n) {
  int r = cascade_sequence_rank(c);
  if (r < 0) {
    fprintf(stderr,
            "mambalaya: --phase decode: %s has no sequence rank (no "
            "recurrence, no rank I): name it with 'sequence: RANK'\n",
            o->spec);
    return false;
  }
  const char *rn = c->ranks[r].name;
  for (int i = 0; i < *n; i++)
    if (strcmp(sets[i].name, rn) == 0 && sets[i].value != 1) {
      fprintf(stderr,
              "mambalaya: --phase decode sets the sequence rank %s to 1, "
              "but --set %s=%g asks for %g: drop one of them\n",
              rn, rn, sets[i].value, sets[i].value);
      return false;
    }
  sets[(*n)++] = (Setting){rn, 1};
  return true;
}

/* C's shape from O; NULL after a message. */
static Shape *bind_shape(const char *cmd, const SpecOpts *o, const Cascade *c,
                         bool complete) {
  const Preset *preset;
  Setting *sets = xcalloc((size_t)o->nsets + 1, sizeof *sets);
  int nsets = o->nsets;
  for (int i = 0; i < nsets; i++)
    sets[i] = o->sets[i];
  Shape *s = NULL;
  Diag d = {0};
  if (find_preset(o, c, &preset) && check_settings(o, c, preset) &&
      (o->phase != PHASE_DECODE || decode_setting(o, c, sets, &nsets)))
    s = shape_bind(c, preset ? &preset->sizes : NULL, sets, nsets,
                   c->has_shape, &d);
  free(sets);
  if (!s) {
    if (d.failed)
      diag_print(&d, stderr);
  } else if (complete && !s->complete) {
    fprintf(stderr, "%s: %s has ranks without sizes: give a shape section "
                    "or --set RANK=N\n",
            cmd, o->spec);
    shape_free(s);
    s = NULL;
  }
  return s;
}

int load_spec(const char *cmd, const SpecOpts *o, bool complete,
              Cascade **c, Shape **s) {
  Diag d = {0};
  *c = open_spec_set(o->spec, o, &d);
  if (!*c)
    return input_failed(&d);
  *s = bind_shape(cmd, o, *c, complete);
  if (*s)
    return 0;
  cascade_free(*c);
  *c = NULL;
  return EXIT_INPUT;
}

int load_spec_arch(const char *cmd, const SpecOpts *o, const char *arch_name,
                   bool complete, Arch **a, Cascade **c, Shape **s) {
  Diag d = {0};
  if (!(*a = open_arch(arch_name, &d)))
    return input_failed(&d);
  inputset_add(o->inputs, input_path("archs", arch_name));
  int status = load_spec(cmd, o, complete, c, s);
  if (status) {
    arch_free(*a);
    *a = NULL;
  }
  return status;
}

int spec_arch_free(Arch *a, Cascade *c, Shape *s, int status) {
  shape_free(s);
  cascade_free(c);
  arch_free(a);
  return status;
}

int default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

/* ---- the executors' options ---- */

static const Opt executor_opts[] = {
    {"--strategy", OPT_ENUM, offsetof(ExecutorOpts, strategy), "S",
     .help = "(default: interpreter, Einsum by Einsum; the others run the "
             "fused executor with that strategy's plan; all compute the same "
             "numbers)",
     .flags = OPT_LIST, .choices = &exec_strategy_choices},
    {"--plan", OPT_PATH, offsetof(ExecutorOpts, plan_file), "FILE",
     .help = "run the plan in FILE, as `fuse --json` or `search --plan-out` "
             "write it (--strategy S picks one of a file of several)"},
    {"--arch", OPT_STRING, offsetof(ExecutorOpts, arch), "ARCH",
     .help = "the architecture --strategy best searches on (default "
             "mambalaya)"},
    {"--buffer", OPT_SIZE, offsetof(ExecutorOpts, buffer), "BYTES",
     .help = "the fused executor's tile buffer (default 2MiB; suffixes k, M, "
             "G, KiB, MiB, GiB)"},
    {"--threads", OPT_INT, offsetof(ExecutorOpts, threads), "N",
     .help = "worker threads (default: the CPUs, at most 16)", .lo = 1,
     .hi = 256},
};
const OptTable executor_options = OPT_TABLE(executor_opts);

ExecutorOpts executor_defaults(void) {
  return (ExecutorOpts){.strategy = -1, .buffer = 2 << 20,
                        .threads = default_threads()};
}

const char *executor_name(const ExecutorOpts *o, char *buf, size_t n) {
  if (o->plan_file)
    snprintf(buf, n, "plan %s", o->plan_file);
  else if (o->strategy == EXEC_BEST)
    snprintf(buf, n, "best (searched on %s)", o->arch ? o->arch : "mambalaya");
  else
    snprintf(buf, n, "%s",
             o->strategy < 0 ? "interpreter" : strategy_name(o->strategy));
  return buf;
}

/* The plan `search` finds for C bound by S on O's architecture: the least
 * latency under the model's defaults. */
static Plan *searched_plan(const ExecutorOpts *o, const Cascade *c,
                           const Shape *s, const Pair *pairs, Diag *d) {
  Arch *a = open_arch(o->arch ? o->arch : "mambalaya", d);
  if (!a)
    return NULL;
  ModelOverrides ov = model_no_overrides();
  SearchResult *r = search_best(c, s, a, pairs, &ov, SO_LATENCY, NULL, d);
  Plan *p = r && r->best ? plan_copy(c, r->best->plan) : NULL;
  search_free(r);
  arch_free(a);
  return p;
}

bool executor_plan(const ExecutorOpts *o, Stitcher stitch, Objective obj,
                   const Cascade *c, const Shape *s, const Pair *pairs,
                   Plan **plan, Diag *d) {
  *plan = NULL;
  if (o->plan_file) {
    const char *pick = o->strategy >= 0 && o->strategy < ST_COUNT
                           ? strategy_name((Strategy)o->strategy)
                           : NULL;
    *plan = plan_read_file(o->plan_file, pick, c, s, d);
  } else if (o->strategy == EXEC_BEST) {
    *plan = searched_plan(o, c, s, pairs, d);
  } else if (o->strategy >= 0) {
    *plan = fusion_plan(c, s, pairs, (Strategy)o->strategy, stitch, obj, d);
  } else {
    return true;
  }
  return *plan != NULL;
}

Inputs spec_inputs(const char *command, const SpecOpts *o, const Cascade *c,
                   const Shape *s) {
  return (Inputs){.command = command,
                  .spec = o->spec,
                  .model = o->model ? o->model : c->model,
                  .nsets = o->nsets,
                  .sets = o->sets,
                  .shape = s,
                  .phase = o->phase == PHASE_DECODE ? "decode" : NULL};
}

void emit(const Buf *b) {
  if (b->len)
    fwrite(b->s, 1, b->len, stdout);
  fflush(stdout);
}

int write_trace(const Parsed *p, const char *path, const Cascade *c,
                const Arch *a, const Eval *ev) {
  json_t *t = report_trace_json(c, a, ev);
  Buf b = {0};
  report_json(&b, t);
  json_decref(t);
  int status = write_output(p->cmd, path, b.s, b.len, p->inputs);
  buf_free(&b);
  return status;
}

void emit_json(json_t *root, const Inputs *in) {
  Buf b = {0};
  report_json_with_inputs(&b, root, in);
  json_decref(root);
  emit(&b);
  buf_free(&b);
}

int parse_formats(const char *cmd, const char *list, void *field) {
  unsigned set = 0;
  char *copy = xstrdup(list), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    Format f;
    if (!format_from_name(t, &f)) {
      set = 0;
      break;
    }
    set |= 1u << f;
  }
  free(copy);
  if (!set)
    return usage_error(cmd, "--format expects a list of svg, pdf and png, "
                            "got '%s'",
                       list);
  *(unsigned *)field = set;
  return 0;
}
