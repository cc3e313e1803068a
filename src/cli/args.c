/* args.c — option scanning and spec loading shared by the commands. */
#include "cli.h"

#include <errno.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int args_next(Args *a) {
  if (a->i >= a->argc)
    return 0;
  const char *s = a->argv[a->i++];
  a->inline_val = false;
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
    fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", a->cmd,
            a->val, a->cmd);
  else
    fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", a->cmd,
            a->opt, a->cmd);
  return EXIT_INPUT;
}

int usage_error(const Args *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", a->cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  return EXIT_INPUT;
}

static bool parse_setting(const char *s, Setting *out) {
  const char *eq = strchr(s, '=');
  if (!eq || eq == s)
    return false;
  char *end;
  errno = 0;
  double v = strtod(eq + 1, &end);
  if (errno || end == eq + 1 || *end || !isfinite(v))
    return false;
  out->value = v;
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
    if (o->nsets == MAX_SETS) {
      *err = usage_error(a, "too many --set options (at most %d)", MAX_SETS);
      return true;
    }
    Setting st;
    if (!parse_setting(a->val, &st)) {
      *err = usage_error(a, "--set expects NAME=NUMBER, got '%s'", a->val);
      return true;
    }
    /* The name must be NUL-terminated: copy it out of argv. */
    size_t n = (size_t)(strchr(a->val, '=') - a->val);
    if (n >= sizeof o->set_names[0]) {
      *err = usage_error(a, "--set name too long: '%s'", a->val);
      return true;
    }
    memcpy(o->set_names[o->nsets], a->val, n);
    o->set_names[o->nsets][n] = 0;
    st.name = o->set_names[o->nsets];
    o->sets[o->nsets++] = st;
    return true;
  }
  return false;
}

/* A path, or the name of a shipped file ("mamba1" for specs/mamba1.yaml). */
static const EmbeddedFile *shipped(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  const EmbeddedFile *f = embedded_file(path);
  if (!f) {
    snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
    f = embedded_file(path);
  }
  return f;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

Cascade *open_spec(const char *name, Diag *d) {
  const EmbeddedFile *f = exists(name) ? NULL : shipped("specs", name);
  if (f)
    return spec_parse(f->name, (const char *)f->data, f->len, d);
  return spec_load(name, d);
}

Arch *open_arch(const char *name, Diag *d) {
  const EmbeddedFile *f = exists(name) ? NULL : shipped("archs", name);
  if (f)
    return arch_parse(f->name, (const char *)f->data, f->len, d);
  return arch_load(name, d);
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
      fprintf(stderr, "mambalaya: unknown model '%s' (expected one of", model);
      for (int i = 0; preset_at(i); i++)
        fprintf(stderr, "%s %s", i ? "," : "", preset_at(i)->name);
      fprintf(stderr, ")\n");
      cascade_free(*c);
      *c = NULL;
      return EXIT_INPUT;
    }
  }
  for (int i = 0; i < o->nsets; i++) {
    const char *n = o->sets[i].name;
    bool known = cascade_rank(*c, n) >= 0 || cascade_param(*c, n) >= 0;
    for (int k = 0; !known && preset_param_names[k]; k++)
      known = strcmp(preset_param_names[k], n) == 0;
    for (int k = 0; !known && k < (*c)->nsyms; k++)
      known = strcmp((*c)->syms[k].name, n) == 0;
    if (!known) {
      fprintf(stderr,
              "mambalaya: --set %s: not a rank, parameter or model parameter "
              "of %s\n",
              n, o->spec);
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
              o->spec, own->version, own->name, preset->name,
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
  *s = shape_bind(*c, preset, sets, nsets, (*c)->has_shape, &d);
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

bool parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

/* "2MiB", "512k", "1e6": bytes. */
bool parse_bytes(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !(v >= 0) || !isfinite(v))
    return false;
  static const struct {
    const char *suffix;
    double scale;
  } units[] = {{"", 1},         {"B", 1},        {"k", 1e3},
               {"K", 1024},     {"KiB", 1024},   {"M", 1e6},
               {"MiB", 1 << 20}, {"G", 1e9},     {"GiB", 1 << 30}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (strcmp(end, units[i].suffix) == 0) {
      *out = v * units[i].scale;
      return true;
    }
  return false;
}

void emit(const Buf *b) {
  if (b->len)
    fwrite(b->s, 1, b->len, stdout);
  fflush(stdout);
}
