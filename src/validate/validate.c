/* validate.c — every operator of every row priced on its GPU's file and
 * compared with its measured time. An operator is one CUDA kernel (or
 * one PyTorch op), so its Einsums are priced as one group: the fully
 * fused plan of its cascade, one kernel's fixed cost, plus the waits of
 * the kernel that runs it (vidur_op_kernel). */
#include "validate.h"

#include "../fusion/fusion.h"
#include "../workload/workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The predicted milliseconds of operator OP of ROW on A, or NAN with D
 * set. */
static double price_op(VidurOp op, const VidurRow *row, const Arch *a,
                       Diag *d) {
  Buf spec = {0};
  vidur_op_spec(op, row, &spec);
  char name[64];
  snprintf(name, sizeof name, "<%s>", vidur_op_name(op));
  double ms = NAN;
  Cascade *c = spec_parse(name, spec.s, spec.len, d);
  Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, d) : NULL;
  if (s) {
    Pair *pairs = fusion_classify(c, s);
    ModelOpts o = model_default_opts(DES_FULL);
    Eval *ev = model_eval(c, s, a, pairs, DES_FULL, &o, d);
    GpuKernel k = vidur_op_kernel(op, row);
    if (ev) /* the model's price, and the waits of the kernel that runs it */
      ms = (ev->seconds + gpu_wait_seconds(a, &k)) * 1e3;
    eval_free(ev);
    free(pairs);
  }
  shape_free(s);
  cascade_free(c);
  buf_free(&spec);
  return ms;
}

Validation *validate_run(const VidurSet *set, Arch *const *arch, int tp,
                         Diag *d) {
  Validation *v = xcalloc(1, sizeof *v);
  int cap = 0;
  for (int i = 0; i < set->n; i++) {
    const VidurFile *f = &set->files[i];
    for (int j = 0; j < f->nrows; j++) {
      const VidurRow *row = &f->rows[j];
      if (tp && row->tp != tp)
        continue;
      for (int k = 0; k < VOP_COUNT; k++) {
        if (isnan(row->measured_ms[k]))
          continue;
        double p = price_op((VidurOp)k, row, arch[i], d);
        if (isnan(p)) {
          validation_free(v);
          return NULL;
        }
        double m = row->measured_ms[k];
        ValRecord r = {i, j, (VidurOp)k, row->tokens, row->tp, p, m,
                       m > 0 ? p / m - 1 : NAN};
        VEC_PUSH(v->rec, v->n, cap, r);
      }
    }
  }
  return v;
}

void validation_free(Validation *v) {
  if (!v)
    return;
  free(v->rec);
  free(v);
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static bool keeps(const ValFilter *f, const VidurSet *set,
                  const ValRecord *r) {
  const VidurFile *file = &set->files[r->file];
  return (f->file < 0 || f->file == r->file) &&
         (f->op < 0 || f->op == (int)r->op) &&
         (!f->gpu || strcmp(f->gpu, file->gpu) == 0) &&
         (f->held < 0 || f->held == !vidur_tuning_model(file->model)) &&
         !isnan(r->error);
}

ValStats validate_stats(const Validation *v, const VidurSet *set,
                        ValFilter f) {
  double *e = xcalloc((size_t)v->n + 1, sizeof *e);
  int n = 0;
  for (int i = 0; i < v->n; i++)
    if (keeps(&f, set, &v->rec[i]))
      e[n++] = fabs(v->rec[i].error);
  ValStats st = {n, NAN, NAN};
  if (n) {
    qsort(e, (size_t)n, sizeof *e, by_value);
    st.median = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
    st.p90 = e[(int)ceil(0.9 * n) - 1];
  }
  free(e);
  return st;
}
