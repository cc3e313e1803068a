/* repro.c — running the paper's evaluation and computing its figures. */
#include "repro.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../embed/embed.h"
#include "../preset/preset.h"
#include "../search/search.h"
#include "../workload/workload.h"

/* Context to generated tokens: 1:16, 1:1, 64:1. */
static const Scenario scenarios[REPRO_SCENARIOS] = {
    {"short_context", "short context, long generation", 256, 4096},
    {"similar", "similar lengths", 2048, 2048},
    {"long_context", "long context, short generation", 16384, 256},
};

/* The tasks (a shape's pricing and search, a capacity of the ski slope)
 * run on this many threads, this one among them (the evaluation's goal
 * is a second on two cores: issue 35); each is a pure function of its
 * inputs, so the figures do not depend on how they are shared out. */
enum { MAX_SETS = 64, SEARCH_THREADS = 2 };

typedef struct Run {
  const Cascade *c;
  const Arch *a;
  Diag *d;
  Repro *r;
  const ModelOverrides *opts;
  /* The shapes the evaluation prices and searches: the points repeat
   * some (a model's prefill is its sweep at the same length, a scenario's
   * prefill another point's), and what is priced or searched at a shape
   * is a function of the shape alone, so each is priced and searched
   * once. Listed before any is run; then each shape, and each capacity
   * of the ski slope, is a task the SEARCH_THREADS threads take, the
   * costliest first (next_task, under lock; order: the tasks' order). */
  int nseen, cap_seen, next_task, ntasks;
  struct Seen *seen;
  int *order;
  int at_point[REPRO_MAX_MODELS][PH_COUNT]; /* each point's, in seen */
  int at_e2e[REPRO_SCENARIOS];
  int at_sweep[REPRO_MAX_MODELS][REPRO_LENGTHS];
  pthread_mutex_t lock; /* guards next_task, done and the progress hook */
  const Preset *presets[REPRO_MAX_MODELS]; /* NULL: no model */
  int model_layers; /* the first model's n_layer (--layers may differ) */
  /* The settings of every point: the caller's others, then B and I. */
  int nsets;
  Setting sets[MAX_SETS + 2];
  const ReproSetup *su; /* for its progress hook */
  int done;             /* the tasks done */
  double t0;
} Run;

/* One more task done: the setup's progress hook hears of it (from one
 * thread at a time). */
static void tick(Run *x) {
  pthread_mutex_lock(&x->lock);
  x->done++;
  if (x->su->progress)
    x->su->progress(x->su->progress_ctx, (double)x->done / x->ntasks,
                    now_seconds() - x->t0);
  pthread_mutex_unlock(&x->lock);
}

/* Model M's sizes, or none when the spec's own sizes are all there is. */
static const ModelSizes *model_sizes(const Run *x, int m) {
  return x->presets[m] ? &x->presets[m]->sizes : NULL;
}

static Shape *bind(Run *x, int model, double tokens) {
  x->sets[x->nsets] = (Setting){"B", x->r->batch};
  x->sets[x->nsets + 1] = (Setting){"I", tokens};
  return shape_bind(x->c, model_sizes(x, model), x->sets, x->nsets + 2, true,
                    x->d);
}

/* A point of the evaluation: the cascade bound at some batch and token
 * count, and its edges classified at that binding. */
typedef struct Point {
  Shape *s;
  Pair *pairs;
} Point;

/* Model MODEL at TOKENS tokens into *P: false (D set) when it cannot be
 * bound. Free it with point_free. */
static bool point_at(Run *x, int model, double tokens, Point *p) {
  p->s = bind(x, model, tokens);
  p->pairs = p->s ? fusion_classify(x->c, p->s) : NULL;
  return p->s != NULL;
}

static void point_free(Point *p) {
  free(p->pairs);
  shape_free(p->s);
}

/* The three ways the tables read a design: achieved and ideal traffic
 * with the groups in sequence, and achieved with them pipelined. */
typedef enum { WAY_ACHIEVED, WAY_IDEAL, WAY_PIPELINED, WAY_COUNT } Way;
static const struct {
  Accounting acc;
  Compose comp;
} WAYS[] = {{ACCOUNT_ACHIEVED, COMPOSE_SEQUENTIAL},
            {ACCOUNT_IDEAL, COMPOSE_SEQUENTIAL},
            {ACCOUNT_ACHIEVED, COMPOSE_PIPELINED}};
_Static_assert(sizeof WAYS / sizeof WAYS[0] == WAY_COUNT, "a row per way");

/* Design D at point PT on A, way W, its mapping searches through MEMO
 * (NULL and DIAG set where it fails). */
static Eval *price(const Run *x, const Arch *a, const Point *pt, Design d,
                   Way w, MapMemo *memo, Diag *diag) {
  ModelOpts o = model_opts_with(x->opts, d);
  o.accounting = WAYS[w].acc;
  o.compose = WAYS[w].comp;
  Plan *p = model_plan(x->c, pt->s, pt->pairs, d, &o, diag);
  return p ? model_eval_memo(x->c, pt->s, a, pt->pairs, d, p, &o, memo,
                             diag)
           : NULL;
}

double repro_unit_peak(const Arch *a, int u) {
  double best = 0;
  for (int k = 0; k < OPC_COUNT; k++)
    best = fmax(best, arch_peak(a, u, (OpClass)k));
  return best;
}

/* The seconds E's operations take on its unit at the unit's peak rate for
 * each op class: what the unit could do in the best case. */
static double peak_seconds(const Arch *a, const EinsumEval *e) {
  double t = 0;
  for (int k = 0; k < OPC_COUNT; k++) {
    double peak = arch_peak(a, e->unit, (OpClass)k);
    if (e->work.ops[k] > 0 && peak > 0)
      t += e->work.ops[k] / peak;
  }
  return t;
}

static void keep_timeline(const Run *x, const Eval *ev, Timeline *tl) {
  double clock = x->a->clock_hz;
  tl->n = ev->n;
  tl->seg = xcalloc((size_t)ev->n + 1, sizeof *tl->seg);
  tl->seconds = ev->seconds;
  for (int i = 0; i < ev->n; i++) {
    const EinsumEval *e = &ev->e[i];
    Segment *s = &tl->seg[i];
    s->einsum = e->einsum;
    s->unit = e->unit;
    s->start = e->start / clock;
    s->end = e->end / clock;
    double dur = s->end - s->start;
    double bytes = e->read + e->write;
    s->compute_util = dur > 0 ? peak_seconds(x->a, e) / dur : 0;
    s->memory_util = dur > 0 ? bytes / dur / x->r->bandwidth : 0;
    s->intensity = bytes > 0 ? e->work.total / bytes : INFINITY;
    s->perf = dur > 0 ? e->work.total / dur : 0;
  }
}

/* A shape of the evaluation, priced and searched once (Run.seen). */
typedef struct Seen {
  Point pt;      /* the shape */
  bool ways;     /* a point's or a scenario's: every design priced every
                    way (else achieved alone: a sweep's length) */
  bool ok;       /* priced and searched */
  Diag d;        /* why not */
  double seconds[WAY_COUNT][DES_COUNT]; /* each design's latency each way */
  Searched found;
} Seen;

/* The shape X lists at S, or -1. */
static int seen_at(const Run *x, const Shape *s) {
  size_t nr = (size_t)x->c->nranks, ns = (size_t)x->c->nsyms;
  for (int k = 0; k < x->nseen; k++) {
    const Seen *v = &x->seen[k];
    if (memcmp(v->pt.s->size, s->size, nr * sizeof *s->size) == 0 &&
        memcmp(v->pt.s->sym, s->sym, ns * sizeof *s->sym) == 0)
      return k;
  }
  return -1;
}

/* List model MODEL at TOKENS tokens, once per shape, into *AT (its place
 * in X's seen), priced every way where WAYS; false (D set) when it cannot
 * be bound. */
static bool want_shape(Run *x, int model, double tokens, bool ways, int *at) {
  Point pt;
  if (!point_at(x, model, tokens, &pt))
    return false;
  *at = seen_at(x, pt.s);
  if (*at >= 0) {
    point_free(&pt);
  } else {
    Seen add = {.pt = pt};
    VEC_PUSH(x->seen, x->nseen, x->cap_seen, add);
    *at = x->nseen - 1;
  }
  x->seen[*at].ways |= ways;
  return true;
}

/* Every shape the evaluation reads: each model's phases, the scenarios'
 * prefills, each model's sweep lengths. */
static bool want_shapes(Run *x) {
  Repro *r = x->r;
  bool ok = true;
  for (int m = 0; ok && m < r->nmodels; m++)
    for (int p = 0; ok && p < PH_COUNT; p++)
      ok = want_shape(x, m, p == PH_PREFILL ? r->prefill : 1, true,
                      &x->at_point[m][p]);
  for (int sc = 0; ok && r->layers[0] > 0 && sc < REPRO_SCENARIOS; sc++)
    ok = want_shape(x, 0, r->scenarios[sc].prompt, true, &x->at_e2e[sc]);
  for (int m = 0; ok && m < r->nmodels; m++)
    for (int k = 0; ok && k < REPRO_LENGTHS; k++)
      ok = want_shape(x, m, ldexp(1, k), false, &x->at_sweep[m][k]);
  return ok;
}

/* The point figures of the designs E (each way) at shape K, wherever the
 * evaluation reads that shape as a model's phase. */
static void keep_point(Run *x, int k, Eval *e[WAY_COUNT][DES_COUNT]) {
  for (int m = 0; m < x->r->nmodels; m++)
    for (int ph = 0; ph < PH_COUNT; ph++) {
      if (x->at_point[m][ph] != k)
        continue;
      for (int d = 0; d < DES_COUNT; d++) {
        const Eval *a = e[WAY_ACHIEVED][d], *i = e[WAY_IDEAL][d],
                   *p = e[WAY_PIPELINED][d];
        Result *r = &x->r->res[m][ph][d];
        r->seconds = a->seconds;
        r->seconds_ideal = i->seconds;
        r->seconds_pipelined = p->seconds;
        r->inter = a->inter;
        r->intra = a->intra;
        r->ideal_inter = a->ideal_inter;
        r->ideal_intra = a->ideal_intra;
        r->read = a->read;
        r->write = a->write;
        r->energy_j = a->energy_pj * 1e-12;
        r->level_j = xcalloc((size_t)x->a->nlevels, sizeof *r->level_j);
        for (int l = 0; l < x->a->nlevels; l++)
          r->level_j[l] = a->level[l].energy_pj * 1e-12;
        r->ops_j = a->energy_ops * 1e-12;
        r->groups = a->ngroups;
        if (m == 0) {
          keep_timeline(x, a, &x->r->timeline[ph][d]);
          keep_timeline(x, i, &x->r->ideal_timeline[ph][d]);
        }
      }
    }
}

/* best (searched) at shape V: the schedule `search` finds for latency
 * under the setup's options (sequential, achieved: reproduce refuses the
 * others), given the designs' plans as priced achieved (NAMED, per
 * design: the search's named designs, which it does not price again);
 * false (V's diag set) when it failed. */
static bool search_one(Run *x, Seen *v, Eval *const named[DES_COUNT],
                       MapMemo *memo) {
  const Eval *given[DES_COUNT];
  for (int d = 0; d < DES_COUNT; d++)
    given[d] = named[d];
  SearchControl ctl = {.named = given};
  SearchResult *r = search_best_ctl(x->c, v->pt.s, x->a, v->pt.pairs,
                                    x->opts, SO_LATENCY, &ctl, memo,
                                    &v->d);
  if (r)
    v->found = (Searched){r->best->seconds, r->bound->seconds,
                          r->best->energy_pj * 1e-12,
                          r->best->read + r->best->write, r->best->ngroups,
                          r->from};
  search_free(r);
  return r != NULL;
}

/* Shape K: every design priced (every way where the evaluation reads
 * them, else achieved alone), then the shape searched. Its mapping
 * problems are its own: another shape's sizes pose others (a memo shared
 * by the tasks answered 22 % of its lookups, its table and stored
 * mappings out of cache, under a lock), so they share a memo of their
 * own, dropped with the task. */
static bool shape_task(Run *x, int k) {
  Seen *v = &x->seen[k];
  Eval *e[WAY_COUNT][DES_COUNT] = {{NULL}};
  MapMemo *memo = map_memo_new(false);
  bool ok = true;
  for (int d = 0; ok && d < DES_COUNT; d++)
    for (int w = 0; ok && w < (v->ways ? WAY_COUNT : 1); w++) {
      ok = (e[w][d] =
                price(x, x->a, &v->pt, (Design)d, (Way)w, memo, &v->d));
      if (ok)
        v->seconds[w][d] = e[w][d]->seconds;
    }
  if (ok && v->ways)
    keep_point(x, k, e);
  ok = ok && search_one(x, v, e[WAY_ACHIEVED], memo);
  for (int w = 0; w < WAY_COUNT; w++)
    for (int d = 0; d < DES_COUNT; d++)
      eval_free(e[w][d]);
  map_memo_free(memo);
  return ok;
}

/* The ski slope at capacity K: every design's prefill (the first model)
 * with the fusion level's capacity at 2^(REPRO_SLOPE_LO + K) times the
 * architecture's. A point the design cannot run (a tile larger than the
 * level) is NAN, and so is a capacity past a staging level's, which
 * passes the fusion level's traffic through and must hold what it holds
 * (arch.h). */
static void slope_task(Run *x, int k) {
  Repro *r = x->r;
  const Point *pt = &x->seen[x->at_point[0][PH_PREFILL]].pt;
  int f = x->a->fusion_level;
  Arch *v = arch_with_fusion_level(x->a, f);
  v->levels[f].capacity = ldexp(x->a->levels[f].capacity, REPRO_SLOPE_LO + k);
  r->slope_capacity[k] = v->levels[f].capacity;
  int at;
  bool room = arch_fusion_problem(v, f, &at) == FUSION_OK;
  MapMemo *memo = map_memo_new(false); /* the designs share problems */
  for (int d = 0; d < DES_COUNT; d++) {
    Diag quiet = {0};
    Eval *a =
        room ? price(x, v, pt, (Design)d, WAY_ACHIEVED, memo, &quiet) : NULL;
    r->slope_bytes[k][d] = a ? a->read + a->write : NAN;
    r->slope_seconds[k][d] = a ? a->seconds : NAN;
    eval_free(a);
  }
  map_memo_free(memo);
  arch_free(v);
}

/* Take tasks, the costliest first, until none is left (each thread's
 * loop); after a failure none is taken. */
static void *run_tasks(void *arg) {
  Run *x = arg;
  for (;;) {
    pthread_mutex_lock(&x->lock);
    int k = x->next_task < x->ntasks ? x->order[x->next_task++] : -1;
    pthread_mutex_unlock(&x->lock);
    if (k < 0)
      return NULL;
    if (k < x->nseen) {
      x->seen[k].ok = shape_task(x, k);
      if (!x->seen[k].ok) {
        pthread_mutex_lock(&x->lock);
        x->next_task = x->ntasks;
        pthread_mutex_unlock(&x->lock);
      }
    } else {
      slope_task(x, k - x->nseen);
    }
    tick(x);
  }
}

/* A task's guessed cost, to start the costliest first (so that neither
 * thread is left with a long one at the end): a shape's elements, over
 * every tensor (a search's cost grows with the sizes: the candidate tiles
 * and the mappings' loops); the ski slope's points (a design each, no
 * search) last. */
static double task_weight(const Run *x, int k) {
  if (k >= x->nseen)
    return 0;
  double n = 0;
  for (int t = 0; t < x->c->ntensors; t++)
    n += shape_tensor_elems(x->seen[k].pt.s, t);
  return n;
}

/* The tasks in the order they are taken (X's order), the heaviest
 * first, each shape before the slope's points (equal weights keep the
 * list's order). */
typedef struct Weighed {
  double w;
  int k;
} Weighed;

static int heaviest_first(const void *pa, const void *pb) {
  const Weighed *a = pa, *b = pb;
  if (a->w != b->w)
    return a->w < b->w ? 1 : -1;
  return (a->k > b->k) - (a->k < b->k);
}

static void order_tasks(Run *x) {
  Weighed *t = xmalloc(((size_t)x->ntasks + 1) * sizeof *t);
  for (int k = 0; k < x->ntasks; k++)
    t[k] = (Weighed){task_weight(x, k), k};
  qsort(t, (size_t)x->ntasks, sizeof *t, heaviest_first);
  x->order = xmalloc(((size_t)x->ntasks + 1) * sizeof *x->order);
  for (int k = 0; k < x->ntasks; k++)
    x->order[k] = t[k].k;
  free(t);
}

/* The figures the shapes' tasks left in them, where the evaluation reads
 * them: each sweep length's latencies, each scenario end to end (L layers
 * x (prefill of I0 tokens + G decode steps), the first model), best
 * (searched); false (D set, the first failure in the list's order) when
 * a task failed. */
static bool take_shapes(Run *x) {
  Repro *r = x->r;
  for (int k = 0; k < x->nseen; k++)
    if (!x->seen[k].ok) {
      *x->d = x->seen[k].d;
      return false;
    }
  for (int m = 0; m < r->nmodels; m++) {
    for (int p = 0; p < PH_COUNT; p++)
      r->best[m][p] = x->seen[x->at_point[m][p]].found;
    for (int k = 0; k < REPRO_LENGTHS; k++) {
      const Seen *v = &x->seen[x->at_sweep[m][k]];
      for (int d = 0; d < DES_COUNT; d++)
        r->sweep[m][k][d] = v->seconds[WAY_ACHIEVED][d];
      r->sweep_best[m][k] = v->found.seconds;
    }
  }
  for (int sc = 0; r->layers[0] > 0 && sc < REPRO_SCENARIOS; sc++) {
    const Seen *v = &x->seen[x->at_e2e[sc]];
    double L = r->layers[0], G = r->scenarios[sc].generated;
    for (int d = 0; d < DES_COUNT; d++) {
      const Result *dec = &r->res[0][PH_DECODE][d];
      r->e2e[sc][d] = L * (v->seconds[WAY_ACHIEVED][d] + G * dec->seconds);
      r->e2e_ideal[sc][d] =
          L * (v->seconds[WAY_IDEAL][d] + G * dec->seconds_ideal);
      r->e2e_pipelined[sc][d] =
          L * (v->seconds[WAY_PIPELINED][d] + G * dec->seconds_pipelined);
    }
    r->e2e_best[sc] =
        L * (v->found.seconds + G * r->best[0][PH_DECODE].seconds);
  }
  return true;
}

double repro_searched_gap(const Searched *s) {
  return s->ideal > 0 ? s->seconds / s->ideal : NAN;
}

/* ---- the figures ---- */

static void target(Repro *r, const char *key, const char *where,
                   const char *what, double paper, double ours,
                   const char *unit) {
  if (r->ntargets == REPRO_MAX_TARGETS)
    return;
  Target *t = &r->targets[r->ntargets++];
  *t = (Target){key, where, "", paper, ours, unit, false};
  snprintf(t->what, sizeof t->what, "%s", what);
}

/* The best of the fusion strategies: Mambalaya's design for that case. */
static double best_of(const double *by_design) {
  double best = INFINITY;
  for (int d = 0; d < DES_COUNT; d++)
    if (design_is_strategy((Design)d))
      best = fmin(best, by_design[d]);
  return best;
}

static double best_result(const Result *res) {
  double v[DES_COUNT];
  for (int d = 0; d < DES_COUNT; d++)
    v[d] = res[d].seconds;
  return best_of(v);
}

static int count_merges(const Cascade *c, const Shape *s) {
  Nodes *m = fusion_merge(c, s);
  int n = 0;
  for (int k = 0; k < m->n; k++)
    n += !one_recurrence(c, m->nodes[k].n, m->nodes[k].einsums);
  nodes_free(m);
  return n;
}

/* §II and §IV: the paper's cascade. */
static void spec_targets(Run *x, Repro *r) {
  const Cascade *c = x->c;
  int gemms = 0;
  for (int i = 0; i < c->neinsums; i++)
    gemms += einsum_is_gemm(c, c->einsums[i]);
  target(r, "cascade.einsums", "§II", "Einsums per Mamba-1 layer", 24,
         c->neinsums, "");
  target(r, "cascade.gemm_like", "§II", "of which GEMM-like", 7, gemms, "");
  const EmbeddedFile *tf = embedded_file("specs/transformer.yaml");
  Diag d = {0};
  Cascade *t = tf ? spec_parse(tf->name, (const char *)tf->data, tf->len, &d)
                  : NULL;
  if (t) {
    int tg = 0;
    for (int i = 0; i < t->neinsums; i++)
      tg += einsum_is_gemm(t, t->einsums[i]);
    target(r, "transformer.einsums", "§II",
           "Einsums per Transformer layer (specs/transformer.yaml)", 8,
           t->neinsums, "");
    target(r, "transformer.gemm_like", "§II", "of which GEMM-like", 6, tg,
           "");
    cascade_free(t);
  }
  Point pt;
  if (!point_at(x, 0, r->prefill, &pt))
    return;
  /* The paper's group counts per strategy (§IV). */
  static const struct {
    Strategy st;
    const char *key;
    double paper;
  } groups[] = {{ST_UNFUSED, "groups.unfused", 24},
                {ST_RI, "groups.ri", 12},
                {ST_RI_RSB, "groups.ri_rsb", 8},
                {ST_RI_RSB_RSP, "groups.ri_rsb_rsp", 3},
                {ST_FULL, "groups.full", 1}};
  for (size_t k = 0; k < sizeof groups / sizeof groups[0]; k++) {
    Plan *p = fusion_plan(c, pt.s, pt.pairs, groups[k].st, STITCH_GREEDY,
                          OBJ_GROUPS, &d);
    char what[64];
    snprintf(what, sizeof what, "fusion groups, %s",
             strategy_name(groups[k].st));
    target(r, groups[k].key, "§IV", what, groups[k].paper, p->ngroups,
           "groups");
    plan_free(p);
  }
  target(r, "merges.count", "§IV",
         "shared-input merges (NEX, X, Delta)", 3, count_merges(c, pt.s), "");
  point_free(&pt);
}

/* Table II, read back from the paper's architecture. */
static void arch_targets(Repro *r, const Arch *a) {
  int mu = arch_unit(a, ROLE_MATRIX), vu = arch_unit(a, ROLE_VECTOR);
  int fu = arch_unit(a, ROLE_FEEDER);
  target(r, "arch.pes", "Table II", "PEs (2D array + 1D array)", 65536 + 256,
         (mu >= 0 ? a->units[mu].pes : 0) + (fu >= 0 ? a->units[fu].pes : 0),
         "");
  target(r, "arch.pes_1d_mode", "Table II", "PEs in the 2D array's 1D mode",
         8192, vu >= 0 ? a->units[vu].pes : 0, "");
  target(r, "arch.clock_ghz", "Table II", "clock", 1.75, a->clock_hz / 1e9,
         "GHz");
  target(r, "arch.dram_gbps", "Table II", "DRAM bandwidth", 2039,
         a->levels[0].bandwidth / 1e9, "GB/s");
  int regs = a->nlevels - 1; /* the registers: innermost, inside the
                               fusion level */
  target(r, "arch.glb_mb", "Table II", "global buffer", 32,
         a->levels[a->fusion_level].capacity / 1048576, "MiB");
  target(r, "arch.registers_mb", "Table II", "registers", 4.25,
         arch_level_role(a, regs) == LEVEL_REGISTERS
             ? a->levels[regs].instances * a->levels[regs].capacity / 1048576
             : 0,
         "MiB");
}

static double pct(double part, double whole) {
  return whole > 0 ? 100 * part / whole : 0;
}

static void evaluation_targets(Repro *r) {
  const Result *pre = r->res[0][PH_PREFILL], *dec = r->res[0][PH_DECODE];
  const Result *u = &pre[DES_UNFUSED];
  double total = u->read + u->write;
  target(r, "unfused.read_share", "Table I", "best unfused: read traffic",
         47.3, pct(u->read, total), "%");
  target(r, "unfused.write_share", "Table I", "best unfused: write traffic",
         52.7, pct(u->write, total), "%");
  target(r, "unfused.inter_share", "Table I",
         "best unfused: inter-Einsum traffic", 99.1, pct(u->inter, total),
         "%");
  target(r, "unfused.intra_share", "Table I",
         "best unfused: intra-Einsum traffic", 0.9, pct(u->intra, total), "%");
  target(r, "ideal.speedup.prefill", "§II",
         "ideal fusion over best unfused, prefill (B=64, I=2048)", 5.79,
         u->seconds / pre[DES_IDEAL].seconds, "x");
  target(r, "ideal.speedup.decode", "§II",
         "ideal fusion over best unfused, decode (B=64, I=1)", 3.8,
         dec[DES_UNFUSED].seconds / dec[DES_IDEAL].seconds, "x");
  target(r, "ideal.ri_rsb_over_ri", "§IV-B",
         "RI+RSb over RI-only, ideal traffic, prefill", 1.18,
         pre[DES_RI].seconds_ideal / pre[DES_RI_RSB].seconds_ideal, "x");

  int lc = 2, sc = 0; /* long-context and short-context scenarios */
  /* The paper's end-to-end speedups of its strategies, sequential and
   * pipelined (Fig. 11). */
  static const struct {
    Design d;
    const char *skey, *pkey;
    double spaper, ppaper;
  } fig11[] = {
      {DES_RI, "speedup.prefill.ri", "speedup.pipelined.ri", 2.72, 3.9},
      {DES_RI_RSB, "speedup.prefill.ri_rsb", "speedup.pipelined.ri_rsb",
       2.99, 4.7},
      {DES_RI_RSB_RSP, "speedup.prefill.ri_rsb_rsp",
       "speedup.pipelined.ri_rsb_rsp", 3.35, 5.9},
      {DES_FULL, "speedup.prefill.full", "speedup.pipelined.full", 4.9,
       6.0},
  };
  for (size_t k = 0; k < sizeof fig11 / sizeof fig11[0]; k++) {
    Design d = fig11[k].d;
    char what[128];
    snprintf(what, sizeof what,
             "%s over unfused, end to end, long context (I0=%g, G=%g)",
             design_label(d), r->scenarios[lc].prompt,
             r->scenarios[lc].generated);
    target(r, fig11[k].skey, "§VI-C", what, fig11[k].spaper,
           r->e2e[lc][DES_UNFUSED] / r->e2e[lc][d], "x");
    snprintf(what, sizeof what, "%s, with parallel pipelining",
             design_label(d));
    target(r, fig11[k].pkey, "§VI-C", what, fig11[k].ppaper,
           r->e2e_pipelined[lc][DES_UNFUSED] / r->e2e_pipelined[lc][d], "x");
  }
  char what[128];
  snprintf(what, sizeof what,
           "RI over unfused, end to end, short context (I0=%g, G=%g)",
           r->scenarios[sc].prompt, r->scenarios[sc].generated);
  target(r, "speedup.decode.ri", "§VI-C", what, 2.23,
         r->e2e[sc][DES_UNFUSED] / r->e2e[sc][DES_RI], "x");

  double lo = INFINITY, hi = 0;
  for (int d = 0; d < DES_COUNT; d++) {
    if (!design_is_strategy((Design)d))
      continue;
    double red = u->inter / pre[d].inter;
    lo = fmin(lo, red);
    hi = fmax(hi, red);
  }
  target(r, "inter_reduction.min", "§VI-C",
         "inter-Einsum traffic reduction of the fused variants, least", 4, lo,
         "x");
  target(r, "inter_reduction.max", "§VI-C",
         "inter-Einsum traffic reduction of the fused variants, most", 34, hi,
         "x");

  double marca = pre[DES_MARCA].seconds, geens = pre[DES_GEENS].seconds;
  target(r, "geens_over_marca.prefill", "§VI-C",
         "Geens-like over MARCA-like, prefill per layer", 3.35, marca / geens,
         "x");
  target(r, "ri_rsb_rsp_over_marca.prefill", "§VI-C",
         "RI+RSb+RSp over MARCA-like, prefill per layer", 4.76,
         marca / pre[DES_RI_RSB_RSP].seconds, "x");
  target(r, "vs_marca.prefill", "abstract",
         "Mambalaya (best variant) over MARCA-like, prefill per layer", 4.9,
         marca / best_result(pre), "x");
  target(r, "vs_marca.decode", "abstract",
         "Mambalaya (best variant) over MARCA-like, generation per layer",
         1.9, dec[DES_MARCA].seconds / best_result(dec), "x");
  target(r, "vs_geens.prefill", "abstract",
         "Mambalaya (best variant) over Geens-like, prefill per layer", 1.5,
         geens / best_result(pre), "x");

  double gm = 0, gg = 0;
  for (int s = 0; s < REPRO_SCENARIOS; s++) {
    double best = best_of(r->e2e[s]);
    gm += log(r->e2e[s][DES_MARCA] / best);
    gg += log(r->e2e[s][DES_GEENS] / best);
  }
  target(r, "vs_marca.e2e_geomean", "§VI-C",
         "end-to-end geomean over the scenarios, over MARCA-like", 3,
         exp(gm / REPRO_SCENARIOS), "x");
  target(r, "vs_geens.e2e_geomean", "§VI-C",
         "end-to-end geomean over the scenarios, over Geens-like", 1.3,
         exp(gg / REPRO_SCENARIOS), "x");
  double prior = fmin(r->e2e[lc][DES_MARCA], r->e2e[lc][DES_GEENS]);
  target(r, "long_context.improvement", "§VI-C",
         "long context: Mambalaya over the better prior accelerator", 1.44,
         prior / best_of(r->e2e[lc]), "x");
  r->targets[r->ntargets - 1].at_least = true;
}

/* ---- best (searched) beside the best variant ---- */

/* A design's latencies where the best variant's figures read them: per
 * layer, prefill and decode, and end to end per scenario. */
typedef struct Lat {
  double pre, dec, e2e[REPRO_SCENARIOS];
} Lat;

/* Where a figure reads its latencies. */
typedef enum { AT_PREFILL, AT_DECODE, AT_E2E_GEOMEAN, AT_LONG_CONTEXT } At;

/* Every figure of evaluation_targets where the best variant appears:
 * VS is the design it is set against (DES_COUNT: the better of MARCA-like
 * and Geens-like). */
static const struct {
  const char *key, *what;
  At at;
  Design vs;
} searched_figures[] = {
    {"vs_marca.prefill", "over MARCA-like, prefill per layer", AT_PREFILL,
     DES_MARCA},
    {"vs_marca.decode", "over MARCA-like, generation per layer", AT_DECODE,
     DES_MARCA},
    {"vs_geens.prefill", "over Geens-like, prefill per layer", AT_PREFILL,
     DES_GEENS},
    {"vs_marca.e2e_geomean", "end-to-end geomean over the scenarios, over "
     "MARCA-like", AT_E2E_GEOMEAN, DES_MARCA},
    {"vs_geens.e2e_geomean", "end-to-end geomean over the scenarios, over "
     "Geens-like", AT_E2E_GEOMEAN, DES_GEENS},
    {"long_context.improvement", "long context, over the better prior "
     "accelerator", AT_LONG_CONTEXT, DES_COUNT},
};

static Lat design_lat(const Repro *r, Design d) {
  Lat l = {r->res[0][PH_PREFILL][d].seconds, r->res[0][PH_DECODE][d].seconds,
           {0}};
  for (int sc = 0; sc < REPRO_SCENARIOS; sc++)
    l.e2e[sc] = r->e2e[sc][d];
  return l;
}

/* The latencies of VS: a design's, or the better prior accelerator's. */
static Lat versus_lat(const Repro *r, Design vs) {
  if (vs != DES_COUNT)
    return design_lat(r, vs);
  Lat m = design_lat(r, DES_MARCA), g = design_lat(r, DES_GEENS);
  Lat l = {fmin(m.pre, g.pre), fmin(m.dec, g.dec), {0}};
  for (int sc = 0; sc < REPRO_SCENARIOS; sc++)
    l.e2e[sc] = fmin(m.e2e[sc], g.e2e[sc]);
  return l;
}

/* The speedup of L over BASE where AT reads it. */
static double speedup_at(At at, const Lat *base, const Lat *l) {
  switch (at) {
  case AT_PREFILL:
    return base->pre / l->pre;
  case AT_DECODE:
    return base->dec / l->dec;
  case AT_E2E_GEOMEAN: {
    double g = 0;
    for (int sc = 0; sc < REPRO_SCENARIOS; sc++)
      g += log(base->e2e[sc] / l->e2e[sc]);
    return exp(g / REPRO_SCENARIOS);
  }
  case AT_LONG_CONTEXT:
    break;
  }
  return base->e2e[REPRO_SCENARIOS - 1] / l->e2e[REPRO_SCENARIOS - 1];
}

/* Each best-variant figure again with best (searched), and both gaps to
 * ideal (latency over ideal's, where the figure reads it). */
static void searched_rows(Repro *r) {
  Lat variant = {best_result(r->res[0][PH_PREFILL]),
                 best_result(r->res[0][PH_DECODE]), {0}};
  Lat best = {r->best[0][PH_PREFILL].seconds, r->best[0][PH_DECODE].seconds,
              {0}};
  for (int sc = 0; sc < REPRO_SCENARIOS; sc++) {
    variant.e2e[sc] = best_of(r->e2e[sc]);
    best.e2e[sc] = r->e2e_best[sc];
  }
  Lat ideal = design_lat(r, DES_IDEAL);
  size_t n = sizeof searched_figures / sizeof searched_figures[0];
  for (size_t k = 0; k < n && r->nsearched < REPRO_MAX_SEARCHED; k++) {
    At at = searched_figures[k].at;
    Lat vs = versus_lat(r, searched_figures[k].vs);
    const Target *t = repro_target(r, searched_figures[k].key);
    SearchedRow *row = &r->searched[r->nsearched++];
    *row = (SearchedRow){searched_figures[k].key, "", t ? t->paper : NAN,
                         t && t->at_least, speedup_at(at, &vs, &variant),
                         speedup_at(at, &vs, &best),
                         speedup_at(at, &best, &ideal),
                         speedup_at(at, &variant, &ideal)};
    snprintf(row->what, sizeof row->what, "%s", searched_figures[k].what);
  }
}

static bool is_file(const char *shipped, const char *name) {
  return shipped && strcmp(shipped, name) == 0;
}

/* The models: the setup's, or the spec's default (and the paper's second
 * one for its spec). */
static bool pick_models(const ReproSetup *su, Run *x, Diag *d) {
  Repro *r = x->r;
  const char *first = su->model ? su->model : su->spec->model;
  r->nmodels = 1;
  r->layers[0] = su->layers;
  if (!first) /* the spec's sizes alone: no model, no second sweep */
    return true;
  const char *names[REPRO_MAX_MODELS] = {first, REPRO_PAPER_SWEEP};
  int n = !su->model && r->paper_spec ? 2 : 1;
  for (int m = 0; m < n; m++) {
    x->presets[m] = preset_find(names[m]);
    if (!x->presets[m]) {
      diag_error(d, NULL, (Loc){0}, "unknown model '%s'", names[m]);
      return false;
    }
    double layers = 0;
    sizes_value(&x->presets[m]->sizes, "n_layer", &layers);
    r->model_names[m] = x->presets[m]->sizes.name;
    if (m == 0)
      x->model_layers = (int)layers;
    if (!(m == 0 && su->layers > 0))
      r->layers[m] = (int)layers;
  }
  r->nmodels = n;
  return true;
}

/* The sizes of the ranks other than B and I, as bound at the prefill
 * point, into R->sizes: what titles the setup besides B and I. */
static void other_sizes(Run *x) {
  Repro *r = x->r;
  Shape *s = bind(x, 0, r->prefill);
  Buf b = {0};
  for (int k = 0; s && k < x->c->nranks; k++) {
    const Rank *rk = &x->c->ranks[k];
    if (strcmp(rk->name, "B") != 0 && strcmp(rk->name, "I") != 0 &&
        rk->same_as < 0 && !rk->window && s->size[k] > 0)
      buf_printf(&b, "%s%s=%lld", b.len ? ", " : "", rk->name,
                 (long long)s->size[k]);
  }
  snprintf(r->sizes, sizeof r->sizes, "%s", b.s ? b.s : "");
  buf_free(&b);
  shape_free(s);
}

/* B and I where no --set gives them: the spec's own sizes (for its
 * model, and the other settings) when it has them, else the paper's. */
static void spec_defaults(const ReproSetup *su, Run *x) {
  Repro *r = x->r;
  double *v[2] = {&r->batch, &r->prefill};
  const double paper[2] = {REPRO_PAPER_BATCH, REPRO_PAPER_PREFILL};
  Diag quiet = {0};
  Shape *s = shape_bind(su->spec, model_sizes(x, 0), x->sets, x->nsets, false,
                        &quiet);
  for (int k = 0; k < 2; k++) {
    if (*v[k] > 0)
      continue;
    int rank = cascade_rank(su->spec, k ? "I" : "B");
    *v[k] = s && s->size[rank] > 0 ? (double)s->size[rank] : paper[k];
  }
  shape_free(s);
}

/* B and I from the settings; the others are passed on to every point,
 * and named in R->settings. */
static bool take_settings(const ReproSetup *su, Run *x, Diag *d) {
  Repro *r = x->r;
  Buf others = {0};
  for (int i = 0; i < su->nsets; i++) {
    const Setting *st = &su->sets[i];
    if (strcmp(st->name, "B") == 0)
      r->batch = st->value;
    else if (strcmp(st->name, "I") == 0)
      r->prefill = st->value;
    else if (x->nsets < MAX_SETS) {
      x->sets[x->nsets++] = *st;
      buf_printf(&others, "%s%s=%g", others.len ? ", " : "", st->name,
                 st->value);
    }
  }
  snprintf(r->settings, sizeof r->settings, "%s", others.s ? others.s : "");
  buf_free(&others);
  for (int k = 0; k < 2; k++)
    if (cascade_rank(su->spec, k ? "I" : "B") < 0) {
      diag_error(d, su->spec->path, (Loc){0},
                 "reproduce varies the batch (rank B) and the sequence "
                 "length (rank I); this spec has no rank %s",
                 k ? "I" : "B");
      return false;
    }
  spec_defaults(su, x);
  return true;
}

/* Run X's tasks on SEARCH_THREADS threads, this one among them. */
static void run_all(Run *x) {
  pthread_t helper[SEARCH_THREADS];
  int n = 0;
  for (int k = 0; k < SEARCH_THREADS - 1; k++)
    n += pthread_create(&helper[n], NULL, run_tasks, x) == 0;
  run_tasks(x);
  for (int k = 0; k < n; k++)
    pthread_join(helper[k], NULL);
}

static void free_shapes(Run *x) {
  for (int k = 0; k < x->nseen; k++)
    point_free(&x->seen[k].pt);
  free(x->seen);
  free(x->order);
}

Repro *repro_run(const ReproSetup *su, Diag *d) {
  double t0 = now_seconds();
  Repro *r = xcalloc(1, sizeof *r);
  Run x = {.c = su->spec, .a = su->arch, .d = d, .r = r, .opts = &su->opts,
           .su = su, .t0 = t0};
  pthread_mutex_init(&x.lock, NULL);
  r->cascade = su->spec;
  r->arch = su->arch;
  r->spec_label = su->spec->path;
  r->arch_label = su->arch->name;
  r->arch_path = su->arch->path;
  r->paper_spec = is_file(su->spec_shipped, REPRO_PAPER_SPEC);
  r->paper_arch = is_file(su->arch_shipped, REPRO_PAPER_ARCH);
  memcpy(r->scenarios, scenarios, sizeof scenarios);
  r->bandwidth = su->arch->levels[0].bandwidth;
  bool ok = pick_models(su, &x, d) && take_settings(su, &x, d);
  r->paper_setup = ok && r->paper_spec && r->paper_arch &&
                   r->model_names[0] &&
                   strcmp(r->model_names[0], REPRO_PAPER_MODEL) == 0 &&
                   r->layers[0] == x.model_layers &&
                   r->batch == REPRO_PAPER_BATCH &&
                   r->prefill == REPRO_PAPER_PREFILL && x.nsets == 0;
  if (ok)
    other_sizes(&x);
  ok = ok && want_shapes(&x);
  if (ok) {
    x.ntasks = x.nseen + REPRO_CAPACITIES;
    order_tasks(&x);
    run_all(&x);
  }
  ok = ok && take_shapes(&x);
  free_shapes(&x);
  pthread_mutex_destroy(&x.lock);
  if (!ok) {
    repro_free(r);
    return NULL;
  }
  if (r->paper_spec)
    spec_targets(&x, r);
  if (r->paper_arch)
    arch_targets(r, su->arch);
  if (r->paper_setup)
    evaluation_targets(r);
  searched_rows(r);
  r->elapsed = now_seconds() - t0;
  return r;
}

void repro_free(Repro *r) {
  if (!r)
    return;
  for (int m = 0; m < REPRO_MAX_MODELS; m++)
    for (int p = 0; p < PH_COUNT; p++)
      for (int d = 0; d < DES_COUNT; d++)
        free(r->res[m][p][d].level_j);
  for (int p = 0; p < PH_COUNT; p++)
    for (int d = 0; d < DES_COUNT; d++) {
      free(r->timeline[p][d].seg);
      free(r->ideal_timeline[p][d].seg);
    }
  free(r);
}

const Target *repro_target(const Repro *r, const char *key) {
  for (int i = 0; i < r->ntargets; i++)
    if (strcmp(r->targets[i].key, key) == 0)
      return &r->targets[i];
  return NULL;
}

const char *repro_workload(const Repro *r, int m) {
  return r->model_names[m] ? r->model_names[m] : r->spec_label;
}

bool repro_has_e2e(const Repro *r) { return r->layers[0] > 0; }
