/* output.c — what `validate` prints: every row's error, the statistics
 * per file and operator, per GPU (the models the fitted fields were
 * fitted on apart from the held-out ones), the worst rows; the same as
 * JSON and CSV; and the predicted-against-measured figure. */
#include "validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *set_name(const VidurFile *f) {
  return vidur_tuning_model(f->model) ? "tuning" : "held out";
}

static void stats_cell(Buf *b, ValStats st) {
  if (st.n)
    buf_printf(b, " %6.1f %6.1f %4d", 100 * st.median, 100 * st.p90, st.n);
  else
    buf_printf(b, " %6s %6s %4d", "-", "-", 0);
}

static void rows_text(Buf *b, const Validation *v, const VidurSet *set) {
  buf_printf(b, "%-5s %-34s %-25s %6s %3s %12s %12s %8s\n", "gpu", "model",
             "operator", "tokens", "tp", "predicted_ms", "measured_ms",
             "error_%");
  for (int i = 0; i < v->n; i++) {
    const ValRecord *r = &v->rec[i];
    const VidurFile *f = &set->files[r->file];
    buf_printf(b, "%-5s %-34s %-25s %6d %3d %12.4f %12.4f %+8.1f\n", f->gpu,
               f->model, vidur_op_name(r->op), r->tokens, r->tp,
               r->predicted_ms, r->measured_ms, 100 * r->error);
  }
}

/* Per file: each operator's median and p90 |error| and the file's. */
static void files_text(Buf *b, const Validation *v, const VidurSet *set) {
  buf_printf(b, "\n|error| per file and operator: median %%, 90th "
                "percentile %%, rows\n");
  for (int i = 0; i < set->n; i++) {
    const VidurFile *f = &set->files[i];
    buf_printf(b, "\n%s %s (%s, %s)\n", f->gpu, f->model, set_name(f),
               f->path);
    for (int k = -1; k < VOP_COUNT; k++) {
      ValStats st = validate_stats(v, set, (ValFilter){i, k, -1, NULL});
      if (k >= 0 && st.n == 0)
        continue;
      buf_printf(b, "  %-25s", k < 0 ? "all operators" : vidur_op_name(k));
      stats_cell(b, st);
      buf_printf(b, "\n");
    }
  }
}

/* Per GPU: the tuning models' and the held-out ones' |error|, overall
 * and per operator. */
static void gpus_text(Buf *b, const Validation *v, const VidurSet *set,
                      Arch *const *arch) {
  buf_printf(b, "\n|error| per GPU: tuning models | held-out models "
                "(median %%, p90 %%, rows)\n");
  for (int i = 0; i < set->n; i++) {
    bool first = true;
    for (int j = 0; j < i; j++)
      first = first && strcmp(set->files[j].gpu, set->files[i].gpu) != 0;
    if (!first)
      continue;
    const char *gpu = set->files[i].gpu;
    buf_printf(b, "\n%s on %s (%s)\n", gpu, arch[i]->name, arch[i]->path);
    for (int k = -1; k < VOP_COUNT; k++) {
      ValStats t = validate_stats(v, set, (ValFilter){-1, k, 0, gpu});
      ValStats h = validate_stats(v, set, (ValFilter){-1, k, 1, gpu});
      if (k >= 0 && t.n + h.n == 0)
        continue;
      buf_printf(b, "  %-25s", k < 0 ? "all operators" : vidur_op_name(k));
      stats_cell(b, t);
      buf_printf(b, " |");
      stats_cell(b, h);
      buf_printf(b, "\n");
    }
  }
}

static int by_abs_error(const void *a, const void *b) {
  const ValRecord *x = *(const ValRecord *const *)a;
  const ValRecord *y = *(const ValRecord *const *)b;
  double ex = fabs(x->error), ey = fabs(y->error);
  return (ex < ey) - (ex > ey);
}

/* The WORST rows of largest |error|. */
static void worst_text(Buf *b, const Validation *v, const VidurSet *set,
                       int worst) {
  const ValRecord **p = xcalloc((size_t)v->n + 1, sizeof *p);
  for (int i = 0; i < v->n; i++)
    p[i] = &v->rec[i];
  qsort(p, (size_t)v->n, sizeof *p, by_abs_error);
  int n = worst < v->n ? worst : v->n;
  buf_printf(b, "\nworst %d rows\n", n);
  for (int i = 0; i < n; i++) {
    const VidurFile *f = &set->files[p[i]->file];
    buf_printf(b, "  %-5s %-34s %-25s %6d tokens, tp %d: %.4f ms for %.4f "
                  "measured, %+.1f %%\n",
               f->gpu, f->model, vidur_op_name(p[i]->op), p[i]->tokens,
               p[i]->tp, p[i]->predicted_ms, p[i]->measured_ms,
               100 * p[i]->error);
  }
  free(p);
}

void validate_text(Buf *b, const Validation *v, const VidurSet *set,
                   Arch *const *arch, int worst) {
  rows_text(b, v, set);
  files_text(b, v, set);
  gpus_text(b, v, set, arch);
  worst_text(b, v, set, worst);
  buf_printf(b, "\nnote: the GPU files' fields marked FITTED were fitted on "
                "the tuning models' files (Llama-2-7B, Llama-3-8B); the "
                "other models are held out (docs/validation.md)\n");
}

void validate_csv(Buf *b, const Validation *v, const VidurSet *set) {
  buf_printf(b, "gpu,model,operator,tokens,tp,predicted_ms,measured_ms,"
                "error\n");
  for (int i = 0; i < v->n; i++) {
    const ValRecord *r = &v->rec[i];
    const VidurFile *f = &set->files[r->file];
    csv_field(b, f->gpu);
    buf_printf(b, ",");
    csv_field(b, f->model);
    buf_printf(b, ",%s,%d,%d", vidur_op_name(r->op), r->tokens, r->tp);
    csv_numbers(b, (const double[]){r->predicted_ms, r->measured_ms, r->error},
                3);
    buf_printf(b, "\n");
  }
}

/* {"rows", "median", "p90"}; null statistics over no row. */
static json_t *stats_json(ValStats st) {
  json_t *o = json_object();
  json_object_set_new(o, "rows", json_integer(st.n));
  json_object_set_new(o, "median", st.n ? report_real(st.median) : json_null());
  json_object_set_new(o, "p90", st.n ? report_real(st.p90) : json_null());
  return o;
}

/* {"file", "gpu", "model", "set", "operators": {OP: stats}, "all"}. */
static json_t *file_json(const Validation *v, const VidurSet *set, int i) {
  const VidurFile *f = &set->files[i];
  json_t *o = json_object(), *ops = json_object();
  json_object_set_new(o, "file", json_string(f->path));
  json_object_set_new(o, "gpu", json_string(f->gpu));
  json_object_set_new(o, "model", json_string(f->model));
  json_object_set_new(o, "set", json_string(set_name(f)));
  for (int k = 0; k < VOP_COUNT; k++) {
    ValStats st = validate_stats(v, set, (ValFilter){i, k, -1, NULL});
    if (st.n)
      json_object_set_new(ops, vidur_op_name(k), stats_json(st));
  }
  json_object_set_new(o, "operators", ops);
  json_object_set_new(o, "all", stats_json(validate_stats(
                                      v, set, (ValFilter){i, -1, -1, NULL})));
  return o;
}

json_t *validate_json(const Validation *v, const VidurSet *set,
                      Arch *const *arch) {
  json_t *root = json_object(), *recs = json_array(), *files = json_array();
  json_t *gpus = json_object();
  for (int i = 0; i < v->n; i++) {
    const ValRecord *r = &v->rec[i];
    const VidurFile *f = &set->files[r->file];
    json_t *o = json_object();
    json_object_set_new(o, "gpu", json_string(f->gpu));
    json_object_set_new(o, "model", json_string(f->model));
    json_object_set_new(o, "operator", json_string(vidur_op_name(r->op)));
    json_object_set_new(o, "tokens", json_integer(r->tokens));
    json_object_set_new(o, "tp", json_integer(r->tp));
    REPORT_REALS(o, {"predicted_ms", r->predicted_ms},
                 {"measured_ms", r->measured_ms}, {"error", r->error});
    json_array_append_new(recs, o);
  }
  for (int i = 0; i < set->n; i++) {
    json_array_append_new(files, file_json(v, set, i));
    const char *gpu = set->files[i].gpu;
    if (json_object_get(gpus, gpu))
      continue;
    json_t *g = json_object();
    json_object_set_new(g, "architecture", json_string(arch[i]->name));
    json_object_set_new(g, "tuning", stats_json(validate_stats(
                                         v, set, (ValFilter){-1, -1, 0, gpu})));
    json_object_set_new(g, "held_out",
                        stats_json(validate_stats(
                            v, set, (ValFilter){-1, -1, 1, gpu})));
    json_object_set_new(gpus, gpu, g);
  }
  json_object_set_new(root, "records", recs);
  json_object_set_new(root, "files", files);
  json_object_set_new(root, "gpus", gpus);
  return root;
}

/* A colour per operator, the palette's (report.h, palette_color), so
 * that no two share one. */
_Static_assert((int)VOP_COUNT <= (int)PALETTE_COLORS, "a colour per operator");

void validate_chart(Buf *b, const Validation *v, Format f) {
  ChartSeries s[VOP_COUNT + 1];
  double *x[VOP_COUNT], *y[VOP_COUNT];
  double lo = INFINITY, hi = 0;
  int ns = 0;
  for (int k = 0; k < VOP_COUNT; k++) {
    x[k] = xcalloc((size_t)v->n + 1, sizeof *x[k]);
    y[k] = xcalloc((size_t)v->n + 1, sizeof *y[k]);
    int n = 0;
    for (int i = 0; i < v->n; i++)
      if (v->rec[i].op == (VidurOp)k && v->rec[i].measured_ms > 0 &&
          v->rec[i].predicted_ms > 0) {
        x[k][n] = v->rec[i].measured_ms;
        y[k][n++] = v->rec[i].predicted_ms;
        lo = fmin(lo, fmin(x[k][n - 1], y[k][n - 1]));
        hi = fmax(hi, fmax(x[k][n - 1], y[k][n - 1]));
      }
    if (n)
      s[ns++] = (ChartSeries){.name = vidur_op_name(k), .n = n, .x = x[k],
                              .y = y[k], .marker = 1,
                              .color = palette_color(k)};
  }
  double diag[2] = {isfinite(lo) ? lo : 1e-3, hi > 0 ? hi : 1};
  s[ns++] = (ChartSeries){.name = "y = x", .n = 2, .x = diag, .y = diag,
                          .line = true, .dashed = true, .color = "#555555"};
  Chart c = {.kind = CHART_SCATTER,
             .title = "Predicted against measured kernel time (Vidur)",
             .subtitle = "one point per operator and CSV row",
             .xlabel = "measured (ms)",
             .ylabel = "predicted (ms)",
             .logx = true,
             .logy = true,
             .nseries = ns,
             .series = s,
             .width = 760,
             .height = 560};
  chart_render(b, &c, f);
  for (int k = 0; k < VOP_COUNT; k++) {
    free(x[k]);
    free(y[k]);
  }
}
