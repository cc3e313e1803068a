/* test_recurrence.c — no plan reads across groups what it does not charge
 * (issue 33), on every shipped cascade (specs/, specs/layers/) and every
 * cascade under tests/specs/good:
 *
 *   - every plan any part of the tool makes (every strategy under every
 *     stitcher, every named design's own plan, the search's best) runs
 *     group after group: no Einsum reads what a later group produces, a
 *     recurrence's earlier step (S[i-1]) included, and every read inside
 *     a recurrence is served in its group;
 *   - every tensor one group produces and another reads is written off
 *     chip by its producer, whole, and read back by each reading group,
 *     at least the elements that group's readers touch, and the model's
 *     DRAM bytes for it are the plan's transfers (ideal accounting);
 *   - a grouping that cuts a recurrence is refused (plan_can_run), naming
 *     the group and the tensor; a plan file doing so, with its file. */
#include <glob.h>
#include <stdlib.h>

#include "../../src/model/model.h"
#include "../../src/preset/preset.h"
#include "../../src/search/search.h"
#include "../../src/workload/workload.h"
#include "test.h"

/* Every cascade: shipped and under tests/specs/good, sorted per folder. */
static void cascades(glob_t *g) {
  glob("specs/*.yaml", 0, NULL, g);
  glob("specs/layers/*.yaml", GLOB_APPEND, NULL, g);
  glob("tests/specs/good/*.yaml", GLOB_APPEND, NULL, g);
}

/* A cascade bound at small sizes: its model's, every rank 4 (so that the
 * search prices each in milliseconds; what crosses groups does not depend
 * on the sizes). */
typedef struct Bound {
  Cascade *c;
  Shape *s;
  Pair *pairs;
} Bound;

static bool bound_load(Bound *b, const char *path) {
  Diag d = {0};
  *b = (Bound){spec_load(path, &d), NULL, NULL};
  if (!b->c) {
    test_fail(__FILE__, __LINE__, "%s: %s", path, d.msg);
    return false;
  }
  Setting set[IR_MAX_VARS];
  int n = 0;
  for (int r = 0; r < b->c->nranks && n < IR_MAX_VARS; r++)
    if (b->c->ranks[r].same_as < 0 && !b->c->ranks[r].window)
      set[n++] = (Setting){b->c->ranks[r].name, 4};
  const ModelSizes *m = b->c->model ? preset_sizes(b->c->model) : NULL;
  b->s = shape_bind_filled(b->c, m, set, n, 4, &d);
  if (!b->s) {
    test_fail(__FILE__, __LINE__, "%s: %s", path, d.msg);
    return false;
  }
  b->pairs = fusion_classify(b->c, b->s);
  return true;
}

static void bound_free(Bound *b) {
  free(b->pairs);
  shape_free(b->s);
  cascade_free(b->c);
}

static const char *out_name(const Cascade *c, int e) {
  return c->tensors[c->einsums[e]->out.tensor].name;
}

/* The elements of tensor T that plan P's transfers of kind K move at the
 * Einsums of group G (G < 0: anywhere). */
static double moved(const Plan *p, int t, XferKind k, int g) {
  double n = 0;
  for (int i = 0; i < p->nxfers; i++) {
    const Transfer *x = &p->xfers[i];
    if (x->tensor == t && x->kind == k &&
        (g < 0 || p->group_of[x->einsum] == g))
      n += x->elems;
  }
  return n;
}

/* Every read of plan P (of B, named WHAT) across groups is charged; the
 * checks made. */
static int check_charged(const Bound *b, const Plan *p, const char *what) {
  const Cascade *c = b->c;
  int checks = 0;
  for (int i = 0; i < c->nedges; i++) {
    const Edge *e = &c->edges[i];
    int gp = p->group_of[e->producer], gq = p->group_of[e->consumer];
    const char *t = c->tensors[e->tensor].name;
    checks++;
    if (gp == gq)
      continue; /* handed over on chip, a recurrence's step included */
    if (gp > gq || edge_in_recurrence(c, e)) {
      test_fail(__FILE__, __LINE__,
                "%s: %s (group %d) reads %s%s from group %d, later or "
                "across a recurrence",
                what, out_name(c, e->consumer), gq + 1, t,
                e->lagged ? " (lagged)" : "", gp + 1);
      continue;
    }
    double whole = shape_tensor_elems(b->s, e->tensor);
    double need = einsum_read_elems(b->s, e->consumer, e->tensor);
    if (!p->written[e->tensor] ||
        moved(p, e->tensor, XFER_WRITE, gp) != whole)
      test_fail(__FILE__, __LINE__,
                "%s: %s, read by group %d, is not written off chip whole "
                "by group %d (%g of %g elements)",
                what, t, gq + 1, gp + 1,
                moved(p, e->tensor, XFER_WRITE, gp), whole);
    if (moved(p, e->tensor, XFER_READ, gq) < need)
      test_fail(__FILE__, __LINE__,
                "%s: group %d reads %g elements of %s off chip, %s "
                "touches %g",
                what, gq + 1, moved(p, e->tensor, XFER_READ, gq), t,
                out_name(c, e->consumer), need);
  }
  /* A read inside a recurrence is served in its group. */
  for (int e = 0; e < c->neinsums; e++)
    for (int k = 0; k < c->einsums[e]->nreads; k++) {
      int pr = c->tensors[c->einsums[e]->reads[k]->tensor].producer;
      if (p->src[e][k] == SRC_RECURRENCE && p->group_of[pr] != p->group_of[e])
        test_fail(__FILE__, __LINE__, "%s: %s reads %s on chip across groups",
                  what, out_name(c, e),
                  c->tensors[c->einsums[e]->reads[k]->tensor].name);
    }
  return checks;
}

/* The model's DRAM bytes per tensor are the plan's transfers (ideal
 * accounting: what it moves, nothing more). P is taken. */
static void check_model(const Bound *b, const Arch *a, Design d, Plan *p,
                        const char *what) {
  ModelOpts o = model_default_opts(d);
  o.accounting = ACCOUNT_IDEAL;
  Diag dg = {0};
  Plan *q = plan_copy(b->c, p);
  Eval *ev = model_eval_plan(b->c, b->s, a, b->pairs, d, p, &o, &dg);
  if (!ev)
    test_fail(__FILE__, __LINE__, "%s: %s", what, dg.msg);
  for (int t = 0; ev && t < b->c->ntensors; t++) {
    if (!tensor_is_intermediate(b->c, t))
      continue;
    double r = moved(q, t, XFER_READ, -1) * a->word_bytes;
    double w = moved(q, t, XFER_WRITE, -1) * a->word_bytes;
    if (ev->tensor_read[t] != r || ev->tensor_write[t] != w)
      test_fail(__FILE__, __LINE__,
                "%s: %s: the model reads %g and writes %g bytes, the plan "
                "moves %g and %g",
                what, b->c->tensors[t].name, ev->tensor_read[t],
                ev->tensor_write[t], r, w);
  }
  eval_free(ev);
  plan_free(q);
}

/* What charge_cascade counted. */
typedef struct Charged {
  long checks;
  int nplans, nrec; /* plans checked; recurrences of the cascades */
} Charged;

/* Every plan of cascade PATH (15 stitched, 9 designs, the search on A)
 * charges every read that crosses its groups, and the model's bytes are
 * the plan's, into T. */
static void charge_cascade(const char *path, const Arch *a, MapMemo *memo,
                           Charged *t) {
  Diag d = {0};
  Bound b;
  if (!bound_load(&b, path)) {
    bound_free(&b);
    return;
  }
  for (int e = 0; e < b.c->neinsums; e++)
    t->nrec += b.c->recurrence[e] == e;
  char what[256];
  for (int st = 0; st < ST_COUNT; st++)
    for (int how = 0; how < STITCH_COUNT; how++) {
      Plan *p = fusion_plan(b.c, b.s, b.pairs, (Strategy)st, (Stitcher)how,
                            OBJ_TRAFFIC, &d);
      if (!p)
        continue; /* Algorithm 1 over more than 64 ranks */
      snprintf(what, sizeof what, "%s %s/%s", path,
               strategy_name((Strategy)st), stitcher_name((Stitcher)how));
      t->checks += check_charged(&b, p, what);
      check_model(&b, a, design_of_strategy((Strategy)st), p, what);
      t->nplans++;
    }
  for (int des = 0; des < DES_COUNT; des++) {
    ModelOpts o = model_default_opts((Design)des);
    Plan *p = model_plan(b.c, b.s, b.pairs, (Design)des, &o, &d);
    snprintf(what, sizeof what, "%s design %s", path,
             design_name((Design)des));
    if (!p) {
      test_fail(__FILE__, __LINE__, "%s: %s", what, d.msg);
      continue;
    }
    t->checks += check_charged(&b, p, what);
    if (o.bound) /* ideal: a lower bound, moving no intermediate */
      plan_free(p);
    else
      check_model(&b, a, (Design)des, p, what);
    t->nplans++;
  }
  ModelOverrides ov = model_no_overrides();
  SearchResult *r = search_best(b.c, b.s, a, b.pairs, &ov, SO_LATENCY, memo,
                                &d);
  snprintf(what, sizeof what, "%s search", path);
  if (!r)
    test_fail(__FILE__, __LINE__, "%s: %s", what, d.msg);
  else
    t->checks += check_charged(&b, r->best->plan, what);
  t->nplans += r != NULL;
  search_free(r);
  bound_free(&b);
}

/* The plans checked of one cascade, at least: the 15 stitched but 2, the
 * 9 designs, the search. */
enum { PLANS_PER_CASCADE = ST_COUNT * STITCH_COUNT - 2 + DES_COUNT + 1 };

TEST(recurrence_every_cross_group_read_charged) {
  glob_t g;
  cascades(&g);
  Diag d = {0};
  Arch *a = arch_load("archs/mambalaya.yaml", &d);
  CHECK(a != NULL);
  CHECK(g.gl_pathc >= 40); /* 11 shipped, 20 layers, 11 under tests */
  Charged t = {0};
  MapMemo *memo = map_memo_new(false);
  for (size_t i = 0; a && i < g.gl_pathc; i++)
    charge_cascade(g.gl_pathv[i], a, memo, &t);
  CHECK(t.nplans >= (int)g.gl_pathc * PLANS_PER_CASCADE);
  CHECK_INT(t.nrec, 19); /* the recurrences the plans had to keep whole */
  CHECK(t.checks > 10000);
  map_memo_free(memo);
  arch_free(a);
  globfree(&g);
}

/* The test above, over every cascade, is optimized-only (the Makefile's
 * UNIT_OPTIMIZED_ONLY); under the sanitizers this walks the same code on
 * Mamba-1 (its recurrence, 24 Einsums) and a cascade whose recurrence
 * reads merged inputs. */
TEST(recurrence_cross_group_reads_charged_mamba1) {
  static const char *const paths[] = {
      "specs/mamba1.yaml", "tests/specs/good/merged_reads_recurrence.yaml"};
  Diag d = {0};
  Arch *a = arch_load("archs/mambalaya.yaml", &d);
  CHECK(a != NULL);
  Charged t = {0};
  MapMemo *memo = map_memo_new(false);
  for (int i = 0; a && i < 2; i++)
    charge_cascade(paths[i], a, memo, &t);
  CHECK(t.nplans >= 2 * PLANS_PER_CASCADE);
  CHECK_INT(t.nrec, 2);
  CHECK(t.checks > 100);
  map_memo_free(memo);
  arch_free(a);
}

/* Every recurrence of every cascade, cut between its first Einsum and the
 * rest (the unfused plan, with the recurrence's group split in two in its
 * place), is refused, naming the group and the tensor read back. */
TEST(recurrence_every_cut_refused) {
  glob_t g;
  cascades(&g);
  int cut = 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    Bound b;
    if (!bound_load(&b, g.gl_pathv[i])) {
      bound_free(&b);
      continue;
    }
    const Cascade *c = b.c;
    Diag d = {0};
    Plan *u = fusion_plan(c, b.s, b.pairs, ST_UNFUSED, STITCH_GREEDY,
                          OBJ_TRAFFIC, &d);
    int *group_of = xcalloc((size_t)c->neinsums + 1, sizeof *group_of);
    for (int r = 0; u && r < c->neinsums; r++) {
      int gr = u->group_of[r];
      if (c->recurrence[r] != r || u->groups[gr].n < 2)
        continue; /* no recurrence of two Einsums or more starts at r */
      for (int e = 0; e < c->neinsums; e++)
        group_of[e] = u->group_of[e] + (u->group_of[e] > gr ||
                                        (u->group_of[e] == gr && e != r));
      d = (Diag){0};
      Plan *p = fusion_plan_groups(c, b.s, ST_UNFUSED, group_of, &d);
      CHECK(p == NULL);
      char want[128];
      snprintf(want, sizeof want, "%s (group %d) reads ", out_name(c, r),
               gr + 1);
      if (!strstr(d.msg, want) || !strstr(d.msg, "it cuts the recurrence"))
        test_fail(__FILE__, __LINE__, "%s: cutting %s's recurrence: %s",
                  g.gl_pathv[i], out_name(c, r), d.msg);
      plan_free(p);
      cut++;
    }
    free(group_of);
    plan_free(u);
    bound_free(&b);
  }
  /* Mamba-1's HH/H (specs/ and specs/layers/), Mamba-2's HH/H, the
   * SSD's HH/HS, FuseMax's two, Gated DeltaNet's (twice), RetNet's. */
  CHECK_INT(cut, 9);
  globfree(&g);
}

/* The finding of issue 33 as a plan file: RetNet as [Q K V SD | KV S O Y]
 * has SD read S[i-1] from the later group. Refused with the file, the
 * group and the tensor; the same groups with SD moved to S's load. */
TEST(recurrence_plan_file_cut_refused) {
  Bound b;
  if (!bound_load(&b, "tests/specs/good/retnet.yaml")) {
    bound_free(&b);
    return;
  }
  static const char cut[] =
      "{\"strategy\": \"any\", \"groups\": [[\"Q\", \"K\", \"V\", \"SD\"], "
      "[\"KV\", \"S\", \"O\", \"Y\"]]}";
  Diag d = {0};
  Plan *p = plan_read_text("cut.json", cut, strlen(cut), NULL, b.c, b.s, &d);
  CHECK(p == NULL);
  CHECK_STR(d.file, "cut.json");
  CHECK(strstr(d.msg, "this plan cannot run: SD (group 1) reads S of an "
                      "earlier step, which group 2 produces later: it cuts "
                      "the recurrence of SD and S") != NULL);
  plan_free(p);
  static const char whole[] =
      "{\"strategy\": \"any\", \"groups\": [[\"Q\", \"K\", \"V\"], "
      "[\"SD\", \"KV\", \"S\", \"O\", \"Y\"]]}";
  d = (Diag){0};
  p = plan_read_text("whole.json", whole, strlen(whole), NULL, b.c, b.s, &d);
  CHECK(p != NULL);
  if (p) { /* Q, K and V cross: written, then read by the second group */
    CHECK_INT(p->ngroups, 2);
    CHECK(p->written[cascade_tensor(b.c, "K")]);
    CHECK(p->onchip[cascade_tensor(b.c, "SD")]);
    CHECK(p->onchip[cascade_tensor(b.c, "S")]);
  }
  plan_free(p);
  bound_free(&b);
}

/* Inside a group, a read within a recurrence is on chip only a step back
 * (the state the group reserves room for). MARCA-like holds its region's
 * intermediates whole, so at B = 64, I = 2048 (mamba-370m) they all go off
 * chip for capacity, HH among them: HH is then written and read back by
 * H at the same step, B x I x D x N = 64 x 2048 x 2048 x 16 elements of
 * 2 bytes each way; H is written and read once (by S6Y), its lagged read
 * by HH staying the state. Before, HH's write was charged and its read
 * was not. The unfused design, which keeps HH on chip, moves none of it. */
TEST(recurrence_step_read_off_chip_charged) {
  Diag d = {0};
  Arch *a = arch_load("archs/mambalaya.yaml", &d);
  Cascade *c = spec_load("specs/mamba1.yaml", &d);
  Shape *s = a && c ? shape_bind(c, preset_sizes("mamba-370m"), NULL, 0,
                                 true, &d)
                    : NULL;
  CHECK(s != NULL);
  if (!s) {
    test_fail(__FILE__, __LINE__, "%s", d.msg);
    cascade_free(c);
    arch_free(a);
    return;
  }
  Pair *pairs = fusion_classify(c, s);
  int hh = cascade_tensor(c, "HH"), h = cascade_tensor(c, "H");
  double ssm = 64.0 * 2048 * 2048 * 16 * 2;
  ModelOpts o = model_default_opts(DES_MARCA);
  Eval *m = model_eval(c, s, a, pairs, DES_MARCA, &o, &d);
  CHECK(m != NULL);
  if (m) {
    CHECK_NEAR(m->tensor_write[hh], ssm, 0);
    CHECK_NEAR(m->tensor_read[hh], ssm, 0);
    CHECK_NEAR(m->tensor_write[h], ssm, 0);
    CHECK_NEAR(m->tensor_read[h], ssm, 0);
  }
  eval_free(m);
  o = model_default_opts(DES_UNFUSED);
  Eval *u = model_eval(c, s, a, pairs, DES_UNFUSED, &o, &d);
  CHECK(u != NULL);
  if (u) {
    CHECK_NEAR(u->tensor_write[hh], 0, 0);
    CHECK_NEAR(u->tensor_read[hh], 0, 0);
  }
  eval_free(u);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(a);
}
