/* chart_axis.h — what chart.c and chart_axis.c share: the chart's fonts
 * and text widths, and an Axis (its scale, range, pixels and ticks), which
 * chart_axis.c ranges and ticks and chart.c lays out and draws. */
#ifndef CHART_AXIS_H
#define CHART_AXIS_H

#include "report.h"

enum { MAX_TICKS = 64 };

/* Font sizes in px, and the mean advance of a sans-serif glyph as a
 * fraction of its size: an estimate, as there is no font to measure. */
#define FONT_TITLE 15.0
#define FONT_LABEL 12.0
#define FONT_TICK 11.0
#define FONT_LEGEND 11.0
#define FONT_NOTE 10.0
#define NOTE_ROW (FONT_NOTE + 4) /* lines of notes under a chart */
#define LIGHT_BAR 0.4            /* the fill opacity of a dashed series' bars */
#define GLYPH_W 0.6
#define TITLE_BAND 36.0
#define SUBTITLE_BAND 16.0
#define FONT_SUBTITLE 12.0
#define STACK_TITLE_BAND 34.0
#define SLANT_DEG 40.0
#define PI 3.14159265358979323846

/* A label broken at spaces into a few lines. */
enum { MAX_LINES = 3 };
typedef struct Lines {
  int n;
  size_t start[MAX_LINES], len[MAX_LINES];
} Lines;

typedef enum { SCALE_LINEAR, SCALE_LOG, SCALE_CATEGORY } Scale;

typedef struct Tick {
  double v;
  bool major, labeled;
  char text[40];
} Tick;

typedef struct Axis {
  Scale scale;
  double lo, hi; /* the range shown, in data units */
  double step;   /* linear: the tick step the range was rounded to, or 0 */
  double p0, p1; /* the pixels of lo and hi */
  int nticks;
  Tick ticks[MAX_TICKS];
} Axis;

typedef struct Extent {
  double lo, hi;
  bool any;
} Extent;

double chart_text_w(const char *s, double font);
/* Greedy word wrap of S into lines no wider than MAXW px. False when that
 * takes more than MAX_LINES lines or a word alone is too wide. */
bool chart_wrap_label(const char *s, double maxw, Lines *l);
bool chart_is_hex_color(const char *s);
double chart_clamp(double v, double lo, double hi);
void axis_extent_add(Extent *e, double v, bool log);
/* The range shown: the caller's when it is usable, else the data's rounded
 * out to nice values so that ticks fall on both ends; an empty extent
 * gives 0..1 (1..10 on a log axis). */
void axis_range(Axis *a, Extent e, double umin, double umax, int target);
void axis_ticks(Axis *a, int target);
double axis_label_w(const Axis *a);
/* Drop labels that would overlap a neighbour's: decades and the major
 * linear ticks first, left to right, then minor labels where room is left.
 * Along a horizontal axis a label takes its width, along a vertical one
 * its height. */
void axis_thin_labels(Axis *a, bool horizontal);
/* Values too large to subtract safely are treated as missing. */
bool axis_usable(const Axis *a, double v);
/* The pixel of V; far outside values are held at +-1e7 px so that the
 * clipping that follows gets finite numbers. */
double axis_px(const Axis *a, double v);
bool axis_contains(const Axis *a, double v);
/* Room around the data of an automatic range: bars never reach the top
 * of the plot (a bar at the axis maximum reads as clipped), and scatter
 * points never sit on an axis (a Pareto front in the corner hides behind
 * the axes). FRAC of the span (of the decades, on a log axis). */
Extent axis_pad_extent(Extent e, bool log, double frac, bool below);

#endif
