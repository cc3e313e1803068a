/* test_exec.c — running cascades: the interpreter on hand-checkable
 * Einsums, recurrences and windows under every plan. (Every plan of every
 * cascade against the interpreter and the model: test_invariants.c.) */
#include <stdlib.h>
#include <unistd.h>

#include "../../src/exec/exec.h"
#include "../../src/model/model.h"
#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
#include "test.h"

typedef struct Case {
  Cascade *c;
  Shape *s;
  Tensors in;
} Case;

static uint64_t xorshift_next(uint64_t *st) {
  *st ^= *st << 13;
  *st ^= *st >> 7;
  *st ^= *st << 17;
  return *st;
}

static float uniform(uint64_t *st, float lo, float hi) {
  return lo + (hi - lo) * (float)((xorshift_next(st) >> 11) * 0x1.0p-53);
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
  const ModelSizes *p = k.c->model ? preset_sizes(k.c->model) : NULL;
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

/* Strategy ST's plan for K, or NULL (the interpreter) for ST < 0: the
 * tests that run every executor loop ST from -1. */
static Plan *plan_of(const Case *k, const Pair *pairs, int st, Stitcher sx,
                     Objective obj, Diag *d) {
  return st < 0 ? NULL
                : fusion_plan(k->c, k->s, pairs, (Strategy)st, sx, obj, d);
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

/* A contraction whose batch (h, c) or reduction (k, j) variables nest in
 * different orders in its operands flattens in each of them, but not into
 * one index: it is no single GEMM, and must still compute the sums. */
TEST(exec_gemm_variables_nest_alike) {
  Case k = load_case("shape: {H: 2, C: 3, M: 16, N: 16, K: 16, J: 4}\n"
                     "einsum:\n"
                     "  declaration: {A: [H, C, M, K], B: [C, H, K, N], "
                     "T: [H, C, M, N], E: [M, K, J], F: [J, K, N], "
                     "G: [M, N]}\n"
                     "  expressions:\n"
                     "    - T[h,c,m,n] = A[h,c,m,k] * B[c,h,k,n]\n"
                     "    - G[m,n] = E[m,k,j] * F[j,k,n]\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 7);
  Tensors res = {0};
  if (run(&k, NULL, &res, NULL, NULL)) {
    const float *A = tensors_get(&k.in, "A")->data;
    const float *B = tensors_get(&k.in, "B")->data;
    const float *T = tensors_get(&res, "T")->data;
    double worst = 0;
    for (int h = 0; h < 2; h++)
      for (int c = 0; c < 3; c++)
        for (int m = 0; m < 16; m++)
          for (int n = 0; n < 16; n++) {
            double sum = 0;
            for (int q = 0; q < 16; q++)
              sum += (double)A[((h * 3 + c) * 16 + m) * 16 + q] *
                     B[((c * 2 + h) * 16 + q) * 16 + n];
            worst = fmax(worst, fabs(sum - T[((h * 3 + c) * 16 + m) * 16 + n]));
          }
    CHECK(worst < 1e-5);
    const float *E = tensors_get(&k.in, "E")->data;
    const float *F = tensors_get(&k.in, "F")->data;
    const float *G = tensors_get(&res, "G")->data;
    worst = 0;
    for (int m = 0; m < 16; m++)
      for (int n = 0; n < 16; n++) {
        double sum = 0;
        for (int q = 0; q < 16; q++)
          for (int j = 0; j < 4; j++)
            sum += (double)E[(m * 16 + q) * 4 + j] * F[(j * 16 + q) * 16 + n];
        worst = fmax(worst, fabs(sum - G[m * 16 + n]));
      }
    CHECK(worst < 1e-5);
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

/* A reduction over two variables whose points lie one after another
 * (X[i, p, q] over (p, q), as Mamba-2's gated norm sums) runs as one row
 * of P x Q values; one whose reads do not continue so (W[p]), or whose
 * index values are taken (where(q <= p)), runs a row along q for each p.
 * All equal the sums in double. */
TEST(exec_row_reductions_over_two_variables) {
  Case k = load_case("shape: {I: 3, P: 24, Q: 64}\n"
                     "einsum:\n"
                     "  declaration: {X: [I, P, Q], G: [P, Q], W: [P], "
                     "S: [I], V: [I], T: [I], U: [I]}\n"
                     "  expressions:\n"
                     "    - \"S[i] = X[i,p,q] * X[i,p,q] :: sum(p, q)\"\n"
                     "    - V[i] = X[i,p,q] * G[p,q]\n"
                     "    - T[i] = X[i,p,q] * W[p]\n"
                     "    - \"U[i] = where(q <= p, X[i,p,q], 0) :: sum(p, q)\"\n",
                     NULL, NULL, 0);
  if (!k.c || !k.s)
    return;
  random_inputs(&k, 9);
  const float *X = tensors_get(&k.in, "X")->data;
  const float *G = tensors_get(&k.in, "G")->data;
  const float *W = tensors_get(&k.in, "W")->data;
  Tensors res = {0};
  if (run(&k, NULL, &res, NULL, NULL)) {
    for (int i = 0; i < 3; i++) {
      double s = 0, v = 0, t = 0, u = 0;
      for (int p = 0; p < 24; p++)
        for (int q = 0; q < 64; q++) {
          double x = X[(i * 24 + p) * 64 + q];
          s += (double)(float)(x * x);
          v += (double)(float)(x * G[p * 64 + q]);
          t += (double)(float)(x * W[p]);
          u += q <= p ? x : 0;
        }
      CHECK_NEAR(tensors_get(&res, "S")->data[i], s, 1e-5);
      CHECK_NEAR(tensors_get(&res, "V")->data[i], v, 1e-5);
      CHECK_NEAR(tensors_get(&res, "T")->data[i], t, 1e-5);
      CHECK_NEAR(tensors_get(&res, "U")->data[i], u, 1e-5);
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

/* A window's sum of products (a convolution's taps, run_term's one-pass
 * form): each product rounded to fp32, the sum in double, a subtracted
 * term's products taken away in the same sum. 1e8 + 1 - 1e8 is 0 in fp32
 * and 1 in double; reads before the start of U are 0. */
TEST(exec_window_products_sum_in_double) {
  Case k = load_case("shape: {I: 3, F: 3}\n"
                     "einsum:\n"
                     "  declaration: {U: [I], W: [F], V: [F], Y: [I], "
                     "Z: [I]}\n"
                     "  expressions:\n"
                     "    - Y[i] = W[f] * U[i+f-F+1]\n"
                     "    - Z[i] = W[f] * U[i+f-F+1] - V[f] * U[i+f-F+1]\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 3);
  const float u[] = {1e8f, 1, -1e8f}, w[] = {1, 1, 1}, v[] = {1, 0, 3};
  set_input(&k, "U", u);
  set_input(&k, "W", w);
  set_input(&k, "V", v);
  Tensors res = {0}, next = {0};
  if (run(&k, NULL, &res, &next, NULL)) {
    const float *Y = tensors_get(&res, "Y")->data;
    const float *Z = tensors_get(&res, "Z")->data;
    CHECK_NEAR(Y[0], 1e8, 0);     /* W2 U0 */
    CHECK_NEAR(Y[1], (float)(1e8 + 1), 0); /* W1 U0 + W2 U1: 1e8 in fp32 */
    CHECK_NEAR(Y[2], 1, 0);       /* 1e8 + 1 - 1e8 */
    /* Z[0] = 1e8 - 3e8; Z[2] = 1 - (1e8 + 0 - 3e8) = 2e8 + 1, in fp32. */
    CHECK_NEAR(Z[0], -2e8, 0);
    CHECK_NEAR(Z[2], (float)(2e8 + 1), 0);
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


/* A window over a produced tensor's previous step (S reads X[i-1] and
 * X[i], and at i = 0 the initialization X0): where a plan holds X on chip
 * in a unit of one tile, its halo is written only when S runs (the fused
 * executor's pending halos), and the projections Y (of S) and Z (of U)
 * run as matrix-vector products. Every plan, a pool of two, one step
 * (decode) and three, against sums in double; the next state X0' is X's
 * last step. */
TEST(exec_window_reads_its_initialization_when_it_runs) {
  for (int len = 1; len <= 3; len += 2) {
    Setting set[] = {{"I", len}};
    Case k = load_case("shape: {I: 1, D: 64, E: 48, F: 2}\n"
                       "einsum:\n"
                       "  declaration: {U: [I, D], X0: [D], X: [D, I], "
                       "C: [D, F], S: [D, I], W: [E, D], V: [E, D], "
                       "Y: [I, E], Z: [I, E]}\n"
                       "  expressions:\n"
                       "    - X[d, i<0] = X0[d]\n"
                       "    - X[d, i] = U[i, d] * 2\n"
                       "    - S[d, i] = C[d, f] * X[d, i+f-F+1]\n"
                       "    - Z[i, e] = V[e, d] * U[i, d]\n"
                       "    - Y[i, e] = W[e, d] * S[d, i]\n",
                       NULL, set, 1);
    if (!k.c || !k.s)
      return;
    random_inputs(&k, 8);
    const float *U = tensors_get(&k.in, "U")->data,
                *X0 = tensors_get(&k.in, "X0")->data,
                *C = tensors_get(&k.in, "C")->data,
                *W = tensors_get(&k.in, "W")->data,
                *V = tensors_get(&k.in, "V")->data;
    double S[3][64];
    for (int i = 0; i < len; i++)
      for (int j = 0; j < 64; j++)
        S[i][j] = C[j * 2] * (i == 0 ? X0[j] : 2.0 * U[(i - 1) * 64 + j]) +
                  C[j * 2 + 1] * 2.0 * U[i * 64 + j];
    Pair *pairs = fusion_classify(k.c, k.s);
    Pool *pool = pool_new(2);
    Diag d = {0};
    for (int st = -1; st < ST_COUNT; st++) {
      Plan *p = plan_of(&k, pairs, st, STITCH_GREEDY, OBJ_GROUPS, &d);
      Tensors res = {0}, next = {0};
      if (run_on(&k, p, pool, &res, &next, NULL)) {
        const float *Y = tensors_get(&res, "Y")->data,
                    *Z = tensors_get(&res, "Z")->data;
        for (int i = 0; i < len; i++)
          for (int e = 0; e < 48; e++) {
            double y = 0, z = 0;
            for (int j = 0; j < 64; j++) {
              y += (double)W[e * 64 + j] * S[i][j];
              z += (double)V[e * 64 + j] * U[i * 64 + j];
            }
            CHECK_NEAR(Y[i * 48 + e], y, 1e-4);
            CHECK_NEAR(Z[i * 48 + e], z, 1e-4);
          }
        for (int j = 0; j < 64; j++)
          CHECK_NEAR(tensors_get(&next, "X0")->data[j],
                     2.0f * U[(len - 1) * 64 + j], 0);
      }
      tensors_free(&res);
      tensors_free(&next);
      plan_free(p);
    }
    pool_free(pool);
    free(pairs);
    free_case(&k);
  }
}

/* A masked causal attention (tests/specs/good/causal_attention.yaml):
 * the interpreter against the softmax computed here in double (every plan
 * against the interpreter and the model: test_invariants.c). */
TEST(exec_causal_attention) {
  const char *path = "tests/specs/good/causal_attention.yaml";
  Case k = load_case(NULL, path, NULL, 0);
  if (!k.c || !k.s)
    return;
  random_inputs(&k, 5);
  Tensors res = {0};
  if (run(&k, NULL, &res, NULL, NULL)) {
    enum { I = 6, D = 8, E = 4 };
    const float *X = tensors_get(&k.in, "X")->data;
    const float *W[3] = {tensors_get(&k.in, "WQ")->data,
                         tensors_get(&k.in, "WK")->data,
                         tensors_get(&k.in, "WV")->data};
    double qkv[3][I][E] = {{{0}}};
    for (int m = 0; m < 3; m++)
      for (int i = 0; i < I; i++)
        for (int e = 0; e < E; e++)
          for (int d = 0; d < D; d++)
            qkv[m][i][e] += (double)X[i * D + d] * W[m][d * E + e];
    const float *A = tensors_get(&res, "A")->data;
    const float *S = tensors_get(&res, "S")->data;
    for (int i = 0; i < I; i++) {
      double s[I], mx = -INFINITY, z = 0;
      for (int j = 0; j <= i; j++) {
        s[j] = 0;
        for (int e = 0; e < E; e++)
          s[j] += qkv[0][i][e] * qkv[1][j][e];
        s[j] /= 2; /* sqrt(E) */
        mx = fmax(mx, s[j]);
      }
      for (int j = 0; j <= i; j++)
        z += exp(s[j] - mx);
      for (int e = 0; e < E; e++) {
        double a = 0;
        for (int j = 0; j <= i; j++)
          a += exp(s[j] - mx) / z * qkv[2][j][e];
        CHECK_NEAR(A[i * E + e], a, 1e-5);
      }
      for (int j = i + 1; j < I; j++) /* masked: -inf */
        CHECK(isinf(S[i * I + j]) && S[i * I + j] < 0);
    }
  }
  tensors_free(&res);
  free_case(&k);
}

/* Window variables over declared ranks: a 2x2 max-pool and an average
 * pool of stride 2 over a 4x4 image holding 0..15. */
TEST(exec_pool_window_variables) {
  Case k = load_case("shape: {Y: 2, X: 2, H: 2*Y, W: 2*X, U: 2, V: 2}\n"
                     "einsum:\n"
                     "  declaration: {R: [H, W], P: [Y, X], G: [Y, X]}\n"
                     "  expressions:\n"
                     "    - \"P[y,x] = R[2*y+u, 2*x+v] :: max(u,v)\"\n"
                     "    - G[y,x] = R[2*y+u, 2*x+v] / 4\n",
                     NULL, NULL, 0);
  if (!k.c || !k.s)
    return;
  random_inputs(&k, 1);
  float r[16];
  for (int i = 0; i < 16; i++)
    r[i] = (float)i;
  set_input(&k, "R", r);
  Tensors res = {0};
  if (run(&k, NULL, &res, NULL, NULL)) {
    const float *P = tensors_get(&res, "P")->data;
    const float *G = tensors_get(&res, "G")->data;
    const float p[4] = {5, 7, 13, 15};
    const float g[4] = {2.5f, 4.5f, 10.5f, 12.5f}; /* (0+1+4+5)/4, ... */
    for (int i = 0; i < 4; i++) {
      CHECK_NEAR(P[i], p[i], 0);
      CHECK_NEAR(G[i], g[i], 1e-6);
    }
  }
  tensors_free(&res);
  free_case(&k);
}

/* Index values where a long reduction runs a row at a time (lanes along
 * k) and where the walk's lanes run along the output: Y[i] sums the
 * first 100 i + 1 ones of row i; Z[i,k] = k - i. */
TEST(exec_index_values_in_rows_and_lanes) {
  Case k = load_case("shape: {I: 3, K: 1000}\n"
                     "einsum:\n"
                     "  declaration: {X: [I, K], Y: [I], Z: [I, K]}\n"
                     "  expressions:\n"
                     "    - Y[i] = where(k <= 100*i, X[i,k], 0)\n"
                     "    - Z[i,k] = k - i + 0 * X[i,k]\n",
                     NULL, NULL, 0);
  if (!k.c || !k.s)
    return;
  random_inputs(&k, 1);
  Array *x = tensors_get(&k.in, "X");
  for (int64_t i = 0; i < x->n; i++)
    x->data[i] = 1;
  Tensors res = {0};
  if (run(&k, NULL, &res, NULL, NULL)) {
    const float *Y = tensors_get(&res, "Y")->data;
    const float *Z = tensors_get(&res, "Z")->data;
    for (int i = 0; i < 3; i++) {
      CHECK_NEAR(Y[i], 100 * i + 1, 0);
      for (int j = 0; j < 1000; j += 333)
        CHECK_NEAR(Z[i * 1000 + j], j - i, 0);
    }
  }
  tensors_free(&res);
  free_case(&k);
}


/* ---- a KV cache (specs/prenorm_decode.yaml's `append:`) ---- */

/* The steps [LO, HI) of A along dimension DIM. */
static Array *slice(const Array *a, int dim, int64_t lo, int64_t hi) {
  int64_t shape[IR_MAX_RANKS] = {0}, outer = 1, inner = 1;
  for (int k = 0; k < a->ndim; k++) {
    shape[k] = k == dim ? hi - lo : a->shape[k];
    outer *= k < dim ? a->shape[k] : 1;
    inner *= k > dim ? a->shape[k] : 1;
  }
  Array *b = array_new(a->ndim, shape);
  for (int64_t o = 0; o < outer; o++)
    memcpy(b->data + o * (hi - lo) * inner,
           a->data + (o * a->shape[dim] + lo) * inner,
           sizeof(float) * (size_t)((hi - lo) * inner));
  return b;
}

static double worst_diff(const Array *x, const Array *y) {
  if (!x || !y || x->n != y->n)
    return INFINITY;
  double w = 0;
  for (int64_t i = 0; i < x->n; i++)
    w = fmax(w, fabs((double)x->data[i] - y->data[i]));
  return w;
}

/* One decode pass of prenorm_decode over tokens [FROM, TO) of a prompt
 * whose keys, values and outputs FULL (prenorm_block's, keep_all) holds,
 * the cache CACHE (KC, VC) holding tokens [0, FROM): its outputs must be
 * the prompt's at [FROM, TO) and its next cache the prompt's keys and
 * values up to TO, under the interpreter and every plan. Returns the next
 * cache (the interpreter's) in NEXT. */
static void decode_pass(const Tensors *prompt_in, const Tensors *full,
                        const Tensors *cache, int from, int to,
                        Tensors *next) {
  Setting set[] = {{"B", 2}, {"T", from}, {"M", to - from},
                   {"d_model", 8}, {"H", 2}};
  Case k = load_case(NULL, "specs/prenorm_decode.yaml", set, 5);
  if (!k.c || !k.s)
    return;
  for (int i = 0; i < prompt_in->n; i++)
    if (strcmp(prompt_in->names[i], "X"))
      tensors_put(&k.in, prompt_in->names[i],
                  array_clone(prompt_in->arrays[i]), true);
  tensors_put(&k.in, "X", slice(tensors_get(prompt_in, "X"), 1, from, to),
              true);
  tensors_put(&k.in, "KC", array_clone(tensors_get(cache, "KC")), true);
  tensors_put(&k.in, "VC", array_clone(tensors_get(cache, "VC")), true);
  Array *y = slice(tensors_get(full, "Y"), 1, from, to);
  Array *kk = slice(tensors_get(full, "K"), 2, 0, to);
  Array *vv = slice(tensors_get(full, "V"), 2, 0, to);
  Pair *pairs = fusion_classify(k.c, k.s);
  Pool *pool = pool_new(2);
  Diag d = {0};
  for (int st = -1; st < ST_COUNT; st++) {
    Plan *p = plan_of(&k, pairs, st, STITCH_GLOBAL, OBJ_TRAFFIC, &d);
    Tensors res = {0}, nx = {0};
    if (run_on(&k, p, pool, &res, &nx, NULL)) {
      const char *what = st < 0 ? "interpreter" : strategy_name(st);
      double wy = worst_diff(tensors_get(&res, "Y"), y);
      double wk = worst_diff(tensors_get(&nx, "KC"), kk);
      double wv = worst_diff(tensors_get(&nx, "VC"), vv);
      if (!(wy < 1e-5 && wk < 1e-6 && wv < 1e-6))
        test_fail(__FILE__, __LINE__,
                  "decode [%d, %d) %s: Y differs by %g, the next KC by %g, "
                  "VC by %g",
                  from, to, what, wy, wk, wv);
      CHECK_INT(tensors_get(&nx, "KC")->shape[2], to); /* grown */
    }
    if (st < 0)
      for (int i = 0; i < nx.n; i++)
        tensors_put(next, nx.names[i], array_clone(nx.arrays[i]), true);
    tensors_free(&res);
    tensors_free(&nx);
    plan_free(p);
  }
  pool_free(pool);
  free(pairs);
  array_free(y);
  array_free(kk);
  array_free(vv);
  free_case(&k);
}

/* A prompt of 9 tokens run whole (prenorm_block) against the same tokens
 * as a cache of 5, a pass of 3 appended to it, then one token decoded
 * from the grown cache (prenorm_decode): the same outputs, and each
 * pass's next cache is the prompt's keys and values so far. */
TEST(exec_kv_cache_decode_equals_prefill) {
  Setting set[] = {{"B", 2}, {"M", 9}, {"d_model", 8}, {"H", 2}};
  Case k = load_case(NULL, "specs/prenorm_block.yaml", set, 4);
  if (!k.c || !k.s)
    return;
  random_inputs(&k, 9);
  Tensors full = {0}, cache = {0}, next = {0}, next2 = {0};
  if (run(&k, NULL, &full, NULL, NULL)) {
    tensors_put(&cache, "KC", slice(tensors_get(&full, "K"), 2, 0, 5), true);
    tensors_put(&cache, "VC", slice(tensors_get(&full, "V"), 2, 0, 5), true);
    decode_pass(&k.in, &full, &cache, 5, 8, &next);
    if (tensors_get(&next, "KC"))
      decode_pass(&k.in, &full, &next, 8, 9, &next2);
    CHECK(tensors_get(&next2, "KC") != NULL);
  }
  tensors_free(&full);
  tensors_free(&cache);
  tensors_free(&next);
  tensors_free(&next2);
  free_case(&k);
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

/* A and B hold the same tensors, bit for bit. */
static void check_bitwise(const Tensors *a, const Tensors *b) {
  CHECK_INT(a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    const Array *y = tensors_get(b, a->names[i]);
    CHECK(y && y->n == a->arrays[i]->n &&
          memcmp(y->data, a->arrays[i]->data,
                 sizeof(float) * (size_t)y->n) == 0);
  }
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
          Plan *p = plan_of(&k, pairs, st, STITCH_GREEDY, OBJ_GROUPS, &d);
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
    Plan *p = plan_of(&k, pairs, st, STITCH_GREEDY, OBJ_GROUPS, &d);
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
      check_bitwise(&r1, &r2);
      check_bitwise(&n1, &n2);
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

/* An array handed back (exec_recycle: a model's stream after its next
 * layer has read it) is the next step's array of its size, written anew. */
TEST(exec_recycled_array_is_the_next_steps) {
  Case k = load_case("shape: {I: 4}\n"
                     "einsum:\n"
                     "  declaration: {X: [I], Y: [I]}\n"
                     "  expressions:\n"
                     "    - Y[i] = X[i] * 2\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 4);
  Diag d = {0};
  ExecOpts o = {0};
  Exec *x = exec_new(k.c, k.s, &o, &d);
  const float x1[] = {1, 2, 3, 4}, x2[] = {-1, 0.5f, 8, 0};
  Tensors r1 = {0}, r2 = {0}, n = {0};
  set_input(&k, "X", x1);
  CHECK(exec_step(x, &k.in, &r1, &n, NULL, &d));
  Array *a = tensors_take(&r1, "Y");
  CHECK(a && a->data[3] == 8);
  exec_recycle(x, a);
  a->data[0] = 123; /* still X's (ASan: not freed), and written anew below */
  set_input(&k, "X", x2);
  CHECK(exec_step(x, &k.in, &r2, &n, NULL, &d));
  const Array *b = tensors_get(&r2, "Y");
  CHECK(b == a);
  for (int i = 0; b && i < 4; i++)
    CHECK_NEAR(b->data[i], 2 * x2[i], 0);
  tensors_free(&r1);
  tensors_free(&r2);
  tensors_free(&n);
  exec_free(x);
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

/* ---- the scan kernel (a linear recurrence and its read-out) ---- */

/* K's inputs with the layer's weights (every input without the batch
 * rank) in dtype T, rounded as a checkpoint would store them. */
static Tensors weights_as(const Case *k, DType t) {
  Tensors in = {0};
  for (int i = 0; i < k->in.n; i++) {
    const Tensor *T = &k->c->tensors[cascade_tensor(k->c, k->in.names[i])];
    bool weight = strcmp(k->c->ranks[T->ranks[0]].name, "B") != 0;
    Array *wide = NULL;
    Array *a = weight && t != DT_F32 ? to_half(k->in.arrays[i], t, &wide)
                                     : array_clone(k->in.arrays[i]);
    array_free(wide);
    tensors_put(&in, k->in.names[i], a, true);
  }
  return in;
}

static void check_same(const Tensors *a, const Tensors *b, const char *what) {
  CHECK_INT(a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    const Array *y = tensors_get(b, a->names[i]);
    CHECK(y && y->n == a->arrays[i]->n);
    for (int64_t n = 0; y && n < y->n; n++)
      if (fabs(a->arrays[i]->data[n] - y->data[n]) >
          1e-5 * (1 + fabs(y->data[n]))) {
        test_fail(__FILE__, __LINE__, "%s: %s[%ld] = %g, expected %g", what,
                  a->names[i], (long)n, a->arrays[i]->data[n], y->data[n]);
        break;
      }
  }
}

/* One configuration against the vector machine alone (the reference):
 * the results, the next state and the counted bytes agree, and the scan
 * kernel ran. Returns whether it ran (a plan the stitcher refuses: no). */
static bool check_scan_once(const Case *k, const Tensors *in, const Plan *p,
                            Pool *pool, bool keep_all, const char *what) {
  Diag d = {0};
  ExecOpts o = {.plan = p, .buffer_bytes = 1 << 14, .pool = pool,
                .keep_all = keep_all};
  ExecOpts ov = o;
  ov.vm_only = true;
  Tensors r1 = {0}, n1 = {0}, r2 = {0}, n2 = {0};
  ExecStats s1, s2;
  bool ok = exec_run(k->c, k->s, in, &o, &r1, &n1, &s1, &d) &&
            exec_run(k->c, k->s, in, &ov, &r2, &n2, &s2, &d);
  if (!ok)
    test_fail(__FILE__, __LINE__, "%s: %s", what, d.msg);
  if (ok) {
    check_same(&r1, &r2, what);
    check_same(&n1, &n2, what);
    CHECK(s1.read_total == s2.read_total && s1.write_total == s2.write_total);
    CHECK(s1.scan_einsums >= 2 && s2.scan_einsums == 0);
    exec_stats_free(&s1);
    exec_stats_free(&s2);
  }
  tensors_free(&r1);
  tensors_free(&n1);
  tensors_free(&r2);
  tensors_free(&n2);
  return ok;
}

/* Mamba-1's and Mamba-2's state update and read-out run by the scan
 * kernel equal the vector machine's Einsum-by-Einsum results (within
 * 1e-5: the read-out's sum is taken in another order) under the
 * interpreter and every strategy and stitcher, with fp32, F16 and BF16
 * weights, prefill and decode, every tensor kept or only the outputs. */
static int check_scan(const char *path, const Setting *set, int nset) {
  Case k = load_case(NULL, path, set, nset);
  if (!k.c || !k.s)
    return 0;
  random_inputs(&k, 5);
  Pair *pairs = fusion_classify(k.c, k.s);
  Pool *pool = pool_new(2);
  const DType types[] = {DT_F32, DT_F16, DT_BF16};
  int runs = 0;
  for (int ti = 0; ti < 3; ti++) {
    Tensors in = weights_as(&k, types[ti]);
    for (int st = -1; st < ST_COUNT; st++)
      for (int sx = 0; sx < (st < 0 ? 1 : STITCH_COUNT); sx++) {
        Diag d = {0};
        Plan *p = plan_of(&k, pairs, st, (Stitcher)sx, OBJ_GROUPS, &d);
        if (st >= 0 && !p)
          continue; /* a stitcher that does not serve this strategy */
        char what[128];
        snprintf(what, sizeof what, "%s %s %s/%d", path,
                 dtype_name(types[ti]), st < 0 ? "interpreter"
                 : strategy_name((Strategy)st), sx);
        for (int keep = 0; keep < 2; keep++)
          runs += check_scan_once(&k, &in, p, keep ? NULL : pool, keep, what);
        plan_free(p);
      }
    tensors_free(&in);
  }
  pool_free(pool);
  free(pairs);
  free_case(&k);
  return runs;
}

TEST(exec_scan_kernel_equals_vm) {
  Setting m1[] = {{"B", 2}, {"I", 5}, {"d_model", 16}, {"d_inner", 32},
                  {"dt_rank", 4}, {"d_state", 4}};
  Setting m2[] = {{"B", 2},       {"I", 5},        {"d_model", 16},
                  {"n_heads", 4}, {"head_dim", 8}, {"d_state", 12}};
  int runs = 0;
  for (int i = 1; i <= 5; i += 4) { /* decode (I = 1) and prefill */
    m1[1].value = m2[1].value = i;
    runs += check_scan("specs/mamba1.yaml", m1, 6);
    runs += check_scan("specs/mamba2.yaml", m2, 6);
  }
  /* 2 specs x 2 lengths x 3 dtypes x (interpreter + plans) x 2 */
  CHECK(runs >= 2 * 2 * 3 * (1 + ST_COUNT) * 2);
}

/* check_scan over decode and a 6-token prefill (SET[1], I) and two state
 * sizes (SET[5], d_state: N0 and N1), each run of every configuration
 * counted; at least 2 x 2 x 3 dtypes x (interpreter + plans) x 2. */
static void check_scan_wide(const char *path, Setting *set, int n0, int n1) {
  int runs = 0;
  for (int i = 1; i <= 6; i += 5)
    for (int n = n0; n <= n1; n += n1 - n0) {
      set[1].value = i;
      set[5].value = n;
      runs += check_scan(path, set, 6);
    }
  CHECK(runs >= 2 * 2 * 3 * (1 + ST_COUNT) * 2);
}

/* Mamba-2 with a state of 16 lanes or more: the AVX-512 kernels where
 * the CPU has them (one chunk of 16 at d_state 16, four chains and a
 * prompt's pairs of rows holding eight vectors each at 128, the
 * models'; heads of 12 channels: a group of 8 channels, then 4 row by
 * row), decode and prefill, equal to the vector machine under every
 * strategy and stitcher, fp32, F16 and BF16 weights. */
TEST(exec_scan_mamba2_wide_equals_vm) {
  Setting m2[] = {{"B", 2},       {"I", 1},         {"d_model", 16},
                  {"n_heads", 2}, {"head_dim", 12}, {"d_state", 16}};
  check_scan_wide("specs/mamba2.yaml", m2, 16, 128);
}

/* Mamba-1 with a state of 16 lanes or more: the AVX-512 kernel where the
 * CPU has it (rows_m1_avx512: one vector at d_state 16, two at 32; 20
 * channels: groups of 8, 8 and 4, each within one batch row), decode
 * and prefill, equal to the vector machine under every strategy and
 * stitcher, with A (and every weight) in fp32, F16 and BF16. */
TEST(exec_scan_mamba1_wide_equals_vm) {
  Setting m1[] = {{"B", 2},       {"I", 1},       {"d_model", 10},
                  {"d_inner", 20}, {"dt_rank", 4}, {"d_state", 16}};
  check_scan_wide("specs/mamba1.yaml", m1, 16, 32);
}

/* The state of Einsum T's initialization input, by name. */
static const char *state_input(const Cascade *c, const char *t) {
  const Einsum *ini = c->tensors[cascade_tensor(c, t)].init;
  return c->tensors[ini->rhs->acc->tensor].name;
}

/* Steps of an Exec that advances the state in place (H0 overwritten, NEXT
 * holding the same array) equal, bit for bit, exec_run's steps on copies
 * of the state, outputs and next states, with the same bytes counted,
 * under PLAN (NULL: the interpreter); the convolution histories still
 * come as new arrays. IN_PLACE: H0 must be advanced in place (else it may
 * be). */
static void check_in_place(const Case *kc, const Plan *plan, bool in_place) {
  Case k = *kc;
  k.in = (Tensors){0};
  random_inputs(&k, 21);
  const char *h0 = state_input(k.c, "H");
  Diag d = {0};
  Pool *pool = pool_new(2);
  ExecOpts o = {.plan = plan, .buffer_bytes = 1 << 20, .pool = pool},
           oi = o;
  oi.state_in_place = true;
  Exec *x = exec_new(k.c, k.s, &oi, &d);
  Tensors ref = {0}; /* the copied side's inputs */
  for (int i = 0; i < k.in.n; i++)
    tensors_put(&ref, k.in.names[i], array_clone(k.in.arrays[i]), true);
  for (int step = 0; x && step < 3; step++) {
    Tensors r1 = {0}, n1 = {0}, r2 = {0}, n2 = {0};
    ExecStats s1 = {0}, s2 = {0};
    Array *before = tensors_get(&k.in, h0);
    if (!exec_step(x, &k.in, &r1, &n1, &s1, &d) ||
        !exec_run(k.c, k.s, &ref, &o, &r2, &n2, &s2, &d))
      test_fail(__FILE__, __LINE__, "%s", d.msg);
    bool same = tensors_get(&n1, h0) == before;
    CHECK(same || !in_place);
    CHECK(s1.read_total == s2.read_total && s1.write_total == s2.write_total);
    check_bitwise(&r1, &r2);
    check_bitwise(&n1, &n2);
    for (int i = 0; i < n2.n; i++) { /* the next step continues these */
      const char *name = n2.names[i];
      if (strcmp(name, h0) != 0 || !same)
        tensors_put(&k.in, name, tensors_take(&n1, name), true);
      tensors_put(&ref, name, array_clone(n2.arrays[i]), true);
    }
    exec_stats_free(&s1);
    exec_stats_free(&s2);
    tensors_free(&r1);
    tensors_free(&n1);
    tensors_free(&r2);
    tensors_free(&n2);
  }
  exec_free(x);
  tensors_free(&ref);
  tensors_free(&k.in);
  pool_free(pool);
}

/* Under the interpreter, and under the `full` plan (every tensor of the
 * state's update on chip, the layer one tile), the state advances in
 * place; under the other plans wherever it can. */
static void check_in_place_plans(const char *path, const Setting *set,
                                 int nset) {
  Case k = load_case(NULL, path, set, nset);
  if (!k.c || !k.s)
    return;
  Pair *pairs = fusion_classify(k.c, k.s);
  Diag d = {0};
  for (int s = -1; s < ST_COUNT; s++) {
    Plan *p = plan_of(&k, pairs, s, STITCH_GREEDY, OBJ_GROUPS, &d);
    check_in_place(&k, p, s < 0 || s == ST_FULL);
    plan_free(p);
  }
  free(pairs);
  free_case(&k);
}

TEST(exec_state_in_place_equals_copy) {
  Setting m1[] = {{"B", 2}, {"I", 1}, {"d_model", 16}, {"d_inner", 32},
                  {"dt_rank", 4}, {"d_state", 4}};
  Setting m2[] = {{"B", 2},       {"I", 1},         {"d_model", 16},
                  {"n_heads", 2}, {"head_dim", 16}, {"d_state", 32}};
  for (int i = 1; i <= 4; i += 3) { /* decode and prefill */
    m1[1].value = m2[1].value = i;
    check_in_place_plans("specs/mamba1.yaml", m1, 6);
    check_in_place_plans("specs/mamba2.yaml", m2, 6);
  }
}

/* A decode step's matrix-vector products of one vector, run as one job
 * of a pool of two in parts of their rows (vm_gemvs), one of them in the
 * background, give what a run without a pool gives (each product on its
 * own, whole), bit for bit, outputs and next state, under the interpreter
 * and under every strategy's plan, with the same bytes counted; GEMVS of
 * the layer's Einsums ran together (BACKGROUND of them in the
 * background) and SCANS by the scan kernel (Mamba-1's with its decay's
 * and input's producers folded in), under the interpreter and the
 * `full` plan alike. */
static void check_gemvs(const char *path, const Setting *set, int nset,
                        int gemvs, int background, int scans) {
  Case k = load_case(NULL, path, set, nset);
  if (!k.c || !k.s)
    return;
  random_inputs(&k, 5);
  Diag d = {0};
  Pool *pool = pool_new(2);
  Pair *pairs = fusion_classify(k.c, k.s);
  for (int s = -1; s < ST_COUNT; s++) {
    Plan *p = plan_of(&k, pairs, s, STITCH_GREEDY, OBJ_GROUPS, &d);
    ExecOpts op = {.plan = p, .buffer_bytes = 1 << 20, .pool = pool},
             o1 = {.plan = p, .buffer_bytes = 1 << 20};
    ExecStats st = {0}, st1 = {0};
    Tensors r1 = {0}, n1 = {0}, r2 = {0}, n2 = {0};
    if (!exec_run(k.c, k.s, &k.in, &op, &r1, &n1, &st, &d) ||
        !exec_run(k.c, k.s, &k.in, &o1, &r2, &n2, &st1, &d))
      test_fail(__FILE__, __LINE__, "%s: %s", path, d.msg);
    if (s < 0 || s == ST_FULL) {
      CHECK_INT((int)st.gemv_einsums, gemvs);
      CHECK_INT((int)st.background_einsums, background);
      CHECK_INT((int)st.scan_einsums, scans);
    }
    CHECK(st.read_total == st1.read_total && st.write_total == st1.write_total);
    check_bitwise(&r1, &r2);
    check_bitwise(&n1, &n2);
    exec_stats_free(&st);
    exec_stats_free(&st1);
    tensors_free(&r1);
    tensors_free(&n1);
    tensors_free(&r2);
    tensors_free(&n2);
    plan_free(p);
  }
  free(pairs);
  pool_free(pool);
  free_case(&k);
}

TEST(exec_gemvs_together_equal_one_by_one) {
  /* Mamba-1: TTX and RX, then B and C (TTDelta's 8 rows go to the vector
   * machine); Mamba-2: TX, RX, TB and TC (TDelta's 8 rows likewise), TX
   * and RX in parts. The scan kernel: Mamba-1's six Einsums from Abar
   * and Bbar (folded) to S6Y, Mamba-2's five from Bbar (folded; its
   * decay, one per head, is not). */
  Setting m1[] = {{"B", 1}, {"I", 1}, {"d_model", 128}, {"d_inner", 256},
                  {"dt_rank", 8}, {"d_state", 16}};
  Setting m2[] = {{"B", 1},       {"I", 1},         {"d_model", 256},
                  {"n_heads", 8}, {"head_dim", 32}, {"d_state", 32}};
  check_gemvs("specs/mamba1.yaml", m1, 6, 4, 0, 6);
  check_gemvs("specs/mamba2.yaml", m2, 6, 4, 0,5);
  /* Weights of a megabyte and more: the gate's projection (RX, 2 MB, first
   * read by Y) runs in the background while the convolution, the small
   * projections and the scan run on the caller; Mamba-2's (RX, 1 MB, read
   * by the gate LLY) likewise. */
  Setting b1[] = {{"B", 1},          {"I", 1},        {"d_model", 512},
                  {"d_inner", 1024}, {"dt_rank", 32}, {"d_state", 16}};
  Setting b2[] = {{"B", 1},        {"I", 1},         {"d_model", 512},
                  {"n_heads", 16}, {"head_dim", 32}, {"d_state", 32}};
  check_gemvs("specs/mamba1.yaml", b1, 6, 5, 1, 6);
  check_gemvs("specs/mamba2.yaml", b2, 6, 5, 1,5);
  /* A gate projection of 32 MB streams for far longer than the caller's
   * convolution and scan take: under the fused plans the gate LLY is in
   * a stretch that starts before it (with LY), which must wait for the
   * product, not run beside it. */
  Setting b3[] = {{"B", 1},         {"I", 1},         {"d_model", 2048},
                  {"n_heads", 128}, {"head_dim", 32}, {"d_state", 8}};
  check_gemvs("specs/mamba2.yaml", b3, 6, 5, 1,5);
}

/* A fused unit whose products read weights takes tiles whose buffers hold
 * at least four times those weights' bytes (fused.c, choose_tile): below
 * that, each layer packed the weights whole into fresh pages and every
 * tile read the pack again. Here W is 24 x 32 fp32 (3072 bytes, 12288 x
 * 4) and the full plan keeps H (I x 32) on chip, under a 2 KiB buffer.
 * At I = 64, H (8192 bytes) fits: one tile, the run holds H's whole
 * buffer and Y (64 x 24, 6144 bytes) and no pack, 14336 bytes at its peak
 * (at once the weights, 3072 bytes, H was cut into 3 tiles of 22 rows,
 * 2816 bytes, and W packed for them, 32 x 32 x 4 = 4096: 13056). At I =
 * 256, H (32768 bytes) does not: 12288 / 128 = 96 rows fit, so 3 tiles of
 * 86 rows (11008 bytes), beside Y (24576) and W's pack (4096): 39680. The
 * numbers equal the interpreter's either way. */
static void check_tile_bytes(int64_t rows, double peak) {
  char text[512];
  snprintf(text, sizeof text,
           "shape: {I: %lld, K: 32, N: 24}\n"
           "outputs: [Y]\n"
           "einsum:\n"
           "  declaration: {X: [I, K], H: [I, K], W: [N, K], Y: [I, N]}\n"
           "  expressions:\n"
           "    - H[i,k] = X[i,k] * 2\n"
           "    - Y[i,n] = W[n,k] * H[i,k]\n",
           (long long)rows);
  Case k = load_case(text, NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 5);
  Pair *pairs = fusion_classify(k.c, k.s);
  Diag d = {0};
  Plan *p = plan_of(&k, pairs, ST_FULL, STITCH_GREEDY, OBJ_GROUPS, &d);
  CHECK(p && p->ngroups == 1 && p->onchip[cascade_tensor(k.c, "H")]);
  Tensors ref = {0}, res = {0};
  ExecStats st = {0};
  ExecOpts o = {.plan = p, .buffer_bytes = 2048};
  CHECK(run(&k, NULL, &ref, NULL, NULL));
  CHECK(exec_run(k.c, k.s, &k.in, &o, &res, NULL, &st, &d));
  CHECK(st.peak_bytes == peak);
  const Array *y = tensors_get(&res, "Y"), *y0 = tensors_get(&ref, "Y");
  CHECK(y && y0 && y->n == y0->n);
  for (int64_t i = 0; y && y0 && i < y->n; i++)
    CHECK_NEAR(y->data[i], y0->data[i], 1e-6);
  exec_stats_free(&st);
  tensors_free(&res);
  tensors_free(&ref);
  plan_free(p);
  free(pairs);
  free_case(&k);
}

TEST(exec_tile_holds_four_times_the_weights) {
  check_tile_bytes(64, 8192 + 6144);
  check_tile_bytes(256, 11008 + 24576 + 4096);
}

/* A stretch's chains of Einsums (vm_exec_chain: walked alike, each
 * reading the earlier ones' outputs only where it writes) run unit by
 * unit, with each element's operations those of the Einsums one by one:
 * a Mamba-2 decode step under the `full` plan (its layer one tile) gives
 * the interpreter's numbers, bit for bit (the vector machine only on both
 * sides: no scan kernel, whose roundings the plan's units would not
 * share), outputs and next state. At these sizes the plan's stretches
 * are [LEX PX], [TTB TTC], [B C] and [Delta Abar Bbar HX, the recurrence
 * HH H, S6Y LY LLY PLLY]: chained are LEX and PX (PX squares LEX where it
 * is written), TTB and TTC, B and C (independent, walked alike), Delta
 * and Abar, and S6Y (a sum over the state, of nothing chained), LY, LLY,
 * PLLY: 12 Einsums. Not Bbar (over p and n, Abar over p alone) nor HX
 * (over p, q, n). With a pool of two the same: a stretch this small
 * runs on the calling thread, in one slice. */
TEST(exec_chains_equal_one_by_one) {
  Setting m2[] = {{"B", 1},       {"I", 1},         {"d_model", 16},
                  {"n_heads", 2}, {"head_dim", 16}, {"d_state", 8}};
  Case k = load_case(NULL, "specs/mamba2.yaml", m2, 6);
  if (!k.c || !k.s)
    return;
  random_inputs(&k, 7);
  Diag d = {0};
  Pair *pairs = fusion_classify(k.c, k.s);
  Plan *p = plan_of(&k, pairs, ST_FULL, STITCH_GREEDY, OBJ_GROUPS, &d);
  Pool *pool = pool_new(2);
  Tensors r0 = {0}, n0 = {0};
  ExecStats s0 = {0};
  ExecOpts oi = {.vm_only = true};
  if (!exec_run(k.c, k.s, &k.in, &oi, &r0, &n0, &s0, &d))
    test_fail(__FILE__, __LINE__, "%s", d.msg);
  CHECK_INT((int)s0.chained_einsums, 0);
  for (int threads = 1; threads <= 2; threads++) {
    ExecOpts o = {.plan = p, .buffer_bytes = 1 << 20, .vm_only = true,
                  .pool = threads > 1 ? pool : NULL};
    Tensors r1 = {0}, n1 = {0};
    ExecStats s1 = {0};
    if (!exec_run(k.c, k.s, &k.in, &o, &r1, &n1, &s1, &d))
      test_fail(__FILE__, __LINE__, "%s", d.msg);
    CHECK_INT((int)s1.chained_einsums, 12);
    check_bitwise(&r0, &r1);
    check_bitwise(&n0, &n1);
    exec_stats_free(&s1);
    tensors_free(&r1);
    tensors_free(&n1);
  }
  exec_stats_free(&s0);
  tensors_free(&r0);
  tensors_free(&n0);
  pool_free(pool);
  plan_free(p);
  free(pairs);
  free_case(&k);
}

/* A member that reads an earlier one's output elsewhere than where it
 * writes (Z reads Y at the last channel, written by Y's last unit of
 * four) ends the chain, and runs after it: Y and W (W reads Y where it
 * writes) chain, Z reads all of Y. Were Z chained, its first unit would
 * read Y[i, 511] before Y's fourth unit wrote it. */
TEST(exec_chain_ends_at_a_read_elsewhere) {
  Case k = load_case("shape: {I: 2, D: 512}\n"
                     "outputs: [W, Z]\n"
                     "einsum:\n"
                     "  declaration: {X: [I, D], Y: [I, D], W: [I, D], "
                     "Z: [I, D]}\n"
                     "  expressions:\n"
                     "    - Y[i,d] = X[i,d] * 2\n"
                     "    - W[i,d] = Y[i,d] * X[i,d]\n"
                     "    - Z[i,d] = Y[i,D-1] + X[i,d]\n",
                     NULL, NULL, 0);
  if (!k.c)
    return;
  random_inputs(&k, 3);
  Diag d = {0};
  Pair *pairs = fusion_classify(k.c, k.s);
  Plan *p = plan_of(&k, pairs, ST_FULL, STITCH_GREEDY, OBJ_GROUPS, &d);
  ExecOpts o = {.plan = p, .buffer_bytes = 1 << 20};
  Tensors res = {0}, next = {0};
  ExecStats st = {0};
  if (!exec_run(k.c, k.s, &k.in, &o, &res, &next, &st, &d))
    test_fail(__FILE__, __LINE__, "%s", d.msg);
  CHECK_INT((int)st.chained_einsums, 2);
  const float *x = tensors_get(&k.in, "X")->data;
  const float *w = tensors_get(&res, "W")->data;
  const float *z = tensors_get(&res, "Z")->data;
  int bad = 0;
  for (int i = 0; i < 2; i++)
    for (int c = 0; c < 512; c++) {
      float y = x[i * 512 + c] * 2, ylast = x[i * 512 + 511] * 2;
      bad += w[i * 512 + c] != y * x[i * 512 + c];
      bad += z[i * 512 + c] != (float)((double)ylast + x[i * 512 + c]);
    }
  CHECK_INT(bad, 0);
  exec_stats_free(&st);
  tensors_free(&res);
  tensors_free(&next);
  plan_free(p);
  free(pairs);
  free_case(&k);
}
