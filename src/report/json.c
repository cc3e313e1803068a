/* json.c — writing JSON documents, figures included whatever their value.
 *
 * JSON has no NaN or infinity, and jansson's json_real returns NULL for
 * them, which json_object_set_new then drops without a word: a figure
 * would vanish from the output. report_real instead returns a marker (a
 * string no report writes), and report_json replaces each marker with
 * null and names it on stderr. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char NONFINITE[] = "\x01nonfinite:";

json_t *report_real(double v) {
  if (isfinite(v))
    return json_real(v);
  char s[32];
  snprintf(s, sizeof s, "%s%s", NONFINITE,
           isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
  return json_string(s);
}

void report_set_reals(json_t *o, const ReportReal *f, size_t n) {
  for (size_t k = 0; k < n; k++)
    json_object_set_new(o, f[k].key, report_real(f[k].v));
}

static const char *nonfinite(const json_t *v) {
  const char *s = json_string_value(v);
  size_t n = sizeof NONFINITE - 1;
  return s && strncmp(s, NONFINITE, n) == 0 ? s + n : NULL;
}

static void warn(const Buf *path, const char *what) {
  Buf b = {0};
  buf_escaped(&b, path->s ? path->s : "(the document)");
  fprintf(stderr, "mambalaya: warning: %s is %s: written as null\n", b.s,
          what);
  buf_free(&b);
}

static void fix(json_t *v, Buf *path);

/* X at PATH: true if it is a marker, after the warning (its parent writes
 * null in its place); else the markers under it are replaced. */
static bool is_marker(json_t *x, Buf *path) {
  const char *what = nonfinite(x);
  if (what)
    warn(path, what);
  else
    fix(x, path);
  return what;
}

/* Replace the markers under V (at PATH) with null, warning about each. */
static void fix(json_t *v, Buf *path) {
  size_t len = path->len;
  if (json_is_object(v)) {
    const char *key;
    json_t *x;
    json_object_foreach(v, key, x) {
      buf_printf(path, "%s%s", len ? "." : "", key);
      if (is_marker(x, path))
        json_object_set_new(v, key, json_null());
      path->len = len;
      path->s[len] = 0;
    }
  } else if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) {
      buf_printf(path, "[%zu]", i);
      if (is_marker(json_array_get(v, i), path))
        json_array_set_new(v, i, json_null());
      path->len = len;
      path->s[len] = 0;
    }
  }
}

void report_json(Buf *b, json_t *root) {
  Buf path = {0};
  bool marker = is_marker(root, &path);
  buf_free(&path);
  char *s = json_dumps(marker ? json_null() : root,
                       JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                           JSON_REAL_PRECISION(12) | JSON_ENCODE_ANY);
  if (s) {
    buf_printf(b, "%s\n", s);
    free(s);
  }
}
