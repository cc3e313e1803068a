/* translation.c — the translators' tools (peer.h): a translation's lines
 * with the lines of the peer's file they came from, its notes, and the
 * arithmetic of AccelForge's sizes. */
#include "peer.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void tr_line(Translation *t, Loc from, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[1024];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof small) {
    char *big = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf_printf(&t->text, "%s\n", big);
    free(big);
  } else {
    buf_printf(&t->text, "%s\n", small);
  }
  VEC_PUSH(t->from, t->nlines, t->cap, from);
}

void tr_note(Translation *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char line[2048];
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  buf_printf(&t->notes, "%s\n", line);
}

void tr_free(Translation *t) {
  buf_free(&t->text);
  buf_free(&t->notes);
  free(t->from);
}

void tr_print(const Translation *t, const char *path, const char *what,
              Buf *out) {
  buf_printf(out, "# %s, translated by mambalaya import (%s)\n", path, what);
  for (const char *s = t->notes.s; s && *s;) {
    const char *nl = strchr(s, '\n');
    buf_printf(out, "# note: %.*s\n", (int)(nl - s), s);
    s = nl + 1;
  }
  buf_printf(out, "%s", t->text.s);
}

void tr_remap(const Translation *t, Loc *l) {
  if (l->line >= 1 && l->line <= t->nlines && t->from[l->line - 1].line > 0)
    *l = t->from[l->line - 1];
}

/* ---- sizes: AccelForge's arithmetic ---- */

typedef struct Calc {
  const char *s;
  size_t at;
  double (*lookup)(void *ctx, const char *name);
  void *ctx;
  char *err;
  size_t errlen;
  bool failed;
} Calc;

static void calc_fail(Calc *k, const char *what) {
  if (!k->failed)
    snprintf(k->err, k->errlen, "%s at column %zu of '%s'", what, k->at + 1,
             k->s);
  k->failed = true;
}

static void skip(Calc *k) {
  while (isspace((unsigned char)k->s[k->at]))
    k->at++;
}

static bool eat(Calc *k, const char *op) {
  skip(k);
  size_t n = strlen(op);
  if (strncmp(k->s + k->at, op, n) != 0)
    return false;
  /* '*' is not the start of '**', nor '/' of '//' */
  if (n == 1 && (op[0] == '*' || op[0] == '/') && k->s[k->at + 1] == op[0])
    return false;
  k->at += n;
  return true;
}

static double calc_sum(Calc *k, int depth);

static double calc_call(Calc *k, const char *name, int depth) {
  static const char *const fns[] = {"ceil", "floor", "round", "abs", "min",
                                    "max", NULL};
  int f = 0;
  while (fns[f] && strcmp(fns[f], name) != 0)
    f++;
  if (!fns[f]) {
    calc_fail(k, "unknown function (expected ceil, floor, round, abs, min "
                 "or max)");
    return NAN;
  }
  double v[16];
  int n = 0;
  do
    v[n++] = calc_sum(k, depth + 1);
  while (n < 16 && eat(k, ","));
  if (!eat(k, ")"))
    calc_fail(k, "expected ')'");
  if (f < 4 && n != 1)
    calc_fail(k, "this function takes one argument");
  double r = v[0];
  for (int i = 1; f >= 4 && i < n; i++)
    r = f == 4 ? fmin(r, v[i]) : fmax(r, v[i]);
  return f == 0 ? ceil(r) : f == 1 ? floor(r) : f == 2 ? nearbyint(r)
         : f == 3 ? fabs(r) : r;
}

static double calc_atom(Calc *k, int depth) {
  skip(k);
  const char *p = k->s + k->at;
  if (depth > 100) {
    calc_fail(k, "nested too deeply");
    return NAN;
  }
  if (eat(k, "(")) {
    double v = calc_sum(k, depth + 1);
    if (!eat(k, ")"))
      calc_fail(k, "expected ')'");
    return v;
  }
  if (eat(k, "-"))
    return -calc_atom(k, depth + 1);
  if (isdigit((unsigned char)*p) || *p == '.') {
    char *end;
    double v = strtod(p, &end);
    k->at += (size_t)(end - p);
    return v;
  }
  if (isalpha((unsigned char)*p) || *p == '_') {
    size_t n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_')
      n++;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)n, p);
    k->at += n;
    if (eat(k, "("))
      return calc_call(k, name, depth);
    double v = k->lookup(k->ctx, name);
    if (isnan(v))
      calc_fail(k, "unknown name");
    return v;
  }
  calc_fail(k, "expected a number, a name or '('");
  return NAN;
}

static double calc_pow(Calc *k, int depth) {
  double v = calc_atom(k, depth);
  return eat(k, "**") ? pow(v, calc_pow(k, depth + 1)) : v;
}

static double calc_product(Calc *k, int depth) {
  double v = calc_pow(k, depth);
  for (;;) {
    if (eat(k, "//"))
      v = floor(v / calc_pow(k, depth));
    else if (eat(k, "*"))
      v *= calc_pow(k, depth);
    else if (eat(k, "/"))
      v /= calc_pow(k, depth);
    else if (eat(k, "%"))
      v = fmod(v, calc_pow(k, depth));
    else
      return v;
  }
}

static double calc_sum(Calc *k, int depth) {
  double v = calc_product(k, depth);
  for (;;) {
    if (eat(k, "+"))
      v += calc_product(k, depth);
    else if (eat(k, "-"))
      v -= calc_product(k, depth);
    else
      return v;
  }
}

double peer_eval(const char *s, double (*lookup)(void *ctx, const char *name),
                 void *ctx, char *err, size_t errlen) {
  Calc k = {.s = s, .lookup = lookup, .ctx = ctx, .err = err,
            .errlen = errlen};
  double v = calc_sum(&k, 0);
  skip(&k);
  if (!k.failed && s[k.at])
    calc_fail(&k, "unexpected text");
  /* 4/0 is inf and 4%0 NaN: neither is a size (nor any number a spec
   * holds), so the expression is refused rather than written. */
  if (!k.failed && !isfinite(v)) {
    snprintf(err, errlen, "'%s' is %s, not a finite number (a division by "
             "zero?)", s, isnan(v) ? "NaN" : "infinite");
    k.failed = true;
  }
  return k.failed ? NAN : v;
}
