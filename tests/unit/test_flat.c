/* test_flat.c — the attention baselines of the literature: FLAT's plan
 * (the attention block fused by query rows, its softmax on the 1D array),
 * FLAT between the unfused design and FuseMax's fused 1-pass cascade at a
 * long sequence, and our unfused 3-pass attention against the accounting
 * of FuseMax's artifact (docs/model.md §5). */
#include <stdlib.h>

#include "../../src/model/model.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
#include "test.h"

/* One evaluation: the spec, its sizes, the design and its plan. */
typedef struct Point {
  Cascade *c;
  Shape *s;
  Pair *pairs;
  Arch *a;
  Eval *ev;
} Point;

static void point_free(Point *p) {
  eval_free(p->ev);
  free(p->pairs);
  shape_free(p->s);
  arch_free(p->a);
  cascade_free(p->c);
}

/* SPEC bound with SET (N settings) on mambalaya, and design D priced with
 * its defaults (two passes TWO_PASS: -1 for the default). GROUP_OF, if
 * not NULL, numbers the groups of a plan that replaces the design's. */
static Point price(const char *spec, const Setting *set, int n, Design d,
                   int two_pass, const int *group_of) {
  Diag dg = {0};
  Point p = {0};
  p.c = spec_load(spec, &dg);
  p.a = arch_load("archs/mambalaya.yaml", &dg);
  if (p.c && p.a)
    p.s = shape_bind(p.c, p.c->model ? preset_sizes(p.c->model) : NULL, set,
                     n, true, &dg);
  if (!p.s) {
    test_fail(__FILE__, __LINE__, "%s: %s", spec, dg.msg);
    return p;
  }
  p.pairs = fusion_classify(p.c, p.s);
  ModelOpts o = model_default_opts(d);
  if (two_pass >= 0)
    o.two_pass = two_pass;
  Plan *plan = group_of
                   ? fusion_plan_groups(p.c, p.s, ST_UNFUSED, group_of, &dg)
                   : model_plan(p.c, p.s, p.pairs, d, &o, &dg);
  p.ev = model_eval_plan(p.c, p.s, p.a, p.pairs, d, plan, &o, &dg);
  CHECK(p.ev != NULL);
  return p;
}

static double dram(const Point *p) {
  return p->ev ? p->ev->read + p->ev->write : NAN;
}

static const char *out_name(const Point *p, int i) {
  return p->c->tensors[p->c->einsums[p->ev->e[i].einsum]->out.tensor].name;
}

static const char *unit_name(const Point *p, int i) {
  return p->a->units[p->ev->e[i].unit].name;
}

/* FuseMax's 3-pass cascade: one group tiled by the batch, the heads and
 * the queries (whole rows of the M keys held); the GEMMs on the 2D array,
 * the softmax on its 1D mode; no spill, no partial products: it reads Q
 * and writes AV once and reads K and V once per tile of 1024 of the 4096
 * queries, each tensor 67,108,864 bytes: (2 + 2 x 4) x 67,108,864. */
TEST(flat_fuses_the_3pass_attention_by_rows) {
  Point p = price("specs/fusemax_3pass.yaml", NULL, 0, DES_FLAT, -1, NULL);
  if (!p.ev) {
    point_free(&p);
    return;
  }
  CHECK_INT(p.ev->ngroups, 1);
  CHECK_INT(p.ev->g[0].n, 6);
  CHECK_INT(p.ev->g[0].ntiled, 3);
  const char *tiled[] = {"B", "H", "P"};
  for (int k = 0; k < p.ev->g[0].ntiled && k < 3; k++)
    CHECK_STR(p.c->ranks[p.ev->g[0].tiled[k]].name, tiled[k]);
  CHECK_INT(p.ev->g[0].nspills, 0);
  for (int i = 0; i < p.ev->n; i++) {
    bool gemm = !strcmp(out_name(&p, i), "QK") || !strcmp(out_name(&p, i), "AV");
    CHECK_STR(unit_name(&p, i), gemm ? "array2d" : "array2d-1d");
  }
  CHECK_NEAR(dram(&p), 10 * 67108864.0, 0);
  CHECK_NEAR(p.ev->inter, 0, 0);
  point_free(&p);
}

/* The Transformer: QK, the softmax (GM, SN, SD) and AV one group; the
 * projections Q, K, V and Z alone. */
TEST(flat_keeps_the_projections_alone) {
  Point p = price("specs/transformer.yaml", NULL, 0, DES_FLAT, -1, NULL);
  if (!p.ev) {
    point_free(&p);
    return;
  }
  CHECK_INT(p.ev->ngroups, 5);
  const char *block[] = {"QK", "GM", "SN", "SD", "AV"};
  int blocks = 0, alone = 0;
  for (int g = 0; g < p.ev->ngroups; g++) {
    const GroupEval *ge = &p.ev->g[g];
    alone += ge->n == 1;
    blocks += ge->n == 5;
    for (int i = 0; ge->n == 5 && i < 5; i++)
      CHECK_STR(out_name(&p, ge->first + i), block[i]);
  }
  CHECK_INT(blocks, 1);
  CHECK_INT(alone, 4);
  point_free(&p);
}

/* Without attention (no batched product followed by one over the keys
 * with a reduction over them between), FLAT is the unfused design,
 * figure for figure: Mamba-1, Mamba-2's chunked SSD (C·Bᵀ, a mask, ·X)
 * and Gated DeltaNet. */
TEST(flat_is_unfused_without_attention) {
  const char *specs[] = {"specs/mamba1.yaml", "specs/mamba2_chunked.yaml",
                         "specs/gated_deltanet.yaml"};
  for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
    Point f = price(specs[k], NULL, 0, DES_FLAT, -1, NULL);
    Point u = price(specs[k], NULL, 0, DES_UNFUSED, -1, NULL);
    if (f.ev && u.ev) {
      CHECK_INT(f.ev->ngroups, u.ev->ngroups);
      CHECK_NEAR(f.ev->seconds, u.ev->seconds, 0);
      CHECK_NEAR(dram(&f), dram(&u), 0);
      CHECK_NEAR(f.ev->energy_pj, u.ev->energy_pj, 0);
    }
    point_free(&f);
    point_free(&u);
  }
}

/* At 64K keys and queries (B = 8, H = 16), FLAT's rows fill the buffer 64
 * queries at a time, so K and V are fetched 1024 times: it moves less than
 * the unfused 3-pass attention (every score tensor written and read
 * again) and more than FuseMax's fused 1-pass cascade, which holds a
 * chunk of 256 keys and tiles 16384 queries (its one pass over a chunk
 * stays on chip: its tile holds the chunk whole, so one pass, without
 * --no-two-pass: docs/model.md §3). */
TEST(flat_between_unfused_and_fused_at_long_sequence) {
  Setting three[] = {{"M", 65536}};
  Setting one[] = {{"M1", 256}};
  Point u = price("specs/fusemax_3pass.yaml", three, 1, DES_UNFUSED, -1,
                  NULL);
  Point f = price("specs/fusemax_3pass.yaml", three, 1, DES_FLAT, -1, NULL);
  Point x = price("specs/fusemax_1pass.yaml", one, 1, DES_FULL, -1, NULL);
  CHECK_NEAR(dram(&u), 8.8005e12, 1e-4);
  CHECK_NEAR(dram(&f), 2.2012e12, 1e-4);
  CHECK_NEAR(dram(&x), 1.5032e10, 1e-4);
  CHECK(dram(&u) > dram(&f) && dram(&f) > dram(&x));
  if (f.ev)
    CHECK_NEAR(f.ev->g[0].tile[2], 64, 0);
  point_free(&u);
  point_free(&f);
  point_free(&x);
}

/* When a whole row no longer fits, FLAT spills part of each row rather
 * than shrinking its tile of queries further (FuseMax's artifact: a row
 * tile and a "proportion_spilled"). One head (B = H = 1, E = F = 8) at
 * M = P = 2^20 keys on mambalaya: the group may hold 3/4 of 2^24
 * elements, 12,582,912; a tile of t queries holds, at its peak (SN), two
 * rows (QK and SN) and a maximum: 2 x t x 2^20 + t. t = 4 fits (8.4e6,
 * K and V fetched 2^18 times); t = 8 (16,777,224) does not, and is
 * faster overbooked: each held tensor keeps 12,582,912 / 16,777,224 of
 * its tile on chip and sends the rest, 4,194,312 / 16,777,224, off chip
 * and back -- QK written and read by GM and SN, SN written and read by SD
 * and A, A written and read by AV (8 rows of 2^40 elements), GM and SD
 * written and read once (4 x 2^20) -- while K and V are fetched 2^17
 * times (2^17 x 2 x 2^23 elements) and Q and AV once (2 x 2^23), 2 bytes
 * an element. */
TEST(flat_spills_part_of_each_row) {
  Setting head[] = {{"B", 1}, {"H", 1}, {"E", 8}, {"F", 8}, {"M", 1048576}};
  Point f = price("specs/fusemax_3pass.yaml", head, 5, DES_FLAT, -1, NULL);
  if (!f.ev) {
    point_free(&f);
    return;
  }
  CHECK_INT(f.ev->ngroups, 1);
  CHECK_NEAR(f.ev->g[0].tile[2], 8, 0);
  CHECK_NEAR(f.ev->g[0].reserve, 12582912, 0);
  double share = 4194312.0 / 16777224.0;
  double rows = 8 * 1099511627776.0 + 4 * 1048576.0;
  CHECK_NEAR(f.ev->inter, 2 * share * rows, 1e-9);
  CHECK_NEAR(f.ev->intra, 2 * (131072.0 * 2 * 8388608 + 2 * 8388608), 1e-9);
  int over = 0;
  for (int k = 0; k < f.ev->g[0].nspills; k++) {
    CHECK(f.ev->g[0].spills[k].why == SPILL_OVERBOOKED);
    over++;
  }
  CHECK_INT(over, 5); /* QK, GM, SN, SD, A */
  point_free(&f);
}

/* BERT at 1K tokens (B = 64, H = 12, E = F = 64, M = P = 1024), FuseMax's
 * artifact (data/pregenerated/attn-unfused.csv): its unfused attention
 * moves 6,845,104,128 bytes, ours 13,293,846,528. Ours runs each Einsum
 * alone: QK and SN written once and read twice, A once (8 x |QK|, 2 bytes
 * an element), Q, K, V and AV, and GM and SD written and read once. The
 * artifact runs the softmax as one kernel holding a row: QK read once, A
 * written once (4 x |QK|) — our geometry of the plan QK | GM SN SD A |
 * AV, to the byte. */
TEST(flat_unfused_attention_against_the_fusemax_artifact) {
  Setting bert[] = {{"B", 64}, {"H", 12}, {"M", 1024}};
  Point u = price("specs/fusemax_3pass.yaml", bert, 3, DES_UNFUSED, -1,
                  NULL);
  int kernels[] = {0, 1, 1, 1, 1, 2};
  Point k = price("specs/fusemax_3pass.yaml", bert, 3, DES_UNFUSED, 0,
                  kernels);
  CHECK_NEAR(dram(&u), 13293846528.0, 0);
  if (k.ev)
    CHECK_NEAR(k.ev->ideal_inter + k.ev->ideal_intra, 6845104128.0, 0);
  point_free(&u);
  point_free(&k);
}
