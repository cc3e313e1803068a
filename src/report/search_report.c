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
  static const char *const unit[] = {"s", "J", "J s", "B"};
  _Static_assert(sizeof unit / sizeof unit[0] == SO_COUNT,
                 "a unit per objective");
  static const struct {
    double scale;
    const char *prefix;
  } si[] = {{1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""},
            {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}, {1e-12, "p"}};
  size_t k = 0;
  while (k + 1 < sizeof si / sizeof si[0] && fabs(v) < si[k].scale)
    k++;
  buf_printf(b, "%.4g %s%s", v / si[k].scale, si[k].prefix, unit[o]);
}

void report_search_text(Buf *b, const Cascade *c, const Arch *a,
                        const SearchResult *r, SearchObjective o) {
  buf_printf(b, "search: %s on %s, objective %s\n", c->path, a->name,
             search_objective_name(o));
  buf_printf(b,
             "space: %d merged Einsums, %.6g contiguous partitions over "
             "%ld candidate groups (%ld could run, each priced once); "
             "%ld named-design plans beside\n",
             r->nodes, r->partitions, r->groups, r->priced, r->named);
  buf_printf(b, "found: ");
  figure(b, r->found, o);
  buf_printf(b, ", ");
  origin(b, r);
  buf_printf(b, "\nlower bound (ideal): ");
  figure(b, r->lower, o);
  buf_printf(b, "; gap %.4gx (the search is exact over its space; no plan "
                "beats the bound)\n\n",
             r->lower > 0 ? r->found / r->lower : NAN);
  if (r->from == DES_COUNT)
    buf_printf(b, "plan found (labelled %s, the narrowest strategy its groups "
                  "allow):\n",
               strategy_name(r->best->plan->strategy));
  report_plan_text(b, c, r->best->plan);
  buf_printf(b, "\n");
  report_eval_text(b, c, a, r->best);
}

json_t *report_search_json(const Cascade *c, const Arch *a,
                           const SearchResult *r, SearchObjective o) {
  json_t *j = json_object();
  json_object_set_new(j, "objective", json_string(search_objective_name(o)));
  json_object_set_new(j, "found", report_real(r->found));
  json_object_set_new(j, "lower_bound", report_real(r->lower));
  json_object_set_new(j, "gap", report_real(r->lower > 0 ? r->found / r->lower
                                                         : NAN));
  json_object_set_new(j, "from", json_string(r->from == DES_COUNT
                                                 ? "search"
                                                 : design_name(r->from)));
  json_t *sp = json_object();
  json_object_set_new(sp, "merged_einsums", json_integer(r->nodes));
  json_object_set_new(sp, "partitions", report_real(r->partitions));
  json_object_set_new(sp, "candidate_groups", json_integer(r->groups));
  json_object_set_new(sp, "groups_priced", json_integer(r->priced));
  json_object_set_new(sp, "named_plans_priced", json_integer(r->named));
  json_object_set_new(j, "space", sp);
  json_object_set_new(j, "plan", report_plan_json(c, r->best->plan));
  json_object_set_new(j, "schedule", report_eval_json(c, a, r->best));
  json_object_set_new(j, "bound", report_eval_json(c, a, r->bound));
  return j;
}
