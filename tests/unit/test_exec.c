/* test_exec.c — running cascades: the interpreter on hand-checkable
 * Einsums, and every fusion plan of both Mamba cascades against the
 * interpreter (values) and against the model (off-chip bytes). */
#include <stdlib.h>
#include <unistd.h>

#include "../../src/exec/exec.h"
#include "../../src/model/model.h"
#include "../../src/spec/spec.h"
#include "test.h"

typedef struct Case {
  Cascade *c;
  Shape *s;
  Tensors in;
} Case;

static uint64_t rng_next(uint64_t *st) {
  *st ^= *st << 13;
  *st ^= *st >> 7;
  *st ^= *st << 17;
  return *st;
}

static float uniform(uint64_t *st, float lo, float hi) {
  return lo + (hi - lo) * (float)((rng_next(st) >> 11) * 0x1.0p-53);
}

/* Every input tensor, uniform in [-0.5, 0.5) (seeded). */
static void random_inputs(Case *k, uint64_t seed) {
  for (int t = 0; t < k->c->ntensors; t++) {
    const Tensor *T = &k->c->tensors[t];
    if (T->producer >= 0)
      continue;
    int64_t shape[IR_MAX_RANKS];
    for (int d = 0; d < T->nranks; d++)
      shape[d] = k->s->size[T->ranks[d]];
    Array *a = array_new(T->nranks, shape);
    for (int64_t i = 0; i < a->n; i++)
      a->data[i] = uniform(&seed, -0.5f, 0.5f);
    tensors_put(&k->in, T->name, a, true);
  }
}

static Case load_case(const char *spec_text, const char *path,
                      const Setting *set, int nset) {
  Case k = {0};
  Diag d = {0};
  k.c = spec_text ? spec_parse("t.yaml", spec_text, strlen(spec_text), &d)
                  : spec_load(path, &d);
  if (!k.c) {
    test_fail(__FILE__, __LINE__, "spec: %d:%d %s", d.loc.line, d.loc.col,
              d.msg);
    return k;
  }
  const Preset *p = k.c->model ? preset_find(k.c->model) : NULL;
  k.s = shape_bind(k.c, p, set, nset, true, &d);
  if (!k.s)
    test_fail(__FILE__, __LINE__, "shape: %s", d.msg);
  return k;
}

static void free_case(Case *k) {
  tensors_free(&k->in);
  shape_free(k->s);
  cascade_free(k->c);
}

static bool run_on(const Case *k, const Plan *plan, Pool *pool, Tensors *res,
                   Tensors *next, ExecStats *st) {
  Diag d = {0};
  ExecOpts o = {.plan = plan, .buffer_bytes = 1 << 20, .keep_all = true,
                .pool = pool};
  bool ok = exec_run(k->c, k->s, &k->in, &o, res, next, st, &d);
  if (!ok)
    test_fail(__FILE__, __LINE__, "exec_run: %d:%d %s", d.loc.line,
              d.loc.col, d.msg);
  return ok;
}

static bool run(const Case *k, const Plan *plan, Tensors *res, Tensors *next,
                ExecStats *st) {
  return run_on(k, plan, NULL, res, next, st);
}

static void set_input(Case *k, const char *name, const float *v) {
  Array *a = tensors_get(&k->in, name);
  for (int64_t i = 0; i < a->n; i++)
    a->data[i] = v[i];
}

/* Sums, explicit reductions, functions, broadcasting, a bias term. */
TEST(exec_interpreter_semantics) {
  Case k = load_case("shape: {I: 2, K: 3}\n"
                     "einsum:\n"
                     "  declaration: {X: [I, K], W: [K], S: [I], M: [I], "
                     "Y: [I, K], Z: [I]}\n"
                     "  expressions:\n"
                     "    - S[i] = X[i,k] * W[k] + 1\n"
                     "    - \"M[i] = X[i,k] :: max(k)\"\n"
                     "    - Y[i,k] = exp(X[i,k]) - M[i] / 2\n"
                     "    - Z[i] = softplus(S[i]) + silu(M[i])\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 1);
  const float x[] = {1, 2, 3, -1, 0.5f, 4};
  const float w[] = {0.5f, -1, 2};
  set_input(&k, "X", x);
  set_input(&k, "W", w);
  Tensors res = {0};
  if (run(&k, NULL, &res, NULL, NULL)) {
    const float *S = tensors_get(&res, "S")->data;
    const float *M = tensors_get(&res, "M")->data;
    const float *Y = tensors_get(&res, "Y")->data;
    const float *Z = tensors_get(&res, "Z")->data;
    CHECK_NEAR(S[0], 0.5 - 2 + 6 + 1, 1e-6);
    CHECK_NEAR(S[1], -0.5 - 0.5 + 8 + 1, 1e-6);
    CHECK_NEAR(M[0], 3, 0);
    CHECK_NEAR(M[1], 4, 0);
    CHECK_NEAR(Y[4], exp(0.5) - 2, 1e-6);
    CHECK_NEAR(Z[0], log1p(exp(5.5)) + 3 / (1 + exp(-3.0)), 1e-6);
  }
  tensors_free(&res);
  free_case(&k);
}

/* Reductions over a long variable for few outputs run a row at a time
 * (lanes along the reduced variable): sums, a max, a strided read. */
TEST(exec_row_reductions) {
  Case k = load_case("shape: {I: 3, K: 1000}\n"
                     "einsum:\n"
                     "  declaration: {X: [I, K], W: [K], V: [K, I], S: [I], "
                     "M: [I], T: [I]}\n"
                     "  expressions:\n"
                     "    - S[i] = X[i,k] * W[k]\n"
                     "    - \"M[i] = X[i,k] :: max(k)\"\n"
                     "    - T[i] = V[k,i] * X[i,k] + 1\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 5);
  const float *X = tensors_get(&k.in, "X")->data;
  const float *W = tensors_get(&k.in, "W")->data;
  const float *V = tensors_get(&k.in, "V")->data;
  Tensors res = {0};
  if (run(&k, NULL, &res, NULL, NULL)) {
    for (int i = 0; i < 3; i++) {
      double s = 0, t = 1, m = -INFINITY;
      for (int q = 0; q < 1000; q++) {
        s += (double)X[i * 1000 + q] * W[q];
        t += (double)V[q * 3 + i] * X[i * 1000 + q];
        m = fmax(m, X[i * 1000 + q]);
      }
      CHECK_NEAR(tensors_get(&res, "S")->data[i], s, 1e-5);
      CHECK_NEAR(tensors_get(&res, "T")->data[i], t, 1e-5);
      CHECK_NEAR(tensors_get(&res, "M")->data[i], m, 0);
    }
  }
  tensors_free(&res);
  free_case(&k);
}

/* A causal window with its history, a recurrence with its initial state,
 * and the state they hand to a next pass. */
TEST(exec_window_recurrence_and_state) {
  /* X is produced (from U) so that it can carry an initialization. */
  Case k = load_case("shape: {I: 4, F: 3, K: 2}\n"
                     "einsum:\n"
                     "  declaration: {U: [I], X: [I], W: [F], C: [K], "
                     "Y: [I], A: [I], H0: [], H: [I]}\n"
                     "  expressions:\n"
                     "    - X[i<0] = C[i+K]\n"
                     "    - H[i<0] = H0\n"
                     "    - X[i] = U[i]\n"
                     "    - Y[i] = W[f] * X[i+f-F+1]\n"
                     "    - H[i] = A[i] * H[i-1] + Y[i]\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 2);
  const float u[] = {1, 2, 3, 4}, w[] = {1, 10, 100}, c[] = {5, 6};
  const float a[] = {0.5f, 0.5f, 0.5f, 0.5f}, h0[] = {8};
  set_input(&k, "U", u);
  set_input(&k, "W", w);
  set_input(&k, "C", c);
  set_input(&k, "A", a);
  set_input(&k, "H0", h0);
  Tensors res = {0}, next = {0};
  if (run(&k, NULL, &res, &next, NULL)) {
    const float *Y = tensors_get(&res, "Y")->data;
    const float *H = tensors_get(&res, "H")->data;
    /* Y[i] = W0 X[i-2] + W1 X[i-1] + W2 X[i]; X[-2..-1] = C. */
    CHECK_NEAR(Y[0], 5 + 60 + 100, 0);
    CHECK_NEAR(Y[1], 6 + 10 + 200, 0);
    CHECK_NEAR(Y[3], 2 + 30 + 400, 0);
    CHECK_NEAR(H[0], 0.5 * 8 + 165, 1e-6);
    CHECK_NEAR(H[1], 0.5 * H[0] + 216, 1e-5);
    /* The next pass: C' = X's last 2 steps, H0' = H's last. */
    CHECK_NEAR(tensors_get(&next, "C")->data[0], 3, 0);
    CHECK_NEAR(tensors_get(&next, "C")->data[1], 4, 0);
    CHECK_NEAR(tensors_get(&next, "H0")->data[0], H[3], 0);
  }
  tensors_free(&res);
  tensors_free(&next);
  free_case(&k);
}

/* A recurrence whose members are not consecutive: T, between them, feeds
 * the second and must run before the recurrence's first step; the fused
 * executor must agree under every plan. */
TEST(exec_recurrence_around_an_einsum) {
  Case k = load_case("shape: {I: 5, D: 6}\n"
                     "einsum:\n"
                     "  declaration: {A: [I, D], X: [I, D], G0: [D], "
                     "G: [I, D], T: [I, D], H: [I, D], Y: [I, D]}\n"
                     "  expressions:\n"
                     "    - G[i<0, d] = G0[d]\n"
                     "    - H[i, d] = A[i, d] * G[i-1, d]\n"
                     "    - T[i, d] = X[i, d] * X[i, d]\n"
                     "    - G[i, d] = H[i, d] + T[i, d]\n"
                     "    - Y[i, d] = G[i, d] * 2\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 4);
  const Array *A = tensors_get(&k.in, "A"), *X = tensors_get(&k.in, "X");
  const Array *G0 = tensors_get(&k.in, "G0");
  double g[6];
  for (int d = 0; d < 6; d++)
    g[d] = G0->data[d];
  Tensors res = {0};
  if (run(&k, NULL, &res, NULL, NULL)) {
    const float *Y = tensors_get(&res, "Y")->data;
    for (int i = 0; i < 5; i++)
      for (int d = 0; d < 6; d++) {
        double x = X->data[i * 6 + d];
        g[d] = A->data[i * 6 + d] * g[d] + x * x;
        CHECK_NEAR(Y[i * 6 + d], 2 * g[d], 1e-5);
      }
  }
  Pair *pairs = fusion_classify(k.c, k.s);
  Pool *pool = pool_new(2);
  Diag d = {0};
  for (int st = 0; st < ST_COUNT; st++) {
    Plan *p = fusion_plan(k.c, k.s, pairs, (Strategy)st, STITCH_GREEDY,
                          OBJ_GROUPS, &d);
    Tensors fres = {0};
    if (p && run_on(&k, p, pool, &fres, NULL, NULL))
      for (int n = 0; n < 30; n++)
        CHECK_NEAR(tensors_get(&fres, "Y")->data[n],
                   tensors_get(&res, "Y")->data[n], 1e-6);
    tensors_free(&fres);
    plan_free(p);
  }
  pool_free(pool);
  free(pairs);
  tensors_free(&res);
  free_case(&k);
}

static double max_rel_diff(const Array *a, const Array *b) {
  double worst = 0, scale = 1e-6;
  for (int64_t i = 0; i < a->n; i++)
    scale = fmax(scale, fabs((double)b->data[i]));
  for (int64_t i = 0; i < a->n; i++)
    worst = fmax(worst, fabs((double)a->data[i] - b->data[i]) / scale);
  return worst;
}

/* A small architecture whose buffer holds every weight of a tiny layer. */
static const char arch_text[] =
    "architecture:\n"
    "  name: t\n  clock: 1 GHz\n  word: 2 B\n"
    "  memory:\n"
    "    - {name: DRAM, bandwidth: 100 GB/s, read_energy: 1 pJ/B, "
    "write_energy: 1 pJ/B}\n"
    "    - {name: G, capacity: 64 MiB, read_energy: 1 pJ/B, "
    "write_energy: 1 pJ/B}\n"
    "    - {name: R, capacity: 1 MiB, read_energy: 1 pJ/B, "
    "write_energy: 1 pJ/B}\n"
    "  compute:\n"
    "    - {name: m, role: matrix, shape: [8, 8], ops: {macc: 1, add: 1, "
    "mul: 1, div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n"
    "    - {name: v, role: vector, mode_of: m, pes: 16}\n"
    "    - {name: f, role: feeder, pes: 4, ops: {macc: 1, add: 1, mul: 1, "
    "div: 1, exp: 1, log: 1, sqrt: 1, silu: 1, max: 1}}\n"
    "  energy: {macc: 1 pJ, add: 1 pJ, mul: 1 pJ, div: 1 pJ, exp: 1 pJ, "
    "log: 1 pJ, sqrt: 1 pJ, silu: 1 pJ, max: 1 pJ}\n";

/* Every strategy of SPEC: fused equals unfused, and the bytes the fused
 * executor counts equal the model's ideal traffic, tensor by tensor. */
static void check_plans(const char *path, const Setting *set, int nset) {
  Case k = load_case(NULL, path, set, nset);
  if (!k.c || !k.s)
    return;
  random_inputs(&k, 3);
  Tensors ref = {0};
  Diag d = {0};
  Arch *arch = arch_parse("t.yaml", arch_text, strlen(arch_text), &d);
  CHECK(arch != NULL);
  Pair *pairs = fusion_classify(k.c, k.s);
  Pool *pool = pool_new(2);
  if (arch && run(&k, NULL, &ref, NULL, NULL)) {
    for (int st = 0; st < ST_COUNT; st++) {
      Plan *p = fusion_plan(k.c, k.s, pairs, (Strategy)st, STITCH_GREEDY,
                            OBJ_GROUPS, &d);
      Tensors res = {0};
      ExecStats stats;
      /* Two workers: the stretches run in slices. */
      if (run_on(&k, p, pool, &res, NULL, &stats)) {
        for (int t = 0; t < k.c->ntensors; t++) {
          const Tensor *T = &k.c->tensors[t];
          Array *a = tensors_get(&res, T->name), *b = tensors_get(&ref, T->name);
          if (!T->output)
            continue;
          CHECK(a && b);
          if (a && b && max_rel_diff(a, b) > 1e-6)
            test_fail(__FILE__, __LINE__, "%s %s: %s differs by %g", path,
                      strategy_name(st), T->name, max_rel_diff(a, b));
        }
        Design des = st == ST_UNFUSED ? DES_UNFUSED
                     : st == ST_RI    ? DES_RI
                     : st == ST_RI_RSB ? DES_RI_RSB
                     : st == ST_RI_RSB_RSP ? DES_RI_RSB_RSP
                                           : DES_FULL;
        ModelOpts mo = model_default_opts(des);
        mo.accounting = ACCOUNT_IDEAL;
        mo.state_io = true;
        Eval *ev = model_eval(k.c, k.s, arch, pairs, des, &mo, &d);
        CHECK(ev != NULL);
        for (int t = 0; ev && t < k.c->ntensors; t++) {
          double mr = ev->tensor_read[t] / arch->word_bytes;
          double mw = ev->tensor_write[t] / arch->word_bytes;
          double xr = stats.read[t] / 4, xw = stats.write[t] / 4;
          if (mr != xr || mw != xw)
            test_fail(__FILE__, __LINE__,
                      "%s %s: %s model reads %g writes %g elements, "
                      "executor %g and %g",
                      path, strategy_name(st), k.c->tensors[t].name, mr, mw,
                      xr, xw);
        }
        eval_free(ev);
        exec_stats_free(&stats);
      }
      tensors_free(&res);
      plan_free(p);
    }
  }
  pool_free(pool);
  free(pairs);
  arch_free(arch);
  tensors_free(&ref);
  free_case(&k);
}

TEST(exec_mamba1_plans_equal_interpreter_and_model) {
  Setting set[] = {{"B", 2}, {"I", 9}, {"d_model", 16}, {"d_inner", 32},
                   {"dt_rank", 4}, {"d_state", 4}};
  check_plans("specs/mamba1.yaml", set, 6);
}

TEST(exec_mamba2_plans_equal_interpreter_and_model) {
  Setting set[] = {{"B", 2},       {"I", 7},     {"d_model", 16},
                   {"n_heads", 4}, {"head_dim", 8}, {"d_state", 8}};
  check_plans("specs/mamba2.yaml", set, 6);
}

/* A 16-bit copy of fp32 array A (its values rounded to dtype T), and the
 * fp32 array of exactly those values. */
static Array *to_half(const Array *a, DType t, Array **wide) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/mambalaya-unit-%ld-half.safetensors",
           (long)getpid());
  StWriter *w = st_writer_new();
  st_writer_add(w, "t", a, t);
  Diag d = {0};
  CHECK(st_writer_save(w, path, &d));
  st_writer_free(w);
  StFile *f = st_open(path, &d);
  remove(path);
  Array *h = st_tensor(f, st_find(f, "t"));
  Array *copy = array_clone(h); /* owned: the file closes now */
  array_free(h);
  st_close(f);
  *wide = array_f32(copy);
  return copy;
}

/* Weights held in 16 bits: kernel_gemm reads W as it is (packed once and
 * reused over the tiles of a fused group, or streamed by the dot path),
 * the reads that are not a GEMM (a bias, a product too small for
 * kernel_gemm) widen theirs; every plan equals the interpreter on the same
 * values in fp32. */
TEST(exec_16bit_weights) {
  Case k = load_case("shape: {I: 64, K: 32, N: 24, J: 4}\n"
                     "outputs: [Z, U]\n"
                     "einsum:\n"
                     "  declaration: {X: [I, K], H: [I, K], W: [N, K], "
                     "Y: [I, N], B: [N], Z: [I, N], X2: [I, J], V: [J, N], "
                     "U: [I, N]}\n"
                     "  expressions:\n"
                     "    - H[i,k] = X[i,k] * 2\n"
                     "    - Y[i,n] = W[n,k] * H[i,k]\n"
                     "    - Z[i,n] = Y[i,n] * B[n]\n"
                     "    - U[i,n] = X2[i,j] * V[j,n]\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 3);
  const char *weights[] = {"W", "B", "V"};
  const DType types[] = {DT_F16, DT_BF16};
  Pair *pairs = fusion_classify(k.c, k.s);
  Pool *pool = pool_new(2);
  for (int ti = 0; ti < 2; ti++) {
    Case h = k; /* the same cascade, with 16-bit weights */
    h.in = (Tensors){0};
    Case f = k; /* and with their values in fp32 */
    f.in = (Tensors){0};
    for (int i = 0; i < k.in.n; i++) {
      bool weight = false;
      for (int w = 0; w < 3; w++)
        weight = weight || strcmp(k.in.names[i], weights[w]) == 0;
      Array *wide = NULL;
      Array *a = weight ? to_half(k.in.arrays[i], types[ti], &wide)
                        : array_clone(k.in.arrays[i]);
      if (weight)
        CHECK_INT(a->dtype, types[ti]);
      tensors_put(&h.in, k.in.names[i], a, true);
      tensors_put(&f.in, k.in.names[i], wide ? wide : array_clone(a), true);
    }
    Tensors ref = {0};
    if (run(&f, NULL, &ref, NULL, NULL)) {
      const Array *Z = tensors_get(&ref, "Z"), *U = tensors_get(&ref, "U");
      for (int st = -1; st < ST_COUNT; st++)
        for (int b = 0; b < 3; b++) {
          Diag d = {0};
          Plan *p = st < 0 ? NULL
                           : fusion_plan(k.c, k.s, pairs, (Strategy)st,
                                         STITCH_GREEDY, OBJ_GROUPS, &d);
          ExecOpts o = {.plan = p, .buffer_bytes = b == 0 ? 1 << 20 : b == 1 ? 2048 : 8192,
                        .pool = b == 1 ? NULL : pool};
          Tensors res = {0};
          if (exec_run(k.c, k.s, &h.in, &o, &res, NULL, NULL, &d)) {
            const Array *Zh = tensors_get(&res, "Z");
            const Array *Uh = tensors_get(&res, "U");
            for (int64_t n = 0; n < Z->n; n++)
              CHECK_NEAR(Zh->data[n], Z->data[n], 1e-6);
            for (int64_t n = 0; n < U->n; n++)
              CHECK_NEAR(Uh->data[n], U->data[n], 1e-6);
          } else {
            test_fail(__FILE__, __LINE__, "%s, strategy %d: %s",
                      dtype_name(types[ti]), st, d.msg);
          }
          tensors_free(&res);
          plan_free(p);
        }
    }
    tensors_free(&ref);
    tensors_free(&h.in);
    tensors_free(&f.in);
  }
  pool_free(pool);
  free(pairs);
  free_case(&k);
}

/* An Exec run step after step on new inputs (new arrays, other values)
 * gives exactly what exec_run gives on each: results, next state, counted
 * bytes; under the interpreter and every plan, with a pool. */
static void check_prepared(const char *path, const Setting *set, int nset) {
  Case k = load_case(NULL, path, set, nset);
  if (!k.c || !k.s)
    return;
  Pair *pairs = fusion_classify(k.c, k.s);
  Pool *pool = pool_new(2);
  Diag d = {0};
  for (int st = -1; st < ST_COUNT; st++) {
    Plan *p = st < 0 ? NULL
                     : fusion_plan(k.c, k.s, pairs, (Strategy)st,
                                   STITCH_GREEDY, OBJ_GROUPS, &d);
    ExecOpts o = {.plan = p, .buffer_bytes = 1 << 12, .pool = pool};
    Exec *x = exec_new(k.c, k.s, &o, &d);
    CHECK(x != NULL);
    for (int step = 0; x && step < 3; step++) {
      tensors_free(&k.in);
      random_inputs(&k, 10 + (uint64_t)step);
      Tensors r1 = {0}, n1 = {0}, r2 = {0}, n2 = {0};
      ExecStats s1, s2;
      CHECK(exec_step(x, &k.in, &r1, &n1, &s1, &d));
      CHECK(exec_run(k.c, k.s, &k.in, &o, &r2, &n2, &s2, &d));
      CHECK(exec_peak_bytes(x) == s1.peak_bytes && s1.peak_bytes > 0);
      CHECK(s1.read_total == s2.read_total && s1.write_total == s2.write_total);
      for (int pass = 0; pass < 2; pass++) {
        Tensors *a = pass ? &n1 : &r1, *b = pass ? &n2 : &r2;
        CHECK_INT(a->n, b->n);
        for (int i = 0; i < a->n; i++) {
          Array *y = tensors_get(b, a->names[i]);
          CHECK(y && y->n == a->arrays[i]->n &&
                memcmp(y->data, a->arrays[i]->data,
                       sizeof(float) * (size_t)y->n) == 0);
        }
      }
      exec_stats_free(&s1);
      exec_stats_free(&s2);
      tensors_free(&r1);
      tensors_free(&n1);
      tensors_free(&r2);
      tensors_free(&n2);
    }
    exec_free(x);
    plan_free(p);
  }
  pool_free(pool);
  free(pairs);
  free_case(&k);
}

TEST(exec_prepared_runs_equal_one_shot) {
  Setting decode[] = {{"B", 2}, {"I", 1}, {"d_model", 16}, {"d_inner", 32},
                      {"dt_rank", 4}, {"d_state", 4}};
  check_prepared("specs/mamba1.yaml", decode, 6);
  Setting prefill[] = {{"B", 1}, {"I", 9}, {"d_model", 16}, {"d_inner", 32},
                       {"dt_rank", 4}, {"d_state", 4}};
  check_prepared("specs/mamba1.yaml", prefill, 6);
  Setting m2[] = {{"B", 2},       {"I", 3},        {"d_model", 16},
                  {"n_heads", 4}, {"head_dim", 8}, {"d_state", 8}};
  check_prepared("specs/mamba2.yaml", m2, 6);
}
