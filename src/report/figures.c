/* figures.c — the evaluation's figures as files (report.h, "the paper's
 * evaluation"): each figure in every format asked for (SVG, PDF, PNG),
 * every plotted series in figures.csv, the targets in targets.csv, and an
 * index.html that shows them all. This file draws the figures; figs.c
 * stages the files and words the titles, figures_index.c writes
 * targets.csv and index.html.
 *
 * Every chart names the setup that was run (spec, model, architecture,
 * batch, sequence length) in its subtitle. The paper's figure numbers and
 * values appear only where the setup is the paper's (repro.h); its values
 * are drawn as markers over our bars, never as bars of their own.
 *
 * Each file is built in memory and staged in the caller's OutSet, which
 * moves the whole set into place at once, so a failed run never leaves a
 * half-written figure nor a partial set; the first failure stops the rest
 * and its diagnostic names the path and the reason.
 *
 * Units are fixed per kind of axis (time in µs, traffic in MB, or GB where
 * MB would pass 10k, energy in µJ per token, utilization in %), and
 * figures.csv holds the values as plotted, so one column means one unit
 * within a figure. */
#include "figs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const PHASE_NAME[] = {"prefill", "decode"};
_Static_assert(sizeof PHASE_NAME / sizeof PHASE_NAME[0] == PH_COUNT,
               "a name per phase");

/* ---- Fig. 2a: the roofline ---- */

/* The points of one timeline on the roofline. Einsums without DRAM traffic
 * (infinite intensity) or without time cannot be placed and are counted
 * instead. Coincident points share one label ("2,10,19") so that labels do
 * not pile up. */
typedef struct Points {
  int n, hidden;
  double *x, *y;
  const char **labels;
  char (*text)[64];  /* the shown labels */
  char (*names)[48]; /* per point, for the CSV: "Einsum 7 TTX" */
} Points;

static bool close_log(double a, double b) {
  return fabs(log10(a) - log10(b)) < 0.02;
}

static void points_of(Points *p, const Timeline *t, const Cascade *c) {
  size_t cap = (size_t)t->n + 1;
  *p = (Points){0};
  p->x = xcalloc(cap, sizeof *p->x);
  p->y = xcalloc(cap, sizeof *p->y);
  p->labels = xcalloc(cap, sizeof *p->labels);
  p->text = xcalloc(cap, sizeof *p->text);
  p->names = xcalloc(cap, sizeof *p->names);
  for (int i = 0; i < t->n; i++) {
    const Segment *s = &t->seg[i];
    if (!(isfinite(s->intensity) && s->intensity > 0 && isfinite(s->perf) &&
          s->perf > 0)) {
      p->hidden++;
      continue;
    }
    int k = p->n++;
    p->x[k] = s->intensity, p->y[k] = s->perf;
    snprintf(p->names[k], sizeof p->names[0], "Einsum %d %s", s->einsum + 1,
             c ? einsum_name(c, s->einsum) : "");
    snprintf(p->text[k], sizeof p->text[0], "%d", s->einsum + 1);
  }
  /* The first point of each cluster takes the numbers of the others. */
  bool *taken = xcalloc(cap, 1);
  for (int i = 0; i < p->n; i++) {
    p->labels[i] = taken[i] ? "" : p->text[i];
    for (int j = i + 1; !taken[i] && j < p->n; j++)
      if (!taken[j] && close_log(p->x[i], p->x[j]) &&
          close_log(p->y[i], p->y[j])) {
        taken[j] = true;
        size_t len = strlen(p->text[i]), more = strlen(p->text[j]);
        if (len + 1 + more < sizeof p->text[0]) {
          p->text[i][len] = ',';
          memcpy(p->text[i] + len + 1, p->text[j], more + 1);
        }
      }
  }
  free(taken);
}

static void points_free(Points *p) {
  free(p->x);
  free(p->y);
  free(p->labels);
  free(p->text);
  free(p->names);
}

/* "Ideal fusion, per Einsum (12 without DRAM traffic not shown)". */
static void points_name(char *out, size_t cap, const char *design,
                        const Points *p) {
  if (p->hidden)
    snprintf(out, cap, "%s, per Einsum (%d without DRAM traffic not shown)",
             design, p->hidden);
  else
    snprintf(out, cap, "%s, per Einsum", design);
}

/* The whole layer as one point: its ops over its DRAM bytes, and over its
 * latency. False when it moves no DRAM bytes. */
static bool layer_point(const Timeline *t, double bw, double *x, double *y) {
  double ops = 0, bytes = 0;
  for (int i = 0; i < t->n; i++) {
    double dur = t->seg[i].end - t->seg[i].start;
    ops += t->seg[i].perf * dur;
    bytes += t->seg[i].memory_util * bw * dur;
  }
  *x = figs_safe_div(ops, bytes), *y = figs_safe_div(ops, t->seconds);
  return isfinite(*x) && *x > 0 && isfinite(*y) && *y > 0;
}

/* A roof: the DRAM slope up to the ridge point (peak / bandwidth), then
 * flat. Both parts are straight on log-log axes, so three points draw it
 * exactly. */
typedef struct Roof {
  int n;
  double x[3], y[3];
  char name[96];
} Roof;

static void roof_of(Roof *rf, double peak, double bw, double lo, double hi) {
  double ridge = peak / bw;
  rf->n = 0;
  rf->x[rf->n] = lo, rf->y[rf->n++] = fmin(peak, lo * bw);
  if (ridge > lo && ridge < hi)
    rf->x[rf->n] = ridge, rf->y[rf->n++] = peak;
  rf->x[rf->n] = hi, rf->y[rf->n++] = fmin(peak, hi * bw);
}

static void extend(double *lo, double *hi, double v) {
  if (isfinite(v) && v > 0)
    *lo = fmin(*lo, v), *hi = fmax(*hi, v);
}

/* Dark, muted colours for the roofs, unlike the points' and each other's
 * (svg_check.py), the darkest for the first unit. */
static const char *const ROOF_COLOR[] = {"#222222", "#8C564B", "#999933",
                                         "#882255", "#999999"};
enum { NROOF_COLORS = sizeof ROOF_COLOR / sizeof ROOF_COLOR[0] };

static void roofline(Figs *f, Phase ph, const char *stem) {
  const Repro *r = f->r;
  const Arch *a = r->arch;
  const Timeline *tu = &r->timeline[ph][DES_UNFUSED];
  const Timeline *ti = &r->timeline[ph][DES_IDEAL];
  Points pu, pi;
  points_of(&pu, tu, r->cascade);
  points_of(&pi, ti, r->cascade);
  double layer_x[2], layer_y[2];
  const char *layer_labels[2] = {"unfused layer", "ideal layer"};
  const char *layer_names[2] = {"Best unfused", "Ideal fusion"};
  int nl = 0;
  const Timeline *both[2] = {tu, ti};
  for (int i = 0; i < 2; i++)
    if (layer_point(both[i], r->bandwidth, &layer_x[nl], &layer_y[nl])) {
      layer_labels[nl] = layer_labels[i], layer_names[nl] = layer_names[i];
      nl++;
    }

  /* The x range: whole decades around the points and the ridge points. */
  double lo = INFINITY, hi = 0;
  for (int k = 0; k < pu.n; k++)
    extend(&lo, &hi, pu.x[k]);
  for (int k = 0; k < pi.n; k++)
    extend(&lo, &hi, pi.x[k]);
  for (int u = 0; u < a->nunits && r->bandwidth > 0; u++)
    extend(&lo, &hi, repro_unit_peak(a, u) / r->bandwidth);
  if (!(hi > 0))
    lo = 0.1, hi = 1000;
  lo = pow(10, floor(log10(lo))), hi = pow(10, ceil(log10(hi)));
  if (hi <= lo)
    hi = lo * 10;

  /* A roof per compute unit, at the peak of its fastest op class. */
  Roof *roofs = xcalloc((size_t)a->nunits + 1, sizeof *roofs);
  ChartSeries *s = xcalloc((size_t)a->nunits + 3, sizeof *s);
  char rate[32], unfused_name[128], ideal_name[128];
  int ns = 0;
  for (int u = 0; u < a->nunits; u++) {
    double peak = repro_unit_peak(a, u);
    if (!(peak > 0) || !(r->bandwidth > 0))
      continue;
    Roof *rf = &roofs[ns];
    roof_of(rf, peak, r->bandwidth, lo, hi);
    figs_fmt_rate(rate, sizeof rate, peak, "ops/s");
    snprintf(rf->name, sizeof rf->name, "%s roof (%s)", a->units[u].name,
             rate);
    s[ns] = (ChartSeries){.name = rf->name, .n = rf->n, .x = rf->x,
                          .y = rf->y,
                          .color = ROOF_COLOR[ns % NROOF_COLORS],
                          .dashed = ns > 0, .line = true};
    ns++;
  }
  int nroofs = ns;
  points_name(unfused_name, sizeof unfused_name, "Best unfused", &pu);
  points_name(ideal_name, sizeof ideal_name, "Ideal fusion", &pi);
  s[ns++] = (ChartSeries){.name = unfused_name, .n = pu.n, .x = pu.x,
                          .y = pu.y, .labels = pu.labels, .color = "#D55E00"};
  s[ns++] = (ChartSeries){.name = ideal_name, .n = pi.n, .x = pi.x,
                          .y = pi.y, .labels = pi.labels, .color = "#0072B2"};
  if (nl > 0)
    s[ns++] = (ChartSeries){.name = "whole layer", .n = nl, .x = layer_x,
                            .y = layer_y, .labels = layer_labels,
                            .color = "#009E73"};
  char title[160], sub[SUBTITLE_LEN], detail[64];
  figs_title_of(title, sizeof title, f, ph == PH_PREFILL ? "2a" : "2a (decode)",
           ph == PH_PREFILL ? "roofline, prefill, one layer"
                            : "roofline, decode, one layer");
  figs_phase_detail(detail, sizeof detail, r, ph);
  figs_subtitle_of(sub, sizeof sub, r, 0, detail);
  /* The y range: from the decade below the lowest point, to a little
   * above the highest roof (not a whole decade more: that is all empty). */
  double ylo = INFINITY, yhi = 0;
  for (int i = 0; i < ns; i++)
    for (int k = 0; k < s[i].n; k++)
      extend(&ylo, &yhi, s[i].y[k]);
  if (!(yhi > 0))
    ylo = 1, yhi = 10;
  ylo = pow(10, floor(log10(ylo)));
  Chart c = {.kind = CHART_SCATTER, .title = title, .subtitle = sub,
             .xlabel = "arithmetic intensity (ops per DRAM byte)",
             .ylabel = "performance (ops/s)", .logx = true, .logy = true,
             .nseries = ns, .series = s, .xmin = lo, .xmax = hi,
             .ymin = ylo, .ymax = fmax(2 * yhi, 10 * ylo), .width = 900,
             .height = 560};
  figs_fmt_rate(rate, sizeof rate, r->bandwidth, "B/s");
  Buf cap = {0};
  figs_caption_head(&cap, f, ph == PH_PREFILL ? "2a" : "2a (for decode)");
  buf_printf(&cap,
             "every Einsum of one %s layer on the architecture's roofline "
             "(DRAM %s; a roof per compute unit, at the peak of its fastest "
             "operation class), best unfused and ideal fusion, and each "
             "whole layer; labels are Einsum numbers (as in the cascade), "
             "coincident points share a label. Einsums without DRAM "
             "traffic (infinite intensity: %d of best unfused, %d of ideal "
             "fusion) cannot be placed and are not drawn.",
             PHASE_NAME[ph], rate, pu.hidden, pi.hidden);
  figs_emit_figure(f, stem, &c, cap.s);
  buf_free(&cap);
  /* The roofs as drawn; the points by Einsum, so that the CSV says which
   * is which. */
  for (int i = 0; i < nroofs; i++)
    for (int k = 0; k < s[i].n; k++)
      figs_csv_num_row(&f->csv, stem, s[i].name, s[i].x[k], s[i].y[k]);
  const Points *pts[2] = {&pu, &pi};
  const char *base[2] = {"Best unfused", "Ideal fusion"};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < pts[i]->n; k++) {
      char nm[96];
      snprintf(nm, sizeof nm, "%s / %s", base[i], pts[i]->names[k]);
      figs_csv_num_row(&f->csv, stem, nm, pts[i]->x[k], pts[i]->y[k]);
    }
  for (int k = 0; k < nl; k++) {
    char nm[96];
    snprintf(nm, sizeof nm, "%s / whole layer", layer_names[k]);
    figs_csv_num_row(&f->csv, stem, nm, layer_x[k], layer_y[k]);
  }
  free(roofs);
  free(s);
  points_free(&pu);
  points_free(&pi);
}

/* ---- utilization over time (Fig. 2b/c, 6, 10) ---- */

/* The compute units' colours in the utilization plots (DRAM is
 * vermilion, dashed). */
static const char *const UNIT_COLOR[] = {"#0072B2", "#009E73", "#CC79A7",
                                         "#882255", "#E69F00"};
enum { NUNIT_COLORS = sizeof UNIT_COLOR / sizeof UNIT_COLOR[0] };

/* One panel: the compute utilization of each unit that runs something
 * (the share of that unit's peak, while an Einsum runs on it, and a gap
 * while none does) and the DRAM bandwidth utilization, as steps; and a
 * vertical line at each Einsum's start, labelled with its number (the
 * paper's phase labels). */
typedef struct UtilPanel {
  int n;          /* points */
  size_t cap;     /* points each array has room for */
  double *x, *mu;
  double *cu;     /* per unit, cap points each */
  int ns;
  ChartSeries *s; /* the units that run something, then DRAM */
  char (*names)[96];
  ChartLine *vl;
  int nvl;
  char (*num)[12];
  char title[200];
} UtilPanel;

static void util_panel(UtilPanel *p, const Timeline *t, const Arch *a) {
  size_t cap = 2 * (size_t)t->n + 1, nu = (size_t)a->nunits;
  *p = (UtilPanel){.cap = cap};
  p->x = xcalloc(cap, sizeof *p->x);
  p->mu = xcalloc(cap, sizeof *p->mu);
  p->cu = xcalloc(cap * (nu + 1), sizeof *p->cu);
  p->s = xcalloc(nu + 1, sizeof *p->s);
  p->names = xcalloc(nu + 1, sizeof *p->names);
  p->vl = xcalloc((size_t)t->n + 1, sizeof *p->vl);
  p->num = xcalloc((size_t)t->n + 1, sizeof *p->num);
  bool *runs = xcalloc(nu + 1, 1);
  for (int i = 0; i < t->n; i++) {
    const Segment *s = &t->seg[i];
    bool known = s->unit >= 0 && (size_t)s->unit < nu;
    int k = p->n++;
    p->x[k] = s->start * 1e6;
    p->mu[k] = 100 * s->memory_util;
    for (size_t u = 0; u < nu; u++)
      p->cu[u * cap + k] = known && (size_t)s->unit == u
                               ? 100 * s->compute_util
                               : NAN;
    if (known)
      runs[s->unit] = true;
    /* A step holds until the next point: close it at the segment's end
     * when a gap (or the end of the layer) follows. */
    bool last = i + 1 == t->n;
    if (last || t->seg[i + 1].start > s->end) {
      k = p->n++;
      p->x[k] = s->end * 1e6;
      p->mu[k] = 0;
      for (size_t u = 0; u < nu; u++)
        p->cu[u * cap + k] = NAN;
    }
    snprintf(p->num[i], sizeof p->num[0], "%d", s->einsum + 1);
    p->vl[p->nvl++] = (ChartLine){s->start * 1e6, p->num[i]};
  }
  for (size_t u = 0; u < nu; u++) {
    if (!runs[u])
      continue;
    snprintf(p->names[p->ns], sizeof p->names[0], "compute, %s (%s)",
             a->units[u].name, role_name(a->units[u].role));
    p->s[p->ns] = (ChartSeries){.name = p->names[p->ns], .n = p->n,
                                .x = p->x, .y = p->cu + u * cap,
                                .color = UNIT_COLOR[u % NUNIT_COLORS]};
    p->ns++;
  }
  p->s[p->ns++] = (ChartSeries){.name = "DRAM bandwidth", .n = p->n,
                                .x = p->x, .y = p->mu, .color = "#D55E00",
                                .dashed = true, .line = true};
  free(runs);
}

static void util_panel_free(UtilPanel *p) {
  free(p->x);
  free(p->mu);
  free(p->cu);
  free(p->s);
  free(p->names);
  free(p->vl);
  free(p->num);
}

/* The renderer drops a vertical line's label that would touch the one
 * left of it, which can hide a long Einsum's number behind a short one's.
 * Keep the numbers of the longest Einsums first instead, at least
 * LABEL_GAP px apart on a plot about PLOT_W px wide (a 900 px panel less
 * its axis and legend), so that the renderer keeps every one left. */
#define PLOT_W 560.0
#define LABEL_GAP 12.0
#define UTIL_W 900

typedef struct ByLength {
  double length;
  int i;
} ByLength;

static int longer_first(const void *a, const void *b) {
  const ByLength *u = a, *v = b;
  if (u->length != v->length)
    return u->length > v->length ? -1 : 1;
  return u->i - v->i;
}

static void thin_labels(UtilPanel *p, const Timeline *t, double xmax) {
  ByLength *order = xcalloc((size_t)t->n + 1, sizeof *order);
  bool *kept = xcalloc((size_t)t->n + 1, 1);
  for (int i = 0; i < t->n; i++)
    order[i] = (ByLength){t->seg[i].end - t->seg[i].start, i};
  qsort(order, (size_t)t->n, sizeof *order, longer_first);
  double gap = LABEL_GAP / PLOT_W * xmax;
  for (int k = 0; k < t->n; k++) {
    int i = order[k].i;
    bool room = true;
    for (int j = 0; j < t->n && room; j++)
      room = !kept[j] || fabs(p->vl[j].at - p->vl[i].at) >= gap;
    kept[i] = room;
    if (!room)
      p->vl[i].label = "";
  }
  free(kept);
  free(order);
}

/* The panel's chart, on 0..XMAX µs. */
static Chart util_chart(const UtilPanel *p, double xmax, int height) {
  double top = 0;
  for (int i = 0; i < p->ns; i++)
    for (int k = 0; k < p->n; k++)
      if (isfinite(p->s[i].y[k]))
        top = fmax(top, p->s[i].y[k]);
  return (Chart){.kind = CHART_STEP_AREA, .title = p->title,
                 .xlabel = "time (µs)",
                 .ylabel = "utilization (% of the unit's peak)",
                 .nseries = p->ns, .series = p->s, .ymin = 0,
                 .ymax = top <= 100.0001 ? 100 : 0, .xmin = 0,
                 .xmax = xmax > 0 ? xmax : 1, .nvlines = p->nvl,
                 .vlines = p->vl, .width = UTIL_W, .height = height};
}

/* A stack of panels, one per design, each on its own time axis, so that
 * every panel has the whole width: the latencies compare by the numbers
 * in the panels' titles and on their axes. */
typedef struct UtilStack {
  const char *stem, *title, *subtitle, *caption;
  int n;
  const Timeline *t[DES_COUNT];
  const char *panel[DES_COUNT];
  Buf note[DES_COUNT]; /* appended to each panel's title */
  int height;
} UtilStack;

static void emit_util_stack(Figs *f, UtilStack *u) {
  UtilPanel p[DES_COUNT];
  Chart c[DES_COUNT] = {{0}};
  for (int i = 0; i < u->n; i++) {
    util_panel(&p[i], u->t[i], f->r->arch);
    char total[32];
    figs_fmt_time(total, sizeof total, u->t[i]->seconds);
    snprintf(p[i].title, sizeof p[i].title, "%s: %s per layer%s",
             u->panel[i], total, u->note[i].s ? u->note[i].s : "");
    double xmax = u->t[i]->seconds * 1e6;
    thin_labels(&p[i], u->t[i], xmax);
    c[i] = util_chart(&p[i], xmax, u->height);
  }
  figs_emit_stack(f, u->stem, u->title, u->subtitle, u->n, c, u->panel,
             u->caption);
  for (int i = 0; i < u->n; i++) {
    util_panel_free(&p[i]);
    buf_free(&u->note[i]);
  }
}

/* What the utilization plots show, for their captions. */
static void util_sentence(Buf *b, const Repro *r) {
  char bw[32];
  figs_fmt_rate(bw, sizeof bw, r->bandwidth, "B/s");
  buf_printf(b,
             " Each panel has its own time axis (its latency is in its "
             "title). Compute utilization is the share of the peak of the "
             "unit each Einsum runs on, for that Einsum's mix of "
             "operations (");
  report_units(b, r->arch);
  buf_printf(b,
             "), drawn in that unit's colour; DRAM bandwidth utilization is "
             "the share of %s. Vertical lines mark each Einsum's start, "
             "labelled with its number (where numbers would overlap, the "
             "longer Einsum's is shown).",
             bw);
}

/* Fig. 2b/c: best unfused over ideal fusion. */
static void utilization(Figs *f, Phase ph) {
  const Repro *r = f->r;
  char stem[48], title[160], sub[SUBTITLE_LEN], detail[64], what[96];
  snprintf(stem, sizeof stem, "utilization_%s", PHASE_NAME[ph]);
  snprintf(what, sizeof what, "utilization over time, %s", PHASE_NAME[ph]);
  figs_title_of(title, sizeof title, f, ph == PH_PREFILL ? "2b" : "2c", what);
  figs_phase_detail(detail, sizeof detail, r, ph);
  figs_subtitle_of(sub, sizeof sub, r, 0, detail);
  UtilStack u = {.stem = stem, .title = title, .subtitle = sub, .n = 2,
                 .height = 320};
  u.t[0] = &r->timeline[ph][DES_UNFUSED];
  u.t[1] = &r->timeline[ph][DES_IDEAL];
  u.panel[0] = design_label(DES_UNFUSED);
  u.panel[1] = design_label(DES_IDEAL);
  const char *key = ph == PH_PREFILL ? "ideal.speedup.prefill"
                                     : "ideal.speedup.decode";
  double speedup = figs_safe_div(u.t[0]->seconds, u.t[1]->seconds);
  buf_printf(&u.note[1], ", %.3gx faster", speedup);
  figs_paper_note(&u.note[1], r, key);
  Buf cap = {0};
  figs_caption_head(&cap, f, ph == PH_PREFILL ? "2b" : "2c");
  buf_printf(&cap,
             "one %s layer, best unfused (top) and ideal fusion, i.e. no "
             "inter-Einsum traffic (bottom). Ideal fusion is %.3gx faster",
             PHASE_NAME[ph], speedup);
  figs_paper_note(&cap, r, key);
  buf_printf(&cap, ".");
  util_sentence(&cap, r);
  u.caption = cap.s;
  emit_util_stack(f, &u);
  buf_free(&cap);
}

/* Fig. 6: the ideal (algorithmic-minimum traffic) timelines of the first
 * three strategies, prefill. */
static void strategies(Figs *f) {
  const Repro *r = f->r;
  char title[160], sub[SUBTITLE_LEN], detail[64];
  figs_title_of(title, sizeof title, f, "6",
           "ideal utilization by strategy, prefill");
  figs_phase_detail(detail, sizeof detail, r, PH_PREFILL);
  figs_subtitle_of(sub, sizeof sub, r, 0, detail);
  UtilStack u = {.stem = "utilization_strategies", .title = title,
                 .subtitle = sub, .n = 3, .height = 300};
  static const Design fig6[] = {DES_RI, DES_RI_RSB, DES_RI_RSB_RSP};
  for (int i = 0; i < 3; i++) {
    u.t[i] = &r->ideal_timeline[PH_PREFILL][fig6[i]];
    u.panel[i] = design_label(fig6[i]);
  }
  double gain = figs_safe_div(u.t[0]->seconds, u.t[1]->seconds);
  buf_printf(&u.note[1], ", %.3gx over RI", gain);
  figs_paper_note(&u.note[1], r, "ideal.ri_rsb_over_ri");
  buf_printf(&u.note[2], ", %.3gx over RI",
             figs_safe_div(u.t[0]->seconds, u.t[2]->seconds));
  Buf cap = {0};
  figs_caption_head(&cap, f, "6");
  buf_printf(&cap,
             "utilization over time of ideal RI, RI+RSb and RI+RSb+RSp "
             "fusion (algorithmic-minimum traffic), one prefill layer of "
             "%s. RI+RSb is %.3gx faster than RI",
             repro_workload(r, 0), gain);
  figs_paper_note(&cap, r, "ideal.ri_rsb_over_ri");
  buf_printf(&cap, ".");
  util_sentence(&cap, r);
  u.caption = cap.s;
  emit_util_stack(f, &u);
  buf_free(&cap);
}

/* Fig. 10: the prior accelerators and the four strategies, achieved. */
static void designs_utilization(Figs *f, Phase ph) {
  static const Design ds[] = {DES_MARCA,  DES_GEENS,      DES_RI,
                              DES_RI_RSB, DES_RI_RSB_RSP, DES_FULL};
  const Repro *r = f->r;
  char stem[48], title[160], sub[SUBTITLE_LEN], detail[64], what[96];
  snprintf(stem, sizeof stem, "utilization_designs_%s", PHASE_NAME[ph]);
  snprintf(what, sizeof what, "utilization by design, %s", PHASE_NAME[ph]);
  figs_title_of(title, sizeof title, f, ph == PH_PREFILL ? "10a" : "10b", what);
  figs_phase_detail(detail, sizeof detail, r, ph);
  figs_subtitle_of(sub, sizeof sub, r, 0, detail);
  UtilStack u = {.stem = stem, .title = title, .subtitle = sub, .n = 6,
                 .height = 250};
  double marca = r->timeline[ph][DES_MARCA].seconds;
  for (int i = 0; i < 6; i++) {
    u.t[i] = &r->timeline[ph][ds[i]];
    u.panel[i] = design_label(ds[i]);
    if (i > 0)
      buf_printf(&u.note[i], ", %.3gx over MARCA-like",
                 figs_safe_div(marca, u.t[i]->seconds));
  }
  if (ph == PH_PREFILL) {
    figs_paper_note(&u.note[1], r, "geens_over_marca.prefill");
    figs_paper_note(&u.note[4], r, "ri_rsb_rsp_over_marca.prefill");
  }
  Buf cap = {0};
  figs_caption_head(&cap, f, ph == PH_PREFILL ? "10a" : "10b");
  double lat[DES_COUNT];
  for (int d = 0; d < DES_COUNT; d++)
    lat[d] = r->timeline[ph][d].seconds;
  Design b = figs_best_strategy(lat);
  buf_printf(&cap,
             "utilization over time of one %s layer for MARCA-like, "
             "Geens-like and the four fusion strategies (achieved "
             "traffic). Mambalaya (the best strategy, %s) is %.3gx faster "
             "than MARCA-like",
             PHASE_NAME[ph], design_label(b),
             figs_safe_div(lat[DES_MARCA], lat[b]));
  figs_paper_note(&cap, r, ph == PH_PREFILL ? "vs_marca.prefill"
                                       : "vs_marca.decode");
  buf_printf(&cap, " and %.3gx faster than Geens-like",
             figs_safe_div(lat[DES_GEENS], lat[b]));
  if (ph == PH_PREFILL)
    figs_paper_note(&cap, r, "vs_geens.prefill");
  const Searched *bs = &r->best[0][ph];
  buf_printf(&cap, ". Best (searched), the schedule `mambalaya search` "
                   "finds, is %.3gx faster than MARCA-like (%.3gx from "
                   "ideal; the best strategy %.3gx).",
             figs_safe_div(lat[DES_MARCA], bs->seconds),
             repro_searched_gap(bs),
             figs_safe_div(lat[b], bs->ideal));
  util_sentence(&cap, r);
  u.caption = cap.s;
  emit_util_stack(f, &u);
  buf_free(&cap);
}

/* ---- Fig. 9: traffic ---- */

static double traffic_total(const Result *res) {
  return res->inter + res->intra;
}

/* The unit of a traffic axis: MB, or GB where MB would pass 10k (1 MB =
 * 10^6 bytes). */
static double traffic_unit(const Result *res, const char **name) {
  double most = 0;
  for (int d = 0; d < DES_COUNT; d++)
    most = fmax(most, traffic_total(&res[d]));
  bool gb = most >= 1e10;
  *name = gb ? "GB" : "MB";
  return gb ? 1e9 : 1e6;
}

/* ZOOM leaves out the designs that move at least half of best unfused's
 * traffic (best unfused itself, and MARCA-like where it spills as much)
 * and stacks the parts on a linear axis. Without it, every design is
 * there, a bar per part on a log axis: the fused designs' bars, orders of
 * magnitude shorter, stay visible (stacks on a log axis would misstate
 * the upper parts). */
static void traffic(Figs *f, Phase ph, bool zoom, const char *stem) {
  static const Design all[] = {DES_UNFUSED, DES_MARCA,      DES_GEENS,
                               DES_RI,      DES_RI_RSB,     DES_RI_RSB_RSP,
                               DES_FULL};
  enum { NALL = sizeof all / sizeof all[0] };
  const Repro *r = f->r;
  const Result *res = r->res[0][ph];
  double unfused = traffic_total(&res[DES_UNFUSED]);
  const char *cats[NALL];
  double y[4][NALL];
  int n = 0;
  Buf left_out = {0};
  const char *uname;
  double unit = traffic_unit(res, &uname);
  for (int i = 0; i < NALL; i++) {
    const Result *x = &res[all[i]];
    if (zoom && traffic_total(x) >= 0.5 * unfused) {
      buf_printf(&left_out, "%s%s (%.4g %s)", left_out.len ? ", " : "",
                 design_label(all[i]), traffic_total(x) / unit, uname);
      continue;
    }
    cats[n] = design_label(all[i]);
    y[0][n] = x->ideal_inter / unit;
    y[1][n] = fmax(0, x->inter - x->ideal_inter) / unit;
    y[2][n] = x->ideal_intra / unit;
    y[3][n++] = fmax(0, x->intra - x->ideal_intra) / unit;
  }
  /* The paper's colours: dark for the ideal traffic, light for the
   * excess achieved; intra-Einsum red (its "light pink segment"). */
  ChartSeries s[4] = {
      {.name = "inter-Einsum, ideal", .n = n, .y = y[0], .color = "#08519C"},
      {.name = "inter-Einsum, excess", .n = n, .y = y[1], .color = "#9ECAE1"},
      {.name = "intra-Einsum, ideal", .n = n, .y = y[2], .color = "#A50F15"},
      {.name = "intra-Einsum, excess", .n = n, .y = y[3], .color = "#FCBBA1"},
  };
  char title[160], sub[SUBTITLE_LEN], detail[64], what[96];
  snprintf(what, sizeof what, "DRAM traffic per layer, %s%s", PHASE_NAME[ph],
           zoom ? " (zoom)" : "");
  figs_title_of(title, sizeof title, f, ph == PH_PREFILL ? "9a" : "9b", what);
  figs_phase_detail(detail, sizeof detail, r, ph);
  figs_subtitle_of(sub, sizeof sub, r, 0, detail);
  char ylabel[64];
  snprintf(ylabel, sizeof ylabel, "DRAM traffic per layer (%s%s)", uname,
           zoom ? "" : ", log scale");
  Chart c = {.kind = zoom ? CHART_STACKED_BARS : CHART_BARS, .title = title,
             .subtitle = sub, .xlabel = "design", .ylabel = ylabel,
             .logy = !zoom, .ncategories = n, .categories = cats,
             .nseries = 4, .series = s};
  Buf cap = {0};
  figs_caption_head(&cap, f, ph == PH_PREFILL ? "9a" : "9b");
  buf_printf(&cap,
             "inter- and intra-Einsum DRAM traffic of one %s layer per "
             "design (1 %s = 10^%d bytes); dark: the ideal "
             "(algorithmic-minimum) traffic of the design, light: the excess "
             "achieved by the mapping search; %s.",
             PHASE_NAME[ph], uname, unit > 1e6 ? 9 : 6,
             zoom ? "stacked, on a linear axis"
                  : "a bar per part, on a log axis, so that the fused "
                    "designs' bars show beside the unfused ones (a part of "
                    "0 bytes has no bar)");
  if (left_out.len)
    buf_printf(&cap, " Left out, as they would dwarf the others: %s.",
               left_out.s);
  if (ph == PH_PREFILL) {
    double lo = INFINITY, hi = 0;
    Design st[DES_COUNT];
    int nst = figs_strategy_designs(st);
    for (int k = 0; k < nst; k++) {
      double red = figs_safe_div(res[DES_UNFUSED].inter, res[st[k]].inter);
      lo = fmin(lo, red), hi = fmax(hi, red);
    }
    buf_printf(&cap, " The fused variants cut inter-Einsum traffic %.3gx "
                     "to %.3gx",
               lo, hi);
    if (r->paper_setup)
      buf_printf(&cap, " (paper: %.3gx to %.3gx)",
                 figs_paper_value(r, "inter_reduction.min"),
                 figs_paper_value(r, "inter_reduction.max"));
    buf_printf(&cap, "; best unfused is %.3g%% inter-Einsum traffic",
               100 * figs_safe_div(res[DES_UNFUSED].inter,
                              res[DES_UNFUSED].read + res[DES_UNFUSED].write));
    if (r->paper_setup)
      buf_printf(&cap, " (paper, Table I: %.3g%%)",
                 figs_paper_value(r, "unfused.inter_share"));
    buf_printf(&cap, ".");
  }
  figs_emit_chart(f, stem, &c, cap.s);
  buf_free(&cap);
  buf_free(&left_out);
}

/* ---- Fig. 7 and 8: end to end ---- */

/* "long context, short generation (I0=16384, G=256)". */
static void scenario_label(char *out, size_t cap, const Scenario *s) {
  snprintf(out, cap, "%s (I0=%g, G=%g)", s->label, s->prompt, s->generated);
}

static void e2e_subtitle(char *out, size_t cap, const Repro *r) {
  char detail[64];
  snprintf(detail, sizeof detail, "end to end over %d layer%s",
           r->layers[0], r->layers[0] == 1 ? "" : "s");
  figs_subtitle_of(out, cap, r, 0, detail);
}

/* Fig. 7: each strategy's end-to-end speedup over best unfused, in each
 * scenario, beside its ideal (sequential chart) or its sequential
 * counterpart (pipelined chart); the paper's values as marks over the
 * bars they belong to. */
static void speedup(Figs *f, bool pipelined) {
  const Repro *r = f->r;
  const int lc = REPRO_SCENARIOS - 1; /* long context, as in repro.c */
  Design st[DES_COUNT];
  int nst = figs_strategy_designs(st);
  char labels[REPRO_SCENARIOS][160];
  const char *cats[REPRO_SCENARIOS];
  double y[2 * DES_COUNT][REPRO_SCENARIOS];
  const double(*primary)[DES_COUNT] = pipelined ? r->e2e_pipelined : r->e2e;
  const double(*beside)[DES_COUNT] = pipelined ? r->e2e : r->e2e_ideal;
  for (int sc = 0; sc < REPRO_SCENARIOS; sc++) {
    scenario_label(labels[sc], sizeof labels[sc], &r->scenarios[sc]);
    cats[sc] = labels[sc];
    for (int k = 0; k < nst; k++) {
      y[2 * k][sc] =
          figs_safe_div(primary[sc][DES_UNFUSED], primary[sc][st[k]]);
      y[2 * k + 1][sc] =
          figs_safe_div(beside[sc][DES_UNFUSED], beside[sc][st[k]]);
    }
  }
  /* The paper gives all four strategies at long context, and RI alone at
   * short context (sequential only). */
  ChartMark marks[DES_COUNT + 1];
  int nm = 0;
  for (int k = 0; k < nst; k++) {
    char key[64];
    figs_strategy_key(key, sizeof key,
                 pipelined ? "speedup.pipelined" : "speedup.prefill", st[k]);
    double v = figs_paper_value(r, key);
    if (isfinite(v))
      marks[nm++] = (ChartMark){lc, 2 * k, v};
  }
  double ri = figs_paper_value(r, "speedup.decode.ri");
  if (!pipelined && isfinite(ri))
    marks[nm++] = (ChartMark){0, 0, ri};
  char names[2 * DES_COUNT][48];
  ChartSeries s[2 * DES_COUNT];
  for (int k = 0; k < nst; k++) {
    snprintf(names[2 * k], sizeof names[0], "%s%s", design_label(st[k]),
             pipelined ? ", pipelined" : "");
    snprintf(names[2 * k + 1], sizeof names[0], "%s, %s",
             design_label(st[k]), pipelined ? "sequential" : "ideal");
    s[2 * k] = (ChartSeries){.name = names[2 * k], .n = REPRO_SCENARIOS,
                             .y = y[2 * k],
                             .color = design_color(st[k], SHADE_MAIN)};
    s[2 * k + 1] = (ChartSeries){.name = names[2 * k + 1],
                                 .n = REPRO_SCENARIOS, .y = y[2 * k + 1],
                                 .color = design_color(st[k], SHADE_MAIN),
                                 .dashed = true};
  }
  char title[160], sub[SUBTITLE_LEN];
  figs_title_of(title, sizeof title, f, "7",
           pipelined ? "end-to-end speedup over best unfused, parallel "
                       "pipelining"
                     : "end-to-end speedup over best unfused");
  e2e_subtitle(sub, sizeof sub, r);
  Chart c = {.kind = CHART_BARS, .title = title, .subtitle = sub,
             .xlabel = "scenario (I0 prompt tokens, then G generated)",
             .ylabel = "speedup over best unfused (x)",
             .ncategories = REPRO_SCENARIOS, .categories = cats,
             .nseries = 2 * nst, .series = s, .nmarks = nm,
             .marks = marks, .marks_name = PAPER_MARKS, .width = 900,
             .height = 480};
  Buf cap = {0};
  figs_caption_head(&cap, f, pipelined ? "7 (with parallel pipelining, §VI-C)"
                                  : "7");
  buf_printf(&cap,
             "end-to-end latency of %d layer%s (a prefill of I0 tokens, then "
             "G decode steps) of each fusion strategy, as speedup over best "
             "unfused; %s.",
             r->layers[0], r->layers[0] == 1 ? "" : "s",
             pipelined ? "solid bars with parallel pipelining, light bars "
                         "sequential"
                       : "solid bars achieved, light bars with the ideal "
                         "(algorithmic-minimum) traffic");
  if (nm > 0)
    buf_printf(&cap,
               " Black diamonds: the paper's values, on the bar they belong "
               "to (%s).",
               pipelined ? "long context: the four strategies"
                         : "long context: the four strategies; short "
                           "context: RI, the best there");
  char stem[48];
  snprintf(stem, sizeof stem, "speedup_e2e%s", pipelined ? "_pipelined" : "");
  figs_emit_chart(f, stem, &c, cap.s);
  buf_free(&cap);
}

/* Fig. 8: MARCA-like, Geens-like and Mambalaya (the best strategy of each
 * scenario), end to end, as speedup over best unfused. */
static void sota(Figs *f) {
  const Repro *r = f->r;
  const int lc = REPRO_SCENARIOS - 1;
  char labels[REPRO_SCENARIOS][160];
  const char *cats[REPRO_SCENARIOS];
  double y[4][REPRO_SCENARIOS];
  Buf best = {0};
  for (int sc = 0; sc < REPRO_SCENARIOS; sc++) {
    const double *e = r->e2e[sc];
    Design b = figs_best_strategy(e);
    scenario_label(labels[sc], sizeof labels[sc], &r->scenarios[sc]);
    cats[sc] = labels[sc];
    y[0][sc] = figs_safe_div(e[DES_UNFUSED], e[DES_MARCA]);
    y[1][sc] = figs_safe_div(e[DES_UNFUSED], e[DES_GEENS]);
    y[2][sc] = figs_safe_div(e[DES_UNFUSED], e[b]);
    y[3][sc] = figs_safe_div(e[DES_UNFUSED], r->e2e_best[sc]);
    buf_printf(&best, "%s%s: %s", sc ? "; " : "", r->scenarios[sc].label,
               design_label(b));
  }
  /* The paper: Mambalaya 4.9x over unfused at long context (the fully
   * fused design's figure); it gives no value of its own for the prior
   * accelerators there, only that Mambalaya beats the better of them by
   * more than 44 %. */
  double mamba = figs_paper_value(r, "speedup.prefill.full");
  ChartMark mark = {lc, 2, mamba};
  ChartSeries s[4] = {
      {.name = "MARCA-like", .n = REPRO_SCENARIOS, .y = y[0],
       .color = design_color(DES_MARCA, SHADE_MAIN)},
      {.name = "Geens-like", .n = REPRO_SCENARIOS, .y = y[1],
       .color = design_color(DES_GEENS, SHADE_MAIN)},
      /* the best strategy of each scenario: full fusion's colour */
      {.name = "Mambalaya", .n = REPRO_SCENARIOS, .y = y[2],
       .color = design_color(DES_FULL, SHADE_MAIN)},
      {.name = "best (searched)", .n = REPRO_SCENARIOS, .y = y[3],
       .color = design_color(DES_COUNT, SHADE_MAIN)},
  };
  char title[160], sub[SUBTITLE_LEN];
  figs_title_of(title, sizeof title, f, "8",
           "end-to-end speedup over best unfused");
  e2e_subtitle(sub, sizeof sub, r);
  Chart c = {.kind = CHART_BARS, .title = title, .subtitle = sub,
             .xlabel = "scenario (I0 prompt tokens, then G generated)",
             .ylabel = "speedup over best unfused (x)",
             .ncategories = REPRO_SCENARIOS, .categories = cats,
             .nseries = 4, .series = s, .nmarks = isfinite(mamba),
             .marks = &mark, .marks_name = PAPER_MARKS, .width = 860,
             .height = 440};
  Buf cap = {0};
  figs_caption_head(&cap, f, "8");
  buf_printf(&cap,
             "Mambalaya (the best of the four strategies in each scenario: "
             "%s) against the MARCA-like and Geens-like accelerators, end "
             "to end. Mambalaya is %.3gx faster than the better prior "
             "accelerator at long context.",
             best.s, figs_safe_div(y[2][lc], fmax(y[0][lc], y[1][lc])));
  buf_printf(&cap, " Best (searched), the schedule `mambalaya search` finds "
                   "per layer, is %.3gx faster than the better prior "
                   "accelerator there.",
             figs_safe_div(y[3][lc], fmax(y[0][lc], y[1][lc])));
  if (r->paper_setup) {
    double gain = figs_paper_value(r, "long_context.improvement");
    buf_printf(&cap,
               " The black diamond is the paper's long-context value "
               "(%.3gx); the paper gives more than %.0f%% over the better "
               "prior accelerator there, so that one is at most %.3gx "
               "(ours: %.3gx). Geomean over the scenarios: %.3gx over "
               "MARCA-like (paper: %.3gx), %.3gx over Geens-like (paper: "
               "%.3gx).",
               mamba, 100 * (gain - 1), figs_safe_div(mamba, gain),
               fmax(y[0][lc], y[1][lc]),
               figs_ours_value(r, "vs_marca.e2e_geomean"),
               figs_paper_value(r, "vs_marca.e2e_geomean"),
               figs_ours_value(r, "vs_geens.e2e_geomean"),
               figs_paper_value(r, "vs_geens.e2e_geomean"));
  }
  figs_emit_chart(f, "sota", &c, cap.s);
  buf_free(&cap);
  buf_free(&best);
}

/* ---- the sweep over I, and energy ---- */

/* "sweep_370m" for mamba-370m, "sweep_mamba2-370m" for mamba2-370m,
 * "sweep" without a model. */
static void sweep_stem(char *out, size_t cap, const char *model) {
  const char *p = "mamba-";
  if (!model) {
    snprintf(out, cap, "sweep");
    return;
  }
  snprintf(out, cap, "sweep_%s",
           strncmp(model, p, strlen(p)) == 0 ? model + strlen(p) : model);
}

static void sweep(Figs *f, int m) {
  const Repro *r = f->r;
  double x[REPRO_LENGTHS], y[DES_COUNT + 1][REPRO_LENGTHS];
  ChartSeries s[DES_COUNT + 1]; /* the designs, then best (searched) */
  int ns = 0;
  for (int k = 0; k < REPRO_LENGTHS; k++)
    x[k] = ldexp(1, k);
  for (int d = 0; d < DES_COUNT; d++) {
    if (d == DES_UNFUSED)
      continue;
    for (int k = 0; k < REPRO_LENGTHS; k++)
      y[d][k] = figs_safe_div(r->sweep[m][k][DES_UNFUSED], r->sweep[m][k][d]);
    s[ns++] = (ChartSeries){.name = design_label((Design)d),
                            .n = REPRO_LENGTHS, .x = x, .y = y[d],
                            .color = design_color((Design)d, SHADE_MAIN),
                            .dashed = d == DES_IDEAL || d == DES_MARCA};
  }
  for (int k = 0; k < REPRO_LENGTHS; k++)
    y[DES_COUNT][k] =
        figs_safe_div(r->sweep[m][k][DES_UNFUSED], r->sweep_best[m][k]);
  s[ns++] = (ChartSeries){.name = "best (searched)", .n = REPRO_LENGTHS,
                          .x = x, .y = y[DES_COUNT],
                          .color = design_color(DES_COUNT, SHADE_MAIN)};
  char title[160], sub[SUBTITLE_LEN];
  snprintf(title, sizeof title,
           "Prefill speedup over best unfused vs sequence length, %s, one "
           "layer",
           repro_workload(r, m));
  figs_subtitle_of(sub, sizeof sub, r, m, "prefill I=2^0..2^20");
  /* From 0, so that a design no faster than best unfused (1x) is not
   * drawn along the axis. */
  double top = 1;
  for (int i = 0; i < ns; i++)
    for (int k = 0; k < REPRO_LENGTHS; k++)
      if (isfinite(s[i].y[k]))
        top = fmax(top, s[i].y[k]);
  Chart c = {.kind = CHART_LINE, .title = title, .subtitle = sub,
             .xlabel = "sequence length I (tokens)", .ymin = 0,
             .ymax = ceil(top * 1.02),
             .ylabel = "speedup over best unfused (x)", .logx = true,
             .nseries = ns, .series = s, .xmin = 1,
             .xmax = ldexp(1, REPRO_LENGTHS - 1), .height = 440};
  Buf cap = {0};
  buf_printf(&cap,
             "§VI sweep (the paper's setup varies I from 1 to 2^20; it "
             "prints no figure of it): per-layer prefill latency of each "
             "design on %s over I = 2^0 .. 2^20, and of best (searched), "
             "the schedule `mambalaya search` finds, as speedup over best "
             "unfused at the same I.",
             repro_workload(r, m));
  char stem[64];
  sweep_stem(stem, sizeof stem, r->model_names[m]);
  figs_emit_chart(f, stem, &c, cap.s);
  buf_free(&cap);
}

/* ---- the ski slope ---- */

/* "32 MiB": a capacity in binary prefixes, as architecture files give it. */
static void fmt_capacity(char *out, size_t cap, double bytes) {
  static const char *const P[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int k = 0;
  while (k < 4 && bytes >= 1024)
    bytes /= 1024, k++;
  snprintf(out, cap, "%g %s", bytes, P[k]);
}

/* Each design's DRAM traffic and latency (prefill, one layer) against the
 * fusion level's capacity, swept over a log range around the
 * architecture's: the "ski slope" (AccelForge's plot), where a design
 * stops gaining from a larger buffer. Two panels on one capacity axis. */
static void ski_slope(Figs *f) {
  const Repro *r = f->r;
  const Arch *a = r->arch;
  const char *level = a->levels[a->fusion_level].name;
  double x[REPRO_CAPACITIES];
  double most_b = 0, most_s = 0;
  for (int k = 0; k < REPRO_CAPACITIES; k++) {
    x[k] = r->slope_capacity[k] / (1024.0 * 1024.0);
    for (int d = 0; d < DES_COUNT; d++) {
      if (isfinite(r->slope_bytes[k][d]))
        most_b = fmax(most_b, r->slope_bytes[k][d]);
      if (isfinite(r->slope_seconds[k][d]))
        most_s = fmax(most_s, r->slope_seconds[k][d]);
    }
  }
  bool gb = most_b >= 1e10, ms = most_s >= 1e-3;
  double bunit = gb ? 1e9 : 1e6, sunit = ms ? 1e-3 : 1e-6;
  double y[2][DES_COUNT][REPRO_CAPACITIES];
  ChartSeries s[2][DES_COUNT];
  Buf missing = {0};
  for (int d = 0; d < DES_COUNT; d++) {
    int gaps = 0;
    for (int k = 0; k < REPRO_CAPACITIES; k++) {
      y[0][d][k] = r->slope_bytes[k][d] / bunit;
      y[1][d][k] = r->slope_seconds[k][d] / sunit;
      gaps += !isfinite(y[0][d][k]);
    }
    if (gaps)
      buf_printf(&missing, "%s%s (%d)", missing.len ? ", " : "",
                 design_label((Design)d), gaps);
    for (int p = 0; p < 2; p++)
      s[p][d] = (ChartSeries){.name = design_label((Design)d),
                              .n = REPRO_CAPACITIES, .x = x, .y = y[p][d],
                              .color = design_color((Design)d, SHADE_MAIN),
                              .dashed = d == DES_IDEAL || d == DES_MARCA};
  }
  char here[32], vlabel[96], ylab[2][64], xlabel[96];
  fmt_capacity(here, sizeof here, a->levels[a->fusion_level].capacity);
  snprintf(vlabel, sizeof vlabel, "%s: %s", r->arch_label, here);
  ChartLine v = {a->levels[a->fusion_level].capacity / (1024.0 * 1024.0),
                 vlabel};
  snprintf(ylab[0], sizeof ylab[0], "DRAM traffic per layer (%s, log)",
           gb ? "GB" : "MB");
  snprintf(ylab[1], sizeof ylab[1], "latency per layer (%s, log)",
           ms ? "ms" : "µs");
  snprintf(xlabel, sizeof xlabel, "capacity of %s, the fusion level (MiB)",
           level);
  static const char *const panel[2] = {"DRAM traffic", "latency"};
  Chart c[2];
  for (int p = 0; p < 2; p++)
    c[p] = (Chart){.kind = CHART_LINE, .title = panel[p], .xlabel = xlabel,
                   .ylabel = ylab[p], .logx = true, .logy = true,
                   .nseries = DES_COUNT, .series = s[p], .nvlines = 1,
                   .vlines = &v, .xmin = x[0],
                   .xmax = x[REPRO_CAPACITIES - 1], .height = 400};
  char sub[SUBTITLE_LEN], detail[64];
  figs_phase_detail(detail, sizeof detail, r, PH_PREFILL);
  figs_subtitle_of(sub, sizeof sub, r, 0, detail);
  char lo[32], hi[32];
  fmt_capacity(lo, sizeof lo, r->slope_capacity[0]);
  fmt_capacity(hi, sizeof hi, r->slope_capacity[REPRO_CAPACITIES - 1]);
  Buf cap = {0};
  buf_printf(&cap,
             "The ski slope (as AccelForge plots it): each design's DRAM "
             "traffic and latency for one %s prefill layer, with the "
             "capacity of %s, the fusion level, from %s to %s (the "
             "architecture's is %s; everything else as the file gives "
             "it). A design's traffic falls while a larger level keeps "
             "more of its tiles and intermediates, then flattens where it "
             "holds them all.",
             repro_workload(r, 0), level, lo, hi, here);
  if (missing.len)
    buf_printf(&cap,
               " Points left out, where the design cannot run (a tile "
               "larger than the level) or the level would outgrow a "
               "staging level above it: %s.",
               missing.s);
  figs_emit_stack(f, "ski_slope",
             "DRAM traffic and latency vs the fusion level's capacity", sub,
             2, c, panel, cap.s);
  buf_free(&cap);
  buf_free(&missing);
}

/* "DRAM, GlobalBuffer, Registers and operations": the parts of the
 * energy, by the architecture's own names. */
static void energy_parts(Buf *b, const Arch *a) {
  for (int l = 0; l < a->nlevels; l++)
    buf_printf(b, "%s, ", a->levels[l].name);
  buf_printf(b, "operations");
}

/* Energy per token of one layer, by design and by where it goes -- each
 * memory level of the architecture by its own name, none folded into
 * another, and the operations: a panel per phase, prefill's energy over
 * its B x I tokens, decode's over its B (one token per sequence), so that
 * the two compare. */
static void energy(Figs *f) {
  const Repro *r = f->r;
  const Arch *a = r->arch;
  int np = a->nlevels + 1; /* the levels, then the operations */
  const char *cats[DES_COUNT];
  double *y = xcalloc((size_t)(PH_COUNT * np * DES_COUNT), sizeof *y);
  double tokens[] = {r->batch * r->prefill, r->batch};
  _Static_assert(sizeof tokens / sizeof tokens[0] == PH_COUNT,
                 "tokens per phase");
  ChartSeries *s = xcalloc((size_t)(PH_COUNT * np), sizeof *s);
  Chart c[PH_COUNT];
  char titles[PH_COUNT][160];
  const char *panels[PH_COUNT];
  for (int d = 0; d < DES_COUNT; d++)
    cats[d] = design_label((Design)d);
  for (int p = 0; p < PH_COUNT; p++) {
    for (int e = 0; e < np; e++) {
      double *ye = &y[(p * np + e) * DES_COUNT];
      for (int d = 0; d < DES_COUNT; d++) {
        const Result *x = &r->res[0][p][d];
        double j = e < a->nlevels ? x->level_j[e] : x->ops_j;
        ye[d] = figs_safe_div(j, tokens[p]) * 1e6;
      }
      s[p * np + e] = (ChartSeries){
          .name = e < a->nlevels ? a->levels[e].name : "operations",
          .n = DES_COUNT, .y = ye,
          .color = e < a->nlevels ? level_color(a, e) : ops_color()};
    }
    snprintf(titles[p], sizeof titles[p], "%s: %g tokens per pass",
             PHASE_NAME[p], tokens[p]);
    panels[p] = PHASE_NAME[p];
    c[p] = (Chart){.kind = CHART_STACKED_BARS, .title = titles[p],
                   .xlabel = "design",
                   .ylabel = "energy per token, one layer (µJ)",
                   .ncategories = DES_COUNT, .categories = cats,
                   .nseries = np, .series = &s[p * np], .width = 900,
                   .height = 380};
  }
  char sub[SUBTITLE_LEN], detail[64];
  snprintf(detail, sizeof detail, "prefill I=%g, decode I=1", r->prefill);
  figs_subtitle_of(sub, sizeof sub, r, 0, detail);
  const Result *pre = &r->res[0][PH_PREFILL][DES_UNFUSED];
  const Result *dec = &r->res[0][PH_DECODE][DES_UNFUSED];
  Buf parts = {0};
  energy_parts(&parts, a);
  Buf cap = {0};
  buf_printf(&cap,
             "Energy of one layer per token, by design and by component "
             "(each memory level of %s: %s, from the architecture's "
             "per-access and per-operation energies): a prefill pass's "
             "over its B x I = %g tokens, a decode step's over its B = %g "
             "tokens (one per sequence). Per token, a best unfused decode "
             "step costs %.3gx a prefill's. Not a figure of the paper, "
             "which only mentions the energy gains of fusion (§II).",
             r->arch_label, parts.s, tokens[PH_PREFILL], tokens[PH_DECODE],
             figs_safe_div(dec->energy_j / tokens[PH_DECODE],
                      pre->energy_j / tokens[PH_PREFILL]));
  figs_emit_stack(f, "energy", "Energy per token by design and component", sub,
             PH_COUNT, c, panels, cap.s);
  buf_free(&cap);
  buf_free(&parts);
  free(s);
  free(y);
}

bool report_figures(const Repro *r, OutSet *out, unsigned formats,
                    Diag *d) {
  Figs f = {.r = r, .out = out, .formats = formats, .d = d, .ok = true};
  buf_printf(&f.csv, "figure,series,x,y\n");
  roofline(&f, PH_PREFILL, "roofline");
  roofline(&f, PH_DECODE, "roofline_decode");
  utilization(&f, PH_PREFILL);
  utilization(&f, PH_DECODE);
  strategies(&f);
  designs_utilization(&f, PH_PREFILL);
  designs_utilization(&f, PH_DECODE);
  traffic(&f, PH_PREFILL, false, "traffic_prefill");
  traffic(&f, PH_PREFILL, true, "traffic_prefill_fused");
  traffic(&f, PH_DECODE, false, "traffic_decode");
  if (repro_has_e2e(r)) { /* a layer count makes them meaningful */
    speedup(&f, false);
    speedup(&f, true);
    sota(&f);
  }
  for (int m = 0; m < r->nmodels; m++)
    sweep(&f, m);
  ski_slope(&f);
  energy(&f);
  figs_put_file(&f, "figures.csv", &f.csv);
  figs_targets_csv(&f);
  figs_index_html(&f);
  for (int i = 0; i < f.n; i++) {
    free(f.e[i].stem);
    free(f.e[i].alt);
    free(f.e[i].caption);
  }
  buf_free(&f.csv);
  return f.ok;
}
