/* cairo.c — a Scene as PDF or PNG, drawn with cairo (report.h, "charts").
 *
 * The scene is replayed as SVG would show it: groups pass their paint on
 * to what they hold (fill black, no stroke, width 1 at the root), shapes
 * are filled then stroked, text is filled and placed by its anchor, and
 * panels move the origin. PDF pages are the scene's size in points at
 * 96 px per inch (0.75 pt per px), text kept as text; PNG images are
 * drawn at PNG_SCALE device pixels per px on white.
 *
 * Everything goes to memory through cairo's stream functions; the PDF
 * carries no creation date, so the same Scene gives the same bytes. The
 * scene's text is valid UTF-8 and its sizes are bounded, so cairo can
 * only fail for want of memory, which aborts, as xmalloc does. */
#include "report.h"

#include <cairo-pdf.h>
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PT_PER_PX 0.75
#define PNG_SCALE 2.0
#define PNG_MAX_SIDE 32000.0 /* cairo's image surfaces stop at 32767 */
#define FONT_FAMILY "sans-serif"
#define PI 3.14159265358979323846

/* cairo's write callback: append to a Buf (binary, NUL-terminated). */
static cairo_status_t append(void *closure, const unsigned char *data,
                             unsigned int len) {
  Buf *b = closure;
  if (b->len + len + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + len + 1)
      cap *= 2;
    b->s = xrealloc(b->s, cap);
    b->cap = cap;
  }
  memcpy(b->s + b->len, data, len);
  b->len += len;
  b->s[b->len] = 0;
  return CAIRO_STATUS_SUCCESS;
}

/* ---- paint ---- */

static const Paint ROOT = {.fill = "#000000", .stroke = "none", .width = 1,
                           .opacity = 1};

static Paint inherit(Paint p, const Paint *own) {
  if (own->fill)
    p.fill = own->fill;
  if (own->stroke)
    p.stroke = own->stroke;
  if (own->width > 0)
    p.width = own->width;
  if (own->opacity > 0)
    p.opacity = own->opacity;
  if (own->dash)
    p.dash = own->dash;
  p.round = p.round || own->round;
  return p;
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* Make "#rrggbb" or "#rgb" the source colour; false for "none" (or
 * anything else that is no colour: nothing is painted). */
static bool set_color(cairo_t *cr, const char *color, double alpha) {
  if (!color || color[0] != '#')
    return false;
  size_t n = strlen(color + 1);
  int per = n == 6 ? 2 : n == 3 ? 1 : 0;
  if (!per)
    return false;
  double rgb[3];
  for (int i = 0; i < 3; i++) {
    int v = 0;
    for (int k = 0; k < per; k++) {
      int d = hex_digit(color[1 + i * per + k]);
      if (d < 0)
        return false;
      v = v * 16 + d;
    }
    rgb[i] = per == 1 ? v / 15.0 : v / 255.0;
  }
  cairo_set_source_rgba(cr, rgb[0], rgb[1], rgb[2], alpha);
  return true;
}

static void set_dash(cairo_t *cr, const char *dash) {
  double d[8];
  int n = 0;
  for (const char *p = dash; p && *p && n < 8;) {
    char *end;
    double v = strtod(p, &end);
    if (end == p)
      break;
    if (v > 0)
      d[n++] = v;
    p = end + strspn(end, " ,");
  }
  cairo_set_dash(cr, d, n, 0);
}

/* Fill (when FILLABLE) then stroke the current path, as SVG paints a
 * shape, and clear it. */
static void paint_path(cairo_t *cr, const Paint *p, bool fillable) {
  if (fillable && set_color(cr, p->fill, p->opacity))
    cairo_fill_preserve(cr);
  if (set_color(cr, p->stroke, 1)) {
    cairo_set_line_width(cr, p->width);
    cairo_set_line_join(cr, p->round ? CAIRO_LINE_JOIN_ROUND
                                     : CAIRO_LINE_JOIN_MITER);
    set_dash(cr, p->dash);
    cairo_stroke_preserve(cr);
  }
  cairo_new_path(cr);
}

/* ---- items ---- */

static void draw_text(cairo_t *cr, const ScItem *it, const Paint *p) {
  if (!set_color(cr, p->fill, 1))
    return;
  cairo_select_font_face(cr, FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL,
                         it->bold ? CAIRO_FONT_WEIGHT_BOLD
                                  : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, it->font);
  cairo_save(cr);
  cairo_translate(cr, it->x, it->y);
  cairo_rotate(cr, it->angle * PI / 180);
  char *text = xstrdup(it->text);
  int line = 0;
  for (char *t = text, *next; t; t = next, line++) {
    next = strchr(t, '\n');
    if (next)
      *next++ = 0;
    cairo_text_extents_t ext;
    cairo_text_extents(cr, t, &ext);
    double dx = it->anchor == ANCHOR_MIDDLE ? -ext.x_advance / 2
                : it->anchor == ANCHOR_END  ? -ext.x_advance
                                            : 0;
    cairo_move_to(cr, dx, line * (it->font + 2));
    cairo_show_text(cr, t);
    cairo_new_path(cr);
  }
  free(text);
  cairo_restore(cr);
}

static void draw_item(cairo_t *cr, const ScItem *it, const Paint *p) {
  switch (it->kind) {
  case SC_LINE:
    cairo_move_to(cr, it->x, it->y);
    cairo_line_to(cr, it->x2, it->y2);
    paint_path(cr, p, false);
    break;
  case SC_POLYLINE:
  case SC_POLYGON:
    for (int k = 0; k < it->npts; k++)
      cairo_line_to(cr, it->pts[2 * k], it->pts[2 * k + 1]);
    if (it->kind == SC_POLYGON)
      cairo_close_path(cr);
    paint_path(cr, p, true);
    break;
  case SC_RECT:
    cairo_rectangle(cr, it->x, it->y, it->w, it->h);
    paint_path(cr, p, true);
    break;
  case SC_CIRCLE:
    cairo_new_sub_path(cr);
    cairo_arc(cr, it->x, it->y, it->r, 0, 2 * PI);
    paint_path(cr, p, true);
    break;
  case SC_TEXT:
    draw_text(cr, it, p);
    break;
  case SC_GROUP:
  case SC_PANEL:
  case SC_END:
    break; /* structure: replay() keeps the paint and the origin */
  }
}

/* Draw every item; groups and panels push the paint in force (panels also
 * the origin), their ends pop it. */
static void replay(cairo_t *cr, const Scene *s) {
  Paint *stack = NULL;
  int depth = 0, cap = 0;
  VEC_PUSH(stack, depth, cap, ROOT);
  cairo_set_miter_limit(cr, 4); /* SVG's default */
  for (int i = 0; i < s->n; i++) {
    const ScItem *it = &s->items[i];
    Paint own = inherit(stack[depth - 1], &it->paint);
    if (it->kind == SC_GROUP || it->kind == SC_PANEL) {
      cairo_save(cr);
      if (it->kind == SC_PANEL)
        cairo_translate(cr, it->x, it->y);
      VEC_PUSH(stack, depth, cap, own);
    } else if (it->kind == SC_END) {
      if (depth > 1) {
        depth--;
        cairo_restore(cr);
      }
    } else {
      draw_item(cr, it, &own);
    }
  }
  for (; depth > 1; depth--)
    cairo_restore(cr);
  free(stack);
}

static void check(cairo_status_t st) {
  if (st != CAIRO_STATUS_SUCCESS) {
    char msg[160];
    snprintf(msg, sizeof msg, "mambalaya: cairo: %s\n",
             cairo_status_to_string(st));
    fatal(msg);
  }
}

void cairo_render(Buf *b, const Scene *s, Format f) {
  cairo_surface_t *surface;
  double scale;
  if (f == FMT_PDF) {
    scale = PT_PER_PX;
    surface = cairo_pdf_surface_create_for_stream(append, b, s->w * scale,
                                                  s->h * scale);
    /* No date: the same figure gives the same file. */
    cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATE_DATE,
                                   "");
  } else {
    scale = fmin(PNG_SCALE, PNG_MAX_SIDE / fmax(1, fmax(s->w, s->h)));
    surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24,
                                         (int)ceil(s->w * scale),
                                         (int)ceil(s->h * scale));
  }
  check(cairo_surface_status(surface));
  cairo_t *cr = cairo_create(surface);
  if (f == FMT_PNG) {
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
  }
  cairo_scale(cr, scale, scale);
  replay(cr, s);
  check(cairo_status(cr));
  cairo_destroy(cr);
  if (f == FMT_PNG)
    check(cairo_surface_write_to_png_stream(surface, append, b));
  cairo_surface_finish(surface);
  check(cairo_surface_status(surface));
  cairo_surface_destroy(surface);
}
