/* study_values.c — the values a study file writes (study.c, docs/sweep.md):
 * a number, a name, a value or a list of values, or a range {from, to,
 * times|step} expanded into the values it stands for, each checked and
 * its first problem reported at its FILE:LINE:COL. */
#include "study_values.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_RANGE = 10000 };

bool study_list(Loader *L, const YamlNode *n, const char *what,
                const char *name) {
  if (!want(L, n, YN_SEQ, what))
    return false;
  if (n->n == 0)
    return fail(L, n->loc, "%s is empty", name);
  return true;
}

bool study_as_list(Loader *L, const YamlNode *n, const char *what,
                    YamlNode *const **items, int *count, YamlNode **one) {
  if (n->kind == YN_SCALAR) {
    *one = (YamlNode *)n;
    *items = one;
    *count = 1;
    return true;
  }
  if (!study_list(L, n, what, what))
    return false;
  *items = n->items;
  *count = n->n;
  return true;
}

bool study_number(Loader *L, const YamlNode *n, const char *what,
                   double *v) {
  if (!want(L, n, YN_SCALAR, what))
    return false;
  if (!parse_decimal(n->text, v)) /* the rule of specs and the CLI */
    return fail(L, n->loc, "%s must be a plain decimal number (16, 2.5, "
                           "1e3: no hex, inf or nan), found '%s'",
                what, n->text);
  return true;
}

/* NAME: a letter or '_', then letters, digits, '_', '-', '.'. */
bool study_is_name(const char *s) {
  if (!isalpha((unsigned char)s[0]) && s[0] != '_')
    return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("_-.+", *s))
      return false;
  return true;
}

/* ---- values: a number, a list, or a range ---- */

/* {from, to, times: R} (from, from R, ... <= to) or {from, to, step: S}:
 * numbers, or quantities with the same unit ("16 MiB" .. "64 MiB"). The
 * values are written back as text into the study's arena, so that a
 * parameter's values are nodes like any other. */
static const char *const range_keys[] = {"from", "to", "times", "step", NULL};

static const char *unit_of(const char *text, double *v) {
  size_t n = decimal_length(text);
  char num[64];
  if (n == 0 || n >= sizeof num)
    return NULL;
  memcpy(num, text, n);
  num[n] = 0;
  *v = strtod(num, NULL);
  if (!isfinite(*v))
    return NULL;
  const char *end = text + n;
  while (*end == ' ')
    end++;
  return end;
}

static bool range_values(Loader *L, const YamlNode *m, const char *what,
                         YamlNode ***out, int *count) {
  if (!check_keys(L, m, range_keys, "a range"))
    return false;
  const YamlNode *from = ydoc_get(m, "from"), *to = ydoc_get(m, "to");
  const YamlNode *times = ydoc_get(m, "times"), *step = ydoc_get(m, "step");
  if (!from || !to)
    return fail(L, m->loc, "a range of %s needs 'from' and 'to'", what);
  if (!times == !step)
    return fail(L, m->loc,
                "a range of %s needs 'times' (geometric) or 'step' "
                "(arithmetic), not both",
                what);
  if (!want(L, from, YN_SCALAR, "from") || !want(L, to, YN_SCALAR, "to"))
    return false;
  double lo, hi, by;
  const char *ulo = unit_of(from->text, &lo), *uhi = unit_of(to->text, &hi);
  if (!ulo)
    return fail(L, from->loc, "from must be a number, found '%s'",
                from->text);
  if (!uhi || strcmp(ulo, uhi) != 0)
    return fail(L, to->loc,
                "to must be a number with the unit of from ('%s'), found "
                "'%s'",
                ulo, to->text);
  if (!study_number(L, times ? times : step, times ? "times" : "step", &by))
    return false;
  if (times ? !(by > 1) : !(by > 0))
    return fail(L, (times ? times : step)->loc,
                "%s must be %s, found '%s'", times ? "times" : "step",
                times ? "above 1" : "positive",
                (times ? times : step)->text);
  if (!(lo <= hi) || (times && !(lo > 0)))
    return fail(L, m->loc,
                "empty range: from %g to %g%s", lo, hi,
                times && !(lo > 0) ? " (a geometric range starts above 0)"
                                   : "");
  int n = 0;
  YamlNode **v = NULL;
  for (int k = 0;; k++) {
    double x = times ? lo * pow(by, k) : lo + by * k;
    if (x > hi * (1 + 1e-12))
      break;
    if (n == MAX_RANGE) {
      free(v);
      return fail(L, m->loc, "a range of more than %d values", MAX_RANGE);
    }
    v = xrealloc(v, (size_t)(n + 1) * sizeof *v);
    YamlNode *node = arena_alloc(&L->s->arena, sizeof *node);
    char text[96];
    snprintf(text, sizeof text, "%.12g%s%s", x, *ulo ? " " : "", ulo);
    *node = (YamlNode){.kind = YN_SCALAR, .loc = m->loc,
                       .text = arena_strdup(&L->s->arena, text)};
    v[n++] = node;
  }
  *out = arena_alloc(&L->s->arena, (size_t)n * sizeof *v);
  memcpy(*out, v, (size_t)n * sizeof *v);
  free(v);
  *count = n;
  return true;
}

/* A value, a list of values, or a range, as nodes. LIST_VALUES (a field
 * that holds a list, such as shape: [256, 256]): a list of scalars is one
 * value, a list of lists several. */
bool study_values(Loader *L, const YamlNode *n, const char *what,
                      bool list_values, YamlNode ***out, int *count) {
  if (n->kind == YN_MAP)
    return range_values(L, n, what, out, count);
  bool one = n->kind == YN_SCALAR ||
             (list_values && n->n > 0 && n->items[0]->kind == YN_SCALAR);
  if (one) {
    *out = arena_alloc(&L->s->arena, sizeof **out);
    (*out)[0] = (YamlNode *)n;
    *count = 1;
    return true;
  }
  if (n->n == 0)
    return fail(L, n->loc, "%s has no value", what);
  *out = n->items;
  *count = n->n;
  return true;
}

bool study_numbers(Loader *L, const YamlNode *n, const char *what,
                       double **out, int *count) {
  YamlNode **v;
  if (!study_values(L, n, what, false, &v, count))
    return false;
  *out = arena_alloc(&L->s->arena, (size_t)*count * sizeof **out);
  for (int i = 0; i < *count; i++)
    if (!study_number(L, v[i], what, &(*out)[i]))
      return false;
  return true;
}
