/* output.c — a study's results for programs (points.csv: one row per
 * point, a column per input and per figure; sweep.json: the same with
 * every component's energy and area, the fronts and the study's inputs),
 * for the eye (the fronts drawn through the chart model of src/report)
 * and for the terminal (each front as a table). Everything here is a
 * function of the results alone: no time, no host. The files land as
 * one set, never over one of the study's inputs. */
#include "study.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const Arch *point_arch(const Study *s, long point) {
  long at[DIM_COUNT];
  study_point(s, point, at);
  return s->variant[at[DIM_ARCH] * s->nptuples + s->combo_p[at[DIM_COMBO]]];
}

/* ---- CSV ---- */

void sweep_csv(Buf *b, const Study *s, const PointResult *res,
               const bool *on) {
  Cell *cells = xcalloc((size_t)study_ncells(s), sizeof *cells);
  int n = study_cells(s, 0, cells);
  buf_printf(b, "point");
  for (int i = 0; i < n; i++) {
    buf_printf(b, ",");
    csv_field(b, cells[i].name);
  }
  for (int f = 0; f < FIG_COUNT; f++)
    buf_printf(b, ",%s", figure_column((Figure)f));
  buf_printf(b, ",pareto%s,error\n",
             s->reference ? ",within_reference_area" : "");
  for (long p = 0; p < s->npoints; p++) {
    study_cells(s, p, cells);
    buf_printf(b, "%ld", p);
    for (int i = 0; i < n; i++) {
      buf_printf(b, ",");
      csv_field(b, cells[i].text);
    }
    csv_numbers(b, res[p].fig, FIG_COUNT);
    buf_printf(b, ",%s", on[p] ? "true" : "false");
    if (s->reference)
      buf_printf(b, ",%s",
                 res[p].fig[FIG_AREA] <= s->reference_area ? "true" : "false");
    buf_printf(b, ",");
    csv_field(b, res[p].error);
    buf_printf(b, "\n");
  }
  free(cells);
}

/* ---- JSON ---- */

static json_t *num(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *source_json(const char *name, const Source *src) {
  json_t *o = json_object();
  json_object_set_new(o, "name", json_string(name));
  json_object_set_new(o, "path", json_string(src->path));
  json_object_set_new(o, "shipped", json_boolean(src->shipped));
  json_object_set_new(o, "sha256", json_string(src->sha256));
  return o;
}

/* The study's inputs: what `mambalaya diff` compares first. */
static json_t *study_inputs(const Study *s) {
  json_t *o = json_object();
  json_object_set_new(o, "tool", json_string("mambalaya " MAMBALAYA_VERSION));
  json_object_set_new(o, "command", json_string("sweep"));
  json_t *st = json_object();
  json_object_set_new(st, "path", json_string(s->path));
  json_object_set_new(st, "sha256", json_string(s->sha256));
  json_object_set_new(o, "study", st);
  json_object_set_new(o, "name", json_string(s->name));
  json_t *specs = json_array();
  for (int i = 0; i < s->ncascades; i++)
    json_array_append_new(specs, source_json(s->cascades[i].spec,
                                             &s->cascades[i].src));
  json_object_set_new(o, "specs", specs);
  json_t *archs = json_array();
  for (int i = 0; i < s->narchs; i++)
    json_array_append_new(archs,
                          source_json(s->archs[i].name, &s->archs[i].src));
  json_object_set_new(o, "architectures", archs);
  json_t *objs = json_array();
  for (int k = 0; k < s->nobjectives; k++)
    json_array_append_new(objs,
                          json_string(figure_objective(s->objectives[k])));
  json_object_set_new(o, "objectives", objs);
  if (s->reference) {
    json_object_set_new(o, "reference", json_string(s->reference));
    json_object_set_new(o, "reference_area_mm2", num(s->reference_area));
  }
  json_object_set_new(o, "points", json_integer(s->npoints));
  return o;
}

json_t *sweep_json(const Study *s, const PointResult *res, const bool *on) {
  json_t *root = json_object();
  json_object_set_new(root, "inputs", study_inputs(s));
  if (s->description[0])
    json_object_set_new(root, "description", json_string(s->description));
  Cell *cells = xcalloc((size_t)study_ncells(s), sizeof *cells);
  json_t *points = json_array();
  for (long p = 0; p < s->npoints; p++) {
    json_t *x = json_object();
    json_object_set_new(x, "point", json_integer(p));
    json_t *in = json_object();
    int n = study_cells(s, p, cells);
    for (int i = 0; i < n; i++)
      json_object_set_new(in, cells[i].name,
                          isnan(cells[i].num) ? json_string(cells[i].text)
                                              : report_real(cells[i].num));
    json_object_set_new(x, "inputs", in);
    if (res[p].error[0]) {
      json_object_set_new(x, "error", json_string(res[p].error));
    } else {
      json_t *figs = json_object();
      for (int f = 0; f < FIG_COUNT; f++)
        json_object_set_new(figs, figure_column((Figure)f),
                            num(res[p].fig[f]));
      json_object_set_new(x, "figures", figs);
      const Arch *a = point_arch(s, p);
      json_t *comps = report_components_json(a, NULL);
      for (size_t i = 0; i < json_array_size(comps); i++)
        json_object_set_new(json_array_get(comps, i), "energy_j",
                            num(res[p].component_j[i]));
      json_object_set_new(x, "components", comps);
    }
    json_object_set_new(x, "pareto", json_boolean(on[p]));
    json_array_append_new(points, x);
  }
  json_object_set_new(root, "points", points);
  int *group_of = xcalloc((size_t)s->npoints + 1, sizeof *group_of);
  char **labels;
  int ng = study_groups(s, group_of, &labels);
  json_t *fronts = json_array();
  for (int g = 0; g < ng; g++) {
    json_t *fr = json_object();
    json_object_set_new(fr, "group", json_string(labels[g]));
    json_t *idx = json_array();
    for (long p = 0; p < s->npoints; p++)
      if (group_of[p] == g && on[p])
        json_array_append_new(idx, json_integer(p));
    json_object_set_new(fr, "points", idx);
    json_array_append_new(fronts, fr);
    free(labels[g]);
  }
  free(labels);
  free(group_of);
  json_object_set_new(root, "fronts", fronts);
  free(cells);
  return root;
}

/* ---- the chart ----
 *
 * Every objective is drawn: a panel per pair of objectives (the upper
 * triangle of a scatter matrix; one panel for two objectives), per group
 * of points with a front of its own. A point's colour says its design
 * (and stitcher), its marker its architecture (and cascade, when the
 * study has several), each such series a legend entry; a ring marks the
 * front over all the objectives. Points tied on every objective (two
 * stitchers giving one plan, say) are one mark, labelled with all their
 * numbers. The axes are in engineering units (ms, mJ, MB), and a key
 * under each panel lists its front's points with the inputs the study
 * sweeps, so that every front point can be read off. */

enum { MAX_FRONT_LABELS = 6, PARETO_MARKERS = 6 };

/* A point by its figures over the objectives: what a tie is. */
typedef struct Mark {
  double v[SWEEP_MAX_OBJECTIVES];
  long point; /* the lowest number of the points tied here */
  long other; /* another of them, when there are several */
  int series;
  long tied;  /* how many points the mark stands for */
  bool front; /* on the front (every tied point is) */
} Mark;

static int by_figures(const void *a, const void *b) {
  const Mark *u = a, *v = b;
  for (int k = 0; k < SWEEP_MAX_OBJECTIVES; k++)
    if (u->v[k] != v->v[k])
      return u->v[k] < v->v[k] ? -1 : 1;
  return (u->point > v->point) - (u->point < v->point);
}

/* The series of point P: its cascade (when several), design and
 * architecture, as one index. */
static int series_of(const Study *s, long p) {
  long at[DIM_COUNT];
  study_point(s, p, at);
  int nc = s->ncascades > 1 ? s->ncascades : 1;
  int c = nc > 1 ? s->cms[at[DIM_CASCADE]].cascade : 0;
  return ((int)at[DIM_DESIGN] * s->narchs + (int)at[DIM_ARCH]) * nc + c;
}

/* "RI+RSb, greedy, specs/mamba2.yaml on h100" for series K. */
static const char *series_name(Arena *a, const Study *s, int k) {
  int nc = s->ncascades > 1 ? s->ncascades : 1;
  int c = k % nc, arch = k / nc % s->narchs, d = k / nc / s->narchs;
  const DesignStitch *ds = &s->ds[d];
  int same = 0;
  for (int j = 0; j < s->nds; j++)
    same += s->ds[j].design == ds->design;
  Buf b = {0};
  buf_printf(&b, "%s", ds->design == DESIGN_BEST ? "best (searched)"
                                                 : design_label(ds->design));
  if (same > 1 && ds->stitch >= 0)
    buf_printf(&b, ", %s", stitcher_name((Stitcher)ds->stitch));
  if (nc > 1)
    buf_printf(&b, ", %s", s->cascades[c].spec);
  buf_printf(&b, " on %s", s->archs[arch].name);
  char *out = arena_strdup(a, b.s);
  buf_free(&b);
  return out;
}

/* The marks of group W, ties merged: one per distinct tuple of figures,
 * the lowest point number standing for the others. Returns how many. */
static long group_marks(Arena *a, const Study *s, const PointResult *res,
                        const bool *on, const int *group_of, int w,
                        Mark **out) {
  Mark *m = arena_alloc(a, ((size_t)s->npoints + 1) * sizeof *m);
  long n = 0;
  for (long i = 0; i < s->npoints; i++) {
    bool ok = group_of[i] == w && !res[i].error[0];
    for (int k = 0; ok && k < s->nobjectives; k++)
      ok = isfinite(res[i].fig[s->objectives[k]]);
    if (!ok)
      continue;
    m[n] = (Mark){.point = i, .other = i, .series = series_of(s, i),
                  .tied = 1, .front = on[i]};
    for (int k = 0; k < s->nobjectives; k++)
      m[n].v[k] = res[i].fig[s->objectives[k]];
    n++;
  }
  qsort(m, (size_t)n, sizeof *m, by_figures);
  long kept = 0;
  for (long i = 0; i < n; i++) {
    Mark *last = kept > 0 ? &m[kept - 1] : NULL;
    if (last && memcmp(last->v, m[i].v, sizeof m[i].v) == 0) {
      last->other = last->tied++ == 1 ? m[i].point : last->other;
      last->front = last->front || m[i].front;
      continue;
    }
    m[kept++] = m[i];
  }
  *out = m;
  return kept;
}

/* "#520" or, for a tie, "#520 = #528" or "#520 +19 tied". */
static const char *mark_label(Arena *a, const Mark *m) {
  char text[64];
  if (m->tied == 1)
    snprintf(text, sizeof text, "#%ld", m->point);
  else if (m->tied == 2)
    snprintf(text, sizeof text, "#%ld = #%ld", m->point, m->other);
  else
    snprintf(text, sizeof text, "#%ld +%ld tied", m->point, m->tied - 1);
  return arena_strdup(a, text);
}

/* A log axis when the values span more than a factor of 30. */
static bool spans(const Mark *m, long n, int k) {
  double lo = INFINITY, hi = 0;
  for (long i = 0; i < n; i++)
    if (m[i].v[k] > 0)
      lo = fmin(lo, m[i].v[k]), hi = fmax(hi, m[i].v[k]);
  return hi > 30 * lo;
}

/* Base unit U with the SI prefix that puts LEAST between 1 and 1000, so
 * that no tick is a fraction ("ms", not seconds in 4e-3), into UNIT;
 * returns what the values are divided by. */
static double eng_prefix(double least, const char *u, char *unit,
                         size_t cap) {
  static const char *const PREFIX[] = {"p", "n", "µ", "m", "",
                                       "k", "M", "G", "T"};
  int e = isfinite(least) && least > 0 ? (int)floor(log10(least) / 3) : 0;
  e = e < -4 ? -4 : e > 4 ? 4 : e;
  snprintf(unit, cap, "%s%s", PREFIX[e + 4], u);
  return pow(10, 3 * e);
}

/* The quantity F is and its base unit, which takes an SI prefix ("s",
 * "J", "J s", "B"), or NULL: area, in mm2 as every report gives it. */
static const char *figure_unit(Figure f, const char **what) {
  switch (f) {
  case FIG_LATENCY: *what = "latency"; return "s";
  case FIG_ENERGY: *what = "energy"; return "J";
  case FIG_EDP: *what = "energy-delay product"; return "J s";
  case FIG_TRAFFIC: *what = "DRAM traffic"; return "B";
  case FIG_AREA: *what = "area"; return NULL;
  default: *what = figure_column(f); return NULL;
  }
}

/* Objective K's unit on its axis, from the smallest of the N marks'
 * values (area stays in mm2): *WHAT gets the quantity's name, UNIT the
 * unit; returns what the values are divided by. */
static double axis_unit(Figure f, const Mark *m, long n, int k,
                        const char **what, char *unit, size_t cap) {
  const char *u = figure_unit(f, what);
  if (!u) {
    snprintf(unit, cap, "%s", f == FIG_AREA ? "mm2" : "?");
    return 1;
  }
  double least = INFINITY;
  for (long i = 0; i < n; i++)
    if (isfinite(m[i].v[k]) && m[i].v[k] > 0)
      least = fmin(least, m[i].v[k]);
  return eng_prefix(least, u, unit, cap);
}

/* "latency (ms)", and the divisor. */
static double axis_scale(Arena *a, Figure f, const Mark *m, long n, int k,
                         const char **label) {
  const char *what;
  char unit[16], text[64];
  double d = axis_unit(f, m, n, k, &what, unit, sizeof unit);
  snprintf(text, sizeof text, "%s (%s)", what, unit);
  *label = arena_strdup(a, text);
  return d;
}

/* V of objective F with an SI prefix of its own: "4.102 ms", "1.783 mJ",
 * "130.2 mm2". */
static void fig_text(Buf *b, Figure f, double v) {
  const char *what, *unit = figure_unit(f, &what);
  if (unit)
    fmt_unit(b, v, unit);
  else
    buf_printf(b, "%.4g%s", v, f == FIG_AREA ? " mm2" : "");
}

/* Which input columns take more than one value over the study. */
static bool *varying_columns(const Study *s, Cell *cells, int n) {
  bool *vary = xcalloc((size_t)n + 1, sizeof *vary);
  Cell *first = xcalloc((size_t)n + 1, sizeof *first);
  study_cells(s, 0, first);
  for (long p = 1; p < s->npoints; p++) {
    study_cells(s, p, cells);
    for (int i = 0; i < n; i++)
      vary[i] = vary[i] || strcmp(first[i].text, cells[i].text) != 0;
  }
  free(first);
  return vary;
}

/* Is input column I (study_cells' order: spec, model, the settings,
 * architecture, the parameters, design, stitch, the options, workload) a
 * setting, a parameter or an option: what a point's colour and marker do
 * not say? */
static bool swept_input(const Study *s, int i) {
  int set0 = 2, par0 = set0 + s->nsettings + 1,
      opt0 = par0 + s->nparams + 2;
  return (i >= set0 && i < set0 + s->nsettings) ||
         (i >= par0 && i < par0 + s->nparams) ||
         (i >= opt0 && i < opt0 + s->noptions);
}

enum { MAX_KEY_POINTS = 12 };

/* An input's value in engineering units for the key: a size with the
 * largest binary prefix that keeps it whole or above 1 ("262144 KiB" ->
 * "256 MiB"), another quantity with an SI prefix ("2039 GB/s" ->
 * "2.039 TB/s"), anything else as the study gives it. */
static void key_value(Buf *b, const char *text) {
  static const char *const BIN[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v;
  const char *unit = parse_any_quantity(text, &v);
  if (!unit || !isfinite(v)) {
    buf_printf(b, "%s", text);
  } else if (strcmp(unit, "B") == 0) {
    int k = 0;
    while (k < 4 && v >= 1024)
      v /= 1024, k++;
    buf_printf(b, "%.4g %s", v, BIN[k]);
  } else {
    fmt_unit(b, v, unit);
  }
}

static int by_x(const void *a, const void *b) {
  const Mark *u = a, *v = b;
  return u->v[0] != v->v[0] ? (u->v[0] < v->v[0] ? -1 : 1)
                            : (u->point > v->point) - (u->point < v->point);
}

/* The key under a panel: each front mark by objective KA (the x axis),
 * with the swept inputs that VARY over the study in engineering units as
 * the study gives them ("256x256, 16 MiB, 2039 GB/s") and both figures,
 * so that every front point can be read off, whatever the labels show. */
static void panel_key(Arena *a, const Study *s, const Mark *m, long n,
                      int ka, int kb, const bool *vary, Chart *c) {
  /* Copies with objective KA first, to sort by it. */
  Mark *fr = arena_alloc(a, ((size_t)n + 1) * sizeof *fr);
  long nf = 0;
  for (long i = 0; i < n; i++)
    if (m[i].front) {
      fr[nf] = m[i];
      fr[nf++].v[0] = m[i].v[ka];
    }
  qsort(fr, (size_t)nf, sizeof *fr, by_x);
  int nc = study_ncells(s);
  Cell *cells = arena_alloc(a, ((size_t)nc + 1) * sizeof *cells);
  long shown = nf < MAX_KEY_POINTS ? nf : MAX_KEY_POINTS;
  const char **lines = arena_alloc(a, ((size_t)shown + 2) * sizeof *lines);
  int nl = 0;
  Buf b = {0};
  study_cells(s, 0, cells);
  buf_printf(&b, "The front by %s: #point (as in points.csv) series",
             figure_objective(s->objectives[ka]));
  for (int i = 0; i < nc; i++)
    if (vary[i] && swept_input(s, i))
      buf_printf(&b, ", %s", cells[i].name);
  buf_printf(&b, " -- %s, %s", figure_objective(s->objectives[ka]),
             figure_objective(s->objectives[kb]));
  lines[nl++] = arena_strdup(a, b.s);
  for (long j = 0; j < shown; j++) {
    buf_free(&b);
    study_cells(s, fr[j].point, cells);
    buf_printf(&b, "#%ld%s %s", fr[j].point, fr[j].tied > 1 ? " (tied)" : "",
               series_name(a, s, fr[j].series));
    const char *sep = ": ";
    for (int i = 0; i < nc; i++)
      if (vary[i] && swept_input(s, i))
        buf_printf(&b, "%s", sep), key_value(&b, cells[i].text), sep = ", ";
    buf_printf(&b, " -- ");
    fig_text(&b, s->objectives[ka], fr[j].v[0]);
    buf_printf(&b, ", ");
    fig_text(&b, s->objectives[kb], fr[j].v[kb]);
    lines[nl++] = arena_strdup(a, b.s);
  }
  buf_free(&b);
  if (nf > shown) {
    buf_printf(&b, "and %ld more on the front (points.csv: pareto=true)",
               nf - shown);
    lines[nl++] = arena_strdup(a, b.s);
    buf_free(&b);
  }
  c->notes = lines, c->nnotes = nl;
}

/* The colour of design-and-stitcher D: its design's (report.h), a tint
 * or a darker shade for the second and third stitchers of one design. */
static const char *series_color(const Study *s, int d) {
  int same = 0;
  for (int j = 0; j < d; j++)
    same += s->ds[j].design == s->ds[d].design;
  return design_color(s->ds[d].design, (Shade)(same % SHADE_COUNT));
}

/* One panel's series: a point series per design, architecture (and
 * cascade) present, objectives A and B as x and y, then the front's
 * rings. Returns how many. */
static int panel_series(Arena *a, const Study *s, const Mark *m, long n,
                        int ka, int kb, double sx, double sy,
                        ChartSeries **out) {
  int nc = s->ncascades > 1 ? s->ncascades : 1;
  int nslots = s->nds * s->narchs * nc;
  long *count = arena_alloc(a, ((size_t)nslots + 1) * sizeof *count);
  long nfront = 0;
  for (long i = 0; i < n; i++)
    count[m[i].series]++, nfront += m[i].front;
  ChartSeries *cs = arena_alloc(a, ((size_t)nslots + 2) * sizeof *cs);
  int ns = 0;
  for (int k = 0; k < nslots; k++) {
    if (!count[k])
      continue;
    ChartSeries *c = &cs[ns++];
    double *x = arena_alloc(a, (size_t)count[k] * sizeof *x);
    double *y = arena_alloc(a, (size_t)count[k] * sizeof *y);
    const char **lab = arena_alloc(a, (size_t)count[k] * sizeof *lab);
    int d = k / nc / s->narchs, arch = k / nc % s->narchs;
    *c = (ChartSeries){.name = series_name(a, s, k), .x = x, .y = y,
                       .labels = lab, .color = series_color(s, d),
                       .marker = 1 + (arch * nc + k % nc) % PARETO_MARKERS};
    for (long i = 0; i < n; i++)
      if (m[i].series == k) {
        x[c->n] = m[i].v[ka] / sx, y[c->n] = m[i].v[kb] / sy;
        lab[c->n++] = m[i].front && nfront <= MAX_FRONT_LABELS
                          ? mark_label(a, &m[i])
                          : NULL;
      }
  }
  double *fx = arena_alloc(a, ((size_t)nfront + 1) * sizeof *fx);
  double *fy = arena_alloc(a, ((size_t)nfront + 1) * sizeof *fy);
  ChartSeries *ring = &cs[ns++];
  *ring = (ChartSeries){.name = "Pareto front", .x = fx, .y = fy,
                        .color = "#d62728", .ring = true};
  for (long i = 0; i < n; i++)
    if (m[i].front)
      fx[ring->n] = m[i].v[ka] / sx, fy[ring->n++] = m[i].v[kb] / sy;
  *out = cs;
  return ns;
}

/* The chart of objectives KA and KB over group W's marks. */
static Chart panel_chart(Arena *a, const Study *s, const Mark *m, long n,
                         int ka, int kb, const char *group,
                         const bool *vary) {
  Figure fx = s->objectives[ka], fy = s->objectives[kb];
  const char *xlabel, *ylabel;
  double sx = axis_scale(a, fx, m, n, ka, &xlabel);
  double sy = axis_scale(a, fy, m, n, kb, &ylabel);
  ChartSeries *cs;
  int ns = panel_series(a, s, m, n, ka, kb, sx, sy, &cs);
  long points = 0, marks_front = cs[ns - 1].n;
  for (long i = 0; i < n; i++)
    points += m[i].tied;
  Buf b = {0};
  buf_printf(&b, "%ld points in %ld marks (ties merged), %ld on the front%s",
             points, n, marks_front,
             marks_front <= MAX_FRONT_LABELS
                 ? " (labels: point numbers, as in points.csv)"
                 : "");
  const char *sub = arena_strdup(a, b.s);
  buf_free(&b);
  buf_printf(&b, "%s%s%s vs %s", group, group[0] ? ": " : "",
             figure_objective(fy), figure_objective(fx));
  const char *title = arena_strdup(a, b.s);
  buf_free(&b);
  Chart c = {.kind = CHART_SCATTER, .title = title, .subtitle = sub,
             .xlabel = xlabel, .ylabel = ylabel,
             .nseries = ns, .series = cs, .width = 860, .height = 460,
             .logx = spans(m, n, ka), .logy = spans(m, n, kb)};
  panel_key(a, s, m, n, ka, kb, vary, &c);
  if (s->reference && (fx == FIG_AREA || fy == FIG_AREA)) {
    ChartLine *ref = arena_alloc(a, sizeof *ref);
    char label[96];
    snprintf(label, sizeof label, "%s: %.1f mm2", s->reference,
             s->reference_area);
    *ref = (ChartLine){s->reference_area, arena_strdup(a, label)};
    *(fx == FIG_AREA ? &c.nvlines : &c.nhlines) = 1;
    *(fx == FIG_AREA ? &c.vlines : &c.hlines) = ref;
  }
  return c;
}

/* ---- the ski slope ----
 *
 * Where the study sweeps the fusion level's capacity (study.h), each
 * group's DRAM traffic and latency against it, a line per series (design,
 * architecture, cascade): at each capacity the least over the study's
 * other inputs, so that a line is what the design can reach with that
 * much buffer. */

typedef struct Slope {
  int nx;
  double *x;       /* the capacities, bytes, ascending */
  double **y[2];   /* [figure][series][x]: traffic, latency; NAN: none */
} Slope;

static const Figure SLOPE_FIG[2] = {FIG_TRAFFIC, FIG_LATENCY};

static int by_value(const void *a, const void *b) {
  double u = *(const double *)a, v = *(const double *)b;
  return (u > v) - (u < v);
}

static double point_capacity(const Study *s, long p) {
  const Arch *a = point_arch(s, p);
  return a->levels[a->fusion_level].capacity;
}

/* Group W's slope: the capacities its points take, and per series and
 * capacity the least of each figure. */
static void slope_of(Arena *a, const Study *s, const PointResult *res,
                     const int *group_of, int w, int nslots, Slope *sl) {
  sl->x = arena_alloc(a, ((size_t)s->npoints + 1) * sizeof *sl->x);
  sl->nx = 0;
  for (long p = 0; p < s->npoints; p++)
    if (group_of[p] == w && !res[p].error[0])
      sl->x[sl->nx++] = point_capacity(s, p);
  qsort(sl->x, (size_t)sl->nx, sizeof *sl->x, by_value);
  int nx = 0;
  for (int i = 0; i < sl->nx; i++)
    if (nx == 0 || sl->x[i] != sl->x[nx - 1])
      sl->x[nx++] = sl->x[i];
  sl->nx = nx;
  for (int f = 0; f < 2; f++) {
    sl->y[f] = arena_alloc(a, ((size_t)nslots + 1) * sizeof *sl->y[f]);
    for (int k = 0; k < nslots; k++) {
      sl->y[f][k] = arena_alloc(a, ((size_t)nx + 1) * sizeof **sl->y[f]);
      for (int i = 0; i < nx; i++)
        sl->y[f][k][i] = NAN;
    }
  }
  for (long p = 0; p < s->npoints; p++) {
    if (group_of[p] != w || res[p].error[0])
      continue;
    double c = point_capacity(s, p);
    int i = 0;
    while (sl->x[i] != c)
      i++;
    for (int f = 0; f < 2; f++) {
      double v = res[p].fig[SLOPE_FIG[f]], *y = &sl->y[f][series_of(s, p)][i];
      if (isfinite(v) && !(v >= *y))
        *y = v;
    }
  }
}

/* The two panels (traffic, latency) of group W into OUT. */
static void slope_panels(Arena *a, const Study *s, const PointResult *res,
                         const int *group_of, int w, const char *group,
                         int cp, Chart *out) {
  int nc = s->ncascades > 1 ? s->ncascades : 1;
  int nslots = s->nds * s->narchs * nc;
  Slope sl;
  slope_of(a, s, res, group_of, w, nslots, &sl);
  double *mib = arena_alloc(a, ((size_t)sl.nx + 1) * sizeof *mib);
  for (int i = 0; i < sl.nx; i++)
    mib[i] = sl.x[i] / (1024.0 * 1024.0);
  for (int f = 0; f < 2; f++) {
    ChartSeries *cs = arena_alloc(a, ((size_t)nslots + 1) * sizeof *cs);
    int ns = 0;
    double least = INFINITY, most = 0;
    for (int k = 0; k < nslots; k++)
      for (int i = 0; i < sl.nx; i++)
        if (isfinite(sl.y[f][k][i]))
          least = fmin(least, sl.y[f][k][i]),
          most = fmax(most, sl.y[f][k][i]);
    char unit[16];
    double d = eng_prefix(least, f ? "s" : "B", unit, sizeof unit);
    for (int k = 0; k < nslots; k++) {
      bool any = false;
      double *y = arena_alloc(a, ((size_t)sl.nx + 1) * sizeof *y);
      for (int i = 0; i < sl.nx; i++)
        y[i] = sl.y[f][k][i] / d, any = any || isfinite(y[i]);
      if (!any)
        continue;
      int ds = k / nc / s->narchs, other = k % (nc * s->narchs);
      cs[ns++] = (ChartSeries){.name = series_name(a, s, k), .n = sl.nx,
                               .x = mib, .y = y,
                               .color = series_color(s, ds),
                               .dashed = other % 2 == 1};
    }
    Buf b = {0};
    buf_printf(&b, "%s%s%s vs the fusion level's capacity", group,
               group[0] ? ": " : "", f ? "latency" : "DRAM traffic");
    const char *title = arena_strdup(a, b.s);
    buf_free(&b);
    buf_printf(&b, "%s (%s)", f ? "latency" : "DRAM traffic", unit);
    const char *ylabel = arena_strdup(a, b.s);
    buf_free(&b);
    buf_printf(&b, "%s (MiB)", s->params[cp].path);
    const char *xlabel = arena_strdup(a, b.s);
    buf_free(&b);
    out[f] = (Chart){.kind = CHART_LINE, .title = title,
                     .subtitle = "the ski slope: at each capacity, the "
                                 "least over the study's other inputs",
                     .xlabel = xlabel, .ylabel = ylabel, .logx = true,
                     .logy = most > 30 * least, .nseries = ns,
                     .series = cs, .width = 860, .height = 400};
  }
}

/* "minimizing latency, area and energy; a panel per pair". */
static void objectives_line(char *out, size_t cap, const Study *s) {
  Buf objs = {0};
  for (int k = 0; k < s->nobjectives; k++)
    buf_printf(&objs, "%s%s", k ? (k + 1 == s->nobjectives ? " and " : ", ")
                                : "",
               figure_objective(s->objectives[k]));
  snprintf(out, cap, "minimizing %s%s", objs.s,
           s->nobjectives > 2 ? "; a panel per pair of objectives" : "");
  buf_free(&objs);
}

void sweep_chart(Buf *b, const Study *s, const PointResult *res,
                 const bool *on, Format fmt) {
  Arena a = {0};
  int *group_of = arena_alloc(&a, ((size_t)s->npoints + 1) * sizeof *group_of);
  char **names;
  int nw = study_groups(s, group_of, &names);
  int npairs = s->nobjectives * (s->nobjectives - 1) / 2;
  int ncells = study_ncells(s);
  Cell *cells = arena_alloc(&a, ((size_t)ncells + 1) * sizeof *cells);
  bool *vary = varying_columns(s, cells, ncells);
  int cp = study_fusion_capacity(s);
  Chart *charts = arena_alloc(&a, ((size_t)(nw * (npairs + 2)) + 1) *
                                      sizeof *charts);
  int n = 0;
  for (int w = 0; w < nw; w++) {
    Mark *m;
    long nm = group_marks(&a, s, res, on, group_of, w, &m);
    for (int ka = 0; ka < s->nobjectives; ka++)
      for (int kb = ka + 1; kb < s->nobjectives; kb++)
        charts[n++] = panel_chart(&a, s, m, nm, ka, kb, names[w], vary);
  }
  for (int w = 0; cp >= 0 && w < nw; w++, n += 2)
    slope_panels(&a, s, res, group_of, w, names[w], cp, &charts[n]);
  char title[256], sub[256];
  snprintf(title, sizeof title, "%s: the Pareto front%s", s->name,
           cp >= 0 ? " and the ski slope" : "");
  objectives_line(sub, sizeof sub, s);
  if (n == 1) {
    char both[600];
    snprintf(both, sizeof both, "%s -- %s", charts[0].subtitle, sub);
    charts[0].title = title;
    charts[0].subtitle = both;
    chart_render(b, &charts[0], fmt);
  } else {
    stack_render(b, title, sub, n, charts, fmt);
  }
  for (int w = 0; w < nw; w++)
    free(names[w]);
  free(names);
  free(vary);
  arena_free(&a);
}

/* ---- the terminal ---- */

void sweep_text(Buf *b, const Study *s, const PointResult *res,
                const bool *on) {
  long priced = 0;
  for (long p = 0; p < s->npoints; p++)
    priced += !res[p].error[0];
  buf_printf(b, "study %s: %ld points (%ld priced, %ld failed)\n", s->name,
             s->npoints, priced, s->npoints - priced);
  Cell *cells = xcalloc((size_t)study_ncells(s), sizeof *cells);
  int nc = study_cells(s, 0, cells);
  bool *vary = varying_columns(s, cells, nc);
  buf_printf(b, "the same at every point:");
  study_cells(s, 0, cells);
  for (int i = 0; i < nc; i++)
    if (!vary[i] && cells[i].text[0])
      buf_printf(b, " %s=%s", cells[i].name, cells[i].text);
  buf_printf(b, "\n");
  int *group_of = xcalloc((size_t)s->npoints + 1, sizeof *group_of);
  char **names;
  int ng = study_groups(s, group_of, &names);
  for (int g = 0; g < ng; g++) {
    long nf = 0;
    for (long p = 0; p < s->npoints; p++)
      nf += group_of[p] == g && on[p];
    buf_printf(b, "\n%s: %ld on the Pareto front of", names[g], nf);
    for (int k = 0; k < s->nobjectives; k++)
      buf_printf(b, "%s %s", k ? "," : "", figure_objective(s->objectives[k]));
    buf_printf(b, "\n  %-7s", "point");
    for (int k = 0; k < s->nobjectives; k++)
      buf_printf(b, " %13s", figure_column(s->objectives[k]));
    buf_printf(b, "  inputs\n");
    for (long p = 0; p < s->npoints; p++) {
      if (group_of[p] != g || !on[p])
        continue;
      buf_printf(b, "  %-7ld", p);
      for (int k = 0; k < s->nobjectives; k++)
        buf_printf(b, " %13.5g", res[p].fig[s->objectives[k]]);
      int n = study_cells(s, p, cells);
      buf_printf(b, " ");
      for (int i = 0; i < n; i++)
        if (vary[i] && strcmp(cells[i].name, "workload") && cells[i].text[0])
          buf_printf(b, " %s=%s", cells[i].name, cells[i].text);
      buf_printf(b, "\n");
    }
    free(names[g]);
  }
  free(names);
  free(group_of);
  free(vary);
  free(cells);
}

/* ---- writing them ---- */

/* The files S read: the study itself, the specs and architectures it
 * names that are not shipped, and what their templates included. The
 * caller frees the array. */
static const char **study_files(const Study *s, int *n) {
  int nread = inputset_count(&s->read);
  const char **f =
      xcalloc((size_t)(1 + s->ncascades + s->narchs + nread), sizeof *f);
  *n = 0;
  for (int i = 0; i < nread; i++)
    f[(*n)++] = inputset_path(&s->read, i);
  f[(*n)++] = s->path;
  for (int i = 0; i < s->ncascades; i++)
    if (!s->cascades[i].src.shipped)
      f[(*n)++] = s->cascades[i].src.path;
  for (int i = 0; i < s->narchs; i++)
    if (!s->archs[i].src.shipped)
      f[(*n)++] = s->archs[i].src.path;
  return f;
}

enum { MAX_OUTPUTS = 2 + FMT_COUNT };

/* ---- every output's text ---- */

/* What sweep_render's two threads each make, under fatal_catch (util.h:
 * memory running out on either ends the command once both have
 * stopped). */
typedef struct Render {
  const Study *s;
  const PointResult *res;
  const bool *on;
  unsigned formats;
  Buf *csv, *json, *charts;
  FatalRecord failure;
} Render;

static void render_json(void *arg) {
  Render *r = arg;
  json_t *j = sweep_json(r->s, r->res, r->on);
  report_json(r->json, j);
  json_decref(j);
}

static void render_rest(void *arg) {
  Render *r = arg;
  sweep_csv(r->csv, r->s, r->res, r->on);
  for (int f = 0; f < FMT_COUNT; f++)
    if (r->formats & 1u << f)
      sweep_chart(&r->charts[f], r->s, r->res, r->on, (Format)f);
}

static void *json_thread(void *arg) {
  Render *r = arg;
  fatal_catch(&r->failure, render_json, r);
  return NULL;
}

void sweep_render(const Study *s, const PointResult *res, const bool *on,
                  unsigned formats, Buf *csv, Buf *json, Buf *charts) {
  Render r = {s, res, on, formats, csv, json, charts, {0}};
  pthread_t t;
  bool apart = pthread_create(&t, NULL, json_thread, &r) == 0;
  if (!apart)
    fatal_catch(&r.failure, render_json, &r);
  fatal_catch(&r.failure, render_rest, &r);
  if (apart)
    pthread_join(t, NULL);
  fatal_rethrow(&r.failure);
}

/* The outputs' file names, in the order sweep_write puts them:
 * points.csv, sweep.json, then pareto.FORMAT for each of FORMATS (into
 * FMT, the format of each, -1 for the first two). Returns how many. */
static int output_names(unsigned formats, char names[][16], int *fmt) {
  int n = 0;
  snprintf(names[n], 16, "points.csv");
  fmt[n++] = -1;
  snprintf(names[n], 16, "sweep.json");
  fmt[n++] = -1;
  for (int f = 0; f < FMT_COUNT; f++)
    if (formats & 1u << f) {
      snprintf(names[n], 16, "pareto.%s", format_name((Format)f));
      fmt[n++] = f;
    }
  return n;
}

bool sweep_output_check(const Study *s, const char *dir, unsigned formats,
                        Diag *d) {
  if (!dir[0] || strlen(dir) + sizeof "/sweep.json" > PATH_MAX) {
    diag_error(d, s->path, (Loc){0, 0}, "the output directory (--out) %s",
               dir[0] ? "is too long: a file in it would pass the system's "
                        "limit on a path"
                      : "is empty: name a directory");
    return false;
  }
  if (!output_dir_check(dir, d))
    return false;
  int nin;
  const char **in = study_files(s, &nin);
  char names[MAX_OUTPUTS][16], path[PATH_MAX + 32];
  int fmt[MAX_OUTPUTS], nout = output_names(formats, names, fmt);
  bool ok = true;
  for (int k = 0; ok && k < nout; k++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    for (int i = 0; ok && i < nin; i++)
      if (same_file(path, in[i])) {
        diag_error(d, s->path, (Loc){0, 0}, "refusing to write %s: it is "
                   "the input %s", path, in[i]);
        ok = false;
      }
  }
  free(in);
  return ok;
}

bool sweep_write(const Study *s, const char *dir, const Buf *csv,
                 const Buf *json, const Buf *charts, unsigned formats,
                 bool *refused, Diag *d) {
  OutSet *set = outset_new(dir);
  int nin;
  const char **in = study_files(s, &nin);
  for (int i = 0; i < nin; i++)
    outset_protect(set, in[i]);
  free(in);
  char names[MAX_OUTPUTS][16];
  int fmt[MAX_OUTPUTS], nout = output_names(formats, names, fmt);
  bool ok = true;
  for (int k = 0; ok && k < nout; k++) {
    const Buf *b = fmt[k] >= 0 ? &charts[fmt[k]] : k ? json : csv;
    ok = outset_put(set, names[k], b->s ? b->s : "", b->len, d);
  }
  *refused = false;
  ok = ok && outset_commit(set, refused, d);
  outset_free(set);
  return ok;
}
