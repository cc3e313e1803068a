/* repro_report.c — the paper's figures beside ours: the table and JSON. */
#include "report.h"

#include <math.h>
#include <string.h>

double target_ratio(const Target *t) {
  return t->paper != 0 ? t->ours / t->paper : NAN;
}

bool target_holds(const Target *t) {
  double r = target_ratio(t);
  if (t->at_least)
    return t->ours >= t->paper * 0.85;
  return r >= 0.85 && r <= 1.15;
}

void target_value(char *out, size_t cap, const Target *t, double v,
                  bool bound) {
  const char *u = t->unit ? t->unit : "";
  if (strcmp(u, "groups") == 0) /* a count, which T's "what" names */
    u = "";
  bool attached = strcmp(u, "x") == 0 || strcmp(u, "%") == 0;
  snprintf(out, cap, "%s%.4g%s%s", bound && t->at_least ? ">" : "", v,
           u[0] && !attached ? " " : "", u);
}

TargetRow target_row(const Target *t) {
  TargetRow w = {.ok = target_holds(t)};
  target_value(w.paper, sizeof w.paper, t, t->paper, true);
  target_value(w.ours, sizeof w.ours, t, t->ours, false);
  return w;
}

void report_units(Buf *b, const Arch *a) {
  for (int u = 0; u < a->nunits; u++) {
    Buf rate = {0};
    fmt_si(&rate, repro_unit_peak(a, u));
    buf_printf(b, "%s%s (%s, %sops/s)", u ? ", " : "", a->units[u].name,
               role_name(a->units[u].role), rate.s ? rate.s : "0 ");
    buf_free(&rate);
  }
}

/* What of the paper compares with R's setup. */
static void paper_part(Buf *b, const Repro *r) {
  if (r->paper_setup) {
    buf_printf(b, "This is the paper's setup: its figures are set beside "
                  "ours.");
    return;
  }
  /* Its model is named only where this setup has a model too: a cascade
   * without one is no language model. */
  buf_printf(b, "The paper evaluates %s" REPRO_PAPER_SPEC " on "
                REPRO_PAPER_ARCH ", B=%d, I=%d; ",
             r->model_names[0] ? REPRO_PAPER_MODEL " with " : "",
             REPRO_PAPER_BATCH, REPRO_PAPER_PREFILL);
  if (r->paper_spec && r->paper_arch)
    buf_printf(b, "of its figures, only the cascade's structure (§II, "
                  "§IV) and Table II compare with this setup.");
  else if (r->paper_spec)
    buf_printf(b, "of its figures, only the cascade's structure (§II, "
                  "§IV) compares with this setup.");
  else if (r->paper_arch)
    buf_printf(b, "of its figures, only Table II (the architecture) "
                  "compares with this setup.");
  else
    buf_printf(b, "none of its figures compares with this setup.");
}

/* The first model and its layers, or the spec's own sizes. */
static void model_part(Buf *b, const Repro *r) {
  if (r->model_names[0])
    buf_printf(b, "; model %s", r->model_names[0]);
  else
    buf_printf(b, "; no model: the spec's own sizes");
  if (r->layers[0] > 0)
    buf_printf(b, r->model_names[0] ? " (%d layer%s)" : "; %d layer%s end "
                                                         "to end",
               r->layers[0], r->layers[0] == 1 ? "" : "s");
  else
    buf_printf(b, "; no layer count, so no end-to-end figures (--layers N "
                  "gives one)");
}

void report_repro_setup(Buf *b, const Repro *r) {
  buf_printf(b, "Cascade %s (%d Einsums per layer%s%s)", r->spec_label,
             r->cascade->neinsums, r->sizes[0] ? "; " : "", r->sizes);
  model_part(b, r);
  for (int m = 1; m < r->nmodels; m++)
    buf_printf(b, ", and %s (%d layers) for a second sweep",
               r->model_names[m], r->layers[m]);
  buf_printf(b, "; batch B=%g; prefill at I=%g, decode at I=1, sweeps over "
                "I=2^0..2^20",
             r->batch, r->prefill);
  if (r->settings[0])
    buf_printf(b, "; %s", r->settings);
  buf_printf(b, ". Architecture %s (%s): ", r->arch_label, r->arch_path);
  report_units(b, r->arch);
  Buf bw = {0};
  fmt_si(&bw, r->bandwidth);
  buf_printf(b, "; DRAM %sB/s. ", bw.s);
  buf_free(&bw);
  paper_part(b, r);
}

/* One row of the designs table: LABEL's per-layer latency (S) and energy
 * (J), prefill and decode, the latency also as speedup over best
 * unfused, the energy per token. */
static void design_row(Buf *b, const Repro *r, const char *label,
                       const double s[PH_COUNT], const double j[PH_COUNT]) {
  const Result *u = &r->res[0][PH_PREFILL][DES_UNFUSED],
               *ud = &r->res[0][PH_DECODE][DES_UNFUSED];
  buf_printf(b, "%-15s %14.2f %7.3fx %14.2f %7.3fx %11.4g %11.4g\n", label,
             s[PH_PREFILL] * 1e6, u->seconds / s[PH_PREFILL],
             s[PH_DECODE] * 1e6, ud->seconds / s[PH_DECODE],
             j[PH_PREFILL] / (r->batch * r->prefill) * 1e6,
             j[PH_DECODE] / r->batch * 1e6);
}

/* The designs at a glance, and best (searched) beside them. */
static void designs_text(Buf *b, const Repro *r) {
  buf_printf(b, "%-15s %14s %8s %14s %8s %11s %11s\n", "design",
             "prefill_us", "speedup", "decode_us", "speedup",
             "pre_uJ/tok", "dec_uJ/tok");
  double s[PH_COUNT], j[PH_COUNT];
  for (int d = 0; d < DES_COUNT; d++) {
    for (int p = 0; p < PH_COUNT; p++)
      s[p] = r->res[0][p][d].seconds, j[p] = r->res[0][p][d].energy_j;
    design_row(b, r, design_label((Design)d), s, j);
  }
  const Searched *bs = r->best[0];
  for (int p = 0; p < PH_COUNT; p++)
    s[p] = bs[p].seconds, j[p] = bs[p].energy_j;
  design_row(b, r, "best (searched)", s, j);
  buf_printf(b, "best (searched): the schedule `mambalaya search` finds for "
                "latency; gap to ideal %.4gx prefill (%d group%s), %.4gx "
                "decode (%d group%s)\n",
             repro_searched_gap(&bs[PH_PREFILL]), bs[PH_PREFILL].groups,
             bs[PH_PREFILL].groups == 1 ? "" : "s",
             repro_searched_gap(&bs[PH_DECODE]), bs[PH_DECODE].groups,
             bs[PH_DECODE].groups == 1 ? "" : "s");
}

/* A ratio cell, "1.234x", or "-" where there is none (an end-to-end row
 * without a layer count): never "nan". */
static void ratio_cell(char *out, size_t n, double v) {
  if (isfinite(v))
    snprintf(out, n, "%.4gx", v);
  else
    snprintf(out, n, "-");
}

/* The width of a label column: at least MIN, else the longest label, so
 * that no label is cut. */
static int label_width(int min, const char *label) {
  int n = (int)strlen(label);
  return n > min ? n : min;
}

/* Every figure where the paper's best variant appears, again with best
 * (searched) in its place, and both gaps to ideal. */
static void searched_text(Buf *b, const Repro *r) {
  int wd = 56;
  for (int i = 0; i < r->nsearched; i++)
    wd = label_width(wd, r->searched[i].what);
  buf_printf(b, "\nThe best variant (the best of the four strategies) "
                "against best (searched):\n%-*s %8s %8s %8s %8s %8s\n",
             wd, "figure", "paper", "variant", "searched", "var_gap",
             "srch_gap");
  for (int i = 0; i < r->nsearched; i++) {
    const SearchedRow *w = &r->searched[i];
    char paper[16] = "-", cells[4][16];
    if (isfinite(w->paper))
      snprintf(paper, sizeof paper, "%s%.4gx", w->at_least ? ">" : "",
               w->paper);
    const double v[4] = {w->variant, w->searched, w->variant_gap, w->gap};
    for (int k = 0; k < 4; k++)
      ratio_cell(cells[k], sizeof cells[k], v[k]);
    buf_printf(b, "%-*s %8s %8s %8s %8s %8s\n", wd, w->what, paper,
               cells[0], cells[1], cells[2], cells[3]);
  }
}

void report_repro_text(Buf *b, const Repro *r) {
  report_repro_setup(b, r);
  buf_printf(b, "\n\nOne layer of %s per design:\n", repro_workload(r, 0));
  designs_text(b, r);
  searched_text(b, r);
  if (r->ntargets > 0) {
    int wd = 64;
    for (int i = 0; i < r->ntargets; i++)
      wd = label_width(wd, r->targets[i].what);
    buf_printf(b, "\n%-10s %-*s %10s %10s %7s\n", "where", wd, "figure",
               "paper", "ours", "ratio");
    int off = 0;
    for (int i = 0; i < r->ntargets; i++) {
      const Target *t = &r->targets[i];
      TargetRow w = target_row(t);
      off += !w.ok;
      char rt[16] = "-";
      if (isfinite(target_ratio(t)))
        snprintf(rt, sizeof rt, "%.3f", target_ratio(t));
      buf_printf(b, "%-10s %-*s %10s %10s %7s%s\n", t->where, wd, t->what,
                 w.paper, w.ours, rt, w.ok ? "" : "  *");
    }
    buf_printf(b, "\n%d figures, %d within 0.85-1.15 of the paper's; those "
                  "marked * are explained in docs/model.md.\n",
               r->ntargets, r->ntargets - off);
  }
  char models[32] = "the spec's sizes";
  if (r->model_names[0])
    snprintf(models, sizeof models, "%d model%s", r->nmodels,
             r->nmodels > 1 ? "s" : "");
  buf_printf(b, "The whole evaluation (%s, %d sequence lengths, %d designs, "
                "prefill and decode) took %.3f s.\n",
             models, REPRO_LENGTHS, DES_COUNT, r->elapsed);
}

/* A design's figures in one phase. */
static json_t *phase_json(double seconds, double dram_bytes, double energy_j) {
  json_t *ph = json_object();
  REPORT_REALS(ph, {"latency_s", seconds}, {"dram_bytes", dram_bytes},
               {"energy_j", energy_j});
  return ph;
}

/* designs.best: best (searched) per phase, as the designs are, with its
 * gap to ideal and where it came from. */
static json_t *searched_json(const Repro *r) {
  json_t *o = json_object();
  for (int p = 0; p < PH_COUNT; p++) {
    const Searched *x = &r->best[0][p];
    json_t *ph = phase_json(x->seconds, x->dram_bytes, x->energy_j);
    json_object_set_new(ph, "groups", json_integer(x->groups));
    json_object_set_new(ph, "gap_to_ideal",
                        report_real(repro_searched_gap(x)));
    json_object_set_new(ph, "from", json_string(report_from_name(x->from)));
    json_object_set_new(o, p == PH_PREFILL ? "prefill" : "decode", ph);
  }
  return o;
}

json_t *report_repro_json(const Repro *r) {
  json_t *root = json_object();
  json_t *setup = json_object();
  json_object_set_new(setup, "spec", json_string(r->spec_label));
  json_t *models = json_array();
  for (int m = 0; m < r->nmodels; m++)
    json_array_append_new(models, json_string(r->model_names[m]));
  json_object_set_new(setup, "models", models);
  json_object_set_new(setup, "layers", r->layers[0] > 0
                                           ? json_integer(r->layers[0])
                                           : json_null());
  json_object_set_new(setup, "arch", json_string(r->arch_label));
  json_object_set_new(setup, "arch_path", json_string(r->arch_path));
  json_object_set_new(setup, "batch", report_real(r->batch));
  json_object_set_new(setup, "prefill_tokens", report_real(r->prefill));
  json_object_set_new(setup, "settings", json_string(r->settings));
  json_object_set_new(setup, "paper_setup", json_boolean(r->paper_setup));
  json_object_set_new(root, "setup", setup);
  json_t *ts = json_object();
  for (int i = 0; i < r->ntargets; i++) {
    const Target *t = &r->targets[i];
    json_t *o = json_object();
    REPORT_REALS(o, {"ours", t->ours}, {"paper", t->paper},
                 {"ratio", target_ratio(t)});
    json_object_set_new(o, "unit", json_string(t->unit));
    json_object_set_new(o, "where", json_string(t->where));
    json_object_set_new(o, "what", json_string(t->what));
    json_object_set_new(o, "at_least", json_boolean(t->at_least));
    json_object_set_new(o, "within", json_boolean(target_holds(t)));
    json_object_set_new(ts, t->key, o);
  }
  json_object_set_new(root, "targets", ts);
  json_t *ds = json_object();
  for (int d = 0; d < DES_COUNT; d++) {
    json_t *o = json_object();
    for (int p = 0; p < PH_COUNT; p++) {
      const Result *x = &r->res[0][p][d];
      json_object_set_new(o, p == PH_PREFILL ? "prefill" : "decode",
                          phase_json(x->seconds, x->read + x->write,
                                     x->energy_j));
    }
    json_object_set_new(ds, design_name((Design)d), o);
  }
  json_object_set_new(ds, "best", searched_json(r));
  json_object_set_new(root, "designs", ds);
  json_t *rows = json_object();
  for (int i = 0; i < r->nsearched; i++) {
    const SearchedRow *w = &r->searched[i];
    json_t *o = json_object();
    json_object_set_new(o, "what", json_string(w->what));
    json_object_set_new(o, "paper", report_real(w->paper));
    json_object_set_new(o, "at_least", json_boolean(w->at_least));
    REPORT_REALS(o, {"variant", w->variant}, {"searched", w->searched},
                 {"variant_gap_to_ideal", w->variant_gap},
                 {"searched_gap_to_ideal", w->gap});
    json_object_set_new(rows, w->key, o);
  }
  json_object_set_new(root, "best_searched", rows);
  json_object_set_new(root, "elapsed_s", report_real(r->elapsed));
  return root;
}
