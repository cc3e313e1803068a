/* run.c — what every run of a cascade shares: binding its inputs, arrays
 * with their fronts, recurrences and the schedule, stretches, the
 * interpreter (Einsum by Einsum; recurrences a step at a time), and the
 * state a following pass continues from. The fused executor is in
 * fused.c, the entry point exec_run in exec.c. */
#include "run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *tname(const Cascade *c, int t) { return c->tensors[t].name; }

/* ---- inputs ---- */

void tensor_shape(const Run *r, int t, int64_t *shape) {
  const Tensor *T = &r->c->tensors[t];
  for (int k = 0; k < T->nranks; k++)
    shape[k] = r->s->size[T->ranks[k]];
}

static void shape_text(Buf *b, const int64_t *shape, int n) {
  buf_printf(b, "[");
  for (int k = 0; k < n; k++)
    buf_printf(b, "%s%lld", k ? ", " : "", (long long)shape[k]);
  buf_printf(b, "]");
}

/* INPUTS' array named NAME, looked for first where the last run's was
 * (*AT): a language model binds the same names in the same order for
 * every layer and token, so that one comparison finds each. */
static Array *input_named(const Tensors *inputs, const char *name, int *at) {
  for (int k = 0; k < inputs->n; k++) {
    int i = (*at + k) % inputs->n;
    if (strcmp(inputs->names[i], name) == 0) {
      *at = i;
      return inputs->arrays[i];
    }
  }
  return NULL;
}

bool bind_inputs(Run *r, const Tensors *inputs) {
  const Cascade *c = r->c;
  for (int i = 0; i < r->ninputs; i++) {
    int t = r->inputs[i];
    const Tensor *T = &c->tensors[t];
    Array *a = input_named(inputs, T->name, &r->input_at[t]);
    if (!a) {
      diag_error(r->d, c->path, T->loc, "missing input tensor %s", T->name);
      return false;
    }
    int64_t want[IR_MAX_RANKS];
    tensor_shape(r, t, want);
    bool same = a->ndim == T->nranks;
    for (int k = 0; same && k < T->nranks; k++)
      same = a->shape[k] == want[k];
    if (!same) {
      Buf got = {0}, exp = {0};
      shape_text(&got, a->shape, a->ndim);
      shape_text(&exp, want, T->nranks);
      diag_error(r->d, c->path, T->loc,
                 "input %s has shape %s, but the cascade expects %s", T->name,
                 got.s, exp.s);
      buf_free(&got);
      buf_free(&exp);
      return false;
    }
    r->arrays[t] = a;
    r->borrowed[t] = true;
    r->views[t] = view_of_array(a);
  }
  return true;
}

/* ---- reads before the start ---- */

bool read_offset(const Run *r, const Einsum *e, const Access *a, int k,
                 int64_t *lo, int64_t *hi) {
  const Shape *s = r->s;
  int rank = r->c->tensors[a->tensor].ranks[k];
  int v = var_over(e, rank);
  const Index *ix = &a->idx[k];
  bool found = false;
  double mn = ix->off ? shape_eval(s, ix->off) : 0, mx = mn;
  for (int t = 0; t < ix->nterms; t++) {
    double coef = ix->coef[t] ? shape_eval(s, ix->coef[t]) : 1;
    if (ix->var[t] == v && coef == 1 && !found) {
      found = true;
      continue;
    }
    double ext = (double)s->size[e->vars[ix->var[t]].rank] - 1;
    mn += coef < 0 ? coef * ext : 0;
    mx += coef > 0 ? coef * ext : 0;
  }
  *lo = (int64_t)mn;
  *hi = (int64_t)mx;
  return found && v >= 0;
}

int64_t init_reach(const Run *r, int t) {
  const Cascade *c = r->c;
  const Einsum *ini = c->tensors[t].init;
  if (!ini)
    return 0;
  int64_t reach = 0;
  for (int i = 0; i < c->neinsums; i++)
    for (int k = 0; k < c->einsums[i]->nreads; k++) {
      const Access *a = c->einsums[i]->reads[k];
      int64_t lo, hi;
      if (a->tensor == t &&
          read_offset(r, c->einsums[i], a, ini->out.cond_dim, &lo, &hi) &&
          -lo > reach)
        reach = -lo;
    }
  return reach;
}

void front_region(const Run *r, int t, int64_t steps, const int64_t *lo,
                  const int64_t *hi, Region *reg) {
  const Einsum *ini = r->c->tensors[t].init;
  region_full(r->s, ini, reg);
  for (int k = 0; k < ini->out.n; k++) {
    int v = ini->out.idx[k].var[0];
    reg->lo[v] = k == ini->out.cond_dim ? -steps : lo ? lo[k] : reg->lo[v];
    reg->hi[v] = k == ini->out.cond_dim ? 0 : hi ? hi[k] : reg->hi[v];
  }
}

bool fill_front(Run *r, int t, int64_t steps, const int64_t *lo,
                const int64_t *hi) {
  return fill_front_by(r, &r->init_jobs[t], t, steps, lo, hi);
}

bool fill_front_by(Run *r, VmJob **job, int t, int64_t steps,
                   const int64_t *lo, const int64_t *hi) {
  Region reg;
  front_region(r, t, steps, lo, hi, &reg);
  if (!*job)
    *job = vm_prepare(&r->env, r->c->tensors[t].init);
  return vm_exec(*job, &reg, r->d);
}

/* ---- memory ---- */

/* Arrays are kept when released (a decode step's activations and state,
 * a prompt's per-layer tensors, a fused unit's tile buffers, whatever
 * their size), in one stack for all tensors, and handed out again as they
 * are to the next tensor of the same element count (the last kept first:
 * it is still in the cache): a decode step, or the next layer of a
 * prompt, then neither maps fresh pages nor takes page faults, nor clears
 * them. Since every array is handed out again to whichever tensor fits,
 * the memory kept is what the most arrays live at once needed, not every
 * tensor's array (Mamba-2's prefill of 512 tokens: 39 MB less). Nothing
 * reads an element before it is written (every Einsum writes its whole
 * region; fronts and halos are filled from the initialization; the scan
 * kernel's skipped steps are read by no one), so old values are as good
 * as zeros; tests/unit/test_exec.c holds an Exec run again on new inputs
 * to exec_run's fresh arrays, bit for bit. (Arrays of more than 8 MiB were
 * once mapped and freed again for every layer: 38 % of a 512-token
 * mamba2-130m ri+rsb prefill went to page faults.) */
Array *run_array(Run *r, int ndim, const int64_t *shape) {
  uint64_t n;
  if (!count_elements(ndim, shape, UINT64_MAX / sizeof(float), &n))
    return array_new(ndim, shape); /* too large: it refuses */
  for (int i = r->nspare - 1; i >= 0; i--) {
    Array *a = r->spare[i];
    if ((uint64_t)a->n != n)
      continue;
    memmove(&r->spare[i], &r->spare[i + 1],
            sizeof *r->spare * (size_t)(r->nspare - i - 1));
    r->nspare--;
    a->ndim = ndim;
    memcpy(a->shape, shape, sizeof *shape * (size_t)ndim);
    return a;
  }
  return array_new(ndim, shape);
}

/* The stack has one slot per tensor; past that, a released array is freed. */
void run_drop(Run *r, Array *a) {
  if (a && r->nspare < r->c->ntensors && a->dtype == DT_F32 && a->own &&
      a->n > 0) {
    r->spare[r->nspare++] = a;
    return;
  }
  array_free(a);
}

/* A tensor with an initialization that its readers reach before the start
 * of gets those steps in front of its array, filled from the
 * initialization: every read then lies in the view. */
Array *run_alloc(Run *r, int t) {
  const Tensor *T = &r->c->tensors[t];
  int64_t shape[IR_MAX_RANKS];
  tensor_shape(r, t, shape);
  int64_t front = init_reach(r, t);
  int cond = T->init ? T->init->out.cond_dim : 0;
  shape[cond] += front;
  Array *a = run_array(r, T->nranks, shape);
  if (!a) {
    diag_error(r->d, r->c->path, T->loc, "%s is too large to allocate",
               tname(r->c, t));
    return NULL;
  }
  r->arrays[t] = a;
  r->borrowed[t] = false;
  r->front[t] = front;
  r->views[t] = view_of(a->data, a->shape, a->ndim);
  r->views[t].origin[cond] = -front;
  r->live += 4.0 * (double)a->n;
  if (r->live > r->peak)
    r->peak = r->live;
  if (front > 0 && !fill_front(r, t, front, NULL, NULL))
    return NULL;
  return a;
}

void run_release(Run *r, int t) {
  if (!r->arrays[t] || r->borrowed[t])
    return;
  r->live -= 4.0 * (double)r->arrays[t]->n;
  run_drop(r, r->arrays[t]);
  r->arrays[t] = NULL;
  memset(&r->views[t], 0, sizeof r->views[t]);
}

/* ---- recurrences ---- */

/* The variable of E over the recurrence's rank, found through its lagged
 * read's coordinate. */
int recurrence_rank(const Cascade *c, int member, const int *scc) {
  for (int j = 0; j < c->nedges; j++) {
    const Edge *e = &c->edges[j];
    if (edge_orders(c, e) || scc[e->consumer] != scc[member])
      continue;
    for (int k = 0; k < e->acc[0]->n; k++)
      if (e->acc[0]->idx[k].lag > 0)
        return c->tensors[e->tensor].ranks[k];
  }
  return -1;
}

int var_over(const Einsum *e, int rank) {
  for (int v = 0; v < e->nvars; v++)
    if (e->vars[v].rank == rank && VARSET_HAS(e->out_vars, v))
      return v;
  return -1;
}

/* ---- the interpreter ---- */

static bool run_one(Run *r, int i) {
  const Einsum *e = r->c->einsums[i];
  if (!r->arrays[e->out.tensor] && !run_alloc(r, e->out.tensor))
    return false;
  Region reg;
  region_full(r->s, e, &reg);
  return vm_exec(run_job(r, 0, i), &reg, r->d);
}

/* ---- the schedule ---- */

void sched_build(const Cascade *c, Sched *sc) {
  int n = c->neinsums;
  sc->n = n;
  sc->order = xmalloc(((size_t)n + 1) * sizeof *sc->order);
  sc->scc = xmalloc(((size_t)n + 1) * sizeof *sc->scc);
  memcpy(sc->scc, c->recurrence, sizeof(int) * (size_t)n);
  /* A node is an Einsum, or a whole recurrence (named by its first
   * member); it waits for every node it reads from. */
  int *node = xmalloc(((size_t)n + 1) * sizeof *node);
  int *waits = xcalloc((size_t)n + 1, sizeof *waits);
  bool *done = xcalloc((size_t)n + 1, sizeof *done);
  for (int i = 0; i < n; i++)
    node[i] = sc->scc[i] >= 0 ? sc->scc[i] : i;
  for (int k = 0; k < c->nedges; k++) {
    const Edge *e = &c->edges[k];
    if (node[e->producer] != node[e->consumer])
      waits[node[e->consumer]]++;
  }
  int m = 0;
  while (m < n) {
    int next = -1; /* the first ready node, in cascade order */
    for (int i = 0; i < n && next < 0; i++)
      if (node[i] == i && !done[i] && waits[i] == 0)
        next = i;
    if (next < 0)
      break; /* cannot happen: the loader rejects other cycles */
    done[next] = true;
    for (int i = 0; i < n; i++)
      if (node[i] == next)
        sc->order[m++] = i;
    for (int k = 0; k < c->nedges; k++) {
      const Edge *e = &c->edges[k];
      if (node[e->producer] == next && node[e->consumer] != next)
        waits[node[e->consumer]]--;
    }
  }
  sc->n = m;
  free(node);
  free(waits);
  free(done);
}

void sched_free(Sched *sc) {
  free(sc->order);
  free(sc->scc);
}

/* ---- stretches ----
 *
 * Running Einsums slice by slice along a rank they all keep makes what one
 * writes still cached when the next reads it, and lets the workers take
 * whole slices: no wake-up per step of a recurrence, whose steps are small
 * (one token's state). */

/* The extent of RANK in member K's region. */
static int64_t extent_over(const Run *r, const int *members, const Region *base,
                           int k, int rank) {
  int v = var_over(r->c->einsums[members[k]], rank);
  return v >= 0 ? base[k].hi[v] - base[k].lo[v] : 0;
}

int stretch_rank(const Run *r, const int *members, int n, const Region *base) {
  const Cascade *c = r->c;
  int best = -1;
  for (int cand = 0; cand < c->nranks; cand++) {
    bool ok = true;
    for (int k = 0; ok && k < n; k++) {
      const Einsum *e = c->einsums[members[k]];
      int v = var_over(e, cand);
      ok = v >= 0;
      /* Reads of the stretch's own tensors must stay in the slice (which
       * also keeps a recurrence from being sliced along its steps). */
      for (int a = 0; ok && a < e->nreads; a++) {
        const Access *acc = e->reads[a];
        int p = c->tensors[acc->tensor].producer;
        bool inside = false;
        for (int m = 0; m < n; m++)
          inside = inside || p == members[m];
        if (!inside)
          continue;
        bool follows = false;
        for (int d = 0; d < acc->n; d++)
          follows = follows || (acc->idx[d].plain && acc->idx[d].var[0] == v);
        ok = follows;
      }
    }
    if (ok && extent_over(r, members, base, 0, cand) > 1 &&
        (best < 0 || extent_over(r, members, base, 0, cand) >
                         extent_over(r, members, base, 0, best)))
      best = cand;
  }
  return best;
}

typedef struct Workers {
  Run *r;
  const Stretch *st;
  const int *scc;
  int64_t lo, hi; /* the split rank's range over all members */
  int64_t nslices;
  bool ok;
} Workers;

/* What a worker of a stretch uses, kept in the Run from stretch to
 * stretch (a decode step runs some 120): its jobs and regions per member,
 * its error record (not cleared: only a failed record's text is read, and
 * a Diag is 1.5 KB), and its count of chained Einsum runs. */
struct StretchSlot {
  VmJob **jobs; /* per member, NEINSUMS + 1 */
  Region *regs;
  Diag diag;
  int64_t chained;
};

/* Member K's region restricted to slice [slo, shi) of the split rank and,
 * when STEP >= 0, to that step of RANK. False: nothing of it lies there. */
static bool member_region(const Workers *wk, int k, int64_t slo, int64_t shi,
                          int rank, int64_t step, Region *reg) {
  const Einsum *e = wk->r->c->einsums[wk->st->members[k]];
  *reg = wk->st->base[k];
  if (step >= 0) {
    int v = var_over(e, rank);
    if (v >= 0) {
      reg->lo[v] = step;
      reg->hi[v] = step + 1;
    }
  }
  int sv = wk->st->split >= 0 ? var_over(e, wk->st->split) : -1;
  if (sv >= 0) {
    reg->lo[sv] = reg->lo[sv] > slo ? reg->lo[sv] : slo;
    reg->hi[sv] = reg->hi[sv] < shi ? reg->hi[sv] : shi;
  }
  return sv < 0 || reg->lo[sv] < reg->hi[sv];
}

/* The stretch's members over one slice: a recurrence's members (consecutive,
 * one recurrence) a step at a time; the others, where they form chains of
 * elementwise Einsums, unit by unit (vm_exec_chain). */
static bool run_slice(Workers *wk, StretchSlot *sl, int64_t slo,
                      int64_t shi) {
  const Stretch *st = wk->st;
  const Cascade *c = wk->r->c;
  VmJob **jobs = sl->jobs;
  Region *regs = sl->regs;
  Diag *d = &sl->diag;
  for (int k = 0; k < st->n;) {
    int e = st->members[k], end = k + 1;
    Region reg;
    if (wk->scc[e] < 0) {
      if (!member_region(wk, k, slo, shi, -1, -1, &regs[k])) {
        k = end;
        continue;
      }
      while (end < st->n && wk->scc[st->members[end]] < 0 &&
             member_region(wk, end, slo, shi, -1, -1, &regs[end]))
        end++;
      int chained;
      int ran = vm_exec_chain(&jobs[k], &regs[k], end - k, &chained, d);
      if (ran < 0)
        return false;
      sl->chained += chained;
      k += ran;
      continue;
    }
    while (end < st->n && wk->scc[st->members[end]] == wk->scc[e])
      end++;
    int rank = recurrence_rank(c, e, wk->scc);
    int v = var_over(c->einsums[e], rank);
    int64_t lo = v >= 0 ? st->base[k].lo[v] : 0;
    int64_t hi = v >= 0 ? st->base[k].hi[v] : 1;
    for (int64_t step = lo; step < hi; step++)
      for (int m = k; m < end; m++)
        if (member_region(wk, m, slo, shi, rank, step, &reg) &&
            !vm_exec(jobs[m], &reg, d))
          return false;
    k = end;
  }
  return true;
}

static void stretch_slots_new(Run *r) {
  size_t ne = (size_t)r->c->neinsums + 1;
  r->slots = xcalloc((size_t)r->nslots, sizeof *r->slots);
  for (int w = 0; w < r->nslots; w++) {
    r->slots[w].jobs = xcalloc(ne, sizeof *r->slots[w].jobs);
    r->slots[w].regs = xcalloc(ne, sizeof *r->slots[w].regs);
  }
}

static void stretch_slots_free(Run *r) {
  for (int w = 0; w < r->nslots; w++) {
    free(r->slots[w].jobs);
    free(r->slots[w].regs);
  }
  free(r->slots);
}

static void stretch_worker(void *arg, int w, int nw) {
  Workers *wk = arg;
  const Stretch *st = wk->st;
  Run *r = wk->r;
  StretchSlot *sl = &r->slots[w];
  bool ok = true;
  for (int k = 0; k < st->n; k++)
    sl->jobs[k] = run_job(r, 1 + w, st->members[k]);
  for (int64_t i = w; ok && i < wk->nslices; i += nw) {
    int64_t slo = wk->lo + i * st->slice;
    int64_t shi = slo + st->slice < wk->hi ? slo + st->slice : wk->hi;
    ok = run_slice(wk, sl, slo, shi);
  }
  if (!ok)
    wk->ok = false;
}

/* Evaluations of a point of an Einsum over its region (an output element
 * times the points it reduces), over the stretch's members. */
static double stretch_work(const Run *r, const Stretch *st) {
  double work = 0;
  for (int k = 0; k < st->n; k++) {
    const Einsum *e = r->c->einsums[st->members[k]];
    double points = 1;
    for (int v = 0; v < e->nvars; v++)
      points *= (double)(st->base[k].hi[v] - st->base[k].lo[v]);
    work += points;
  }
  return work;
}

bool run_stretch(Run *r, const Stretch *st, const int *scc) {
  Workers wk = {.r = r, .scc = scc, .ok = true, .lo = 0, .hi = 1};
  for (int k = 0; st->split >= 0 && k < st->n; k++) {
    int v = var_over(r->c->einsums[st->members[k]], st->split);
    wk.lo = k == 0 || st->base[k].lo[v] < wk.lo ? st->base[k].lo[v] : wk.lo;
    wk.hi = k == 0 || st->base[k].hi[v] > wk.hi ? st->base[k].hi[v] : wk.hi;
  }
  Stretch whole = *st;
  /* A stretch too small to share (a decode step's norms, gates and
   * convolutions) runs on the calling thread in one slice, as a job of
   * the vector machine does (VM_MIN_SHARED_WORK): the hand-off costs more
   * than the work, and a slice cut for two workers walks in shorter
   * chunks. Each element's operations are the same in any slice, so are
   * the numbers. */
  if (st->split < 0 || st->slice <= 0 ||
      stretch_work(r, st) < VM_MIN_SHARED_WORK)
    whole.slice = wk.hi - wk.lo;
  wk.st = &whole;
  wk.nslices = (wk.hi - wk.lo + whole.slice - 1) / whole.slice;
  int workers = r->nslots - 1;
  if (workers > wk.nslices)
    workers = (int)wk.nslices;
  /* Each worker's jobs read its env: the run's, without the pool (the
   * workers are the pool), with a fault flag of its own. */
  for (int w = 0; w < workers; w++) {
    r->slots[w].diag.failed = false;
    r->slots[w].chained = 0;
    r->faults[w] = 0;
    r->envs[w] = r->env;
    r->envs[w].pool = NULL;
    r->envs[w].fault = &r->faults[w];
  }
  if (workers > 1)
    pool_run(r->o->pool, stretch_worker, &wk, workers);
  else
    stretch_worker(&wk, 0, 1);
  for (int w = 0; w < workers; w++) {
    if (r->faults[w])
      r->fault = 1;
    if (r->slots[w].diag.failed && !r->d->failed)
      *r->d = r->slots[w].diag;
    if (r->st)
      r->st->chained_einsums += r->slots[w].chained;
  }
  return wk.ok && !r->fault;
}

/* The Einsums of one recurrence over their whole iteration spaces, a
 * slice per worker. */
static bool run_recurrence(Run *r, const int *members, int n, const int *scc) {
  Region *base = xcalloc((size_t)n, sizeof *base);
  bool ok = true;
  for (int k = 0; ok && k < n; k++) {
    int t = r->c->einsums[members[k]]->out.tensor;
    ok = r->arrays[t] || run_alloc(r, t);
    region_full(r->s, r->c->einsums[members[k]], &base[k]);
  }
  Stretch st = {.members = members, .n = n, .base = base,
                .split = stretch_rank(r, members, n, base)};
  int workers = r->o->pool ? pool_size(r->o->pool) : 1;
  if (st.split >= 0)
    st.slice = (r->s->size[st.split] + workers - 1) / workers;
  ok = ok && run_stretch(r, &st, scc);
  free(base);
  return ok;
}

/* Is tensor T still needed once the schedule's first DONE Einsums have
 * run (not yet produced, read by a later one, an output, or state)? */
static bool needed_later(const Run *r, int t, int done) {
  const Cascade *c = r->c;
  if (c->tensors[t].output || c->tensors[t].init || r->o->keep_all)
    return true;
  return r->last_use[t] >= done;
}

/* The view of S over SRC, the input its initialization INI reads:
 * dimension k of S is the dimension of SRC read with the same variable. */
static bool view_over_source(const Run *r, int ts, const Einsum *ini,
                             int src, View *v) {
  const Access *sa = ini->rhs->acc;
  const View *sv = &r->views[src];
  int cond = ini->out.cond_dim, n = ini->out.n;
  int64_t shape[IR_MAX_RANKS];
  tensor_shape(r, ts, shape);
  if (sa->n != n - 1 || !sv->data || sv->dtype != DT_F32)
    return false;
  for (int j = 0; j < sa->n; j++)
    if (!sa->idx[j].plain)
      return false;
  *v = (View){.data = sv->data, .dtype = DT_F32, .n = n};
  for (int k = 0; k < n; k++) {
    if (k == cond) { /* the step before the start, and every step */
      v->origin[k] = -1;
      v->extent[k] = shape[k] + 1;
      continue;
    }
    int j = 0;
    while (j < sa->n && sa->idx[j].var[0] != ini->out.idx[k].var[0])
      j++;
    if (j == sa->n || !ini->out.idx[k].plain || sv->origin[j] != 0 ||
        sv->extent[j] != shape[k])
      return false;
    v->extent[k] = shape[k];
    v->stride[k] = sv->stride[j];
  }
  return true;
}

bool scan_state_in_place(Run *r, const Scan *sc) {
  int ts = r->c->einsums[sc->add]->out.tensor;
  const Einsum *ini = r->c->tensors[ts].init;
  if (!r->o->state_in_place || !ini || ini->rhs->kind != EX_READ ||
      init_history_dim(ini) >= 0 || !scan_read_inside(r, sc, ts) ||
      tensor_state_steps(r->s, ts) != 1 || init_reach(r, ts) != 1)
    return false;
  int src = ini->rhs->acc->tensor;
  View v;
  if (!r->borrowed[src] || !view_over_source(r, ts, ini, src, &v))
    return false;
  r->arrays[ts] = r->arrays[src];
  r->borrowed[ts] = true;
  r->front[ts] = 1;
  r->views[ts] = v;
  return true;
}

bool scan_find(const Run *r, const int *order, int n, Scan *sc) {
  const Cascade *c = r->c;
  if (r->o->vm_only)
    return false;
  /* The producers folded where nothing else reads what they make. */
  if (scan_match_folded(c, order, r->sched.scc, n, sc) &&
      (sc->dprod < 0 ||
       scan_internal(r, sc, c->einsums[sc->dprod]->out.tensor)) &&
      scan_internal(r, sc, c->einsums[sc->fprod]->out.tensor))
    return true;
  return scan_match(c, order, r->sched.scc, n, sc) > 0;
}

void scan_state_undo(Run *r, const Scan *sc, const View *held) {
  int ts = r->c->einsums[sc->add]->out.tensor;
  r->arrays[ts] = NULL;
  r->borrowed[ts] = false;
  r->front[ts] = 0;
  r->views[ts] = *held;
}

/* A linear recurrence and its read-out at the start of ORDER, by the scan
 * kernel over their whole iteration spaces: returns the positions it ran
 * (0: none, run them as usual; -1: failed). */
static int interpret_scan(Run *r, const int *order, int n) {
  const Cascade *c = r->c;
  Scan sc;
  if (!scan_find(r, order, n, &sc))
    return 0;
  int ts = c->einsums[sc.add]->out.tensor, tt = c->einsums[sc.mul]->out.tensor;
  int tu = sc.prod >= 0 ? c->einsums[sc.prod]->out.tensor : -1;
  int ty = sc.out >= 0 ? c->einsums[sc.out]->out.tensor : -1;
  bool wt = !scan_internal(r, &sc, tt), wu = tu >= 0 && !scan_internal(r, &sc, tu);
  bool in_place = scan_state_in_place(r, &sc);
  int want[] = {ts, ty, wt ? tt : -1, wu ? tu : -1};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
    if (want[k] >= 0 && !r->arrays[want[k]] && !run_alloc(r, want[k]))
      return -1;
  Region base[6];
  for (int p = 0; p < sc.npos; p++)
    region_full(r->s, c->einsums[order[p]], &base[p]);
  if (!scan_run(r, &sc, order, base, wt, wu)) {
    if (in_place) /* run as usual, the state in an array of its own */
      scan_state_undo(r, &sc, &(View){0});
    return 0;
  }
  if (r->st)
    r->st->scan_einsums += sc.npos;
  return sc.npos;
}

/* Does Einsum E read the output of one of ORDER's first N? */
static bool reads_one_of(const Run *r, int e, const int *order, int n) {
  const Einsum *x = r->c->einsums[e];
  for (int k = 0; k < x->nreads; k++)
    for (int p = 0; p < n; p++)
      if (x->reads[k]->tensor == r->c->einsums[order[p]]->out.tensor)
        return true;
  return false;
}

/* Does Einsum E read a tensor UNREADY marks (NULL: none)? */
static bool reads_unready(const Run *r, int e, const bool *unready) {
  const Einsum *x = r->c->einsums[e];
  for (int k = 0; unready && k < x->nreads; k++)
    if (unready[x->reads[k]->tensor])
      return true;
  return false;
}

/* The positions between a product and its first reader that make it worth
 * running in the background, and the least weight bytes it must stream:
 * on two threads, one streams its weights while the other runs what comes
 * between (a decode step's convolution and scan run while Mamba-1's gate
 * projection streams: measured in bench/RESULTS.md). */
enum { BG_GAP = 3, BG_MIN_BYTES = 1 << 20 };

/* Of the K products G at the start of ORDER (N positions), the one to run
 * in the background, and where its result is first read (*JOIN, relative
 * to ORDER); -1 if none. */
static int background_pick(const Run *r, const int *order, int n, int k,
                           const Gemm *g, int *join) {
  int best = -1;
  double most = 0;
  for (int p = 0; p < k; p++) {
    int q = k;
    while (q < n && !reads_one_of(r, order[q], &order[p], 1))
      q++;
    double bytes = vm_gemv_bytes(&g[p]);
    if (q - k >= BG_GAP && bytes >= BG_MIN_BYTES && bytes > most) {
      best = p;
      most = bytes;
      *join = q;
    }
  }
  return best;
}

enum { MAX_GEMVS = 8 };
int run_gemvs(Run *r, const int *order, int n, int at, const Region *regs,
              const bool *unready, Background *bg) {
  Pool *pool = r->o->pool;
  if (pool_size(pool) < 2)
    return 0;
  Gemm g[MAX_GEMVS];
  int k = 0;
  for (; k < n && k < MAX_GEMVS; k++) {
    int e = order[k], t = r->c->einsums[e]->out.tensor;
    if (r->sched.scc[e] >= 0 || reads_one_of(r, e, order, k) ||
        reads_unready(r, e, unready))
      break;
    if (!r->views[t].data && !run_alloc(r, t))
      return -1;
    Region reg;
    if (regs)
      reg = regs[k];
    else
      region_full(r->s, r->c->einsums[e], &reg);
    if (!vm_gemv(run_job(r, 0, e), &reg, &g[k], r->d))
      break;
  }
  int join = 0, b = bg->job ? -1 : background_pick(r, order, n, k, g, &join);
  if (k < 2 && b < 0)
    return 0;
  Gemm now[MAX_GEMVS];
  int m = 0;
  for (int p = 0; p < k; p++)
    if (p != b)
      now[m++] = g[p];
  if (m > 0)
    vm_gemvs(now, m, pool);
  if (b >= 0) { /* after the others, so that they have every thread */
    bg->job = vm_gemv_start(&g[b], pool);
    bg->join = at + join;
  }
  if (r->st) {
    r->st->gemv_einsums += k;
    r->st->background_einsums += b >= 0;
  }
  return k;
}

/* Free what no Einsum from position DONE on reads. */
static void release_done(Run *r, int done) {
  for (int t = 0; t < r->c->ntensors; t++)
    if (r->c->tensors[t].producer >= 0 && !needed_later(r, t, done))
      run_release(r, t);
}

bool background_join(Run *r, Background *bg, int end) {
  if (!bg->job || end <= bg->join)
    return false;
  vm_gemv_join(bg->job, r->o->pool);
  bg->job = NULL;
  return true;
}

int background_avail(const Background *bg, int i, int n) {
  return bg->job && n > bg->join - i ? bg->join - i : n;
}

bool run_interpret(Run *r) {
  const Sched *sc = &r->sched;
  Background bg = {0};
  bool ok = true;
  for (int i = 0; ok && i < sc->n;) {
    /* Then free what waited for the product (from position I on,
     * nothing else is read). */
    if (background_join(r, &bg, i + 1))
      release_done(r, i);
    int avail = background_avail(&bg, i, sc->n - i);
    int e = sc->order[i], n = interpret_scan(r, &sc->order[i], avail);
    if (n == 0)
      n = run_gemvs(r, &sc->order[i], avail, i, NULL, NULL, &bg);
    if (n < 0) {
      ok = false;
      n = 1;
    } else if (n > 0) {
      /* run by the scan kernel, or as matrix-vector products together */
    } else if (sc->scc[e] >= 0) {
      n = 1;
      while (i + n < sc->n && sc->scc[sc->order[i + n]] == sc->scc[e])
        n++;
      if (background_join(r, &bg, i + n))
        release_done(r, i);
      ok = run_recurrence(r, &sc->order[i], n, sc->scc);
    } else {
      n = 1;
      ok = run_one(r, e);
    }
    /* Free what no later Einsum reads (not while a product runs in the
     * background: it may read it). */
    if (ok && !bg.job)
      release_done(r, i + n);
    i += n;
  }
  background_join(r, &bg, sc->n + 1);
  return ok;
}

/* ---- the next pass's state ---- */

/* For an initialization T[..., i<0, ...] = S[...], the S that makes a next
 * pass see this pass's last steps of T: S'[s] = T at the coordinates the
 * initialization maps s to, with i shifted by this pass's length. A
 * growing S (`append`, a KV cache) instead grows by the pass's length
 * along its history and keeps its origin: S' is S followed by this pass's
 * steps of T, S'[s] = T at i = s - N for a history of N steps. */

/* T's coordinates for the element of S' at POS; false if the
 * initialization does not determine them. */
static bool state_coords(const Run *r, int t, const int64_t *pos,
                         int64_t *coords) {
  const Einsum *ini = r->c->tensors[t].init;
  const Access *sa = ini->rhs->acc;
  int cond = ini->out.cond_dim;
  int64_t vars[IR_MAX_VARS];
  for (int v = 0; v < ini->nvars; v++)
    vars[v] = INT64_MIN;
  vars[ini->out.idx[cond].var[0]] = -1; /* S without i: the last step */
  for (int k = 0; k < sa->n; k++) {
    const Index *ix = &sa->idx[k];
    if (ix->nterms == 1 && !ix->coef[0]) {
      int64_t off = ix->off ? (int64_t)llround(shape_eval(r->s, ix->off)) : 0;
      vars[ix->var[0]] = pos[k] - off;
    }
  }
  int64_t steps = r->c->tensors[sa->tensor].append
                      ? 0
                      : r->s->size[r->c->tensors[t].ranks[cond]];
  for (int k = 0; k < ini->out.n; k++) {
    int64_t x = vars[ini->out.idx[k].var[0]];
    if (x == INT64_MIN)
      return false;
    coords[k] = k == cond ? steps + x : x;
  }
  return true;
}

/* Offset of COORDS in T's view, or -1 outside it. */
static int64_t view_offset(const Run *r, int t, const int64_t *coords) {
  const View *v = &r->views[t];
  int64_t off = 0;
  for (int k = 0; k < v->n; k++) {
    int64_t rel = coords[k] - v->origin[k];
    if (rel < 0 || rel >= v->extent[k])
      return -1;
    off += rel * v->stride[k];
  }
  return off;
}

/* S' as a strided walk of T's view: S'[pos] = data[*OFF0 + sum_k pos[k]
 * * STEP[k]], when every element lies in the view. T's coordinates grow
 * with pos (each is a coordinate of S' less an offset, or fixed), so the
 * first and last corners bound them all. */
static bool state_strides(const Run *r, int t, const int64_t *shape, int n,
                          int64_t *off0, int64_t *step) {
  int64_t pos[IR_MAX_RANKS] = {0}, coords[IR_MAX_RANKS];
  if (!state_coords(r, t, pos, coords) ||
      (*off0 = view_offset(r, t, coords)) < 0)
    return false;
  int64_t expect = *off0;
  for (int k = 0; k < n; k++) {
    step[k] = 0;
    if (shape[k] > 1) {
      pos[k] = 1;
      state_coords(r, t, pos, coords);
      pos[k] = 0;
      int64_t o = view_offset(r, t, coords);
      if (o < 0)
        return false;
      step[k] = o - *off0;
    }
    expect += (shape[k] - 1) * step[k];
  }
  for (int k = 0; k < n; k++)
    pos[k] = shape[k] - 1;
  state_coords(r, t, pos, coords);
  return view_offset(r, t, coords) == expect;
}

/* The whole of OUT at once from SRC, element POS at sum_k pos[k] *
 * STEP[k] (the decode state, every step): a row whose elements are
 * consecutive in SRC too in one copy. */
static void copy_strided(Array *out, const float *src, const int64_t *step) {
  int n = out->ndim;
  int64_t pos[IR_MAX_RANKS] = {0}, off = 0, row = out->shape[n - 1];
  for (int64_t base = 0; base < out->n; base += row) {
    if (step[n - 1] == 1)
      memcpy(out->data + base, src + off, sizeof(float) * (size_t)row);
    else
      for (int64_t x = 0; x < row; x++)
        out->data[base + x] = src[off + x * step[n - 1]];
    for (int k = n - 2; k >= 0; k--) {
      off += step[k];
      if (++pos[k] < out->shape[k])
        break;
      off -= out->shape[k] * step[k];
      pos[k] = 0;
    }
  }
}

bool next_state(Run *r, int t, Tensors *next) {
  const Cascade *c = r->c;
  const Einsum *ini = c->tensors[t].init;
  if (!ini || ini->rhs->kind != EX_READ)
    return true; /* nothing to carry, or not a plain read */
  int st = ini->rhs->acc->tensor, n = c->tensors[st].nranks;
  if (r->borrowed[t]) { /* advanced in place (state_in_place) */
    tensors_put(next, tname(c, st), r->arrays[t], false);
    return true;
  }
  int64_t shape[IR_MAX_RANKS];
  tensor_shape(r, st, shape);
  int hist = init_history_dim(ini);
  if (hist >= 0)
    shape[hist] = tensor_state_steps(r->s, t);
  Array *out = array_uninit(n, shape); /* every element written below */
  int64_t row = n > 0 ? shape[n - 1] : 1;
  int64_t off0, steps[IR_MAX_RANKS];
  if (out->n > 0 && n > 0 && state_strides(r, t, shape, n, &off0, steps)) {
    copy_strided(out, r->views[t].data + off0, steps);
    tensors_put(next, tname(c, st), out, true);
    return true;
  }
  int64_t pos[IR_MAX_RANKS] = {0};
  /* A row of S' (its last dimension) is a strided run of T's view when
   * both its ends lie in the view; otherwise element by element. */
  for (int64_t base = 0; base < out->n && row > 0; base += row) {
    int64_t first[IR_MAX_RANKS], next_c[IR_MAX_RANKS], last[IR_MAX_RANKS];
    if (!state_coords(r, t, pos, first)) {
      array_free(out);
      diag_error(r->d, c->path, ini->loc,
                 "cannot derive the next state of %s from this "
                 "initialization",
                 tname(c, st));
      return false;
    }
    int64_t o0 = view_offset(r, t, first), step = 0, o1 = -1;
    if (n > 0 && row > 1) {
      pos[n - 1] = 1;
      state_coords(r, t, pos, next_c);
      pos[n - 1] = row - 1;
      state_coords(r, t, pos, last);
      pos[n - 1] = 0;
      step = view_offset(r, t, next_c) - o0;
      o1 = view_offset(r, t, last);
    }
    if (o0 >= 0 && (row == 1 || (o1 >= 0 && o1 == o0 + (row - 1) * step))) {
      const float *src = r->views[t].data + o0;
      for (int64_t x = 0; x < row; x++)
        out->data[base + x] = src[x * step];
    } else {
      for (int64_t x = 0; x < row; x++) {
        pos[n - 1] = x;
        int64_t coords[IR_MAX_RANKS];
        state_coords(r, t, pos, coords);
        out->data[base + x] = vm_read(&r->env, t, coords);
      }
      pos[n - 1] = 0;
    }
    for (int k = n - 2; k >= 0; k--) {
      if (++pos[k] < shape[k])
        break;
      pos[k] = 0;
    }
  }
  tensors_put(next, tname(c, st), out, true);
  return true;
}

/* ---- the entry point ---- */

/* The eight per-tensor tables of R, NT entries each, in one zeroed block
 * at views (run_done frees it), the widest types first: each table
 * starts aligned. */
static void per_tensor_tables(Run *r, size_t nt) {
  size_t each = sizeof *r->views + sizeof *r->arrays + sizeof *r->spare +
                sizeof *r->init_jobs + sizeof *r->front +
                sizeof *r->last_use + sizeof *r->input_at +
                sizeof *r->borrowed;
  r->views = xcalloc(nt, each);
  r->arrays = (Array **)(r->views + nt);
  r->spare = r->arrays + nt;
  r->init_jobs = (VmJob **)(r->spare + nt);
  r->front = (int64_t *)(r->init_jobs + nt);
  r->last_use = (int *)(r->front + nt);
  r->input_at = r->last_use + nt;
  r->borrowed = (bool *)(r->input_at + nt);
}
_Static_assert(sizeof(View) % _Alignof(Array *) == 0 &&
                   _Alignof(View) >= _Alignof(int64_t) &&
                   _Alignof(int64_t) >= _Alignof(int),
               "run_init's per-tensor tables start aligned");

void run_init(Run *r, const Cascade *c, const Shape *s, const ExecOpts *o,
              Diag *d) {
  memset(r, 0, sizeof *r);
  r->c = c;
  r->s = s;
  r->o = o;
  r->d = d;
  per_tensor_tables(r, (size_t)c->ntensors + 1);
  r->env = (Env){.c = c, .s = s, .views = r->views, .pool = o->pool,
                 .fault = &r->fault};
  sched_build(c, &r->sched);
  for (int t = 0; t < c->ntensors; t++)
    r->last_use[t] = -1;
  for (int p = 0; p < r->sched.n; p++) {
    const Einsum *e = c->einsums[r->sched.order[p]];
    r->last_use[e->out.tensor] = p;
    for (int k = 0; k < e->nreads; k++)
      r->last_use[e->reads[k]->tensor] = p;
  }
  r->inputs = xcalloc((size_t)c->ntensors + 1, sizeof *r->inputs);
  for (int t = 0; t < c->ntensors; t++)
    if (c->tensors[t].producer < 0 && tensor_is_read(c, t))
      r->inputs[r->ninputs++] = t;
  r->nslots = 1 + pool_size(o->pool);
  r->jobs = xcalloc((size_t)r->nslots * ((size_t)c->neinsums + 1),
                    sizeof *r->jobs);
  r->envs = xcalloc((size_t)r->nslots, sizeof *r->envs);
  r->faults = xcalloc((size_t)r->nslots, sizeof *r->faults);
  stretch_slots_new(r);
}

VmJob *run_job(Run *r, int slot, int e) {
  VmJob **j = &r->jobs[(size_t)slot * (size_t)r->c->neinsums + (size_t)e];
  if (!*j)
    *j = vm_prepare(slot ? &r->envs[slot - 1] : &r->env, r->c->einsums[e]);
  return *j;
}

/* One pass over the jobs (each a cache miss after a decode step's weights
 * went by): what each held counts toward the peak, then it goes. */
void run_release_jobs(Run *r, const bool *member) {
  double held = 0;
  int ne = r->c->neinsums;
  for (int k = 0; k < r->nslots * ne; k++)
    if (r->jobs[k] && (!member || member[k % ne])) {
      held += vm_job_held(r->jobs[k]);
      vm_job_release(r->jobs[k]);
    }
  if (r->live + held > r->peak)
    r->peak = r->live + held;
}

void run_reset(Run *r) {
  run_release_jobs(r, NULL);
  for (int t = 0; t < r->c->ntensors; t++)
    if (r->init_jobs[t])
      vm_job_release(r->init_jobs[t]);
  for (int t = 0; t < r->c->ntensors; t++) {
    run_release(r, t);
    r->arrays[t] = NULL; /* the caller's inputs too */
    r->borrowed[t] = false;
    memset(&r->views[t], 0, sizeof r->views[t]);
  }
}

void run_done(Run *r) {
  run_reset(r);
  for (int k = 0; k < r->nslots * r->c->neinsums; k++)
    vm_job_free(r->jobs[k]);
  for (int t = 0; t < r->c->ntensors; t++)
    vm_job_free(r->init_jobs[t]);
  free(r->jobs);
  free(r->envs);
  free(r->faults);
  stretch_slots_free(r);
  free(r->inputs);
  sched_free(&r->sched);
  for (int i = 0; i < r->nspare; i++)
    array_free(r->spare[i]);
  free(r->views); /* with the other per-tensor tables (run_init) */
}
