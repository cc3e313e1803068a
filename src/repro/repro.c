/* repro.c — running the paper's evaluation and computing its figures. */
#include "repro.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../embed/embed.h"
#include "../spec/spec.h"

static const char *const models[REPRO_MODELS] = {"mamba-370m", "mamba-2.8b"};

/* Context to generated tokens: 1:16, 1:1, 64:1. */
static const Scenario scenarios[REPRO_SCENARIOS] = {
    {"short_context", "short context, long generation", 256, 4096},
    {"similar", "similar lengths", 2048, 2048},
    {"long_context", "long context, short generation", 16384, 256},
};

enum { BATCH = 64, PREFILL_I = 2048 };

typedef struct Run {
  Cascade *c;
  const Arch *a;
  Diag *d;
  Repro *r;
} Run;

static Shape *bind(const Run *x, int model, double tokens) {
  Setting set[] = {{"B", BATCH}, {"I", tokens}};
  return shape_bind(x->c, preset_find(models[model]), set, 2, true, x->d);
}

static Eval *price(const Run *x, const Shape *s, const Pair *pairs,
                   Design d, Accounting acc, Compose comp) {
  ModelOpts o = model_default_opts(d);
  o.accounting = acc;
  o.compose = comp;
  return model_eval(x->c, s, x->a, pairs, d, &o, x->d);
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
    s->start = e->start / clock;
    s->end = e->end / clock;
    double dur = s->end - s->start;
    double bytes = e->read + e->write;
    s->compute_util = dur > 0 ? e->work.total / dur / x->r->peak_ops : 0;
    s->memory_util = dur > 0 ? bytes / dur / x->r->bandwidth : 0;
    s->intensity = bytes > 0 ? e->work.total / bytes : INFINITY;
    s->perf = dur > 0 ? e->work.total / dur : 0;
  }
}

/* Every design at one model and phase. */
static bool price_point(const Run *x, int model, Phase ph) {
  Shape *s = bind(x, model, ph == PH_PREFILL ? PREFILL_I : 1);
  if (!s)
    return false;
  Pair *pairs = fusion_classify(x->c, s);
  bool ok = true;
  for (int d = 0; ok && d < DES_COUNT; d++) {
    Eval *a = price(x, s, pairs, (Design)d, ACCOUNT_ACHIEVED,
                    COMPOSE_SEQUENTIAL);
    Eval *i = price(x, s, pairs, (Design)d, ACCOUNT_IDEAL, COMPOSE_SEQUENTIAL);
    Eval *p = price(x, s, pairs, (Design)d, ACCOUNT_ACHIEVED,
                    COMPOSE_PIPELINED);
    ok = a && i && p;
    if (ok) {
      Result *r = &x->r->res[model][ph][d];
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
      r->groups = a->ngroups;
      if (model == 0) {
        keep_timeline(x, a, &x->r->timeline[ph][d]);
        keep_timeline(x, i, &x->r->ideal_timeline[ph][d]);
      }
    }
    eval_free(a);
    eval_free(i);
    eval_free(p);
  }
  free(pairs);
  shape_free(s);
  return ok;
}

/* Per-layer prefill latency of every design at I = 2^k. */
static bool sweep(const Run *x, int model) {
  bool ok = true;
  for (int k = 0; ok && k < REPRO_LENGTHS; k++) {
    Shape *s = bind(x, model, ldexp(1, k));
    if (!s)
      return false;
    Pair *pairs = fusion_classify(x->c, s);
    for (int d = 0; ok && d < DES_COUNT; d++) {
      Eval *a = price(x, s, pairs, (Design)d, ACCOUNT_ACHIEVED,
                      COMPOSE_SEQUENTIAL);
      ok = a != NULL;
      if (ok)
        x->r->sweep[model][k][d] = a->seconds;
      eval_free(a);
    }
    free(pairs);
    shape_free(s);
  }
  return ok;
}

/* L layers x (prefill of I0 tokens + G decode steps), for mamba-370m. */
static bool end_to_end(const Run *x) {
  Repro *r = x->r;
  bool ok = true;
  for (int sc = 0; ok && sc < REPRO_SCENARIOS; sc++) {
    Shape *s = bind(x, 0, r->scenarios[sc].prompt);
    if (!s)
      return false;
    Pair *pairs = fusion_classify(x->c, s);
    for (int d = 0; ok && d < DES_COUNT; d++) {
      Eval *a = price(x, s, pairs, (Design)d, ACCOUNT_ACHIEVED,
                      COMPOSE_SEQUENTIAL);
      Eval *i = price(x, s, pairs, (Design)d, ACCOUNT_IDEAL,
                      COMPOSE_SEQUENTIAL);
      Eval *p = price(x, s, pairs, (Design)d, ACCOUNT_ACHIEVED,
                      COMPOSE_PIPELINED);
      ok = a && i && p;
      if (ok) {
        double L = r->layers[0], G = r->scenarios[sc].generated;
        const Result *dec = &r->res[0][PH_DECODE][d];
        r->e2e[sc][d] = L * (a->seconds + G * dec->seconds);
        r->e2e_ideal[sc][d] = L * (i->seconds + G * dec->seconds_ideal);
        r->e2e_pipelined[sc][d] =
            L * (p->seconds + G * dec->seconds_pipelined);
      }
      eval_free(a);
      eval_free(i);
      eval_free(p);
    }
    free(pairs);
    shape_free(s);
  }
  return ok;
}

/* ---- the figures ---- */

static void target(Repro *r, const char *key, const char *where,
                   const char *what, double paper, double ours,
                   const char *unit) {
  if (r->ntargets == REPRO_MAX_TARGETS)
    return;
  r->targets[r->ntargets++] =
      (Target){key, where, what, paper, ours, unit, false};
}

static const Design strategies[] = {DES_RI, DES_RI_RSB, DES_RI_RSB_RSP,
                                    DES_FULL};

/* The best of the four strategies: Mambalaya's design for that case. */
static double best_of(const double *by_design) {
  double best = INFINITY;
  for (int k = 0; k < 4; k++)
    best = fmin(best, by_design[strategies[k]]);
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
    n += m->nodes[k].n > 1;
  nodes_free(m);
  return n;
}

static void structure_targets(const Run *x, Repro *r) {
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
  Shape *s = bind(x, 0, PREFILL_I);
  Pair *pairs = fusion_classify(c, s);
  static const char *const keys[ST_COUNT] = {
      "groups.unfused", "groups.ri", "groups.ri_rsb", "groups.ri_rsb_rsp",
      "groups.full"};
  static const double paper[ST_COUNT] = {24, 12, 8, 3, 1};
  for (int st = 0; st < ST_COUNT; st++) {
    Plan *p = fusion_plan(c, s, pairs, (Strategy)st, STITCH_GREEDY,
                          OBJ_GROUPS, &d);
    char what[64];
    snprintf(what, sizeof what, "fusion groups, %s", strategy_name(st));
    target(r, keys[st], "§IV", xstrdup(what), paper[st], p->ngroups,
           "groups");
    plan_free(p);
  }
  target(r, "merges.count", "§IV",
         "shared-input merges (NEX, X, Delta)", 3, count_merges(c, s), "");
  free(pairs);
  shape_free(s);
  /* Table II, read back from the architecture. */
  const Arch *a = x->a;
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
  target(r, "arch.glb_mb", "Table II", "global buffer", 32,
         a->nlevels > 1 ? a->levels[1].capacity / 1048576 : 0, "MiB");
  target(r, "arch.registers_mb", "Table II", "registers", 4.25,
         a->nlevels > 2 ? a->levels[2].capacity / 1048576 : 0, "MiB");
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
  static const char *const skeys[] = {"speedup.prefill.ri",
                                      "speedup.prefill.ri_rsb",
                                      "speedup.prefill.ri_rsb_rsp",
                                      "speedup.prefill.full"};
  static const char *const pkeys[] = {"speedup.pipelined.ri",
                                      "speedup.pipelined.ri_rsb",
                                      "speedup.pipelined.ri_rsb_rsp",
                                      "speedup.pipelined.full"};
  static const double spaper[] = {2.72, 2.99, 3.35, 4.9};
  static const double ppaper[] = {3.9, 4.7, 5.9, 6.0};
  for (int k = 0; k < 4; k++) {
    Design d = strategies[k];
    char what[128];
    snprintf(what, sizeof what,
             "%s over unfused, end to end, long context (I0=%g, G=%g)",
             design_label(d), r->scenarios[lc].prompt,
             r->scenarios[lc].generated);
    target(r, skeys[k], "§VI-C", xstrdup(what), spaper[k],
           r->e2e[lc][DES_UNFUSED] / r->e2e[lc][d], "x");
    snprintf(what, sizeof what, "%s, with parallel pipelining",
             design_label(d));
    target(r, pkeys[k], "§VI-C", xstrdup(what), ppaper[k],
           r->e2e_pipelined[lc][DES_UNFUSED] / r->e2e_pipelined[lc][d], "x");
  }
  char what[128];
  snprintf(what, sizeof what,
           "RI over unfused, end to end, short context (I0=%g, G=%g)",
           r->scenarios[sc].prompt, r->scenarios[sc].generated);
  target(r, "speedup.decode.ri", "§VI-C", xstrdup(what), 2.23,
         r->e2e[sc][DES_UNFUSED] / r->e2e[sc][DES_RI], "x");

  double lo = INFINITY, hi = 0;
  for (int k = 0; k < 4; k++) {
    double red = u->inter / pre[strategies[k]].inter;
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

Repro *repro_run(Cascade *spec, const Arch *arch, Diag *d) {
  double t0 = now_seconds();
  Repro *r = xcalloc(1, sizeof *r);
  Run x = {.c = spec, .a = arch, .d = d, .r = r};
  r->cascade = spec;
  for (int m = 0; m < REPRO_MODELS; m++) {
    r->model_names[m] = models[m];
    r->layers[m] = preset_find(models[m])->n_layer;
  }
  memcpy(r->scenarios, scenarios, sizeof scenarios);
  int mu = arch_unit(arch, ROLE_MATRIX), vu = arch_unit(arch, ROLE_VECTOR);
  int fu = arch_unit(arch, ROLE_FEEDER);
  r->peak_ops = mu >= 0 ? arch_peak(arch, mu, OPC_MACC) : 0;
  r->vector_ops = vu >= 0 ? arch_peak(arch, vu, OPC_ADD) : 0;
  r->feeder_ops = fu >= 0 ? arch_peak(arch, fu, OPC_ADD) : 0;
  r->bandwidth = arch->levels[0].bandwidth;
  bool ok = true;
  for (int m = 0; ok && m < REPRO_MODELS; m++)
    for (int p = 0; ok && p < PH_COUNT; p++)
      ok = price_point(&x, m, (Phase)p);
  ok = ok && end_to_end(&x);
  for (int m = 0; ok && m < REPRO_MODELS; m++)
    ok = sweep(&x, m);
  if (!ok) {
    repro_free(r);
    return NULL;
  }
  structure_targets(&x, r);
  evaluation_targets(r);
  r->elapsed = now_seconds() - t0;
  return r;
}

void repro_free(Repro *r) {
  if (!r)
    return;
  for (int p = 0; p < PH_COUNT; p++)
    for (int d = 0; d < DES_COUNT; d++) {
      free(r->timeline[p][d].seg);
      free(r->ideal_timeline[p][d].seg);
    }
  for (int i = 0; i < r->ntargets; i++) {
    /* Descriptions built at run time were duplicated. */
    const char *w = r->targets[i].what;
    if (strstr(w, "fusion groups,") || strstr(w, "over unfused, end") ||
        strstr(w, "with parallel pipelining"))
      free((char *)w);
  }
  free(r);
}

const Target *repro_target(const Repro *r, const char *key) {
  for (int i = 0; i < r->ntargets; i++)
    if (strcmp(r->targets[i].key, key) == 0)
      return &r->targets[i];
  return NULL;
}
