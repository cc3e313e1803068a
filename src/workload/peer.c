/* peer.c — the loader's front door: telling the formats apart, and
 * loading a peer's file as its translation, with its errors pointing into
 * the file the user wrote (the translators: accelforge.c, timeloop.c;
 * their tools: translation.c; our own format: load.c). */
#include "peer.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A top-level key decides: `workload` is AccelForge's, `problem`
 * Timeloop's, `einsum` ours. A line that opens with a Jinja tag (a
 * template that starts `{% set ... %}`) is AccelForge's too. */
SpecFormat spec_format(const char *text, size_t len) {
  const char *end = text + len;
  for (const char *l = text; l < end;) {
    const char *nl = memchr(l, '\n', (size_t)(end - l));
    size_t n = nl ? (size_t)(nl - l) : (size_t)(end - l);
    if (n >= 2 && l[0] == '{' && (l[1] == '%' || l[1] == '{' || l[1] == '#'))
      return SPEC_ACCELFORGE;
    if (n >= 9 && memcmp(l, "workload:", 9) == 0)
      return SPEC_ACCELFORGE;
    if (n >= 8 && memcmp(l, "problem:", 8) == 0)
      return SPEC_TIMELOOP;
    if (n >= 7 && memcmp(l, "einsum:", 7) == 0)
      return SPEC_NATIVE;
    l = nl ? nl + 1 : end;
  }
  return SPEC_NATIVE;
}

/* Point every location a later stage may report into the peer's file. */
static void remap_cascade(const Translation *t, Cascade *c) {
  for (int i = 0; i < c->nranks; i++) {
    tr_remap(t, &c->ranks[i].loc);
    tr_remap(t, &c->ranks[i].size_loc);
  }
  for (int i = 0; i < c->ntensors; i++)
    tr_remap(t, &c->tensors[i].loc);
  for (int i = 0; i < c->neinsums; i++)
    tr_remap(t, &c->einsums[i]->loc);
  for (int i = 0; i < c->nsyms; i++)
    tr_remap(t, &c->syms[i].loc);
  for (int i = 0; i < c->nparams; i++)
    tr_remap(t, &c->params[i].loc);
}

static bool translate(SpecFormat f, const char *path, const char *text,
                      size_t len, const SpecLoad *o, Translation *t,
                      Diag *d) {
  *t = (Translation){.path = path};
  if (f == SPEC_ACCELFORGE)
    return accelforge_translate(path, text, len, o, t, d);
  return timeloop_translate(path, text, len, o, t, d);
}

static void print_notes(const Translation *t, FILE *notes) {
  const char *s = t->notes.s;
  while (notes && s && *s) {
    const char *nl = strchr(s, '\n');
    fprintf(notes, "%s: note: %.*s\n", t->path, (int)(nl - s), s);
    s = nl + 1;
  }
}

Cascade *spec_parse_peer(SpecFormat f, const char *path, const char *text,
                         size_t len, const SpecLoad *o, Diag *d) {
  Translation t;
  if (!translate(f, path, text, len, o, &t, d)) {
    tr_free(&t);
    return NULL;
  }
  Cascade *c = spec_parse_native(t.path, t.text.s, t.text.len, o, d);
  if (c) {
    print_notes(&t, o ? o->notes : NULL);
    remap_cascade(&t, c);
  } else {
    tr_remap(&t, &d->loc);
  }
  tr_free(&t);
  return c;
}

bool spec_translate(SpecFormat f, const char *path, const char *text,
                    size_t len, const SpecLoad *o, Buf *out, Diag *d) {
  Translation t;
  bool ok = translate(f, path, text, len, o, &t, d);
  if (ok) {
    Cascade *c = spec_parse_native(t.path, t.text.s, t.text.len, o, d);
    if (!c)
      tr_remap(&t, &d->loc);
    ok = c != NULL;
    cascade_free(c);
  }
  if (ok)
    tr_print(&t, path,
             f == SPEC_ACCELFORGE ? "AccelForge format" : "Timeloop format",
             out);
  tr_free(&t);
  return ok;
}

/* ---- the entry points (spec.h) ---- */

/* A peer's file has no document of ours: its cascade alone. */
static Spec *spec_open_with(const char *path, const char *text, size_t len,
                            const SpecLoad *o, Diag *d) {
  SpecFormat f = spec_format(text, len);
  if (f == SPEC_NATIVE)
    return spec_of(path, ydoc_parse(path, text, len, d), o, d);
  Cascade *c = spec_parse_peer(f, path, text, len, o, d);
  if (!c)
    return NULL;
  Spec *s = xmalloc(sizeof *s);
  *s = (Spec){c, NULL};
  return s;
}

Spec *spec_open_text(const char *path, const char *text, size_t len,
                     Diag *d) {
  return spec_open_with(path, text, len, NULL, d);
}

/* The spec in file PATH: the one way spec_open and spec_load_with read. */
static Spec *open_file(const char *path, const SpecLoad *o, Diag *d) {
  size_t len;
  char *text = read_input(path, INPUT_TEXT_MAX, &len, d);
  if (!text)
    return NULL;
  Spec *s = spec_open_with(path, text, len, o, d);
  free(text);
  return s;
}

Spec *spec_open(const char *path, Diag *d) {
  return open_file(path, NULL, d);
}

Cascade *spec_parse_with(const char *path, const char *text, size_t len,
                         const SpecLoad *o, Diag *d) {
  return cascade_only(spec_open_with(path, text, len, o, d));
}

Cascade *spec_parse(const char *path, const char *text, size_t len,
                    Diag *d) {
  return spec_parse_with(path, text, len, NULL, d);
}

Cascade *spec_load_with(const char *path, const SpecLoad *o, Diag *d) {
  return cascade_only(open_file(path, o, d));
}

Cascade *spec_load(const char *path, Diag *d) {
  return spec_load_with(path, NULL, d);
}
