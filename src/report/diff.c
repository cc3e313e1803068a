/* diff.c — what changed between two results (`mambalaya diff`): every
 * member whose value differs, by its path, inputs first. Objects are
 * compared member by member; arrays of records (Einsums, components,
 * points) by their name, others item by item; numbers within a relative
 * tolerance. */
#include "report.h"

#include <math.h>
#include <string.h>

typedef struct Differ {
  Buf *out;
  double tol;
  int n;
} Differ;

/* The member naming each item of an array of records, or NULL when the
 * items are not all records with distinct names. */
static const char *record_key(json_t *arr) {
  static const char *const keys[] = {"name", "einsum", "key", "tensor", NULL};
  for (int k = 0; keys[k]; k++) {
    size_t n = json_array_size(arr);
    bool ok = n > 0;
    for (size_t i = 0; ok && i < n; i++) {
      const char *v =
          json_string_value(json_object_get(json_array_get(arr, i), keys[k]));
      ok = v != NULL;
      for (size_t j = 0; ok && j < i; j++)
        ok = strcmp(v, json_string_value(json_object_get(
                           json_array_get(arr, j), keys[k]))) != 0;
    }
    if (ok)
      return keys[k];
  }
  return NULL;
}

static json_t *find_record(json_t *arr, const char *key, const char *name) {
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *x = json_array_get(arr, i);
    if (strcmp(json_string_value(json_object_get(x, key)), name) == 0)
      return x;
  }
  return NULL;
}

static void value_text(Buf *b, json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
  size_t n = s ? strlen(s) : 0;
  if (n > 72)
    buf_printf(b, "%.69s...", s);
  else
    buf_printf(b, "%s", s ? s : "?");
  free(s);
}

static void report(Differ *d, const char *path, json_t *a, json_t *b) {
  d->n++;
  buf_printf(d->out, "  %s: ", path);
  if (!a) {
    buf_printf(d->out, "(absent) -> ");
    value_text(d->out, b);
  } else if (!b) {
    value_text(d->out, a);
    buf_printf(d->out, " -> (absent)");
  } else {
    value_text(d->out, a);
    buf_printf(d->out, " -> ");
    value_text(d->out, b);
    if (json_is_number(a) && json_is_number(b) &&
        json_number_value(a) != 0)
      buf_printf(d->out, " (%+.3g%%)",
                 100 * (json_number_value(b) / json_number_value(a) - 1));
  }
  buf_printf(d->out, "\n");
}

static void walk(Differ *d, const char *path, json_t *a, json_t *b);

static void walk_object(Differ *d, const char *path, json_t *a, json_t *b) {
  const char *k;
  json_t *v;
  char sub[1024];
  json_object_foreach(a, k, v) {
    snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
    walk(d, sub, v, json_object_get(b, k));
  }
  json_object_foreach(b, k, v) {
    if (json_object_get(a, k))
      continue;
    snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", k);
    walk(d, sub, NULL, v);
  }
}

static void walk_array(Differ *d, const char *path, json_t *a, json_t *b) {
  char sub[1024];
  const char *ka = record_key(a), *kb = record_key(b);
  if (ka && kb && strcmp(ka, kb) == 0) {
    for (size_t i = 0; i < json_array_size(a); i++) {
      json_t *x = json_array_get(a, i);
      const char *name = json_string_value(json_object_get(x, ka));
      snprintf(sub, sizeof sub, "%s[%s]", path, name);
      walk(d, sub, x, find_record(b, ka, name));
    }
    for (size_t i = 0; i < json_array_size(b); i++) {
      json_t *y = json_array_get(b, i);
      const char *name = json_string_value(json_object_get(y, ka));
      if (!find_record(a, ka, name)) {
        snprintf(sub, sizeof sub, "%s[%s]", path, name);
        walk(d, sub, NULL, y);
      }
    }
    return;
  }
  size_t na = json_array_size(a), nb = json_array_size(b);
  for (size_t i = 0; i < (na > nb ? na : nb); i++) {
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    walk(d, sub, i < na ? json_array_get(a, i) : NULL,
         i < nb ? json_array_get(b, i) : NULL);
  }
}

static bool same_number(double x, double y, double tol) {
  if (x == y)
    return true;
  return fabs(x - y) <= tol * fmax(fabs(x), fabs(y));
}

static void walk(Differ *d, const char *path, json_t *a, json_t *b) {
  if (!a || !b) {
    report(d, path, a, b);
    return;
  }
  if (json_is_object(a) && json_is_object(b)) {
    walk_object(d, path, a, b);
  } else if (json_is_array(a) && json_is_array(b)) {
    walk_array(d, path, a, b);
  } else if (json_is_number(a) && json_is_number(b)) {
    if (!same_number(json_number_value(a), json_number_value(b), d->tol))
      report(d, path, a, b);
  } else if (!json_equal(a, b)) {
    report(d, path, a, b);
  }
}

int report_diff(Buf *out, json_t *a, json_t *b, double tol) {
  Differ d = {out, tol, 0};
  json_t *ia = json_object_get(a, "inputs"), *ib = json_object_get(b, "inputs");
  Buf inputs = {0}, figures = {0};
  d.out = &inputs;
  if (ia || ib)
    walk(&d, "inputs", ia, ib);
  int ninputs = d.n;
  d.out = &figures;
  if (json_is_object(a) && json_is_object(b)) {
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v) {
      if (strcmp(k, "inputs") != 0)
        walk(&d, k, v, json_object_get(b, k));
    }
    json_object_foreach(b, k, v) {
      if (strcmp(k, "inputs") != 0 && !json_object_get(a, k))
        walk(&d, k, NULL, v);
    }
  } else {
    walk(&d, "", a, b);
  }
  int nfigures = d.n - ninputs;
  if (ninputs)
    buf_printf(out, "inputs (%d):\n%s", ninputs, inputs.s);
  if (nfigures)
    buf_printf(out, "%sresults (%d):\n%s", ninputs ? "\n" : "", nfigures,
               figures.s);
  if (!ninputs && !nfigures)
    buf_printf(out, "no difference\n");
  buf_free(&inputs);
  buf_free(&figures);
  return d.n;
}
