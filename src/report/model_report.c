/* model_report.c — a priced design as a table and as JSON. */
#include "report.h"

#include <math.h>
#include <string.h>

/* What bounds R's cycles: "compute", or the slowest level's name. */
static const char *bound_of(const Arch *a, const EinsumEval *r) {
  return r->bound < 0 ? "compute" : a->levels[r->bound].name;
}

int report_components(const Arch *a, const Eval *ev, Component *out) {
  int n = 0;
  for (int l = 0; l < a->nlevels; l++)
    out[n++] = (Component){a->levels[l].name, "memory",
                           level_role_name(arch_level_role(a, l)),
                           ev ? ev->level[l].energy_pj * 1e-12 : NAN,
                           arch_level_area(a, l)};
  for (int u = 0; u < a->nunits; u++)
    out[n++] = (Component){a->units[u].name, "compute",
                           role_name(a->units[u].role),
                           ev ? ev->unit_energy[u] * 1e-12 : NAN,
                           arch_unit_area(a, u)};
  return n;
}

static json_t *real_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

json_t *report_components_json(const Arch *a, const Eval *ev) {
  Component *cs = xcalloc((size_t)(a->nlevels + a->nunits), sizeof *cs);
  int n = report_components(a, ev, cs);
  json_t *arr = json_array();
  for (int i = 0; i < n; i++) {
    json_t *x = json_object();
    json_object_set_new(x, "name", json_string(cs[i].name));
    json_object_set_new(x, "kind", json_string(cs[i].kind));
    json_object_set_new(x, "role", json_string(cs[i].role));
    json_object_set_new(x, "energy_j", real_or_null(cs[i].energy_j));
    json_object_set_new(x, "area_mm2", real_or_null(cs[i].area_mm2));
    json_array_append_new(arr, x);
  }
  free(cs);
  return arr;
}

/* What no architecture's area counts (docs/architecture.md, "Area"). */
static const char *const area_excluded[] = {
    "off-chip interfaces", "control", "on-chip network", NULL};

/* A's area by class, the reading of its nonlinear hardware and the total
 * under each reading: the like-for-like sum a reader can redo. */
static void area_classes_text(Buf *b, const Arch *a) {
  double cls[AREA_CLASS_COUNT];
  arch_area_by_class(a, cls);
  buf_printf(b, "  area by class (mm2):");
  for (int c = 0; c < AREA_CLASS_COUNT; c++)
    buf_printf(b, " %s %.2f%s", area_class_name((AreaClass)c), cls[c],
               c + 1 < AREA_CLASS_COUNT ? "," : "\n");
  buf_printf(b, "  nonlinear hardware: %s; total as",
             nonlinear_hw_name(a->area.nonlinear));
  for (int h = 0; h < NONLINEAR_COUNT; h++)
    buf_printf(b, " %s %.2f%s", nonlinear_hw_name((NonlinearHw)h),
               arch_area_as(a, (NonlinearHw)h),
               h + 1 < NONLINEAR_COUNT ? "," : "\n");
  buf_printf(b, "  not counted on any architecture:");
  for (int i = 0; area_excluded[i]; i++)
    buf_printf(b, "%s %s", i ? "," : "", area_excluded[i]);
  buf_printf(b, "\n");
}

static json_t *area_classes_json(const Arch *a) {
  json_t *o = json_object(), *by = json_object(), *as = json_object();
  double cls[AREA_CLASS_COUNT];
  arch_area_by_class(a, cls);
  for (int c = 0; c < AREA_CLASS_COUNT; c++)
    json_object_set_new(by, area_class_name((AreaClass)c),
                        report_real(cls[c]));
  for (int h = 0; h < NONLINEAR_COUNT; h++)
    json_object_set_new(as, nonlinear_hw_name((NonlinearHw)h),
                        report_real(arch_area_as(a, (NonlinearHw)h)));
  json_t *ex = json_array();
  for (int i = 0; area_excluded[i]; i++)
    json_array_append_new(ex, json_string(area_excluded[i]));
  json_object_set_new(o, "by_class_mm2", by);
  json_object_set_new(o, "nonlinear_hardware",
                      json_string(nonlinear_hw_name(a->area.nonlinear)));
  json_object_set_new(o, "total_as_mm2", as);
  json_object_set_new(o, "excluded", ex);
  return o;
}

/* The components table: energy and area per memory level and unit. */
static void components_text(Buf *b, const Arch *a, const Eval *ev) {
  Component *cs = xcalloc((size_t)(a->nlevels + a->nunits), sizeof *cs);
  int n = report_components(a, ev, cs);
  buf_printf(b, "\n  %-14s %-8s %-10s %12s %7s %10s\n", "component", "kind",
             "role", "energy_mJ", "share", "area_mm2");
  for (int i = 0; i < n; i++) {
    buf_printf(b, "  %-14s %-8s %-10s %12.4g %6.1f%% ", cs[i].name,
               cs[i].kind, cs[i].role, cs[i].energy_j * 1e3,
               ev->energy_pj > 0 ? 100 * cs[i].energy_j * 1e12 / ev->energy_pj
                                 : 0);
    if (isfinite(cs[i].area_mm2))
      buf_printf(b, "%10.2f\n", cs[i].area_mm2);
    else
      buf_printf(b, "%10s\n", "-");
  }
  double area = arch_area(a);
  if (isfinite(area))
    buf_printf(b, "  %-14s %-8s %-10s %12.4g %6.1f%% %10.2f   (at %g nm)\n",
               "total", "", "", ev->energy_pj * 1e-9, 100.0, area,
               a->area.node_nm);
  if (isfinite(area))
    area_classes_text(b, a);
  free(cs);
}

/* The energy and its shares: each memory level by the file's own name
 * (an inner level is not folded into "registers"), then the compute
 * units' operations together. */
static void energy_text(Buf *b, const Arch *a, const Eval *ev) {
  Component *cs = xcalloc((size_t)(a->nlevels + a->nunits), sizeof *cs);
  int n = report_components(a, ev, cs);
  Buf e = {0};
  fmt_unit(&e, ev->energy_pj * 1e-12, "J");
  buf_printf(b, "  energy      %s (", e.s);
  double ops = 0;
  for (int i = 0; i < n; i++)
    if (strcmp(cs[i].kind, "memory") == 0)
      buf_printf(b, "%s %.1f%%, ", cs[i].name,
                 100 * cs[i].energy_j * 1e12 / ev->energy_pj);
    else
      ops += cs[i].energy_j;
  buf_printf(b, "operations %.1f%%)\n", 100 * ops * 1e12 / ev->energy_pj);
  buf_free(&e);
  free(cs);
}

/* A quantity in the largest of UNITS (each 1000 or 1024 times the one
 * before, from B or B/s) that it reaches, or "unlimited" (an omitted
 * capacity or bandwidth). */
static void put_limit(Buf *b, double v, double step,
                      const char *const *units) {
  if (!isfinite(v)) {
    buf_printf(b, " %14s", "unlimited");
    return;
  }
  int k = 0;
  while (units[k + 1] && v >= step) {
    v /= step;
    k++;
  }
  buf_printf(b, " %9.4g %-4s", v, units[k]);
}

/* The hierarchy, outermost first: each level's role, limits and totals. */
static void levels_text(Buf *b, const Arch *a, const Eval *ev) {
  double us = 1e6 / a->clock_hz;
  buf_printf(b, "\n  %-14s %-9s %14s %14s %9s %10s %10s %11s %10s\n",
             "level", "role", "capacity", "bandwidth", "instances",
             "read_MB", "write_MB", "busy_us", "energy_uJ");
  for (int l = 0; l < a->nlevels; l++) {
    const MemLevel *lv = &a->levels[l];
    const LevelUse *u = &ev->level[l];
    buf_printf(b, "  %-14s %-9s", lv->name,
               level_role_name(arch_level_role(a, l)));
    static const char *const bytes[] = {"B", "KiB", "MiB", "GiB", "TiB",
                                        NULL};
    static const char *const rates[] = {"B/s", "kB/s", "MB/s", "GB/s",
                                        "TB/s", NULL};
    put_limit(b, lv->capacity, 1024, bytes);
    put_limit(b, lv->bandwidth, 1000, rates);
    buf_printf(b, " %9d %10.4g %10.4g %11.4g %10.4g%s\n", lv->instances,
               u->read / 1e6, u->write / 1e6, u->cycles * us,
               u->energy_pj * 1e-6, u->fits ? "" : "  (a tile did not fit)");
  }
}

/* Every Einsum's bytes at every level, per tensor. */
/* What the mapping searches pruned beyond their provably neutral choices
 * (docs/model.md §3): tiles tried at coarser powers, loop orders kept. */
static void bounded_text(Buf *b, const Cascade *c, const Arch *a,
                         const Eval *ev) {
  int n = 0, most = 0, pinned = 0;
  Buf names = {0};
  for (int i = 0; i < ev->n; i++) {
    bool any = false;
    for (int l = 0; l < a->nlevels; l++) {
      const LevelUse *u = &ev->use[(size_t)i * (size_t)ev->nlevels + l];
      most = u->coarsened > most ? u->coarsened : most;
      pinned = u->pinned > pinned ? u->pinned : pinned;
      any = any || u->coarsened > 0 || u->pinned > 0;
    }
    if (any && n++ < 6)
      buf_printf(&names, "%s%s", n > 1 ? ", " : "",
                 einsum_name(c, ev->e[i].einsum));
  }
  double base = pow(2, pow(2, most));
  Buf tiles = {0};
  if (base > 1e9) /* the loop orders alone exceed the budget */
    buf_printf(&tiles, "each tile 1 or whole");
  else if (most > 0)
    buf_printf(&tiles, "tiles tried at powers of %.0f", base);
  if (n > 0)
    buf_printf(b,
               "  note: the mapping search of %d Einsum%s (%s%s) was bounded "
               "(MAP_BUDGET): %s%s%s; the figures are the best of that space "
               "(docs/model.md §3)\n",
               n, n == 1 ? "" : "s", names.s, n > 6 ? ", ..." : "",
               tiles.len ? tiles.s : "",
               tiles.len && pinned ? ", " : "",
               pinned > 0 ? "the loop order of the smallest classes of "
                            "variables kept as written"
                          : "");
  buf_free(&tiles);
  buf_free(&names);
}

static void tensors_text(Buf *b, const Cascade *c, const Arch *a,
                         const Eval *ev) {
  double us = 1e6 / a->clock_hz;
  buf_printf(b, "\n  %-3s %-10s %-14s %10s %10s %9s %10s  %s\n", "#",
             "einsum", "level", "read_MB", "write_MB", "time_us",
             "energy_uJ", "per tensor: read/write MB");
  for (int i = 0; i < ev->n; i++) {
    const EinsumEval *r = &ev->e[i];
    for (int l = 0; l < a->nlevels; l++) {
      const LevelUse *u = &ev->use[(size_t)i * (size_t)ev->nlevels + l];
      if (l == 0)
        buf_printf(b, "  %-3d %-10s", r->einsum + 1, einsum_name(c, r->einsum));
      else
        buf_printf(b, "  %-3s %-10s", "", "");
      buf_printf(b, " %-14s %10.4g %10.4g %9.4g %10.4g %s", a->levels[l].name,
                 u->read / 1e6, u->write / 1e6, u->cycles * us,
                 u->energy_pj * 1e-6, r->bound == l ? "*" : " ");
      const TensorUse *t;
      int nt = eval_tensors(ev, i, l, &t);
      for (int j = 0; j < nt; j++)
        buf_printf(b, " %s %.4g/%.4g", c->tensors[t[j].tensor].name,
                   t[j].read / 1e6, t[j].write / 1e6);
      if (u->mapping[0])
        buf_printf(b, "  [%s]", u->mapping);
      buf_printf(b, "\n");
    }
  }
  buf_printf(b, "  (* the level whose time bounds the Einsum; [the tiled "
                "loops above a level inside the fusion level])\n");
  bounded_text(b, c, a, ev);
}

void report_eval_text(Buf *b, const Cascade *c, const Arch *a,
                      const Eval *ev) {
  double us = 1e6 / a->clock_hz;
  buf_printf(b, "design %s (%s, %s, %s traffic): %d group%s\n",
             design_name(ev->design), ev->label,
             ev->opts.compose == COMPOSE_PIPELINED ? "pipelined"
                                                   : "sequential",
             ev->opts.accounting == ACCOUNT_IDEAL ? "ideal" : "achieved",
             ev->ngroups, ev->ngroups == 1 ? "" : "s");
  buf_printf(b, "\n  %-3s %-10s %-3s %-11s %9s %5s %10s %10s %10s %10s  %-7s "
                "%s\n",
             "#", "einsum", "grp", "unit", "ops", "util", "compute_us",
             "inter_MB", "intra_MB", "latency_us", "bound", "mapping");
  for (int i = 0; i < ev->n; i++) {
    const EinsumEval *r = &ev->e[i];
    Buf ops = {0};
    fmt_si(&ops, r->work.total);
    buf_printf(b, "  %-3d %-10s %-3d %-11s %9s %4.0f%% %10.2f %10.2f %10.2f "
                  "%10.2f  %-7s %s\n",
               r->einsum + 1, einsum_name(c, r->einsum), r->group + 1,
               a->units[r->unit].name, ops.s, 100 * r->util,
               r->compute_cycles * us, (r->inter_read + r->inter_write) / 1e6,
               (r->intra_read + r->intra_write) / 1e6,
               (r->end - r->start) * us, bound_of(a, r), r->mapping);
    buf_free(&ops);
  }
  bool mixed = false;
  for (int g = 1; g < ev->ngroups; g++)
    mixed = mixed || ev->g[g].level != ev->g[0].level;
  buf_printf(b, "\n  %-5s %12s %12s %12s %12s  %s\n", "group", "latency_us",
             "matrix_us", "vector_us", "memory_us", "tile, held / budget");
  for (int g = 0; g < ev->ngroups; g++) {
    const GroupEval *ge = &ev->g[g];
    buf_printf(b, "  G%-4d %12.2f %12.2f %12.2f %12.2f  ", g + 1,
               ge->cycles * us, ge->busy[ROLE_MATRIX] * us,
               (ge->busy[ROLE_VECTOR] + ge->busy[ROLE_FEEDER]) * us,
               ge->mem_cycles * us);
    for (int k = 0; k < ge->ntiled; k++)
      buf_printf(b, "%s%s/%.0f", k ? " " : "", c->ranks[ge->tiled[k]].name,
                 ge->tile[k]);
    if (ge->ntiled == 0)
      buf_printf(b, "untiled");
    if (ev->opts.accounting == ACCOUNT_ACHIEVED && !ev->opts.bound)
      buf_printf(b, ", %.3g / %.3g", ge->reserve, ge->budget);
    if (mixed) /* a plan that fuses each group at its own level */
      buf_printf(b, "; fused in %s", a->levels[ge->level].name);
    buf_printf(b, "\n");
    for (int k = 0; k < ge->nspills; k++)
      buf_printf(b, "        spilled %s (%s)\n",
                 c->tensors[ge->spills[k].tensor].name,
                 spill_reason_name(ge->spills[k].why));
  }
  double total = ev->read + ev->write;
  Buf q[5] = {{0}};
  fmt_unit(&q[0], ev->seconds, "s");
  fmt_unit(&q[1], total, "B");
  fmt_unit(&q[2], ev->ideal_inter + ev->ideal_intra, "B");
  fmt_unit(&q[3], ev->ideal_inter, "B");
  fmt_unit(&q[4], ev->ideal_intra, "B");
  buf_printf(b, "\n  latency     %s per layer\n", q[0].s);
  buf_printf(b, "  DRAM        %s (read %.1f%%, write %.1f%%; "
                "inter-Einsum %.1f%%, intra %.1f%%)\n",
             q[1].s, total > 0 ? 100 * ev->read / total : 0,
             total > 0 ? 100 * ev->write / total : 0,
             total > 0 ? 100 * ev->inter / total : 0,
             total > 0 ? 100 * ev->intra / total : 0);
  buf_printf(b, "  ideal DRAM  %s (inter %s, intra %s)\n", q[2].s, q[3].s,
             q[4].s);
  for (int i = 0; i < 5; i++)
    buf_free(&q[i]);
  energy_text(b, a, ev);
  components_text(b, a, ev);
  levels_text(b, a, ev);
  tensors_text(b, c, a, ev);
}

/* The loops that bring level use U its tiles (LevelUse.loop), outermost
 * first: the Einsum's one loop nest, level by level. */
static json_t *loops_json(const Einsum *e, const LevelUse *u) {
  json_t *arr = json_array();
  for (int j = 0; j < u->nloops; j++) {
    const NestLoop *lp = &u->loop[j];
    json_t *y = json_object();
    json_object_set_new(y, "var", json_string(e->vars[lp->var].name));
    json_object_set_new(y, "tile", report_real(lp->tile));
    json_object_set_new(y, "trips", report_real(lp->trips));
    if (lp->spatial)
      json_object_set_new(y, "spatial", json_true());
    if (lp->group)
      json_object_set_new(y, "group", json_true());
    json_array_append_new(arr, y);
  }
  return arr;
}

/* Einsum I's levels: bytes (per tensor), time, energy, its tile's fit,
 * its loops. */
static json_t *einsum_levels_json(const Cascade *c, const Arch *a,
                                  const Eval *ev, int i) {
  json_t *arr = json_array();
  for (int l = 0; l < a->nlevels; l++) {
    const LevelUse *u = &ev->use[(size_t)i * (size_t)ev->nlevels + l];
    json_t *x = json_object();
    json_object_set_new(x, "level", json_string(a->levels[l].name));
    json_object_set_new(x, "read_bytes", report_real(u->read));
    json_object_set_new(x, "write_bytes", report_real(u->write));
    json_object_set_new(x, "time_s", report_real(u->cycles / a->clock_hz));
    json_object_set_new(x, "energy_j", report_real(u->energy_pj * 1e-12));
    json_object_set_new(x, "instances", report_real(u->instances));
    json_object_set_new(x, "footprint_elements", report_real(u->footprint));
    json_object_set_new(x, "fits", json_boolean(u->fits));
    if (u->mapping[0])
      json_object_set_new(x, "mapping", json_string(u->mapping));
    json_object_set_new(x, "loops",
                        loops_json(c->einsums[ev->e[i].einsum], u));
    if (u->coarsened > 0 || u->pinned > 0) {
      json_t *y = json_object();
      json_object_set_new(y, "tile_powers_of",
                          json_real(pow(2, pow(2, u->coarsened))));
      json_object_set_new(y, "orders_kept", json_integer(u->pinned));
      json_object_set_new(x, "search_bounded", y);
    }
    json_t *ts = json_object();
    const TensorUse *t;
    int nt = eval_tensors(ev, i, l, &t);
    for (int j = 0; j < nt; j++) {
      json_t *y = json_object();
      json_object_set_new(y, "read_bytes", report_real(t[j].read));
      json_object_set_new(y, "write_bytes", report_real(t[j].write));
      json_object_set_new(ts, c->tensors[t[j].tensor].name, y);
    }
    json_object_set_new(x, "tensors", ts);
    json_array_append_new(arr, x);
  }
  return arr;
}

/* REC's fields of table FS (N rows: MEM_LEVEL_FIELDS or
 * COMPUTE_UNIT_FIELDS) that have a JSON key, into X: a count as an
 * integer, a flag as a boolean, a quantity as a number (null: infinite). */
static void fields_json(json_t *x, const void *rec, const ArchField *fs,
                        int n) {
  for (int k = 0; k < n; k++) {
    const ArchField *f = &fs[k];
    double v = arch_field_value(rec, f);
    if (f->json)
      json_object_set_new(x, f->json,
                          f->kind == LF_COUNT ? json_integer((json_int_t)v)
                          : f->kind == LF_FLAG ? json_boolean(v != 0)
                                               : real_or_null(v));
  }
}

/* The hierarchy: each level's role, limits (null: unlimited) and
 * totals over the layer. */
static json_t *levels_json(const Arch *a, const Eval *ev) {
  json_t *arr = json_array();
  for (int l = 0; l < a->nlevels; l++) {
    const MemLevel *lv = &a->levels[l];
    const LevelUse *u = &ev->level[l];
    json_t *x = json_object();
    json_object_set_new(x, "name", json_string(lv->name));
    json_object_set_new(x, "role",
                        json_string(level_role_name(arch_level_role(a, l))));
    fields_json(x, lv, mem_level_fields, MEM_LEVEL_NFIELDS);
    json_object_set_new(x, "read_bytes", report_real(u->read));
    json_object_set_new(x, "write_bytes", report_real(u->write));
    json_object_set_new(x, "busy_s", report_real(u->cycles / a->clock_hz));
    json_object_set_new(x, "energy_j", report_real(u->energy_pj * 1e-12));
    json_object_set_new(x, "fits", json_boolean(u->fits));
    json_array_append_new(arr, x);
  }
  return arr;
}

/* The compute units: each one's name, role and scalar fields. */
static json_t *units_json(const Arch *a) {
  json_t *arr = json_array();
  for (int u = 0; u < a->nunits; u++) {
    const Unit *un = &a->units[u];
    json_t *x = json_pack("{s:s, s:s}", "name", un->name, "role",
                          role_name(un->role));
    fields_json(x, un, compute_unit_fields, COMPUTE_UNIT_NFIELDS);
    json_array_append_new(arr, x);
  }
  return arr;
}

void report_eval_warnings(Buf *b, const Cascade *c, const Arch *a,
                          const Eval *ev) {
  for (int i = 0; i < ev->nwarnings; i++) {
    const BindWarning *w = &ev->warnings[i];
    const Unit *u = &a->units[w->unit], *best = &a->units[w->best];
    buf_printf(b,
               "%s:%d:%d: warning: binding puts %s, a matrix operation, on "
               "%s (%s role): %.4g s of compute, against %.4g s on %s (%s "
               "role), the fastest unit able to run it\n",
               w->file, w->at.line, w->at.col, einsum_name(c, w->einsum),
               u->name, role_name(u->role), w->cycles / a->clock_hz,
               w->best_cycles / a->clock_hz, best->name,
               role_name(best->role));
  }
}

void report_arch_notes(Buf *b, const Arch *a) {
  const MemLevel *f = &a->levels[a->fusion_level];
  for (int l = a->fusion_level + 1; l < a->nlevels; l++) {
    const MemLevel *lv = &a->levels[l];
    if (lv->capacity <= f->capacity)
      continue;
    buf_printf(b, "%s: note: memory level '%s' (", a->path, lv->name);
    buf_bytes(b, lv->capacity);
    buf_printf(b, ") lies inside the fusion level '%s' (", f->name);
    buf_bytes(b, f->capacity);
    buf_printf(b, ") and is larger: a fusion group holds at most ");
    buf_bytes(b, f->capacity);
    buf_printf(b, " between Einsums, and '%s' cannot be the fusion level "
                  "while '%s' stages it (docs/architecture.md)\n",
               lv->name, f->name);
  }
}

/* Eval.warnings as JSON objects. */
static json_t *warnings_json(const Cascade *c, const Arch *a,
                             const Eval *ev) {
  json_t *ws = json_array();
  for (int i = 0; i < ev->nwarnings; i++) {
    const BindWarning *w = &ev->warnings[i];
    json_t *x = json_object();
    json_object_set_new(x, "kind", json_string("binding"));
    json_object_set_new(x, "einsum", json_string(einsum_name(c, w->einsum)));
    json_object_set_new(x, "unit", json_string(a->units[w->unit].name));
    json_object_set_new(x, "role",
                        json_string(role_name(a->units[w->unit].role)));
    json_object_set_new(x, "compute_s", report_real(w->cycles / a->clock_hz));
    json_object_set_new(x, "best_unit", json_string(a->units[w->best].name));
    json_object_set_new(x, "best_compute_s",
                        report_real(w->best_cycles / a->clock_hz));
    json_object_set_new(x, "file", json_string(w->file));
    json_object_set_new(x, "line", json_integer(w->at.line));
    json_object_set_new(x, "column", json_integer(w->at.col));
    json_array_append_new(ws, x);
  }
  return ws;
}

json_t *report_eval_json(const Cascade *c, const Arch *a, const Eval *ev) {
  double sec = 1 / a->clock_hz;
  json_t *o = json_object();
  json_object_set_new(o, "design", json_string(design_name(ev->design)));
  json_object_set_new(o, "label", json_string(ev->label));
  json_object_set_new(o, "compose",
                      json_string(ev->opts.compose == COMPOSE_PIPELINED
                                      ? "pipelined"
                                      : "sequential"));
  json_object_set_new(o, "accounting",
                      json_string(ev->opts.accounting == ACCOUNT_IDEAL
                                      ? "ideal"
                                      : "achieved"));
  json_t *es = json_array();
  for (int i = 0; i < ev->n; i++) {
    const EinsumEval *r = &ev->e[i];
    json_t *x = json_object();
    json_object_set_new(x, "einsum", json_string(einsum_name(c, r->einsum)));
    json_object_set_new(x, "group", json_integer(r->group + 1));
    json_object_set_new(x, "unit", json_string(a->units[r->unit].name));
    if (r->epilogue >= 0)
      json_object_set_new(x, "epilogue_unit",
                          json_string(a->units[r->epilogue].name));
    json_object_set_new(x, "matrix_operation", json_boolean(r->work.matrix));
    if (r->spread > 1)
      json_object_set_new(x, "reduction_spread", report_real(r->spread));
    json_t *ops = json_object();
    for (int k = 0; k < OPC_COUNT; k++)
      if (r->work.ops[k] > 0)
        json_object_set_new(ops, opclass_name((OpClass)k),
                            report_real(r->work.ops[k]));
    json_object_set_new(x, "ops", ops);
    json_object_set_new(x, "utilization", report_real(r->util));
    json_object_set_new(x, "compute_s", report_real(r->compute_cycles * sec));
    json_object_set_new(x, "memory_s", report_real(r->mem_cycles * sec));
    json_object_set_new(x, "latency_s", report_real((r->end - r->start) * sec));
    json_object_set_new(x, "start_s", report_real(r->start * sec));
    json_object_set_new(x, "dram_read_bytes", report_real(r->read));
    json_object_set_new(x, "dram_write_bytes", report_real(r->write));
    json_object_set_new(x, "inter_bytes",
                        report_real(r->inter_read + r->inter_write));
    json_object_set_new(x, "intra_bytes",
                        report_real(r->intra_read + r->intra_write));
    json_object_set_new(x, "energy_j", report_real(r->energy_pj * 1e-12));
    json_object_set_new(x, "mapping", json_string(r->mapping));
    if (ev->opts.accounting == ACCOUNT_ACHIEVED && !ev->opts.bound) {
      json_object_set_new(x, "fits", json_boolean(r->fits));
      json_object_set_new(x, "footprint_elements", report_real(r->footprint));
      json_object_set_new(x, "capacity_elements", report_real(r->capacity));
    }
    json_object_set_new(x, "ideal_inter_bytes", report_real(r->ideal_inter));
    json_object_set_new(x, "ideal_intra_bytes", report_real(r->ideal_intra));
    json_object_set_new(x, "bound", json_string(bound_of(a, r)));
    json_object_set_new(x, "levels", einsum_levels_json(c, a, ev, i));
    json_array_append_new(es, x);
  }
  json_object_set_new(o, "einsums", es);
  json_t *gs = json_array();
  for (int g = 0; g < ev->ngroups; g++) {
    json_t *x = json_object();
    json_t *names = json_array();
    for (int i = 0; i < ev->plan->groups[g].n; i++)
      json_array_append_new(
          names, json_string(einsum_name(c, ev->plan->groups[g].einsums[i])));
    json_object_set_new(x, "einsums", names);
    json_object_set_new(x, "latency_s", report_real(ev->g[g].cycles * sec));
    const GroupEval *ge = &ev->g[g];
    json_object_set_new(x, "fusion_level",
                        json_string(a->levels[ge->level].name));
    json_t *tile = json_object();
    for (int k = 0; k < ge->ntiled; k++)
      json_object_set_new(tile, c->ranks[ge->tiled[k]].name,
                          report_real(ge->tile[k]));
    json_object_set_new(x, "tile", tile);
    if (ev->opts.accounting == ACCOUNT_ACHIEVED && !ev->opts.bound) {
      json_object_set_new(x, "held_elements", report_real(ge->reserve));
      json_object_set_new(x, "budget_elements", report_real(ge->budget));
    }
    json_t *sp = json_array();
    for (int k = 0; k < ge->nspills; k++) {
      json_t *y = json_object();
      json_object_set_new(y, "tensor",
                          json_string(c->tensors[ge->spills[k].tensor].name));
      json_object_set_new(y, "reason",
                          json_string(spill_reason_name(ge->spills[k].why)));
      json_array_append_new(sp, y);
    }
    json_object_set_new(x, "spilled", sp);
    json_array_append_new(gs, x);
  }
  json_object_set_new(o, "groups", gs);
  json_object_set_new(o, "warnings", warnings_json(c, a, ev));
  json_t *t = json_object();
  REPORT_REALS(t, {"latency_s", ev->seconds}, {"dram_read_bytes", ev->read},
               {"dram_write_bytes", ev->write}, {"inter_bytes", ev->inter},
               {"intra_bytes", ev->intra},
               {"ideal_inter_bytes", ev->ideal_inter},
               {"ideal_intra_bytes", ev->ideal_intra}, {"ops", ev->ops},
               {"energy_j", ev->energy_pj * 1e-12});
  json_object_set_new(t, "area_mm2", real_or_null(arch_area(a)));
  if (a->area.given) {
    json_object_set_new(t, "area_node_nm", report_real(a->area.node_nm));
    json_object_set_new(t, "area", area_classes_json(a));
  }
  json_object_set_new(o, "totals", t);
  json_object_set_new(o, "components", report_components_json(a, ev));
  json_object_set_new(o, "levels", levels_json(a, ev));
  json_object_set_new(o, "units", units_json(a));
  json_object_set_new(o, "plan", report_plan_json(c, ev->plan));
  return o;
}

/* Einsum I's columns per level: bytes, seconds, energy, and its tensors
 * as "NAME=READ/WRITE" (bytes) separated by blanks. */
static void levels_csv(Buf *b, const Cascade *c, const Arch *a,
                       const Eval *ev, int i) {
  for (int l = 0; l < a->nlevels; l++) {
    const LevelUse *u = &ev->use[(size_t)i * (size_t)ev->nlevels + l];
    const double nums[] = {u->read, u->write, u->cycles / a->clock_hz,
                           u->energy_pj * 1e-12};
    csv_numbers(b, nums, sizeof nums / sizeof nums[0]);
    Buf ts = {0};
    const TensorUse *t;
    int nt = eval_tensors(ev, i, l, &t);
    for (int j = 0; j < nt; j++)
      buf_printf(&ts, "%s%s=%.17g/%.17g", j ? " " : "",
                 c->tensors[t[j].tensor].name, t[j].read, t[j].write);
    buf_printf(b, ",");
    csv_field(b, ts.s ? ts.s : "");
    buf_free(&ts);
  }
}

void report_eval_csv(Buf *b, const Cascade *c, const Arch *a,
                     const Eval *ev) {
  static const char *const cols[] = {
      "design", "einsum", "group", "unit", "epilogue_unit",
      "matrix_operation", "ops", "utilization", "compute_s", "memory_s",
      "latency_s", "start_s", "dram_read_bytes", "dram_write_bytes",
      "inter_bytes", "intra_bytes", "ideal_inter_bytes", "ideal_intra_bytes",
      "energy_j", "fits", "footprint_elements", "capacity_elements",
      "mapping"};
  for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
    buf_printf(b, "%s%s", i ? "," : "", cols[i]);
  for (int k = 0; k < OPC_COUNT; k++)
    buf_printf(b, ",ops_%s", opclass_name((OpClass)k));
  buf_printf(b, ",bound");
  static const char *const per_level[] = {"read_bytes", "write_bytes",
                                          "s", "energy_j", "tensors"};
  for (int l = 0; l < a->nlevels; l++)
    for (size_t k = 0; k < sizeof per_level / sizeof per_level[0]; k++) {
      Buf col = {0};
      buf_printf(&col, "%s_%s", a->levels[l].name, per_level[k]);
      buf_printf(b, ",");
      csv_field(b, col.s);
      buf_free(&col);
    }
  buf_printf(b, "\n");
  double sec = 1 / a->clock_hz;
  bool mapped =
      ev->opts.accounting == ACCOUNT_ACHIEVED && !ev->opts.bound;
  for (int i = 0; i < ev->n; i++) {
    const EinsumEval *r = &ev->e[i];
    csv_field(b, design_name(ev->design));
    buf_printf(b, ",");
    csv_field(b, einsum_name(c, r->einsum));
    buf_printf(b, ",%d,", r->group + 1);
    csv_field(b, a->units[r->unit].name);
    buf_printf(b, ",");
    if (r->epilogue >= 0)
      csv_field(b, a->units[r->epilogue].name);
    buf_printf(b, ",%s", r->work.matrix ? "true" : "false");
    const double nums[] = {
        r->work.total, r->util, r->compute_cycles * sec, r->mem_cycles * sec,
        (r->end - r->start) * sec, r->start * sec, r->read, r->write,
        r->inter_read + r->inter_write, r->intra_read + r->intra_write,
        r->ideal_inter, r->ideal_intra, r->energy_pj * 1e-12};
    csv_numbers(b, nums, sizeof nums / sizeof nums[0]);
    buf_printf(b, ",%s", mapped ? (r->fits ? "true" : "false") : "");
    csv_numbers(b, (const double[]){mapped ? r->footprint : NAN,
                                    mapped ? r->capacity : NAN}, 2);
    buf_printf(b, ",");
    csv_field(b, r->mapping);
    csv_numbers(b, r->work.ops, OPC_COUNT);
    buf_printf(b, ",");
    csv_field(b, bound_of(a, r));
    levels_csv(b, c, a, ev, i);
    buf_printf(b, "\n");
  }
}
