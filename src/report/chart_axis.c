/* chart_axis.c — a chart's text widths and axes (chart_axis.h): the
 * estimated width of a label and its wrapping, the numbers of the tick
 * labels, and an axis's range and ticks, linear or logarithmic, thinned
 * so that labels do not overlap. chart.c lays the chart out with them. */
#include "chart_axis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- text ---- */

/* Estimated width in px of the first LEN bytes of S: characters (not
 * bytes) times a mean advance. */
static double text_wn(const char *s, size_t len, double font) {
  int n = 0;
  for (size_t i = 0; i < len && s[i]; i++)
    n += (s[i] & 0xC0) != 0x80;
  return n * font * GLYPH_W;
}

double chart_text_w(const char *s, double font) {
  return s ? text_wn(s, strlen(s), font) : 0;
}

/* Greedy word wrap of S into lines no wider than MAXW px. False when that
 * takes more than MAX_LINES lines or a word alone is too wide. */
bool chart_wrap_label(const char *s, double maxw, Lines *l) {
  l->n = 0;
  size_t i = strspn(s, " ");
  while (s[i]) {
    size_t start = i, end = 0; /* the end of the longest line that fits */
    for (;;) {
      size_t j = i + strcspn(s + i, " ");
      if (text_wn(s + start, j - start, FONT_TICK) > maxw)
        break;
      end = j;
      i = j + strspn(s + j, " ");
      if (!s[i])
        break;
    }
    if (end == 0 || l->n == MAX_LINES)
      return false;
    l->start[l->n] = start, l->len[l->n] = end - start;
    l->n++;
    i = end + strspn(s + end, " ");
  }
  return true;
}

bool chart_is_hex_color(const char *s) {
  if (!s || s[0] != '#')
    return false;
  size_t n = strlen(s + 1);
  if (n != 6 && n != 3)
    return false;
  return strspn(s + 1, "0123456789abcdefABCDEF") == n;
}

double chart_clamp(double v, double lo, double hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* ---- numbers on axes ---- */

/* M with SIG significant digits in fixed notation, trailing zeros trimmed;
 * returns the value the text denotes. */
static double fmt_fixed(char *out, size_t cap, double m, int sig) {
  int mag = (int)floor(log10(fabs(m)));
  int decimals = (int)chart_clamp(sig - 1 - mag, 0, 15);
  snprintf(out, cap, "%.*f", decimals, m);
  if (strchr(out, '.')) {
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '0')
      out[--n] = 0;
    if (n > 0 && out[n - 1] == '.')
      out[--n] = 0;
  }
  if (strcmp(out, "-0") == 0)
    snprintf(out, cap, "0");
  return strtod(out, NULL);
}

/* V with SIG significant digits in the compact form: 0.25, 250, 2.5k,
 * 2.5M, 2.5e-3. Returns the value the text denotes. */
static double fmt_sig(char *out, size_t cap, double v, int sig) {
  static const char SI[] = "kMGTP";
  double a = fabs(v);
  char m[24];
  if (a >= 1000 && a < 1e15) {
    for (int k = (int)floor(log10(a) / 3); k <= 5; k++) {
      double scale = pow(1000, k), r = fmt_fixed(m, sizeof m, v / scale, sig);
      if (fabs(r) < 1000 || k == 5) {
        snprintf(out, cap, "%s%c", m, SI[k - 1]);
        return r * scale;
      }
    }
  }
  if (a >= 0.01 && a < 1e15)
    return fmt_fixed(out, cap, v, sig);
  int e = (int)floor(log10(a));
  double r = fmt_fixed(m, sizeof m, v / pow(10, e), sig);
  if (fabs(r) >= 10)
    e++, r = fmt_fixed(m, sizeof m, v / pow(10, e), sig);
  snprintf(out, cap, "%se%d", m, e);
  return r * pow(10, e);
}

/* The shortest compact text for V that denotes it within TOL: tick values
 * are multiples of a step, so TOL (a fraction of the step) decides how many
 * digits the labels need to tell the ticks apart. */
static void fmt_num(char *out, size_t cap, double v, double tol) {
  if (v == 0 || fabs(v) <= tol) {
    snprintf(out, cap, "0");
    return;
  }
  for (int sig = 1; sig <= 17; sig++)
    if (fabs(fmt_sig(out, cap, v, sig) - v) <= tol)
      return;
}

/* The 1-2-5 value at or above RAW. */
static double nice_step(double raw) {
  if (!(raw > 0) || !isfinite(raw))
    return 1;
  double e = pow(10, floor(log10(raw)));
  double f = raw / e;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

/* The 1-2-5 step for LO..HI in about TARGET intervals. Of the three steps
 * around (HI - LO) / TARGET, the one that best balances the room lost when
 * the range is rounded out to it (ROUND_OUT) against how far its number of
 * intervals is from TARGET; ties go to the coarser. 0..154 in 6: 20 (to
 * 160), not 50 (to 200). */
static double tick_step(double lo, double hi, int target, bool round_out) {
  double span = hi - lo, mid = nice_step(span / target);
  double cand[3] = {nice_step(mid * 1.01), mid, nice_step(mid * 0.4)};
  double best = cand[0], best_score = INFINITY;
  for (int i = 0; i < 3; i++) {
    double s = cand[i], a = lo, b = hi;
    if (round_out)
      a = floor(lo / s + 1e-9) * s, b = ceil(hi / s - 1e-9) * s;
    double n = (b - a) / s;
    if (i > 0 && n > 1.5 * target)
      continue;
    double score = (b - a - span) / span + 0.5 * fabs(n - target) / target;
    if (score < best_score - 1e-9)
      best = s, best_score = score;
  }
  return best;
}

/* ---- axes ---- */

/* Values too large to subtract safely are treated as missing. */
bool axis_usable(const Axis *a, double v) {
  return isfinite(v) && fabs(v) <= 1e300 && (a->scale != SCALE_LOG || v > 0);
}

/* The pixel of V; far outside values are held at +-1e7 px so that the
 * clipping that follows gets finite numbers. */
double axis_px(const Axis *a, double v) {
  double t;
  if (a->scale == SCALE_LOG)
    t = (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
  else
    t = (v - a->lo) / (a->hi - a->lo);
  return chart_clamp(a->p0 + t * (a->p1 - a->p0), -1e7, 1e7);
}

bool axis_contains(const Axis *a, double v) {
  if (!axis_usable(a, v))
    return false;
  double p = axis_px(a, v), lo = fmin(a->p0, a->p1), hi = fmax(a->p0, a->p1);
  return p >= lo - 0.5 && p <= hi + 0.5;
}

void axis_extent_add(Extent *e, double v, bool log) {
  if (!isfinite(v) || fabs(v) > 1e300 || (log && !(v > 0)))
    return;
  if (!e->any || v < e->lo)
    e->lo = v;
  if (!e->any || v > e->hi)
    e->hi = v;
  e->any = true;
}

/* The range shown: the caller's when it is usable, else the data's rounded
 * out to nice values so that ticks fall on both ends; an empty extent
 * gives 0..1 (1..10 on a log axis). */
void axis_range(Axis *a, Extent e, double umin, double umax, int target) {
  bool log = a->scale == SCALE_LOG;
  if (!(umin == 0 && umax == 0) && fabs(umin) <= 1e300 && fabs(umax) <= 1e300 &&
      umin < umax && (!log || umin > 0)) {
    a->lo = umin, a->hi = umax;
    return;
  }
  double lo = e.any ? e.lo : log ? 1 : 0, hi = e.any ? e.hi : log ? 10 : 1;
  if (log) {
    lo = pow(10, floor(log10(lo) + 1e-9));
    hi = pow(10, ceil(log10(hi) - 1e-9));
    if (hi <= lo)
      hi = lo * 10;
  } else {
    if (hi - lo <= fabs(hi) * 1e-12) {
      double d = hi == 0 ? 1 : fabs(hi) * 0.5;
      lo = lo == 0 ? 0 : lo - d;
      hi += d;
    }
    double step = tick_step(lo, hi, target, true);
    lo = floor(lo / step + 1e-9) * step;
    hi = ceil(hi / step - 1e-9) * step;
    a->step = step;
  }
  a->lo = lo, a->hi = hi;
}

/* Whether V is in the range shown (pixels are not known yet when ticks are
 * chosen). */
static bool in_range(const Axis *a, double v) {
  double slack = (a->hi - a->lo) * 1e-9;
  return v >= a->lo - slack && v <= a->hi + slack;
}

static void add_tick(Axis *a, double v, bool major, bool labeled, double tol) {
  if (a->nticks == MAX_TICKS)
    return;
  Tick *t = &a->ticks[a->nticks++];
  t->v = v, t->major = major, t->labeled = labeled;
  fmt_num(t->text, sizeof t->text, v, tol);
}

/* Multiples of a 1-2-5 step (the one the range was rounded to, if it
 * was), at least two of them inside the range. */
static void linear_ticks(Axis *a, int target) {
  double span = a->hi - a->lo;
  double step = a->step > 0 ? a->step : tick_step(a->lo, a->hi, target, false);
  double k0 = ceil(a->lo / step - 1e-9), k1 = floor(a->hi / step + 1e-9);
  while (k1 - k0 < 1 && step > span * 1e-6) {
    step = nice_step(step * 0.4);
    k0 = ceil(a->lo / step - 1e-9), k1 = floor(a->hi / step + 1e-9);
  }
  for (double k = k0; k <= k1 && a->nticks < MAX_TICKS; k++) {
    double v = k * step;
    add_tick(a, fabs(v) < step * 1e-9 ? 0 : v, true, true, step * 1e-3);
  }
}

/* Decades (every few when there are many) with minor ticks at 2 and 5,
 * labelled when the range spans three decades or fewer. A range too
 * narrow to hold two labelled ticks gets linear ticks instead. */
static void log_ticks(Axis *a, int target) {
  double l0 = log10(a->lo), l1 = log10(a->hi);
  int d0 = (int)floor(l0 + 1e-9), d1 = (int)ceil(l1 - 1e-9);
  /* Every decade up to 10 of them, else every 2nd, 3rd, 5th, 10th, ... */
  static const int STRIDES[] = {1, 2, 3, 5, 10, 20, 25, 50, 100, 200};
  int stride = 1;
  for (int i = 1; i < 10 && (d1 - d0) / stride > 10; i++)
    stride = STRIDES[i];
  while ((d1 - d0) / stride > 10)
    stride *= 2;
  bool minors = stride == 1 && l1 - l0 <= 12;
  bool label_minors = l1 - l0 <= 3.01;
  int labeled = 0;
  for (int d = d0; d <= d1; d++) {
    double dec = pow(10, d);
    if (((d % stride) + stride) % stride == 0 && in_range(a, dec)) {
      add_tick(a, dec, true, true, dec * 1e-6);
      labeled++;
    }
    for (int m = 2; minors && m <= 5; m += 3)
      if (in_range(a, m * dec)) {
        add_tick(a, m * dec, false, label_minors, m * dec * 1e-6);
        labeled += label_minors;
      }
  }
  if (labeled < 2) {
    a->nticks = 0;
    linear_ticks(a, target);
  }
}

/* Drop labels that would overlap a neighbour's: decades and the major
 * linear ticks first, left to right, then minor labels where room is left.
 * Along a horizontal axis a label takes its width, along a vertical one
 * its height. */
void axis_thin_labels(Axis *a, bool horizontal) {
  bool keep[MAX_TICKS] = {0};
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < a->nticks; i++) {
      const Tick *t = &a->ticks[i];
      if (!t->labeled || t->major != (pass == 0))
        continue;
      double p = axis_px(a, t->v);
      double w =
          horizontal ? chart_text_w(t->text, FONT_TICK) : FONT_TICK * 1.3;
      bool room = true;
      for (int j = 0; j < a->nticks && room; j++) {
        if (!keep[j])
          continue;
        const Tick *u = &a->ticks[j];
        double wu =
            horizontal ? chart_text_w(u->text, FONT_TICK) : FONT_TICK * 1.3;
        room = fabs(axis_px(a, u->v) - p) >= (w + wu) / 2 + 4;
      }
      keep[i] = room;
    }
  for (int i = 0; i < a->nticks; i++)
    a->ticks[i].labeled = keep[i];
}

void axis_ticks(Axis *a, int target) {
  a->nticks = 0;
  if (a->scale == SCALE_LOG)
    log_ticks(a, target);
  else
    linear_ticks(a, target);
}

double axis_label_w(const Axis *a) {
  double w = 0;
  for (int i = 0; i < a->nticks; i++)
    if (a->ticks[i].labeled)
      w = fmax(w, chart_text_w(a->ticks[i].text, FONT_TICK));
  return w;
}

/* Room around the data of an automatic range: bars never reach the top
 * of the plot (a bar at the axis maximum reads as clipped), and scatter
 * points never sit on an axis (a Pareto front in the corner hides behind
 * the axes). FRAC of the span (of the decades, on a log axis). */
Extent axis_pad_extent(Extent e, bool log, double frac, bool below) {
  if (!e.any)
    return e;
  if (log) {
    double span = fmax(log10(e.hi) - log10(e.lo), 1);
    e.hi *= pow(10, frac * span);
    if (below)
      e.lo /= pow(10, frac * span);
    return e;
  }
  double span = e.hi - e.lo > 0 ? e.hi - e.lo : fabs(e.hi) + 1;
  e.hi += frac * span;
  if (below) /* data that is never negative keeps a non-negative axis */
    e.lo = e.lo >= 0 ? fmax(0, e.lo - frac * span) : e.lo - frac * span;
  return e;
}
