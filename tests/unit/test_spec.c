/* test_spec.c — the cascade language: parsing, name resolution, shapes. */
#include <stdlib.h>

#include "../../src/workload/workload.h"
#include "../../src/preset/preset.h"
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

/* The paper's 8 Einsums and the row maximum of a safe softmax. */
TEST(spec_transformer_9_einsums_6_gemms) {
  Diag d = {0};
  Cascade *c = spec_load("specs/transformer.yaml", &d);
  CHECK(c != NULL);
  if (!c)
    return;
  CHECK_INT(c->neinsums, 9);
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
    Shape *s = shape_bind(c, preset_sizes("mamba-370m"), NULL, 0, true, &d);
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
  Shape *s = shape_bind(c, preset_sizes("mamba2-370m"), NULL, 0, true, &d);
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
  Shape *s = shape_bind(c, preset_sizes("mamba-2.8b"), NULL, 0, true, &d);
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
  s = shape_bind(c, preset_sizes("mamba-130m"), set, 4, true, &d);
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
  Spec *sp = spec_open("tests/specs/good/teaal_gemm.yaml", &d);
  CHECK(sp != NULL);
  if (!sp)
    return;
  Cascade *c = sp->cascade;
  CHECK_INT(c->neinsums, 2);
  CHECK(!c->has_shape);
  CHECK(spec_section(sp, "mapping") != NULL);
  CHECK(spec_section(sp, "format") != NULL);
  CHECK(spec_section(sp, "architecture") != NULL);
  CHECK(spec_section(sp, "bindings") != NULL);
  CHECK(spec_section(sp, "einsum") == NULL); /* the cascade's own */
  YamlNode *lo = ydoc_get(ydoc_get(spec_section(sp, "mapping"),
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
  spec_close(sp);
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

/* Comparisons bind looser than + and *, where() takes three operands, and
 * inf is a number (-inf folds to one). */
TEST(spec_comparisons_where_inf) {
  Cascade *c = parse("einsum:\n  declaration: {X: [I], W: [I], Y: [I], "
                     "Z: [I]}\n  expressions:\n"
                     "    - Y[i] = where(X[i] + 1 <= 2 * W[i], X[i], -inf)\n"
                     "    - Z[i] = (X[i] == W[i]) + (X[i] != 1) - (X[i] > 0) "
                     "* (X[i] >= W[i]) + (X[i] < inf)\n");
  if (!c)
    return;
  const Expr *y = einsum_of(c, "Y")->rhs;
  CHECK(expr_is(y, OP_WHERE));
  CHECK(expr_is(y->a, OP_LE));
  CHECK(expr_is(y->a->a, OP_ADD) && expr_is(y->a->b, OP_MUL));
  CHECK(y->b->kind == EX_READ);
  CHECK(y->c->kind == EX_NUM && isinf(y->c->num) && y->c->num < 0);
  const Expr *z = einsum_of(c, "Z")->rhs; /* ((EQ + NE) - GT*GE) + LT */
  CHECK(expr_is(z, OP_ADD) && expr_is(z->b, OP_LT));
  CHECK(expr_is(z->a, OP_SUB) && expr_is(z->a->b, OP_MUL));
  CHECK(expr_is(z->a->b->a, OP_GT) && expr_is(z->a->b->b, OP_GE));
  CHECK(expr_is(z->a->a->a, OP_EQ) && expr_is(z->a->a->b, OP_NE));
  CHECK(isinf(z->b->b->num) && z->b->b->num > 0);
  cascade_free(c);
}

/* An index variable is a value where it is written as one: the causal
 * mask j <= i compares the positions. */
TEST(spec_index_variables_as_values) {
  Cascade *c = parse("einsum:\n  declaration: {S: [I, J], M: [I, J]}\n"
                     "  expressions:\n"
                     "    - M[i,j] = where(j <= i, S[i,j], 0) + i - 2*j\n");
  if (!c)
    return;
  const Einsum *m = einsum_of(c, "M");
  const Expr *w = m->rhs->a->a; /* ((where + i) - 2*j) */
  CHECK(expr_is(w, OP_WHERE));
  CHECK(w->a->a->kind == EX_VAR && w->a->b->kind == EX_VAR);
  CHECK_STR(m->vars[w->a->a->var].name, "j");
  CHECK_STR(m->vars[w->a->b->var].name, "i");
  CHECK(m->rhs->a->b->kind == EX_VAR);
  CHECK(expr_varies(m->rhs->b) && !expr_varies(m->rhs->b->a));
  CHECK_INT(expr_vars(m->rhs), 3); /* i and j */
  CHECK_INT(c->nsyms, 0);          /* no symbol named i or j */
  cascade_free(c);
}

/* Window variables named after a rank the shape section declares: the
 * max-pool's u and v range over U and V, without a dummy filter tensor. */
TEST(spec_window_variables) {
  Cascade *c = parse("shape: {C: 3, Y: 2, X: 2, H: 2*Y, W: 2*X, U: 2, "
                     "V: 2}\n"
                     "einsum:\n  declaration: {R: [C, H, W], P: [C, Y, X]}\n"
                     "  expressions:\n"
                     "    - \"P[c,y,x] = R[c, 2*y+u, 2*x+v] :: max(u,v)\"\n");
  if (!c)
    return;
  const Einsum *p = einsum_of(c, "P");
  CHECK_INT(p->nvars, 5);
  CHECK_STR(p->vars[3].name, "u");
  CHECK_STR(c->ranks[p->vars[3].rank].name, "U");
  CHECK_STR(c->ranks[p->vars[4].rank].name, "V");
  CHECK(c->ranks[cascade_rank(c, "U")].window);
  CHECK(!c->ranks[cascade_rank(c, "H")].window);
  CHECK_INT(p->red, RED_MAX);
  cascade_free(c);
  /* A window variable needs its rank; a window rank needs a variable. */
  expect_error("einsum:\n  declaration: {R: [H], P: [Y]}\n  expressions:\n"
               "    - P[y] = R[2*y+u]\n",
               4, 20, "undeclared rank variable 'u'");
  expect_error("shape: {U: 2, Z: 2, Y: 3, H: 6}\n"
               "einsum:\n  declaration: {R: [H], P: [Y]}\n  expressions:\n"
               "    - P[y] = R[2*y+u]\n",
               1, 15, "undeclared rank 'Z' in shape");
}

/* `J: I` makes J another name of I: tensors over J are over I, so a
 * variable may index both; --set may not give J a size of its own. */
TEST(spec_rank_aliases) {
  const char *text = "shape: {I: 5, J: I, E: 2}\n"
                     "einsum:\n  declaration: {X: [I, E], K: [J, E], "
                     "S: [I, J]}\n  expressions:\n"
                     "    - K[j,e] = X[j,e]\n"
                     "    - S[i,j] = X[i,e] * K[j,e]\n";
  Cascade *c = parse(text);
  if (!c)
    return;
  int I = cascade_rank(c, "I"), J = cascade_rank(c, "J");
  CHECK_INT(c->ranks[J].same_as, I);
  CHECK_INT(c->ranks[I].same_as, -1);
  const Tensor *k = &c->tensors[cascade_tensor(c, "K")];
  CHECK_INT(k->ranks[0], I);
  Diag d = {0};
  Setting set[] = {{"I", 7}};
  Shape *s = shape_bind(c, NULL, set, 1, true, &d);
  CHECK(s != NULL);
  if (s) {
    CHECK_INT(s->size[I], 7);
    CHECK_INT(s->size[J], 7);
    shape_free(s);
  }
  Setting bad[] = {{"J", 3}};
  s = shape_bind(c, NULL, bad, 1, true, &d);
  CHECK(s == NULL);
  CHECK_INT(d.loc.line, 1);
  CHECK_INT(d.loc.col, 18);
  CHECK(strstr(d.msg, "rank J is another name of I (size 5), but is given "
                      "size 3: set I instead") != NULL);
  shape_free(s);
  cascade_free(c);
}

/* A function around a summed product: refused, with the two ways out. */
TEST(spec_function_around_a_summed_product) {
  const char *head = "einsum:\n  declaration: {Q: [I, E], K: [J, E], "
                     "S: [I, J], W: [E], Y: [I]}\n  expressions:\n    - ";
  struct {
    const char *expr;
    int col; /* 0: accepted */
  } cases[] = {
      {"S[i,j] = exp(Q[i,e] * K[j,e])", 16},
      {"S[i,j] = 1 / (Q[i,e] * K[j,e])", 18},
      {"S[i,j] = max(Q[i,e] * K[j,e], 0)", 16},
      {"S[i,j] = where(Q[i,e] > 0, Q[i,e] * K[j,e], 0)", 16},
      /* the sum is meant: said with :: sum */
      {"\"S[i,j] = exp(Q[i,e] * K[j,e]) :: sum(e)\"", 0},
      /* linear around the contraction, or no contraction inside */
      {"S[i,j] = Q[i,e] * K[j,e] / 2 - Q[i,e] * K[j,e]", 0},
      {"Y[i] = exp(Q[i,e]) * W[e]", 0},
      {"Y[i] = exp(2 * Q[i,e])", 0},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char text[512];
    snprintf(text, sizeof text, "%s%s\n", head, cases[k].expr);
    if (cases[k].col) {
      expect_error(text, 4, cases[k].col, "wraps a product summed over 'e'");
    } else {
      Cascade *c = parse(text);
      cascade_free(c);
    }
  }
}
