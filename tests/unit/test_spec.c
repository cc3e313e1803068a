/* test_spec.c — the cascade language: parsing, name resolution, shapes. */
#include <stdlib.h>

#include "../../src/spec/spec.h"
#include "test.h"

static Cascade *parse(const char *text) {
  Diag d = {0};
  Cascade *c = spec_parse("t.yaml", text, strlen(text), &d);
  if (!c)
    test_fail(__FILE__, __LINE__, "spec did not load: %d:%d: %s",
              d.loc.line, d.loc.col, d.msg);
  return c;
}

/* The error a spec gives: "LINE:COL: message". */
static void expect_error(const char *text, int line, int col,
                         const char *part) {
  Diag d = {0};
  Cascade *c = spec_parse("t.yaml", text, strlen(text), &d);
  if (c) {
    test_fail(__FILE__, __LINE__, "spec loaded, expected an error '%s'", part);
    cascade_free(c);
    return;
  }
  CHECK_INT(d.loc.line, line);
  CHECK_INT(d.loc.col, col);
  if (!strstr(d.msg, part))
    test_fail(__FILE__, __LINE__, "message '%s' lacks '%s'", d.msg, part);
}

static const Einsum *einsum_of(const Cascade *c, const char *out) {
  for (int i = 0; i < c->neinsums; i++)
    if (strcmp(c->tensors[c->einsums[i]->out.tensor].name, out) == 0)
      return c->einsums[i];
  return NULL;
}

TEST(spec_mamba1_loads_24_einsums) {
  Diag d = {0};
  Cascade *c = spec_load("specs/mamba1.yaml", &d);
  CHECK(c != NULL);
  if (!c)
    return;
  CHECK_INT(c->neinsums, 24);
  int gemms = 0;
  for (int i = 0; i < c->neinsums; i++)
    gemms += einsum_is_gemm(c, c->einsums[i]);
  CHECK_INT(gemms, 7);
  CHECK_STR(c->model, "mamba-370m");
  /* Outputs as declared; H and TTX carry initializations. */
  CHECK(c->tensors[cascade_tensor(c, "EY")].output);
  CHECK(c->tensors[cascade_tensor(c, "LEX")].output);
  CHECK(!c->tensors[cascade_tensor(c, "H")].output);
  CHECK(c->tensors[cascade_tensor(c, "H")].init != NULL);
  CHECK(c->tensors[cascade_tensor(c, "TTX")].init != NULL);
  cascade_free(c);
}

TEST(spec_mamba2_loads_32_einsums) {
  Diag d = {0};
  Cascade *c = spec_load("specs/mamba2.yaml", &d);
  CHECK(c != NULL);
  if (!c)
    return;
  CHECK_INT(c->neinsums, 32);
  int gemms = 0;
  for (int i = 0; i < c->neinsums; i++)
    gemms += einsum_is_gemm(c, c->einsums[i]);
  CHECK_INT(gemms, 6);
  cascade_free(c);
}

TEST(spec_transformer_8_einsums_6_gemms) {
  Diag d = {0};
  Cascade *c = spec_load("specs/transformer.yaml", &d);
  CHECK(c != NULL);
  if (!c)
    return;
  CHECK_INT(c->neinsums, 8);
  int gemms = 0;
  for (int i = 0; i < c->neinsums; i++)
    gemms += einsum_is_gemm(c, c->einsums[i]);
  CHECK_INT(gemms, 6);
  cascade_free(c);
}

/* The convolution's window index i+f-F+1 becomes two unit terms and an
 * offset; the recurrence's i-1 is a lag of one. */
TEST(spec_affine_indices) {
  Diag d = {0};
  Cascade *c = spec_load("specs/mamba1.yaml", &d);
  if (!c) {
    CHECK(c != NULL);
    return;
  }
  const Einsum *tx = einsum_of(c, "TX");
  const Access *ttx = NULL;
  for (int k = 0; k < tx->nreads; k++)
    if (tx->reads[k]->tensor == cascade_tensor(c, "TTX"))
      ttx = tx->reads[k];
  CHECK(ttx != NULL);
  if (ttx) {
    const Index *ix = &ttx->idx[1];
    CHECK_INT(ix->nterms, 2);
    CHECK(!ix->plain);
    CHECK_INT(ix->lag, 0);
    CHECK_STR(tx->vars[ix->var[0]].name, "i");
    CHECK_STR(tx->vars[ix->var[1]].name, "f");
    CHECK(ix->coef[0] == NULL && ix->coef[1] == NULL);
    Shape *s = shape_bind(c, preset_find("mamba-370m"), NULL, 0, true, &d);
    CHECK(s != NULL);
    if (s) {
      CHECK_NEAR(shape_eval(s, ix->off), -3, 0); /* 1 - F with F = 4 */
      CHECK(!index_injective(c, s, tx, ix));
      shape_free(s);
    }
  }
  const Einsum *hh = einsum_of(c, "HH");
  const Access *h = NULL;
  for (int k = 0; k < hh->nreads; k++)
    if (hh->reads[k]->tensor == cascade_tensor(c, "H"))
      h = hh->reads[k];
  CHECK(h != NULL);
  if (h) {
    CHECK_INT(h->idx[1].lag, 1);
    CHECK(h->idx[0].plain && h->idx[2].plain && h->idx[3].plain);
  }
  /* NUM's reduction is explicit, TTX's implicit. */
  CHECK(einsum_of(c, "NUM")->explicit_red);
  CHECK_INT(einsum_of(c, "NUM")->red, RED_SUM);
  CHECK(!einsum_of(c, "TTX")->explicit_red);
  cascade_free(c);
}

/* Mamba-2's split channel index Q*p+q is injective: it is not a window. */
TEST(spec_split_rank_index) {
  Diag d = {0};
  Cascade *c = spec_load("specs/mamba2.yaml", &d);
  if (!c) {
    CHECK(c != NULL);
    return;
  }
  const Einsum *tx = einsum_of(c, "TX");
  const Access *w = tx->reads[0];
  CHECK_INT(w->tensor, cascade_tensor(c, "WTX"));
  const Index *ix = &w->idx[0];
  CHECK_INT(ix->nterms, 2);
  CHECK(index_injective(c, NULL, tx, ix)); /* symbolically: Q*p + q */
  Shape *s = shape_bind(c, preset_find("mamba2-370m"), NULL, 0, true, &d);
  CHECK(s != NULL);
  if (s) {
    CHECK(index_injective(c, s, tx, ix));
    CHECK_INT(s->size[cascade_rank(c, "D")], 2048);
    CHECK_INT(s->size[cascade_rank(c, "P")], 32);
    CHECK_INT(s->size[cascade_rank(c, "Q")], 64);
    shape_free(s);
  }
  cascade_free(c);
}

TEST(spec_shape_binding_and_overrides) {
  Diag d = {0};
  Cascade *c = spec_load("specs/mamba1.yaml", &d);
  if (!c) {
    CHECK(c != NULL);
    return;
  }
  Shape *s = shape_bind(c, preset_find("mamba-2.8b"), NULL, 0, true, &d);
  CHECK(s != NULL);
  if (s) {
    CHECK_INT(s->size[cascade_rank(c, "ED")], 2560);
    CHECK_INT(s->size[cascade_rank(c, "D")], 5120);
    CHECK_INT(s->size[cascade_rank(c, "R")], 160);
    CHECK_INT(s->size[cascade_rank(c, "K")], 3);
    CHECK_INT(s->size[cascade_rank(c, "B")], 64);
    CHECK_INT(s->size[cascade_rank(c, "I")], 2048);
    CHECK(s->complete);
    shape_free(s);
  }
  /* --set overrides a rank and a model parameter; the last one wins. */
  Setting set[] = {{"I", 1}, {"d_model", 512}, {"I", 16}, {"eps", 0.5}};
  s = shape_bind(c, preset_find("mamba-130m"), set, 4, true, &d);
  CHECK(s != NULL);
  if (s) {
    CHECK_INT(s->size[cascade_rank(c, "I")], 16);
    CHECK_INT(s->size[cascade_rank(c, "ED")], 512);
    CHECK_INT(s->size[cascade_rank(c, "D")], 1536); /* d_inner unchanged */
    int eps = -1;
    for (int i = 0; i < c->nsyms; i++)
      if (strcmp(c->syms[i].name, "eps") == 0)
        eps = i;
    CHECK(eps >= 0);
    if (eps >= 0)
      CHECK_NEAR(s->sym[eps], 0.5, 0);
    shape_free(s);
  }
  /* Without a preset the model parameters are unknown. */
  Diag d2 = {0};
  s = shape_bind(c, NULL, NULL, 0, true, &d2);
  CHECK(s == NULL);
  CHECK(strstr(d2.msg, "unknown name 'd_model'") != NULL);
  cascade_free(c);
}

TEST(spec_teaal_loads_and_keeps_sections) {
  Diag d = {0};
  Cascade *c = spec_load("tests/specs/good/teaal_gemm.yaml", &d);
  CHECK(c != NULL);
  if (!c)
    return;
  CHECK_INT(c->neinsums, 2);
  CHECK(!c->has_shape);
  CHECK(cascade_section(c, "mapping") != NULL);
  CHECK(cascade_section(c, "format") != NULL);
  CHECK(cascade_section(c, "architecture") != NULL);
  CHECK(cascade_section(c, "bindings") != NULL);
  YamlNode *lo = ydoc_get(ydoc_get(cascade_section(c, "mapping"),
                                   "loop-order"), "T1");
  CHECK(lo && lo->kind == YN_SEQ && lo->n == 3);
  /* sum(K).(...) sums over k; the scalars a and b are symbols. */
  const Einsum *t1 = einsum_of(c, "T1");
  CHECK_INT(t1->nvars, 3);
  CHECK_INT(varset_count(einsum_reduced_vars(t1)), 1);
  CHECK(cascade_sym(c, "a", (Loc){0, 0}) >= 0);
  /* Unbound sizes: binding without `require` leaves them unknown. */
  Shape *s = shape_bind(c, NULL, NULL, 0, false, &d);
  CHECK(s != NULL);
  if (s) {
    CHECK(!s->complete);
    shape_free(s);
  }
  cascade_free(c);
}

TEST(spec_initialization_forms) {
  Cascade *c = parse("shape: {I: 8, N: 2}\n"
                     "einsum:\n"
                     "  declaration: {S0: [N], X: [I, N], S: [I, N]}\n"
                     "  expressions:\n"
                     "    - S[i<0, n] = S0[n]\n"
                     "    - S[i, n] = S[i-1, n] * 0.5 + X[i, n]\n");
  if (!c)
    return;
  CHECK_INT(c->neinsums, 1);
  const Tensor *s = &c->tensors[cascade_tensor(c, "S")];
  CHECK(s->init != NULL);
  if (s->init) {
    CHECK_INT(s->init->out.cond_dim, 0);
    CHECK_INT(s->init->id, -1);
  }
  /* The self-read is lagged: a recurrence, not a cycle. */
  CHECK_INT(c->nedges, 1);
  CHECK(c->edges[0].lagged);
  CHECK_INT(c->edges[0].producer, 0);
  CHECK_INT(c->edges[0].consumer, 0);
  cascade_free(c);
}

TEST(spec_errors_point_into_expressions) {
  /* Columns are those of the offending token inside the YAML scalar. */
  expect_error("einsum:\n"
               "  declaration: {A: [I], B: [I]}\n"
               "  expressions:\n"
               "    - B[i] = foo(A[i])\n",
               4, 14, "unknown function 'foo'");
  expect_error("einsum:\n"
               "  declaration: {A: [I], B: [I]}\n"
               "  expressions:\n"
               "    - \"B[i] = A[i] + Q[i]\"\n",
               4, 22, "unknown tensor 'Q'");
  expect_error("einsum:\n"
               "  declaration: {A: [I, J], B: [I]}\n"
               "  expressions:\n"
               "    - B[i] = A[i*j, j]\n",
               4, 17, "not affine");
  expect_error("einsum:\n"
               "  declaration: {A: [I], B: [I]}\n"
               "  expressions:\n"
               "    - B[i] = A[i]\n"
               "    - B[i] = A[i] * 2\n",
               5, 7, "duplicate output");
}

TEST(spec_cycle_without_lag_is_rejected) {
  expect_error("einsum:\n"
               "  declaration: {A: [I], B: [I], X: [I]}\n"
               "  expressions:\n"
               "    - A[i] = B[i] + X[i]\n"
               "    - B[i] = A[i] * 2\n",
               4, 14, "cycle through B");
}
