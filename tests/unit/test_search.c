/* test_search.c — what the search finds where the named designs' rules
 * mislead (issue 16): FuseMax's 1-pass attention on a FuseMax-like
 * machine keeps its 2D array busy and its scores on chip; on the RetNet,
 * RWKV-6 and SwiGLU cascades of tests/specs/good, pipelined, `best` is
 * no slower than unfused and every named design on mambalaya and h100
 * (sequential composition: test_invariants.c, every cascade). */
#include <stdlib.h>

#include "../../src/arch/arch.h"
#include "../../src/model/model.h"
#include "../../src/preset/preset.h"
#include "../../src/search/search.h"
#include "../../src/workload/workload.h"
#include "classified.h"
#include "test.h"

/* The share of the layer's cycles unit U's PEs spend on useful work:
 * each Einsum's busy cycles there times its spatial utilization. */
static double unit_utilization(const Eval *ev, int u) {
  double used = 0;
  for (int i = 0; i < ev->n; i++)
    if (ev->e[i].unit == u)
      used += ev->e[i].unit_cycles * ev->e[i].util;
  return used / ev->cycles;
}

/* FuseMax's 1-pass cascade at 1K keys (M1 = 4 chunks of 256) on a
 * FuseMax-like machine, pipelined, no binding section: the search binds
 * the softmax's running updates to the 1D array beside the GEMMs, charges
 * one pass (the tile holds each 256-key chunk whole), and so keeps the 2D
 * array busy 100 % of the 287.7 us the bound allows, BQK never leaving
 * the chip. Before issue 16: 1.409 ms, BQK spilled "two-pass", the 2D
 * array 20 % busy. */
TEST(search_fusemax_one_pass_keeps_the_2d_array_busy) {
  Setting keys[] = {{"M1", 4}};
  Case k;
  if (!case_load(&k, "specs/fusemax_1pass.yaml", "tests/archs/fusemax.yaml",
                 keys, 1))
    return;
  ModelOverrides ov = model_no_overrides();
  ov.pipelined = 1;
  Diag d = {0};
  SearchResult *r = search_best(k.c, k.s, k.a, k.pairs, &ov, SO_LATENCY,
                                NULL, &d);
  CHECK(r != NULL);
  if (r) {
    const Eval *ev = r->best;
    int bqk = cascade_tensor(k.c, "BQK");
    CHECK(unit_utilization(ev, 0) >= 0.85);
    CHECK_NEAR(unit_utilization(ev, 0), 1.0, 1e-3);
    CHECK_NEAR(ev->tensor_read[bqk] + ev->tensor_write[bqk], 0, 0);
    for (int g = 0; g < ev->ngroups; g++)
      for (int i = 0; i < ev->g[g].nspills; i++)
        CHECK(ev->g[g].spills[i].tensor != bqk);
    CHECK_NEAR(r->found, 287.74e-6, 1e-3);
    CHECK_NEAR(r->found / r->lower, 1, 1e-3);
  }
  search_free(r);
  case_free(&k);
}

/* The best latency of the named designs under every stitcher, pipelined. */
static double named_pipelined(const Case *k, MapMemo *memo) {
  ModelOverrides ov = model_no_overrides();
  ov.pipelined = 1;
  double best = INFINITY;
  for (int des = 0; des < DES_COUNT; des++) {
    ModelOpts mo = model_opts_with(&ov, (Design)des);
    for (int st = 0; !mo.bound && st < STITCH_COUNT; st++) {
      mo.stitch = (Stitcher)st;
      Diag d = {0};
      Plan *p = model_plan(k->c, k->s, k->pairs, (Design)des, &mo, &d);
      Eval *ev = p ? model_eval_memo(k->c, k->s, k->a, k->pairs, (Design)des,
                                     p, &mo, memo, &d)
                   : NULL;
      if (ev)
        best = fmin(best, ev->seconds);
      eval_free(ev);
    }
  }
  return best;
}

TEST(search_three_cascades_best_beats_every_design_pipelined) {
  const char *specs[] = {"tests/specs/good/retnet.yaml",
                         "tests/specs/good/rwkv6_shift.yaml",
                         "tests/specs/good/swiglu_mlp.yaml"};
  const char *archs[] = {"archs/mambalaya.yaml", "archs/h100.yaml"};
  MapMemo *memo = map_memo_new(false);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) {
      Case k;
      if (!case_load(&k, specs[i], archs[j], NULL, 0))
        continue;
      ModelOverrides ov = model_no_overrides();
      ov.pipelined = 1;
      Diag d = {0};
      SearchResult *r = search_best(k.c, k.s, k.a, k.pairs, &ov, SO_LATENCY,
                                    memo, &d);
      double named = named_pipelined(&k, memo);
      CHECK(r && r->found <= named && r->found >= r->lower * (1 - 1e-12));
      search_free(r);
      case_free(&k);
    }
  map_memo_free(memo);
}

/* Binding for latency (issue 35). A machine whose matrix unit (65,536
 * PEs) has a 108-cycle pipeline beside a 64-PE vector unit with an
 * 8-cycle one, and one elementwise Einsum, Y = X * X over 65,536
 * elements, memory-bound: X read and Y written once, 2 x 131,072 B at
 * 100 B a cycle = 2621.44 cycles. By compute (+ fill) the matrix unit
 * wins, 1 + 108 against 1024 + 8 cycles; by latency it loses, 2621.44 +
 * 108 against 2621.44 + 8. The search's own partition binds for latency,
 * so it finds 2629.44 ns on the vector unit (the rule's named designs
 * find the same: the partition, considered first, keeps the tie). */
TEST(search_binds_for_latency) {
  static const char arch[] =
      "architecture:\n"
      "  name: deep-pipeline\n"
      "  clock: 1 GHz\n"
      "  word: 2 B\n"
      "  memory:\n"
      "    - name: DRAM\n"
      "      bandwidth: 100 GB/s\n"
      "      read_energy: 1 pJ/B\n"
      "      write_energy: 1 pJ/B\n"
      "    - name: GlobalBuffer\n"
      "      capacity: 1 MiB\n"
      "      fusion: true\n"
      "      read_energy: 1 pJ/B\n"
      "      write_energy: 1 pJ/B\n"
      "  compute:\n"
      "    - name: mxu\n"
      "      role: matrix\n"
      "      shape: [256, 256]\n"
      "      pipeline: 108\n"
      "      ops: {macc: 1, add: 1, mul: 1}\n"
      "    - name: vpu\n"
      "      role: vector\n"
      "      pes: 64\n"
      "      pipeline: 8\n"
      "      ops: {macc: 1, add: 1, mul: 1}\n"
      "  energy:\n"
      "    macc: 1 pJ\n"
      "    add: 1 pJ\n"
      "    mul: 1 pJ\n";
  static const char spec[] = "shape: {I: 65536}\n"
                             "einsum:\n"
                             "  declaration:\n"
                             "    X: [I]\n"
                             "    Y: [I]\n"
                             "  expressions:\n"
                             "    - Y[i] = X[i] * X[i]\n";
  Diag d = {0};
  Arch *a = arch_parse("deep.yaml", arch, sizeof arch - 1, &d);
  Cascade *c = spec_parse("sq.yaml", spec, sizeof spec - 1, &d);
  Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
  CHECK(a && s);
  if (!a || !s) {
    test_fail(__FILE__, __LINE__, "%s", d.msg);
    arch_free(a);
    cascade_free(c);
    return;
  }
  Pair *pairs = fusion_classify(c, s);
  ModelOverrides ov = model_no_overrides();
  SearchResult *r = search_best(c, s, a, pairs, &ov, SO_LATENCY, NULL, &d);
  CHECK(r != NULL);
  if (r) {
    CHECK_NEAR(r->found / 2629.44e-9, 1, 1e-9);
    CHECK(r->from == DES_COUNT); /* the search's own partition */
    CHECK(r->best->e[0].unit == 1); /* vpu */
    CHECK(r->lower <= r->found * (1 + 1e-12));
  }
  /* Bound by cost, any design's plan runs it there too (by compute alone
   * it took 2729.44 ns on the matrix unit). */
  ModelOpts mo = model_opts_with(&ov, DES_UNFUSED);
  mo.bind = BIND_COST;
  Eval *ev = model_eval(c, s, a, pairs, DES_UNFUSED, &mo, &d);
  CHECK(ev && ev->e[0].unit == 1);
  if (ev)
    CHECK_NEAR(ev->seconds / 2629.44e-9, 1, 1e-9);
  eval_free(ev);
  search_free(r);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(a);
}

/* The named designs' plans the caller has priced (SearchControl.named,
 * as reproduce hands them in: each design's own plan, sequential and
 * achieved) change nothing a search finds: on three cascades and two
 * architectures the best (its figures, where it came from, its level),
 * the named plans counted and the latency-energy front are those of the
 * search that prices them itself -- where FLAT's plan, handed in, is the
 * best (FuseMax's 3-pass attention on mambalaya: priced whole to win)
 * and where the search's partition is. */
TEST(search_takes_the_callers_named_plans) {
  const char *specs[] = {"specs/fusemax_3pass.yaml",
                         "tests/specs/good/retnet.yaml", "specs/mamba1.yaml"};
  const char *archs[] = {"archs/mambalaya.yaml", "tests/archs/two_level.yaml"};
  int named_best = 0, partition_best = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) {
      Case k;
      if (!case_load(&k, specs[i], archs[j], NULL, 0))
        continue;
      ModelOverrides ov = model_no_overrides();
      Diag d = {0};
      SearchResult *alone = search_best(k.c, k.s, k.a, k.pairs, &ov,
                                        SO_LATENCY, NULL, &d);
      Eval *priced[DES_COUNT];
      const Eval *given[DES_COUNT];
      for (int des = 0; des < DES_COUNT; des++) {
        ModelOpts mo = model_opts_with(&ov, (Design)des);
        Plan *p = model_plan(k.c, k.s, k.pairs, (Design)des, &mo, &d);
        given[des] = priced[des] =
            p ? model_eval_memo(k.c, k.s, k.a, k.pairs, (Design)des, p, &mo,
                                NULL, &d)
              : NULL;
      }
      SearchControl ctl = {.named = given};
      SearchResult *r = search_best_ctl(k.c, k.s, k.a, k.pairs, &ov,
                                        SO_LATENCY, &ctl, NULL, &d);
      CHECK(alone && r);
      if (alone && r) {
        CHECK(r->found == alone->found && r->lower == alone->lower);
        CHECK_INT(r->from, alone->from);
        CHECK_INT(r->fusion_level, alone->fusion_level);
        CHECK_INT(r->best->ngroups, alone->best->ngroups);
        CHECK(r->best->energy_pj == alone->best->energy_pj);
        CHECK_INT(r->named, alone->named);
        CHECK_INT(r->npareto, alone->npareto);
        for (int q = 0; q < r->npareto && q < alone->npareto; q++)
          CHECK(r->pareto[q].seconds == alone->pareto[q].seconds &&
                r->pareto[q].joules == alone->pareto[q].joules &&
                r->pareto[q].from == alone->pareto[q].from);
        named_best += r->from != DES_COUNT;
        partition_best += r->from == DES_COUNT;
      }
      search_free(alone);
      search_free(r);
      for (int des = 0; des < DES_COUNT; des++)
        eval_free(priced[des]);
      case_free(&k);
    }
  CHECK(named_best > 0 && partition_best > 0);
}
