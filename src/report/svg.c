/* svg.c — a Scene as a standalone SVG 1.1 document (report.h, "charts").
 *
 * Groups become <g> elements with the scene's classes and paint, panels
 * nested <svg> elements with their own viewBox, text <text> (a <tspan>
 * per line). Coordinates are rounded to 1/100 px and printed with %.2f,
 * so the same Scene always gives the same bytes. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A coordinate as printed: 1/100 px, never "-0.00". */
static double px(double v) {
  v = round(v * 100) / 100;
  return v == 0 ? 0 : v;
}

/* The characters XML text and attributes cannot hold as themselves. */
static const struct {
  char c;
  const char *entity;
} XML_ESCAPES[] = {
    {'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}, {'"', "&quot;"},
    {'\'', "&#39;"},
};

void put_xml(Buf *b, const char *s) {
  for (; s && *s; s++) {
    size_t k = 0;
    while (k < sizeof XML_ESCAPES / sizeof XML_ESCAPES[0] &&
           XML_ESCAPES[k].c != *s)
      k++;
    if (k < sizeof XML_ESCAPES / sizeof XML_ESCAPES[0])
      buf_printf(b, "%s", XML_ESCAPES[k].entity);
    else
      buf_printf(b, "%c", *s);
  }
}

static void put_attr(Buf *b, const char *name, const char *value) {
  if (!value)
    return;
  buf_printf(b, " %s=\"", name);
  put_xml(b, value);
  buf_printf(b, "\"");
}

static void put_paint(Buf *b, const Paint *p) {
  put_attr(b, "fill", p->fill);
  if (p->opacity > 0)
    buf_printf(b, " fill-opacity=\"%g\"", p->opacity);
  put_attr(b, "stroke", p->stroke);
  if (p->width > 0)
    buf_printf(b, " stroke-width=\"%g\"", p->width);
  put_attr(b, "stroke-dasharray", p->dash);
  if (p->round)
    buf_printf(b, " stroke-linejoin=\"round\"");
}

/* "<TAG class=... data-...": what every element starts with. */
static void open_tag(Buf *b, const char *tag, const ScItem *it) {
  buf_printf(b, "<%s", tag);
  put_attr(b, "class", it->cls);
  put_attr(b, "data-name", it->name);
  put_attr(b, "data-scale", it->scale);
  if (it->has_value)
    buf_printf(b, " data-value=\"%g\"", it->value);
}

/* text-anchor by Anchor; "start" is SVG's default. */
static const char *const ANCHOR_NAME[] = {NULL, "middle", "end"};
_Static_assert(sizeof ANCHOR_NAME / sizeof ANCHOR_NAME[0] == ANCHOR_END + 1,
               "a text-anchor per Anchor");

static void put_text(Buf *b, const ScItem *it) {
  open_tag(b, "text", it);
  buf_printf(b, " x=\"%.2f\" y=\"%.2f\"", px(it->x), px(it->y));
  put_attr(b, "text-anchor", ANCHOR_NAME[it->anchor]);
  /* No stroke: text inherits its group's, which would embolden it. */
  buf_printf(b, " font-size=\"%g\"%s stroke=\"none\"", it->font,
             it->bold ? " font-weight=\"bold\"" : "");
  put_attr(b, "fill", it->paint.fill);
  if (it->angle != 0)
    buf_printf(b, " transform=\"rotate(%g %.2f %.2f)\"", it->angle, px(it->x),
               px(it->y));
  buf_printf(b, ">");
  const char *t = it->text, *nl = strchr(t, '\n');
  if (!nl) {
    put_xml(b, t);
  } else {
    for (int line = 0; t; line++) {
      nl = strchr(t, '\n');
      char *part = xstrdup(t);
      if (nl)
        part[nl - t] = 0;
      buf_printf(b, "<tspan x=\"%.2f\" dy=\"%g\">", px(it->x),
                 line ? it->font + 2 : 0);
      put_xml(b, part);
      buf_printf(b, "</tspan>");
      free(part);
      t = nl ? nl + 1 : NULL;
    }
  }
  buf_printf(b, "</text>\n");
}

static void put_points(Buf *b, const ScItem *it) {
  buf_printf(b, " points=\"");
  for (int k = 0; k < it->npts; k++)
    buf_printf(b, "%s%.2f,%.2f", k ? " " : "", px(it->pts[2 * k]),
               px(it->pts[2 * k + 1]));
  buf_printf(b, "\"");
}

static void put_item(Buf *b, const ScItem *it) {
  switch (it->kind) {
  case SC_GROUP:
    open_tag(b, "g", it);
    put_paint(b, &it->paint);
    buf_printf(b, ">\n");
    return;
  case SC_PANEL:
    open_tag(b, "svg", it);
    buf_printf(b,
               " x=\"%.2f\" y=\"%.2f\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\">\n",
               px(it->x), px(it->y), it->w, it->h, it->w, it->h);
    return;
  case SC_END:
    return; /* closed by the caller, which knows what it closes */
  case SC_LINE:
    open_tag(b, "line", it);
    buf_printf(b, " x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"",
               px(it->x), px(it->y), px(it->x2), px(it->y2));
    break;
  case SC_POLYLINE:
  case SC_POLYGON:
    open_tag(b, it->kind == SC_POLYGON ? "polygon" : "polyline", it);
    put_points(b, it);
    break;
  case SC_RECT:
    open_tag(b, "rect", it);
    buf_printf(b, " x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"",
               px(it->x), px(it->y), px(it->w), px(it->h));
    break;
  case SC_CIRCLE:
    open_tag(b, "circle", it);
    buf_printf(b, " cx=\"%.2f\" cy=\"%.2f\" r=\"%g\"", px(it->x), px(it->y),
               it->r);
    break;
  case SC_TEXT:
    put_text(b, it);
    return;
  }
  put_paint(b, &it->paint);
  buf_printf(b, "/>\n");
}

void svg_render(Buf *b, const Scene *s) {
  buf_printf(b,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
             "class=\"%s\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
             "font-size=\"11\">\n",
             s->cls, s->w, s->h, s->w, s->h);
  /* What each open SC_GROUP / SC_PANEL closes with. */
  const char **open = NULL;
  int depth = 0, cap = 0;
  for (int i = 0; i < s->n; i++) {
    const ScItem *it = &s->items[i];
    put_item(b, it);
    if (it->kind == SC_GROUP || it->kind == SC_PANEL)
      VEC_PUSH(open, depth, cap, it->kind == SC_GROUP ? "</g>\n" : "</svg>\n");
    else if (it->kind == SC_END && depth > 0)
      buf_printf(b, "%s", open[--depth]);
  }
  while (depth > 0)
    buf_printf(b, "%s", open[--depth]);
  free(open);
  buf_printf(b, "</svg>\n");
}
