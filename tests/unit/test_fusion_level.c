/* test_fusion_level.c — the fusion level in the search's space (issue 16,
 * docs/search.md "The fusion level"): which levels can be it (the
 * loader's rule), the search trying each, the plan file carrying the one
 * chosen, and the ideal staying a bound over them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../src/model/model.h"
#include "../../src/report/report.h"
#include "../../src/search/search.h"
#include "../../src/workload/workload.h"
#include "classified.h"
#include "test.h"

static Arch *load(const char *path) {
  Diag d = {0};
  Arch *a = arch_load(path, &d);
  if (!a)
    test_fail(__FILE__, __LINE__, "%s: %s", path, d.msg);
  return a;
}

/* Every shipped architecture has one candidate, its own level: the other
 * on-chip levels have instances above them or are the registers. */
TEST(fusion_level_shipped_single_candidate) {
  static const struct {
    const char *path, *level;
    int other;               /* another on-chip level */
    FusionProblem why;       /* why it cannot be the fusion level */
  } shipped[] = {
      {"archs/mambalaya.yaml", "GlobalBuffer", 2, FUSION_REGISTERS},
      {"archs/h100.yaml", "L2", 2, FUSION_INSTANCES},
      {"archs/eyeriss.yaml", "GlobalBuffer", 2, FUSION_INSTANCES},
  };
  for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
    Arch *a = load(shipped[i].path);
    if (!a)
      continue;
    int cand[8], at;
    CHECK_INT(arch_fusion_candidates(a, cand), 1);
    CHECK_STR(a->levels[cand[0]].name, shipped[i].level);
    CHECK_INT(cand[0], a->fusion_level);
    CHECK_INT(arch_fusion_problem(a, shipped[i].other, &at), shipped[i].why);
    CHECK(arch_with_fusion_level(a, shipped[i].other) == NULL);
    arch_free(a);
  }
}

/* The two-level test architecture: L2 and GlobalBuffer both can; a copy
 * with the level moved turns the GlobalBuffer into an inner level. */
TEST(fusion_level_two_level_candidates) {
  Arch *a = load("tests/archs/two_level.yaml");
  if (!a)
    return;
  int cand[8];
  CHECK_INT(arch_fusion_candidates(a, cand), 2);
  CHECK_INT(cand[0], 1);
  CHECK_INT(cand[1], 2);
  CHECK_INT(a->fusion_level, 2);
  CHECK_STR(level_role_name(arch_level_role(a, 1)), "staging");
  Arch *l2 = arch_with_fusion_level(a, 1);
  CHECK(l2 != NULL);
  if (l2) {
    CHECK_INT(l2->fusion_level, 1);
    CHECK(l2->levels[1].fusion && !l2->levels[2].fusion);
    CHECK_STR(level_role_name(arch_level_role(l2, 1)), "buffer");
    CHECK_STR(level_role_name(arch_level_role(l2, 2)), "level");
    CHECK(a->levels[2].fusion); /* the original keeps its own */
  }
  arch_free(l2);
  Diag d = {0};
  CHECK(arch_with_fusion_named(a, "Registers", "p.json", (Loc){3, 19},
                               &d) == NULL);
  CHECK_INT(d.loc.line, 3);
  CHECK_INT(d.loc.col, 19);
  CHECK(strstr(d.msg, "innermost") != NULL);
  CHECK(strstr(d.msg, "can take: L2, GlobalBuffer") != NULL);
  arch_free(a);
}

/* The loader applies the same rule to the level a file marks. */
TEST(fusion_level_loader_refuses_registers) {
  const char text[] =
      "architecture:\n"
      "  name: t\n  clock: 1 GHz\n  word: 2 B\n"
      "  memory:\n"
      "    - {name: D, bandwidth: 1 GB/s, read_energy: 1 pJ/B, "
      "write_energy: 1 pJ/B}\n"
      "    - {name: B, capacity: 1 MiB, read_energy: 1 pJ/B, "
      "write_energy: 1 pJ/B}\n"
      "    - {name: R, capacity: 1 KiB, read_energy: 1 pJ/B, "
      "write_energy: 1 pJ/B, fusion: true}\n"
      "  compute:\n"
      "    - {name: m, role: matrix, shape: [2, 2], ops: {macc: 1}}\n"
      "  energy: {macc: 1 pJ}\n";
  Diag d = {0};
  Arch *a = arch_parse("r.yaml", text, strlen(text), &d);
  CHECK(a == NULL);
  CHECK_INT(d.loc.line, 8);
  CHECK(strstr(d.msg, "'R' is the innermost") != NULL);
  arch_free(a);
}

/* The SwiGLU MLP's intermediates (A, C, H: 4x1024x5632 each) outgrow the
 * 256 KiB GlobalBuffer but its rows fit the 64 MiB L2: fused in the L2
 * (one group, nothing off chip) the layer takes 35.02 ms, against 35.90
 * ms for the best the GlobalBuffer allows (the same one group there:
 * 354.7 ms, its weights refetched per small tile). */
TEST(fusion_level_search_picks_l2) {
  Case k;
  if (!case_load(&k, "tests/specs/good/swiglu_mlp.yaml",
                 "tests/archs/two_level.yaml", NULL, 0))
    return;
  ModelOverrides ov = model_no_overrides();
  Diag d = {0};
  SearchResult *r = search_best(k.c, k.s, k.a, k.pairs, &ov, SO_LATENCY,
                                NULL, &d);
  SearchControl all = {0};
  SearchLevel gb = {k.a->fusion_level, k.a}; /* the file's level alone */
  SearchResult *own = search_levels(k.c, k.s, k.a, &gb, 1, k.pairs, &ov,
                                    SO_LATENCY, &all, NULL, &d);
  CHECK(r && own);
  if (r && own) {
    CHECK_INT(r->levels, 2);
    CHECK_INT(r->fusion_level, 1);
    CHECK(r->arch && r->arch->fusion_level == 1);
    CHECK_STR(r->best->plan->fusion_level, "L2");
    CHECK_NEAR(r->found * 1e3, 35.02467176, 1e-6);
    CHECK_NEAR(own->found * 1e3, 35.903489040, 1e-6);
    /* One plan, one price: at the level it names, exactly the figure. */
    Plan *p = plan_copy(k.c, r->best->plan);
    Arch *at = arch_with_fusion_named(k.a, p->fusion_level, "p.json",
                                      (Loc){0, 0}, &d);
    Design des = design_of_strategy(p->strategy);
    ModelOpts mo = model_opts_for_plan(&ov, des, p);
    Eval *ev = at ? model_eval_plan(k.c, k.s, at, k.pairs, des, p, &mo, &d)
                  : NULL;
    CHECK(ev && ev->seconds == r->found);
    eval_free(ev);
    arch_free(at);
    /* The ideal: the least over both levels, below the best. */
    ModelOpts io = model_default_opts(DES_IDEAL);
    Eval *ideal = model_eval(k.c, k.s, k.a, k.pairs, DES_IDEAL, &io, &d);
    CHECK(ideal && ideal->seconds <= r->found);
    CHECK(ideal && ideal->seconds == r->lower);
    eval_free(ideal);
  }
  search_free(r);
  search_free(own);
  case_free(&k);
}

/* A plan file's "fusion_level": read with where it is written (eval
 * refuses a bad one there); not a name: refused by the reader. */
TEST(fusion_level_plan_file_field) {
  Case k;
  if (!case_load(&k, "tests/specs/good/swiglu_mlp.yaml",
                 "tests/archs/two_level.yaml", NULL, 0))
    return;
  const char text[] = "{\"strategy\": \"full\",\n"
                      " \"groups\": [[\"SQ\", \"XN\", \"A\", \"C\", \"H\", "
                      "\"Z\", \"Y\"]],\n"
                      "   \"fusion_level\":  \"L2\"}\n";
  Diag d = {0};
  Plan *p = plan_read_text("p.json", text, strlen(text), NULL, k.c, k.s, &d);
  CHECK(p != NULL);
  if (p) {
    CHECK_STR(p->fusion_level, "L2");
    CHECK_INT(p->fusion_level_at.line, 3);
    CHECK_INT(p->fusion_level_at.col, 21);
    Plan *q = plan_copy(k.c, p); /* the copy keeps it */
    CHECK_STR(q->fusion_level, "L2");
    plan_free(q);
  }
  plan_free(p);
  const char bad[] = "{\"strategy\": \"full\", \"groups\": [[\"SQ\", \"XN\", "
                     "\"A\", \"C\", \"H\", \"Z\", \"Y\"]], "
                     "\"fusion_level\": 2}";
  d = (Diag){0};
  p = plan_read_text("p.json", bad, strlen(bad), NULL, k.c, k.s, &d);
  CHECK(p == NULL);
  CHECK(strstr(d.msg, "\"fusion_level\" is not a memory level's name") !=
        NULL);
  plan_free(p);
  case_free(&k);
}

/* The best for O of the search restricted to level L of K's architecture
 * alone (every plan fusing every group there). */
static SearchResult *single_level(const Case *k, int l, SearchObjective o,
                                  Arch **copy, MapMemo *memo) {
  ModelOverrides ov = model_no_overrides();
  SearchControl all = {0};
  Diag d = {0};
  *copy = l == k->a->fusion_level ? NULL : arch_with_fusion_level(k->a, l);
  SearchLevel one = {l, *copy ? *copy : k->a};
  return search_levels(k->c, k->s, k->a, &one, 1, k->pairs, &ov, o, &all,
                       memo, &d);
}

/* Issue 35's counterexample, on a cascade of our own (a retention layer,
 * then a pre-norm SwiGLU MLP: tests/specs/levels/retnet_mlp.yaml): the
 * projections and the MLP fuse best in the 64 MiB L2 (their weights
 * reused over whole rows), the recurrence in the GlobalBuffer (fused in
 * the L2 its state's tiles cross the L2 at 2 TB/s). No single-level plan
 * gets both: the best in the L2 takes 45.795 ms, in the GlobalBuffer
 * 44.682 ms; the plan fusing its three groups in L2, GlobalBuffer, L2
 * takes 43.688 ms, which is, as the rule for what crosses between groups
 * makes it (off chip, whatever the levels), the sum of those groups'
 * prices in the plans fusing every group at one level. */
TEST(fusion_level_per_group_beats_single_levels) {
  Case k;
  if (!case_load(&k, "tests/specs/levels/retnet_mlp.yaml",
                 "tests/archs/two_level.yaml", NULL, 0))
    return;
  ModelOverrides ov = model_no_overrides();
  Diag d = {0};
  MapMemo *memo = map_memo_new(false); /* the three searches share them */
  SearchResult *r = search_best(k.c, k.s, k.a, k.pairs, &ov, SO_LATENCY,
                                memo, &d);
  CHECK(r != NULL);
  if (!r) {
    map_memo_free(memo);
    case_free(&k);
    return;
  }
  static const char *const want[] = {"L2", "GlobalBuffer", "L2"};
  static const char *const first[] = {"Q", "KV", "Y"};
  CHECK_INT(r->fusion_level, -1);
  CHECK(r->arch == NULL);
  CHECK_INT(r->from, DES_COUNT);
  CHECK_INT(r->best->ngroups, 3);
  for (int g = 0; g < r->best->ngroups && g < 3; g++) {
    const Group *gr = &r->best->plan->groups[g];
    CHECK_STR(k.a->levels[r->best->g[g].level].name, want[g]);
    CHECK_STR(gr->level, want[g]);
    CHECK_STR(k.c->tensors[k.c->einsums[gr->einsums[0]]->out.tensor].name,
              first[g]);
  }
  CHECK_INT(r->best->plan->groups[0].n, 3);
  CHECK_INT(r->best->plan->groups[1].n, 3);
  CHECK_NEAR(r->found * 1e3, 43.687870640, 1e-6);
  /* Every single-level plan is slower: the search at each level alone. */
  static const double single_ms[] = {0, 45.794984112, 44.682154160};
  for (int l = 1; l <= 2; l++) {
    Arch *copy;
    SearchResult *q = single_level(&k, l, SO_LATENCY, &copy, memo);
    CHECK(q != NULL);
    if (q) {
      CHECK_NEAR(q->found * 1e3, single_ms[l], 1e-6);
      CHECK(q->found > r->found * 1.02);
    }
    search_free(q);
    arch_free(copy);
  }
  /* The oracle: each group's price where every group is fused at its
   * level (the same grouping, one level for all), summed. */
  double sum = 0;
  for (int g = 0; g < 3; g++) {
    Plan *p = plan_copy(k.c, r->best->plan);
    for (int h = 0; h < p->ngroups; h++)
      p->groups[h].level[0] = 0;
    Arch *at = arch_with_fusion_level(k.a, arch_level_named(k.a, want[g]));
    Design des = design_of_strategy(p->strategy);
    ModelOpts mo = model_opts_for_plan(&ov, des, p);
    Eval *one = model_eval_plan(k.c, k.s, at, k.pairs, des, p, &mo, &d);
    CHECK(one != NULL);
    if (one) {
      /* equal but for rounding: a group's cycles are the advance of the
       * layer's clock, which starts elsewhere in the other plan */
      CHECK_NEAR(one->g[g].cycles, r->best->g[g].cycles, 1e-6);
      sum += one->g[g].cycles / k.a->clock_hz;
    }
    eval_free(one);
    arch_free(at);
  }
  CHECK_NEAR(sum * 1e3, r->found * 1e3, 1e-9);
  /* One plan, one price: the plan file names each group's level, and
   * read back it prices on the file's architecture at the figure found. */
  json_t *pj = report_plan_json(k.c, r->best->plan);
  char *text = json_dumps(pj, 0);
  json_decref(pj);
  Plan *back = plan_read_text("p.json", text, strlen(text), NULL, k.c, k.s,
                              &d);
  CHECK(back != NULL);
  if (back) {
    CHECK_STR(back->groups[1].level, "GlobalBuffer");
    Design des = design_of_strategy(back->strategy);
    ModelOpts mo = model_opts_for_plan(&ov, des, back);
    Eval *again = model_eval_plan(k.c, k.s, k.a, k.pairs, des, back, &mo, &d);
    CHECK(again && again->seconds == r->found);
    eval_free(again);
  }
  free(text);
  /* The bound: the ideal, each Einsum at its own least level, below. */
  ModelOpts io = model_default_opts(DES_IDEAL);
  Eval *ideal = model_eval(k.c, k.s, k.a, k.pairs, DES_IDEAL, &io, &d);
  CHECK(ideal && ideal->seconds == r->lower);
  CHECK(r->lower <= r->found);
  CHECK_NEAR(r->lower * 1e3, 43.541582000, 1e-6);
  eval_free(ideal);
  search_free(r);
  map_memo_free(memo);
  case_free(&k);
}

/* A plan file's "group_levels": one per group, a name or null, each read
 * with where it is written (eval checks the names there, as it checks
 * "fusion_level"); a list of another length is refused. */
TEST(fusion_level_plan_file_group_levels) {
  Case k;
  if (!case_load(&k, "tests/specs/good/swiglu_mlp.yaml",
                 "tests/archs/two_level.yaml", NULL, 0))
    return;
  const char text[] = "{\"strategy\": \"full\",\n"
                      " \"groups\": [[\"SQ\", \"XN\"], [\"A\", \"C\", \"H\"],"
                      " [\"Z\", \"Y\"]],\n"
                      " \"group_levels\": [null, \"Registers\",\n"
                      "    \"L2\"]}\n";
  Diag d = {0};
  Plan *p = plan_read_text("p.json", text, strlen(text), NULL, k.c, k.s, &d);
  CHECK(p != NULL);
  if (p) {
    CHECK_STR(p->groups[0].level, "");
    CHECK_STR(p->groups[1].level, "Registers");
    CHECK_STR(p->groups[2].level, "L2");
    CHECK_INT(p->groups[1].level_at.line, 3);
    CHECK_INT(p->groups[1].level_at.col, 25);
    CHECK_INT(p->groups[2].level_at.line, 4);
    CHECK_INT(p->groups[2].level_at.col, 5);
    CHECK(plan_names_levels(p));
    CHECK(arch_fusion_named(k.a, p->groups[1].level, "\"group_levels\"",
                            "p.json", p->groups[1].level_at, &d) < 0);
    CHECK(strstr(d.msg, "\"group_levels\": memory level 'Registers' is the "
                        "innermost") != NULL);
    CHECK_INT(d.loc.line, 3);
    /* The model refuses it too, where no command checked it. */
    d = (Diag){0};
    ModelOverrides ov = model_no_overrides();
    Design des = design_of_strategy(p->strategy);
    ModelOpts mo = model_opts_for_plan(&ov, des, p);
    Eval *ev = model_eval_plan(k.c, k.s, k.a, k.pairs, des, p, &mo, &d);
    p = NULL; /* the evaluation's, freed with it or by it */
    CHECK(ev == NULL);
    CHECK(strstr(d.msg, "group 2's fusion level: memory level 'Registers'") !=
          NULL);
    eval_free(ev);
  }
  plan_free(p);
  const char bad[] = "{\"strategy\": \"full\", \"groups\": [[\"SQ\", \"XN\", "
                     "\"A\", \"C\", \"H\", \"Z\", \"Y\"]], "
                     "\"group_levels\": [\"L2\", \"L2\"]}";
  d = (Diag){0};
  p = plan_read_text("p.json", bad, strlen(bad), NULL, k.c, k.s, &d);
  CHECK(p == NULL);
  CHECK(strstr(d.msg, "one per group") != NULL);
  plan_free(p);
  case_free(&k);
}

/* The choice is per objective: the retention layer's fastest plan is
 * four groups (Q | K V | KV S O | Y) at 4.792 ms, as fast as fusing every
 * group in the GlobalBuffer (its compute-bound groups take as long at
 * either level; a tie goes to the lesser energy, here the L2's); its most
 * frugal is three groups in L2, GlobalBuffer, L2 (the recurrence kept out
 * of the L2's 20 pJ/B): 74.45 mJ, where the best single-level plan (the
 * GlobalBuffer's) takes 86.90 mJ. */
TEST(fusion_level_per_group_for_energy) {
  Case k;
  if (!case_load(&k, "tests/specs/good/retnet.yaml",
                 "tests/archs/two_level.yaml", NULL, 0))
    return;
  ModelOverrides ov = model_no_overrides();
  Diag d = {0};
  MapMemo *memo = map_memo_new(false);
  SearchResult *lat = search_best(k.c, k.s, k.a, k.pairs, &ov, SO_LATENCY,
                                  memo, &d);
  SearchResult *en = search_best(k.c, k.s, k.a, k.pairs, &ov, SO_ENERGY,
                                 memo, &d);
  CHECK(lat && en);
  if (lat && en) {
    CHECK_INT(lat->best->ngroups, 4);
    CHECK_NEAR(lat->found * 1e3, 4.79204032, 1e-9);
    Arch *none; /* the file's own level: no copy */
    SearchResult *gb = single_level(&k, k.a->fusion_level, SO_LATENCY, &none,
                                    memo);
    CHECK(gb && gb->found == lat->found &&
          gb->best->energy_pj > lat->best->energy_pj);
    search_free(gb);
    CHECK_INT(en->fusion_level, -1);
    CHECK_INT(en->best->ngroups, 3);
    static const char *const want[] = {"L2", "GlobalBuffer", "L2"};
    for (int g = 0; g < en->best->ngroups && g < 3; g++)
      CHECK_STR(k.a->levels[en->best->g[g].level].name, want[g]);
    CHECK_NEAR(en->found * 1e3, 74.4477740237, 1e-8);
    CHECK(en->lower <= en->found);
    double single = INFINITY;
    for (int l = 1; l <= 2; l++) {
      Arch *copy;
      SearchResult *q = single_level(&k, l, SO_ENERGY, &copy, memo);
      CHECK(q != NULL);
      if (q)
        single = fmin(single, q->found);
      search_free(q);
      arch_free(copy);
    }
    CHECK_NEAR(single * 1e3, 86.9031791821, 1e-8);
  }
  search_free(lat);
  search_free(en);
  map_memo_free(memo);
  case_free(&k);
}
