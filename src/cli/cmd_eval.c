/* cmd_eval.c — `mambalaya eval SPEC`: price one configuration. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* --design best: not a model design (the model is below the search). */
enum { EVAL_BEST = -1 };

typedef struct EvalArgs {
  SpecOpts spec;
  NetArgs net;
  ModelOverrides mf;
  const char *arch, *plan; /* NULL: the shipped mambalaya; no plan file */
  int design;
  int objective; /* what --design best minimizes */
  bool csv;
  const char *trace; /* --trace FILE: the timeline as a Chrome trace */
} EvalArgs;

static const Opt eval_opts[] = {
    CONFIG_OPT(EvalArgs, net.config),
    ARCH_OPT(EvalArgs, arch),
    {"--design", OPT_ENUM, offsetof(EvalArgs, design), "D",
     .help = "(default: full; best: the schedule `search` finds for the "
             "objective, with its gap to ideal)",
     .flags = OPT_LIST, .choices = &design_or_best_choices},
    {"--objective", OPT_ENUM, offsetof(EvalArgs, objective), "O",
     .help = "what --design best minimizes: latency (default), energy, edp "
             "or traffic",
     .choices = &search_objective_choices},
    {"--strategy", OPT_ENUM, offsetof(EvalArgs, design), "S",
     .help = "an alias of --design (without best): the name fuse and exec "
             "use for a fusion strategy",
     .choices = &design_choices},
    {"--plan", OPT_PATH, offsetof(EvalArgs, plan), "FILE",
     .help = "price the plan in FILE, as `fuse --json` or `search "
             "--plan-out` writes it (checked against its label; at the "
             "fusion level it names, if any; --strategy S picks one of a "
             "file of several)"},
    PHASE_OPT(EvalArgs),
    TRACE_OPT(EvalArgs, trace),
    {"--csv", OPT_FLAG, offsetof(EvalArgs, csv), NULL,
     .help = "print one row per Einsum as CSV (a header line, then the rows "
             "in execution order)"},
    {"--json", OPT_FLAG, offsetof(EvalArgs, spec.json), NULL,
     .help = "print JSON, with the inputs that produced it (spec, "
             "architecture and their SHA-256, model, settings, options, tool "
             "version) and the area and energy of every component"},
};
static const OptTable eval_table = OPT_TABLE(eval_opts);

static void eval_init(void *opts) {
  EvalArgs *o = opts;
  *o = (EvalArgs){.mf = model_no_overrides(), .design = DES_FULL,
                  .objective = SO_LATENCY};
  net_args_init(&o->net);
}

/* The design plan P is priced as: its file's "design", else its label's
 * (a named design's plan that search wrote takes that design's rules). */
static bool plan_design(const char *file, const Plan *p, Design *design,
                        Diag *d) {
  if (!p->design[0]) {
    *design = design_of_strategy(p->strategy);
    return true;
  }
  Design named;
  if (!design_from_name(p->design, &named) ||
      model_default_opts(named).bound) {
    char names[256];
    diag_error(d, file, (Loc){0, 0}, "\"design\": '%s' is no design a plan "
               "is priced as (expected one of %s)", p->design,
               design_names(names, sizeof names));
    return false;
  }
  *design = named;
  return true;
}

/* --plan's plan (the one labelled PICK of a file of several), checked,
 * its design into *DESIGN; *AT gets ARCH with the plan's fusion level
 * (a plan `search` wrote where it chose the level), or NULL: ARCH's own. */
static Plan *read_plan(const EvalArgs *o, const char *pick, const Cascade *c,
                       const Shape *s, const Arch *arch, Design *design,
                       Arch **at, Diag *d) {
  Plan *p = plan_read_file(o->plan, pick, c, s, d);
  if (p && !plan_design(o->plan, p, design, d)) {
    plan_free(p);
    return NULL;
  }
  if (p && p->fusion_level[0] &&
      !(*at = arch_with_fusion_named(arch, p->fusion_level, o->plan,
                                     p->fusion_level_at, d))) {
    plan_free(p);
    return NULL;
  }
  for (int g = 0; p && g < p->ngroups; g++) /* each group's own level */
    if (p->groups[g].level[0] &&
        arch_fusion_named(arch, p->groups[g].level, "\"group_levels\"",
                          o->plan, p->groups[g].level_at, d) < 0) {
      plan_free(p);
      return NULL;
    }
  return p;
}

/* The design's pricing, of --plan's plan or of the design's own; *AT as
 * read_plan sets it (the architecture the Eval was priced on). */
static Eval *price(const EvalArgs *o, const char *pick, const Cascade *c,
                   const Shape *s, const Arch *arch, Design *design,
                   Arch **at, Diag *d) {
  Plan *p = NULL;
  if (o->plan && !(p = read_plan(o, pick, c, s, arch, design, at, d)))
    return NULL;
  const Arch *on = *at ? *at : arch;
  Pair *pairs = fusion_classify(c, s);
  ModelOpts mo = model_opts_for_plan(&o->mf, *design, p);
  Eval *ev = p ? model_eval_plan(c, s, on, pairs, *design, p, &mo, d)
               : model_eval(c, s, on, pairs, *design, &mo, d);
  free(pairs);
  return ev;
}

/* The schedule `search` finds for O's objective under O's options: what
 * `eval --design best` prices (docs/search.md, "best elsewhere"). */
static SearchResult *search_for(const EvalArgs *o, const Cascade *c,
                                const Shape *s, const Arch *arch, Diag *d) {
  Pair *pairs = fusion_classify(c, s);
  MapMemo *memo = map_memo_new(false);
  SearchResult *r =
      search_best(c, s, arch, pairs, &o->mf, (SearchObjective)o->objective,
                  memo, d);
  map_memo_free(memo);
  free(pairs);
  return r;
}

static double search_gap(const SearchResult *r) {
  return r->lower > 0 ? r->found / r->lower : 1;
}

static json_t *search_json(const SearchResult *r, SearchObjective obj,
                           const Arch *a) {
  json_t *j = json_object();
  /* The plan's level, or null where each group has its own (the
   * schedule's groups name theirs). */
  json_object_set_new(j, "fusion_level",
                      r->fusion_level < 0
                          ? json_null()
                          : json_string(a->levels[a->fusion_level].name));
  json_object_set_new(j, "fusion_levels", json_integer(r->levels));
  json_object_set_new(j, "objective",
                      json_string(search_objective_name(obj)));
  REPORT_REALS(j, {"found", r->found}, {"lower_bound", r->lower},
               {"gap", search_gap(r)});
  json_object_set_new(j, "from", json_string(report_from_name(r->from)));
  return j;
}

/* CSV's rows of --design best: each line of CSV with the search's
 * columns (where the schedule came from, the ideal figure of objective
 * OBJ, the gap) appended. No field of report_eval_csv holds a line
 * break. */
static void search_csv(Buf *b, const Buf *csv, const SearchResult *r,
                       SearchObjective obj) {
  bool header = true;
  for (const char *l = csv->s; l && *l;) {
    size_t n = strcspn(l, "\n");
    buf_printf(b, "%.*s", (int)n, l);
    if (header)
      buf_printf(b, ",best_from,ideal_%s,gap_to_ideal\n",
                 search_objective_column(obj));
    else
      buf_printf(b, ",%s,%.10g,%.10g\n", report_from_name(r->from), r->lower,
                 search_gap(r));
    header = false;
    l += n + (l[n] == '\n');
  }
}

/* The text's line under the schedule of --design best. */
static void search_text(Buf *b, const SearchResult *r, SearchObjective obj) {
  const char *from = r->from == DES_COUNT ? "a partition found by the search"
                                          : design_name(r->from);
  if (obj == SO_LATENCY)
    buf_printf(b, "\nbest (searched): %.4g ms, %s; ideal %.4g ms",
               r->found * 1e3, from, r->lower * 1e3);
  else
    buf_printf(b, "\nbest (searched for %s): %.4g %s, %s; ideal %.4g %s",
               search_objective_name(obj), r->found,
               search_objective_unit(obj), from, r->lower,
               search_objective_unit(obj));
  buf_printf(b, "; gap to ideal %.4gx (`mambalaya search` prints the space "
                "and the plan)\n",
             search_gap(r));
}

/* The text's first line under --design best: what the search chose, by
 * name — its groups, the design it is labelled with, and the fusion level
 * it priced at beside FILE's own (the search may move it). */
static void best_header(Buf *b, const Arch *file, const Arch *on,
                        const Eval *ev, const SearchResult *r,
                        SearchObjective obj) {
  const char *level = on->levels[on->fusion_level].name;
  const char *own = file->levels[file->fusion_level].name;
  buf_printf(b, "design best (the schedule the search found for %s): %d "
                "group%s, labelled %s, ",
             search_objective_name(obj), ev->ngroups,
             ev->ngroups == 1 ? "" : "s", design_name(ev->design));
  if (r->fusion_level < 0) { /* each group at its own */
    buf_printf(b, "fusion level per group (");
    for (int g = 0; g < ev->ngroups; g++)
      buf_printf(b, "%sG%d %s", g ? ", " : "", g + 1,
                 file->levels[ev->g[g].level].name);
    buf_printf(b, "; the file's own is %s)\n", own);
    return;
  }
  buf_printf(b, "fusion level %s ", level);
  if (strcmp(level, own) == 0)
    buf_printf(b, "(the file's own)\n");
  else
    buf_printf(b, "(moved from the file's %s)\n", own);
}

/* EV priced as DESIGN (BEST: the search that found it, or NULL) on ARCH
 * (FILE's levels, the fusion level perhaps moved), its warnings (a
 * binding's cost) and FILE's notes first, on stderr; --json holds the
 * warnings too. */
static void print_eval(const EvalArgs *o, const Cascade *c, const Shape *s,
                       const Arch *file, const Arch *arch, const Eval *ev,
                       Design design, const SearchResult *best) {
  Buf w = {0};
  report_arch_notes(&w, file);
  report_eval_warnings(&w, c, arch, ev);
  if (w.len)
    fputs(w.s, stderr);
  buf_free(&w);
  if (o->spec.json) {
    Inputs in = spec_inputs("eval", &o->spec, c, s);
    in.arch = o->arch ? o->arch : "mambalaya";
    in.plan = o->plan;
    in.design = best ? "best" : design_name(design);
    in.phase = o->spec.phase == PHASE_DECODE ? "decode" : "prefill";
    in.opts = &ev->opts;
    json_t *j = report_eval_json(c, arch, ev);
    if (best)
      json_object_set_new(
          j, "search",
          search_json(best, (SearchObjective)o->objective, arch));
    emit_json(j, &in);
    return;
  }
  Buf b = {0}, rows = {0};
  if (o->csv && best) {
    report_eval_csv(&rows, c, arch, ev);
    search_csv(&b, &rows, best, (SearchObjective)o->objective);
  } else if (o->csv) {
    report_eval_csv(&b, c, arch, ev);
  } else {
    if (best)
      best_header(&b, file, arch, ev, best, (SearchObjective)o->objective);
    report_eval_text(&b, c, arch, ev);
    if (best)
      search_text(&b, best, (SearchObjective)o->objective);
  }
  emit(&b);
  buf_free(&b);
  buf_free(&rows);
}

static int eval(const Parsed *p, void *opts) {
  EvalArgs *o = opts;
  const char *inputs[] = {input_path("specs", o->spec.spec),
                          input_path("archs", o->arch), o->plan};
  int err;
  if (o->trace && (err = check_output(p->cmd, o->trace, inputs, 3)))
    return err;
  /* --config: the whole model end to end; what prices one cascade is
   * refused. */
  static const char *const per_cascade[] = {"--plan", "--phase", "--csv",
                                            "--set", "--model", "--objective",
                                            NULL};
  if ((err = net_check_options(p, o->net.config, o->spec.spec, per_cascade)))
    return err;
  if (o->net.config)
    return net_eval("eval", &o->net, o->arch, o->design, &o->mf,
                    o->spec.json);
  if (o->spec.phase == PHASE_DECODE && o->mf.state_io < 0)
    o->mf.state_io = 1; /* a decode step reads and writes its state */
  /* With --plan, --strategy S picks one of a file's plans. */
  const char *pick = o->plan && opt_given(p, "--strategy")
                         ? design_name((Design)o->design)
                         : NULL;
  Strategy st;
  if (o->plan && (opt_given(p, "--design") ||
                  (pick && !strategy_from_name(pick, &st))))
    return usage_error(p->cmd, "--plan gives the plan: drop --design "
                               "(--strategy S picks one of the file's plans)");
  if (o->csv && o->spec.json)
    return usage_error(p->cmd, "--csv and --json: pick one");
  if (opt_given(p, "--objective") && o->design != EVAL_BEST)
    return usage_error(p->cmd, "--objective is what --design best "
                               "minimizes: add --design best");
  Arch *arch;
  Cascade *c;
  Shape *s;
  int status = load_spec_arch(p->cmd, &o->spec, o->arch, true, &arch, &c, &s);
  if (status)
    return status;
  Diag d = {0};
  Design design = (Design)o->design;
  Arch *at = NULL; /* the plan's fusion level, or the search's */
  SearchResult *best = o->design == EVAL_BEST
                           ? search_for(o, c, s, arch, &d)
                           : NULL;
  Eval *ev = o->design == EVAL_BEST
                 ? (best ? best->best : NULL)
                 : price(o, pick, c, s, arch, &design, &at, &d);
  const Arch *on = best ? search_arch(best, arch) : at ? at : arch;
  if (ev && o->trace)
    status = write_trace(p, o->trace, c, on, ev);
  if (ev && !status)
    print_eval(o, c, s, arch, on, ev, design, best);
  else if (!ev)
    status = input_failed(&d);
  if (o->design != EVAL_BEST)
    eval_free(ev);
  search_free(best);
  arch_free(at);
  return spec_arch_free(arch, c, s, status);
}

const Command eval_command = {
    "eval", "price a fusion plan on an accelerator",
    .about =
        "Price a fusion plan of the cascade in SPEC on an accelerator: each\n"
        "Einsum's unit, operations, mapping, DRAM traffic and latency, each\n"
        "group's tile, what it holds and what it spilled, and the layer's\n"
        "totals and energy (paper SV-VI; docs/model.md). SPEC and ARCH are\n"
        "paths or shipped names (mamba1, mamba2, transformer; mambalaya,\n"
        "h100).\n",
    .opts = &eval_table,
    .uses = {USE_SPEC(EvalArgs), USE_MODEL(EvalArgs), USE_NET(EvalArgs)},
    .notes = "With --config the workload is a whole model (docs/models.md):\n"
             "each distinct block priced as --design (best: the search's\n"
             "schedule per block), a prefill of --prompt tokens, then\n"
             "--generate decode steps, each at the context it has reached;\n"
             "the time to first token, the time per output token, the\n"
             "energy, the traffic per block kind and the memory it needs.\n",
    .example = "mambalaya fuse mamba2 --strategy ri+rsb+rsp --stitch global "
               "--json > p.json\n"
               "mambalaya eval mamba2 --plan p.json --phase decode --arch "
               "h100\n"
               "mambalaya eval --config tests/configs/Jamba-v0.1.json --arch "
               "h100 --batch 8 --prompt 4096\n",
    .size = sizeof(EvalArgs), .init = eval_init, .run = eval,
};
