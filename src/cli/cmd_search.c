/* cmd_search.c — `mambalaya search SPEC`: the best schedule, its bound and
 * its gap (src/search/search.h, docs/search.md). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct SearchArgs {
  SpecOpts spec;
  NetArgs net;
  ModelOverrides mf;
  const char *arch, *plan_out, *pareto;
  const char *trace; /* --trace FILE: best's timeline as a Chrome trace */
  int objective;
  long budget;    /* --budget N: candidate groups */
  double seconds; /* --budget Ns: wall-clock seconds */
} SearchArgs;

/* --budget N (candidate groups) or Ns (seconds of the whole search). */
static int parse_budget(const char *cmd, const char *val, void *field) {
  SearchArgs *o = (SearchArgs *)((char *)field - offsetof(SearchArgs, budget));
  size_t n = strlen(val);
  char num[64];
  double v;
  bool secs = n > 1 && val[n - 1] == 's';
  snprintf(num, sizeof num, "%.*s", (int)(secs ? n - 1 : n), val);
  bool ok = n < sizeof num && parse_decimal(num, &v) && v > 0 &&
            (secs ? v <= 1e6 : v == floor(v) && v <= 1e9);
  if (!ok)
    return usage_error(cmd, "--budget expects a count of groups (1 to 1e9) "
                            "or seconds (30s), got '%s'", val);
  if (secs)
    o->seconds = v;
  else
    o->budget = (long)v;
  return 0;
}

/* The search's progress line on stderr (every few seconds of a long
 * one): the share done and the time it has left at that pace. */
static void say_progress(void *ctx, double done, double elapsed) {
  const SearchArgs *o = ctx;
  double left = done >= 0.005 ? elapsed * (1 - done) / done : INFINITY;
  if (o->seconds > 0 && left > o->seconds - elapsed)
    left = o->seconds - elapsed > 0 ? o->seconds - elapsed : 0;
  if (isfinite(left))
    fprintf(stderr, "mambalaya search: %.0f%% in %.0f s, about %.0f s "
                    "left\n", 100 * done, elapsed, left);
  else /* too little done to tell: say how to bound it */
    fprintf(stderr, "mambalaya search: %.1f%% in %.0f s (--budget 60s "
                    "bounds its time)\n", 100 * done, elapsed);
}

static const Opt search_opts[] = {
    CONFIG_OPT(SearchArgs, net.config),
    ARCH_OPT(SearchArgs, arch),
    {"--objective", OPT_ENUM, offsetof(SearchArgs, objective), "O",
     .help = "what to minimize (default: latency)", .flags = OPT_LIST,
     .choices = &search_objective_choices},
    PHASE_OPT(SearchArgs),
    TRACE_OPT(SearchArgs, trace),
    {"--plan-out", OPT_PATH, offsetof(SearchArgs, plan_out), "FILE",
     .help = "write the plan found as `fuse --json` writes one, with its "
             "binding, spills and fusion level: `eval --plan FILE` prices "
             "it as found, "
             "`exec --plan FILE` runs it"},
    {"--budget", OPT_CUSTOM, offsetof(SearchArgs, budget), "N|Ts",
     .help = "N: price at most N candidate groups, then extend by single "
             "Einsums; Ts (30s): stop pricing after T seconds of the whole "
             "search; either way the best found and its gap to the bound "
             "(default: every group, exact)",
     .parse = parse_budget},
    {"--pareto", OPT_STRING, offsetof(SearchArgs, pareto), "latency,energy",
     .help = "print the latency-energy front: every schedule no other is "
             "both as fast and as frugal as"},
    {"--json", OPT_FLAG, offsetof(SearchArgs, spec.json), NULL,
     .help = "print JSON: objective, found, lower_bound, gap, the space, the "
             "plan, the schedule and the bound as eval --json prints them, and "
             "the inputs"},
};
static const OptTable search_table = OPT_TABLE(search_opts);

static void search_init(void *opts) {
  SearchArgs *o = opts;
  *o = (SearchArgs){.mf = model_no_overrides(), .objective = SO_LATENCY};
  net_args_init(&o->net);
}

/* Write the plan found into --plan-out, never over an input of the run;
 * an exit status. */
static int write_plan(const Parsed *p, const SearchArgs *o, const Cascade *c,
                      const SearchResult *r) {
  json_t *j = report_plan_json(c, r->best->plan);
  char *text = json_dumps(j, JSON_INDENT(2));
  json_decref(j);
  int status = write_output(p->cmd, o->plan_out, text, strlen(text),
                            p->inputs);
  free(text);
  return status;
}

/* A: the architecture given, reported with the fusion level the search
 * chose (search_arch; the given one where each group has its own). */
static void print_result(const SearchArgs *o, const Cascade *c,
                         const Shape *s, const Arch *given,
                         const SearchResult *r) {
  const Arch *arch = search_arch(r, given);
  SearchObjective obj = (SearchObjective)o->objective;
  if (o->spec.json) {
    Inputs in = spec_inputs("search", &o->spec, c, s);
    in.arch = o->arch ? o->arch : "mambalaya";
    in.phase = o->spec.phase == PHASE_DECODE ? "decode" : "prefill";
    in.objective = search_objective_name(obj);
    in.opts = &r->best->opts;
    json_t *j = report_search_json(c, arch, r, obj);
    if (o->pareto)
      json_object_set_new(j, "pareto", report_pareto_json(r));
    emit_json(j, &in);
    return;
  }
  Buf b = {0};
  report_search_text(&b, c, arch, r, obj);
  if (o->pareto)
    report_pareto_text(&b, r);
  emit(&b);
  buf_free(&b);
}

/* --pareto names the two figures of the front the program keeps. */
static bool pareto_ok(const char *f) {
  return strcmp(f, "latency,energy") == 0 || strcmp(f, "energy,latency") == 0;
}

static int search(const Parsed *p, void *opts) {
  SearchArgs *o = opts;
  /* --config: every distinct block of the model searched for latency,
   * the model priced end to end with them. */
  static const char *const per_cascade[] = {
      "--plan-out", "--pareto", "--phase", "--set", "--model",
      "--objective", "--budget", "--trace", NULL};
  int bad = net_check_options(p, o->net.config, o->spec.spec, per_cascade);
  if (bad)
    return bad;
  if (o->net.config)
    return net_eval("search", &o->net, o->arch, -1, &o->mf, o->spec.json);
  if (o->pareto && !pareto_ok(o->pareto))
    return usage_error(p->cmd, "--pareto takes latency,energy (got '%s')",
                       o->pareto);
  if (o->pareto && o->objective == SO_TRAFFIC)
    return usage_error(p->cmd, "--pareto latency,energy needs an objective "
                               "of latency, energy or edp");
  const char *inputs[] = {input_path("specs", o->spec.spec),
                          input_path("archs", o->arch)};
  int err;
  if (o->plan_out && (err = check_output(p->cmd, o->plan_out, inputs, 2)))
    return err;
  if (o->trace && (err = check_output(p->cmd, o->trace, inputs, 2)))
    return err;
  if (o->spec.phase == PHASE_DECODE && o->mf.state_io < 0)
    o->mf.state_io = 1; /* a decode step reads and writes its state */
  Arch *arch;
  Cascade *c;
  Shape *s;
  int status = load_spec_arch(p->cmd, &o->spec, o->arch, true, &arch, &c, &s);
  if (status)
    return status;
  Diag d = {0};
  Pair *pairs = fusion_classify(c, s);
  MapMemo *memo = map_memo_new(false);
  SearchControl ctl = {.budget = o->budget, .seconds = o->seconds,
                       .progress = say_progress, .ctx = o};
  SearchResult *r = search_best_ctl(c, s, arch, pairs, &o->mf,
                                    (SearchObjective)o->objective, &ctl,
                                    memo, &d);
  if (!r)
    status = input_failed(&d);
  else if (o->trace)
    status = write_trace(p, o->trace, c, search_arch(r, arch), r->best);
  if (r && !status && (!o->plan_out || !(status = write_plan(p, o, c, r))))
    print_result(o, c, s, arch, r);
  search_free(r);
  map_memo_free(memo);
  free(pairs);
  return spec_arch_free(arch, c, s, status);
}

const Command search_command = {
    "search", "the best schedule on an accelerator, its bound and its gap",
    .about =
        "Find the schedule of the cascade in SPEC that minimizes the\n"
        "objective on an accelerator: every partition of the merged cascade\n"
        "into contiguous groups that can run, each group priced by the model\n"
        "with its Einsums bound to units by cost and under each choice of the\n"
        "intermediates it sends off chip (a dynamic program, exact over that\n"
        "space), each group at every memory level the architecture can\n"
        "take as its fusion level, and every named design's plan under every\n"
        "stitcher beside it, at each of those levels. Prints the space, the\n"
        "fusion level chosen (or each group's), the plan found, its cost, the\n"
        "lower bound (the ideal design) and the gap, then the schedule as\n"
        "`eval` prints it (docs/search.md). The plan file (--plan-out)\n"
        "carries the binding, the spills and the fusion level or each\n"
        "group's (where there was a choice): `eval --plan FILE` prices it at\n"
        "the figure found.\n",
    .opts = &search_table,
    .uses = {USE_SPEC(SearchArgs), USE_MODEL(SearchArgs),
             USE_NET(SearchArgs)},
    .example = "mambalaya search mamba1 --model mamba-370m --arch h100 "
               "--plan-out best.json\n"
               "mambalaya eval mamba1 --model mamba-370m --arch h100 --plan "
               "best.json\n",
    .size = sizeof(SearchArgs), .init = search_init, .run = search,
};
