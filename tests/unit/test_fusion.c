/* test_fusion.c — pair classes, shared-input merging and the groups of
 * every strategy, for the paper's cascades and its worked example. */
#include <stdlib.h>

#include "../../src/fusion/fusion.h"
#include "../../src/report/report.h"
#include "../../src/workload/workload.h"
#include "classified.h"
#include "test.h"

/* "A B | C" : the groups of a plan, outputs in order. */
static char *groups_text(const Cascade *c, const Plan *p) {
  Buf b = {0};
  for (int g = 0; g < p->ngroups; g++) {
    if (g)
      buf_printf(&b, " | ");
    for (int i = 0; i < p->groups[g].n; i++)
      buf_printf(&b, "%s%s", i ? " " : "",
                 einsum_name(c, p->groups[g].einsums[i]));
  }
  return b.s;
}

static void check_groups(const Classified *l, Strategy st, Stitcher how,
                         const char *want) {
  Diag d = {0};
  Plan *p = fusion_plan(l->c, l->s, l->pairs, st, how, OBJ_TRAFFIC, &d);
  CHECK(p != NULL);
  if (!p)
    return;
  char *got = groups_text(l->c, p);
  if (strcmp(got, want) != 0)
    test_fail(__FILE__, __LINE__, "%s %s/%s:\n  got  %s\n  want %s",
              l->c->path, strategy_name(st), stitcher_name(how), got, want);
  free(got);
  plan_free(p);
}

/* Every edge of the Mamba-1 cascade, with its class (§III-C). */
TEST(fusion_mamba1_edge_classes) {
  Classified l = classified_load("specs/mamba1.yaml");
  if (!l.c)
    return;
  static const char *const want[][4] = {
      {"LEX", "PX", "LEX", "RI"},         {"PX", "NUM", "PX", "RI"},
      {"NUM", "MEX", "NUM", "RSb"},       {"MEX", "SQEX", "MEX", "RI"},
      {"LEX", "NEX", "LEX", "RI"},        {"SQEX", "NEX", "SQEX", "RSp"},
      {"NEX", "TTX", "NEX", "RSp"},       {"NEX", "RX", "NEX", "RSp"},
      {"TTX", "TX", "TTX", "RD"},         {"TX", "X", "TX", "RSb"},
      {"X", "TTDelta", "X", "RSp"},       {"X", "B", "X", "RSp"},
      {"X", "C", "X", "RSp"},             {"TTDelta", "TDelta", "TTDelta", "RD"},
      {"TDelta", "Delta", "TDelta", "RSb"}, {"Delta", "Abar", "Delta", "RSp"},
      {"Delta", "Bbar", "Delta", "RSp"},  {"B", "Bbar", "B", "RD"},
      {"Bbar", "HX", "Bbar", "RI"},       {"X", "HX", "X", "RSp"},
      {"Abar", "HH", "Abar", "RI"},       {"H", "HH", "H", "RI"},
      {"HX", "H", "HX", "RI"},            {"HH", "H", "HH", "RI"},
      {"C", "S6Y", "C", "RD"},            {"H", "S6Y", "H", "RI"},
      {"S6Y", "LY", "S6Y", "RSb"},        {"X", "LY", "X", "RI"},
      {"LY", "Y", "LY", "RI"},            {"RX", "Y", "RX", "RSb"},
      {"Y", "EY", "Y", "RSp"},
  };
  int n = (int)(sizeof want / sizeof want[0]);
  CHECK_INT(l.c->nedges, n);
  for (int i = 0; i < n; i++) {
    const char *got = pair_class(&l, want[i][0], want[i][1], want[i][2]);
    if (strcmp(got, want[i][3]) != 0)
      test_fail(__FILE__, __LINE__, "%s -> %s: %s, expected %s", want[i][0],
                want[i][1], got, want[i][3]);
  }
  /* The reduced and broadcast loops of the paper's RD example: TTDelta
   * reduces its d, TDelta broadcasts its own d. */
  for (int i = 0; i < l.c->nedges; i++) {
    const Edge *e = l.pairs[i].edge;
    if (strcmp(l.c->tensors[e->tensor].name, "TTDelta") == 0) {
      const Einsum *p = l.c->einsums[e->producer];
      const Einsum *q = l.c->einsums[e->consumer];
      CHECK_INT(varset_count(l.pairs[i].reduced), 1);
      CHECK_INT(varset_count(l.pairs[i].broadcast), 1);
      CHECK_STR(p->vars[__builtin_ctzll(l.pairs[i].reduced)].name, "d");
      CHECK_STR(q->vars[__builtin_ctzll(l.pairs[i].broadcast)].name, "d");
    }
    if (strcmp(l.c->tensors[e->tensor].name, "H") == 0 &&
        strcmp(einsum_name(l.c, e->consumer), "HH") == 0)
      CHECK(e->lagged);
    if (strcmp(l.c->tensors[e->tensor].name, "TTX") == 0)
      CHECK(e->windowed && !e->lagged);
  }
  classified_free(&l);
}

TEST(fusion_mamba1_merges) {
  Classified l = classified_load("specs/mamba1.yaml");
  if (!l.c)
    return;
  Nodes *m = fusion_merge(l.c, l.s);
  CHECK_INT(m->n, 19); /* the paper's three merges, and the recurrence */
  Buf b = {0};
  for (int k = 0; k < m->n; k++)
    if (m->nodes[k].n > 1) {
      node_label(&b, l.c, &m->nodes[k]);
      buf_printf(&b, ";");
    }
  CHECK_STR(b.s, "TTX+RX;TTDelta+B+C;Abar+Bbar;HH+H;");
  buf_free(&b);
  nodes_free(m);
  classified_free(&l);
}

/* Paper §IV: 24, 12, 8, 3 and 1 groups; unfused, HH and H (a recurrence:
 * HH reads H[i-1]) share one of 23. */
TEST(fusion_mamba1_groups) {
  Classified l = classified_load("specs/mamba1.yaml");
  if (!l.c)
    return;
  check_groups(&l, ST_UNFUSED, STITCH_GREEDY,
               "LEX | PX | NUM | MEX | SQEX | NEX | TTX | RX | TX | X | "
               "TTDelta | B | C | TDelta | Delta | Abar | Bbar | HX | HH H | "
               "S6Y | LY | Y | EY");
  check_groups(&l, ST_RI, STITCH_GREEDY,
               "LEX PX NUM | MEX SQEX | NEX | TTX RX | TX | X | TTDelta B C "
               "| TDelta | Delta | Abar Bbar HX HH H S6Y | LY Y | EY");
  check_groups(&l, ST_RI_RSB, STITCH_GREEDY,
               "LEX PX NUM MEX SQEX | NEX | TTX RX | TX X | TTDelta B C | "
               "TDelta Delta | Abar Bbar HX HH H S6Y LY Y | EY");
  check_groups(&l, ST_RI_RSB_RSP, STITCH_GREEDY,
               "LEX PX NUM MEX SQEX NEX TTX RX | TX X TTDelta B C | TDelta "
               "Delta Abar Bbar HX HH H S6Y LY Y EY");
  check_groups(&l, ST_FULL, STITCH_GREEDY,
               "LEX PX NUM MEX SQEX NEX TTX RX TX X TTDelta B C TDelta Delta "
               "Abar Bbar HX HH H S6Y LY Y EY");
  /* The exact search finds the same groups for Mamba-1. */
  check_groups(&l, ST_RI, STITCH_GLOBAL,
               "LEX PX NUM | MEX SQEX | NEX | TTX RX | TX | X | TTDelta B C "
               "| TDelta | Delta | Abar Bbar HX HH H S6Y | LY Y | EY");
  check_groups(&l, ST_RI_RSB_RSP, STITCH_GLOBAL,
               "LEX PX NUM MEX SQEX NEX TTX RX | TX X TTDelta B C | TDelta "
               "Delta Abar Bbar HX HH H S6Y LY Y EY");
  classified_free(&l);
}

TEST(fusion_mamba2_groups) {
  Classified l = classified_load("specs/mamba2.yaml");
  if (!l.c)
    return;
  check_groups(&l, ST_RI, STITCH_GREEDY,
               "LEX PX NUM | MEX SQEX | NEX | TX RX TB TC TDelta | TTX | TTB "
               "| TTC | X | B | C | Delta Abar | Bbar | HX HH H S6Y | LY "
               "LLY PLLY PLLYNUM | MLLY SQLLY | NLLY | EY");
  check_groups(&l, ST_RI_RSB, STITCH_GREEDY,
               "LEX PX NUM MEX SQEX | NEX | TX RX TB TC TDelta | TTX | TTB | "
               "TTC | X | B | C | Delta Abar | Bbar | HX HH H S6Y LY LLY "
               "PLLY PLLYNUM MLLY SQLLY | NLLY | EY");
  check_groups(&l, ST_RI_RSB_RSP, STITCH_GREEDY,
               "LEX PX NUM MEX SQEX NEX TX RX TB TC TDelta | TTX | TTB | TTC "
               "| X | B | C | Delta Abar Bbar HX HH H S6Y LY LLY PLLY PLLYNUM "
               "MLLY SQLLY NLLY EY");
  check_groups(&l, ST_FULL, STITCH_GREEDY,
               "LEX PX NUM MEX SQEX NEX TX RX TB TC TDelta TTX TTB TTC X B C "
               "Delta Abar Bbar HX HH H S6Y LY LLY PLLY PLLYNUM MLLY SQLLY "
               "NLLY EY");
  /* The exact search is not bound to connected groups: the three
   * convolutions, written one after another, share a group. */
  check_groups(&l, ST_RI_RSB_RSP, STITCH_GLOBAL,
               "LEX PX NUM MEX SQEX NEX TX RX TB TC TDelta | TTX TTB TTC X B "
               "C Delta Abar Bbar HX HH H S6Y LY LLY PLLY PLLYNUM MLLY SQLLY "
               "NLLY EY");
  classified_free(&l);
}

/* Global stitching never moves more intermediate data than greedy, and
 * on Mamba-2 it needs fewer groups for as much (ri) or moves about half
 * (ri+rsb+rsp: 1.28 G elements against 2.49 G). */
TEST(fusion_global_beats_greedy) {
  Classified l = classified_load("specs/mamba2.yaml");
  if (!l.c)
    return;
  for (int st = ST_RI; st < ST_FULL; st++) {
    Diag d = {0};
    Plan *g = fusion_plan(l.c, l.s, l.pairs, (Strategy)st, STITCH_GREEDY,
                          OBJ_TRAFFIC, &d);
    Plan *x = fusion_plan(l.c, l.s, l.pairs, (Strategy)st, STITCH_GLOBAL,
                          OBJ_TRAFFIC, &d);
    CHECK(x->offchip_elems <= g->offchip_elems);
    CHECK(x->ngroups <= g->ngroups);
    if (st == ST_RI) {
      CHECK_INT(g->ngroups, 17);
      CHECK_INT(x->ngroups, 12);
      CHECK(x->offchip_elems == g->offchip_elems);
    }
    if (st == ST_RI_RSB_RSP)
      CHECK(x->offchip_elems * 1.9 < g->offchip_elems);
    plan_free(g);
    plan_free(x);
  }
  classified_free(&l);

  Classified s = classified_load("tests/specs/good/global_beats_greedy.yaml");
  if (!s.c)
    return;
  check_groups(&s, ST_RI_RSB_RSP, STITCH_GREEDY, "A B | C");
  check_groups(&s, ST_RI_RSB_RSP, STITCH_GLOBAL, "A | B C");
  Diag d = {0};
  Plan *g = fusion_plan(s.c, s.s, s.pairs, ST_RI_RSB_RSP, STITCH_GREEDY,
                        OBJ_TRAFFIC, &d);
  Plan *x = fusion_plan(s.c, s.s, s.pairs, ST_RI_RSB_RSP, STITCH_GLOBAL,
                        OBJ_TRAFFIC, &d);
  CHECK_NEAR(g->offchip_elems, 40000, 0); /* A and B: written, read */
  CHECK_NEAR(x->offchip_elems, 20000, 0); /* A only */
  plan_free(g);
  plan_free(x);
  classified_free(&s);
}

/* The paper's worked example (§III-E): Algorithm 1 as printed forms
 * {E1, E2, E3} and {E4, E5}. */
TEST(fusion_algorithm1_worked_example) {
  Classified l = classified_load("tests/specs/good/alg1_example.yaml");
  if (!l.c)
    return;
  check_groups(&l, ST_RI_RSB_RSP, STITCH_ALG1, "Z Y X | V U");
  check_groups(&l, ST_RI, STITCH_ALG1, "Z Y | X V | U");
  check_groups(&l, ST_FULL, STITCH_ALG1, "Z Y X V U");
  /* Pairwise, E1 -> E2 is RD (E1 reduces k, E2 broadcasts p). */
  CHECK_STR(pair_class(&l, "Z", "Y", "Z"), "RD");
  CHECK_STR(pair_class(&l, "Y", "X", "Y"), "RSp");
  CHECK_STR(pair_class(&l, "X", "V", "X"), "RSb");
  CHECK_STR(pair_class(&l, "V", "U", "V"), "RSb");
  classified_free(&l);
}

TEST(fusion_transformer) {
  Classified l = classified_load("specs/transformer.yaml");
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "Q", "QK", "Q"), "RD");
  CHECK_STR(pair_class(&l, "QK", "GM", "QK"), "RSb");
  CHECK_STR(pair_class(&l, "QK", "SN", "QK"), "RSb");
  CHECK_STR(pair_class(&l, "GM", "SN", "GM"), "RD");
  CHECK_STR(pair_class(&l, "SN", "SD", "SN"), "RI");
  CHECK_STR(pair_class(&l, "SN", "AV", "SN"), "RSp");
  CHECK_STR(pair_class(&l, "SD", "AV", "SD"), "RD");
  check_groups(&l, ST_RI_RSB_RSP, STITCH_GREEDY,
               "Q K V | QK GM | SN SD | AV | Z");
  check_groups(&l, ST_FULL, STITCH_GREEDY, "Q K V QK GM SN SD AV Z");
  classified_free(&l);
}

TEST(fusion_teaal_spec_classifies) {
  Classified l = classified_load("tests/specs/good/teaal_gemm.yaml");
  if (!l.c)
    return;
  CHECK_INT(l.c->nedges, 1);
  CHECK_STR(pair_class(&l, "T1", "Z", "T1"), "RSb");
  check_groups(&l, ST_RI, STITCH_GREEDY, "T1 | Z");
  check_groups(&l, ST_RI_RSB, STITCH_GREEDY, "T1 Z");
  classified_free(&l);
  Classified v = classified_load("tests/specs/good/teaal_conv.yaml");
  if (!v.c)
    return;
  CHECK_STR(pair_class(&v, "O", "G", "O"), "RSb");
  classified_free(&v);
}

TEST(fusion_plan_onchip_tensors) {
  Classified l = classified_load("specs/mamba1.yaml");
  if (!l.c)
    return;
  Diag d = {0};
  Plan *p = fusion_plan(l.c, l.s, l.pairs, ST_RI_RSB_RSP, STITCH_GREEDY,
                        OBJ_TRAFFIC, &d);
  /* Inside groups: on chip. Across: X, RX, TTX, TTDelta, B, C. */
  CHECK(p->onchip[cascade_tensor(l.c, "NEX")]);
  CHECK(p->onchip[cascade_tensor(l.c, "H")]);
  CHECK(!p->onchip[cascade_tensor(l.c, "X")]);
  CHECK(!p->onchip[cascade_tensor(l.c, "RX")]);
  CHECK(!p->onchip[cascade_tensor(l.c, "TTX")]);
  CHECK(!p->onchip[cascade_tensor(l.c, "EY")]);  /* an output */
  CHECK(!p->onchip[cascade_tensor(l.c, "LEX")]); /* an output */
  plan_free(p);
  classified_free(&l);
}

/* A rank read only at a constant index: the consumer does not iterate it.
 *
 *   S[b,i,d] = S[b,i-1,d] / 2 + X[b,i,d]   IS(S) = {b:B, i:I, d:D}
 *   F[b,d]   = S[b,I-1,d]                  IS(F) = {b:B, d:D}
 *
 * Through S, F's b and d match S's b and d; S's i has no loop of F to
 * match (F reads coordinate I only at I-1, the last step): IS(S) is a
 * proper superset of IS(F), so S -> F is RSb (not RI, as a reading that
 * ignored constant coordinates would say). With a broadcast beside it,
 *
 *   G[b,d,e] = S[b,I-1,d] * W[e]          IS(G) = {b, d, e:E}
 *
 * S has i that G lacks and G has e that S lacks: RD. The attention
 * output of FuseMax's 1-pass cascade, after the recurrences RNV[m1,f,p]
 * (numerator) and RDEN[m1,p] (denominator),
 *
 *   A[f,p] = RNV[M1-1,f,p] / RDEN[M1-1,p]  IS(A) = {f:F, p:P}
 *
 * IS(RNV) = {m1, f, p} is a proper superset of IS(A): RSb; IS(RDEN) =
 * {m1, p} has m1 that A lacks and A has f that RDEN lacks: RD. */
TEST(fusion_constant_index_read) {
  Classified l = classified_parse(
      "shape: {B: 2, I: 5, D: 3, E: 4, M1: 3, F: 2, P: 4}\n"
      "einsum:\n"
      "  declaration: {X: [B, I, D], S: [B, I, D], F: [B, D], W: [E], "
      "G: [B, D, E], SV: [M1, F, P], SD: [M1, P], RNV: [M1, F, P], "
      "RDEN: [M1, P], A: [F, P]}\n"
      "  expressions:\n"
      "    - S[b,i,d] = S[b,i-1,d] / 2 + X[b,i,d]\n"
      "    - F[b,d] = S[b,I-1,d]\n"
      "    - G[b,d,e] = S[b,I-1,d] * W[e]\n"
      "    - RNV[m1,f,p] = RNV[m1-1,f,p] / 2 + SV[m1,f,p]\n"
      "    - RDEN[m1,p] = RDEN[m1-1,p] / 2 + SD[m1,p]\n"
      "    - A[f,p] = RNV[M1-1,f,p] / RDEN[M1-1,p]\n");
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "S", "F", "S"), "RSb");
  CHECK_STR(pair_class(&l, "S", "G", "S"), "RD");
  CHECK_STR(pair_class(&l, "RNV", "A", "RNV"), "RSb");
  CHECK_STR(pair_class(&l, "RDEN", "A", "RDEN"), "RD");
  /* The recurrence itself reads S[b,i-1,d]: every coordinate iterated. */
  CHECK_STR(pair_class(&l, "S", "S", "S"), "RI");
  /* S -> F: the producer's unmatched loop is i. */
  for (int i = 0; i < l.c->nedges; i++)
    if (strcmp(einsum_name(l.c, l.pairs[i].edge->consumer), "F") == 0) {
      const Einsum *p = l.c->einsums[l.pairs[i].edge->producer];
      CHECK_INT(varset_count(l.pairs[i].reduced), 1);
      if (varset_count(l.pairs[i].reduced) == 1)
        CHECK_STR(p->vars[__builtin_ctzll(l.pairs[i].reduced)].name, "i");
      CHECK_INT(l.pairs[i].broadcast, 0);
    }
  classified_free(&l);
}

/* A tensor read twice through different variables: the consumer's space
 * is a superset of the producer's.
 *
 *   ACS[c,l] = ACS[c,l-1] + A[c,l]         IS(ACS) = {c:C, l:L}
 *   SEG[c,l,s] = exp(ACS[c,l] - ACS[c,s])  IS(SEG) = {c:C, l:L, s:S}, S: L
 *
 * The read ACS[c,l] leaves s out and reuses each element over s; the read
 * ACS[c,s] leaves l out and reuses it over l: SEG iterates a second loop
 * over the same rank that ACS does not, IS(ACS) is a proper subset of
 * IS(SEG), and nothing is reduced: RSp (Mamba-2's chunked segment sum;
 * counting the reads' variables together would call it RI). Two reads
 * through the same variables reuse nothing:
 *
 *   SQ[c,l] = ACS[c,l] * ACS[c,l]          IS(SQ) = {c, l} = IS(ACS): RI
 *
 * and a read at a fixed point beside a plain one reuses that element over
 * every l:
 *
 *   DF[c,l] = ACS[c,l] - ACS[c,0]          ACS[c,0] leaves l out: RSp */
TEST(fusion_repeated_read) {
  Classified l = classified_parse("shape: {C: 2, L: 4, S: L}\n"
                       "einsum:\n"
                       "  declaration: {A: [C, L], ACS: [C, L], "
                       "SEG: [C, L, S], SQ: [C, L], DF: [C, L]}\n"
                       "  expressions:\n"
                       "    - ACS[c,l] = ACS[c,l-1] + A[c,l]\n"
                       "    - SEG[c,l,s] = exp(ACS[c,l] - ACS[c,s])\n"
                       "    - SQ[c,l] = ACS[c,l] * ACS[c,l]\n"
                       "    - DF[c,l] = ACS[c,l] - ACS[c,0]\n");
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "ACS", "SEG", "ACS"), "RSp");
  CHECK_STR(pair_class(&l, "ACS", "SQ", "ACS"), "RI");
  CHECK_STR(pair_class(&l, "ACS", "DF", "ACS"), "RSp");
  for (int i = 0; i < l.c->nedges; i++)
    if (strcmp(einsum_name(l.c, l.pairs[i].edge->consumer), "SEG") == 0) {
      CHECK_INT(l.pairs[i].reduced, 0);
      CHECK_INT(varset_count(l.pairs[i].broadcast), 2); /* l and s */
    }
  classified_free(&l);
}
