/* search_report.c — what `search` found: the space, the schedule, the
 * bound and the gap (report.h). */
#include "report.h"

#include <math.h>

/* "a partition found by the search" or "the named design ri (greedy)". */
static void origin(Buf *b, const SearchResult *r) {
  if (r->from == DES_COUNT) {
    buf_printf(b, "a partition found by the search");
    return;
  }
  buf_printf(b, "the named design %s", design_name(r->from));
  if (design_strategy(r->from) != ST_UNFUSED &&
      r->best->opts.plan == PLAN_STITCHED)
    buf_printf(b, " (%s stitching)", stitcher_name(r->best->opts.stitch));
}

/* V in the objective's unit, scaled to three significant digits. */
static void figure(Buf *b, double v, SearchObjective o) {
  static const struct {
    double scale;
    const char *prefix;
  } si[] = {{1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""},
            {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}, {1e-12, "p"}};
  size_t k = 0;
  while (k + 1 < sizeof si / sizeof si[0] && fabs(v) < si[k].scale)
    k++;
  buf_printf(b, "%.4g %s%s", v / si[k].scale, si[k].prefix,
             search_objective_unit(o));
}

/* The intermediates the plan sends off chip by choice (the search's spill
 * variants), when it chose them. */
static void spills_text(Buf *b, const Cascade *c, const Plan *p) {
  if (!p->spilled)
    return;
  int n = 0;
  buf_printf(b, "  sent off chip by choice:");
  for (int t = 0; t < c->ntensors; t++)
    if (p->spilled[t])
      buf_printf(b, "%s %s", n++ ? "," : "", c->tensors[t].name);
  buf_printf(b, "%s\n", n ? "" : " none (each group holds what fits)");
}

/* Every on-chip level the search did not try as the fusion level, with
 * the rule that refuses it (arch_fusion_problem). */
static void refused_levels_text(Buf *b, const Arch *a) {
  for (int l = 1; l < a->nlevels; l++) {
    int at;
    if (arch_fusion_problem(a, l, &at) == FUSION_OK)
      continue;
    buf_printf(b, "  not a candidate: %s: ", a->levels[l].name);
    arch_fusion_why(a, l, b);
    buf_printf(b, "\n");
  }
}

void report_search_text(Buf *b, const Cascade *c, const Arch *a,
                        const SearchResult *r, SearchObjective o) {
  buf_printf(b, "search: %s on %s, objective %s\n", c->path, a->name,
             search_objective_name(o));
  buf_printf(b, "space: %d nodes (Einsums, a recurrence one), %.6g ",
             r->nodes, r->partitions);
  if (r->levels > 1) /* each group at each level: L (L + 1)^(n-1) */
    buf_printf(b, "plans (contiguous partitions, each group at any of %d "
                  "fusion levels)", r->levels);
  else
    buf_printf(b, "contiguous partitions");
  buf_printf(b,
             " over %ld candidate groups (%ld could run, priced under %ld "
             "spill variants in all); %ld named-design plans beside\n",
             r->groups, r->priced, r->variants, r->named);
  buf_printf(b, "fusion level: ");
  if (r->fusion_level < 0) /* each group at its own */
    for (int g = 0; g < r->best->ngroups; g++)
      buf_printf(b, "%sG%d %s", g ? ", " : "per group: ", g + 1,
                 a->levels[r->best->g[g].level].name);
  else
    buf_printf(b, "%s", a->levels[a->fusion_level].name);
  buf_printf(b, " (%d candidate level%s tried: docs/search.md)\n",
             r->levels, r->levels == 1 ? "" : "s");
  refused_levels_text(b, a);
  buf_printf(b, "found: ");
  figure(b, r->found, o);
  buf_printf(b, ", ");
  origin(b, r);
  buf_printf(b, "\nlower bound (ideal): ");
  figure(b, r->lower, o);
  double gap = r->lower > 0 ? r->found / r->lower : NAN;
  if (r->timed_out)
    buf_printf(b, "; found / bound %.4gx (stopped at the time limit: the "
                  "best of what was priced by then, not proven)\n",
               gap);
  else if (r->stopped)
    buf_printf(b, "; found / bound %.4gx (stopped at the budget of %ld "
                  "groups: the best of what was priced, not proven; not "
                  "priced: %ld candidate groups, %ld named-design plans)\n",
               gap, r->budget, r->skipped, r->named_skipped);
  else
    buf_printf(b, "; gap %.4gx (the search is exact over its space; no plan "
                  "beats the bound)\n",
               gap);
  buf_printf(b, "binding: by cost, every assignment of each group's Einsums "
                "to the units able to run them");
  if (r->bind_capped > 0)
    buf_printf(b, " (%ld groups pipelined past the binding's budget: best "
                  "found)",
               r->bind_capped);
  buf_printf(b, "\n\n");
  if (r->from == DES_COUNT)
    buf_printf(b, "plan found (labelled %s, the narrowest strategy its groups "
                  "allow):\n",
               strategy_name(r->best->plan->strategy));
  report_plan_text(b, c, r->best->plan);
  spills_text(b, c, r->best->plan);
  buf_printf(b, "\n");
  report_eval_text(b, c, a, r->best);
}

json_t *report_search_json(const Cascade *c, const Arch *a,
                           const SearchResult *r, SearchObjective o) {
  json_t *j = json_object();
  json_object_set_new(j, "objective", json_string(search_objective_name(o)));
  REPORT_REALS(j, {"found", r->found}, {"lower_bound", r->lower},
               {"gap", r->lower > 0 ? r->found / r->lower : NAN});
  json_object_set_new(j, "from", json_string(report_from_name(r->from)));
  json_t *sp = json_object();
  json_object_set_new(sp, "nodes", json_integer(r->nodes));
  json_object_set_new(sp, "partitions", report_real(r->partitions));
  json_object_set_new(sp, "candidate_groups", json_integer(r->groups));
  json_object_set_new(sp, "groups_priced", json_integer(r->priced));
  json_object_set_new(sp, "spill_variants_priced",
                      json_integer(r->variants));
  json_object_set_new(sp, "named_plans_priced", json_integer(r->named));
  json_object_set_new(sp, "stopped_at_budget", json_boolean(r->stopped));
  json_object_set_new(sp, "groups_skipped", json_integer(r->skipped));
  json_object_set_new(sp, "named_plans_skipped",
                      json_integer(r->named_skipped));
  json_object_set_new(sp, "stopped_at_time_limit",
                      json_boolean(r->timed_out));
  json_object_set_new(sp, "bindings_capped", json_integer(r->bind_capped));
  json_object_set_new(sp, "fusion_levels", json_integer(r->levels));
  json_t *refused = json_array();
  for (int l = 1; l < a->nlevels; l++) {
    int at;
    if (arch_fusion_problem(a, l, &at) == FUSION_OK)
      continue;
    Buf why = {0};
    arch_fusion_why(a, l, &why);
    json_t *x = json_object();
    json_object_set_new(x, "level", json_string(a->levels[l].name));
    json_object_set_new(x, "why", json_string(why.s));
    json_array_append_new(refused, x);
    buf_free(&why);
  }
  json_object_set_new(sp, "fusion_levels_refused", refused);
  json_object_set_new(j, "space", sp);
  /* The plan's level, or null where each group has its own. */
  json_object_set_new(j, "fusion_level",
                      r->fusion_level < 0
                          ? json_null()
                          : json_string(a->levels[a->fusion_level].name));
  json_t *gl = json_array();
  for (int g = 0; g < r->best->ngroups; g++)
    json_array_append_new(gl,
                          json_string(a->levels[r->best->g[g].level].name));
  json_object_set_new(j, "group_levels", gl);
  json_object_set_new(j, "plan", report_plan_json(c, r->best->plan));
  json_object_set_new(j, "schedule", report_eval_json(c, a, r->best));
  json_object_set_new(j, "bound", report_eval_json(c, a, r->bound));
  return j;
}

/* Where a front point comes from: "search" or the design's name. */
const char *report_from_name(Design from) {
  return from == DES_COUNT ? "search" : design_name(from);
}

void report_pareto_text(Buf *b, const SearchResult *r) {
  buf_printf(b, "\nlatency-energy front (%d schedules, fastest first):\n",
             r->npareto);
  buf_printf(b, "  %12s %12s %7s  %s\n", "latency_us", "energy_uJ", "groups",
             "from");
  for (int k = 0; k < r->npareto; k++) {
    const SearchPoint *p = &r->pareto[k];
    buf_printf(b, "  %12.4f %12.4f %7d  %s\n", p->seconds * 1e6,
               p->joules * 1e6, p->groups, report_from_name(p->from));
  }
}

json_t *report_pareto_json(const SearchResult *r) {
  json_t *a = json_array();
  for (int k = 0; k < r->npareto; k++) {
    const SearchPoint *p = &r->pareto[k];
    json_t *j = json_object();
    REPORT_REALS(j, {"latency_s", p->seconds}, {"energy_j", p->joules});
    json_object_set_new(j, "groups", json_integer(p->groups));
    json_object_set_new(j, "from", json_string(report_from_name(p->from)));
    json_array_append_new(a, j);
  }
  return a;
}
