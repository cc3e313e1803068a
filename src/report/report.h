/* report.h — rendering results for people (tables), for programs (JSON
 * through jansson, CSV) and as figures (a scene drawn as SVG, or as PDF
 * and PNG through cairo); a fusion plan also as a Graphviz digraph.
 *
 * Renderers write into a Buf, never straight to a stream, so that a
 * command prints nothing until it has fully succeeded. */
#ifndef MAMBALAYA_REPORT_H
#define MAMBALAYA_REPORT_H

#include <jansson.h>

#include "../fusion/fusion.h"
#include "../model/model.h"
#include "../search/search.h"
#include "../net/net.h"
#include "../repro/repro.h"

/* The tool's version, in every result's "inputs". */
#define MAMBALAYA_VERSION "0.1.0"

/* ---- what a result was computed from (inputs.c) ---- */

typedef struct Inputs {
  const char *command;     /* "eval" */
  const char *spec, *arch; /* as given: a path or a shipped name */
  const char *plan;        /* eval --plan FILE */
  const char *model;       /* the preset used, or NULL */
  int nsets;
  const Setting *sets;     /* --set, as given */
  const Shape *shape;      /* the bound sizes, or NULL */
  const char *phase, *design, *strategy;
  const char *stitch, *objective; /* fuse's */
  const ModelOpts *opts;   /* the options used, or */
  const ModelOverrides *overrides; /* the options given (reproduce) */
} Inputs;

/* {"tool", "command", "spec": {"name", "path", "shipped", "sha256"},
 *  "model", "settings", "ranks", "phase", "architecture": {...}, "plan",
 *  "design", "strategy", "options"}: the fields IN has. */
json_t *report_inputs_json(const Inputs *in);
/* Every field of a ModelOpts; the fields a ModelOverrides sets. */
json_t *report_opts_json(const ModelOpts *o);
json_t *report_overrides_json(const ModelOverrides *o);
/* ROOT with an "inputs" member from IN, serialized into B. */
void report_json_with_inputs(Buf *b, json_t *root, const Inputs *in);

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
 *  "totals": {"latency_s", "dram_read_bytes", ..., "area_mm2"},
 *  "components": [...]} */
json_t *report_eval_json(const Cascade *c, const Arch *a, const Eval *ev);
/* EV's warnings (Eval.warnings), one line each: "FILE:LINE:COL: warning:
 * binding puts AV, a matrix operation, on vec (vector role): 3.4 s of
 * compute, against 0.12 s on mat (matrix role), the fastest unit able to
 * run it". */
void report_eval_warnings(Buf *b, const Cascade *c, const Arch *a,
                          const Eval *ev);
/* Notes on A as a file describes it, one line each ("ARCH: note: ..."):
 * a memory level inside the fusion level yet larger than it (a group
 * holds at most the fusion level's capacity between Einsums, and the
 * larger level cannot be the fusion level while the smaller stages it). */
void report_arch_notes(Buf *b, const Arch *a);
/* One row per Einsum (unit, ops, cycles, traffic, energy, mapping), with
 * a header line. */
void report_eval_csv(Buf *b, const Cascade *c, const Arch *a,
                     const Eval *ev);

/* One part of the chip: a memory level or a compute unit, the energy an
 * evaluation charges it and its area. The model charges DRAM traffic to
 * the outermost level, buffer accesses to the second, register accesses
 * to the innermost (docs/model.md §4) and each operation to the unit
 * that runs it. */
typedef struct Component {
  const char *name;
  const char *kind; /* "memory" or "compute" */
  const char *role; /* memory: "dram", "buffer", "registers" or "level";
                       compute: the unit's role */
  double energy_j;  /* NAN without an evaluation */
  double area_mm2;  /* NAN without an area section */
} Component;

/* A's components (levels, then units: nlevels + nunits entries into OUT),
 * with EV's energies (EV may be NULL). */
int report_components(const Arch *a, const Eval *ev, Component *out);
/* [{"name", "kind", "role", "energy_j", "area_mm2"}, ...] (null where a
 * figure is unknown). */
json_t *report_components_json(const Arch *a, const Eval *ev);

/* ---- the paper's evaluation ---- */

/* Is our figure within 0.85-1.15 of the paper's (or above its bound)? */
bool target_holds(const Target *t);
/* Ours over the paper's; NaN where the paper's is 0. */
double target_ratio(const Target *t);
/* V (T's paper value, with BOUND: "> " where the paper gives a lower
 * bound, or ours) with T's unit: "5.79x", "99.1%", "1.75 GHz", "32 MiB". */
void target_value(char *out, size_t cap, const Target *t, double v,
                  bool bound);
/* A row of a table of the targets: the paper's value and ours as
 * target_value words them, and whether ours holds. */
typedef struct TargetRow {
  char paper[32], ours[32];
  bool ok;
} TargetRow;
TargetRow target_row(const Target *t);
/* The setup; each design's per-layer latency, speedup and energy per
 * token; and, where the setup is (partly) the paper's, every figure of
 * the paper that applies: where, what, the paper's value, ours, the
 * ratio. */
void report_repro_text(Buf *b, const Repro *r);
/* {"setup": {"spec", "models", "arch", "batch", ...}, "targets": {KEY:
 *  {"ours", "paper", "ratio", "unit", ...}}, "designs": {NAME:
 *  {"prefill": {"latency_s", ...}, "decode": {...}}}, "elapsed_s"} */
json_t *report_repro_json(const Repro *r);
/* The setup R ran, in a few sentences: the spec, the models, batch and
 * lengths, other settings, the architecture and its units, and what of
 * the paper compares with it. */
void report_repro_setup(Buf *b, const Repro *r);
/* The compute units and their peaks: "array2d (matrix, 114.7 Tops/s),
 * ...". */
void report_units(Buf *b, const Arch *a);
/* Stage the evaluation's figures in OUT (util.h: the caller commits the
 * set): each figure (roofline, utilization over time, traffic, end-to-end
 * speedups, the sweeps over I, energy) in each format of FORMATS (a set of
 * 1 << Format), figures.csv (every plotted series, long format:
 * figure,series,x,y), targets.csv and an index.html showing them all.
 * False, with D naming the file and the reason, on the first failure. */
bool report_figures(const Repro *r, OutSet *out, unsigned formats, Diag *d);

/* What differs between results A and B (two --json outputs): each value
 * that changed, by its path ("totals.latency_s",
 * "einsums[TTX].dram_read_bytes"; arrays of named records are matched by
 * name), the inputs first; numbers within relative tolerance TOL are the
 * same. Returns how many differ. */
int report_diff(Buf *out, json_t *a, json_t *b, double tol);
/* Can A and B be compared: are both results (inputs.command) of one
 * command? False with the reason in WHY (N bytes) otherwise. */
bool report_comparable(json_t *a, json_t *b, char *why, size_t n);
/* Read and parse the two results at PATH into OUT, one thread each (the
 * parsing is most of a large diff's time). False with D set (the file,
 * and the line and column of bad JSON) when one cannot be read. */
bool report_load_results(const char *const path[2], json_t *out[2],
                         Diag *d);

/* A CSV field (RFC 4180): quoted, quotes doubled, only when it must be. */
void csv_field(Buf *b, const char *s);
/* A number as a CSV field, %.10g; nothing (an empty field) when it is not
 * finite. */
void csv_number(Buf *b, double v);
/* The N numbers V as CSV fields, each after a comma (csv_number): the
 * figures that end or continue a row. */
void csv_numbers(Buf *b, const double *v, size_t n);

/* A number with an SI prefix: 1234567 -> "1.235 M". */
void fmt_si(Buf *b, double v);
/* V in UNIT with an SI prefix from p to E, four digits: "22.63 ms",
 * "6.81 GB", "3.669 J" (the human tables' totals). */
void fmt_unit(Buf *b, double v, const char *unit);

/* Serialize JSON (2-space indent, insertion order) into B with a final
 * newline. Figures made by report_real that are not finite are written
 * as null, each with a warning on stderr naming its place in the
 * document ("mambalaya: warning: totals.latency_s is inf: written as
 * null"): JSON has no NaN or infinity, and a figure is never dropped. */
void report_json(Buf *b, json_t *root);
/* A JSON number for a figure; see report_json for a non-finite V. */
json_t *report_real(double v);
/* A figure of an object: its key and value. REPORT_REALS(O, {"latency_s",
 * t}, {"energy_j", e}) sets each on O as report_real, in order: an
 * object's run of figures written as one table. */
typedef struct ReportReal {
  const char *key;
  double v;
} ReportReal;
void report_set_reals(json_t *o, const ReportReal *f, size_t n);
#define REPORT_REALS(o, ...)                                                 \
  report_set_reals((o), (const ReportReal[]){__VA_ARGS__},                   \
                   sizeof((const ReportReal[]){__VA_ARGS__}) /               \
                       sizeof(ReportReal))

/* ---- colours (palette.c) ---- */

typedef enum { SHADE_MAIN, SHADE_TINT, SHADE_DARK, SHADE_COUNT } Shade;
/* Design D's colour in every chart (DES_COUNT: best (searched)): SHADE_MAIN,
 * or a lighter tint or a darker shade (a study's second and third
 * stitchers of it). A counterpart beside it (its ideal) is its colour
 * dashed (ChartSeries.dashed). */
const char *design_color(Design d, Shade s);
/* Memory level L of A in charts by component (energy): off-chip memory
 * one colour, the on-chip levels others, outermost first; the operations
 * a colour of their own. */
const char *level_color(const Arch *a, int l);
const char *ops_color(void);
/* The K-th series of a chart whose series are no designs (validate's
 * operators): the designs' main colours in their order, cycled after
 * PALETTE_COLORS, which svg_check.py tells apart pairwise. */
enum { PALETTE_COLORS = DES_COUNT + 1 };
const char *palette_color(int k);

/* ---- charts ----
 *
 * A Chart describes a figure by its data: the kind, the series, the axes'
 * labels and ranges, reference lines and marks. It is laid out once
 * (chart.c: margins from the tick labels and the legend, label
 * placement; chart_axis.c: text widths, ticks) into a Scene, a list of
 * drawing items in px; a renderer then writes the Scene in one format:
 *
 *     Chart --chart.c--> Scene --svg.c---> SVG text
 *                              --cairo.c-> PDF, PNG bytes
 *
 * so every format shows the same figure, and no format has layout logic
 * of its own. The SVG is self-contained SVG 1.1 (no scripts, no external
 * fonts), readable in a browser and parseable as XML; its elements carry
 * classes ("title", "axis x", "axis y", "xlabel", "ylabel", "legend",
 * "series", "tick") so that tests can check them. PDF pages are the
 * chart's size at 96 px per inch; PNG images have twice its pixels. */

typedef enum {
  CHART_LINE,         /* y over x, one polyline per series */
  CHART_SCATTER,      /* points, each with an optional label */
  CHART_STEP_AREA,    /* piecewise-constant y over x, filled (utilization
                         over time: series i holds from x[k] to x[k+1];
                         a NaN leaves a gap) */
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
  bool dashed; /* LINE, STEP_AREA: a dashed line; bars: light, with a
                  dashed outline (the counterpart of a series of the same
                  colour: its ideal, say) */
  bool line; /* SCATTER: draw this series as a line, not as points (the
                roof of a roofline, under the Einsums' points); STEP_AREA:
                draw its steps' edge alone, unfilled, so that it never
                overlaps the filled series in a colour no legend entry has */
  int marker; /* SCATTER: 1 + a marker shape (circle, square, diamond,
                 triangle, triangle down, hexagon), so that a caller can
                 encode one property in it; 0: the next shape in turn */
  bool ring;  /* SCATTER: hollow rings, larger than the markers, around
                 points of other series (a Pareto front over them) */
} ChartSeries;

typedef struct ChartLine { /* a reference line across the plot */
  double at;               /* y for horizontal, x for vertical lines */
  const char *label;
} ChartLine;

/* A reference value drawn as a marker over one bar (bar charts): the
 * paper's value beside ours, say. They share one legend entry. */
typedef struct ChartMark {
  int category;
  int series; /* the bar it sits on (CHART_BARS); stacks: ignored */
  double y;
} ChartMark;

typedef struct Chart {
  ChartKind kind;
  const char *title, *xlabel, *ylabel;
  const char *subtitle; /* a second, smaller line under the title, or NULL */
  bool logx, logy;
  int ncategories;
  const char **categories; /* bars: the group labels under the x axis */
  int nseries;
  const ChartSeries *series;
  double ymin, ymax; /* both 0: chosen from the data */
  double xmin, xmax; /* both 0: chosen from the data (not for bars) */
  int nhlines, nvlines;
  const ChartLine *hlines, *vlines;
  int nmarks;
  const ChartMark *marks;
  const char *marks_name; /* their legend entry */
  int nnotes;
  const char *const *notes; /* lines of text under the chart (a key to
                               its points), or NULL */
  int width, height; /* pixels; 0: 760 x 420 */
} Chart;

typedef enum { FMT_SVG, FMT_PDF, FMT_PNG, FMT_COUNT } Format;

/* "svg", "pdf", "png": the name on the command line and the file
 * extension. */
const char *format_name(Format f);
bool format_from_name(const char *name, Format *f);

/* Render one chart, or several stacked vertically under a common title
 * and subtitle (NULL for none; e.g. utilization over time, one panel per
 * design), as a complete document in format F into B (binary for PDF and
 * PNG). */
void chart_render(Buf *b, const Chart *c, Format f);
void stack_render(Buf *b, const char *title, const char *subtitle, int n,
                  const Chart *charts, Format f);

/* ---- the drawing: a Scene ----
 *
 * What chart.c lays out and the renderers read: items in painting order,
 * in px from the top left. Groups and panels nest; a group's paint is
 * inherited by what it holds, as in SVG (fill black, no stroke, width 1,
 * opacity 1 at the root). Text is valid UTF-8 without control
 * characters (the scene's builder makes it so). */

typedef enum {
  SC_GROUP,    /* opens a group */
  SC_PANEL,    /* opens a panel: its items are placed at (x, y) */
  SC_END,      /* closes the innermost group or panel */
  SC_LINE,     /* (x, y) to (x2, y2) */
  SC_POLYLINE, /* npts points */
  SC_POLYGON,  /* npts points, closed */
  SC_RECT,     /* (x, y), w x h */
  SC_CIRCLE,   /* centre (x, y), radius r */
  SC_TEXT,     /* at (x, y): the baseline's start, middle or end */
} ScKind;

typedef enum { ANCHOR_START, ANCHOR_MIDDLE, ANCHOR_END } Anchor;

typedef struct Paint {
  const char *fill, *stroke; /* "#rrggbb" or "none"; NULL: inherited */
  double width;              /* stroke width; 0: inherited */
  double opacity;            /* fill opacity; 0: inherited */
  const char *dash;          /* dash lengths, "6 4"; NULL: inherited */
  bool round;                /* round line joins */
} Paint;

typedef struct ScItem {
  ScKind kind;
  const char *cls;   /* what it is ("tick", "series", ...) */
  const char *name;  /* groups: the series or entry drawn */
  const char *scale; /* axis groups: "linear", "log" or "category" */
  bool has_value;
  double value; /* bars: the value drawn */
  Paint paint;
  double x, y, x2, y2, w, h, r;
  int npts;
  const double *pts; /* x0, y0, x1, y1, ... */
  const char *text;  /* lines separated by '\n' */
  double font;       /* px; lines are font + 2 px apart */
  double angle;      /* degrees, about (x, y) */
  Anchor anchor;
  bool bold;
} ScItem;

typedef struct Scene {
  Arena arena; /* the items' strings and points */
  const char *cls; /* "chart", or "chart-stack" for a stack */
  double w, h;
  int n, cap;
  ScItem *items;
} Scene;

/* Lay a chart, or a stack of them, out into S (empty before). */
void chart_scene(Scene *s, const Chart *c);
void stack_scene(Scene *s, const char *title, const char *subtitle, int n,
                 const Chart *charts);
/* Write S as a document in format F into B. */
void scene_render(Buf *b, const Scene *s, Format f);
void scene_free(Scene *s);

/* Building a scene: each returns the new item (valid until the next one
 * is added) with its strings and points copied into the scene. */
ScItem *sc_add(Scene *s, ScKind k, const char *cls);
ScItem *sc_group(Scene *s, const char *cls, Paint p);
void sc_end(Scene *s);
ScItem *sc_line(Scene *s, const char *cls, double x1, double y1, double x2,
                double y2);
ScItem *sc_poly(Scene *s, ScKind k, const char *cls, int n,
                const double *pts);
ScItem *sc_text(Scene *s, const char *cls, double x, double y, Anchor a,
                double font, const char *text);
const char *sc_str(Scene *s, const char *text);

/* The renderers scene_render calls. */
void svg_render(Buf *b, const Scene *s);
void cairo_render(Buf *b, const Scene *s, Format f);

/* Append S as XML (SVG, HTML) text or attribute value: & < > " ' escaped
 * (the text is valid UTF-8 without control characters). */
void put_xml(Buf *b, const char *s);

/* ---- searches ---- */

/* The space, the schedule found (its plan and its evaluation), the bound
 * and the gap. A: the architecture with the fusion level the search chose
 * (search_arch). */
void report_search_text(Buf *b, const Cascade *c, const Arch *a,
                        const SearchResult *r, SearchObjective o);
/* {"objective", "found", "lower_bound", "gap", "from", "space": {...},
 *  "fusion_level", "plan" (as fuse --json), "schedule" and "bound" (as eval --json)} */
json_t *report_search_json(const Cascade *c, const Arch *a,
                           const SearchResult *r, SearchObjective o);
/* The latency-energy front (search --pareto): a table; an array of
 * {"latency_s", "energy_j", "groups", "from"}. */
void report_pareto_text(Buf *b, const SearchResult *r);
json_t *report_pareto_json(const SearchResult *r);
/* Where a searched schedule came from, as reports name it: the named
 * design FROM whose plan it is, or "search" (DES_COUNT: a partition the
 * search found). */
const char *report_from_name(Design from);

/* ---- a plan's timeline as a trace (trace.c) ---- */

/* EV (C priced on A) as Chrome trace-event JSON, which Perfetto opens: a
 * track per compute unit, per memory level and for the groups; a slice
 * per Einsum, per transfer and per group, the figures as arguments. */
json_t *report_trace_json(const Cascade *c, const Arch *a, const Eval *ev);

/* ---- whole models (net_report.c) ---- */

/* What --config built: the layer schedule, its blocks with their sizes
 * and uses, the parameters counted from their cascades, the notes. */
void report_net_text(Buf *b, const Net *n, const NetParams *p);
json_t *report_net_json(const Net *n, const NetParams *p);
/* A model end to end on A (net_run): the phases, per block kind, the
 * memory it needs and whether it fits. */
void report_net_run_text(Buf *b, const Net *n, const Arch *a,
                         const NetRun *r);
json_t *report_net_run_json(const Net *n, const Arch *a, const NetRun *r);

#endif
