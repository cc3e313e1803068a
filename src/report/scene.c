/* scene.c — building a Scene (report.h, "the drawing"), and rendering a
 * chart in a format: lay it out, then hand the Scene to a renderer. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

static const char *const FORMAT_NAME[] = {"svg", "pdf", "png"};
_Static_assert(sizeof FORMAT_NAME / sizeof FORMAT_NAME[0] == FMT_COUNT,
               "a name per format");

const char *format_name(Format f) { return FORMAT_NAME[f]; }

bool format_from_name(const char *name, Format *f) {
  for (int i = 0; i < FMT_COUNT; i++)
    if (strcmp(name, FORMAT_NAME[i]) == 0) {
      *f = (Format)i;
      return true;
    }
  return false;
}

void scene_render(Buf *b, const Scene *s, Format f) {
  if (f == FMT_SVG)
    svg_render(b, s);
  else
    cairo_render(b, s, f);
}

void scene_free(Scene *s) {
  arena_free(&s->arena);
  free(s->items);
  *s = (Scene){0};
}

/* ---- text ---- */

/* The length of the UTF-8 sequence at P, or 0 when it is not well formed
 * or encodes a character XML 1.0 forbids (surrogates, U+FFFE, U+FFFF).
 * Stops at the first non-continuation byte, so never reads past a NUL. */
static int utf8_len(const unsigned char *p) {
  unsigned c = p[0], cp;
  int n;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xC0) != 0x80)
      return 0;
    cp = cp << 6 | (p[i] & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
    return 0;
  return n;
}

/* TEXT as every renderer can show it: control characters (which XML 1.0
 * forbids) become spaces, except the '\n' between lines, and bytes that
 * are not UTF-8 become U+FFFD, so that any C string gives a well-formed
 * SVG and text cairo accepts. */
const char *sc_str(Scene *s, const char *text) {
  const unsigned char *p = (const unsigned char *)(text ? text : "");
  Buf b = {0};
  buf_printf(&b, "%s", "");
  while (*p) {
    int n = 1;
    if (*p == '\n' || (*p >= 0x20 && *p < 0x80))
      buf_printf(&b, "%c", (char)*p);
    else if (*p < 0x20)
      buf_printf(&b, " ");
    else if ((n = utf8_len(p)) > 0)
      buf_printf(&b, "%.*s", n, (const char *)p);
    else {
      n = 1;
      buf_printf(&b, "\xEF\xBF\xBD"); /* U+FFFD */
    }
    p += n;
  }
  const char *out = arena_strdup(&s->arena, b.s);
  buf_free(&b);
  return out;
}

/* ---- items ---- */

ScItem *sc_add(Scene *s, ScKind k, const char *cls) {
  ScItem it = {.kind = k, .cls = cls ? arena_strdup(&s->arena, cls) : NULL};
  VEC_PUSH(s->items, s->n, s->cap, it);
  return &s->items[s->n - 1];
}

ScItem *sc_group(Scene *s, const char *cls, Paint p) {
  ScItem *it = sc_add(s, SC_GROUP, cls);
  it->paint = p;
  return it;
}

void sc_end(Scene *s) { sc_add(s, SC_END, NULL); }

ScItem *sc_line(Scene *s, const char *cls, double x1, double y1, double x2,
                double y2) {
  ScItem *it = sc_add(s, SC_LINE, cls);
  it->x = x1, it->y = y1, it->x2 = x2, it->y2 = y2;
  return it;
}

ScItem *sc_poly(Scene *s, ScKind k, const char *cls, int n,
                const double *pts) {
  double *copy = arena_alloc(&s->arena, (size_t)(n > 0 ? 2 * n : 1) *
                                            sizeof *copy);
  if (n > 0)
    memcpy(copy, pts, 2 * (size_t)n * sizeof *copy);
  ScItem *it = sc_add(s, k, cls);
  it->npts = n, it->pts = copy;
  return it;
}

ScItem *sc_text(Scene *s, const char *cls, double x, double y, Anchor a,
                double font, const char *text) {
  const char *t = sc_str(s, text);
  ScItem *it = sc_add(s, SC_TEXT, cls);
  it->x = x, it->y = y, it->anchor = a, it->font = font, it->text = t;
  return it;
}
