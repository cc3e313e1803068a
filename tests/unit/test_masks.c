/* test_masks.c — an Einsum cut by a mask is charged the points it
 * computes (docs/model.md §1, "Masks"): closed forms for affine masks,
 * and the executor's results unchanged. */
#include <stdlib.h>

#include "../../src/model/model.h"
#include "../../src/workload/workload.h"
#include "test.h"

/* The work of Einsum K of SPEC (its default sizes). */
static bool work_of(const char *spec, int k, Work *w) {
  Diag d = {0};
  Cascade *c = spec_parse("m.yaml", spec, strlen(spec), &d);
  Shape *s = c ? shape_bind(c, NULL, NULL, 0, true, &d) : NULL;
  if (!s) {
    test_fail(__FILE__, __LINE__, "%d:%d %s", d.loc.line, d.loc.col, d.msg);
    cascade_free(c);
    return false;
  }
  model_work(c, s, c->einsums[k], w);
  shape_free(s);
  cascade_free(c);
  return true;
}

/* A causal long convolution (Hyena's), I = J = N = 64: the mask keeps
 * j <= i, N(N+1)/2 = 2080 of the 4096 points, one MACC each; the
 * comparison and the select are the loops' bounds, free. Unmasked, the
 * same product is 4096 MACCs. */
TEST(masks_causal_convolution) {
  Work w, full;
  if (!work_of("shape: {I: 64, J: 64}\n"
               "einsum:\n"
               "  declaration: {H: [I], X: [J], Y: [I]}\n"
               "  expressions:\n"
               "    - Y[i] = where(j <= i, H[i-j], 0) * X[j]\n",
               0, &w) ||
      !work_of("shape: {I: 64, J: 64}\n"
               "einsum:\n"
               "  declaration: {H: [I], X: [J], Y: [I]}\n"
               "  expressions:\n"
               "    - Y[i] = H[i-j] * X[j]\n",
               0, &full))
    return;
  CHECK_NEAR(w.ops[OPC_MACC], 64 * 65 / 2, 0);
  CHECK_NEAR(w.ops[OPC_MAX], 0, 0);
  CHECK_NEAR(w.total, 2080, 0);
  CHECK_NEAR(full.ops[OPC_MACC], 4096, 0);
  CHECK_NEAR(w.points, 4096, 0); /* the loop nest's box is unchanged */
  CHECK(w.matrix && full.matrix); /* a product of two reused reads */
}

/* Masked scores, prefill and decode. Prefill (I = J = 32): the division
 * at the 32 x 33 / 2 = 528 points j <= i, sqrt(E) a constant (free); the
 * masked max over j the same 528 steps. Decode (M = 4 new tokens after
 * T = 10, J = 14): j <= m + T keeps sum_m (m + 11) = 4 x 10 + 4 x 5 / 2
 * = 50 of 56 points. A sliding window i - j < 8 (and j <= i: shares
 * multiply, an approximation) and a mask a coefficient of 2 cuts. */
TEST(masks_scores_prefill_decode_window) {
  static const char head[] =
      "params: {E: 16, T: 10}\n"
      "shape: {I: 32, J: 32, M: 4, K: 14}\n"
      "einsum:\n"
      "  declaration: {QK: [I, J], S: [I, J], MX: [I], QD: [M, K], "
      "SD: [M, K], W: [I, J], V: [I, J]}\n"
      "  expressions:\n"
      "    - S[i,j] = where(j <= i, QK[i,j] / sqrt(E), -inf)\n"
      "    - \"MX[i] = where(j <= i, S[i,j], -inf) :: max(j)\"\n"
      "    - SD[m,k] = where(k <= m + T, QD[m,k] * 2, -inf)\n"
      "    - W[i,j] = where(i - j < 8, exp(QK[i,j]), 0)\n"
      "    - V[i,j] = where(2 * j >= i, exp(QK[i,j]), 0)\n";
  Work w;
  if (work_of(head, 0, &w)) {
    CHECK_NEAR(w.ops[OPC_DIV], 528, 0);
    CHECK_NEAR(w.total, 528, 0);
  }
  if (work_of(head, 1, &w))
    CHECK_NEAR(w.ops[OPC_MAX], 528, 0);
  if (work_of(head, 2, &w))
    CHECK_NEAR(w.ops[OPC_MUL], 50, 0);
  /* i - j < 8: for each j, i in [j, j + 8) clipped... and every i < j:
   * 32 x 32 - (the points with i - j >= 8: sum_{d=8}^{31} (32 - d) = 300)
   * = 724. */
  if (work_of(head, 3, &w))
    CHECK_NEAR(w.ops[OPC_EXP], 724, 0);
  /* 2j >= i: for each i, j in [ceil(i/2), 32): sum_i (32 - ceil(i/2)) =
   * 1024 - 2 x (0 + 1 + ... + 15) - 16 = 768. */
  if (work_of(head, 4, &w))
    CHECK_NEAR(w.ops[OPC_EXP], 768, 0);
}
