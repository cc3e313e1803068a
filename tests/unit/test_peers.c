/* test_peers.c — the peers' formats (docs/compat.md): a workload written
 * in AccelForge's, Timeloop's or TeAAL's published format loads into the
 * same cascade as a spec of ours written by hand for the same computation:
 * the same Einsums (outputs, reads, iteration spaces, reductions), the
 * same tensor sizes, the same class for every producer->consumer pair. */
#include <stdlib.h>
#include <string.h>

#include "../../src/fusion/fusion.h"
#include "../../src/workload/peer.h"
#include "../../src/workload/workload.h"
#include "test.h"

typedef struct Loaded {
  Cascade *c;
  Shape *s;
  Pair *pairs;
} Loaded;

/* Load PATH; ranks without a size (TeAAL's) get 6. */
static Loaded load(const char *path) {
  Diag d = {0};
  Loaded l = {.c = spec_load(path, &d)};
  Setting none[1] = {{"", 0}};
  if (l.c)
    l.s = shape_bind_filled(l.c, NULL, none, 0, 6, &d);
  if (!l.s) {
    test_fail(__FILE__, __LINE__, "%s:%d:%d: %s", path, d.loc.line,
              d.loc.col, d.msg);
    return l;
  }
  l.pairs = fusion_classify(l.c, l.s);
  return l;
}

static void unload(Loaded *l) {
  free(l->pairs);
  shape_free(l->s);
  cascade_free(l->c);
}

static const char *out_name(const Cascade *c, int e) {
  return c->tensors[c->einsums[e]->out.tensor].name;
}

static void same_einsum(const Loaded *a, const Loaded *b, int i) {
  const Einsum *x = a->c->einsums[i], *y = b->c->einsums[i];
  CHECK_STR(out_name(a->c, i), out_name(b->c, i));
  CHECK_INT(shape_einsum_points(a->s, x), shape_einsum_points(b->s, y));
  CHECK_INT(varset_count(einsum_reduced_vars(x)),
            varset_count(einsum_reduced_vars(y)));
  CHECK_INT(einsum_is_gemm(a->c, x), einsum_is_gemm(b->c, y));
  CHECK_INT(x->nreads, y->nreads);
  for (int k = 0; k < x->nreads && k < y->nreads; k++) {
    int tx = x->reads[k]->tensor, ty = y->reads[k]->tensor;
    CHECK_STR(a->c->tensors[tx].name, b->c->tensors[ty].name);
    CHECK_INT(shape_tensor_elems(a->s, tx), shape_tensor_elems(b->s, ty));
  }
}

/* PEER and REF hold the same computation. */
static void check_same(const char *peer, const char *ref, int einsums,
                       int pairs) {
  Loaded a = load(peer), b = load(ref);
  if (a.s && b.s) {
    CHECK_INT(a.c->neinsums, einsums);
    CHECK_INT(b.c->neinsums, einsums);
    CHECK_INT(a.c->ntensors, b.c->ntensors);
    CHECK_INT(a.c->nedges, pairs);
    CHECK_INT(b.c->nedges, pairs);
    for (int i = 0; i < einsums && i < a.c->neinsums && i < b.c->neinsums;
         i++)
      same_einsum(&a, &b, i);
    for (int i = 0; i < pairs && i < a.c->nedges && i < b.c->nedges; i++) {
      const Edge *x = a.pairs[i].edge, *y = b.pairs[i].edge;
      CHECK_STR(out_name(a.c, x->producer), out_name(b.c, y->producer));
      CHECK_STR(out_name(a.c, x->consumer), out_name(b.c, y->consumer));
      CHECK_STR(fusion_class_name(a.pairs[i].cls),
                fusion_class_name(b.pairs[i].cls));
    }
  }
  unload(&a);
  unload(&b);
}

TEST(peers_accelforge_template_equals_hand_written) {
  check_same("tests/specs/peers/accelforge/block.yaml",
             "tests/specs/peers/accelforge/block_ref.yaml", 13, 15);
}

TEST(peers_accelforge_sizes_derived_and_evaluated) {
  Loaded l = load("tests/specs/peers/accelforge/block.yaml");
  if (!l.s)
    return;
  /* T, X's derived rank: 2(M-1) + 3; MC = ceil(16/3); P is M. */
  CHECK_INT(shape_tensor_elems(l.s, cascade_tensor(l.c, "X")), 2 * 33 * 16);
  CHECK_INT(shape_tensor_elems(l.s, cascade_tensor(l.c, "Pool")), 2 * 6 * 16);
  CHECK_INT(shape_tensor_elems(l.s, cascade_tensor(l.c, "QK")),
            2 * 16 * 16 * 2);
  CHECK_INT(l.s->size[cascade_rank(l.c, "M")], 16);
  unload(&l);
}

TEST(peers_accelforge_variables_from_settings) {
  Setting set[] = {{"BATCH_SIZE", 4}, {"N_TOKENS", 8}};
  SpecLoad o = {.sets = set, .nsets = 2};
  Diag d = {0};
  Cascade *c = spec_load_with("tests/specs/peers/accelforge/block.yaml", &o,
                              &d);
  CHECK(c != NULL);
  if (!c)
    return;
  Shape *s = shape_bind(c, NULL, set, 2, true, &d);
  CHECK(s != NULL);
  if (s) { /* B = 4, M = 8: X is [4, 2*7+3, 16], MC = ceil(8/3) = 3 */
    CHECK_INT(shape_tensor_elems(s, cascade_tensor(c, "X")), 4 * 17 * 16);
    CHECK_INT(shape_tensor_elems(s, cascade_tensor(c, "Pool")), 4 * 3 * 16);
    CHECK(cascade_param(c, "BATCH_SIZE") >= 0);
  }
  shape_free(s);
  cascade_free(c);
}

/* AccelForge's MoE scatter and gather as the even split (docs/compat.md):
 * M = 8 tokens, 4 experts of XT = 4 slots, top-2: S = 16 slots, K = 2
 * copies of each token, U = 2 experts tried per copy by the gather;
 * G = J = 16, C = 8. The experts run over the slots, not M x X. */
TEST(peers_accelforge_moe_even_split) {
  Loaded l = load("tests/specs/peers/accelforge/moe.yaml");
  if (!l.s)
    return;
  CHECK_INT(l.c->neinsums, 6);
  CHECK_INT(l.c->nedges, 6);
  if (l.c->neinsums == 6) {
    const Einsum *scatter = l.c->einsums[0], *gate = l.c->einsums[1],
                 *gather = l.c->einsums[5];
    CHECK_STR(out_name(l.c, 0), "Z_per_expert");
    CHECK_INT(shape_einsum_points(l.s, scatter), 2 * 16 * 16);
    CHECK_INT(varset_count(einsum_reduced_vars(scatter)), 1); /* route */
    CHECK_INT(shape_einsum_points(l.s, gate), 16 * 16 * 8);
    CHECK_STR(out_name(l.c, 5), "FFB");
    CHECK_INT(shape_einsum_points(l.s, gather), 2 * 2 * 8 * 16);
    CHECK_INT(varset_count(einsum_reduced_vars(gather)), 2); /* xoff, route */
  }
  CHECK_INT(shape_tensor_elems(l.s, cascade_tensor(l.c, "Z_per_expert")),
            16 * 16);
  CHECK_INT(shape_tensor_elems(l.s, cascade_tensor(l.c, "FFB")), 8 * 16);
  unload(&l);
}

TEST(peers_timeloop_problem_equals_hand_written) {
  check_same("tests/specs/peers/timeloop/conv.yaml",
             "tests/specs/peers/timeloop/conv_ref.yaml", 1, 0);
  Loaded l = load("tests/specs/peers/timeloop/conv.yaml");
  if (l.s) /* Inputs: N C (R + 2(P-1)) (S + Q-1) */
    CHECK_INT(shape_tensor_elems(l.s, cascade_tensor(l.c, "Inputs")),
              1 * 3 * 113 * 58);
  unload(&l);
}

TEST(peers_teaal_take_equals_where) {
  check_same("tests/specs/peers/teaal/gamma.yaml",
             "tests/specs/peers/teaal/gamma_ref.yaml", 2, 1);
  Loaded l = load("tests/specs/peers/teaal/gamma.yaml");
  if (l.c) { /* take(A, B, 1) is where(A, B, 0): both read */
    const Einsum *t = l.c->einsums[0];
    CHECK_INT(t->nreads, 2);
    CHECK(expr_is(t->rhs, OP_WHERE));
    CHECK(t->rhs->a->kind == EX_READ &&
          strcmp(l.c->tensors[t->rhs->a->acc->tensor].name, "A") == 0);
    CHECK(t->rhs->b->kind == EX_READ &&
          strcmp(l.c->tensors[t->rhs->b->acc->tensor].name, "B") == 0);
  }
  unload(&l);
}

TEST(peers_formats_told_apart) {
  CHECK_INT(spec_format("einsum:\n  declaration: {}\n", 30), SPEC_NATIVE);
  CHECK_INT(spec_format("# c\nworkload:\n", 13), SPEC_ACCELFORGE);
  CHECK_INT(spec_format("renames: {}\nworkload:\n", 22), SPEC_ACCELFORGE);
  CHECK_INT(spec_format("{% set X = 1 %}\n", 16), SPEC_ACCELFORGE);
  CHECK_INT(spec_format("problem:\n  shape: {}\n", 21), SPEC_TIMELOOP);
}

/* An AccelForge file's structure is checked by ydoc.h, in the words of
 * every other loader: an unknown key with the keys expected, a value of
 * the wrong kind with the one expected and the one found. */
static void af_refused(const char *text, int line, int col, const char *msg) {
  Diag d = {0};
  Cascade *c = spec_parse_peer(SPEC_ACCELFORGE, "af.yaml", text, strlen(text),
                               NULL, &d);
  CHECK(c == NULL);
  cascade_free(c);
  CHECK_STR(d.file, "af.yaml");
  CHECK_INT(d.loc.line, line);
  CHECK_INT(d.loc.col, col);
  CHECK_STR(d.msg, msg);
}

TEST(peers_accelforge_refusals_in_one_wording) {
  af_refused("workload:\n  rank_sizes: {M: 4}\n  einsums:\n"
             "    - einsum: \"Z[m] = A[m]\"\n      bogus: 1\n",
             5, 7,
             "unknown key 'bogus' in an Einsum (expected einsum, name, "
             "tensor_accesses, is_copy_operation, renames, "
             "iteration_space_shape, shape, rank_sizes or n_instances)");
  af_refused("workload:\n  rank_sizes: [1]\n  einsums: []\n", 2, 15,
             "expected a mapping for rank_sizes (RANK: size), found a list");
  af_refused("- workload\n", 1, 1,
             "expected a mapping for the top level (workload:), found a "
             "list");
  af_refused("workload:\n  einsum: []\n", 2, 3,
             "unknown key 'einsum' in workload (did you mean 'einsums'? "
             "expected version, rank_sizes, iteration_space_shape, shape, "
             "einsums, bits_per_value, persistent_tensors or n_instances)");
}
