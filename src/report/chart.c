/* chart.c — laying out a Chart into a Scene (report.h, "charts").
 *
 * A chart is laid out before anything is drawn: the margins depend on the
 * tick labels, the legend and the labels of the vertical lines, and a
 * stack must know every panel's height before it places the first one.
 * Drawing then only maps data to pixels, into the Scene every renderer
 * reads.
 *
 * Text widths are estimated (a mean glyph advance), not measured, so the
 * layout is the same whatever fonts the renderers find. Data outside the
 * axis ranges is clipped geometrically (no clip paths), so every
 * coordinate lies inside its panel, which tests/e2e/svg_check.py verifies
 * on the SVG. */
#include "chart_axis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
  DEFAULT_W = 760,
  DEFAULT_H = 420,
  MIN_W = 240,
  MIN_H = 160,
  MAX_SIDE = 20000,
  LEGEND_ROW = 18,
};

/* Okabe & Ito's palette, which stays distinct under the common forms of
 * colour blindness; yellow last, as it is faint on white. */
static const char *const PALETTE[] = {
    "#0072B2", "#E69F00", "#009E73", "#D55E00",
    "#CC79A7", "#56B4E9", "#000000", "#F0E442",
};
enum { NPALETTE = sizeof PALETTE / sizeof PALETTE[0] };

/* ---- the chart's data ---- */

static int nseries(const Chart *c) {
  return c->series && c->nseries > 0 ? c->nseries : 0;
}

static int series_n(const ChartSeries *s) {
  return s->y && s->n > 0 ? s->n : 0;
}

/* Without x values, points are numbered 0, 1, ... */
static double series_x(const ChartSeries *s, int k) {
  return s->x ? s->x[k] : k;
}

static bool is_bars(const Chart *c) {
  return c->kind == CHART_BARS || c->kind == CHART_STACKED_BARS;
}

static int category_count(const Chart *c) {
  int n = c->ncategories > 0 ? c->ncategories : 0;
  for (int i = 0; i < nseries(c); i++)
    if (series_n(&c->series[i]) > n)
      n = series_n(&c->series[i]);
  return n;
}

static const char *category_label(const Chart *c, int i, char *tmp,
                                   size_t cap) {
  if (c->categories && i < c->ncategories && c->categories[i])
    return c->categories[i];
  snprintf(tmp, cap, "%d", i + 1);
  return tmp;
}

static double bar_value(const ChartSeries *s, int cat) {
  return cat < series_n(s) ? s->y[cat] : NAN;
}

/* Stacks grow upward only: negative and missing parts count as 0. */
static double stack_part(const ChartSeries *s, int cat) {
  double v = bar_value(s, cat);
  return isfinite(v) && v > 0 ? fmin(v, 1e300) : 0;
}

static const char *series_name(const ChartSeries *s, int i, char *tmp,
                               size_t cap) {
  if (s->name && s->name[0])
    return s->name;
  snprintf(tmp, cap, "series %d", i + 1);
  return tmp;
}

/* The series' own colour, or the palette's next among the series that
 * have none. */
static const char *series_color(const Chart *c, int i) {
  if (chart_is_hex_color(c->series[i].color))
    return c->series[i].color;
  int k = 0;
  for (int j = 0; j < i; j++)
    k += !chart_is_hex_color(c->series[j].color);
  return PALETTE[k % NPALETTE];
}

enum {
  SHAPE_CIRCLE,
  SHAPE_SQUARE,
  SHAPE_DIAMOND,
  SHAPE_TRIANGLE,
  SHAPE_TRIANGLE_DOWN,
  SHAPE_HEXAGON,
  SHAPE_COUNT
};

/* Scatter series that are not lines get the marker shape they ask for,
 * else one of the first four in turn, so that they differ by more than
 * colour. */
static int series_shape(const Chart *c, int i) {
  if (c->series[i].marker > 0)
    return (c->series[i].marker - 1) % SHAPE_COUNT;
  int k = 0;
  for (int j = 0; j < i; j++)
    k += !c->series[j].line && c->series[j].marker <= 0;
  return k % 4;
}

static bool drawn_as_line(const Chart *c, const ChartSeries *s) {
  return c->kind == CHART_LINE || (c->kind == CHART_SCATTER && s->line);
}

/* A step series drawn as its edge alone, unfilled. */
static bool step_edge(const Chart *c, const ChartSeries *s) {
  return c->kind == CHART_STEP_AREA && s->line;
}

static int nmarks(const Chart *c) {
  return c->marks && c->nmarks > 0 && is_bars(c) ? c->nmarks : 0;
}

/* Legend entries: the series, then one for the marks when there are
 * any. */
static int nentries(const Chart *c) { return nseries(c) + (nmarks(c) > 0); }

static const char *entry_name(const Chart *c, int i, char *tmp, size_t cap) {
  if (i < nseries(c))
    return series_name(&c->series[i], i, tmp, cap);
  return c->marks_name && c->marks_name[0] ? c->marks_name : "reference";
}

/* The band above the plot that the title (and subtitle) take. */
static double title_band(const Chart *c) {
  return TITLE_BAND + (c->subtitle && c->subtitle[0] ? SUBTITLE_BAND : 0);
}

static Extent x_extent(const Chart *c, bool logx) {
  Extent e = {0};
  for (int i = 0; i < nseries(c); i++)
    for (int k = 0; k < series_n(&c->series[i]); k++)
      axis_extent_add(&e, series_x(&c->series[i], k), logx);
  for (int i = 0; c->vlines && i < c->nvlines; i++)
    axis_extent_add(&e, c->vlines[i].at, logx);
  return e;
}

static Extent y_extent(const Chart *c, const Axis *x, bool logy) {
  Extent e = {0};
  for (int i = 0; i < nseries(c); i++) {
    const ChartSeries *s = &c->series[i];
    int n = series_n(s);
    if (c->kind == CHART_STEP_AREA)
      n--; /* the last point only ends the last step */
    for (int k = 0; k < n; k++)
      if (is_bars(c) || axis_usable(x, series_x(s, k)))
        axis_extent_add(&e, s->y[k], logy);
  }
  if (c->kind == CHART_STACKED_BARS) {
    e = (Extent){0};
    for (int cat = 0; cat < category_count(c); cat++) {
      double sum = 0;
      for (int i = 0; i < nseries(c); i++) {
        sum += stack_part(&c->series[i], cat);
        axis_extent_add(&e, sum, logy);
      }
    }
  }
  for (int i = 0; i < nmarks(c); i++)
    axis_extent_add(&e, c->marks[i].y, logy);
  for (int i = 0; c->hlines && i < c->nhlines; i++)
    axis_extent_add(&e, c->hlines[i].at, logy);
  if (!logy && (c->kind == CHART_STEP_AREA || is_bars(c)))
    axis_extent_add(&e, 0, false); /* areas and bars grow from 0 */
  return e;
}

/* ---- layout ---- */

typedef struct Layout {
  double w, h;       /* the document (or panel) */
  double L, T, R, B; /* the plot rectangle */
  Axis x, y;
  int ncat;        /* bars: the categories */
  bool cat_slant;  /* bars: category labels slanted to fit */
  double xlabel_y; /* baseline of the x axis label */
  bool vupright;   /* vertical lines' labels turned upright */
  bool legend;       /* drawn with this panel (a stack may share one) */
  bool legend_below;
  double lx, ly, lw, lh, entry_w; /* the legend box and one entry's width */
  int lcols;
  char note[320]; /* the values a log axis cannot show, or "" */
  double note_y;  /* its baseline */
} Layout;

/* The legend goes right of the plot when it is narrow and short enough,
 * else below the x axis label in as many columns as fit (the document
 * grows to hold it). Returns the room taken on the right. */
static double layout_legend(const Chart *c, Layout *l, double plot_h) {
  int ne = l->legend ? nentries(c) : 0;
  char tmp[32];
  l->entry_w = 0;
  for (int i = 0; i < ne; i++)
    l->entry_w = fmax(l->entry_w, 30 + chart_text_w(entry_name(c, i, tmp,
                                                         sizeof tmp),
                                              FONT_LEGEND));
  if (ne == 0)
    return 20;
  l->lw = l->entry_w + 16;
  l->lh = 10 + ne * LEGEND_ROW;
  l->lcols = 1;
  if (l->lw <= 0.3 * l->w && l->lh <= plot_h)
    return l->lw + 28;
  l->legend_below = true;
  int cols = (int)((l->w - 40) / (l->entry_w + 12));
  l->lcols = cols < 1 ? 1 : cols > ne ? ne : cols;
  int rows = (ne + l->lcols - 1) / l->lcols;
  /* A name wider than the document still gets a box inside it. */
  l->lw = fmin(l->lcols * (l->entry_w + 12) + 4, l->w - 16);
  l->lh = 10 + rows * LEGEND_ROW;
  return 20;
}

typedef struct VLabel {
  double p, w;
  int i;
} VLabel;

static int by_position(const void *a, const void *b) {
  const VLabel *u = a, *v = b;
  if (u->p != v->p)
    return u->p < v->p ? -1 : 1;
  return u->i - v->i;
}

/* The labelled vertical lines inside the x range, left to right; the
 * caller frees *OUT. */
static int vlabels(const Chart *c, const Layout *l, VLabel **out) {
  int n = 0;
  *out = xcalloc(c->vlines && c->nvlines > 0 ? (size_t)c->nvlines : 1,
                 sizeof **out);
  for (int i = 0; c->vlines && i < c->nvlines; i++) {
    const ChartLine *v = &c->vlines[i];
    if (v->label && v->label[0] && axis_contains(&l->x, v->at))
      (*out)[n++] = (VLabel){axis_px(&l->x, v->at),
                             chart_text_w(v->label, FONT_NOTE), i};
  }
  qsort(*out, (size_t)n, sizeof **out, by_position);
  return n;
}

/* Room above the plot for the vertical lines' labels: one line of text
 * when each fits beside its neighbours, else the labels stand upright. */
static double layout_vlabels(const Chart *c, Layout *l) {
  VLabel *v;
  int n = vlabels(c, l, &v);
  double maxw = 0;
  for (int i = 0; i < n; i++) {
    maxw = fmax(maxw, v[i].w);
    if (i > 0 && v[i].p - v[i - 1].p < (v[i].w + v[i - 1].w) / 2 + 4)
      l->vupright = true;
  }
  free(v);
  if (n == 0)
    return 0;
  return l->vupright ? fmin(maxw, 90) + 8 : FONT_NOTE + 8;
}

static double layout_x_axis(const Chart *c, Layout *l) {
  if (is_bars(c)) {
    l->x.scale = SCALE_CATEGORY;
    l->ncat = category_count(c);
    l->x.lo = 0, l->x.hi = l->ncat > 0 ? l->ncat : 1;
    double gw = (l->R - l->L) / l->x.hi, maxw = 0;
    int lines = 1;
    char tmp[32];
    for (int i = 0; i < l->ncat; i++) {
      const char *s = category_label(c, i, tmp, sizeof tmp);
      Lines w;
      maxw = fmax(maxw, chart_text_w(s, FONT_TICK));
      if (!chart_wrap_label(s, gw - 6, &w))
        l->cat_slant = true;
      else if (w.n > lines)
        lines = w.n;
    }
    /* Level labels, wrapped onto a few lines if need be; slanted when
     * even that does not fit. */
    if (!l->cat_slant)
      return 20 + (lines - 1) * (FONT_TICK + 2);
    return maxw * sin(SLANT_DEG * PI / 180) + FONT_TICK + 16;
  }
  l->x.scale = c->logx ? SCALE_LOG : SCALE_LINEAR;
  int target = (int)chart_clamp((l->R - l->L) / 90, 3, 10);
  Extent e = x_extent(c, c->logx);
  if (c->kind == CHART_SCATTER)
    e = axis_pad_extent(e, c->logx, 0.05, true);
  axis_range(&l->x, e, c->xmin, c->xmax, target);
  axis_ticks(&l->x, target);
  return 20;
}

/* Slanted category labels reach left of their category: move the plot's
 * left edge right until none of them starts before the document does. */
static void fit_slanted_labels(const Chart *c, Layout *l) {
  char tmp[32];
  double reach = cos(SLANT_DEG * PI / 180);
  for (int iter = 0; iter < 3; iter++) {
    double gw = (l->R - l->L) / l->x.hi, need = 0;
    for (int i = 0; i < l->ncat; i++) {
      double w = chart_text_w(category_label(c, i, tmp, sizeof tmp), FONT_TICK);
      need = fmax(need, 4 - (l->L + gw * (i + 0.5) + 3 - w * reach));
    }
    if (need <= 0 || l->R - l->L - need < 60)
      return;
    l->L += need;
  }
}

/* A value a log axis cannot show: finite, and 0 or below. */
static bool off_log(bool log, double v) { return log && isfinite(v) && v <= 0; }

/* The note under a chart for the values its log axes cannot show (a bar
 * of 0 would otherwise vanish without a word), by series: "Not drawn, 0
 * or less on the log axis: SERIES at CATEGORY, CATEGORY; SERIES at ...",
 * as many as fit in MAXW px, then how many more. Empty when every value
 * shows. */
static void log_note(const Chart *c, double maxw, char *out, size_t cap) {
  Buf b = {0};
  int shown = 0, more = 0;
  bool logx = c->logx && !is_bars(c);
  char tmp[32];
  buf_printf(&b, "Not drawn, 0 or less on the log axis: ");
  for (int i = 0; i < nseries(c); i++) {
    const ChartSeries *se = &c->series[i];
    int in_series = 0;
    for (int k = 0; k < series_n(se); k++) {
      if (!off_log(c->logy, se->y[k]) &&
          !off_log(logx, se->x ? se->x[k] : 1))
        continue;
      char item[160], at[64];
      if (is_bars(c))
        snprintf(at, sizeof at, "%s", category_label(c, k, tmp, sizeof tmp));
      else
        snprintf(at, sizeof at, "x=%g", series_x(se, k));
      if (in_series)
        snprintf(item, sizeof item, ", %s", at);
      else
        snprintf(item, sizeof item, "%s%s at %s", shown ? "; " : "",
                 series_name(se, i, tmp, sizeof tmp), at);
      bool fits = chart_text_w(b.s, FONT_NOTE) + chart_text_w(item, FONT_NOTE) +
                      chart_text_w("; and 999 more", FONT_NOTE) <=
                  maxw;
      if (more == 0 && fits)
        buf_printf(&b, "%s", item), shown++, in_series++;
      else
        more++;
    }
  }
  if (more)
    buf_printf(&b, "%s%d more", shown ? "; and " : "", more);
  snprintf(out, cap, "%s", shown + more ? b.s : "");
  buf_free(&b);
}

/* MIN_LEFT and MIN_RIGHT: margins the plot keeps at least (a stack
 * aligns its panels' plots with them); LEGEND: the panel draws its
 * legend. */
static void layout(const Chart *c, Layout *l, double min_left,
                   double min_right, bool legend) {
  memset(l, 0, sizeof *l);
  l->legend = legend;
  l->w = chart_clamp(c->width > 0 ? c->width : DEFAULT_W, MIN_W, MAX_SIDE);
  l->h = chart_clamp(c->height > 0 ? c->height : DEFAULT_H, MIN_H, MAX_SIDE);
  double guess_h = l->h - title_band(c) - 60;
  double right = fmax(layout_legend(c, l, guess_h), min_right);

  /* The y ticks come first (for a guess of the plot height): their
   * labels set the left margin, and so the width of the x axis. */
  l->y.scale = c->logy ? SCALE_LOG : SCALE_LINEAR;
  int ty = (int)chart_clamp(guess_h / 45, 3, 8);
  l->x.scale = c->logx && !is_bars(c) ? SCALE_LOG : SCALE_LINEAR;
  Extent ye = y_extent(c, &l->x, c->logy);
  if (is_bars(c) || c->kind == CHART_SCATTER)
    ye = axis_pad_extent(ye, c->logy, 0.05, c->kind == CHART_SCATTER);
  axis_range(&l->y, ye, c->ymin, c->ymax, ty);
  axis_ticks(&l->y, ty);
  l->L = fmax(14 + FONT_LABEL + 8 + axis_label_w(&l->y) + 8, min_left);
  l->R = l->w - right;
  if (l->R - l->L < 60)
    l->R = l->L + 60, l->w = ceil(l->R + right);

  double band = layout_x_axis(c, l);
  if (l->cat_slant)
    fit_slanted_labels(c, l);
  l->x.p0 = l->L, l->x.p1 = l->R;
  double top = title_band(c) + layout_vlabels(c, l);
  double bottom = band + 30;
  /* Long labels take their room from a taller document, not from the
   * plot, once the plot is down to 40 % of the height asked for. */
  double min_plot = fmax(60, 0.4 * l->h);
  if (l->h - top - bottom < min_plot)
    l->h = ceil(top + bottom + min_plot);
  l->T = top, l->B = l->h - bottom;
  l->xlabel_y = l->B + band + 16;
  l->y.p0 = l->B, l->y.p1 = l->T;
  if (l->x.scale != SCALE_CATEGORY)
    axis_thin_labels(&l->x, true);
  axis_thin_labels(&l->y, false);

  if (l->legend_below) {
    l->lx = fmax(8, (l->w - l->lw) / 2), l->ly = l->h + 2;
    l->h = ceil(l->h + l->lh + 10);
  } else {
    l->lx = l->R + 16, l->ly = l->T;
  }
  log_note(c, l->w - 16, l->note, sizeof l->note);
  int lines = (l->note[0] != 0) + (c->notes ? c->nnotes : 0);
  if (lines > 0) {
    l->note_y = l->h + FONT_NOTE;
    l->h = ceil(l->h + lines * NOTE_ROW + 4);
  }
}

/* ---- drawing: frame, axes, reference lines, legend ---- */

static ScItem *draw_text(Scene *s, const char *cls, double x, double y,
                         Anchor a, double font, const char *text) {
  return sc_text(s, cls, x, y, a, font, text);
}

/* Text turned by DEG degrees about its anchor point. */
static void draw_turned_text(Scene *s, const char *cls, double x, double y,
                             double deg, Anchor a, double font,
                             const char *text) {
  sc_text(s, cls, x, y, a, font, text)->angle = deg;
}

static ScItem *draw_rect(Scene *s, const char *cls, double x, double y,
                         double w, double h) {
  ScItem *r = sc_add(s, SC_RECT, cls);
  r->x = x, r->y = y, r->w = w, r->h = h;
  return r;
}

static void draw_background(Scene *s, const Layout *l) {
  draw_rect(s, "background", 0, 0, l->w, l->h)->paint.fill = "#ffffff";
}

static void draw_grid(Scene *s, const Layout *l) {
  sc_group(s, "grid", (Paint){.stroke = "#e6e6e6", .width = 1});
  for (int i = 0; i < l->y.nticks; i++)
    if (l->y.ticks[i].major) {
      double y = axis_px(&l->y, l->y.ticks[i].v);
      sc_line(s, "grid", l->L, y, l->R, y);
    }
  for (int i = 0; l->x.scale != SCALE_CATEGORY && i < l->x.nticks; i++)
    if (l->x.ticks[i].major) {
      double x = axis_px(&l->x, l->x.ticks[i].v);
      sc_line(s, "grid", x, l->T, x, l->B);
    }
  sc_end(s);
}

static const char *scale_name(Scale sc) {
  return sc == SCALE_LOG        ? "log"
         : sc == SCALE_CATEGORY ? "category"
                                : "linear";
}

/* A category label on as many lines as wrap_label makes of it. */
static void draw_wrapped(Scene *s, double x, double y, double maxw,
                         const char *text) {
  Lines w;
  if (!chart_wrap_label(text, maxw, &w) || w.n <= 1) {
    draw_text(s, "tick", x, y, ANCHOR_MIDDLE, FONT_TICK, text);
    return;
  }
  Buf b = {0};
  for (int i = 0; i < w.n; i++)
    buf_printf(&b, "%s%.*s", i ? "\n" : "", (int)w.len[i], text + w.start[i]);
  draw_text(s, "tick", x, y, ANCHOR_MIDDLE, FONT_TICK, b.s);
  buf_free(&b);
}

static void draw_category_ticks(Scene *s, const Chart *c, const Layout *l) {
  char tmp[32];
  double gw = (l->R - l->L) / l->x.hi;
  for (int i = 0; i < l->ncat; i++) {
    double x = axis_px(&l->x, i + 0.5);
    const char *label = category_label(c, i, tmp, sizeof tmp);
    sc_line(s, "tick", x, l->B, x, l->B + 5);
    if (l->cat_slant)
      draw_turned_text(s, "tick", x + 3, l->B + 14, -SLANT_DEG, ANCHOR_END,
                       FONT_TICK, label);
    else
      draw_wrapped(s, x, l->B + 17, gw - 6, label);
  }
}

static void open_axis(Scene *s, const char *cls, const Axis *a) {
  sc_group(s, cls, (Paint){.stroke = "#333333", .fill = "#333333"})->scale =
      scale_name(a->scale);
}

static void draw_x_axis(Scene *s, const Chart *c, const Layout *l) {
  const Axis *a = &l->x;
  open_axis(s, "axis x", a);
  sc_line(s, "domain", l->L, l->B, l->R, l->B);
  if (a->scale == SCALE_CATEGORY)
    draw_category_ticks(s, c, l);
  for (int i = 0; i < a->nticks; i++) {
    const Tick *t = &a->ticks[i];
    double x = axis_px(a, t->v);
    sc_line(s, t->major ? "tick" : "tick minor", x, l->B, x,
            l->B + (t->major ? 5 : 3));
    if (t->labeled)
      draw_text(s, "tick", x, l->B + 17, ANCHOR_MIDDLE, FONT_TICK, t->text);
  }
  sc_end(s);
}

static void draw_y_axis(Scene *s, const Layout *l) {
  const Axis *a = &l->y;
  open_axis(s, "axis y", a);
  sc_line(s, "domain", l->L, l->T, l->L, l->B);
  for (int i = 0; i < a->nticks; i++) {
    const Tick *t = &a->ticks[i];
    double y = axis_px(a, t->v);
    sc_line(s, t->major ? "tick" : "tick minor", l->L - (t->major ? 5 : 3), y,
            l->L, y);
    if (t->labeled)
      draw_text(s, "tick", l->L - 8, y + 4, ANCHOR_END, FONT_TICK, t->text);
  }
  sc_end(s);
}

/* Bars below zero need the zero line to hang from. */
static void draw_zero_line(Scene *s, const Chart *c, const Layout *l) {
  if (!is_bars(c) || l->y.scale != SCALE_LINEAR || !(l->y.lo < 0) ||
      !(l->y.hi > 0))
    return;
  double y = axis_px(&l->y, 0);
  sc_group(s, "zero", (Paint){.stroke = "#333333", .width = 1});
  sc_line(s, "zero", l->L, y, l->R, y);
  sc_end(s);
}

static void draw_titles(Scene *s, const Chart *c, const Layout *l) {
  ScItem *t = draw_text(s, "title", l->w / 2, 24, ANCHOR_MIDDLE, FONT_TITLE,
                        c->title);
  t->bold = true, t->paint.fill = "#222222";
  if (c->subtitle && c->subtitle[0])
    draw_text(s, "subtitle", l->w / 2, 24 + SUBTITLE_BAND, ANCHOR_MIDDLE,
              FONT_SUBTITLE, c->subtitle)
        ->paint.fill = "#444444";
  draw_text(s, "xlabel", (l->L + l->R) / 2, l->xlabel_y, ANCHOR_MIDDLE,
            FONT_LABEL, c->xlabel);
  draw_turned_text(s, "ylabel", 18, (l->T + l->B) / 2, -90, ANCHOR_MIDDLE,
                   FONT_LABEL, c->ylabel);
}

/* Dashed grey lines across the plot, each labelled at its right end
 * (under the line when it runs along the top). */
static void draw_hlines(Scene *s, const Chart *c, const Layout *l) {
  for (int i = 0; c->hlines && i < c->nhlines; i++) {
    const ChartLine *h = &c->hlines[i];
    if (!axis_contains(&l->y, h->at))
      continue;
    double y = chart_clamp(axis_px(&l->y, h->at), l->T, l->B);
    sc_group(s, "hline", (Paint){.stroke = "#777777", .width = 1.2,
                                 .dash = "6 4", .fill = "#555555"});
    sc_line(s, "hline", l->L, y, l->R, y);
    if (h->label && h->label[0])
      draw_text(s, "hline-label", l->R - 4, y - 4 < l->T + 10 ? y + 13 : y - 4,
                ANCHOR_END, FONT_NOTE, h->label);
    sc_end(s);
  }
}

/* Thin lines across the plot (phase markers), labelled above it. Upright
 * labels closer than a text height to a kept one are left out: the line
 * stays, but text on text would be unreadable anyway. */
static void draw_vlines(Scene *s, const Chart *c, const Layout *l) {
  VLabel *v;
  int n = vlabels(c, l, &v);
  bool *shown = xcalloc(c->nvlines > 0 ? (size_t)c->nvlines : 1, 1);
  double last = -1e9;
  for (int k = 0; k < n; k++)
    if (!l->vupright || v[k].p - last >= FONT_NOTE + 1)
      shown[v[k].i] = true, last = v[k].p;
  free(v);
  for (int i = 0; c->vlines && i < c->nvlines; i++) {
    const ChartLine *vl = &c->vlines[i];
    if (!axis_contains(&l->x, vl->at))
      continue;
    double x = chart_clamp(axis_px(&l->x, vl->at), l->L, l->R);
    sc_group(s, "vline",
             (Paint){.stroke = "#999999", .width = 0.8, .fill = "#555555"});
    sc_line(s, "vline", x, l->T, x, l->B);
    if (shown[i] && l->vupright)
      draw_turned_text(s, "vline-label", x + 3.5, l->T - 4, -90, ANCHOR_START,
                       FONT_NOTE, vl->label);
    else if (shown[i])
      draw_text(s, "vline-label", x, l->T - 5, ANCHOR_MIDDLE, FONT_NOTE,
                vl->label);
    sc_end(s);
  }
  free(shown);
}

/* A marker centred on (X, Y): circle, square, diamond, triangle (up or
 * down) or hexagon. */
static void draw_marker(Scene *s, const char *cls, int shape, double x,
                        double y, double r) {
  if (shape == SHAPE_CIRCLE) {
    ScItem *c = sc_add(s, SC_CIRCLE, cls);
    c->x = x, c->y = y, c->r = r;
  } else if (shape == SHAPE_SQUARE) {
    r *= 0.9;
    draw_rect(s, cls, x - r, y - r, 2 * r, 2 * r);
  } else if (shape == SHAPE_DIAMOND) {
    r *= 1.25;
    double p[] = {x, y - r, x + r, y, x, y + r, x - r, y};
    sc_poly(s, SC_POLYGON, cls, 4, p);
  } else if (shape == SHAPE_TRIANGLE || shape == SHAPE_TRIANGLE_DOWN) {
    r *= 1.2;
    double up = shape == SHAPE_TRIANGLE ? 1 : -1;
    double p[] = {x, y - up * r, x + r, y + up * 0.8 * r, x - r,
                  y + up * 0.8 * r};
    sc_poly(s, SC_POLYGON, cls, 3, p);
  } else {
    r *= 1.1;
    double p[12];
    for (int k = 0; k < 6; k++)
      p[2 * k] = x + r * cos(PI / 3 * k),
            p[2 * k + 1] = y + r * sin(PI / 3 * k);
    sc_poly(s, SC_POLYGON, cls, 6, p);
  }
}

/* The marks' look: a black diamond with a white rim, unlike any bar. */
#define MARK_FILL "#000000"
#define MARK_SHAPE SHAPE_DIAMOND

static void draw_swatch(Scene *s, const Chart *c, int i, double x, double y) {
  if (i >= nseries(c)) {
    sc_group(s, "swatch", (Paint){.fill = MARK_FILL});
    draw_marker(s, "point", MARK_SHAPE, x + 11, y, 4);
    sc_end(s);
    return;
  }
  const ChartSeries *se = &c->series[i];
  const char *color = series_color(c, i);
  if (drawn_as_line(c, se) || step_edge(c, se)) {
    sc_line(s, "swatch", x, y, x + 22, y)->paint =
        (Paint){.stroke = color, .width = 2, .dash = se->dashed ? "5 3" : NULL};
  } else if (c->kind == CHART_SCATTER && se->ring) {
    sc_group(s, "swatch", (Paint){.fill = "none", .stroke = color,
                                  .width = 1.6});
    draw_marker(s, "point", SHAPE_CIRCLE, x + 11, y, 6);
    sc_end(s);
  } else if (c->kind == CHART_SCATTER) {
    sc_group(s, "swatch", (Paint){.fill = color});
    draw_marker(s, "point", series_shape(c, i), x + 11, y, 4);
    sc_end(s);
  } else {
    bool area = c->kind == CHART_STEP_AREA;
    draw_rect(s, "swatch", x, y - 5, 22, 10)->paint =
        (Paint){.fill = color,
                .opacity = area ? 0.35 : se->dashed ? LIGHT_BAR : 1,
                .stroke = color, .dash = se->dashed ? "5 3" : NULL};
  }
}

static void draw_legend(Scene *s, const Chart *c, const Layout *l) {
  int ne = nentries(c);
  char tmp[32];
  sc_group(s, "legend", (Paint){0});
  if (ne > 0)
    draw_rect(s, "legend-box", l->lx, l->ly, l->lw, l->lh)->paint =
        (Paint){.fill = "#ffffff", .stroke = "#cccccc"};
  for (int i = 0; i < ne; i++) {
    const char *name = entry_name(c, i, tmp, sizeof tmp);
    double x = l->lx + 8 + (i % l->lcols) * (l->entry_w + 12);
    double y = l->ly + 5 + (i / l->lcols) * LEGEND_ROW + LEGEND_ROW / 2.0;
    sc_group(s, "legend-entry", (Paint){0})->name = sc_str(s, name);
    draw_swatch(s, c, i, x, y);
    draw_text(s, "legend-text", x + 30, y + 4, ANCHOR_START, FONT_LEGEND,
              name);
    sc_end(s);
  }
  sc_end(s);
}

/* ---- drawing: series ---- */

typedef struct Rect {
  double x0, y0, x1, y1;
} Rect;

static Rect plot_rect(const Layout *l) {
  return (Rect){l->L, l->T, l->R, l->B};
}

/* Liang-Barsky: shorten the segment A-B to its part inside R. False when
 * none of it is inside; *CUT_A / *CUT_B say whether an end moved. */
static bool clip_segment(Rect r, double *ax, double *ay, double *bx,
                         double *by, bool *cut_a, bool *cut_b) {
  double dx = *bx - *ax, dy = *by - *ay, t0 = 0, t1 = 1;
  double p[4] = {-dx, dx, -dy, dy};
  double q[4] = {*ax - r.x0, r.x1 - *ax, *ay - r.y0, r.y1 - *ay};
  for (int i = 0; i < 4; i++) {
    if (p[i] == 0) {
      if (q[i] < 0)
        return false;
      continue;
    }
    double t = q[i] / p[i];
    if (p[i] < 0 && t > t0)
      t0 = t;
    else if (p[i] > 0 && t < t1)
      t1 = t;
  }
  if (t0 > t1)
    return false;
  double x0 = *ax + t0 * dx, y0 = *ay + t0 * dy;
  *cut_a = t0 > 0, *cut_b = t1 < 1;
  *bx = *ax + t1 * dx, *by = *ay + t1 * dy;
  *ax = x0, *ay = y0;
  return true;
}

/* The points of one polyline being built. */
typedef struct Poly {
  double *pts;
  int n, cap; /* doubles */
} Poly;

static void poly_add(Poly *p, double x, double y) {
  VEC_PUSH(p->pts, p->n, p->cap, x);
  VEC_PUSH(p->pts, p->n, p->cap, y);
}

/* Draw P as a polyline (of two points or more) and empty it. */
static void poly_flush(Scene *s, Poly *p) {
  if (p->n >= 4)
    sc_poly(s, SC_POLYLINE, "line", p->n / 2, p->pts)->paint.fill = "none";
  p->n = 0;
}

static bool point_usable(const Layout *l, const ChartSeries *s, int k) {
  return k >= 0 && k < series_n(s) && axis_usable(&l->x, series_x(s, k)) &&
         axis_usable(&l->y, s->y[k]);
}

/* A polyline through the usable points, broken where a point is missing
 * (non-finite, or not positive on a log axis) and clipped to the plot. A
 * point with no usable neighbour gets a dot, as it has no segment. */
static void draw_line_series(Scene *sc, const Layout *l, const ChartSeries *s,
                             const char *color) {
  Rect r = plot_rect(l);
  Poly p = {0};
  for (int k = 0; k < series_n(s); k++) {
    if (!point_usable(l, s, k)) {
      poly_flush(sc, &p);
      continue;
    }
    double x = axis_px(&l->x, series_x(s, k)), y = axis_px(&l->y, s->y[k]);
    if (!point_usable(l, s, k - 1)) {
      if (!point_usable(l, s, k + 1) && axis_contains(&l->x, series_x(s, k)) &&
          axis_contains(&l->y, s->y[k])) {
        ScItem *dot = sc_add(sc, SC_CIRCLE, "point");
        dot->x = x, dot->y = y, dot->r = 2.5;
        dot->paint = (Paint){.fill = color, .stroke = "none"};
      }
      continue;
    }
    double ax = axis_px(&l->x, series_x(s, k - 1)),
           ay = axis_px(&l->y, s->y[k - 1]), bx = x, by = y;
    bool cut_a, cut_b;
    if (!clip_segment(r, &ax, &ay, &bx, &by, &cut_a, &cut_b)) {
      poly_flush(sc, &p);
      continue;
    }
    if (cut_a)
      poly_flush(sc, &p);
    if (p.n == 0)
      poly_add(&p, ax, ay);
    poly_add(&p, bx, by);
    if (cut_b)
      poly_flush(sc, &p);
  }
  poly_flush(sc, &p);
  free(p.pts);
}

static void close_area(Scene *s, Poly *area, Poly *edge, double x,
                       double base, bool fill) {
  poly_add(area, x, base);
  if (fill)
    sc_poly(s, SC_POLYGON, "area", area->n / 2, area->pts)->paint.stroke =
        "none";
  area->n = 0;
  poly_flush(s, edge);
}

/* Steps held from x[k] to x[k+1] at y[k], filled down to the baseline
 * (0, or the bottom of a log axis), one polygon per unbroken run; a
 * missing value (NaN) breaks the run. */
static void draw_step_series(Scene *sc, const Layout *l,
                             const ChartSeries *s) {
  int n = series_n(s);
  double base = l->y.scale == SCALE_LOG
                    ? l->B
                    : chart_clamp(axis_px(&l->y, 0), l->T, l->B);
  Poly area = {0}, edge = {0};
  double right = 0; /* the right end of the run's last step */
  for (int k = 0; k + 1 < n; k++) {
    double x0v = series_x(s, k), x1v = series_x(s, k + 1), v = s->y[k];
    bool ok = axis_usable(&l->x, x0v) && axis_usable(&l->x, x1v) &&
              isfinite(v);
    if (ok) {
      double x0 = chart_clamp(axis_px(&l->x, x0v), l->L, l->R);
      right = chart_clamp(axis_px(&l->x, x1v), l->L, l->R);
      double y = axis_usable(&l->y, v) ? chart_clamp(axis_px(&l->y, v), l->T, l->B)
                                       : base;
      if (area.n == 0)
        poly_add(&area, x0, base);
      poly_add(&area, x0, y), poly_add(&area, right, y);
      poly_add(&edge, x0, y), poly_add(&edge, right, y);
    }
    if (area.n > 0 && (!ok || k + 2 >= n))
      close_area(sc, &area, &edge, right, base, !s->line);
  }
  free(area.pts);
  free(edge.pts);
}

/* Boxes already taken by markers and labels, to place labels in free
 * space. */
typedef struct Box {
  double x0, y0, x1, y1;
} Box;

typedef struct Boxes {
  Box *v;
  int n, cap;
} Boxes;

static bool boxes_hit(const Boxes *bs, Box a) {
  for (int i = 0; i < bs->n; i++) {
    const Box *o = &bs->v[i];
    if (a.x0 < o->x1 && o->x0 < a.x1 && a.y0 < o->y1 && o->y0 < a.y1)
      return true;
  }
  return false;
}

static bool scatter_point(const Layout *l, const ChartSeries *s, int k,
                          double *x, double *y) {
  if (!point_usable(l, s, k) || !axis_contains(&l->x, series_x(s, k)) ||
      !axis_contains(&l->y, s->y[k]))
    return false;
  *x = axis_px(&l->x, series_x(s, k)), *y = axis_px(&l->y, s->y[k]);
  return true;
}

/* Where a label of width W would go at candidate I of POINT_SPOTS: its
 * baseline start (or end, for left-hand spots) and its box. */
enum { POINT_RINGS = 3, POINT_SPOTS = 4 * POINT_RINGS };
static Box label_spot(double x, double y, double w, int i, double *tx,
                      double *ty) {
  static const double DX[4] = {6, 6, -6, -6}, DY[4] = {-5, 12, -5, 12};
  double out = (i / 4) * (FONT_NOTE + 1); /* further rings move away */
  int k = i % 4;
  *tx = x + DX[k], *ty = y + DY[k] + (DY[k] < 0 ? -out : out);
  return (Box){DX[k] > 0 ? *tx : *tx - w, *ty - FONT_NOTE,
               DX[k] > 0 ? *tx + w : *tx, *ty + 2};
}

/* A point's label goes to the first free spot among up-right, down-right,
 * up-left and down-left that stays inside the plot, then the same a line
 * further out (twice); else the first spot inside the plot. */
static void draw_point_label(Scene *s, const Layout *l, Boxes *taken,
                             double x, double y, const char *text) {
  double w = chart_text_w(text, FONT_NOTE), tx, ty;
  int pick = -1;
  for (int pass = 0; pass < 2 && pick < 0; pass++)
    for (int i = 0; i < POINT_SPOTS && pick < 0; i++) {
      Box bx = label_spot(x, y, w, i, &tx, &ty);
      bool inside = bx.x0 >= l->L && bx.x1 <= l->R && bx.y0 >= l->T &&
                    bx.y1 <= l->B;
      if (inside && (pass == 1 || !boxes_hit(taken, bx)))
        pick = i;
    }
  if (pick < 0)
    pick = x + 6 + w <= l->R ? 0 : 2;
  Box bx = label_spot(x, y, w, pick, &tx, &ty);
  VEC_PUSH(taken->v, taken->n, taken->cap, bx);
  draw_text(s, "point-label", tx, ty, pick % 4 < 2 ? ANCHOR_START : ANCHOR_END,
            FONT_NOTE, text);
}

static void draw_scatter_series(Scene *sc, const Chart *c, const Layout *l,
                                int i, Boxes *taken) {
  const ChartSeries *s = &c->series[i];
  double x, y;
  for (int k = 0; k < series_n(s); k++)
    if (scatter_point(l, s, k, &x, &y))
      draw_marker(sc, "point", s->ring ? SHAPE_CIRCLE : series_shape(c, i),
                  x, y, s->ring ? 7 : 3.5);
  sc_group(sc, "point-labels", (Paint){.fill = "#333333", .stroke = "none"});
  for (int k = 0; s->labels && k < series_n(s); k++)
    if (s->labels[k] && s->labels[k][0] && scatter_point(l, s, k, &x, &y))
      draw_point_label(sc, l, taken, x, y, s->labels[k]);
  sc_end(sc);
}

/* Markers take their room before any label is placed, so that no label
 * covers a point of a later series. */
static void mark_points(const Chart *c, const Layout *l, Boxes *taken) {
  for (int i = 0; i < nseries(c); i++) {
    const ChartSeries *s = &c->series[i];
    double x, y;
    for (int k = 0; !s->line && k < series_n(s); k++)
      if (scatter_point(l, s, k, &x, &y)) {
        Box bx = {x - 4, y - 4, x + 4, y + 4};
        VEC_PUSH(taken->v, taken->n, taken->cap, bx);
      }
  }
}

static void draw_bar(Scene *s, double x, double w, double y0, double y1,
                     double v) {
  ScItem *r = draw_rect(s, "bar", x, fmin(y0, y1), w, fabs(y1 - y0));
  r->has_value = true, r->value = v;
}

/* The pixel of bar value V, held inside the plot; values a log axis cannot
 * show sit at its bottom. */
static double bar_px(const Layout *l, double v) {
  if (!axis_usable(&l->y, v))
    return l->B;
  return chart_clamp(axis_px(&l->y, v), l->T, l->B);
}

/* Where the bars of category CAT go: a group's width, and the left edge
 * and width of series I's bar in it (the whole stack's for stacks). */
static double bar_slot(const Chart *c, const Layout *l, int cat, int i,
                       double *w) {
  double gw = (l->R - l->L) / l->x.hi;
  if (c->kind == CHART_STACKED_BARS) {
    *w = gw * 0.6;
    return l->L + gw * cat + gw * 0.2;
  }
  *w = gw * 0.8 / nseries(c);
  return l->L + gw * cat + gw * 0.1 + *w * i;
}

static void draw_bar_series(Scene *sc, const Chart *c, const Layout *l,
                            int i) {
  const ChartSeries *s = &c->series[i];
  double base = l->y.scale == SCALE_LOG ? l->B : bar_px(l, 0);
  for (int cat = 0; cat < series_n(s); cat++) {
    double v = s->y[cat], bw;
    if (!isfinite(v))
      continue;
    double x = bar_slot(c, l, cat, i, &bw);
    double gap = bw > 4 ? 1 : 0; /* a hairline between neighbouring bars */
    draw_bar(sc, x + gap / 2, bw - gap, base, bar_px(l, v), v);
  }
}

static void draw_stacked_series(Scene *sc, const Chart *c, const Layout *l,
                                int i) {
  for (int cat = 0; cat < series_n(&c->series[i]); cat++) {
    double below = 0, bw;
    for (int j = 0; j < i; j++)
      below += stack_part(&c->series[j], cat);
    double part = stack_part(&c->series[i], cat);
    double x = bar_slot(c, l, cat, i, &bw);
    draw_bar(sc, x, bw, bar_px(l, below), bar_px(l, below + part), part);
  }
}

/* The marks over the bars, as one more series. */
static void draw_marks(Scene *s, const Chart *c, const Layout *l) {
  char tmp[32];
  sc_group(s, "series", (Paint){.fill = MARK_FILL, .stroke = "#ffffff",
                                .width = 1})
      ->name = sc_str(s, entry_name(c, nseries(c), tmp, sizeof tmp));
  for (int i = 0; i < nmarks(c); i++) {
    const ChartMark *m = &c->marks[i];
    int bar = m->series >= 0 && m->series < nseries(c) ? m->series : 0;
    double bw;
    if (m->category < 0 || m->category >= l->ncat ||
        !axis_contains(&l->y, m->y))
      continue;
    double x = bar_slot(c, l, m->category, bar, &bw) + bw / 2;
    draw_marker(s, "point mark", MARK_SHAPE, x, axis_px(&l->y, m->y), 5);
    s->items[s->n - 1].has_value = true;
    s->items[s->n - 1].value = m->y;
  }
  sc_end(s);
}

static void open_series(Scene *s, const Chart *c, int i) {
  const ChartSeries *se = &c->series[i];
  const char *color = series_color(c, i);
  char tmp[32];
  Paint p;
  if (drawn_as_line(c, se) || step_edge(c, se))
    p = (Paint){.fill = "none", .stroke = color, .width = 2, .round = true};
  else if (c->kind == CHART_STEP_AREA)
    p = (Paint){.fill = color, .opacity = 0.35, .stroke = color,
                .width = 1.5};
  else if (c->kind == CHART_SCATTER && se->ring)
    p = (Paint){.fill = "none", .stroke = color, .width = 1.6};
  else if (c->kind == CHART_SCATTER)
    p = (Paint){.fill = color, .stroke = "#ffffff", .width = 0.6};
  else if (se->dashed) /* bars: a light counterpart, outlined */
    p = (Paint){.fill = color, .opacity = LIGHT_BAR, .stroke = color,
                .width = 1.2};
  else
    p = (Paint){.fill = color, .stroke = "none"};
  if (se->dashed)
    p.dash = "6 4";
  sc_group(s, "series", p)->name =
      sc_str(s, series_name(se, i, tmp, sizeof tmp));
}

static void draw_series(Scene *sc, const Chart *c, const Layout *l) {
  Boxes taken = {0};
  if (c->kind == CHART_SCATTER)
    mark_points(c, l, &taken);
  for (int i = 0; i < nseries(c); i++) {
    const ChartSeries *s = &c->series[i];
    open_series(sc, c, i);
    if (drawn_as_line(c, s))
      draw_line_series(sc, l, s, series_color(c, i));
    else if (c->kind == CHART_SCATTER)
      draw_scatter_series(sc, c, l, i, &taken);
    else if (c->kind == CHART_STEP_AREA)
      draw_step_series(sc, l, s);
    else if (c->kind == CHART_BARS)
      draw_bar_series(sc, c, l, i);
    else
      draw_stacked_series(sc, c, l, i);
    sc_end(sc);
  }
  if (nmarks(c) > 0)
    draw_marks(sc, c, l);
  free(taken.v);
}

/* Under the chart, a line each: the values its log axes cannot show,
 * then the chart's own notes. */
static void draw_notes(Scene *s, const Chart *c, const Layout *l) {
  double y = l->note_y;
  if (l->note[0]) {
    draw_text(s, "axis-note", 8, y, ANCHOR_START, FONT_NOTE, l->note)
        ->paint.fill = "#444444";
    y += NOTE_ROW;
  }
  for (int i = 0; c->notes && i < c->nnotes; i++, y += NOTE_ROW)
    draw_text(s, "note", 8, y, ANCHOR_START, FONT_NOTE, c->notes[i])
        ->paint.fill = "#444444";
}

/* Everything of one chart, on its own or as a panel. */
static void draw_chart(Scene *s, const Chart *c, const Layout *l) {
  draw_background(s, l);
  draw_titles(s, c, l);
  draw_grid(s, l);
  draw_series(s, c, l);
  draw_zero_line(s, c, l);
  draw_hlines(s, c, l);
  draw_vlines(s, c, l);
  draw_x_axis(s, c, l);
  draw_y_axis(s, l);
  if (l->legend)
    draw_legend(s, c, l);
  draw_notes(s, c, l);
}

void chart_scene(Scene *s, const Chart *c) {
  Layout l;
  layout(c, &l, 0, 0, true);
  s->cls = "chart", s->w = l.w, s->h = l.h;
  draw_chart(s, c, &l);
}

/* Do A and B's legends say the same: every entry's name, colour and
 * marker? */
static bool same_legend(const Chart *a, const Chart *b) {
  int ne = nentries(a);
  if (ne != nentries(b) || a->kind != b->kind || nseries(a) != nseries(b))
    return false;
  char ta[32], tb[32];
  for (int i = 0; i < ne; i++)
    if (strcmp(entry_name(a, i, ta, sizeof ta), entry_name(b, i, tb, sizeof tb)))
      return false;
  for (int i = 0; i < nseries(a); i++)
    if (strcmp(series_color(a, i), series_color(b, i)) ||
        series_shape(a, i) != series_shape(b, i) ||
        a->series[i].dashed != b->series[i].dashed ||
        a->series[i].line != b->series[i].line ||
        a->series[i].ring != b->series[i].ring)
      return false;
  return true;
}

void stack_scene(Scene *s, const char *title, const char *subtitle, int n,
                 const Chart *charts) {
  if (!charts || n < 0)
    n = 0;
  /* Consecutive panels whose legends say the same share one, under the
   * last of them: a study's fronts would otherwise repeat a long legend
   * per panel. */
  bool *own = xcalloc(n > 0 ? (size_t)n : 1, sizeof *own);
  for (int i = 0; i < n; i++)
    own[i] = i == n - 1 || !same_legend(&charts[i], &charts[i + 1]);
  bool sub = subtitle && subtitle[0];
  double band = STACK_TITLE_BAND + (sub ? SUBTITLE_BAND : 0);
  /* Laid out twice: the second time with the widest margins of the
   * first, so that every panel's plot has the same room and the plots
   * line up. */
  Layout *l = xcalloc(n > 0 ? (size_t)n : 1, sizeof *l);
  double left = 0, right = 0;
  for (int i = 0; i < n; i++) {
    layout(&charts[i], &l[i], 0, 0, own[i]);
    left = fmax(left, l[i].L);
    right = fmax(right, l[i].w - l[i].R);
  }
  double w = MIN_W, h = band;
  for (int i = 0; i < n; i++) {
    layout(&charts[i], &l[i], left, right, own[i]);
    w = fmax(w, l[i].w);
    h += l[i].h;
  }
  s->cls = "chart-stack", s->w = w, s->h = h;
  draw_rect(s, "background", 0, 0, w, h)->paint.fill = "#ffffff";
  ScItem *t = draw_text(s, "stack-title", w / 2, 24, ANCHOR_MIDDLE,
                        FONT_TITLE + 1, title);
  t->bold = true, t->paint.fill = "#222222";
  if (sub)
    draw_text(s, "stack-subtitle", w / 2, 24 + SUBTITLE_BAND, ANCHOR_MIDDLE,
              FONT_SUBTITLE, subtitle)
        ->paint.fill = "#444444";
  double y = band;
  for (int i = 0; i < n; i++) {
    ScItem *p = sc_add(s, SC_PANEL, "chart");
    p->x = 0, p->y = y, p->w = l[i].w, p->h = l[i].h;
    draw_chart(s, &charts[i], &l[i]);
    sc_end(s);
    y += l[i].h;
  }
  free(l);
  free(own);
}

/* A chart (or a stack of them) drawn and rendered in format F. */
void chart_render(Buf *b, const Chart *c, Format f) {
  Scene s = {0};
  chart_scene(&s, c);
  scene_render(b, &s, f);
  scene_free(&s);
}

void stack_render(Buf *b, const char *title, const char *subtitle, int n,
                  const Chart *charts, Format f) {
  Scene s = {0};
  stack_scene(&s, title, subtitle, n, charts);
  scene_render(b, &s, f);
  scene_free(&s);
}
