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
    for (int f = 0; f < FIG_COUNT; f++) {
      buf_printf(b, ",");
      csv_number(b, res[p].fig[f]);
    }
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

/* ---- the chart ---- */

static const char *axis_label(Figure f) {
  switch (f) {
  case FIG_LATENCY:
    return "latency (s)";
  case FIG_ENERGY:
    return "energy (J)";
  case FIG_EDP:
    return "energy-delay product (J s)";
  case FIG_AREA:
    return "area (mm2)";
  case FIG_TRAFFIC:
    return "DRAM traffic (bytes)";
  default:
    return figure_column(f);
  }
}

/* A log axis when the values of the NS series span more than a factor of
 * 30. */
static bool spans(double *const *v, const long *n, int ns) {
  double lo = INFINITY, hi = 0;
  for (int k = 0; k < ns; k++)
    for (long i = 0; i < n[k]; i++)
      if (v[k][i] > 0) {
        lo = fmin(lo, v[k][i]);
        hi = fmax(hi, v[k][i]);
      }
  return hi > 30 * lo;
}

/* One panel: the points by series -- the front's last, the others before
 * it, by cascade when the study has several (a model comparison), else
 * in one grey series. */
typedef struct Panel {
  int ns;
  double **x, **y;
  const char **labels; /* the front's */
  long *n;
  ChartSeries *series;
  ChartLine ref;
  char sub[160], ref_label[96];
} Panel;

void sweep_chart(Buf *b, const Study *s, const PointResult *res,
                 const bool *on, Format fmt) {
  Figure fx = s->objectives[0], fy = s->objectives[1];
  int *group_of = xcalloc((size_t)s->npoints + 1, sizeof *group_of);
  char **names;
  int nw = study_groups(s, group_of, &names);
  Panel *pan = xcalloc((size_t)nw, sizeof *pan);
  Chart *charts = xcalloc((size_t)nw, sizeof *charts);
  long per = s->npoints;
  char *labels = xcalloc((size_t)s->npoints + 1, 48);
  bool by_spec = s->ncascades > 1;
  int ns = (by_spec ? s->ncascades : 1) + 1, front = ns - 1;
  for (int w = 0; w < nw; w++) {
    Panel *p = &pan[w];
    p->ns = ns;
    p->x = xcalloc((size_t)ns, sizeof *p->x);
    p->y = xcalloc((size_t)ns, sizeof *p->y);
    p->n = xcalloc((size_t)ns, sizeof *p->n);
    p->series = xcalloc((size_t)ns, sizeof *p->series);
    for (int k = 0; k < ns; k++) {
      p->x[k] = xcalloc((size_t)per + 1, sizeof(double));
      p->y[k] = xcalloc((size_t)per + 1, sizeof(double));
    }
    p->labels = xcalloc((size_t)per + 1, sizeof *p->labels);
    long nfront = 0;
    for (long i = 0; i < s->npoints; i++)
      nfront += group_of[i] == w && on[i];
    for (long i = 0; i < s->npoints; i++) {
      if (group_of[i] != w || res[i].error[0] || !isfinite(res[i].fig[fx]) ||
          !isfinite(res[i].fig[fy]))
        continue;
      long at[DIM_COUNT];
      study_point(s, i, at);
      int k = on[i] ? front
                    : by_spec ? s->cms[at[DIM_CASCADE]].cascade : 0;
      p->x[k][p->n[k]] = res[i].fig[fx];
      p->y[k][p->n[k]] = res[i].fig[fy];
      if (k == front) {
        char *l = labels + 48 * i;
        snprintf(l, 48, "#%ld %s", i,
                 study_design_name(s->ds[at[DIM_DESIGN]].design));
        p->labels[p->n[k]] = nfront <= 6 ? l : NULL;
      }
      p->n[k]++;
    }
    for (int k = 0; k < front; k++)
      p->series[k] = (ChartSeries){
          .name = by_spec ? s->cascades[k].spec : "other points",
          .n = (int)p->n[k], .x = p->x[k], .y = p->y[k],
          .color = by_spec ? NULL : "#b0b0b0"};
    p->series[front] = (ChartSeries){.name = "Pareto front",
                                     .n = (int)p->n[front], .x = p->x[front],
                                     .y = p->y[front], .labels = p->labels,
                                     .color = "#d62728"};
    long all = 0;
    for (int k = 0; k < ns; k++)
      all += p->n[k];
    snprintf(p->sub, sizeof p->sub, "%ld points, %ld on the front%s", all,
             p->n[front],
             nfront <= 6 ? " (labels: point numbers, as in points.csv)" : "");
    Chart *c = &charts[w];
    *c = (Chart){.kind = CHART_SCATTER, .title = names[w],
                 .subtitle = p->sub, .xlabel = axis_label(fx),
                 .ylabel = axis_label(fy), .nseries = ns,
                 .series = p->series, .width = 760, .height = 440};
    c->logx = spans(p->x, p->n, ns);
    c->logy = spans(p->y, p->n, ns);
    if (s->reference && (fx == FIG_AREA || fy == FIG_AREA)) {
      snprintf(p->ref_label, sizeof p->ref_label, "%s: %.1f mm2",
               s->reference, s->reference_area);
      p->ref = (ChartLine){s->reference_area, p->ref_label};
      *(fx == FIG_AREA ? &c->nvlines : &c->nhlines) = 1;
      *(fx == FIG_AREA ? &c->vlines : &c->hlines) = &p->ref;
    }
  }
  char title[256], sub[256];
  snprintf(title, sizeof title, "%s: the Pareto front", s->name);
  Buf objs = {0};
  for (int k = 0; k < s->nobjectives; k++)
    buf_printf(&objs, "%s%s", k ? (k + 1 == s->nobjectives ? " and " : ", ")
                                : "",
               figure_objective(s->objectives[k]));
  snprintf(sub, sizeof sub, "minimizing %s%s", objs.s,
           s->nobjectives > 2 ? "; drawn over the first two" : "");
  buf_free(&objs);
  if (nw == 1) {
    char both[600];
    snprintf(both, sizeof both, "%s -- %s", charts[0].subtitle, sub);
    charts[0].title = title;
    charts[0].subtitle = both;
    chart_render(b, &charts[0], fmt);
  } else {
    stack_render(b, title, sub, nw, charts, fmt);
  }
  for (int w = 0; w < nw; w++) {
    for (int k = 0; k < pan[w].ns; k++) {
      free(pan[w].x[k]);
      free(pan[w].y[k]);
    }
    free(pan[w].x);
    free(pan[w].y);
    free(pan[w].n);
    free(pan[w].series);
    free(pan[w].labels);
    free(names[w]);
  }
  free(names);
  free(group_of);
  free(labels);
  free(pan);
  free(charts);
}

/* ---- the terminal ---- */

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

/* The files S read: the study itself and the specs and architectures it
 * names that are not shipped. The caller frees the array. */
static const char **study_files(const Study *s, int *n) {
  const char **f =
      xcalloc((size_t)(1 + s->ncascades + s->narchs), sizeof *f);
  *n = 0;
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
