/* test_model.c — the accelerator model against closed forms: the mapping
 * search on small GEMMs and broadcasts, and whole evaluations of small
 * cascades (an elementwise chain, a window, a recurrence) whose traffic and
 * cycles are known by hand. */
#include <stdlib.h>

#include "../../src/model/model.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
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

/* A level nested in the tiles of the level above: C[4,4] = A[4,8] B[8,4]
 * with the loops above k (tile 4, 2 trips) then m (tile 2, 2 trips), and
 * room for all of one tile (m 2, n 4, k 4: 8 + 16 + 8 elements). This
 * level needs no loop of its own; over the whole nest:
 *   A: indexed by both loops above, moved once: 32;
 *   B: indexed by k only, the m loop after it reuses it: 32;
 *   C: the k loop above, which does not index it, comes before the m
 *      loop that does: its tiles cross once per k step, 16 x 2 written
 *      and the second pass's 16 partial sums read back (Timeloop's count,
 *      which a level tiled on its own would miss). */
TEST(model_map_nested_in_the_loops_above) {
  MapProblem p = gemm(2, 4, 4, 32);
  p.t[0].elems = 32;
  p.t[1].elems = 32;
  p.t[2].elems = 16;
  p.nabove = 2;
  p.above[0] = (NestLoop){.var = 1, .tile = 4, .trips = 2};
  p.above[1] = (NestLoop){.var = 0, .tile = 2, .trips = 2};
  Mapping m;
  map_search(&p, &m);
  CHECK(m.fits);
  CHECK_INT(m.norder, 0);
  CHECK_NEAR(m.read[0], 32, 0);
  CHECK_NEAR(m.read[1], 32, 0);
  CHECK_NEAR(m.write[2], 32, 0);
  CHECK_NEAR(m.read[2], 16, 0);
  CHECK_NEAR(m.traffic, 112, 0);
  /* The same level with the loops above the other way round (m, then k):
   * C's tiles stay across the k steps, B is fetched per m step. */
  p.above[0] = (NestLoop){.var = 0, .tile = 2, .trips = 2};
  p.above[1] = (NestLoop){.var = 1, .tile = 4, .trips = 2};
  map_search(&p, &m);
  CHECK_NEAR(m.read[1], 64, 0);
  CHECK_NEAR(m.write[2], 16, 0);
  CHECK_NEAR(m.read[2], 0, 0);
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

/* The least traffic of a mapping of P that fits, by brute force: every
 * tile of every variable (powers of two below its size, and the size)
 * and every order of the tiled loops, each priced by map_price -- none of
 * the search's reductions, orders or prunings. -1 when none fits. */
static double brute_least(const MapProblem *p, Mapping *m, int v) {
  if (v == p->nvars) {
    int loops[MAP_MAX_VARS], n = 0;
    for (int u = 0; u < p->nvars; u++)
      if (m->tile[u] < p->size[u])
        loops[n++] = u;
    /* every order of LOOPS: Heap's algorithm, iteratively */
    int c[MAP_MAX_VARS] = {0};
    double least = -1;
    for (int i = 0;;) {
      m->norder = n;
      memcpy(m->order, loops, sizeof(int) * (size_t)n);
      map_price(p, m);
      if (m->fits && (least < 0 || m->traffic < least))
        least = m->traffic;
      while (i < n && c[i] >= i)
        c[i++] = 0;
      if (i >= n)
        return least;
      int j = i % 2 ? c[i] : 0, t = loops[j];
      loops[j] = loops[i];
      loops[i] = t;
      c[i]++;
      i = 0;
    }
  }
  double least = -1;
  for (double t = 1;; t *= 2) {
    m->tile[v] = t < p->size[v] ? t : p->size[v];
    double l = brute_least(p, m, v + 1);
    if (l >= 0 && (least < 0 || l < least))
      least = l;
    if (t >= p->size[v])
      return least;
  }
}

static void check_least(const MapProblem *p) {
  Mapping m = {0}, b = {0};
  map_search(p, &m);
  double least = brute_least(p, &b, 0);
  CHECK(least >= 0);
  CHECK(m.fits);
  CHECK_NEAR(m.traffic, least, 0);
}

/* The search's reductions and prunings (classes, the innermost class's
 * tile, candidates that cannot beat the best fitting one) lose nothing:
 * on GEMMs, a batched GEMM and a broadcast, from a buffer that holds
 * little to one that holds nearly all, its traffic is the least of every
 * tiling and order that fits. */
TEST(model_map_least_of_every_tiling) {
  const double caps[] = {24, 48, 100, 288, 700, 2000, 5000};
  for (int k = 0; k < (int)(sizeof caps / sizeof *caps); k++) {
    MapProblem g = gemm(32, 16, 64, caps[k]);
    check_least(&g);
    MapProblem sq = gemm(32, 32, 32, caps[k]);
    check_least(&sq);
    /* C[b,m,n] = A[b,m,k] B[k,n]: b=0, m=1, k=2, n=3 */
    MapProblem bg = {.nvars = 4, .capacity = caps[k]};
    bg.size[0] = 4;
    bg.size[1] = 16;
    bg.size[2] = 8;
    bg.size[3] = 16;
    add_plain(&bg, VARSET_BIT(0) | VARSET_BIT(1) | VARSET_BIT(2), 512, false);
    add_plain(&bg, VARSET_BIT(2) | VARSET_BIT(3), 128, false);
    add_plain(&bg, VARSET_BIT(0) | VARSET_BIT(1) | VARSET_BIT(3), 1024, true);
    check_least(&bg);
    MapProblem br = {.nvars = 2, .capacity = caps[k]};
    br.size[0] = 64;
    br.size[1] = 64;
    add_plain(&br, VARSET_BIT(0) | VARSET_BIT(1), 4096, false);
    add_plain(&br, VARSET_BIT(0), 64, false);
    add_plain(&br, VARSET_BIT(1), 64, false);
    add_plain(&br, VARSET_BIT(0) | VARSET_BIT(1), 4096, true);
    check_least(&br);
  }
}

/* ---- whole evaluations on a small architecture ---- */

/* 1 GHz, 2-byte words, 16 B/cycle of DRAM, 1 MiB buffer; a 4x4 matrix
 * unit, an 8-PE vector unit, a 2-PE feeder; one op per PE per cycle; a
 * one-stage pipeline. */
#define TINY_MEMORY                                                            \
  "  clock: 1 GHz\n"                                                           \
  "  word: 2 B\n"                                                              \
  "  memory:\n"                                                                \
  "    - {name: DRAM, bandwidth: 16 GB/s, read_energy: 10 pJ/B, "              \
  "write_energy: 10 pJ/B}\n"                                                   \
  "    - {name: Buffer, capacity: 1 MiB, read_energy: 1 pJ/B, "                \
  "write_energy: 1 pJ/B}\n"                                                    \
  "    - {name: Registers, capacity: 1 KiB, read_energy: 0.1 pJ/B, "           \
  "write_energy: 0.1 pJ/B}\n"
#define TINY_ENERGY                                                            \
  "  energy: {macc: 1 pJ, add: 1 pJ, mul: 1 pJ, div: 1 pJ, exp: 1 pJ, "        \
  "log: 1 pJ, sqrt: 1 pJ, silu: 1 pJ, max: 1 pJ}\n"
static const char tiny_arch[] =
    "architecture:\n"
    "  name: tiny\n" TINY_MEMORY
    "  compute:\n"
    "    - {name: mat, role: matrix, shape: [4, 4], pipeline: 1, ops: {macc: "
    "1, add: 1, mul: 1, div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n"
    "    - {name: vec, role: vector, mode_of: mat, pes: 8}\n"
    "    - {name: feed, role: feeder, pes: 2, pipeline: 1, ops: {macc: 1, add: "
    "1, mul: 1, div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n" TINY_ENERGY;

typedef struct Fixture {
  Arch *a;
  Cascade *c;
  Shape *s;
  Pair *pairs;
} Fixture;

/* SPEC on ARCH. */
static Fixture setup_on(const char *arch, const char *spec) {
  Fixture f = {0};
  Diag d = {0};
  f.a = arch_parse("tiny.yaml", arch, strlen(arch), &d);
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

static Fixture setup(const char *spec) { return setup_on(tiny_arch, spec); }

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

/* An architecture of one feeder unit without multiply-accumulate: a
 * matrix product cannot be priced, and the diagnostic names that unit (no
 * matrix or vector unit to report instead once read before the units:
 * found by fuzz_arch). */
TEST(model_feeder_alone_reports_what_it_cannot_run) {
  static const char arch[] =
      "architecture:\n"
      "  name: feeders\n" TINY_MEMORY
      "  compute:\n"
      "    - {name: feed, role: feeder, pes: 2, pipeline: 1, ops: {macc: 0, "
      "add: 1, mul: 1, div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n"
      TINY_ENERGY;
  Fixture f = setup_on(arch, "shape: {I: 64, J: 64}\n"
                             "einsum:\n"
                             "  declaration: {X: [J], W: [I, J], Y: [I]}\n"
                             "  expressions:\n"
                             "    - Y[i] = W[i,j] * X[j]\n");
  static const Design designs[] = {DES_FULL, DES_UNFUSED};
  for (size_t i = 0; f.c && i < sizeof designs / sizeof designs[0]; i++) {
    ModelOpts o = model_default_opts(designs[i]);
    Diag e = {0};
    Eval *ev = model_eval(f.c, f.s, f.a, f.pairs, designs[i], &o, &e);
    CHECK(ev == NULL);
    CHECK(strstr(e.msg, "unit feed cannot run the macc operations") != NULL);
    eval_free(ev);
  }
  teardown(&f);
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
  Shape *s = shape_bind(c, preset_sizes("mamba-370m"), NULL, 0, true, &d);
  Pair *pairs = fusion_classify(c, s);
  ModelOpts o = model_default_opts(DES_UNFUSED);
  Eval *u = model_eval(c, s, a, pairs, DES_UNFUSED, &o, &d);
  CHECK(u != NULL);
  if (u) {
    double total = u->read + u->write;
    /* The paper's 47.3 % and 99.1 % counted HH written (8.59 GB) and
     * never read back; HH and H share a group (their recurrence cannot be
     * cut), so HH stays on chip: 43.79 GB read of 84.09 GB moved, 83.27
     * GB of it between Einsums (the write of HH off the 91.86 GB). */
    CHECK_NEAR(100 * u->read / total, 52.08, 0.001);
    CHECK_NEAR(100 * u->inter / total, 99.03, 0.001);
    CHECK_INT(u->ngroups, 23);
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

/* ---- the accounting of issue 7 ---- */

/* A constant factor never multiplies a contraction's count, wherever it is
 * written; a per-output normalizer is applied once per output. */
TEST(model_constant_factors_and_normalizers) {
  Fixture f = setup("shape: {M: 8, K: 16, N: 4}\n"
                    "einsum:\n"
                    "  declaration: {Q: [M, K], W: [K, N], S: [M], A: [M, N], "
                    "B: [M, N], C: [M, N]}\n"
                    "  expressions:\n"
                    "    - A[m,n] = Q[m,k] * W[k,n] * 2\n"
                    "    - B[m,n] = 2 * Q[m,k] * W[k,n]\n"
                    "    - C[m,n] = Q[m,k] * W[k,n] / S[m]\n");
  if (!f.c)
    return;
  for (int e = 0; e < 3; e++) {
    Work w;
    model_work(f.c, f.s, f.c->einsums[e], &w);
    CHECK_NEAR(w.ops[OPC_MACC], 8 * 16 * 4, 0);
    CHECK(w.matrix);
    CHECK_NEAR(w.total, 8 * 16 * 4 + (e == 2 ? 8 * 4 : 0), 0);
    if (e == 2)
      CHECK_NEAR(w.ops[OPC_DIV], 8 * 4, 0); /* once per output */
  }
  teardown(&f);
}

/* Binding by structure: the attention's Q.K and P.V (products of two
 * produced tensors) are matrix operations and run on the matrix unit in
 * every design; Mamba's S6Y (C.H: H is read once per point) is not. */
TEST(model_attention_on_the_matrix_unit) {
  Diag d = {0};
  Arch *a = arch_load("archs/mambalaya.yaml", &d);
  Cascade *t = spec_load("specs/transformer.yaml", &d);
  Cascade *m = spec_load("specs/mamba1.yaml", &d);
  if (!a || !t || !m) {
    CHECK(a && t && m);
    arch_free(a);
    cascade_free(t);
    cascade_free(m);
    return;
  }
  Shape *s = shape_bind(t, preset_sizes("mamba-370m"), NULL, 0, true, &d);
  Pair *pairs = fusion_classify(t, s);
  for (int des = 0; des < DES_COUNT; des++) {
    ModelOpts o = model_default_opts((Design)des);
    Eval *ev = model_eval(t, s, a, pairs, (Design)des, &o, &d);
    CHECK(ev != NULL);
    for (int i = 0; ev && i < ev->n; i++) {
      const char *out = t->tensors[t->einsums[ev->e[i].einsum]->out.tensor].name;
      if (strcmp(out, "QK") == 0 || strcmp(out, "AV") == 0) {
        CHECK(ev->e[i].work.matrix);
        CHECK_STR(a->units[ev->e[i].unit].name, "array2d");
      }
    }
    eval_free(ev);
  }
  free(pairs);
  shape_free(s);
  Shape *ms = shape_bind(m, preset_sizes("mamba-370m"), NULL, 0, true, &d);
  int s6y = t ? m->tensors[cascade_tensor(m, "S6Y")].producer : -1;
  Work w;
  model_work(m, ms, m->einsums[s6y], &w);
  CHECK(!w.matrix);
  CHECK_NEAR(w.ops[OPC_MACC], w.points, 0);
  shape_free(ms);
  cascade_free(t);
  cascade_free(m);
  arch_free(a);
}

/* A reduction with fewer outputs than PEs spreads over them: S[b] = sum_k
 * X[b,k] with 4 outputs of 1024 on the 8-PE vector unit: 2 PEs per output,
 * 4096 / 8 cycles plus one step to combine the pairs = 513 (else 1024). */
TEST(model_reduction_spreads_over_pes) {
  Fixture f = setup("shape: {B: 4, K: 1024}\n"
                    "einsum:\n"
                    "  declaration: {X: [B, K], S: [B]}\n"
                    "  expressions:\n"
                    "    - \"S[b] = X[b,k] :: sum(k)\"\n");
  if (!f.c)
    return;
  Eval *u = run(&f, DES_UNFUSED);
  if (u) {
    CHECK_STR(f.a->units[u->e[0].unit].name, "vec");
    CHECK_NEAR(u->e[0].spread, 2, 0);
    CHECK_NEAR(u->e[0].compute_cycles, 4096 / 8 + 1, 0);
  }
  eval_free(u);
  teardown(&f);
}

/* Mamba-1 at mamba-370m, B = 64 (the paper's setup), on the paper's
 * machine: the geometry's rules and honest capacity. */
typedef struct Mamba {
  Arch *a;
  Cascade *c;
  Shape *s;
  Pair *pairs;
} Mamba;

static Mamba mamba1(bool decode) {
  Mamba m = {0};
  Diag d = {0};
  m.a = arch_load("archs/mambalaya.yaml", &d);
  m.c = spec_load("specs/mamba1.yaml", &d);
  Setting one = {"I", 1};
  if (m.a && m.c)
    m.s = shape_bind(m.c, preset_sizes("mamba-370m"), &one, decode, true, &d);
  if (m.s)
    m.pairs = fusion_classify(m.c, m.s);
  else
    test_fail(__FILE__, __LINE__, "mamba1: %s", d.msg);
  return m;
}

static void mamba_free(Mamba *m) {
  free(m->pairs);
  shape_free(m->s);
  cascade_free(m->c);
  arch_free(m->a);
}

static Eval *mamba_eval(const Mamba *m, Design des, const ModelOpts *o) {
  Diag d = {0};
  ModelOpts def = model_default_opts(des);
  Eval *ev = model_eval(m->c, m->s, m->a, m->pairs, des, o ? o : &def, &d);
  if (!ev)
    test_fail(__FILE__, __LINE__, "%s: %s", design_name(des), d.msg);
  return ev;
}

static double tensor_bytes(const Mamba *m, const Eval *ev, const char *t,
                           bool write) {
  int k = cascade_tensor(m->c, t);
  return write ? ev->tensor_write[k] : ev->tensor_read[k];
}

/* Shared input, read once per group: NEX (6 x 2048 x 1024 at B = 64) is
 * read once by the merged TTX/RX of RI's group, not refetched by the
 * first reader's mapping. A tensor produced in a group and escaping is
 * handed over to its in-group readers and written once: X in RI+RSb+RSp's
 * second group (read again only by LY, in the third). */
TEST(model_shared_inputs_and_hand_overs) {
  Mamba m = mamba1(false);
  if (!m.s)
    return;
  double n = 64.0 * 2048 * 2, nex = n * 1024, x = n * 2048;
  Eval *ri = mamba_eval(&m, DES_RI, NULL);
  Eval *rsp = mamba_eval(&m, DES_RI_RSB_RSP, NULL);
  if (ri && rsp) {
    CHECK_NEAR(tensor_bytes(&m, ri, "NEX", false), nex, 0);
    CHECK_NEAR(tensor_bytes(&m, ri, "NEX", true), nex, 0);
    CHECK_NEAR(tensor_bytes(&m, rsp, "X", true), x, 0);
    CHECK_NEAR(tensor_bytes(&m, rsp, "X", false), x, 0); /* LY, group 3 */
    /* LEX feeds the RMS reduction (NUM -> MEX) and, after it, NEX, in
     * one group; the group's tile (tokens) holds the reduced rank (the
     * model dimension) whole, so the reduction completes within the tile
     * and NEX finds LEX on chip: one pass, never read back (issue 16). */
    CHECK_NEAR(tensor_bytes(&m, rsp, "LEX", false), 0, 0);
    CHECK_NEAR(tensor_bytes(&m, rsp, "LEX", true), nex, 0); /* an output */
  }
  eval_free(ri);
  eval_free(rsp);
  mamba_free(&m);
}

/* MARCA-like decode holds its region's intermediates whole: with 3/4 of
 * the buffer it must send one thing off chip (Delta, the cheapest), not
 * the whole region; with 0.7, two; with 0.8, nothing. */
TEST(model_partial_fusion_when_overbooked) {
  Mamba m = mamba1(true);
  if (!m.s)
    return;
  const double shares[] = {0.7, 0.75, 0.8};
  const int spills[] = {2, 1, 0};
  for (int i = 0; i < 3; i++) {
    ModelOpts o = model_default_opts(DES_MARCA);
    o.reserve_share = shares[i];
    Eval *ev = mamba_eval(&m, DES_MARCA, &o);
    if (!ev)
      continue;
    int n = 0;
    for (int g = 0; g < ev->ngroups; g++) {
      n += ev->g[g].nspills;
      CHECK(ev->g[g].reserve <= ev->g[g].budget);
    }
    CHECK_INT(n, spills[i]);
    for (int k = 0; k < ev->n; k++)
      CHECK(ev->e[k].fits);
    eval_free(ev);
  }
  mamba_free(&m);
}

/* Full fusion's partial products (RD pairs inside the group) are
 * intra-Einsum traffic: turning them off (two passes off too, since the
 * partials are what splits the ranks they ask about) changes intra, not
 * inter. */
TEST(model_rd_partials_are_intra) {
  Mamba m = mamba1(false);
  if (!m.s)
    return;
  ModelOpts on = model_default_opts(DES_FULL);
  on.two_pass = false;
  ModelOpts off = on;
  off.rd_partials = false;
  Eval *a = mamba_eval(&m, DES_FULL, &on), *b = mamba_eval(&m, DES_FULL, &off);
  if (a && b) {
    CHECK_NEAR(a->inter, b->inter, 0);
    CHECK(a->intra > b->intra);
    /* TTX, TTDelta, B and C are written as partial products. */
    double pp = 64.0 * 2048 * 2 * (2048 + 64 + 16 + 16);
    CHECK_NEAR(a->intra - b->intra, pp, 0);
  }
  eval_free(a);
  eval_free(b);
  mamba_free(&m);
}

/* §VI-C: "X and LEX need two passes" in full fusion. Its RD partial
 * products split the ranks their upstreams reduce (ED at TTX; D at
 * TTDelta, B, C), so LEX (reduced over ED by NUM, waited for by NEX) and X
 * (reduced over D by TTDelta, B, C, waited for by HX and LY) are read
 * twice: X written (it was not) and read again, LEX (written anyway) read
 * again -- 64 x 2048 x (2 x 2048 + 1024) elements of 2 bytes, all
 * inter-Einsum. Without the partial products nothing splits those ranks
 * (the group tiles the tokens only): one pass. */
TEST(model_two_passes_follow_rd_partials) {
  Mamba m = mamba1(false);
  if (!m.s)
    return;
  for (int partials = 0; partials < 2; partials++) {
    ModelOpts two = model_default_opts(DES_FULL);
    two.rd_partials = partials;
    ModelOpts one = two;
    one.two_pass = false;
    Eval *a = mamba_eval(&m, DES_FULL, &two), *b = mamba_eval(&m, DES_FULL, &one);
    if (a && b) {
      double x = 64.0 * 2048 * 2 * (2 * 2048 + 1024);
      CHECK_NEAR(a->inter - b->inter, partials ? x : 0, 0);
      CHECK_NEAR(a->intra, b->intra, 0);
      int passes = 0;
      for (int g = 0; g < a->ngroups; g++)
        for (int k = 0; k < a->g[g].nspills; k++)
          passes += a->g[g].spills[k].why == SPILL_TWO_PASS;
      CHECK_INT(passes, partials ? 2 : 0);
    }
    eval_free(a);
    eval_free(b);
  }
  mamba_free(&m);
}

/* The H100: tensor cores run the MACCs, the CUDA cores everything else
 * (elementwise Einsums, and a matrix Einsum's epilogue). */
TEST(model_h100_epilogue) {
  Diag d = {0};
  Arch *a = arch_load("archs/h100.yaml", &d);
  Cascade *c = spec_load("specs/mamba1.yaml", &d);
  Shape *s = a && c ? shape_bind(c, preset_sizes("mamba-370m"), NULL, 0, true,
                                 &d)
                    : NULL;
  if (!s) {
    test_fail(__FILE__, __LINE__, "%s", d.msg);
    arch_free(a);
    cascade_free(c);
    return;
  }
  Pair *pairs = fusion_classify(c, s);
  ModelOpts o = model_default_opts(DES_FULL);
  Eval *ev = model_eval(c, s, a, pairs, DES_FULL, &o, &d);
  CHECK(ev != NULL);
  for (int i = 0; ev && i < ev->n; i++) {
    const char *out = c->tensors[c->einsums[ev->e[i].einsum]->out.tensor].name;
    const char *unit = a->units[ev->e[i].unit].name;
    if (strcmp(out, "TX") == 0) { /* the convolution and its bias */
      CHECK_STR(unit, "tensor");
      CHECK_STR(a->units[ev->e[i].epilogue].name, "cuda");
    } else if (strcmp(out, "X") == 0) {
      CHECK_STR(unit, "cuda");
    }
  }
  eval_free(ev);
  free(pairs);
  shape_free(s);
  cascade_free(c);
  arch_free(a);
}
