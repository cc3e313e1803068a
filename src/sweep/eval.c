/* eval.c — pricing a study's points. A study with design best first
 * runs its searches (each a job the threads claim: below), then prices
 * its points. Each thread takes chunks of consecutive points (neighbours
 * share a cascade, a shape and a buffer), shares the threads' memo of
 * mapping searches, keeps a cache of plans (a plan does not depend on
 * the architecture), reads best's schedules from the searches' table,
 * and writes each point's result into its own slot: the results do not
 * depend on which thread priced what. */
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

/* What a point adds up of one evaluation (add_priced): its figures and
 * each component's energy, in report_components' order. Design best's
 * searches keep this much of each schedule they find. */
typedef struct Priced {
  double seconds, energy_pj, traffic, inter, intra, ops;
  int groups;
  double component_j[SWEEP_MAX_COMPONENTS];
} Priced;

/* Design best's searches: one per block of points (every input but the
 * workload) and shape slot its workloads price, so that a phase and a
 * scenario that price the same slot (a decode step) search it once. */
typedef struct Search {
  long block;
  int slot;
  int cls, next; /* its class, the next search of it (below) or -1 */
  Priced found;  /* the schedule found, unless ERROR says why none was */
  char *error;
  atomic_flag read; /* a point has read it: another reads it again */
} Search;

typedef struct Searches {
  int n, cap;
  Search *job;   /* in point order */
  long block_lo; /* the first block of the points priced */
  int *at;       /* per (block - block_lo) x slot: its search, or -1 */
} Searches;

/* The search of slot SLOT of block B in F, or NULL. */
static Search *search_at(const Searches *f, long b, int slot, int nslots) {
  int j = f->at[(b - f->block_lo) * nslots + slot];
  return j < 0 ? NULL : &f->job[j];
}

/* What one thread keeps between points. */
typedef struct Worker {
  const Study *s;
  MapMemo *memo; /* the threads' */
  GroupMemo *groups; /* the threads' candidate groups of best's searches */
  const Searches *found; /* best's schedules, searched before */
  Plan **plans;  /* per shape, design, stitcher; NULL until needed */
  long reused;   /* best's schedules read again */
} Worker;

static Worker *worker_new(const Study *s, MapMemo *memo, GroupMemo *groups,
                          const Searches *found) {
  Worker *w = xcalloc(1, sizeof *w);
  w->s = s;
  w->memo = memo;
  w->groups = groups;
  w->found = found;
  long n = (long)s->ncms * s->nstuples * s->nslots * DES_COUNT *
           (STITCH_COUNT + 1);
  w->plans = xcalloc((size_t)n + 1, sizeof *w->plans);
  return w;
}

static void worker_free(Worker *w) {
  const Study *s = w->s;
  long n = (long)s->ncms * s->nstuples * s->nslots * DES_COUNT *
           (STITCH_COUNT + 1);
  for (long i = 0; i < n; i++)
    plan_free(w->plans[i]);
  free(w->plans);
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

static Priced priced_of(const Arch *a, const Eval *ev);

/* The options OV at shape slot SLOT: a decode step reads and writes its
 * state, unless the study's options say otherwise. */
static ModelOverrides slot_options(const ModelOverrides *ov, int slot) {
  ModelOverrides o = *ov;
  if (slot == SLOT_DECODE && o.state_io < 0)
    o.state_io = 1;
  return o;
}

/* Search J: design best's schedule for the study's objective in its
 * block's shape at its slot under the block's options, as `eval --design
 * best --objective` prices it. Points at other bandwidths and clocks
 * price the same candidate groups: their bills are kept (search.h's
 * GroupMemo). */
static void run_search(Worker *w, Search *j) {
  const Study *s = w->s;
  long at[DIM_COUNT];
  study_point(s, j->block * s->dim[DIM_WORKLOAD], at);
  int cm = (int)at[DIM_CASCADE], combo = (int)at[DIM_COMBO];
  const StudyShape *sh = study_shape(s, cm, s->combo_s[combo], j->slot);
  const Cascade *c = s->cascades[s->cms[cm].cascade].c;
  const Arch *arch = s->variant[at[DIM_ARCH] * s->nptuples +
                                s->combo_p[combo]];
  ModelOverrides b = slot_options(&s->ocombo[at[DIM_OPTIONS]], j->slot);
  SearchControl ctl = {.groups = w->groups};
  Diag d = {0};
  SearchResult *r = search_best_ctl(c, sh->s, arch, sh->pairs, &b,
                                    best_objective(s), &ctl, w->memo, &d);
  if (!r) {
    j->error = xstrdup(d.msg);
    return;
  }
  j->found = priced_of(arch, r->best);
  search_free(r);
}

/* Design best at slot SLOT of block B: its search's schedule into *OUT;
 * false (DIAG set) where the search found none. */
static bool price_best(Worker *w, long b, int slot, Priced *out,
                       Diag *diag) {
  Search *j = search_at(w->found, b, slot, w->s->nslots);
  if (!j) /* every slot a point prices was searched */
    fatal("sweep: a point reads a search not planned");
  if (atomic_flag_test_and_set(&j->read))
    w->reused++;
  if (j->error) {
    diag->failed = true;
    snprintf(diag->msg, sizeof diag->msg, "%s", j->error);
    return false;
  }
  *out = j->found;
  return true;
}

/* One evaluation: design DS of shape (CM, ST, SLOT) on ARCH with options
 * O, at block BLOCK, into *OUT; false with DIAG set when the model cannot
 * price it. */
static bool price(Worker *w, long block, int cm, int st, int slot,
                  const DesignStitch *ds, const Arch *arch,
                  const ModelOverrides *ov, Priced *out, Diag *diag) {
  const Study *s = w->s;
  const StudyShape *sh = study_shape(s, cm, st, slot);
  const Cascade *c = s->cascades[s->cms[cm].cascade].c;
  if (ds->design == DESIGN_BEST)
    return price_best(w, block, slot, out, diag);
  ModelOverrides so = slot_options(ov, slot);
  ModelOpts o = model_opts_with(&so, ds->design);
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
      return false;
  }
  Eval *ev = model_eval_memo(c, sh->s, arch, sh->pairs, ds->design,
                             plan_copy(c, w->plans[key]), &o, w->memo, diag);
  if (!ev)
    return false;
  *out = priced_of(arch, ev);
  eval_free(ev);
  return true;
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

/* What a point adds up of EV on A (Priced). */
static Priced priced_of(const Arch *a, const Eval *ev) {
  Priced p = {ev->seconds, ev->energy_pj, ev->read + ev->write, ev->inter,
              ev->intra, ev->ops, ev->ngroups, {0}};
  Component cs[SWEEP_MAX_COMPONENTS];
  int n = report_components(a, ev, cs);
  for (int i = 0; i < n; i++)
    p.component_j[i] = cs[i].energy_j;
  return p;
}

/* Accumulate K x P's figures and component energies (on A) into R. */
static void add_priced(PointResult *r, const Arch *a, const Priced *p,
                       double k) {
  r->fig[FIG_LATENCY] += k * p->seconds;
  r->fig[FIG_ENERGY] += k * p->energy_pj * 1e-12;
  r->fig[FIG_TRAFFIC] += k * p->traffic;
  r->fig[FIG_INTER] += k * p->inter;
  r->fig[FIG_INTRA] += k * p->intra;
  r->fig[FIG_OPS] += k * p->ops;
  Component cs[SWEEP_MAX_COMPONENTS];
  int n = report_components(a, NULL, cs);
  for (int i = 0; i < n; i++) {
    double e = k * p->component_j[i];
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
  Priced pre, dec;
  long block = point / s->dim[DIM_WORKLOAD];
  bool ok = true;
  if (wl->kind != WL_DECODE)
    ok = price(w, block, cm, st, wl->prompt_slot, ds, arch, ov, &pre, &d);
  if (wl->kind != WL_PREFILL && ok)
    ok = price(w, block, cm, st, SLOT_DECODE, ds, arch, ov, &dec, &d);
  if (!ok) {
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
    add_priced(r, arch, &pre, layers);
    add_priced(r, arch, &dec, layers * wl->generate);
    r->fig[FIG_GROUPS] = pre.groups;
  } else {
    const Priced *p = wl->kind != WL_DECODE ? &pre : &dec;
    add_priced(r, arch, p, 1);
    r->fig[FIG_GROUPS] = p->groups;
  }
  if (ok) {
    add_area(r, arch);
    r->fig[FIG_EDP] = r->fig[FIG_ENERGY] * r->fig[FIG_LATENCY];
  }
}

/* ---- threads ----
 *
 * Every thread, the caller's too, prices under fatal_catch (util.h): a
 * fatal error in one (memory running out) stops them all at their next
 * job, and the caller, once it has joined them, ends the run with it.
 *
 * First design best's searches, then the points in chunks of CHUNK
 * consecutive ones. Searches of one class -- one cascade and model,
 * settings, architecture but for its bandwidths and clock, options and
 * slot -- price the same candidate groups to the same bills (search.h's
 * GroupMemo): the class's first search, its lead, prices every group in
 * full and makes the bills (on bench/sweep_best.yaml, 30-60 ms each); the
 * rest, its followers, are served from them (1-8 ms), so a follower runs
 * only once its lead is done, and a thread waits only where every search
 * left follows a lead still running. The threads claim leads while fewer
 * than threads + 1 classes are open (Pool.window; open: the lead claimed,
 * and the lead still running or a follower not yet claimed), then the
 * open classes' followers, earliest first: a lead's long serial stretch
 * runs while the other threads work through the short searches of
 * classes already led, and every thread ends within a short search of
 * the others. (A buffer's whole run per thread, before, left one thread
 * 7 % behind the other there.) The window bounds the bills and mapping
 * problems in use at once. */
enum { CHUNK = 8 };

typedef struct Class {
  int lead;    /* its first search */
  int next;    /* its next follower not yet claimed, or -1 */
  bool done;   /* the lead's search has ended */
  bool closed; /* done, and every follower claimed */
} Class;

typedef struct Pool {
  const Study *s;
  MapMemo *memo;
  GroupMemo *groups;
  long lo, hi;
  PointResult *res;
  Searches found;
  Class *cls;
  int ncls, window;
  pthread_mutex_t claim; /* guards what follows, to NEXT */
  pthread_cond_t ready;  /* a lead's search has ended, or a thread failed */
  int next_lead;         /* classes whose lead is claimed: [0, next_lead) */
  int first_open, open;  /* the first class not closed; those open */
  int claimed, ended;    /* searches claimed, and ended */
  long next;             /* the next point to price */
  atomic_long done;      /* searches and points done, for PROGRESS */
  atomic_long reused;    /* the workers' counts */
  SweepProgress progress;
  void *arg;
  FatalRecord failure;
} Pool;

/* ---- the searches and their classes ---- */

/* What class a search is of: its words. */
enum { CLASS_WORDS = 6 };

static void class_words(const Study *s, const int *arch_class, long block,
                        int slot, long *w) {
  long at[DIM_COUNT];
  study_point(s, block * s->dim[DIM_WORKLOAD], at);
  int combo = (int)at[DIM_COMBO];
  w[0] = at[DIM_CASCADE];
  w[1] = s->combo_s[combo];
  w[2] = arch_class[at[DIM_ARCH] * s->nptuples + s->combo_p[combo]];
  w[3] = at[DIM_DESIGN];
  w[4] = at[DIM_OPTIONS];
  w[5] = slot;
}

/* Each architecture variant's class: variants with the same words but
 * for their bandwidths and clock (model_arch_key) share one, the
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

/* Add the search of slot SLOT of block B, unless P has it; in its class
 * (WORDS: each class's, NCLS x CLASS_WORDS; TAIL: each class's last
 * search). */
static void add_search(Pool *p, const int *arch_class, long b, int slot,
                       long **words, int **tail) {
  Searches *f = &p->found;
  int *at = &f->at[(b - f->block_lo) * p->s->nslots + slot];
  if (*at >= 0)
    return;
  long w[CLASS_WORDS];
  class_words(p->s, arch_class, b, slot, w);
  int c = p->ncls - 1; /* the classes of neighbouring points come last */
  while (c >= 0 && memcmp(&(*words)[c * CLASS_WORDS], w, sizeof w) != 0)
    c--;
  if (c < 0)
    c = p->ncls;
  *at = f->n;
  if (f->n == f->cap) {
    f->cap = 2 * f->cap + 16;
    f->job = xrealloc(f->job, (size_t)f->cap * sizeof *f->job);
  }
  Search *j = &f->job[f->n];
  *j = (Search){.block = b, .slot = slot, .cls = c, .next = -1};
  atomic_flag_clear(&j->read);
  if (c == p->ncls) {
    p->ncls++;
    *words = xrealloc(*words, (size_t)p->ncls * sizeof w);
    memcpy(&(*words)[c * CLASS_WORDS], w, sizeof w);
    *tail = xrealloc(*tail, (size_t)p->ncls * sizeof **tail);
    p->cls = xrealloc(p->cls, (size_t)p->ncls * sizeof *p->cls);
    p->cls[c] = (Class){.lead = f->n, .next = -1};
  } else {
    f->job[(*tail)[c]].next = f->n;
  }
  (*tail)[c] = f->n++;
}

/* The searches the points [lo, hi) of P read (design best's), in point
 * order, and their classes. */
static void plan_searches(Pool *p) {
  const Study *s = p->s;
  long per = s->dim[DIM_WORKLOAD];
  Searches *f = &p->found;
  f->block_lo = p->lo / per;
  long nat = (p->hi > p->lo ? (p->hi - 1) / per - f->block_lo + 1 : 0) *
             s->nslots;
  f->at = xmalloc(((size_t)nat + 1) * sizeof *f->at);
  for (long i = 0; i < nat; i++)
    f->at[i] = -1;
  int *arch_class = arch_classes(s);
  long *words = NULL;
  int *tail = NULL;
  for (long point = p->lo; point < p->hi; point++) {
    long at[DIM_COUNT];
    study_point(s, point, at);
    if (s->ds[at[DIM_DESIGN]].design != DESIGN_BEST)
      continue;
    const Workload *wl = &s->workloads[at[DIM_WORKLOAD]];
    if (wl->kind != WL_DECODE)
      add_search(p, arch_class, point / per, wl->prompt_slot, &words, &tail);
    if (wl->kind != WL_PREFILL)
      add_search(p, arch_class, point / per, SLOT_DECODE, &words, &tail);
  }
  for (int c = 0; c < p->ncls; c++)
    p->cls[c].next = f->job[p->cls[c].lead].next;
  free(arch_class);
  free(words);
  free(tail);
}

static void free_searches(Pool *p) {
  for (int j = 0; j < p->found.n; j++)
    free(p->found.job[j].error);
  free(p->found.job);
  free(p->found.at);
  free(p->cls);
}

/* ---- claiming ---- */

static void close_class(Pool *p, int c) {
  p->cls[c].closed = true;
  p->open--;
  while (p->first_open < p->next_lead && p->cls[p->first_open].closed)
    p->first_open++;
}

static int claim_lead(Pool *p) {
  p->open++;
  p->claimed++;
  return p->cls[p->next_lead++].lead;
}

/* Under the lock: the next search to run, or -1 where none can run now:
 * a lead while fewer than WINDOW classes are open, else a follower of the
 * earliest open class whose lead is done, else a lead all the same. */
static int next_search(Pool *p) {
  if (p->next_lead < p->ncls && p->open < p->window)
    return claim_lead(p);
  for (int c = p->first_open; c < p->next_lead; c++) {
    Class *k = &p->cls[c];
    if (!k->done || k->next < 0)
      continue;
    int j = k->next;
    k->next = p->found.job[j].next;
    p->claimed++;
    if (k->next < 0)
      close_class(p, c);
    return j;
  }
  return p->next_lead < p->ncls ? claim_lead(p) : -1;
}

/* The next search to run, waiting for a lead where every search left
 * follows one still running; -1 when none is left (or a thread failed). */
static int claim_search(Pool *p) {
  pthread_mutex_lock(&p->claim);
  int j = -1;
  while (!fatal_failed(&p->failure) && p->claimed < p->found.n &&
         (j = next_search(p)) < 0)
    pthread_cond_wait(&p->ready, &p->claim);
  pthread_mutex_unlock(&p->claim);
  return j;
}

/* Search J has ended: its class's followers may run. */
static void search_ended(Pool *p, int j) {
  pthread_mutex_lock(&p->claim);
  int c = p->found.job[j].cls;
  Class *k = &p->cls[c];
  if (k->lead == j) {
    k->done = true;
    if (k->next < 0)
      close_class(p, c);
  }
  p->ended++;
  pthread_cond_broadcast(&p->ready);
  pthread_mutex_unlock(&p->claim);
}

/* Wait until every search has ended (the points read them); false if a
 * thread failed. */
static bool searches_ended(Pool *p) {
  pthread_mutex_lock(&p->claim);
  while (!fatal_failed(&p->failure) && p->ended < p->found.n)
    pthread_cond_wait(&p->ready, &p->claim);
  pthread_mutex_unlock(&p->claim);
  return !fatal_failed(&p->failure);
}

/* The next points to price, [*K, *END): false when none is left. */
static bool claim_points(Pool *p, long *k, long *end) {
  pthread_mutex_lock(&p->claim);
  *k = p->next;
  *end = *k + CHUNK < p->hi ? *k + CHUNK : p->hi;
  p->next = *end > *k ? *end : *k;
  pthread_mutex_unlock(&p->claim);
  return *k < *end;
}

/* Count N more jobs done (searches or points) and, on the caller's
 * thread, tell PROGRESS every 0.2 s (in points: a search counts as one). */
static void tick(Pool *p, long n, bool report, double *last) {
  long done = atomic_fetch_add(&p->done, n) + n;
  if (report && p->progress && now_seconds() - *last > 0.2) {
    *last = now_seconds();
    long points = p->hi - p->lo, all = points + p->found.n;
    p->progress(done * points / (all ? all : 1), points, p->arg);
  }
}

/* One thread's share: searches, then points, until none is left. */
static void run_share(Pool *p, bool report) {
  Worker *w = worker_new(p->s, p->memo, p->groups, &p->found);
  double last = now_seconds();
  for (int j; (j = claim_search(p)) >= 0; tick(p, 1, report, &last)) {
    run_search(w, &p->found.job[j]);
    search_ended(p, j);
  }
  long k, end;
  while (searches_ended(p) && claim_points(p, &k, &end)) {
    for (long i = k; i < end; i++)
      price_point(w, i, &p->res[i - p->lo]);
    tick(p, end - k, report, &last);
  }
  atomic_fetch_add(&p->reused, w->reused);
  worker_free(w);
}

static void run_worker(void *arg) { run_share(arg, false); }
static void run_caller(void *arg) { run_share(arg, true); }

/* A thread that failed wakes those waiting for a search it ran. */
static void share_caught(Pool *p, void (*fn)(void *)) {
  if (!fatal_catch(&p->failure, fn, p)) {
    pthread_mutex_lock(&p->claim);
    pthread_cond_broadcast(&p->ready);
    pthread_mutex_unlock(&p->claim);
  }
}

static void *thread_main(void *arg) {
  share_caught(arg, run_worker);
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
            .window = threads + 1, .progress = progress, .arg = arg};
  pthread_mutex_init(&p.claim, NULL);
  pthread_cond_init(&p.ready, NULL);
  plan_searches(&p);
  atomic_init(&p.done, 0);
  atomic_init(&p.reused, 0);
  pthread_t *tid = xcalloc((size_t)threads, sizeof *tid);
  int started = 0;
  for (int t = 1; t < threads; t++)
    if (pthread_create(&tid[started], NULL, thread_main, &p) == 0)
      started++;
  share_caught(&p, run_caller);
  for (int t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
  free(tid);
  if (stats) {
    stats->searches = p.found.n;
    stats->reused = atomic_load(&p.reused);
    map_memo_stats(p.memo, &stats->map_hits, &stats->map_misses);
    group_memo_stats(p.groups, &stats->groups);
  }
  map_memo_free(p.memo);
  group_memo_free(p.groups);
  free_searches(&p);
  pthread_cond_destroy(&p.ready);
  pthread_mutex_destroy(&p.claim);
  fatal_rethrow(&p.failure);
  if (progress)
    progress(hi - lo, hi - lo, arg);
}
