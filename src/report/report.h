/* report.h — rendering results for people (tables), for programs (JSON,
 * through jansson) and for drawings (Graphviz DOT).
 *
 * Renderers write into a Buf, never straight to a stream, so that a
 * command prints nothing until it has fully succeeded. */
#ifndef MAMBALAYA_REPORT_H
#define MAMBALAYA_REPORT_H

#include <jansson.h>

#include "../fusion/fusion.h"
#include "../model/model.h"
#include "../repro/repro.h"

/* The name of an Einsum: its output tensor. */
const char *einsum_name(const Cascade *c, int einsum);
/* "TTX+RX": the outputs of a merged node. */
void node_label(Buf *b, const Cascade *c, const Node *nd);

/* ---- classification ---- */

/* The pair table: one row per producer->consumer edge. With NODES, edges
 * are between merged nodes (edges inside a node are dropped). */
void report_pairs_text(Buf *b, const Cascade *c, const Shape *s,
                       const Pair *pairs, const Nodes *nodes);
/* {"spec", "model", "einsums", "edges": [{"producer", "consumer",
 *  "tensor", "class", "shared_ranks", "reduced", "broadcast",
 *  "iterative", "windowed"}]} */
json_t *report_pairs_json(const Cascade *c, const Shape *s, const Pair *pairs,
                          const Nodes *nodes);

/* ---- fusion plans ---- */

void report_plan_text(Buf *b, const Cascade *c, const Plan *p);
/* {"strategy", "stitch", "groups": [[OUT, ...], ...], "merged": [[...]],
 *  "offchip": [TENSOR, ...], "offchip_elements"} */
json_t *report_plan_json(const Cascade *c, const Plan *p);
/* A Graphviz digraph: Einsums as nodes, groups as clusters, edges labelled
 * with their class (dashed: a recurrence, bold: a window). */
void report_plan_dot(Buf *b, const Cascade *c, const Pair *pairs,
                     const Plan *p);

/* ---- priced designs ---- */

/* One row per Einsum (unit, ops, utilization, compute, traffic, latency,
 * bound, mapping), one per group, and the totals. */
void report_eval_text(Buf *b, const Cascade *c, const Arch *a,
                      const Eval *ev);
/* {"design", "compose", "accounting", "einsums": [...], "groups": [...],
 *  "totals": {"latency_s", "dram_read_bytes", ...}} */
json_t *report_eval_json(const Cascade *c, const Arch *a, const Eval *ev);

/* ---- the paper's evaluation ---- */

/* Is our figure within 0.85-1.15 of the paper's (or above its bound)? */
bool target_holds(const Target *t);
/* Every figure: where, what, the paper's value, ours, the ratio. */
void report_repro_text(Buf *b, const Repro *r);
/* {"targets": {KEY: {"ours", "paper", "ratio", "unit", ...}}, ...} */
json_t *report_repro_json(const Repro *r);
/* Stage the paper's figures in OUT (util.h: the caller commits the set):
 * one SVG per figure (roofline, utilization over time, traffic,
 * end-to-end speedups, the sweeps over I, energy), figures.csv (every
 * plotted series, long format: figure,series,x,y), targets.csv and an
 * index.html showing them all. False, with D naming the file and the
 * reason, on the first failure. */
bool report_figures(const Repro *r, OutSet *out, Diag *d);

/* A number with an SI prefix: 1234567 -> "1.235 M". */
void fmt_si(Buf *b, double v);

/* Serialize JSON (2-space indent, insertion order) into B with a final
 * newline. Figures made by report_real that are not finite are written
 * as null, each with a warning on stderr naming its place in the
 * document ("mambalaya: warning: totals.latency_s is inf: written as
 * null"): JSON has no NaN or infinity, and a figure is never dropped. */
void report_json(Buf *b, json_t *root);
/* A JSON number for a figure; see report_json for a non-finite V. */
json_t *report_real(double v);

/* ---- SVG charts ----
 *
 * Self-contained SVG 1.1 (no scripts, no external fonts), readable in a
 * browser and parseable as XML. Every chart has a title, two axes with
 * ticks and labels, and a legend naming each series; elements carry
 * classes ("title", "axis x", "axis y", "xlabel", "ylabel", "legend",
 * "series", "tick") so that tests can check them. */

typedef enum {
  CHART_LINE,         /* y over x, one polyline per series */
  CHART_SCATTER,      /* points, each with an optional label */
  CHART_STEP_AREA,    /* piecewise-constant y over x, filled (utilization
                         over time: series i holds from x[k] to x[k+1]) */
  CHART_BARS,         /* grouped bars: one group per category, one bar per
                         series */
  CHART_STACKED_BARS, /* stacked bars: series stacked within a category */
} ChartKind;

typedef struct ChartSeries {
  const char *name; /* legend entry */
  int n;
  const double *x;      /* LINE, SCATTER, STEP_AREA; NULL for bars */
  const double *y;      /* n values (bars: one per category) */
  const char **labels;  /* SCATTER: a label per point, or NULL */
  const char *color;    /* "#rrggbb", or NULL for the palette's next */
  bool dashed;
  bool line; /* SCATTER: draw this series as a line, not as points (the
                roof of a roofline, under the Einsums' points) */
} ChartSeries;

typedef struct ChartLine { /* a reference line across the plot */
  double at;               /* y for horizontal, x for vertical lines */
  const char *label;
} ChartLine;

typedef struct Chart {
  ChartKind kind;
  const char *title, *xlabel, *ylabel;
  bool logx, logy;
  int ncategories;
  const char **categories; /* bars: the group labels under the x axis */
  int nseries;
  const ChartSeries *series;
  double ymin, ymax; /* both 0: chosen from the data */
  double xmin, xmax; /* both 0: chosen from the data (not for bars) */
  int nhlines, nvlines;
  const ChartLine *hlines, *vlines;
  int width, height; /* pixels; 0: 760 x 420 */
} Chart;

/* Render one chart as a complete SVG document into B. */
void svg_chart(Buf *b, const Chart *c);
/* Render several charts stacked vertically in one SVG document, under a
 * common title (e.g. utilization over time, one panel per design). */
void svg_stack(Buf *b, const char *title, int n, const Chart *charts);

#endif
