/* exec.c — the entry points: run a cascade with the interpreter (run.c) or
 * the fused executor (fused.c), then hand over its results and the state a
 * next pass continues from; once (exec_run), or again and again on new
 * inputs of the same shapes (Exec: the schedule and the compiled jobs are
 * kept, so a decode step only binds its inputs and runs). */
#include "run.h"

#include <stdlib.h>
#include <string.h>

/* A copy of T's array without the steps in front of its initialized rank. */
static Array *without_front(const Run *r, int t) {
  const Array *a = r->arrays[t];
  int cond = r->c->tensors[t].init->out.cond_dim;
  int64_t shape[IR_MAX_RANKS];
  tensor_shape(r, t, shape);
  Array *b = array_new(a->ndim, shape);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < a->ndim; k++) {
    if (k < cond)
      outer *= shape[k];
    if (k > cond)
      inner *= shape[k];
  }
  int64_t skip = r->front[t] * inner, row = shape[cond] * inner;
  for (int64_t o = 0; o < outer; o++)
    memcpy(b->data + o * row, a->data + o * (row + skip) + skip,
           sizeof(float) * (size_t)row);
  return b;
}

/* Hand the results over: the outputs (every produced tensor with
 * keep_all), then the next pass's state. */
static bool collect(Run *r, Tensors *results, Tensors *next) {
  const Cascade *c = r->c;
  for (int t = 0; next && !r->o->plan && t < c->ntensors; t++)
    if (c->tensors[t].init && r->arrays[t] &&
        !next_state(r, t, next))
      return false;
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (T->producer < 0 || !r->arrays[t] || (!T->output && !r->o->keep_all))
      continue;
    if (r->front[t] > 0) { /* hand over the tensor without its front */
      Array *a = without_front(r, t);
      run_release(r, t);
      tensors_put(results, T->name, a, true);
      continue;
    }
    tensors_put(results, T->name, r->arrays[t], true);
    r->live -= 4.0 * (double)r->arrays[t]->n;
    r->arrays[t] = NULL;
  }
  return true;
}

struct Exec {
  ExecOpts o;
  Run r;
  double peak; /* of the last run */
};

Exec *exec_new(const Cascade *c, const Shape *s, const ExecOpts *o,
               Diag *d) {
  if (!s->complete) {
    diag_error(d, c->path, (Loc){0, 0},
               "every rank needs a size to run the cascade");
    return NULL;
  }
  Exec *x = xcalloc(1, sizeof *x);
  x->o = *o;
  run_init(&x->r, c, s, &x->o, d);
  return x;
}

bool exec_step(Exec *x, const Tensors *inputs, Tensors *results,
               Tensors *next, ExecStats *stats, Diag *d) {
  Run *r = &x->r;
  const Cascade *c = r->c;
  r->d = d;
  r->st = stats;
  r->fault = 0;
  r->live = r->peak = 0;
  if (stats) {
    memset(stats, 0, sizeof *stats);
    /* Both tables in one block, at read (exec_stats_free). */
    size_t nt = (size_t)c->ntensors + 1;
    stats->read = xcalloc(2 * nt, sizeof(double));
    stats->write = stats->read + nt;
  }
  bool ok = bind_inputs(r, inputs);
  if (ok)
    ok = x->o.plan ? run_fused(r, next) : run_interpret(r);
  /* The next pass's decode state, written by the pass: the steps it adds
   * (fusion.h's rule, the model's too). */
  for (int t = 0; ok && stats && x->o.plan && t < c->ntensors; t++) {
    double n = 4 * state_write_elems(r->s, t);
    if (n > 0) {
      stats->write[c->tensors[t].init->rhs->acc->tensor] += n;
      stats->write_total += n;
    }
  }
  if (ok)
    ok = collect(r, results, next);
  run_reset(r);
  x->peak = r->peak;
  if (stats)
    stats->peak_bytes = r->peak;
  return ok;
}

double exec_peak_bytes(const Exec *x) { return x->peak; }

void exec_recycle(Exec *x, Array *a) {
  if (x)
    run_drop(&x->r, a);
  else
    array_free(a);
}

void exec_free(Exec *x) {
  if (!x)
    return;
  fused_forget(&x->r);
  run_done(&x->r);
  free(x);
}

bool exec_run(const Cascade *c, const Shape *s, const Tensors *inputs,
              const ExecOpts *o, Tensors *results, Tensors *next,
              ExecStats *stats, Diag *d) {
  Exec *x = exec_new(c, s, o, d);
  bool ok = x && exec_step(x, inputs, results, next, stats, d);
  exec_free(x);
  return ok;
}

double exec_bytes(const Cascade *c, const Shape *s, const Plan *plan,
                  double buffer_bytes) {
  double b = plan ? buffer_bytes : 0;
  for (int t = 0; t < c->ntensors; t++) {
    double n = shape_tensor_elems(s, t);
    if (plan) /* a read and a write map, a bit per element */
      b += n / 4;
    if (c->tensors[t].producer >= 0 && !(plan && plan->onchip[t]))
      b += 4 * n;
  }
  return b;
}

void exec_stats_free(ExecStats *st) {
  if (!st)
    return;
  free(st->read); /* and write, in the same block */
  st->read = st->write = NULL;
}
