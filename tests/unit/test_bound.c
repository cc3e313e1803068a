/* test_bound.c — the ideal design as a lower bound under parallel
 * pipelining (docs/model.md §5): every physical unit's total busy time,
 * split fractionally over the units able to run each Einsum, and every
 * level's bytes over its bandwidth; by hand on small architectures, and on
 * Mamba-1 with one array and no feeder. */
#include <stdlib.h>

#include "../../src/model/model.h"
#include "../../src/preset/preset.h"
#include "../../src/workload/workload.h"
#include "test.h"

/* 1 GHz, 2-byte words, 1000 B/cycle of DRAM; a 4x4 array (16 PEs) and
 * its 8-PE vector mode; one op per PE per cycle; a one-stage pipeline.
 * FEEDER adds a separate 4-PE array. */
static Arch *small_arch(bool feeder) {
  static const char head[] =
      "architecture:\n"
      "  name: one\n  clock: 1 GHz\n  word: 2 B\n"
      "  memory:\n"
      "    - {name: DRAM, bandwidth: 1 TB/s, read_energy: 1 pJ/B, "
      "write_energy: 1 pJ/B}\n"
      "    - {name: Buffer, capacity: 1 MiB, fusion: true, read_energy: "
      "1 pJ/B, write_energy: 1 pJ/B}\n"
      "  compute:\n"
      "    - {name: mat, role: matrix, shape: [4, 4], pipeline: 1, ops: "
      "{macc: 1, add: 1, mul: 1, exp: 1}}\n"
      "    - {name: vec, role: vector, mode_of: mat, pes: 8, pipeline: 1}\n";
  static const char feed[] =
      "    - {name: feed, role: feeder, pes: 4, pipeline: 1, ops: {macc: 1, "
      "add: 1, mul: 1, exp: 1}}\n";
  static const char tail[] =
      "  energy: {macc: 1 pJ, add: 1 pJ, mul: 1 pJ, exp: 1 pJ}\n";
  char text[1024];
  snprintf(text, sizeof text, "%s%s%s", head, feeder ? feed : "", tail);
  Diag d = {0};
  Arch *a = arch_parse("one.yaml", text, strlen(text), &d);
  if (!a)
    test_fail(__FILE__, __LINE__, "arch: %d:%d %s", d.loc.line, d.loc.col,
              d.msg);
  return a;
}

static Eval *price(const Cascade *c, const Shape *s, const Arch *a,
                   const Pair *pairs, Design des) {
  ModelOpts o = model_default_opts(des);
  o.compose = COMPOSE_PIPELINED;
  Diag d = {0};
  Eval *ev = model_eval(c, s, a, pairs, des, &o, &d);
  if (!ev)
    test_fail(__FILE__, __LINE__, "%s on %s: %s", design_name(des), a->name,
              d.msg);
  return ev;
}

/* Y = exp(X); Z = Y * 2 over 4096 elements: 4096 ops each, 256 cycles on
 * the 16-PE array (its vector mode: 512), 1024 on the 4-PE feeder. One
 * array: all 8192 ops serialize on its PEs, 512 cycles + a fill of 1,
 * where the slowest Einsum alone gives 256 + 1 (the old bound). With the
 * feeder beside it (a quarter of the array's speed), the best split
 * balances the two: 512 / (1 + 1/4) = 409.6 cycles + 1. DRAM (X in, Z
 * out: 16384 B) takes 16.4 cycles. Every design takes at least as long. */
TEST(bound_pipelined_busy_time_by_hand) {
  static const char spec[] = "shape: {N: 4096}\n"
                             "einsum:\n"
                             "  declaration: {X: [N], Y: [N], Z: [N]}\n"
                             "  expressions:\n"
                             "    - Y[n] = exp(X[n])\n"
                             "    - Z[n] = Y[n] * 2\n";
  Diag d = {0};
  Cascade *c = spec_parse("t.yaml", spec, strlen(spec), &d);
  Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
  if (!s) {
    test_fail(__FILE__, __LINE__, "spec: %s", d.msg);
    cascade_free(c);
    return;
  }
  Pair *pairs = fusion_classify(c, s);
  static const double want[2] = {512 + 1, 409.6 + 1};
  for (int feeder = 0; feeder < 2; feeder++) {
    Arch *a = small_arch(feeder);
    Eval *i = a ? price(c, s, a, pairs, DES_IDEAL) : NULL;
    if (i) {
      CHECK_NEAR(i->cycles, want[feeder], 1e-6);
      CHECK_NEAR(i->level[0].cycles, 16384 / 1000.0, 1e-12);
    }
    for (int des = 0; i && des < DES_COUNT; des++) {
      Eval *ev = price(c, s, a, pairs, (Design)des);
      if (ev && ev->cycles < i->cycles * (1 - 1e-9))
        test_fail(__FILE__, __LINE__, "%s: %g cycles, below ideal's %g",
                  design_name((Design)des), ev->cycles, i->cycles);
      eval_free(ev);
    }
    eval_free(i);
    arch_free(a);
  }
  free(pairs);
  shape_free(s);
  cascade_free(c);
}

/* Busy time of the one physical array of tests/archs/single_array.yaml:
 * every Einsum's cycles on it (its 2D or 1D mode). */
static double array_busy(const Eval *ev) {
  double b = 0;
  for (int i = 0; i < ev->n; i++)
    b += ev->e[i].unit_cycles + ev->e[i].epilogue_cycles;
  return b;
}

/* Mamba-1 (mamba-370m, B = 64, I = 2048) on one 256x256 array with its
 * 1D mode and no feeder: every plan serializes every Einsum on its PEs.
 * The pipelined ideal was the slowest Einsum (TTX, 2396.75 us); it is now
 * the array's least total busy time (each Einsum on the faster of the two
 * modes) + a 6-cycle fill, 7865.50 us: 3.3x the slowest Einsum, below
 * every design, and no design keeps the array busy for less. */
TEST(bound_pipelined_single_array_mamba1) {
  Diag d = {0};
  Arch *a = arch_load("tests/archs/single_array.yaml", &d);
  Cascade *c = a ? spec_load("specs/mamba1.yaml", &d) : NULL;
  Setting set[2] = {{"B", 64}, {"I", 2048}};
  Shape *s = c ? shape_bind(c, preset_sizes("mamba-370m"), set, 2, true, &d)
               : NULL;
  if (!s) {
    test_fail(__FILE__, __LINE__, "%s", d.msg);
    cascade_free(c);
    arch_free(a);
    return;
  }
  Pair *pairs = fusion_classify(c, s);
  Eval *i = price(c, s, a, pairs, DES_IDEAL);
  if (i) {
    CHECK_NEAR(i->seconds * 1e6, 7865.50, 1e-5);
    double slowest = 0;
    for (int k = 0; k < i->n; k++)
      slowest = fmax(slowest, i->e[k].compute_cycles);
    CHECK(i->cycles > 3 * slowest);
  }
  for (int des = 0; i && des < DES_COUNT; des++) {
    Eval *ev = price(c, s, a, pairs, (Design)des);
    if (ev && (ev->cycles < i->cycles * (1 - 1e-9) ||
               array_busy(ev) < i->cycles - 6 - 1e-6 * i->cycles))
      test_fail(__FILE__, __LINE__, "%s: %g cycles, busy %g, ideal %g",
                design_name((Design)des), ev->cycles, array_busy(ev),
                i->cycles);
    eval_free(ev);
  }
  eval_free(i);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(a);
}

/* The sequential ideal's units, when pipelines differ: Y = exp(X) over
 * 4096 elements on an 8x8 array with a 100-stage pipeline (64 cycles of
 * compute) or a 16-PE vector unit with one stage (256). With DRAM alone
 * (16.4 cycles) the array looks faster (164 against 257), but the buffer
 * (16 B/cycle) moves X in and to the PEs, Y back and out: 32768 B, 2048
 * cycles, so the array takes 2048 + 100 and the vector unit 2048 + 1 --
 * which the unfused design takes. The ideal is the 2049. */
TEST(bound_sequential_units_after_levels) {
  static const char arch[] =
      "architecture:\n"
      "  name: pipe\n  clock: 1 GHz\n  word: 2 B\n"
      "  memory:\n"
      "    - {name: DRAM, bandwidth: 1 TB/s, read_energy: 1 pJ/B, "
      "write_energy: 1 pJ/B}\n"
      "    - {name: Buffer, capacity: 1 MiB, fusion: true, bandwidth: "
      "16 GB/s, read_energy: 1 pJ/B, write_energy: 1 pJ/B}\n"
      "  compute:\n"
      "    - {name: mat, role: matrix, shape: [8, 8], pipeline: 100, ops: "
      "{macc: 1, add: 1, mul: 1, exp: 1}}\n"
      "    - {name: vec, role: vector, pes: 16, pipeline: 1, ops: {macc: 1, "
      "add: 1, mul: 1, exp: 1}}\n"
      "  energy: {macc: 1 pJ, add: 1 pJ, mul: 1 pJ, exp: 1 pJ}\n";
  static const char spec[] = "shape: {N: 4096}\n"
                             "einsum:\n"
                             "  declaration: {X: [N], Y: [N]}\n"
                             "  expressions:\n"
                             "    - Y[n] = exp(X[n])\n";
  Diag d = {0};
  Arch *a = arch_parse("pipe.yaml", arch, strlen(arch), &d);
  Cascade *c = a ? spec_parse("t.yaml", spec, strlen(spec), &d) : NULL;
  Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
  if (!s) {
    test_fail(__FILE__, __LINE__, "%s", d.msg);
    cascade_free(c);
    arch_free(a);
    return;
  }
  Pair *pairs = fusion_classify(c, s);
  ModelOpts o = model_default_opts(DES_IDEAL);
  Eval *i = model_eval(c, s, a, pairs, DES_IDEAL, &o, &d);
  o = model_default_opts(DES_UNFUSED);
  Eval *u = model_eval(c, s, a, pairs, DES_UNFUSED, &o, &d);
  CHECK(i && u);
  if (i && u) {
    CHECK_NEAR(i->cycles, 2048 + 1, 1e-9);
    CHECK_NEAR(u->cycles, 2048 + 1, 1e-9);
    CHECK_STR(a->units[i->e[0].unit].name, "vec");
    CHECK_INT(i->e[0].bound, 1); /* the buffer */
    CHECK_NEAR(i->unit_energy[1], 4096, 1e-9); /* its exps, on vec */
    CHECK_NEAR(i->unit_energy[0], 0, 1e-9);
  }
  eval_free(i);
  eval_free(u);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(a);
}
