/* args.c — option scanning and spec loading shared by the commands. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A flag given a value (--json=no): the command took the option without
 * asking for its value. */
static bool value_ignored(const Args *a) {
  if (!a->opt || !a->inline_val || a->val_taken)
    return false;
  Buf b = {0};
  buf_escaped(&b, a->opt);
  fprintf(stderr, "%s: option %s takes no value (see %s --help)\n", a->cmd,
          b.s, a->cmd);
  buf_free(&b);
  return true;
}

int args_next(Args *a) {
  if (value_ignored(a))
    return -1;
  if (a->i >= a->argc)
    return 0;
  const char *s = a->argv[a->i++];
  a->inline_val = false;
  a->val_taken = false;
  a->val = NULL;
  a->opt = NULL;
  if (s[0] == '-' && s[1]) {
    const char *eq = s[1] == '-' ? strchr(s, '=') : NULL;
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    if (n >= sizeof a->optbuf)
      n = sizeof a->optbuf - 1;
    memcpy(a->optbuf, s, n);
    a->optbuf[n] = 0;
    a->opt = a->optbuf;
    if (eq) {
      a->val = eq + 1;
      a->inline_val = true;
    }
    return 1;
  }
  a->val = s;
  return 2;
}

bool args_is(const Args *a, const char *name) {
  return a->opt && strcmp(a->opt, name) == 0;
}

bool args_value(Args *a) {
  a->val_taken = true;
  if (a->inline_val)
    return true;
  if (a->i >= a->argc) {
    fprintf(stderr, "%s: option %s needs a value (see %s --help)\n", a->cmd,
            a->opt, a->cmd);
    return false;
  }
  a->val = a->argv[a->i++];
  return true;
}

int args_unknown(const Args *a) {
  if (a->val && !a->opt)
    return usage_error(a, "unexpected argument '%s' (see %s --help)", a->val,
                       a->cmd);
  return usage_error(a, "unknown option '%s' (see %s --help)", a->opt,
                     a->cmd);
}

int usage_error(const Args *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  Buf b = {0};
  buf_escaped(&b, msg); /* a value with a newline stays on one line */
  fprintf(stderr, "%s: %s\n", a->cmd, b.s);
  buf_free(&b);
  return EXIT_INPUT;
}

/* ---- numbers ---- */

bool parse_count(const char *s, long lo, long hi, long *out) {
  double v;
  if (!parse_decimal(s, &v) || v != floor(v) || v < (double)lo ||
      v > (double)hi)
    return false;
  *out = (long)v;
  return true;
}

bool parse_bytes(const char *s, double *out) {
  static const struct {
    const char *suffix;
    double scale;
  } units[] = {{"", 1},          {"B", 1},           {"k", 1e3},
               {"K", 1024},      {"KiB", 1024},      {"M", 1e6},
               {"MiB", 1 << 20}, {"G", 1e9},         {"GiB", 1 << 30},
               {"T", 1e12},      {"TiB", 0x1p40}};
  while (*s == ' ')
    s++;
  size_t n = decimal_length(s);
  char num[64];
  if (n == 0 || n >= sizeof num || s[0] == '-')
    return false;
  memcpy(num, s, n);
  num[n] = 0;
  double v;
  if (!parse_decimal(num, &v))
    return false;
  const char *unit = s + n;
  while (*unit == ' ')
    unit++;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(unit, units[i].suffix) == 0) {
      *out = v * units[i].scale;
      return isfinite(*out);
    }
  return false;
}

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

bool parse_token_list(const Args *a, const char *text, int batch,
                      TokenList *out) {
  const char *s = text;
  int n = 0, cap = 0, rows = 1, row_len = 0, first_len = -1;
  int *ids = NULL;
  const char *p = s;
  for (;;) {
    while (blank(*p))
      p++;
    char *end = (char *)p;
    errno = 0;
    long v = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
    if (end == p || errno || v < 0 || v > INT_MAX) {
      usage_error(a, "--tokens: expected a token id (a non-negative "
                     "integer) at '%.24s'",
                  *p ? p : "the end");
      free(ids);
      return false;
    }
    if (n == INT_MAX) {
      usage_error(a, "--tokens: more than %d tokens", INT_MAX);
      free(ids);
      return false;
    }
    VEC_PUSH(ids, n, cap, (int)v);
    row_len++;
    p = end;
    while (blank(*p))
      p++;
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p == ';' || !*p) {
      if (first_len >= 0 && row_len != first_len) {
        usage_error(a, "--tokens: row %d has %d tokens, the first has %d",
                    rows, row_len, first_len);
        free(ids);
        return false;
      }
      first_len = row_len;
      row_len = 0;
      if (!*p)
        break;
      p++;
      if (!*p)
        break; /* a trailing ';' */
      rows++;
      continue;
    }
    usage_error(a, "--tokens: unexpected '%c' (ids are separated by ',' "
                   "and rows by ';')",
                *p);
    free(ids);
    return false;
  }
  if (rows > 1 && batch && batch != rows) {
    usage_error(a, "--batch %d, but --tokens has %d rows", batch, rows);
    free(ids);
    return false;
  }
  batch = rows > 1 ? rows : batch ? batch : 1;
  if (n % batch) {
    usage_error(a, "--tokens: %d tokens do not split into %d sequences", n,
                batch);
    free(ids);
    return false;
  }
  *out = (TokenList){ids, batch, n / batch};
  return true;
}


static bool parse_setting(const char *s, Setting *out) {
  const char *eq = strchr(s, '=');
  return eq && eq != s && parse_decimal(eq + 1, &out->value);
}

bool spec_set(SpecOpts *o, const char *name, size_t len, double value) {
  if (o->nsets == MAX_SETS || len >= sizeof o->set_names[0])
    return false;
  memcpy(o->set_names[o->nsets], name, len);
  o->set_names[o->nsets][len] = 0;
  o->sets[o->nsets] = (Setting){o->set_names[o->nsets], value};
  o->nsets++;
  return true;
}

bool spec_opt(Args *a, SpecOpts *o, int *err) {
  *err = 0;
  if (args_is(a, "--json")) {
    o->json = true;
    return true;
  }
  if (args_is(a, "--model")) {
    if (!args_value(a))
      *err = EXIT_INPUT;
    else
      o->model = a->val;
    return true;
  }
  if (args_is(a, "--set")) {
    if (!args_value(a)) {
      *err = EXIT_INPUT;
      return true;
    }
    Setting st;
    if (!parse_setting(a->val, &st)) {
      *err = usage_error(a,
                         "--set expects NAME=NUMBER (a plain decimal number "
                         "such as 16, 2.5 or 1e3), got '%s'",
                         a->val);
      return true;
    }
    /* The name must be NUL-terminated: copy it out of argv. */
    size_t n = (size_t)(strchr(a->val, '=') - a->val);
    if (n >= sizeof o->set_names[0])
      *err = usage_error(a, "--set name too long: '%s'", a->val);
    else if (!spec_set(o, a->val, n, st.value))
      *err = usage_error(a, "too many --set options (at most %d)", MAX_SETS);
    return true;
  }
  return false;
}

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

Spec *open_spec_doc(const char *name, Diag *d) {
  Source src;
  if (!open_source("specs", name, &src, d))
    return NULL;
  Spec *s = spec_open_text(src.path, src.text, src.len, d);
  source_free(&src);
  return s;
}

Cascade *open_spec(const char *name, Diag *d) {
  Spec *s = open_spec_doc(name, d);
  if (!s)
    return NULL;
  Cascade *c = s->cascade;
  s->cascade = NULL;
  spec_close(s);
  return c;
}

Arch *open_arch(const char *name, Diag *d) {
  Source src;
  if (!open_source("archs", name, &src, d))
    return NULL;
  Arch *a = arch_parse(src.path, src.text, src.len, d);
  source_free(&src);
  return a;
}

/* ---- outputs and memory ---- */

int check_output(const Args *a, const char *path, const char *const *inputs,
                 int n) {
  Diag d = {0};
  if (!output_check(path, &d)) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  for (int i = 0; i < n; i++)
    if (inputs[i] && same_file(path, inputs[i]))
      return usage_error(a, "refusing to write %s: it is the input %s", path,
                         inputs[i]);
  return 0;
}

double memory_budget(double max_memory) {
  if (max_memory > 0)
    return max_memory;
  uint64_t m = memory_available();
  return m ? (double)m : INFINITY;
}

int check_memory(const Args *a, const char *what, double need, double budget,
                 bool given) {
  if (need <= budget)
    return 0;
  Buf n = {0}, b = {0};
  buf_bytes(&n, need);
  buf_bytes(&b, budget);
  usage_error(a, "%s needs %s of memory, more than the %s %s", what, n.s,
              b.s,
              given ? "that --max-memory allows"
                    : "this machine has available (see --max-memory)");
  buf_free(&n);
  buf_free(&b);
  return EXIT_INPUT;
}

int load_spec(const SpecOpts *o, Cascade **c, Shape **s) {
  Diag d = {0};
  *c = open_spec(o->spec, &d);
  if (!*c) {
    diag_print(&d, stderr);
    return EXIT_INPUT;
  }
  const char *model = o->model ? o->model : (*c)->model;
  const Preset *preset = NULL;
  if (model) {
    preset = preset_find(model);
    if (!preset) {
      Buf b = {0};
      buf_printf(&b, "mambalaya: unknown model '");
      buf_escaped(&b, model);
      buf_printf(&b, "' (expected one of");
      for (int i = 0; preset_at(i); i++)
        buf_printf(&b, "%s %s", i ? "," : "", preset_at(i)->sizes.name);
      fprintf(stderr, "%s)\n", b.s);
      buf_free(&b);
      cascade_free(*c);
      *c = NULL;
      return EXIT_INPUT;
    }
  }
  for (int i = 0; i < o->nsets; i++) {
    const char *n = o->sets[i].name;
    if (!shape_setting_known(*c, n) && !preset_is_param(n)) {
      Buf b = {0}, sp = {0};
      buf_escaped(&b, n);
      buf_escaped(&sp, o->spec);
      fprintf(stderr,
              "mambalaya: --set %s: not a rank, parameter or model parameter "
              "of %s\n",
              b.s, sp.s);
      buf_free(&b);
      buf_free(&sp);
      cascade_free(*c);
      *c = NULL;
      return EXIT_INPUT;
    }
  }
  if (preset && (*c)->model) {
    const Preset *own = preset_find((*c)->model);
    if (own && own->version != preset->version) {
      fprintf(stderr,
              "mambalaya: %s is written for Mamba-%d models (its model is "
              "%s), but %s is a Mamba-%d model: pick a matching --model, or "
              "give the sizes with --set\n",
              o->spec, own->version, own->sizes.name, preset->sizes.name,
              preset->version);
      cascade_free(*c);
      *c = NULL;
      return EXIT_INPUT;
    }
  }
  Setting sets[MAX_SETS + 1];
  int nsets = o->nsets;
  memcpy(sets, o->sets, sizeof(Setting) * (size_t)o->nsets);
  if (o->decode) {
    int r = cascade_sequence_rank(*c);
    if (r < 0) {
      fprintf(stderr,
              "mambalaya: --phase decode: %s has no sequence rank (no "
              "recurrence, no rank I): name it with 'sequence: RANK'\n",
              o->spec);
      cascade_free(*c);
      *c = NULL;
      return EXIT_INPUT;
    }
    const char *rn = (*c)->ranks[r].name;
    for (int i = 0; i < nsets; i++)
      if (strcmp(sets[i].name, rn) == 0 && sets[i].value != 1) {
        fprintf(stderr,
                "mambalaya: --phase decode sets the sequence rank %s to 1, "
                "but --set %s=%g asks for %g: drop one of them\n",
                rn, rn, sets[i].value, sets[i].value);
        cascade_free(*c);
        *c = NULL;
        return EXIT_INPUT;
      }
    sets[nsets++] = (Setting){rn, 1};
  }
  *s = shape_bind(*c, preset ? &preset->sizes : NULL, sets, nsets,
                  (*c)->has_shape, &d);
  if (!*s) {
    diag_print(&d, stderr);
    cascade_free(*c);
    *c = NULL;
    return EXIT_INPUT;
  }
  return 0;
}

int default_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

Inputs spec_inputs(const char *command, const SpecOpts *o, const Cascade *c,
                   const Shape *s) {
  return (Inputs){.command = command,
                  .spec = o->spec,
                  .model = o->model ? o->model : c->model,
                  .nsets = o->nsets,
                  .sets = o->sets,
                  .shape = s,
                  .phase = o->decode ? "decode" : NULL};
}

void emit(const Buf *b) {
  if (b->len)
    fwrite(b->s, 1, b->len, stdout);
  fflush(stdout);
}

unsigned parse_formats(const char *list) {
  unsigned set = 0;
  char *copy = xstrdup(list), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    Format f;
    if (!format_from_name(t, &f)) {
      set = 0;
      break;
    }
    set |= 1u << f;
  }
  free(copy);
  return set;
}
