/* fusion.h — the paper's fusion analysis (§III–IV): classify every
 * producer->consumer pair, merge Einsums that share an input, and stitch
 * the cascade into fusion groups under a strategy.
 *
 * Classification is relative to the intermediate tensor T of a pair:
 *   - the producer *reduces* the variables it iterates that T's output
 *     index lacks (TTDelta reduces d);
 *   - the consumer *broadcasts* over the variables it iterates that its
 *     reads of T do not cover, or that a window read (TTX[i+f-F+1]) folds
 *     onto one coordinate, so each element of T feeds many iterations.
 *   reduce? broadcast? -> RI (neither), RSb (reduce), RSp (broadcast),
 *   RD (both). Variables are per Einsum: a d the producer reduces and a d
 *   the consumer broadcasts are two different loops (TTDelta -> TDelta is
 *   RD, not RI).
 *
 * A Plan (groups of Einsum ids, and which tensors stay on chip) is plain
 * data: the accelerator model prices it and the executor runs it. */
#ifndef MAMBALAYA_FUSION_H
#define MAMBALAYA_FUSION_H

#include "../ir/ir.h"

typedef enum { FC_RI, FC_RSB, FC_RSP, FC_RD, FC_COUNT } FusionClass;

const char *fusion_class_name(FusionClass k); /* "RI", "RSb", "RSp", "RD" */

/* One classified producer->consumer edge (parallel to Cascade.edges). */
typedef struct Pair {
  const Edge *edge;
  FusionClass cls;
  VarSet reduced;   /* producer's variables reduced away from T */
  VarSet broadcast; /* consumer's variables that reuse each element of T */
} Pair;

/* Classify every edge of C. S gives rank sizes for window reads such as
 * 2*p+q (injective only when q < 2); it may be NULL. Returns
 * C->nedges pairs, heap-allocated. */
Pair *fusion_classify(const Cascade *c, const Shape *s);
/* The class of Einsum CONSUMER's reads of TENSOR, which may be an input
 * (then nothing is reduced). */
FusionClass fusion_classify_reads(const Cascade *c, const Shape *s,
                                  int tensor, int consumer, VarSet *reduced,
                                  VarSet *broadcast);

/* ---- shared-input merging (§IV) ----
 *
 * Consumers of the same tensor are merged into one node when they read it
 * identically, agree in what they do to it (the same class, reducing the
 * same coordinates of it), and neither depends on the other: then one
 * pass over the shared input feeds them all (NEX -> {TTX, RX},
 * X -> {TTDelta, B, C}, Delta -> {Abar, Bbar} in Mamba-1). */
typedef struct Node {
  int n;
  int *einsums; /* in cascade order */
} Node;

typedef struct Nodes {
  int n;
  Node *nodes;  /* in stitching order (a topological order) */
  int *node_of; /* Einsum id -> node index */
} Nodes;

Nodes *fusion_merge(const Cascade *c, const Shape *s);
Nodes *fusion_singletons(const Cascade *c); /* no merging */
void nodes_free(Nodes *m);

/* ---- stitching ---- */

typedef enum {
  ST_UNFUSED,    /* one group per Einsum, no merging */
  ST_RI,         /* RI edges only */
  ST_RI_RSB,     /* + RSb */
  ST_RI_RSB_RSP, /* + RSp */
  ST_FULL,       /* + RD: the fully fused cascade */
  ST_COUNT
} Strategy;

typedef enum {
  /* The paper's greedy walk, reading its rule pairwise: a merged Einsum
   * joins the current group when it has an edge from the group and every
   * edge between it and the group is of a class the strategy allows.
   * Reproduces the 24/12/8/3/1 groups of Mamba-1 (§IV). */
  STITCH_GREEDY,
  /* Algorithm 1 as printed: intersect consecutive iteration spaces (rank
   * names) and join while the intersection is equal to / a subset of / a
   * superset of the previous one. Reproduces the five-Einsum example of
   * §III-E. */
  STITCH_ALG1,
  /* Exact search over contiguous groupings of the merged cascade: the
   * fewest off-chip intermediate elements, then the fewest groups (or the
   * reverse, with OBJ_GROUPS). Beyond the paper (§III-E's suggested
   * global stitching). */
  STITCH_GLOBAL,
  STITCH_COUNT
} Stitcher;

typedef enum { OBJ_TRAFFIC, OBJ_GROUPS } Objective;

const char *strategy_name(Strategy s); /* "unfused", "ri", ..., "full" */
bool strategy_from_name(const char *name, Strategy *s);
const char *stitcher_name(Stitcher s); /* "greedy", "alg1", "global" */
bool stitcher_from_name(const char *name, Stitcher *s);
/* May a strategy fuse across an edge of class K? */
bool strategy_allows(Strategy s, FusionClass k);

typedef struct Group {
  int n;
  int *einsums; /* in cascade order */
} Group;

typedef struct Plan {
  Strategy strategy;
  Stitcher stitcher;
  Objective objective;
  Nodes *nodes; /* the merged Einsums the groups are made of */
  int ngroups;
  Group *groups;
  int *group_of;     /* Einsum id -> group */
  bool *onchip;      /* per tensor: produced and consumed in one group */
  double offchip_elems; /* intermediate elements written + read off chip
                           (needs sizes; 0 without a complete Shape) */
} Plan;

/* Stitch C under strategy ST with stitcher HOW. PAIRS from
 * fusion_classify; S may be NULL (STITCH_GLOBAL with OBJ_TRAFFIC then
 * falls back to OBJ_GROUPS). NULL and D set if the stitcher cannot serve
 * the request (Algorithm 1 over more than 64 ranks). */
Plan *fusion_plan(const Cascade *c, const Shape *s, const Pair *pairs,
                  Strategy st, Stitcher how, Objective obj, Diag *d);
void plan_free(Plan *p);
/* A plan with the given grouping: GROUP_OF[e] numbers the groups in the
 * order they run (0, 1, ...). Merged nodes follow strategy ST. */
Plan *fusion_plan_groups(const Cascade *c, const Shape *s, Strategy st,
                         const int *group_of);

/* Intermediate elements moved off chip by a grouping: every tensor that
 * leaves its producer's group is written once and read once by each other
 * group that consumes it. */
double fusion_offchip_elems(const Cascade *c, const Shape *s,
                            const int *group_of);

#endif
