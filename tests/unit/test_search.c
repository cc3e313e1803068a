/* test_search.c — what the search finds where the named designs' rules
 * mislead (issue 16): FuseMax's 1-pass attention on a FuseMax-like
 * machine keeps its 2D array busy and its scores on chip; on the RetNet,
 * RWKV-6 and SwiGLU cascades of tests/specs/good, pipelined, `best` is
 * no slower than unfused and every named design on mambalaya and h100
 * (sequential composition: test_invariants.c, every cascade). */
#include <stdlib.h>

#include "../../src/model/model.h"
#include "../../src/preset/preset.h"
#include "../../src/search/search.h"
#include "../../src/spec/spec.h"
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
