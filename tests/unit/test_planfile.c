/* test_planfile.c — plans read back from `fuse --json` (planfile.c): the
 * checks against the cascade and against the plan's own label, and every
 * stitcher's plan passing the check of the label it carries. */
#include <glob.h>
#include <jansson.h>
#include <stdlib.h>

#include "../../src/fusion/fusion.h"
#include "../../src/report/report.h"
#include "classified.h"
#include "test.h"

/* Every shipped spec and every spec under tests/specs/good. */
static void all_specs(glob_t *g) {
  glob("specs/*.yaml", 0, NULL, g);
  glob("tests/specs/good/*.yaml", GLOB_APPEND, NULL, g);
}

/* The label check is the rule the stitchers follow: each of their plans,
 * for every strategy, passes the check of its own label. */
TEST(planfile_every_stitched_plan_passes_its_label) {
  glob_t g;
  all_specs(&g);
  CHECK(g.gl_pathc >= 10);
  int nany = 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    Classified l = classified_load(g.gl_pathv[i]);
    for (int st = 0; l.c && st < ST_COUNT; st++)
      for (int how = 0; how < STITCH_COUNT; how++) {
        Diag d = {0};
        Plan *p = fusion_plan(l.c, l.s, l.pairs, (Strategy)st, (Stitcher)how,
                              OBJ_TRAFFIC, &d);
        if (!p)
          continue; /* Algorithm 1 over more than 64 ranks */
        if (!plan_check_label(l.c, l.pairs, p, "p.json", &d))
          test_fail(__FILE__, __LINE__, "%s %s/%s: %s", g.gl_pathv[i],
                    strategy_name((Strategy)st), stitcher_name((Stitcher)how),
                    d.msg);
        /* Only Algorithm 1 (rank sets, not classes) needs "any". */
        if (p->any && how != STITCH_ALG1)
          test_fail(__FILE__, __LINE__, "%s %s/%s: labelled any",
                    g.gl_pathv[i], strategy_name((Strategy)st),
                    stitcher_name((Stitcher)how));
        nany += p->any;
        plan_free(p);
      }
    classified_free(&l);
  }
  globfree(&g);
  CHECK_INT(nany, 50); /* the Algorithm 1 plans that break their class */
}

/* The plan of L under ST (greedy), as `fuse --json` writes it, with its
 * label replaced by LABEL (NULL: kept). */
static char *plan_text(const Classified *l, Strategy st, const char *label) {
  Diag d = {0};
  Plan *p = fusion_plan(l->c, l->s, l->pairs, st, STITCH_GREEDY, OBJ_TRAFFIC,
                        &d);
  json_t *j = report_plan_json(l->c, p);
  if (label)
    json_object_set_new(j, "strategy", json_string(label));
  char *text = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  plan_free(p);
  return text;
}

/* Read TEXT as a plan of L: NULL with the message in MSG when refused. */
static Plan *read_plan(const Classified *l, const char *text, const char *want,
                       char *msg) {
  Diag d = {0};
  Plan *p = plan_read_text("p.json", text, strlen(text), want, l->c, l->s, &d);
  strcpy(msg, p ? "" : d.msg);
  return p;
}

/* The one-group Mamba-1 plan of full is refused under every label that
 * forbids one of its edges, naming the group, the edge and its class. */
TEST(planfile_label_refuses_forbidden_edges) {
  Classified l = classified_load("specs/mamba1.yaml");
  if (!l.c)
    return;
  static const char *const want[][2] = {
      {"unfused", "group 1 holds the edge LEX -> PX (through LEX), of class "
                  "RI, which strategy 'unfused' does not allow (it allows "
                  "none)"},
      {"ri", "group 1 holds the edge NUM -> MEX (through NUM), of class RSb, "
             "which strategy 'ri' does not allow (it allows RI)"},
      {"ri+rsb", "group 1 holds the edge SQEX -> NEX (through SQEX), of "
                 "class RSp, which strategy 'ri+rsb' does not allow (it "
                 "allows RI, RSb)"},
      {"ri+rsb+rsp", "group 1 holds the edge TTX -> TX (through TTX), of "
                     "class RD, which strategy 'ri+rsb+rsp' does not allow "
                     "(it allows RI, RSb, RSp)"},
  };
  char msg[1024];
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    char *text = plan_text(&l, ST_FULL, want[i][0]);
    Plan *p = read_plan(&l, text, NULL, msg);
    CHECK(p == NULL);
    CHECK(strncmp(msg, want[i][1], strlen(want[i][1])) == 0);
    if (strncmp(msg, want[i][1], strlen(want[i][1])) != 0)
      test_fail(__FILE__, __LINE__, "got: %s", msg);
    free(text);
  }
  /* full and any take it: one group of 24, "any" priced as merged full. */
  const char *ok[] = {"full", "any"};
  for (int i = 0; i < 2; i++) {
    char *text = plan_text(&l, ST_FULL, ok[i]);
    Plan *p = read_plan(&l, text, NULL, msg);
    CHECK(p != NULL);
    if (p) {
      CHECK_INT(p->ngroups, 1);
      CHECK_INT(p->groups[0].n, 24);
      CHECK_INT(p->strategy, ST_FULL);
      CHECK_STR(plan_label(p), ok[i]);
    }
    plan_free(p);
    free(text);
  }
  classified_free(&l);
}

/* An unfused label on a group with no edge inside (TTX and RX, merged
 * readers of NEX) is still refused: unfused fuses nothing. */
TEST(planfile_unfused_takes_single_einsums) {
  Classified l = classified_load("specs/mamba1.yaml");
  if (!l.c)
    return;
  char *text = plan_text(&l, ST_UNFUSED, NULL);
  char msg[1024];
  Plan *p = read_plan(&l, text, NULL, msg);
  CHECK(p != NULL);
  if (p)
    CHECK_INT(p->ngroups, 23); /* HH and H, a recurrence, share one */
  plan_free(p);
  free(text);
  /* Swap TTX into RX's group: no edge between them. */
  json_error_t je;
  char *t2 = plan_text(&l, ST_UNFUSED, NULL);
  json_t *j = json_loads(t2, 0, &je);
  json_t *g = json_object_get(j, "groups");
  size_t ttx = 0, rx = 0;
  for (size_t i = 0; i < json_array_size(g); i++) {
    const char *n = json_string_value(json_array_get(json_array_get(g, i), 0));
    ttx = strcmp(n, "TTX") == 0 ? i : ttx;
    rx = strcmp(n, "RX") == 0 ? i : rx;
  }
  json_array_append_new(json_array_get(g, ttx), json_string("RX"));
  json_array_remove(g, rx);
  char *t3 = json_dumps(j, 0);
  p = read_plan(&l, t3, NULL, msg);
  CHECK(p == NULL);
  CHECK_STR(msg, "group 7 holds 2 Einsums (TTX, RX), but strategy 'unfused' "
                 "puts each Einsum in a group of its own: label the plan "
                 "with the strategy it follows, or \"any\"");
  free(t3);
  free(t2);
  json_decref(j);
  classified_free(&l);
}

/* What the reader refuses, and the message it gives. */
TEST(planfile_refusals) {
  Classified l = classified_load("specs/transformer.yaml");
  if (!l.c)
    return;
  static const char *const cases[][2] = {
      {"[]", "not a plan: expected a JSON object as `fuse --json` writes"},
      {"{\"strategy\": \"ri\"}", "not a plan: expected {\"strategy\": S, "
                                 "\"groups\": [[EINSUM, ...], ...]} (and "
                                 "maybe \"label\": \"any\") as `fuse "
                                 "--json` writes"},
      {"{\"strategy\": \"fast\", \"groups\": []}",
       "unknown strategy 'fast' (expected unfused, ri, ri+rsb, ri+rsb+rsp, "
       "full or any)"},
      {"{\"strategy\": \"any\", \"groups\": [[], [\"Q\"]]}",
       "group 1 is empty: a group is a non-empty list of Einsums"},
      {"{\"strategy\": \"any\", \"groups\": [\"Q\"]}",
       "group 1 is not a list: a group is a non-empty list of Einsums"},
      {"{\"strategy\": \"ri\", \"label\": 3, \"groups\": []}",
       "not a plan: expected {\"strategy\": S, \"groups\": [[EINSUM, "
       "...], ...]} (and maybe \"label\": \"any\") as `fuse --json` "
       "writes"},
      {"{\"strategy\": \"any\", \"groups\": [[\"Q\", 7]]}",
       "group 1 names '(not a string)', which no Einsum of "
       "specs/transformer.yaml produces"},
      {"{\"strategy\": \"any\", \"groups\": [[\"Q\"], [\"Q\"]]}",
       "Q is in groups 1 and 2"},
      {"{\"strategy\": \"any\", \"groups\": [[\"Q\"]]}",
       "no group holds K (every Einsum of specs/transformer.yaml must be in "
       "one)"},
      {"{\"plans\": []}", "\"plans\" holds no plan: write one with `fuse "
                          "--json`"},
      {"{\"plans\": [{\"strategy\": \"ri\"}, {\"strategy\": \"full\"}]}",
       "holds 2 plans (ri, full): pick one with --strategy S"},
  };
  char msg[1024];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Plan *p = read_plan(&l, cases[i][0], NULL, msg);
    CHECK(p == NULL);
    CHECK_STR(msg, cases[i][1]);
  }
  /* A file of several: --strategy picks one, or names what it holds. */
  const char *two = "{\"plans\": [{\"strategy\": \"unfused\", \"groups\": "
                    "[[\"Q\"], [\"K\"], [\"V\"], [\"QK\"], [\"GM\"], "
                    "[\"SN\"], [\"SD\"], [\"AV\"], [\"Z\"]]}, "
                    "{\"strategy\": \"full\"}]}";
  Plan *p = read_plan(&l, two, "unfused", msg);
  CHECK(p != NULL);
  if (p)
    CHECK_INT(p->ngroups, 9);
  plan_free(p);
  CHECK(read_plan(&l, two, "ri", msg) == NULL);
  CHECK_STR(msg, "holds no plan labelled 'ri' (it holds 2: unfused, full)");
  classified_free(&l);
}

/* A plan whose groups run out of order names the reader and the group. */
TEST(planfile_refuses_reading_a_later_group) {
  Classified l = classified_load("specs/transformer.yaml");
  if (!l.c)
    return;
  const char *text = "{\"strategy\": \"any\", \"groups\": [[\"Z\"], "
                     "[\"Q\", \"K\", \"V\", \"QK\", \"GM\", \"SN\", \"SD\", "
                     "\"AV\"]]}";
  char msg[1024];
  CHECK(read_plan(&l, text, NULL, msg) == NULL);
  CHECK(strstr(msg, "this plan cannot run: Z (group 1) reads AV, which group "
                    "2 produces later (specs/transformer.yaml:") == msg);
  classified_free(&l);
}

/* What the search chose beyond the groups: "spilled" and "bind" read back
 * as written (report_plan_json), absent in older files (the rule decides:
 * NULL, unsaid), refused when they name what the cascade lacks. */
TEST(planfile_spilled_and_bind) {
  Classified l = classified_load("specs/mamba1.yaml");
  if (!l.c)
    return;
  Diag d = {0};
  Plan *p = fusion_plan(l.c, l.s, l.pairs, ST_FULL, STITCH_GREEDY,
                        OBJ_TRAFFIC, &d);
  char msg[1024], *old = plan_text(&l, ST_FULL, NULL);
  Plan *q = read_plan(&l, old, NULL, msg);
  CHECK(q && !q->spilled && q->bind == PLAN_BIND_UNSAID);
  plan_free(q);
  p->spilled = xcalloc((size_t)l.c->ntensors + 1, sizeof *p->spilled);
  int rx = cascade_tensor(l.c, "RX");
  p->spilled[rx] = true;
  p->bind = PLAN_BIND_COST;
  json_t *j = report_plan_json(l.c, p);
  char *text = json_dumps(j, JSON_COMPACT);
  q = read_plan(&l, text, NULL, msg);
  CHECK(q && q->spilled && q->bind == PLAN_BIND_COST);
  for (int t = 0; q && t < l.c->ntensors; t++)
    CHECK(q->spilled[t] == (t == rx));
  plan_free(q);
  free(text);
  json_object_set_new(j, "spilled", json_pack("[s]", "WRX"));
  text = json_dumps(j, JSON_COMPACT);
  CHECK(read_plan(&l, text, NULL, msg) == NULL);
  CHECK_STR(msg, "\"spilled\" names 'WRX', which no Einsum of "
                 "specs/mamba1.yaml produces");
  free(text);
  json_object_set_new(j, "spilled", json_array());
  json_object_set_new(j, "bind", json_string("fast"));
  text = json_dumps(j, JSON_COMPACT);
  CHECK(read_plan(&l, text, NULL, msg) == NULL);
  CHECK_STR(msg, "unknown \"bind\" 'fast' (expected rule or cost)");
  free(text);
  json_decref(j);
  free(old);
  plan_free(p);
  classified_free(&l);
}
