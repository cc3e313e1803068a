/* test_literature.c — the cascades from the literature under specs/
 * (FuseMax's attention in 3 passes and 1, a pre-LN Transformer block for
 * prefill and for decode with a KV cache, Gated DeltaNet, Mamba-2's
 * chunked SSD, a CNN layer): the classes of their pairs, derived by hand
 * from the iteration spaces (docs/fusion.md, section 1), their group
 * counts under every strategy and stitcher (docs/fusion.md, "Counts"), and
 * the ordering that lagged reads from outside a recurrence impose on
 * shared-input merging. That every plan of each runs, computes what the
 * interpreter computes and moves what the model prices is
 * test_invariants.c's. */
#include "../../src/fusion/fusion.h"
#include "../../src/report/report.h"
#include "../../src/workload/workload.h"
#include "classified.h"
#include "test.h"

/* "RI RSb RSp RD" counts, e.g. "2 2 1 2". */
static void check_counts(const Classified *l, const char *want) {
  int n[FC_COUNT] = {0};
  for (int i = 0; i < l->c->nedges; i++)
    n[l->pairs[i].cls]++;
  char got[64];
  snprintf(got, sizeof got, "%d %d %d %d", n[FC_RI], n[FC_RSB], n[FC_RSP],
           n[FC_RD]);
  if (strcmp(got, want) != 0)
    test_fail(__FILE__, __LINE__, "%s: RI RSb RSp RD = %s, expected %s",
              l->c->path, got, want);
}

/* The groups of every strategy, unfused to full, per stitcher: "6 5 4 3
 * 1" for greedy, alg1 and global in turn. */
static void check_groups(const Classified *l, const char *greedy,
                         const char *alg1, const char *global) {
  const char *want[STITCH_COUNT] = {greedy, alg1, global};
  for (int how = 0; how < STITCH_COUNT; how++) {
    char got[64] = "";
    for (int st = 0; st < ST_COUNT; st++) {
      Diag d = {0};
      Plan *p = fusion_plan(l->c, l->s, l->pairs, (Strategy)st, (Stitcher)how,
                            OBJ_TRAFFIC, &d);
      size_t n = strlen(got);
      snprintf(got + n, sizeof got - n, "%s%d", st ? " " : "",
               p ? p->ngroups : -1);
      plan_free(p);
    }
    if (strcmp(got, want[how]) != 0)
      test_fail(__FILE__, __LINE__, "%s, %s: groups %s, expected %s",
                l->c->path, stitcher_name((Stitcher)how), got, want[how]);
  }
}

/* FuseMax's 3-pass attention.
 *
 *   QK[b,h,m,p] = Q[b,h,e,p] * K[b,h,e,m]   IS = {b,h,m,p,e}
 *   GM[b,h,p]   = QK :: max(m)              IS = {b,h,p,m}
 *   SN[b,h,m,p] = exp(QK - GM[b,h,p])       IS = {b,h,m,p}
 *   SD[b,h,p]   = SN (sum over m)           IS = {b,h,p,m}
 *   A[b,h,m,p]  = SN / SD[b,h,p]            IS = {b,h,m,p}
 *   AV[b,h,f,p] = A * V[b,h,f,m]            IS = {b,h,f,p,m}
 *
 * QK -> GM, QK -> SN: QK's e has no loop in the reader, which iterates
 * nothing QK lacks: RSb. GM -> SN: GM's m is a reduction, and SN's m
 * reuses each GM[b,h,p] over a loop of its own: RD (the two-pass
 * dependence of a softmax); SD -> A likewise. SN -> SD and SN -> A: the
 * same spaces, RI. A -> AV: AV's f reuses A: RSp. */
TEST(literature_fusemax_3pass) {
  Classified l = classified_load("specs/fusemax_3pass.yaml");
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "QK", "GM", NULL), "RSb");
  CHECK_STR(pair_class(&l, "QK", "SN", NULL), "RSb");
  CHECK_STR(pair_class(&l, "GM", "SN", NULL), "RD");
  CHECK_STR(pair_class(&l, "SN", "SD", NULL), "RI");
  CHECK_STR(pair_class(&l, "SN", "A", NULL), "RI");
  CHECK_STR(pair_class(&l, "SD", "A", NULL), "RD");
  CHECK_STR(pair_class(&l, "A", "AV", NULL), "RSp");
  check_counts(&l, "2 2 1 2");
  /* Greedy: {QK} {GM} {SN SD} {A} {AV} under ri; + QK->GM under RSb;
   * + A->AV under RSp; the RD pairs GM->SN and SD->A separate
   * {QK GM} {SN SD} {A AV} until full. Algorithm 1 sees the rank names
   * {B,H,M,P(,E,F)} of every pair's intersection equal: one group. */
  check_groups(&l, "6 5 4 3 1", "6 1 1 1 1", "6 5 4 3 1");
  classified_free(&l);
}

/* FuseMax's 1-pass attention: the keys in M1 chunks of M0, three running
 * values over the iterative rank m1.
 *
 *   BQK[b,h,m1,m0,p] = Q * K[b,h,e,M0*m1+m0]       IS = {b,h,m1,m0,p,e}
 *   LM[b,h,m1,p]     = BQK :: max(m0)               IS = {b,h,m1,p,m0}
 *   RM[b,h,m1,p]     = max(RM[m1-1], LM[m1])        IS = {b,h,m1,p}
 *   SLN[..m1,m0,p]   = exp(BQK - RM[m1])            IS = {b,h,m1,m0,p}
 *   SLNV[b,h,f,m1,p] = SLN * V[..., M0*m1+m0]       IS = {b,h,f,m1,p,m0}
 *   PRM[b,h,m1,p]    = exp(RM[m1-1] - RM[m1])       IS = {b,h,m1,p}
 *   RD, RNV          recurrences over m1 (SPD, SPNV feed them)
 *   AV[b,h,f,p]      = RNV[b,h,f,M1-1,p] / RD[b,h,M1-1,p]
 *
 * RM -> SLN: SLN's m0 reuses RM[m1]: RSp. RM -> PRM: both reads iterate
 * m1 (one a step back), the spaces are equal: RI (windowed). RNV -> AV:
 * AV reads m1 only at M1 - 1, the loop RNV has and AV lacks: RSb. RD ->
 * AV: the same, and AV's f reuses RD: RD. LM -> RM, SLD -> RD, SLNV ->
 * RNV: the producer reduces m0: RSb. */
TEST(literature_fusemax_1pass) {
  Classified l = classified_load("specs/fusemax_1pass.yaml");
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "BQK", "LM", NULL), "RSb");
  CHECK_STR(pair_class(&l, "LM", "RM", NULL), "RSb");
  CHECK_STR(pair_class(&l, "RM", "RM", NULL), "RI");
  CHECK_STR(pair_class(&l, "RM", "SLN", NULL), "RSp");
  CHECK_STR(pair_class(&l, "RM", "PRM", NULL), "RI");
  CHECK_STR(pair_class(&l, "SLN", "SLNV", NULL), "RSp");
  CHECK_STR(pair_class(&l, "PRM", "SPNV", NULL), "RSp");
  CHECK_STR(pair_class(&l, "SLNV", "RNV", NULL), "RSb");
  CHECK_STR(pair_class(&l, "RNV", "AV", NULL), "RSb");
  CHECK_STR(pair_class(&l, "RD", "AV", NULL), "RD");
  check_counts(&l, "8 6 3 1");
  /* Without RD the only pair left out is RD -> AV: everything up to RNV
   * is one ri+rsb+rsp group, AV a second. */
  check_groups(&l, "10 8 5 2 1", "10 5 3 2 1", "10 7 4 2 1");
  classified_free(&l);
}

/* The pre-LN block, prefill and decode alike (the decode cascade reads
 * K[b,h,j-T,e] and V[b,h,j-T,e], a window over the cache and this pass's
 * keys, which changes no class).
 *
 *   MU1[b,m] = X[b,m,d] / D                   IS = {b,m,d}
 *   XC1[b,m,d] = X - MU1[b,m]                  IS = {b,m,d}
 *   Q[b,h,m,e] = LN1[b,m,d] * WQ[d,h,e] + BQ   IS = {b,h,m,e,d}
 *   QK[b,h,m,j] = Q[b,h,m,e] * K[b,h,j,e]      IS = {b,h,m,j,e}
 *   AO[b,m,d] = AV[b,h,m,e] * WO[h,e,d] + BO   IS = {b,m,d,h,e}
 *
 * MU1 -> XC1: MU1 reduces d and XC1 iterates d again: RD (the norm's two
 * passes). LN1 -> Q: Q's h, e reuse LN1: RSp. Q -> QK: Q reduces d, QK's
 * j reuses Q: RD; K -> QK the same with m. QK -> S: RSb (e). AV -> AO:
 * AV reduces j, AO's d reuses it: RD. F1 -> GF: RSb; GF -> F2: RSp. */
static void check_prenorm(const char *path) {
  Classified l = classified_load(path);
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "MU1", "XC1", NULL), "RD");
  CHECK_STR(pair_class(&l, "XC1", "VAR1", NULL), "RI");
  CHECK_STR(pair_class(&l, "LN1", "Q", NULL), "RSp");
  CHECK_STR(pair_class(&l, "Q", "QK", NULL), "RD");
  CHECK_STR(pair_class(&l, "K", "QK", NULL), "RD");
  CHECK_STR(pair_class(&l, "QK", "S", NULL), "RSb");
  CHECK_STR(pair_class(&l, "S", "SM", NULL), "RI");
  CHECK_STR(pair_class(&l, "SM", "SN", NULL), "RD");
  CHECK_STR(pair_class(&l, "SN", "AV", NULL), "RSp");
  CHECK_STR(pair_class(&l, "AV", "AO", NULL), "RD");
  CHECK_STR(pair_class(&l, "AO", "R1", NULL), "RSb");
  CHECK_STR(pair_class(&l, "F1", "GF", NULL), "RSb");
  CHECK_STR(pair_class(&l, "GF", "F2", NULL), "RSp");
  check_counts(&l, "10 4 6 10");
  check_groups(&l, "23 16 12 9 1", "23 5 5 5 1", "23 16 12 9 1");
  classified_free(&l);
}

TEST(literature_prenorm_block) { check_prenorm("specs/prenorm_block.yaml"); }

TEST(literature_prenorm_decode) {
  check_prenorm("specs/prenorm_decode.yaml");
  /* The cache: KC and VC grow (append), K and V read them before their
   * start, and the sequence rank is the new tokens'. */
  Classified l = classified_load("specs/prenorm_decode.yaml");
  if (!l.c)
    return;
  CHECK(l.c->tensors[cascade_tensor(l.c, "KC")].append);
  CHECK(l.c->tensors[cascade_tensor(l.c, "VC")].append);
  CHECK(l.c->tensors[cascade_tensor(l.c, "K")].init != NULL);
  CHECK_STR(l.c->ranks[cascade_sequence_rank(l.c)].name, "M");
  classified_free(&l);
}

/* Gated DeltaNet: the recurrence {KS, U, S} over i, with a contraction
 * inside its cycle.
 *
 *   KS[b,i,h,f] = K[b,i,h,e] * S[b,i-1,h,e,f]            IS = {b,i,h,f,e}
 *   U[b,i,h,f] = BETA[b,i,h] * (V - ALPHA[b,i,h] * KS)    IS = {b,i,h,f}
 *   S[b,i,h,e,f] = ALPHA * S[b,i-1,h,e,f] + K * U         IS = {b,i,h,e,f}
 *   O[b,i,h,f] = Q[b,i,h,e] * S[b,i,h,e,f]                IS = {b,i,h,f,e}
 *
 * S -> KS: KS iterates every loop of S (e reduced by KS itself, f, and i
 * one step back): RI. KS -> U: KS reduces e: RSb. U -> S: S's e reuses U:
 * RSp; K -> S: S's f reuses K: RSp. S -> O: RI (O reduces e itself).
 * QN2 -> Q: the norm's RD; OG -> Y: Y's d reuses OG: RSp. */
TEST(literature_gated_deltanet) {
  Classified l = classified_load("specs/gated_deltanet.yaml");
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "S", "KS", NULL), "RI");
  CHECK_STR(pair_class(&l, "KS", "U", NULL), "RSb");
  CHECK_STR(pair_class(&l, "U", "S", NULL), "RSp");
  CHECK_STR(pair_class(&l, "K", "S", NULL), "RSp");
  CHECK_STR(pair_class(&l, "ALPHA", "S", NULL), "RSp");
  CHECK_STR(pair_class(&l, "S", "S", NULL), "RI");
  CHECK_STR(pair_class(&l, "S", "O", NULL), "RI");
  CHECK_STR(pair_class(&l, "QN2", "Q", NULL), "RD");
  CHECK_STR(pair_class(&l, "OG", "Y", NULL), "RSp");
  check_counts(&l, "9 9 8 3");
  /* KS, U and S are one recurrence: one node in every plan (unfused
   * too), whatever the classes of KS -> U (RSb) and U -> S (RSp). */
  int ks = cascade_tensor(l.c, "KS"), s = cascade_tensor(l.c, "S");
  int u = cascade_tensor(l.c, "U");
  int rec = l.c->recurrence[l.c->tensors[s].producer];
  CHECK(rec >= 0);
  CHECK_INT(l.c->recurrence[l.c->tensors[ks].producer], rec);
  CHECK_INT(l.c->recurrence[l.c->tensors[u].producer], rec);
  check_groups(&l, "21 14 8 6 1", "21 5 3 1 1", "21 7 5 3 1");
  classified_free(&l);
}

/* Mamba-2's chunked SSD.
 *
 *   ACS[b,h,c,l] = ACS[b,h,c,l-1] + DA            IS = {b,h,c,l}
 *   SEG[b,h,c,l,s] = where(s <= l, exp(ACS[l] - ACS[s]), 0)
 *   CB[b,c,l,s] = CM[b,c,l,n] * BM[b,c,s,n]       IS = {b,c,l,s,n}
 *   W[b,h,c,l,s] = CB * SEG                       IS = {b,h,c,l,s}
 *   DS[b,h,c,l] = exp(ACS[b,h,c,L-1] - ACS[b,h,c,l])
 *   HS[b,c,h,p,n] = exp(ACS[b,h,c,L-1]) * HS[c-1] + ST
 *   YO[b,c,l,h,p] = CM * HS[b,c-1,h,p,n] * exp(ACS[b,h,c,l])
 *
 * ACS -> SEG: two reads through l and s, a second loop over the chunk:
 * RSp. ACS -> DS: ACS[L-1] reuses over l, ACS[l] is plain: RSp (a
 * coordinate read at a constant index *and* through a variable is
 * iterated). ACS -> HS: HS reads l only at L-1 (ACS's l has no loop in
 * HS) and its p, n reuse ACS: RD. CB -> W: CB reduces n, W's h reuses it:
 * RD. HS -> YO: YO's l reuses the state: RSp. */
TEST(literature_mamba2_chunked) {
  Classified l = classified_load("specs/mamba2_chunked.yaml");
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "ACS", "SEG", NULL), "RSp");
  CHECK_STR(pair_class(&l, "ACS", "DS", NULL), "RSp");
  CHECK_STR(pair_class(&l, "ACS", "HS", NULL), "RD");
  CHECK_STR(pair_class(&l, "CB", "W", NULL), "RD");
  CHECK_STR(pair_class(&l, "SEG", "W", NULL), "RI");
  CHECK_STR(pair_class(&l, "ST", "HS", NULL), "RSb");
  CHECK_STR(pair_class(&l, "HS", "YO", NULL), "RSp");
  CHECK_STR(pair_class(&l, "YD", "Y", NULL), "RSb");
  check_counts(&l, "4 3 8 2");
  /* The greedy walk needs an edge into the current group: XD reads only
   * inputs, so even full opens a group for it, and again for W. */
  check_groups(&l, "12 10 8 4 3", "12 4 4 3 1", "12 8 6 3 1");
  classified_free(&l);
}

/* The CNN layer.
 *
 *   O[b,k,p,q] = I[b,c,2p+r-3,2q+s-3] * F[k,c,r,s]   IS = {b,k,p,q,c,r,s}
 *   A[b,k,p,q] = max(O + BI[k], 0)                    IS = {b,k,p,q}
 *   PL[b,k,y,x] = A[b,k,2y+u-1,2x+v-1] :: max(u,v)    IS = {b,k,y,x,u,v}
 *
 * O -> A: O reduces c, r, s: RSb. A -> PL: windows of 3 at stride 2
 * overlap, so each A element feeds several (y, u): PL broadcasts u, v:
 * RSp. */
TEST(literature_cnn_layer) {
  Classified l = classified_load("specs/cnn_layer.yaml");
  if (!l.c)
    return;
  CHECK_STR(pair_class(&l, "O", "A", NULL), "RSb");
  CHECK_STR(pair_class(&l, "A", "PL", NULL), "RSp");
  check_counts(&l, "0 1 1 0");
  check_groups(&l, "3 3 2 1 1", "3 2 1 1 1", "3 3 2 1 1");
  CHECK(cascade_sequence_rank(l.c) < 0); /* no decode phase */
  classified_free(&l);
}

/* ---- lagged reads from outside a recurrence order the merged nodes ---- */

static int node_of(const Classified *l, const Nodes *m, const char *out) {
  return m->node_of[l->c->tensors[cascade_tensor(l->c, out)].producer];
}

static const Edge *edge(const Classified *l, const char *producer,
                        const char *consumer) {
  for (int i = 0; i < l->c->nedges; i++) {
    const Edge *e = &l->c->edges[i];
    if (strcmp(einsum_name(l->c, e->producer), producer) == 0 &&
        strcmp(einsum_name(l->c, e->consumer), consumer) == 0)
      return e;
  }
  return NULL;
}

/* P and Y read X2 alike and merge; Y reads H[i-1] from outside H's cycle,
 * so the merged node follows H although P is written before it. */
TEST(literature_merged_node_reads_recurrence) {
  Classified l =
      classified_load("tests/specs/good/merged_reads_recurrence.yaml");
  if (!l.c)
    return;
  const Edge *hy = edge(&l, "H", "Y"), *hh = edge(&l, "H", "H");
  CHECK(hy && hh);
  if (!hy || !hh) {
    classified_free(&l);
    return;
  }
  CHECK(hy->lagged && edge_orders(l.c, hy)); /* not a recurrence's */
  CHECK(hh->lagged && !edge_orders(l.c, hh));
  CHECK(!read_in_recurrence(l.c, hy->consumer, hy->acc[0]));
  CHECK(read_in_recurrence(l.c, hh->consumer, hh->acc[0]));
  Nodes *m = fusion_merge(l.c, l.s);
  CHECK_INT(m->n, 3);
  CHECK_INT(node_of(&l, m, "P"), node_of(&l, m, "Y"));
  CHECK_INT(node_of(&l, m, "H"), 0);
  CHECK_INT(node_of(&l, m, "Y"), 1);
  nodes_free(m);
  /* A grouping that puts Y's group before H's cannot run: refused with
   * the reason. */
  int group_of[4] = {0, 1, 0, 1}; /* P, H, Y, Z */
  Diag d = {0};
  Plan *p = fusion_plan_groups(l.c, l.s, ST_RI, group_of, &d);
  CHECK(p == NULL);
  CHECK(strstr(d.msg, "reads H of an earlier step, which group 2 produces "
                      "later") != NULL);
  plan_free(p);
  classified_free(&l);
}

/* The chunked SSD: C is read alike by CB and YO, which merge; YO reads
 * the state HS[c-1], so the merged node runs after HS, and so do W and
 * YD, which read CB (YD and ST, which read XD alike, no longer merge: ST
 * feeds HS). */
TEST(literature_chunked_ssd_merge_order) {
  Classified l = classified_load("specs/mamba2_chunked.yaml");
  if (!l.c)
    return;
  Nodes *m = fusion_merge(l.c, l.s);
  CHECK_INT(node_of(&l, m, "CB"), node_of(&l, m, "YO"));
  CHECK(node_of(&l, m, "HS") < node_of(&l, m, "YO"));
  CHECK(node_of(&l, m, "YO") < node_of(&l, m, "W"));
  CHECK(node_of(&l, m, "W") < node_of(&l, m, "YD"));
  CHECK(node_of(&l, m, "YD") != node_of(&l, m, "ST"));
  /* Every plan's groups respect every ordering edge. */
  for (int st = 0; st < ST_COUNT; st++)
    for (int how = 0; how < STITCH_COUNT; how++) {
      Diag d = {0};
      Plan *p = fusion_plan(l.c, l.s, l.pairs, (Strategy)st, (Stitcher)how,
                            OBJ_TRAFFIC, &d);
      for (int i = 0; p && i < l.c->nedges; i++) {
        const Edge *e = &l.c->edges[i];
        if (edge_orders(l.c, e))
          CHECK(p->group_of[e->producer] <= p->group_of[e->consumer]);
      }
      plan_free(p);
    }
  nodes_free(m);
  classified_free(&l);
}
