/* args.c — option scanning and spec loading shared by the commands. */
#include "cli.h"

#include <errno.h>
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

Cascade *open_spec(const char *name, Diag *d) {
  Source src;
  if (!source_open("specs", name, &src))
    return spec_load(name, d); /* its message: what could not be read */
  Cascade *c = spec_parse(src.path, src.text, src.len, d);
  source_free(&src);
  return c;
}

Arch *open_arch(const char *name, Diag *d) {
  Source src;
  if (!source_open("archs", name, &src))
    return arch_load(name, d);
  Arch *a = arch_parse(src.path, src.text, src.len, d);
  source_free(&src);
  return a;
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
    if (!shape_setting_known(*c, n)) {
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
