/* test_invariants.c — what must hold on every shipped cascade and every
 * cascade under tests/specs/good, on every shipped architecture:
 *
 *   - every design prices, with finite, positive latency and traffic;
 *   - `ideal` is a lower bound: no design is faster, in any composition;
 *   - nothing is charged as fitting a buffer it does not fit;
 *   - a memo of mapping searches shared by all these evaluations changes
 *     no figure;
 *   - one plan, one traffic figure: fuse's off-chip elements, eval's ideal
 *     inter-Einsum traffic and the executor's counted bytes agree exactly,
 *     for every strategy and stitcher and every design's own plan, and
 *     the plan runs and computes what the interpreter computes;
 *   - one plan, one price: relabelled, a plan prices the same;
 *   - the search: `best` is never worse than a named design nor better
 *     than `ideal`, and on small cascades it equals every partition of the
 *     documented space priced whole;
 *   - binding by cost: no assignment of a group's Einsums to units takes
 *     less compute time than the one it chooses. */
#include <dirent.h>
#include <stdlib.h>

#include "../../src/arch/arch.h"
#include "../../src/exec/exec.h"
#include "../../src/model/model.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
#include "../../src/search/search.h"
#include "test.h"

/* ---- the cascades ---- */

enum { MAX_SPECS = 64 };

/* Every .yaml under DIR, sorted, appended to LIST. */
static int list_specs(const char *dir, char **list, int n) {
  DIR *d = opendir(dir);
  if (!d)
    return n;
  struct dirent *e;
  int first = n;
  while ((e = readdir(d)) && n < MAX_SPECS) {
    size_t len = strlen(e->d_name);
    if (len > 5 && strcmp(e->d_name + len - 5, ".yaml") == 0) {
      list[n] = xmalloc(strlen(dir) + len + 2);
      sprintf(list[n], "%s/%s", dir, e->d_name);
      n++;
    }
  }
  closedir(d);
  for (int i = first; i < n; i++) /* sorted: a stable order of reports */
    for (int j = i + 1; j < n; j++)
      if (strcmp(list[j], list[i]) < 0) {
        char *t = list[i];
        list[i] = list[j];
        list[j] = t;
      }
  return n;
}

/* The cascades every invariant covers: the shipped ones and those under
 * tests/specs/good. Run from anywhere else, it finds none: that fails
 * (a loop over nothing checks nothing). */
enum { MIN_SPECS = 21 };
static int all_specs(char **list) {
  int n = list_specs("specs", list, 0);
  n = list_specs("tests/specs/good", list, n);
  if (n < MIN_SPECS)
    test_fail(__FILE__, __LINE__,
              "found %d cascades under specs/ and tests/specs/good, "
              "expected at least %d: run from the repository root",
              n, MIN_SPECS);
  return n;
}

static void free_list(char **list, int n) {
  for (int i = 0; i < n; i++)
    free(list[i]);
}

/* Bind C: its own sizes (SMALL: the executor's sizes below instead), every
 * rank still without one to 6 and every unknown scalar to 1; DECODE sets
 * the sequence rank to 1. NULL when it has no sequence rank to decode. */
static Shape *bind(const Cascade *c, bool small, bool decode) {
  static const struct {
    const char *spec;
    Setting set[8];
  } sizes[] = {
      {"specs/mamba1.yaml",
       {{"B", 2}, {"I", 9}, {"d_model", 16}, {"d_inner", 32}, {"dt_rank", 4},
        {"d_state", 4}}},
      {"specs/mamba2.yaml",
       {{"B", 2}, {"I", 7}, {"d_model", 16}, {"n_heads", 4}, {"head_dim", 8},
        {"d_state", 8}}},
      {"specs/transformer.yaml",
       {{"B", 2}, {"M", 5}, {"D", 16}, {"H", 2}, {"E", 4}}},
      {"specs/mamba2_chunked.yaml",
       {{"B", 2}, {"C", 3}, {"L", 4}, {"n_heads", 2}, {"head_dim", 3},
        {"d_state", 2}}},
      {"specs/mamba2_ssd.yaml",
       {{"B", 2}, {"C", 3}, {"L", 4}, {"d_model", 8}, {"n_heads", 2},
        {"head_dim", 3}, {"d_state", 2}}},
      {"specs/fusemax_1pass.yaml",
       {{"B", 2}, {"H", 2}, {"E", 4}, {"F", 3}, {"M1", 3}, {"M0", 4}}},
      {"specs/fusemax_3pass.yaml",
       {{"B", 2}, {"H", 2}, {"E", 4}, {"F", 3}, {"M", 7}}},
      {"specs/prenorm_block.yaml",
       {{"B", 2}, {"M", 5}, {"d_model", 8}, {"H", 2}}},
      {"specs/prenorm_decode.yaml",
       {{"B", 2}, {"T", 4}, {"M", 2}, {"d_model", 8}, {"H", 2}}},
      {"specs/gated_deltanet.yaml",
       {{"B", 2}, {"I", 5}, {"D", 8}, {"H", 2}, {"E", 3}, {"F", 4}}},
      {"specs/cnn_layer.yaml",
       {{"B", 2}, {"C", 2}, {"K", 3}, {"P", 6}, {"Q", 4}, {"R", 3},
        {"S", 3}}},
      {"tests/specs/good/teaal_conv.yaml",
       {{"M", 7}, {"N", 8}, {"R", 3}, {"S", 2}, {"X", 5}, {"Y", 7}}},
      {"tests/specs/good/retnet.yaml",
       {{"B", 2}, {"I", 5}, {"D", 8}, {"H", 2}, {"E", 3}, {"F", 4}}},
      {"tests/specs/good/rwkv6_shift.yaml",
       {{"B", 2}, {"I", 5}, {"D", 8}, {"E", 6}}},
      {"tests/specs/good/swiglu_mlp.yaml",
       {{"B", 2}, {"I", 5}, {"D", 8}, {"F", 12}}},
  };
  Setting set[16];
  int n = 0;
  for (size_t i = 0; small && i < sizeof sizes / sizeof sizes[0]; i++)
    if (strcmp(sizes[i].spec, c->path) == 0)
      for (int k = 0; k < 8 && sizes[i].set[k].name; k++)
        set[n++] = sizes[i].set[k];
  if (decode) {
    int r = cascade_sequence_rank(c);
    if (r < 0)
      return NULL;
    set[n++] = (Setting){c->ranks[r].name, 1};
  }
  const ModelSizes *p = c->model ? preset_sizes(c->model) : NULL;
  Diag d = {0};
  Shape *s = shape_bind_filled(c, p, set, n, 6, &d);
  if (!s)
    test_fail(__FILE__, __LINE__, "%s: %s", c->path, d.msg);
  return s;
}

/* ---- the architectures ---- */

/* Shipped, the test architectures (tests/archs: one array and no feeder),
 * and a small one whose buffer holds a tiny layer whole. */
static const char tiny_arch[] =
    "architecture:\n"
    "  name: t\n  clock: 1 GHz\n  word: 2 B\n"
    "  memory:\n"
    "    - {name: DRAM, bandwidth: 100 GB/s, read_energy: 1 pJ/B, "
    "write_energy: 1 pJ/B}\n"
    "    - {name: G, capacity: 64 MiB, read_energy: 1 pJ/B, "
    "write_energy: 1 pJ/B}\n"
    "    - {name: R, capacity: 1 MiB, read_energy: 1 pJ/B, "
    "write_energy: 1 pJ/B}\n"
    "  compute:\n"
    "    - {name: m, role: matrix, shape: [8, 8], ops: {macc: 1, add: 1, "
    "mul: 1, div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n"
    "    - {name: v, role: vector, mode_of: m, pes: 16}\n"
    "    - {name: f, role: feeder, pes: 4, ops: {macc: 1, add: 1, mul: 1, "
    "div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n"
    "  energy: {macc: 1 pJ, add: 1 pJ, mul: 1 pJ, div: 1 pJ, exp: 1 pJ, "
    "log: 1 pJ, sqrt: 1 pJ, silu: 1 pJ, max: 1 pJ}\n";

static int load_archs(Arch **a) {
  Diag d = {0};
  int n = 0;
  char *paths[MAX_SPECS];
  int np = list_specs("tests/archs", paths, list_specs("archs", paths, 0));
  for (int i = 0; i < np; i++) {
    a[n] = arch_load(paths[i], &d);
    if (!a[n])
      test_fail(__FILE__, __LINE__, "%s: %s", paths[i], d.msg);
    else
      n++;
  }
  free_list(paths, np);
  a[n++] = arch_parse("tiny.yaml", tiny_arch, strlen(tiny_arch), &d);
  return n;
}

/* ---- every case ----
 *
 * Most invariants run one check over every cascade (all_specs), bound in
 * each phase, on every architecture (load_archs), with one memo of mapping
 * searches: each_case walks them and the check sees one Case at a time. */

typedef struct Case {
  const char *spec; /* its path */
  int index;        /* its place among the cascades */
  const Cascade *c;
  const Shape *s;
  const Pair *pairs;
  bool decode;
  Arch *const *archs;
  int na;
  MapMemo *memo;
} Case;

/* Which cases a loop visits. */
typedef struct Cases {
  bool small;      /* bind's small sizes, else each cascade's own */
  bool decode;     /* also the decode phase, where the cascade has one */
  int max_einsums; /* cascades with more are passed over (0: none is) */
  MapMemo *memo;   /* the caller's */
} Cases;

/* What a walk saw: the checks FN counted, the cascades, the
 * architectures. */
typedef struct Walked {
  long checked;
  int ns, na;
} Walked;

/* Call FN(case, ARG), which returns the checks it made, for every case W
 * selects; a cascade that does not load fails the test (bind fails it
 * when it does not bind). */
static Walked each_case(Cases w, long (*fn)(const Case *, void *),
                        void *arg) {
  char *specs[MAX_SPECS];
  Arch *archs[MAX_SPECS];
  Walked r = {0, all_specs(specs), load_archs(archs)};
  for (int i = 0; i < r.ns; i++) {
    Diag d = {0};
    Cascade *c = spec_load(specs[i], &d);
    if (!c)
      test_fail(__FILE__, __LINE__, "%s: %s", specs[i], d.msg);
    bool skip = !c || (w.max_einsums > 0 && c->neinsums > w.max_einsums);
    for (int phase = 0; !skip && phase < 1 + w.decode; phase++) {
      Shape *s = bind(c, w.small, phase == 1);
      if (!s)
        continue;
      Pair *pairs = fusion_classify(c, s);
      Case k = {specs[i], i, c, s, pairs, phase == 1, archs, r.na, w.memo};
      r.checked += fn(&k, arg);
      free(pairs);
      shape_free(s);
    }
    cascade_free(c);
  }
  for (int k = 0; k < r.na; k++)
    arch_free(archs[k]);
  free_list(specs, r.ns);
  return r;
}

/* ---- the model's invariants ---- */

static bool finite_pos(double x) { return isfinite(x) && x > 0; }

static void check_design(const Cascade *c, const Shape *s, const Arch *a,
                         const Eval *ev, const Eval *ideal, const char *mode) {
  const char *des = design_name(ev->design);
  if (!finite_pos(ev->seconds) || !isfinite(ev->read + ev->write) ||
      !(ev->read + ev->write > 0))
    test_fail(__FILE__, __LINE__, "%s on %s, %s %s: latency %g, traffic %g",
              c->path, a->name, des, mode, ev->seconds, ev->read + ev->write);
  if (ideal && ev->seconds < ideal->seconds * (1 - 1e-9))
    test_fail(__FILE__, __LINE__,
              "%s on %s, %s: %s takes %.6g s, below ideal's %.6g s", c->path,
              a->name, mode, des, ev->seconds, ideal->seconds);
  if (ev->opts.accounting == ACCOUNT_ACHIEVED && ev->design != DES_IDEAL) {
    for (int i = 0; i < ev->n; i++)
      if (!ev->e[i].fits || ev->e[i].footprint > ev->e[i].capacity * 1.000001)
        test_fail(__FILE__, __LINE__,
                  "%s on %s, %s %s: %s needs %g of %g elements", c->path,
                  a->name, des, mode, c->tensors[c->einsums[ev->e[i].einsum]
                                                      ->out.tensor]
                                          .name,
                  ev->e[i].footprint, ev->e[i].capacity);
    for (int g = 0; g < ev->ngroups; g++)
      if (ev->g[g].reserve > ev->g[g].budget * 1.000001)
        test_fail(__FILE__, __LINE__,
                  "%s on %s, %s %s: group %d holds %g of %g", c->path,
                  a->name, des, mode, g + 1, ev->g[g].reserve,
                  ev->g[g].budget);
    if (ev->inter < ev->ideal_inter * (1 - 1e-12))
      test_fail(__FILE__, __LINE__,
                "%s on %s, %s %s: achieved inter %g below ideal %g", c->path,
                a->name, des, mode, ev->inter, ev->ideal_inter);
  }
  if (ev->design != DES_IDEAL &&
      ev->ideal_inter != ev->plan->offchip_elems * a->word_bytes)
    test_fail(__FILE__, __LINE__,
              "%s on %s, %s %s: eval's ideal inter %g B, the plan's %g "
              "elements",
              c->path, a->name, des, mode, ev->ideal_inter,
              ev->plan->offchip_elems);
  (void)s;
}

/* The evaluation through a memo gives every figure of the one without. */
static void check_same(const Cascade *c, const Arch *a, const Eval *x,
                       const Eval *y, const char *mode) {
  bool same = x->n == y->n && x->cycles == y->cycles && x->read == y->read &&
              x->write == y->write && x->energy_pj == y->energy_pj &&
              x->inter == y->inter && x->intra == y->intra;
  for (int i = 0; same && i < x->n; i++)
    same = x->e[i].read == y->e[i].read && x->e[i].write == y->e[i].write &&
           x->e[i].cycles == y->e[i].cycles &&
           x->e[i].footprint == y->e[i].footprint &&
           strcmp(x->e[i].mapping, y->e[i].mapping) == 0;
  if (!same)
    test_fail(__FILE__, __LINE__, "%s on %s, %s %s: the memo changed a figure",
              c->path, a->name, design_name(x->design), mode);
}

/* Every design under one set of options: all price, none beats ideal, and
 * priced again through MEMO, the same figures. */
static void check_designs(const Cascade *c, const Shape *s, const Arch *a,
                          const Pair *pairs, Compose comp, bool no_overlap,
                          bool ideal_traffic, MapMemo *memo) {
  char mode[96];
  snprintf(mode, sizeof mode, "%s%s%s (%s)",
           comp == COMPOSE_PIPELINED ? "pipelined" : "sequential",
           no_overlap ? ", no overlap" : "", ideal_traffic ? ", ideal" : "",
           s->size[0] > 0 ? "" : "");
  Eval *ev[DES_COUNT] = {0};
  for (int d = 0; d < DES_COUNT; d++) {
    ModelOpts o = model_default_opts((Design)d);
    o.compose = comp;
    o.no_overlap = no_overlap;
    if (ideal_traffic)
      o.accounting = ACCOUNT_IDEAL;
    Diag diag = {0};
    ev[d] = model_eval(c, s, a, pairs, (Design)d, &o, &diag);
    if (!ev[d])
      test_fail(__FILE__, __LINE__, "%s on %s, %s %s: %s:%d:%d %s", c->path,
                a->name, design_name((Design)d), mode, diag.file,
                diag.loc.line, diag.loc.col, diag.msg);
    Plan *p = model_plan(c, s, pairs, (Design)d, &o, &diag);
    Eval *again = p ? model_eval_memo(c, s, a, pairs, (Design)d,
                                      plan_copy(c, p), &o, memo, &diag)
                    : NULL;
    plan_free(p);
    if (ev[d] && again)
      check_same(c, a, ev[d], again, mode);
    eval_free(again);
  }
  for (int d = 0; d < DES_COUNT; d++)
    if (ev[d])
      check_design(c, s, a, ev[d], ev[DES_IDEAL], mode);
  for (int d = 0; d < DES_COUNT; d++)
    eval_free(ev[d]);
}

/* Every design in both compositions (and, unsanitized, with the ideal
 * accounting and with the decode state), on every architecture. */
static long model_case(const Case *k, void *arg) {
  bool sanitized = *(const bool *)arg;
  for (int a = 0; a < k->na; a++) {
    for (int how = 0; how < 2; how++)
      check_designs(k->c, k->s, k->archs[a], k->pairs, (Compose)how, false,
                    false, k->memo);
    if (!sanitized) {
      check_designs(k->c, k->s, k->archs[a], k->pairs, COMPOSE_SEQUENTIAL,
                    true, false, k->memo);
      check_designs(k->c, k->s, k->archs[a], k->pairs, COMPOSE_SEQUENTIAL,
                    false, true, k->memo);
    }
  }
  return 1;
}

TEST(invariants_model_every_spec_arch_design) {
  bool sanitized = getenv("MAMBALAYA_SANITIZED") != NULL;
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){sanitized, true, 0, memo}, model_case,
                       &sanitized);
  CHECK(w.na >= 4); /* the shipped ones, tests/archs and the tiny one */
  CHECK(w.checked >= w.ns); /* every cascade's prefill at least */
  long hits, misses;
  map_memo_stats(memo, &hits, &misses);
  CHECK(hits > misses); /* the compositions share every mapping */
  map_memo_free(memo);
}

/* The test above, over every cascade at every accounting, is
 * optimized-only (the Makefile's UNIT_OPTIMIZED_ONLY); under the
 * sanitizers this walks the same code, both compositions, on the
 * cascades of at most 4 Einsums (prefill and decode), as the searches'
 * reduced variants below. */
TEST(invariants_model_tiny_cascades) {
  bool reduced = true; /* model_case's sanitized variant */
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){true, true, 4, memo}, model_case, &reduced);
  CHECK(w.checked >= 6); /* the cascades of at most 4 Einsums */
  long hits, misses;
  map_memo_stats(memo, &hits, &misses);
  CHECK(hits > misses);
  map_memo_free(memo);
}

/* ---- one plan, one traffic figure; every plan runs ---- */

static uint64_t xorshift_next(uint64_t *st) {
  *st ^= *st << 13;
  *st ^= *st >> 7;
  *st ^= *st << 17;
  return *st;
}

/* Every input, uniform in [0.1, 0.6) (positive: a variance, a log). */
static void random_inputs(const Cascade *c, const Shape *s, Tensors *in,
                          uint64_t seed) {
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (T->producer >= 0)
      continue;
    int64_t shape[IR_MAX_RANKS];
    for (int d = 0; d < T->nranks; d++)
      shape[d] = s->size[T->ranks[d]];
    Array *a = array_new(T->nranks, shape);
    for (int64_t i = 0; i < a->n; i++)
      a->data[i] = 0.1f + 0.5f * (float)((xorshift_next(&seed) >> 11) * 0x1.0p-53);
    tensors_put(in, T->name, a, true);
  }
}

static double max_rel_diff(const Array *a, const Array *b) {
  double worst = 0, scale = 1e-6;
  for (int64_t i = 0; i < a->n; i++)
    scale = fmax(scale, fabs((double)b->data[i]));
  for (int64_t i = 0; i < a->n; i++)
    worst = fmax(worst, fabs((double)a->data[i] - b->data[i]) / scale);
  return worst;
}

/* Plan P of C (owned: the model takes it): it runs, computes REF, and the
 * executor's bytes equal the model's (ideal accounting, the decode state
 * counted) tensor by tensor, and the intermediates' sum equals fuse's
 * figure. */
static void check_plan(const Cascade *c, const Shape *s, const Arch *a,
                       const Pair *pairs, Plan *p, const Tensors *in,
                       const Tensors *ref, Pool *pool, const char *what) {
  Diag d = {0};
  Tensors res = {0};
  ExecStats st = {0};
  ExecOpts eo = {.plan = p, .buffer_bytes = 1 << 16, .keep_all = true,
                 .pool = pool};
  if (!exec_run(c, s, in, &eo, &res, NULL, &st, &d)) {
    test_fail(__FILE__, __LINE__, "%s: the plan does not run: %s", what,
              d.msg);
    tensors_free(&res);
    plan_free(p);
    return;
  }
  for (int t = 0; t < c->ntensors; t++) {
    const Tensor *T = &c->tensors[t];
    if (!T->output)
      continue;
    Array *x = tensors_get(&res, T->name), *y = tensors_get(ref, T->name);
    if (!x || !y || max_rel_diff(x, y) > 1e-5)
      test_fail(__FILE__, __LINE__, "%s: %s differs from the interpreter "
                                    "by %g",
                what, T->name, x && y ? max_rel_diff(x, y) : -1.0);
  }
  ModelOpts mo = model_default_opts(design_of_strategy(p->strategy));
  mo.accounting = ACCOUNT_IDEAL;
  mo.state_io = true;
  double offchip = p->offchip_elems;
  Eval *ev = model_eval_plan(c, s, a, pairs, design_of_strategy(p->strategy), p,
                             &mo, &d);
  if (!ev) {
    test_fail(__FILE__, __LINE__, "%s: eval: %s", what, d.msg);
  } else {
    double inter = 0;
    for (int t = 0; t < c->ntensors; t++) {
      double mr = ev->tensor_read[t] / a->word_bytes;
      double mw = ev->tensor_write[t] / a->word_bytes;
      double xr = st.read[t] / 4, xw = st.write[t] / 4;
      if (mr != xr || mw != xw)
        test_fail(__FILE__, __LINE__,
                  "%s: %s: the model reads %g and writes %g elements, the "
                  "executor %g and %g",
                  what, c->tensors[t].name, mr, mw, xr, xw);
      if (tensor_is_intermediate(c, t))
        inter += xr + xw;
    }
    if (inter != offchip || ev->ideal_inter != offchip * a->word_bytes)
      test_fail(__FILE__, __LINE__,
                "%s: fuse says %g off-chip elements, eval %g, the executor "
                "%g",
                what, offchip, ev->ideal_inter / a->word_bytes, inter);
  }
  eval_free(ev);
  exec_stats_free(&st);
  tensors_free(&res);
}

TEST(invariants_plans_fuse_eval_exec_agree) {
  char *specs[MAX_SPECS];
  int ns = all_specs(specs);
  Diag d = {0};
  Arch *a = arch_parse("tiny.yaml", tiny_arch, strlen(tiny_arch), &d);
  Pool *pool = pool_new(2);
  int checked = 0;
  for (int i = 0; a && i < ns; i++) {
    Cascade *c = spec_load(specs[i], &d);
    Shape *s = c ? bind(c, true, false) : NULL;
    if (!s) {
      test_fail(__FILE__, __LINE__, "%s: %s", specs[i], d.msg);
      cascade_free(c);
      continue;
    }
    Tensors in = {0}, ref = {0};
    random_inputs(c, s, &in, 7);
    ExecOpts io = {.keep_all = true};
    if (!exec_run(c, s, &in, &io, &ref, NULL, NULL, &d))
      test_fail(__FILE__, __LINE__, "%s: the interpreter: %s", specs[i],
                d.msg);
    Pair *pairs = fusion_classify(c, s);
    for (int st = 0; st < ST_COUNT; st++)
      for (int how = 0; how < STITCH_COUNT; how++) {
        Plan *p = fusion_plan(c, s, pairs, (Strategy)st, (Stitcher)how,
                              OBJ_TRAFFIC, &d);
        if (!p) { /* only Algorithm 1 may refuse (over 64 ranks) */
          if (how != STITCH_ALG1)
            test_fail(__FILE__, __LINE__, "%s %s/%s refused: %s", specs[i],
                      strategy_name((Strategy)st),
                      stitcher_name((Stitcher)how), d.msg);
          continue;
        }
        char what[256];
        snprintf(what, sizeof what, "%s %s/%s", specs[i],
                 strategy_name((Strategy)st), stitcher_name((Stitcher)how));
        check_plan(c, s, a, pairs, p, &in, &ref, pool, what);
        checked++;
      }
    /* The designs' own plans too (MARCA's and Geens's region, FLAT's
     * blocks): what crosses their groups, the executor counts. */
    for (int des = 0; des < DES_COUNT; des++) {
      ModelOpts o = model_default_opts((Design)des);
      Plan *p = o.bound ? NULL
                        : model_plan(c, s, pairs, (Design)des, &o, &d);
      char what[256];
      snprintf(what, sizeof what, "%s design %s", specs[i],
               design_name((Design)des));
      if (p)
        check_plan(c, s, a, pairs, p, &in, &ref, pool, what);
      else if (!o.bound)
        test_fail(__FILE__, __LINE__, "%s: %s", what, d.msg);
    }
    free(pairs);
    tensors_free(&in);
    tensors_free(&ref);
    shape_free(s);
    cascade_free(c);
  }
  /* Every cascade, strategy and stitcher, less Algorithm 1's refusals. */
  CHECK(checked >= ns * ST_COUNT * (STITCH_COUNT - 1));
  pool_free(pool);
  arch_free(a);
  free_list(specs, ns);
}

/* ---- one plan, one price ---- */

/* Every figure of two evaluations of one plan. */
static bool same_figures(const Eval *x, const Eval *y) {
  bool same = x->n == y->n && x->cycles == y->cycles && x->read == y->read &&
              x->write == y->write && x->energy_pj == y->energy_pj &&
              x->inter == y->inter && x->intra == y->intra &&
              x->ngroups == y->ngroups;
  for (int i = 0; same && i < x->n; i++)
    same = x->e[i].read == y->e[i].read && x->e[i].write == y->e[i].write &&
           x->e[i].cycles == y->e[i].cycles && x->e[i].unit == y->e[i].unit &&
           x->e[i].footprint == y->e[i].footprint &&
           strcmp(x->e[i].mapping, y->e[i].mapping) == 0;
  for (int g = 0; same && g < x->ngroups; g++)
    same = x->g[g].nspills == y->g[g].nspills;
  return same;
}

/* Plan P priced under every strategy's label gives the figures it gives
 * under its own: a plan's price is a function of its groups (issue 23). */
static int check_relabelled(const Cascade *c, const Shape *s, const Arch *a,
                            const Pair *pairs, const Plan *p, MapMemo *memo,
                            const char *what) {
  Diag d = {0};
  Design own = design_of_strategy(p->strategy);
  ModelOpts o = model_default_opts(own);
  Eval *ref = model_eval_memo(c, s, a, pairs, own, plan_copy(c, p), &o, memo,
                              &d);
  int n = 0;
  for (int st = 0; ref && st < ST_COUNT; st++) {
    Design label = design_of_strategy((Strategy)st);
    ModelOpts lo = model_default_opts(label);
    Eval *ev = model_eval_memo(c, s, a, pairs, label, plan_copy(c, p), &lo,
                               memo, &d);
    if (!ev || !same_figures(ref, ev))
      test_fail(__FILE__, __LINE__, "%s on %s: labelled %s, another price",
                what, a->name, strategy_name((Strategy)st));
    eval_free(ev);
    n++;
  }
  if (!ref)
    test_fail(__FILE__, __LINE__, "%s on %s: %s", what, a->name, d.msg);
  eval_free(ref);
  return n;
}

/* Every strategy's plan under every stitcher, relabelled, on every
 * architecture. */
static long relabel_case(const Case *k, void *arg) {
  (void)arg;
  long priced = 0;
  for (int st = 0; st < ST_COUNT; st++)
    for (int how = 0; how < STITCH_COUNT; how++) {
      Diag d = {0};
      Plan *p = fusion_plan(k->c, k->s, k->pairs, (Strategy)st,
                            (Stitcher)how, OBJ_TRAFFIC, &d);
      char what[256];
      snprintf(what, sizeof what, "%s %s/%s", k->spec,
               strategy_name((Strategy)st), stitcher_name((Stitcher)how));
      for (int a = 0; p && a < k->na; a++)
        priced += check_relabelled(k->c, k->s, k->archs[a], k->pairs, p,
                                   k->memo, what);
      plan_free(p);
    }
  return priced;
}

TEST(invariants_plan_priced_by_content) {
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){true, false, 0, memo}, relabel_case, NULL);
  CHECK(w.checked >=
        (long)w.ns * ST_COUNT * (STITCH_COUNT - 1) * w.na * ST_COUNT);
  map_memo_free(memo);
}

/* ---- the search ---- */

/* The best FIGURE of every named design under every stitcher, as each
 * prices itself; WHO (64 bytes, or NULL) names the one that gives it. */
static double named_best(const Cascade *c, const Shape *s, const Arch *a,
                         const Pair *pairs, SearchObjective obj,
                         MapMemo *memo, char *who) {
  ModelOverrides ov = model_no_overrides();
  double best = INFINITY;
  for (int des = 0; des < DES_COUNT; des++) {
    ModelOpts mo = model_opts_with(&ov, (Design)des);
    for (int st = 0; !mo.bound && st < STITCH_COUNT; st++) {
      mo.stitch = (Stitcher)st;
      Diag d = {0};
      Plan *p = model_plan(c, s, pairs, (Design)des, &mo, &d);
      Eval *ev = p ? model_eval_memo(c, s, a, pairs, (Design)des, p, &mo,
                                     memo, &d)
                   : NULL;
      if (ev && search_figure(ev, obj) < best) {
        best = search_figure(ev, obj);
        if (who)
          snprintf(who, 64, "%s/%s", design_name((Design)des),
                   stitcher_name((Stitcher)st));
      }
      eval_free(ev);
    }
  }
  return best;
}

/* The best FIGURE of plan P over every combination of its groups' spill
 * variants (search_spill_variants), each combination priced whole. */
static double every_variant(const Cascade *c, const Shape *s, const Arch *a,
                            const Pair *pairs, const Plan *p,
                            const ModelOpts *o, SearchObjective obj,
                            MapMemo *memo) {
  Design plain = design_of_strategy(ST_FULL);
  int *nv = xcalloc((size_t)p->ngroups, sizeof *nv);
  int *at = xcalloc((size_t)p->ngroups, sizeof *at);
  for (int g = 0; g < p->ngroups; g++)
    nv[g] = search_spill_variants(c, p, g, o);
  double best = INFINITY;
  for (;;) {
    Plan *q = plan_copy(c, p);
    q->spilled = xcalloc((size_t)c->ntensors + 1, sizeof *q->spilled);
    for (int g = 0; g < p->ngroups; g++)
      search_spill_variant(c, p, g, o, at[g], q->spilled);
    Diag d = {0};
    Eval *ev = model_eval_memo(c, s, a, pairs, plain, q, o, memo, &d);
    if (ev)
      best = fmin(best, search_figure(ev, obj));
    eval_free(ev);
    int g = 0; /* the next combination: a mixed-radix count */
    while (g < p->ngroups && ++at[g] == nv[g])
      at[g++] = 0;
    if (g == p->ngroups)
      break;
  }
  free(nv);
  free(at);
  return best;
}

/* The best FIGURE of plan P with each group at each of the N fusion
 * levels CAND of A (every assignment, each group naming its level), each
 * under every combination of its groups' spill variants. */
static double every_level(const Cascade *c, const Shape *s, const Arch *a,
                          const Pair *pairs, Plan *p, const int *cand, int n,
                          const ModelOpts *o, SearchObjective obj,
                          MapMemo *memo) {
  int *at = xcalloc((size_t)p->ngroups, sizeof *at);
  double best = INFINITY;
  for (;;) {
    for (int g = 0; g < p->ngroups; g++)
      snprintf(p->groups[g].level, sizeof p->groups[g].level, "%s",
               a->levels[cand[at[g]]].name);
    best = fmin(best, every_variant(c, s, a, pairs, p, o, obj, memo));
    int g = 0; /* the next assignment: a mixed-radix count */
    while (g < p->ngroups && ++at[g] == n)
      at[g++] = 0;
    if (g == p->ngroups)
      break;
  }
  free(at);
  return best;
}

/* The best FIGURE over every contiguous partition of NODES (C's),
 * each group at every fusion level A can take, each under every
 * combination of its groups' spill variants, priced whole. */
static double enumerate_nodes(const Cascade *c, const Shape *s,
                              const Arch *a, const Pair *pairs,
                              const Nodes *nodes, SearchObjective obj,
                              MapMemo *memo) {
  ModelOverrides ov = model_no_overrides();
  ModelOpts o = model_opts_with(&ov, design_of_strategy(ST_FULL));
  o.bind = BIND_COST; /* the search's groups bind by cost */
  int cand[16];
  int nl = arch_fusion_candidates(a, cand);
  int n = nodes->n;
  int *group_of = xcalloc((size_t)c->neinsums + 1, sizeof *group_of);
  double best = INFINITY;
  for (long mask = 0; mask < (1L << (n - 1)); mask++) {
    int g = 0;
    for (int k = 0; k < n; k++) {
      g += k > 0 && (mask >> (k - 1) & 1);
      for (int i = 0; i < nodes->nodes[k].n; i++)
        group_of[nodes->nodes[k].einsums[i]] = g;
    }
    Diag d = {0};
    Plan *p = fusion_plan_groups(c, s, ST_FULL, group_of, &d);
    if (p)
      best = fmin(best, every_level(c, s, a, pairs, p, cand, nl, &o, obj,
                                    memo));
    plan_free(p);
  }
  free(group_of);
  return best;
}

/* The best FIGURE over every contiguous partition of the nodes the search
 * cuts (search_nodes: the merged nodes' order, each opened into its
 * Einsums, so a merged node may be whole or split), each group at every
 * fusion level, every combination of spill variants, and every named
 * design at every fusion level (the documented space, enumerated): what
 * the search must find. */
static double enumerate_space(const Cascade *c, const Shape *s,
                              const Arch *a, const Pair *pairs,
                              SearchObjective obj, MapMemo *memo) {
  Nodes *nodes = search_nodes(c, s);
  double best = enumerate_nodes(c, s, a, pairs, nodes, obj, memo);
  nodes_free(nodes);
  int cand[16];
  int n = arch_fusion_candidates(a, cand);
  for (int k = 0; k < n; k++) {
    Arch *at = arch_with_fusion_level(a, cand[k]);
    best = fmin(best, named_best(c, s, at, pairs, obj, memo, NULL));
    arch_free(at);
  }
  return best;
}

/* The search against every partition priced whole, for latency and
 * energy, on every architecture. */
static long enumeration_case(const Case *k, void *arg) {
  (void)arg;
  ModelOverrides ov = model_no_overrides();
  long checked = 0;
  for (int a = 0; a < k->na; a++)
    for (int obj = 0; obj < SO_COUNT; obj += SO_ENERGY) { /* lat, energy */
      Diag d = {0};
      SearchResult *r = search_best(k->c, k->s, k->archs[a], k->pairs, &ov,
                                    (SearchObjective)obj, k->memo, &d);
      double all = enumerate_space(k->c, k->s, k->archs[a], k->pairs,
                                   (SearchObjective)obj, k->memo);
      if (!r || fabs(r->found - all) > 1e-12 * all)
        test_fail(__FILE__, __LINE__, "%s on %s, %s: search %.9g, "
                  "enumeration %.9g", k->spec, k->archs[a]->name,
                  search_objective_name((SearchObjective)obj),
                  r ? r->found : NAN, all);
      search_free(r);
      checked++;
    }
  return checked;
}

TEST(search_equals_enumeration_small_cascades) {
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){true, false, 10, memo}, enumeration_case,
                       NULL);
  CHECK(w.checked >= 12L * w.na * 2); /* the small ones, both objectives */
  map_memo_free(memo);
}

/* Best is no worse than any named design (every stitcher), and no better
 * than ideal, on every cascade, architecture and phase; the plan it found
 * prices, as eval --plan prices it (the binding and the spills it
 * carries), at exactly the figure found. */
static int check_best(const Cascade *c, const Shape *s, const Arch *a,
                      const Pair *pairs, MapMemo *memo, const char *what) {
  ModelOverrides ov = model_no_overrides();
  Diag d = {0};
  SearchResult *r = search_best(c, s, a, pairs, &ov, SO_LATENCY, memo, &d);
  if (!r) {
    test_fail(__FILE__, __LINE__, "%s on %s: %s", what, a->name, d.msg);
    return 0;
  }
  char who[64];
  double named = named_best(c, s, a, pairs, SO_LATENCY, memo, who);
  if (named < r->found)
    test_fail(__FILE__, __LINE__, "%s on %s: %s %.9g beats best %.9g", what,
              a->name, who, named, r->found);
  int n = 1;
  if (r->from == DES_COUNT) { /* one plan, one price: what eval --plan does */
    Plan *p = plan_copy(c, r->best->plan);
    Design des = design_of_strategy(p->strategy);
    ModelOpts mo = model_opts_for_plan(&ov, des, p);
    Arch *at = p->fusion_level[0] /* at the level it names, as eval does */
                   ? arch_with_fusion_named(a, p->fusion_level, "plan",
                                            (Loc){0, 0}, &d)
                   : NULL;
    Eval *again = model_eval_memo(c, s, at ? at : a, pairs, des, p, &mo,
                                  memo, &d);
    arch_free(at);
    if (!again || search_figure(again, SO_LATENCY) != r->found)
      test_fail(__FILE__, __LINE__, "%s on %s: the plan found prices at "
                "%.9g, the search said %.9g", what, a->name,
                again ? search_figure(again, SO_LATENCY) : NAN, r->found);
    eval_free(again);
  }
  if (r->found < r->lower * (1 - 1e-12))
    test_fail(__FILE__, __LINE__, "%s on %s: best %.9g beats ideal %.9g",
              what, a->name, r->found, r->lower);
  search_free(r);
  return n;
}

static long best_case(const Case *k, void *arg) {
  (void)arg;
  char what[256];
  snprintf(what, sizeof what, "%s (%s)", k->spec,
           k->decode ? "decode" : "prefill");
  long checked = 0;
  for (int a = 0; a < k->na; a++)
    checked += check_best(k->c, k->s, k->archs[a], k->pairs, k->memo,
                          what) > 0;
  return checked;
}

TEST(search_best_between_ideal_and_every_design) {
  /* Under the sanitizers, the small sizes (as the model's invariants). */
  bool sanitized = getenv("MAMBALAYA_SANITIZED") != NULL;
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){sanitized, true, 0, memo}, best_case, NULL);
  CHECK(w.checked >= (long)w.ns * w.na); /* every cascade's prefill */
  map_memo_free(memo);
}

/* The two searches above walk every small cascade (every cascade) and,
 * under the sanitizers, take minutes: they are optimized-only (the
 * Makefile's UNIT_OPTIMIZED_ONLY). These walk the same code on the
 * cascades of at most 4 Einsums (cnn_layer, conv_pool,
 * global_beats_greedy, merged_reads_recurrence with its merged reads and
 * its decode phase, teaal_conv, teaal_gemm), for the sanitizers. */
TEST(search_equals_enumeration_tiny_cascades) {
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){true, false, 4, memo}, enumeration_case,
                       NULL);
  CHECK(w.checked >= 6L * w.na * 2); /* the six, both objectives */
  map_memo_free(memo);
}

TEST(search_best_tiny_cascades) {
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){true, true, 4, memo}, best_case, NULL);
  CHECK(w.checked >= 6L * w.na); /* the six's prefill */
  map_memo_free(memo);
}

/* ---- a group priced alone ---- */

/* Every node of N before I or from J on alone, nodes [I, J) one group
 * (group I): the plan the search prices that group in, or NULL. */
static Plan *group_plan(const Cascade *c, const Shape *s, const Nodes *nodes,
                        int i, int j) {
  int *group_of = xcalloc((size_t)c->neinsums + 1, sizeof *group_of);
  int g = -1;
  for (int k = 0; k < nodes->n; k++) {
    g += k <= i || k >= j;
    for (int m = 0; m < nodes->nodes[k].n; m++)
      group_of[nodes->nodes[k].einsums[m]] = g;
  }
  Diag d = {0};
  Plan *p = fusion_plan_groups(c, s, ST_FULL, group_of, &d);
  free(group_of);
  return p;
}

/* Does group G alone (PE, from the pricer) give exactly what the whole
 * plan's evaluation (WHOLE) gives it and its Einsums? */
static bool same_group(const Eval *pe, const Eval *whole, int g) {
  const GroupEval *a = &pe->g[g], *b = &whole->g[g];
  bool same = a->n == b->n && a->cycles == b->cycles &&
              a->mem_cycles == b->mem_cycles && a->reserve == b->reserve &&
              a->nspills == b->nspills && a->ntiled == b->ntiled;
  for (int k = 0; same && k < a->n; k++) {
    const EinsumEval *x = &pe->e[a->first + k], *y = &whole->e[b->first + k];
    same = x->einsum == y->einsum && x->unit == y->unit &&
           x->cycles == y->cycles && x->energy_pj == y->energy_pj &&
           x->read == y->read && x->write == y->write &&
           x->compute_cycles == y->compute_cycles &&
           x->mem_cycles == y->mem_cycles && x->footprint == y->footprint &&
           strcmp(x->mapping, y->mapping) == 0;
  }
  return same;
}

/* Group [I, J) of C's nodes under every spill variant (SAMPLE: the first
 * and the last): priced alone from START (the clock where the plan with
 * every node alone reaches node I, as the search prices it), against its
 * plan priced whole. The variants compared, or -1 after a failure. */
static int check_group(const Cascade *c, const Shape *s, const Arch *a,
                       const Pair *pairs, const Nodes *nodes, int i, int j,
                       const ModelOpts *o, double start, bool sample,
                       GroupPricer *gp, MapMemo *memo, const char *what) {
  Design plain = design_of_strategy(ST_FULL);
  Plan *base = group_plan(c, s, nodes, i, j);
  if (!base)
    return 0;
  int nv = search_spill_variants(c, base, i, o), n = 0;
  base->spilled = xcalloc((size_t)c->ntensors + 1, sizeof *base->spilled);
  /* Bound once for every variant, as the search binds it: a variant
   * reuses what the pricer kept from the ones before (group.c). */
  bool bound = model_group_bind(gp, base, i) != NULL;
  for (int v = 0; n >= 0 && v < nv;
       v = sample && v + 1 < nv - 1 ? nv - 1 : v + 1) {
    memset(base->spilled, 0, (size_t)c->ntensors * sizeof *base->spilled);
    search_spill_variant(c, base, i, o, v, base->spilled);
    Diag d = {0};
    Eval *whole = model_eval_memo(c, s, a, pairs, plain, plan_copy(c, base),
                                  o, memo, &d);
    const Eval *pe = bound ? model_group_price(gp, start) : NULL;
    if (!whole != !pe || (whole && !same_group(pe, whole, i))) {
      test_fail(__FILE__, __LINE__, "%s on %s: nodes [%d, %d), variant %d: "
                "alone %.17g cycles, whole %.17g", what, a->name, i, j, v,
                pe ? pe->g[i].cycles : NAN, whole ? whole->g[i].cycles : NAN);
      n = -1;
    }
    n += n >= 0;
    eval_free(whole);
  }
  plan_free(base);
  return n;
}

/* Every group of C's nodes, every variant (SAMPLE: its first and last),
 * under O: the variants compared. */
static long check_groups(const Cascade *c, const Shape *s, const Arch *a,
                         const Pair *pairs, const ModelOpts *o, bool sample,
                         MapMemo *memo, const char *what) {
  Design plain = design_of_strategy(ST_FULL);
  Nodes *nodes = fusion_merge(c, s);
  Plan *alone = group_plan(c, s, nodes, 0, 1); /* every node alone */
  alone->spilled = xcalloc((size_t)c->ntensors + 1, sizeof *alone->spilled);
  Diag d = {0};
  Eval *ev = model_eval_memo(c, s, a, pairs, plain, alone, o, memo, &d);
  GroupPricer *gp =
      model_group_pricer_new(c, s, a, pairs, plain, o, memo, &d);
  long n = 0;
  for (int j = 1; ev && j <= nodes->n; j++)
    for (int i = 0; i < j; i++) {
      int k = check_group(c, s, a, pairs, nodes, i, j, o, ev->g[i].start,
                          sample, gp, memo, what);
      n += k > 0 ? k : 0;
    }
  model_group_pricer_free(gp);
  eval_free(ev);
  nodes_free(nodes);
  return n;
}

/* Cascade C bound by S (DECODE: with the decode state's traffic) on A
 * in every composition and accounting (SANITIZED: sequential achieved and
 * pipelined ideal): the group prices compared. */
static long check_modes(const Cascade *c, const Shape *s, const Arch *a,
                        const Pair *pairs, bool decode, bool sample,
                        bool sanitized, MapMemo *memo) {
  ModelOverrides ov = model_no_overrides();
  ov.state_io = decode;
  long n = 0;
  /* pipelined?, ideal? (under the sanitizers: neither, and both) */
  for (int mode = 0; mode < 4; mode += sanitized ? 3 : 1) {
    ov.pipelined = mode & 1;
    ov.ideal = mode >> 1;
    ModelOpts o = model_opts_with(&ov, design_of_strategy(ST_FULL));
    o.bind = BIND_COST; /* the search's */
    char what[160];
    snprintf(what, sizeof what, "%s (%s, %s, %s)", c->path,
             decode ? "decode" : "prefill",
             mode & 1 ? "pipelined" : "sequential",
             mode >> 1 ? "ideal" : "achieved");
    n += check_groups(c, s, a, pairs, &o, sample, memo, what);
  }
  return n;
}

/* The search prices each group alone (model_group_price): exactly as the
 * group prices in its plan priced whole, on every cascade, architecture,
 * composition and accounting, prefill and decode. A large cascade runs on
 * one architecture each, in turn, every group with its first and last
 * variant, and not under the sanitizers (the small ones exercise the same
 * code). */
static long alone_case(const Case *k, void *arg) {
  bool sanitized = *(const bool *)arg;
  bool large = k->c->neinsums > 10;
  int first = large ? k->index % k->na : 0;
  long checked = 0;
  for (int a = first; a < (large ? first + 1 : k->na); a++)
    checked += check_modes(k->c, k->s, k->archs[a], k->pairs, k->decode,
                           large, sanitized, k->memo);
  return checked;
}

TEST(search_group_alone_prices_as_whole_plan) {
  bool sanitized = getenv("MAMBALAYA_SANITIZED") != NULL;
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){true, true, sanitized ? 10 : 0, memo},
                       alone_case, &sanitized);
  CHECK(w.checked >= (sanitized ? 5000 : 20000));
  map_memo_free(memo);
}

/* ---- a candidate group's plan, patched ---- */

/* The plan a Regroup gives for nodes [I, J) against the one
 * fusion_plan_groups makes (every other node alone): group I's members,
 * tile ranks, read sources, its outputs' written and onchip, and its
 * members' transfers in order, field by field. */
static long regroup_check(const Cascade *c, const Nodes *nodes,
                          const Plan *got, const Plan *want, int i, int j) {
  const char *at = c->path;
  if (!got || !want) {
    if (got || want)
      test_fail(__FILE__, __LINE__, "%s [%d, %d): runs %d, whole %d", at, i,
                j, got != NULL, want != NULL);
    return 1;
  }
  const Group *g = &got->groups[i], *w = &want->groups[i];
  bool ok = g->n == w->n && g->ntiled == w->ntiled;
  for (int k = 0; ok && k < g->n; k++)
    ok = g->einsums[k] == w->einsums[k];
  for (int k = 0; ok && k < g->ntiled; k++)
    ok = g->tiled[k] == w->tiled[k];
  for (int k = 0; ok && k < g->n; k++) {
    int e = g->einsums[k], t = c->einsums[e]->out.tensor;
    ok = got->group_of[e] == i && want->group_of[e] == i &&
         got->written[t] == want->written[t] &&
         got->onchip[t] == want->onchip[t];
    for (int r = 0; ok && r < c->einsums[e]->nreads; r++)
      ok = got->src[e][r] == want->src[e][r];
  }
  /* The members' transfers, in the order each plan lists them. */
  int a = 0, b = 0;
  while (ok) {
    while (a < got->nxfers && got->group_of[got->xfers[a].einsum] != i)
      a++;
    while (b < want->nxfers && want->group_of[want->xfers[b].einsum] != i)
      b++;
    if (a == got->nxfers || b == want->nxfers) {
      ok = a == got->nxfers && b == want->nxfers;
      break;
    }
    const Transfer *x = &got->xfers[a++], *y = &want->xfers[b++];
    ok = x->einsum == y->einsum && x->tensor == y->tensor &&
         x->kind == y->kind && x->elems == y->elems;
  }
  if (!ok)
    test_fail(__FILE__, __LINE__,
              "%s: nodes [%d, %d) of %d patched differ from the plan made "
              "whole",
              at, i, j, nodes->n);
  return 1;
}

static long regroup_case(const Case *k, void *arg) {
  (void)arg;
  Nodes *nodes = search_nodes(k->c, k->s);
  Regroup *rg =
      regroup_new(k->c, k->s, fusion_plan_alone(k->c, k->s, nodes));
  int *group_of = xcalloc((size_t)k->c->neinsums + 1, sizeof *group_of);
  long checked = 0;
  for (int i = 0; i < nodes->n; i++)
    for (int j = i + 1; j <= nodes->n; j++) {
      for (int q = 0; q < nodes->n; q++)
        for (int m = 0; m < nodes->nodes[q].n; m++)
          group_of[nodes->nodes[q].einsums[m]] =
              q < i ? q : q < j ? i : q - (j - i - 1);
      Diag ignore = {0};
      Plan *want = fusion_plan_groups(k->c, k->s, ST_FULL, group_of, &ignore);
      checked += regroup_check(k->c, nodes, regroup_plan(rg, i, j), want, i,
                               j);
      plan_free(want);
    }
  free(group_of);
  regroup_free(rg);
  nodes_free(nodes);
  return checked;
}

/* Every run of every cascade's search nodes (specs/, tests/specs/good,
 * prefill and decode), patched into the every-node-alone plan, is the
 * group fusion_plan_groups makes of it. */
TEST(search_regroup_is_the_plan_made_whole) {
  Walked w = each_case((Cases){true, true, 0, NULL}, regroup_case, NULL);
  CHECK(w.checked >= 2000);
}

/* ---- binding by cost ---- */


/* Group G's compute time as binding by cost counts it: one Einsum after
 * another (compute + fill), or pipelined (the busiest array + the longest
 * fill). */
static double compute_span(const Eval *ev, const Arch *a, int g,
                           Compose how) {
  const GroupEval *ge = &ev->g[g];
  double busy[64] = {0}, fill = 0, seq = 0;
  for (int i = ge->first; i < ge->first + ge->n; i++) {
    const EinsumEval *r = &ev->e[i];
    seq += r->compute_cycles + a->units[r->unit].pipeline;
    busy[arch_array_of(a, r->unit)] += r->unit_cycles;
    if (r->epilogue >= 0)
      busy[arch_array_of(a, r->epilogue)] += r->epilogue_cycles;
    fill = fmax(fill, a->units[r->unit].pipeline);
  }
  double top = 0;
  for (int u = 0; u < a->nunits; u++)
    top = fmax(top, busy[u]);
  return how == COMPOSE_SEQUENTIAL ? seq : top + fill;
}

/* Every assignment of C's Einsums to A's units (an architecture binding
 * for each: those a unit cannot run fail to price), in the one-group plan
 * PLAN: none takes less compute than binding by cost. */
static int check_assignments(const Cascade *c, const Shape *s, Arch *a,
                             const Pair *pairs, const int *group_of,
                             Compose how, MapMemo *memo) {
  ModelOpts o = model_default_opts(design_of_strategy(ST_FULL));
  o.compose = how;
  o.bind = BIND_COST;
  Diag d = {0};
  Design des = design_of_strategy(ST_FULL);
  Eval *best = model_eval_memo(
      c, s, a, pairs, des, fusion_plan_groups(c, s, ST_FULL, group_of, &d),
      &o, memo, &d);
  if (!best)
    return 0;
  double least = compute_span(best, a, 0, how);
  int n = c->neinsums, tried = 0;
  ArchBinding *saved = a->bindings, bd[16];
  int nsaved = a->nbindings;
  long total = 1;
  for (int i = 0; i < n; i++)
    total *= a->nunits;
  o.bind = BIND_RULE; /* the binding section decides every Einsum */
  for (long k = 0; k < total; k++) {
    long q = k;
    for (int i = 0; i < n; i++, q /= a->nunits)
      bd[i] = (ArchBinding){
          c->tensors[c->einsums[i]->out.tensor].name, (int)(q % a->nunits),
          {0, 0}};
    a->bindings = bd;
    a->nbindings = n;
    Diag ig = {0};
    Eval *ev = model_eval_memo(
        c, s, a, pairs, des, fusion_plan_groups(c, s, ST_FULL, group_of, &ig),
        &o, memo, &ig);
    a->bindings = saved;
    a->nbindings = nsaved;
    if (!ev)
      continue;
    tried++;
    double span = compute_span(ev, a, 0, how);
    if (span < least * (1 - 1e-9))
      test_fail(__FILE__, __LINE__,
                "%s on %s (%s): assignment %ld takes %.9g cycles, binding by "
                "cost %.9g",
                c->path, a->name, how ? "pipelined" : "sequential", k, span,
                least);
    eval_free(ev);
  }
  eval_free(best);
  return tried;
}

static long assignments_case(const Case *k, void *arg) {
  (void)arg;
  int *one = xcalloc((size_t)k->c->neinsums + 1, sizeof *one);
  long checked = 0;
  for (int a = 0; a < k->na; a++)
    for (int how = 0; how < 2; how++)
      checked += check_assignments(k->c, k->s, k->archs[a], k->pairs, one,
                                   (Compose)how, k->memo) > 0;
  free(one);
  return checked;
}

TEST(bind_cost_least_of_every_assignment) {
  MapMemo *memo = map_memo_new(false);
  Walked w = each_case((Cases){true, false, 6, memo}, assignments_case,
                       NULL);
  CHECK(w.checked >= 4L * w.na); /* a few small cascades, both compositions */
  map_memo_free(memo);
}

/* Merged nodes split (issue 35). A RetNet-like retention layer (our own
 * sizes: 4 x 512 tokens, D = 768, 6 heads of 128) on Eyeriss: Q, K and V
 * read the same X, so fusion_merge makes them one node {Q K V}, which
 * every grouping of the merged order keeps whole. Its best grouping there
 * (enumerated here under every spill variant: 6.841 s, {Q K V} KV | {SD
 * S} O | Y) is beaten by more than 10 % by the search (5.053 s), whose
 * plan parts {Q K V}; and the search equals the enumeration of the
 * opened order. */
TEST(search_splits_merged_nodes) {
  static const char spec[] =
      "params: {gamma: 0.9}\n"
      "shape: {B: 4, I: 512, D: 768, H: 6, E: 128, F: 128}\n"
      "outputs: [Y]\n"
      "einsum:\n"
      "  declaration:\n"
      "    X: [B, I, D]\n"
      "    WQ: [D, H, E]\n"
      "    WK: [D, H, E]\n"
      "    WV: [D, H, F]\n"
      "    WO: [H, F, D]\n"
      "    S0: [B, H, E, F]\n"
      "    Q: [B, I, H, E]\n"
      "    K: [B, I, H, E]\n"
      "    V: [B, I, H, F]\n"
      "    SD: [B, I, H, E, F]\n"
      "    KV: [B, I, H, E, F]\n"
      "    S: [B, I, H, E, F]\n"
      "    O: [B, I, H, F]\n"
      "    Y: [B, I, D]\n"
      "  expressions:\n"
      "    - S[b, i<0, h, e, f] = S0[b, h, e, f]\n"
      "    - Q[b,i,h,e] = X[b,i,d] * WQ[d,h,e]\n"
      "    - K[b,i,h,e] = X[b,i,d] * WK[d,h,e]\n"
      "    - V[b,i,h,f] = X[b,i,d] * WV[d,h,f]\n"
      "    - SD[b,i,h,e,f] = gamma * S[b,i-1,h,e,f]\n"
      "    - KV[b,i,h,e,f] = K[b,i,h,e] * V[b,i,h,f]\n"
      "    - S[b,i,h,e,f] = SD[b,i,h,e,f] + KV[b,i,h,e,f]\n"
      "    - O[b,i,h,f] = Q[b,i,h,e] * S[b,i,h,e,f]\n"
      "    - Y[b,i,d] = O[b,i,h,f] * WO[h,f,d]\n";
  Diag d = {0};
  Cascade *c = spec_parse("retention.yaml", spec, sizeof spec - 1, &d);
  Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
  Arch *a = s ? arch_load("archs/eyeriss.yaml", &d) : NULL;
  if (!a) {
    test_fail(__FILE__, __LINE__, "%s", d.msg);
    shape_free(s);
    cascade_free(c);
    return;
  }
  Pair *pairs = fusion_classify(c, s);
  MapMemo *memo = map_memo_new(false);
  Nodes *merged = fusion_merge(c, s);
  double whole = enumerate_nodes(c, s, a, pairs, merged, SO_LATENCY, memo);
  nodes_free(merged);
  ModelOverrides ov = model_no_overrides();
  SearchResult *r = search_best(c, s, a, pairs, &ov, SO_LATENCY, memo, &d);
  CHECK(r != NULL);
  if (r) {
    CHECK(r->found < 0.9 * whole);
    CHECK_NEAR(r->found / enumerate_space(c, s, a, pairs, SO_LATENCY, memo),
               1, 1e-12);
    const int *g = r->best->plan->group_of;
    int q = c->tensors[cascade_tensor(c, "Q")].producer,
        k = c->tensors[cascade_tensor(c, "K")].producer,
        v = c->tensors[cascade_tensor(c, "V")].producer;
    CHECK(q >= 0 && k >= 0 && v >= 0);
    if (q >= 0 && k >= 0 && v >= 0)
      CHECK(g[q] != g[k] || g[q] != g[v]); /* {Q K V} split */
  }
  search_free(r);
  map_memo_free(memo);
  free(pairs);
  arch_free(a);
  shape_free(s);
  cascade_free(c);
}
