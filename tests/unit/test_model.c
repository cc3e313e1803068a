/* test_model.c — the accelerator model against closed forms: the mapping
 * search on small GEMMs and broadcasts, and whole evaluations of small
 * cascades (an elementwise chain, a window, a recurrence) whose traffic and
 * cycles are known by hand. */
#include <stdlib.h>

#include "../../src/model/model.h"
#include "../../src/spec/spec.h"
#include "test.h"

/* ---- the mapping search ---- */

static void add_plain(MapProblem *p, VarSet vars, double elems, bool out) {
  MapTensor *t = &p->t[p->ntensors++];
  t->vars = vars;
  t->elems = elems;
  t->output = out;
  t->dram = true;
  for (int v = 0; v < p->nvars; v++)
    if (VARSET_HAS(vars, v)) {
      t->dim_vars[t->ndims] = VARSET_BIT(v);
      t->dim_coef[t->ndims][v] = 1;
      t->ndims++;
    }
}

/* C[m,n] = A[m,k] * B[k,n]; variables m=0, k=1, n=2. */
static MapProblem gemm(double M, double K, double N, double capacity) {
  MapProblem p = {.nvars = 3, .capacity = capacity};
  p.size[0] = M;
  p.size[1] = K;
  p.size[2] = N;
  add_plain(&p, VARSET_BIT(0) | VARSET_BIT(1), M * K, false);
  add_plain(&p, VARSET_BIT(1) | VARSET_BIT(2), K * N, false);
  add_plain(&p, VARSET_BIT(0) | VARSET_BIT(2), M * N, true);
  return p;
}

TEST(model_map_gemm_fits_moves_each_tensor_once) {
  MapProblem p = gemm(32, 48, 64, 1e9);
  Mapping m;
  map_search(&p, &m);
  CHECK(m.fits);
  CHECK_NEAR(m.traffic, 32 * 48 + 48 * 64 + 32 * 64, 0);
  CHECK_NEAR(m.read[0], 32 * 48, 0);
  CHECK_NEAR(m.write[2], 32 * 64, 0);
  CHECK_NEAR(m.read[2], 0, 0);
}

/* A buffer of 288 elements = T^2 + 2T for T = 16: output-stationary
 * 16x16 tiles of C, k streamed one at a time. A is refetched for each of
 * the N/16 column tiles, B for each of the M/16 row tiles:
 *   MK*N/16 + KN*M/16 + MN = 2048 + 2048 + 1024 = 5120. */
TEST(model_map_gemm_textbook_tiling) {
  MapProblem p = gemm(32, 32, 32, 288);
  Mapping m;
  map_search(&p, &m);
  CHECK(m.fits);
  CHECK_NEAR(m.traffic, 5120, 0);
  CHECK_NEAR(m.write[2], 1024, 0); /* no partial sums */
  CHECK(m.footprint <= 288);
  CHECK(m.evaluated > 0);
}

/* Y[i,j] = X[i,j] * S[i] * W[j] with room for 100 elements: tiles of 32
 * along one variable (3*32 + 1 = 97), the other streamed; the operand
 * lacking the tiled variable is refetched once per tile:
 *   |X| + |Y| + 64 + 2 * 64 = 8384. */
TEST(model_map_broadcast_refetch) {
  MapProblem p = {.nvars = 2, .capacity = 100};
  p.size[0] = 64;
  p.size[1] = 64;
  add_plain(&p, VARSET_BIT(0) | VARSET_BIT(1), 4096, false); /* X */
  add_plain(&p, VARSET_BIT(0), 64, false);                   /* S */
  add_plain(&p, VARSET_BIT(1), 64, false);                   /* W */
  add_plain(&p, VARSET_BIT(0) | VARSET_BIT(1), 4096, true);  /* Y */
  Mapping m;
  map_search(&p, &m);
  CHECK(m.fits);
  CHECK_NEAR(m.traffic, 4096 + 4096 + 64 + 128, 0);
}

/* A reduction tiled outside the output's loops writes partial sums: with
 * K outermost in tiles of 8 (4 tiles) and M inside it in tiles of 8, C is
 * written 4 times and read back 3 times. (Were C's own loops untiled, C
 * would stay in the buffer across K and move once.) */
TEST(model_map_partial_sums) {
  MapProblem p = gemm(16, 32, 16, 1e9);
  Mapping m = {.norder = 2, .order = {1, 0}};
  m.tile[0] = 8;
  m.tile[1] = 8;
  m.tile[2] = 16;
  map_price(&p, &m);
  CHECK_NEAR(m.write[2], 4 * 256, 0);
  CHECK_NEAR(m.read[2], 3 * 256, 0);
  CHECK_NEAR(m.read[0], 512, 0);
  CHECK_NEAR(m.read[1], 512, 0);
}

/* ---- whole evaluations on a small architecture ---- */

/* 1 GHz, 2-byte words, 16 B/cycle of DRAM, 1 MiB buffer; a 4x4 matrix
 * unit, an 8-PE vector unit, a 2-PE feeder; one op per PE per cycle; a
 * one-stage pipeline. */
static const char tiny_arch[] =
    "architecture:\n"
    "  name: tiny\n"
    "  clock: 1 GHz\n"
    "  word: 2 B\n"
    "  memory:\n"
    "    - {name: DRAM, bandwidth: 16 GB/s, read_energy: 10 pJ/B, "
    "write_energy: 10 pJ/B}\n"
    "    - {name: Buffer, capacity: 1 MiB, read_energy: 1 pJ/B, "
    "write_energy: 1 pJ/B}\n"
    "    - {name: Registers, capacity: 1 KiB, read_energy: 0.1 pJ/B, "
    "write_energy: 0.1 pJ/B}\n"
    "  compute:\n"
    "    - {name: mat, role: matrix, shape: [4, 4], pipeline: 1, ops: {macc: "
    "1, add: 1, mul: 1, div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n"
    "    - {name: vec, role: vector, mode_of: mat, pes: 8}\n"
    "    - {name: feed, role: feeder, pes: 2, pipeline: 1, ops: {macc: 1, add: "
    "1, mul: 1, div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n"
    "  energy: {macc: 1 pJ, add: 1 pJ, mul: 1 pJ, div: 1 pJ, exp: 1 pJ, "
    "log: 1 pJ, sqrt: 1 pJ, silu: 1 pJ, max: 1 pJ}\n";

typedef struct Fixture {
  Arch *a;
  Cascade *c;
  Shape *s;
  Pair *pairs;
} Fixture;

static Fixture setup(const char *spec) {
  Fixture f = {0};
  Diag d = {0};
  f.a = arch_parse("tiny.yaml", tiny_arch, strlen(tiny_arch), &d);
  if (!f.a) {
    test_fail(__FILE__, __LINE__, "arch: %d:%d %s", d.loc.line, d.loc.col,
              d.msg);
    return f;
  }
  f.c = spec_parse("t.yaml", spec, strlen(spec), &d);
  if (!f.c) {
    test_fail(__FILE__, __LINE__, "spec: %d:%d %s", d.loc.line, d.loc.col,
              d.msg);
    return f;
  }
  f.s = shape_bind(f.c, NULL, NULL, 0, true, &d);
  f.pairs = fusion_classify(f.c, f.s);
  return f;
}

static void teardown(Fixture *f) {
  free(f->pairs);
  shape_free(f->s);
  cascade_free(f->c);
  arch_free(f->a);
}

static Eval *run(const Fixture *f, Design d) {
  Diag diag = {0};
  ModelOpts o = model_default_opts(d);
  Eval *e = model_eval(f->c, f->s, f->a, f->pairs, d, &o, &diag);
  if (!e)
    test_fail(__FILE__, __LINE__, "model_eval: %s", diag.msg);
  return e;
}

/* Y = exp(X); Z = Y * 2 over 4096 elements. Unfused: each Einsum reads
 * and writes 4096 words (16384 B: 1024 cycles) and computes 4096 ops on 8
 * PEs (512 cycles): memory-bound, 1024 + 1 cycles each. Fused (RI): X in,
 * Z out, Y on chip: each Einsum moves 8192 B (512 cycles) and computes 512
 * cycles: 513 each. */
TEST(model_elementwise_chain) {
  Fixture f = setup("shape: {N: 4096}\n"
                    "einsum:\n"
                    "  declaration: {X: [N], Y: [N], Z: [N]}\n"
                    "  expressions:\n"
                    "    - Y[n] = exp(X[n])\n"
                    "    - Z[n] = Y[n] * 2\n");
  if (!f.c)
    return;
  Eval *u = run(&f, DES_UNFUSED);
  Eval *r = run(&f, DES_RI);
  if (u && r) {
    CHECK_NEAR(u->read, 2 * 4096 * 2, 0);
    CHECK_NEAR(u->write, 2 * 4096 * 2, 0);
    CHECK_NEAR(u->inter, 2 * 4096 * 2, 0); /* Y out and back in */
    CHECK_NEAR(u->cycles, 2 * (1024 + 1), 0);
    CHECK_NEAR(u->e[0].compute_cycles, 512, 0);
    CHECK_INT(r->ngroups, 1);
    CHECK_NEAR(r->read + r->write, 2 * 4096 * 2, 0);
    CHECK_NEAR(r->inter, 0, 0);
    CHECK_NEAR(r->cycles, 2 * (512 + 1), 0);
    CHECK_NEAR(r->e[1].start, 513, 0);
  }
  eval_free(u);
  eval_free(r);
  teardown(&f);
}

/* A causal window Y[i] = W[f] * X[i+f-F+1] (F = 4, I = 1024): the halo is
 * reused, so X moves once; 4096 MACCs on the 16-PE matrix unit (linear:
 * a product with a weight) take 256 cycles; 1024 + 4 + 1024 words = 4104
 * B... moved in 4104 * 2 / 16 = 513 cycles. */
TEST(model_window_moves_input_once) {
  Fixture f = setup("shape: {I: 1024, F: 4}\n"
                    "einsum:\n"
                    "  declaration: {X: [I], W: [F], Y: [I]}\n"
                    "  expressions:\n"
                    "    - Y[i] = W[f] * X[i+f-F+1]\n");
  if (!f.c)
    return;
  Eval *u = run(&f, DES_UNFUSED);
  if (u) {
    CHECK_NEAR(u->read, (1024 + 4) * 2, 0);
    CHECK_NEAR(u->write, 1024 * 2, 0);
    CHECK_NEAR(u->e[0].work.ops[OPC_MACC], 4096, 0);
    CHECK_NEAR(u->e[0].compute_cycles, 256, 0);
    CHECK_NEAR(u->cycles, (1024 + 4 + 1024) * 2 / 16.0 + 1, 0);
    CHECK_STR(f.a->units[u->e[0].unit].name, "mat");
  }
  eval_free(u);
  teardown(&f);
}

/* H[i,d] = A[i,d] * H[i-1,d] + X[i,d] (I = 256, D = 16): the state stays
 * on chip, so A and X are read once and H written once: 3 * 4096 words;
 * 2 ops per point (a multiply and an add) on 8 PEs: 1024 cycles. */
TEST(model_recurrence_state_on_chip) {
  Fixture f = setup("shape: {I: 256, D: 16}\n"
                    "einsum:\n"
                    "  declaration: {A: [I, D], X: [I, D], H: [I, D]}\n"
                    "  expressions:\n"
                    "    - H[i, d] = A[i, d] * H[i-1, d] + X[i, d]\n");
  if (!f.c)
    return;
  Eval *u = run(&f, DES_UNFUSED);
  if (u) {
    CHECK_NEAR(u->read, 2 * 4096 * 2, 0);
    CHECK_NEAR(u->write, 4096 * 2, 0);
    CHECK_NEAR(u->e[0].work.ops[OPC_MUL], 4096, 0);
    CHECK_NEAR(u->e[0].work.ops[OPC_ADD], 4096, 0);
    CHECK_NEAR(u->e[0].compute_cycles, 1024, 0);
    CHECK_NEAR(u->cycles, 1536 + 1, 0); /* 24576 B / 16 */
  }
  eval_free(u);
  teardown(&f);
}

/* A GEMM feeding an elementwise Einsum: under ri+rsb they share a group
 * (RSb) and the matrix unit; the ideal design drops all inter traffic. */
TEST(model_gemm_then_elementwise) {
  Fixture f = setup("shape: {M: 64, K: 32, N: 16}\n"
                    "einsum:\n"
                    "  declaration: {A: [M, K], W: [K, N], C: [M, N], "
                    "Y: [M, N]}\n"
                    "  expressions:\n"
                    "    - C[m,n] = A[m,k] * W[k,n]\n"
                    "    - Y[m,n] = exp(C[m,n])\n");
  if (!f.c)
    return;
  Eval *u = run(&f, DES_UNFUSED);
  Eval *s = run(&f, DES_RI_RSB);
  Eval *i = run(&f, DES_IDEAL);
  if (u && s && i) {
    /* 64*32*16 MACCs on 16 PEs at full utilization. */
    CHECK_NEAR(u->e[0].compute_cycles, 64 * 32 * 16 / 16.0, 0);
    CHECK_STR(f.a->units[u->e[1].unit].name, "vec");
    CHECK_INT(s->ngroups, 1);
    CHECK_STR(f.a->units[s->e[1].unit].name, "mat"); /* after the GEMM */
    CHECK_NEAR(s->inter, 0, 0);
    CHECK_NEAR(u->inter, 2 * 64 * 16 * 2, 0);
    CHECK_NEAR(i->inter, 0, 0);
    CHECK_NEAR(i->intra, u->intra, 0);
  }
  eval_free(u);
  eval_free(s);
  eval_free(i);
  teardown(&f);
}

/* Mamba-1 on the shipped architecture: the best unfused layer's traffic
 * shares of Table I, and 24 / 1 groups. */
TEST(model_mamba1_table1) {
  Diag d = {0};
  Arch *a = arch_load("archs/mambalaya.yaml", &d);
  Cascade *c = spec_load("specs/mamba1.yaml", &d);
  if (!a || !c) {
    CHECK(a && c);
    arch_free(a);
    cascade_free(c);
    return;
  }
  Shape *s = shape_bind(c, preset_find("mamba-370m"), NULL, 0, true, &d);
  Pair *pairs = fusion_classify(c, s);
  ModelOpts o = model_default_opts(DES_UNFUSED);
  Eval *u = model_eval(c, s, a, pairs, DES_UNFUSED, &o, &d);
  CHECK(u != NULL);
  if (u) {
    double total = u->read + u->write;
    CHECK_NEAR(100 * u->read / total, 47.26, 0.001);
    CHECK_NEAR(100 * u->inter / total, 99.12, 0.001);
    CHECK_INT(u->ngroups, 24);
  }
  o = model_default_opts(DES_FULL);
  Eval *fu = model_eval(c, s, a, pairs, DES_FULL, &o, &d);
  CHECK(fu != NULL);
  if (fu && u) {
    CHECK_INT(fu->ngroups, 1);
    CHECK(fu->seconds < u->seconds / 4);
  }
  eval_free(u);
  eval_free(fu);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(a);
}
