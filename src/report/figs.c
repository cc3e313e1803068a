/* figs.c — the plumbing of the evaluation's figures (figs.h): each file
 * staged in the caller's OutSet (the first failure stops the rest), each
 * chart in every format asked for with its rows in figures.csv and its
 * entry in the index, and the words around a figure: its title, the
 * setup in its subtitle, the start of its caption, the paper's values. */
#include "figs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The fusion strategies, in table order, into OUT (DES_COUNT long). */
int figs_strategy_designs(Design *out) {
  int n = 0;
  for (int d = 0; d < DES_COUNT; d++)
    if (design_is_strategy((Design)d))
      out[n++] = (Design)d;
  return n;
}

/* The key of a per-strategy paper target: "speedup.prefill.ri_rsb". */
void figs_strategy_key(char *out, size_t cap, const char *prefix,
                         Design d) {
  int n = snprintf(out, cap, "%s.%s", prefix, design_name(d));
  for (int i = (int)strlen(prefix) + 1; i < n && i < (int)cap; i++)
    if (out[i] == '+')
      out[i] = '_';
}

void figs_put_file(Figs *f, const char *name, const Buf *b) {
  if (f->ok && !outset_put(f->out, name, b->s ? b->s : "", b->len, f->d))
    f->ok = false;
}

static void add_entry(Figs *f, const char *stem, const char *alt,
                      const char *caption) {
  if (!f->ok || f->n == MAX_FIGURES)
    return;
  f->e[f->n++] = (Entry){xstrdup(stem), xstrdup(alt ? alt : stem),
                         xstrdup(caption)};
}

/* One point; a missing value (NaN, or infinite) is no row. */
static void csv_row(Buf *b, const char *fig, const char *series,
                    const char *x, double y) {
  if (!isfinite(y))
    return;
  csv_field(b, fig);
  buf_printf(b, ",");
  csv_field(b, series);
  buf_printf(b, ",");
  csv_field(b, x);
  buf_printf(b, ",%.10g\n", y);
}

void figs_csv_num_row(Buf *b, const char *fig, const char *series, double x,
                        double y) {
  char xs[32];
  if (!isfinite(x))
    return;
  snprintf(xs, sizeof xs, "%.10g", x);
  csv_row(b, fig, series, xs, y);
}

static const char *category_of(const Chart *c, int k, char *tmp,
                               size_t cap) {
  snprintf(tmp, cap, "%d", k + 1);
  return c->categories && k < c->ncategories ? c->categories[k] : tmp;
}

/* Every series of chart C as drawn: bars by category label, the rest by
 * x; marks as "MARKS: SERIES" by category. PANEL names the panel of a
 * stack ("PANEL / SERIES"). */
static void csv_chart(Figs *f, const char *fig, const char *panel,
                      const Chart *c) {
  bool bars = c->kind == CHART_BARS || c->kind == CHART_STACKED_BARS;
  char tmp[16];
  for (int i = 0; i < c->nseries; i++) {
    const ChartSeries *s = &c->series[i];
    Buf name = {0};
    buf_printf(&name, "%s%s%s", panel ? panel : "", panel ? " / " : "",
               s->name);
    for (int k = 0; k < s->n; k++) {
      if (bars)
        csv_row(&f->csv, fig, name.s, category_of(c, k, tmp, sizeof tmp),
                s->y[k]);
      else
        figs_csv_num_row(&f->csv, fig, name.s, s->x ? s->x[k] : k, s->y[k]);
    }
    buf_free(&name);
  }
  for (int i = 0; bars && i < c->nmarks; i++) {
    const ChartMark *m = &c->marks[i];
    Buf name = {0};
    buf_printf(&name, "%s: %s", c->marks_name,
               m->series >= 0 && m->series < c->nseries
                   ? c->series[m->series].name
                   : "");
    csv_row(&f->csv, fig, name.s, category_of(c, m->category, tmp, sizeof tmp),
            m->y);
    buf_free(&name);
  }
}

/* STEM in every format asked for, and its entry in the index. */
static void emit_scene(Figs *f, const char *stem, const Scene *s,
                       const char *alt, const char *caption) {
  for (int k = 0; k < FMT_COUNT && f->ok; k++) {
    if (!(f->formats & 1u << k))
      continue;
    Buf b = {0};
    scene_render(&b, s, (Format)k);
    char file[96];
    snprintf(file, sizeof file, "%s.%s", stem, format_name((Format)k));
    figs_put_file(f, file, &b);
    buf_free(&b);
  }
  add_entry(f, stem, alt, caption);
}

/* A chart whose data the caller writes to the CSV itself. */
void figs_emit_figure(Figs *f, const char *stem, const Chart *c,
                        const char *caption) {
  if (!f->ok)
    return;
  Scene s = {0};
  chart_scene(&s, c);
  emit_scene(f, stem, &s, c->title, caption);
  scene_free(&s);
}

void figs_emit_chart(Figs *f, const char *stem, const Chart *c,
                       const char *caption) {
  figs_emit_figure(f, stem, c, caption);
  csv_chart(f, stem, NULL, c);
}

void figs_emit_stack(Figs *f, const char *stem, const char *title,
                       const char *subtitle, int n, const Chart *charts,
                       const char *const *panels, const char *caption) {
  if (!f->ok)
    return;
  Scene s = {0};
  stack_scene(&s, title, subtitle, n, charts);
  emit_scene(f, stem, &s, title, caption);
  scene_free(&s);
  for (int i = 0; i < n; i++)
    csv_chart(f, stem, panels[i], &charts[i]);
}

/* ---- numbers and words ---- */

/* The paper's value of target KEY, or NaN when there is none (the setup
 * is not the paper's, or the paper gives none). */
double figs_paper_value(const Repro *r, const char *key) {
  const Target *t = repro_target(r, key);
  return t ? t->paper : NAN;
}

double figs_ours_value(const Repro *r, const char *key) {
  const Target *t = repro_target(r, key);
  return t ? t->ours : NAN;
}

/* " (paper: 5.79x)", or nothing when the paper gives no value. */
void figs_paper_note(Buf *b, const Repro *r, const char *key) {
  double p = figs_paper_value(r, key);
  if (isfinite(p))
    buf_printf(b, " (paper: %.3gx)", p);
}

void figs_fmt_time(char *out, size_t cap, double seconds) {
  if (seconds >= 1e-3)
    snprintf(out, cap, "%.4g ms", seconds * 1e3);
  else
    snprintf(out, cap, "%.4g µs", seconds * 1e6);
}

/* "114.7 T" ops/s and the like, for titles and captions. */
void figs_fmt_rate(char *out, size_t cap, double v, const char *unit) {
  Buf b = {0};
  fmt_si(&b, v);
  snprintf(out, cap, "%s%s", b.s ? b.s : "0 ", unit);
  buf_free(&b);
}

double figs_safe_div(double a, double b) { return b > 0 ? a / b : NAN; }

/* The fastest of the fusion strategies (BY_DESIGN: latencies indexed by
 * Design): Mambalaya's design for that case. */
Design figs_best_strategy(const double *by_design) {
  Design st[DES_COUNT];
  int n = figs_strategy_designs(st);
  Design best = st[0];
  for (int k = 1; k < n; k++)
    if (by_design[st[k]] < by_design[best])
      best = st[k];
  return best;
}

/* A title: "Fig. 2a: WHAT" where the setup is the paper's (so the figure
 * is the paper's figure FIG), else WHAT with a capital. */
void figs_title_of(char *out, size_t cap, const Figs *f, const char *fig,
                     const char *what) {
  if (f->r->paper_setup) {
    snprintf(out, cap, "Fig. %s: %s", fig, what);
  } else {
    snprintf(out, cap, "%s", what);
    if (out[0] >= 'a' && out[0] <= 'z')
      out[0] = (char)(out[0] - 'a' + 'A');
  }
}

/* The subtitle: the setup of model M, and DETAIL (the phase and the
 * sequence length): "mamba-370m, specs/mamba1.yaml on mambalaya; B=64,
 * prefill I=2048"; without a model, the spec with its sizes. */
void figs_subtitle_of(char *out, size_t cap, const Repro *r, int m,
                        const char *detail) {
  Buf b = {0};
  if (r->model_names[m])
    buf_printf(&b, "%s, ", r->model_names[m]);
  buf_printf(&b, "%s", r->spec_label);
  if (!r->model_names[m] && r->sizes[0]) /* no model's name to imply them */
    buf_printf(&b, " (%s)", r->sizes);
  buf_printf(&b, " on %s; B=%g, %s%s%s", r->arch_label, r->batch, detail,
             r->settings[0] ? ", " : "", r->settings);
  snprintf(out, cap, "%s", b.s);
  buf_free(&b);
}

void figs_phase_detail(char *out, size_t cap, const Repro *r, Phase ph) {
  if (ph == PH_PREFILL)
    snprintf(out, cap, "prefill I=%g", r->prefill);
  else
    snprintf(out, cap, "decode I=1");
}

/* How a caption starts: "Paper Fig. 2a: " for the paper's setup, else
 * which paper figure this one follows, for this setup (the page's header
 * says how the paper's differs). */
void figs_caption_head(Buf *b, const Figs *f, const char *fig) {
  if (f->r->paper_setup)
    buf_printf(b, "Paper Fig. %s: ", fig);
  else
    buf_printf(b, "As paper Fig. %s, for this setup (%s on %s, B=%g, "
                  "I=%g): ",
               fig, repro_workload(f->r, 0), f->r->arch_label, f->r->batch,
               f->r->prefill);
}
