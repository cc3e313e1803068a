/* eval.c — pricing a study's points. Each thread takes chunks of
 * consecutive points (neighbours share a cascade, a shape and a buffer),
 * shares the threads' memo of mapping searches, keeps a cache of plans (a
 * plan does not depend on the architecture) and the searches of design
 * best in its current block of points, and writes each point's result
 * into its own slot: the results do not depend on which thread priced
 * what. */
#include "study.h"

#include "../search/search.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Each figure's column and objective, one entry per figure. */
static const struct {
  const char *column, *objective;
} figures[] = {SWEEP_FIGURES(TABLE_ROW)};
_Static_assert(sizeof figures / sizeof figures[0] == FIG_COUNT,
               "an entry per figure");

const char *figure_column(Figure f) {
  return (unsigned)f < FIG_COUNT ? figures[f].column : "?";
}

const char *figure_objective(Figure f) {
  return (unsigned)f < FIG_COUNT ? figures[f].objective : NULL;
}

/* What one thread keeps between points. */
typedef struct Worker {
  const Study *s;
  MapMemo *memo; /* the threads' */
  GroupMemo *groups; /* the threads' candidate groups of best's searches */
  Plan **plans;  /* per shape, design, stitcher; NULL until needed */
  /* Design best's schedules in the block of points the thread is in: a
   * block is one cascade, settings and parameters, architecture, design
   * and options -- every input of a search but the shape slot -- over
   * the workloads, which vary innermost. Per slot, so that a phase and a
   * scenario that price the same slot (a decode step) search it once. */
  long block; /* point / workloads, or -1 */
  Eval **best; /* per slot; NULL: not searched in this block */
  long searches, reused;
} Worker;

static Worker *worker_new(const Study *s, MapMemo *memo, GroupMemo *groups) {
  Worker *w = xcalloc(1, sizeof *w);
  w->s = s;
  w->memo = memo;
  w->groups = groups;
  long n = (long)s->ncms * s->nstuples * s->nslots * DES_COUNT *
           (STITCH_COUNT + 1);
  w->plans = xcalloc((size_t)n + 1, sizeof *w->plans);
  w->block = -1;
  w->best = xcalloc((size_t)s->nslots, sizeof *w->best);
  return w;
}

/* Leave the block of best's searches for block B. */
static void enter_block(Worker *w, long b) {
  if (w->block == b)
    return;
  for (int k = 0; k < w->s->nslots; k++) {
    eval_free(w->best[k]);
    w->best[k] = NULL;
  }
  w->block = b;
}

static void worker_free(Worker *w) {
  const Study *s = w->s;
  long n = (long)s->ncms * s->nstuples * s->nslots * DES_COUNT *
           (STITCH_COUNT + 1);
  for (long i = 0; i < n; i++)
    plan_free(w->plans[i]);
  free(w->plans);
  enter_block(w, -1);
  free(w->best);
  free(w);
}

/* What design best minimizes in study S: its first objective the search
 * has (area is the architecture's, whatever the schedule), else
 * latency. */
static SearchObjective best_objective(const Study *s) {
  SearchObjective o;
  for (int k = 0; k < s->nobjectives; k++) {
    const char *name = figure_objective(s->objectives[k]);
    if (name && search_objective_from_name(name, &o))
      return o;
  }
  return SO_LATENCY;
}

/* Design best: the schedule the search finds for the study's objective
 * in SH under the point's options OV, as `eval --design best --objective`
 * prices it -- searched once in the worker's block (its slot SLOT). */
static const Eval *price_best(Worker *w, int slot, const Cascade *c,
                              const StudyShape *sh, const Arch *arch,
                              const ModelOverrides *ov, Diag *diag) {
  if (w->best[slot]) {
    w->reused++;
    return w->best[slot];
  }
  /* Points at other bandwidths and clocks price the same candidate
   * groups: their bills are kept (search.h's GroupMemo). */
  SearchControl ctl = {.groups = w->groups};
  SearchResult *r = search_best_ctl(c, sh->s, arch, sh->pairs, ov,
                                    best_objective(w->s), &ctl, w->memo,
                                    diag);
  w->searches++;
  if (!r)
    return NULL;
  w->best[slot] = r->best; /* kept: the search lets go of it */
  r->best = NULL;
  search_free(r);
  return w->best[slot];
}

/* One evaluation: design DS of shape (CM, ST, SLOT) on ARCH with options
 * O; NULL with DIAG set when the model cannot price it. *OWN: what the
 * caller frees (NULL where the worker keeps it: best's). */
static const Eval *price(Worker *w, int cm, int st, int slot,
                         const DesignStitch *ds, const Arch *arch,
                         const ModelOverrides *ov, Eval **own, Diag *diag) {
  const Study *s = w->s;
  const StudyShape *sh = study_shape(s, cm, st, slot);
  const Cascade *c = s->cascades[s->cms[cm].cascade].c;
  bool decode = slot == SLOT_DECODE && ov->state_io < 0;
  *own = NULL;
  if (ds->design == DESIGN_BEST) {
    ModelOverrides b = *ov;
    if (decode)
      b.state_io = 1; /* as below */
    return price_best(w, slot, c, sh, arch, &b, diag);
  }
  ModelOpts o = model_opts_with(ov, ds->design);
  if (decode)
    o.state_io = true; /* a decode step reads and writes its state */
  if (ds->stitch >= 0)
    o.stitch = (Stitcher)ds->stitch;
  long key = ((((long)cm * s->nstuples + st) * s->nslots + slot) * DES_COUNT +
              ds->design) *
                 (STITCH_COUNT + 1) +
             (ds->stitch + 1);
  /* A plan depends on the options only through the stitcher. */
  if (!w->plans[key]) {
    w->plans[key] = model_plan(c, sh->s, sh->pairs, ds->design, &o, diag);
    if (!w->plans[key])
      return NULL;
  }
  return *own = model_eval_memo(c, sh->s, arch, sh->pairs, ds->design,
                                plan_copy(c, w->plans[key]), &o, w->memo,
                                diag);
}

/* Each component role's energy figure and area figure (FIG_COUNT: none;
 * off-chip memory has no area), one row per role. */
static const struct {
  const char *role;
  Figure energy, area;
} roles[] = {{"dram", FIG_E_DRAM, FIG_COUNT},
             {"buffer", FIG_E_BUFFER, FIG_A_BUFFER},
             {"staging", FIG_E_BUFFER, FIG_A_BUFFER},
             {"registers", FIG_E_REGISTERS, FIG_A_REGISTERS},
             {"level", FIG_E_REGISTERS, FIG_A_REGISTERS},
             {"matrix", FIG_E_MATRIX, FIG_A_MATRIX},
             {"vector", FIG_E_VECTOR, FIG_A_VECTOR},
             {"feeder", FIG_E_FEEDER, FIG_A_FEEDER}};
enum { NROLES = sizeof roles / sizeof roles[0] };

/* Accumulate K x EV's figures and component energies into R. */
static void add_eval(PointResult *r, const Arch *a, const Eval *ev, double k) {
  r->fig[FIG_LATENCY] += k * ev->seconds;
  r->fig[FIG_ENERGY] += k * ev->energy_pj * 1e-12;
  r->fig[FIG_TRAFFIC] += k * (ev->read + ev->write);
  r->fig[FIG_INTER] += k * ev->inter;
  r->fig[FIG_INTRA] += k * ev->intra;
  r->fig[FIG_OPS] += k * ev->ops;
  Component cs[SWEEP_MAX_COMPONENTS];
  int n = report_components(a, ev, cs);
  for (int i = 0; i < n; i++) {
    double e = k * cs[i].energy_j;
    r->component_j[i] += e;
    for (int j = 0; j < NROLES; j++)
      if (strcmp(cs[i].role, roles[j].role) == 0)
        r->fig[roles[j].energy] += e;
  }
}

/* The area figures of architecture A: its total, by role and by class. */
static void add_area(PointResult *r, const Arch *a) {
  Component cs[SWEEP_MAX_COMPONENTS];
  int n = report_components(a, NULL, cs);
  r->fig[FIG_AREA] = arch_area(a);
  for (int j = 0; j < NROLES; j++)
    if (roles[j].area != FIG_COUNT)
      r->fig[roles[j].area] = a->area.given ? 0 : NAN;
  for (int j = 0; j < NROLES; j++)
    for (int i = 0; i < n && roles[j].area != FIG_COUNT; i++)
      if (strcmp(cs[i].role, roles[j].role) == 0)
        r->fig[roles[j].area] += cs[i].area_mm2;
  double cls[AREA_CLASS_COUNT];
  arch_area_by_class(a, cls);
  static const Figure by_class[] = {FIG_A_COMPUTE, FIG_A_NONLINEAR,
                                    FIG_A_INTERCONNECT, FIG_A_MEMORY};
  _Static_assert(sizeof by_class / sizeof by_class[0] == AREA_CLASS_COUNT,
                 "a column per area class");
  for (int c = 0; c < AREA_CLASS_COUNT; c++)
    r->fig[by_class[c]] = cls[c];
}

/* Price one point: a phase is one evaluation, a scenario L layers of a
 * prefill and G decode steps. */
static void price_point(Worker *w, long point, PointResult *r) {
  const Study *s = w->s;
  long at[DIM_COUNT];
  study_point(s, point, at);
  memset(r, 0, sizeof *r);
  int cm = (int)at[DIM_CASCADE], combo = (int)at[DIM_COMBO];
  int st = s->combo_s[combo], pt = s->combo_p[combo];
  const Arch *arch = s->variant[at[DIM_ARCH] * s->nptuples + pt];
  const DesignStitch *ds = &s->ds[at[DIM_DESIGN]];
  const ModelOverrides *ov = &s->ocombo[at[DIM_OPTIONS]];
  const Workload *wl = &s->workloads[at[DIM_WORKLOAD]];
  Diag d = {0};
  const Eval *pre = NULL, *dec = NULL;
  Eval *own_pre = NULL, *own_dec = NULL;
  enter_block(w, point / s->dim[DIM_WORKLOAD]);
  if (wl->kind != WL_DECODE)
    pre = price(w, cm, st, wl->prompt_slot, ds, arch, ov, &own_pre, &d);
  if (wl->kind != WL_PREFILL && !d.failed)
    dec = price(w, cm, st, SLOT_DECODE, ds, arch, ov, &own_dec, &d);
  if (d.failed) {
    size_t n = strlen(d.msg) < sizeof r->error ? strlen(d.msg)
                                               : sizeof r->error - 1;
    memcpy(r->error, d.msg, n);
    r->error[n] = 0;
    for (int f = 0; f < FIG_COUNT; f++)
      r->fig[f] = NAN;
  } else if (wl->kind == WL_SCENARIO) {
    double layers = wl->layers;
    if (!layers)
      sizes_value(&s->cms[cm].preset->sizes, "n_layer", &layers);
    add_eval(r, arch, pre, layers);
    add_eval(r, arch, dec, layers * wl->generate);
    r->fig[FIG_GROUPS] = pre->ngroups;
  } else {
    const Eval *ev = pre ? pre : dec;
    add_eval(r, arch, ev, 1);
    r->fig[FIG_GROUPS] = ev->ngroups;
  }
  if (!d.failed) {
    add_area(r, arch);
    r->fig[FIG_EDP] = r->fig[FIG_ENERGY] * r->fig[FIG_LATENCY];
  }
  eval_free(own_pre);
  eval_free(own_dec);
}

/* ---- threads ----
 *
 * Every thread, the caller's too, prices under fatal_catch (util.h): a
 * fatal error in one (memory running out) stops them all at their next
 * chunk, and the caller, once it has joined them, ends the run with it. */

/* How the threads share the points: chunks of CHUNK consecutive points,
 * or, in a study with design best, runs of consecutive points whose
 * searches price the same candidate groups to the same bills (one
 * cascade and model, settings and architecture but for its bandwidths
 * and clock: search.h's GroupMemo), so that one thread makes a run's
 * bills in its first, full searches while another makes another run's --
 * at most RUN_MAX points, and a thread's even share, at a time. */
enum { CHUNK = 8, RUN_MAX = 64 };

typedef struct Pool {
  const Study *s;
  MapMemo *memo;
  GroupMemo *groups;
  long lo, hi;
  PointResult *res;
  pthread_mutex_t claim; /* guards NEXT */
  long next;
  int *arch_class; /* per architecture variant: the first variant equal
                      to it but for its bandwidths and clock; NULL: no
                      runs, chunks */
  long run_max;
  atomic_long done;
  atomic_long searches, reused; /* the workers' counts */
  SweepProgress progress;
  void *arg;
  FatalRecord failure;
} Pool;

/* Do points A and B share a run: one cascade and model, settings tuple
 * and architecture class? */
static bool same_run(const Pool *p, long a, long b) {
  const Study *s = p->s;
  long at[DIM_COUNT], bt[DIM_COUNT];
  study_point(s, a, at);
  study_point(s, b, bt);
  int pa = s->combo_p[at[DIM_COMBO]], pb = s->combo_p[bt[DIM_COMBO]];
  return at[DIM_CASCADE] == bt[DIM_CASCADE] &&
         s->combo_s[at[DIM_COMBO]] == s->combo_s[bt[DIM_COMBO]] &&
         p->arch_class[at[DIM_ARCH] * s->nptuples + pa] ==
             p->arch_class[bt[DIM_ARCH] * s->nptuples + pb];
}

/* The next points to price, [*K, *END): false when none is left. */
static bool claim(Pool *p, long *k, long *end) {
  pthread_mutex_lock(&p->claim);
  *k = *end = p->next;
  if (*k < p->hi) {
    *end = *k + 1;
    if (!p->arch_class)
      *end = *k + CHUNK < p->hi ? *k + CHUNK : p->hi;
    else
      while (*end < p->hi && *end - *k < p->run_max && same_run(p, *k, *end))
        (*end)++;
  }
  p->next = *end;
  pthread_mutex_unlock(&p->claim);
  return *k < *end;
}

/* Each architecture variant's class (Pool.arch_class): variants with
 * the same words but for their bandwidths and clock share one, the
 * first's. */
typedef struct Keyed {
  uint64_t hash;
  int variant, nkey;
  uint64_t *key;
} Keyed;

static int by_hash(const void *a, const void *b) {
  const Keyed *x = a, *y = b;
  if (x->hash != y->hash)
    return (x->hash > y->hash) - (x->hash < y->hash);
  return (x->variant > y->variant) - (x->variant < y->variant);
}

static int *arch_classes(const Study *s) {
  int n = s->narchs * s->nptuples;
  Keyed *k = xcalloc((size_t)n + 1, sizeof *k);
  int *cls = xmalloc(((size_t)n + 1) * sizeof *cls);
  for (int v = 0; v < n; v++) {
    k[v].variant = v;
    k[v].nkey = model_arch_key(s->variant[v], &k[v].key);
    uint64_t h = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < k[v].nkey; i++)
      h = (h ^ k[v].key[i]) * 0xff51afd7ed558ccdu;
    k[v].hash = h;
  }
  qsort(k, (size_t)n, sizeof *k, by_hash);
  for (int i = 0; i < n; i++) {
    cls[k[i].variant] = k[i].variant;
    for (int j = i - 1; j >= 0 && k[j].hash == k[i].hash; j--)
      if (k[j].nkey == k[i].nkey &&
          memcmp(k[j].key, k[i].key, (size_t)k[i].nkey * sizeof *k[i].key) ==
              0)
        cls[k[i].variant] = cls[k[j].variant];
  }
  for (int v = 0; v < n; v++)
    free(k[v].key);
  free(k);
  return cls;
}

static void run_chunks(Pool *p, Worker *w, bool report) {
  double last = now_seconds();
  long k, end;
  while (!fatal_failed(&p->failure) && claim(p, &k, &end)) {
    for (long i = k; i < end; i++)
      price_point(w, i, &p->res[i - p->lo]);
    long done = atomic_fetch_add(&p->done, end - k) + (end - k);
    if (report && p->progress && now_seconds() - last > 0.2) {
      last = now_seconds();
      p->progress(done, p->hi - p->lo, p->arg);
    }
  }
}

/* One thread's share: chunks until none is left. */
static void run_share(Pool *p, bool report) {
  Worker *w = worker_new(p->s, p->memo, p->groups);
  run_chunks(p, w, report);
  atomic_fetch_add(&p->searches, w->searches);
  atomic_fetch_add(&p->reused, w->reused);
  worker_free(w);
}

static void run_worker(void *arg) { run_share(arg, false); }
static void run_caller(void *arg) { run_share(arg, true); }

static void *thread_main(void *arg) {
  Pool *p = arg;
  fatal_catch(&p->failure, run_worker, p);
  return NULL;
}

void sweep_eval(const Study *s, long lo, long hi, int threads,
                PointResult *res, SweepProgress progress, void *arg) {
  sweep_eval_counted(s, lo, hi, threads, res, progress, arg, NULL);
}

void sweep_eval_counted(const Study *s, long lo, long hi, int threads,
                        PointResult *res, SweepProgress progress, void *arg,
                        SweepStats *stats) {
  if (threads < 1)
    threads = 1;
  Pool p = {.s = s, .memo = map_memo_new(threads > 1),
            .groups = group_memo_new(threads > 1, GROUP_MEMO_BYTES),
            .lo = lo, .hi = hi, .next = lo, .res = res,
            .progress = progress, .arg = arg};
  pthread_mutex_init(&p.claim, NULL);
  bool best = false;
  for (int d = 0; d < s->nds; d++)
    best = best || s->ds[d].design == DESIGN_BEST;
  if (best) {
    p.arch_class = arch_classes(s);
    long share = (hi - lo + threads - 1) / threads;
    p.run_max = share < CHUNK ? CHUNK : share > RUN_MAX ? RUN_MAX : share;
  }
  atomic_init(&p.done, 0);
  atomic_init(&p.searches, 0);
  atomic_init(&p.reused, 0);
  pthread_t *tid = xcalloc((size_t)threads, sizeof *tid);
  int started = 0;
  for (int t = 1; t < threads; t++)
    if (pthread_create(&tid[started], NULL, thread_main, &p) == 0)
      started++;
  fatal_catch(&p.failure, run_caller, &p);
  for (int t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
  free(tid);
  if (stats) {
    stats->searches = atomic_load(&p.searches);
    stats->reused = atomic_load(&p.reused);
    map_memo_stats(p.memo, &stats->map_hits, &stats->map_misses);
    group_memo_stats(p.groups, &stats->groups);
  }
  map_memo_free(p.memo);
  group_memo_free(p.groups);
  free(p.arch_class);
  pthread_mutex_destroy(&p.claim);
  fatal_rethrow(&p.failure);
  if (progress)
    progress(hi - lo, hi - lo, arg);
}
