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

#define FUSION_CLASSES(X) X(RI, "RI") X(RSB, "RSb") X(RSP, "RSp") X(RD, "RD")

typedef enum {
#define X(id, name) FC_##id,
  FUSION_CLASSES(X)
#undef X
  FC_COUNT
} FusionClass;

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
 * X -> {TTDelta, B, C}, Delta -> {Abar, Bbar} in Mamba-1).
 *
 * A recurrence's Einsums (Cascade.recurrence: HH and H in Mamba-1) are one
 * node too, in every plan, unfused included: they advance together, a
 * step at a time (HH reads H[i-1]), so no grouping may part them
 * (plan_can_run). Whatever classes the edges inside it have, they are no
 * fusion choice (edge_in_recurrence). */
typedef struct Node {
  int n;
  int *einsums; /* in cascade order */
} Node;

typedef struct Nodes {
  int n;
  Node *nodes;  /* in stitching order (a topological order) */
  int *node_of; /* Einsum id -> node index */
  int *members; /* every node's einsums, one slice per node (owned) */
} Nodes;

Nodes *fusion_merge(const Cascade *c, const Shape *s);
/* No merging: every Einsum its own node, but a recurrence's one. */
Nodes *fusion_singletons(const Cascade *c);
/* Is edge E inside a recurrence (between two of its Einsums, or an
 * Einsum reading its own earlier step)? No plan parts its ends, so no
 * strategy's classes apply to it. */
bool edge_in_recurrence(const Cascade *c, const Edge *e);
/* Are the N Einsums at EINSUMS one Einsum, or one recurrence's? A node
 * of more is a shared-input merge (NEX -> {TTX, RX}); a group of more
 * fuses. */
bool one_recurrence(const Cascade *c, int n, const int *einsums);
/* A counting sort of items 0..N-1 by part OF[i] (< NPARTS): MEMBERS (N
 * ints) gets them part by part, each part's in increasing order; part
 * p's are MEMBERS[START[p] .. START[p + 1]) (START: NPARTS + 1 ints). */
void fusion_partition(int n, const int *of, int nparts, int *members,
                      int *start);
/* A copy of FROM (nodes of C). */
Nodes *nodes_copy(const Cascade *c, const Nodes *from);
void nodes_free(Nodes *m);

/* ---- stitching ---- */

/* The fusion strategies of §IV, one row each: the name, and the classes
 * of edge a group may contain. Adding a strategy is one row here (and, if
 * it is priced, one row of model.h's DESIGNS). */
#define FC_BIT(k) (1u << (k))
#define STRATEGIES(X)                                                      \
  X(UNFUSED, "unfused", 0u) /* one group per Einsum, no merging */         \
  X(RI, "ri", FC_BIT(FC_RI))                                               \
  X(RI_RSB, "ri+rsb", FC_BIT(FC_RI) | FC_BIT(FC_RSB))                      \
  X(RI_RSB_RSP, "ri+rsb+rsp",                                              \
    FC_BIT(FC_RI) | FC_BIT(FC_RSB) | FC_BIT(FC_RSP))                       \
  X(FULL, "full", /* + RD: the fully fused cascade */                      \
    FC_BIT(FC_RI) | FC_BIT(FC_RSB) | FC_BIT(FC_RSP) | FC_BIT(FC_RD))

typedef enum {
#define X(id, name, classes) ST_##id,
  STRATEGIES(X)
#undef X
  ST_COUNT
} Strategy;

/* How a strategy's groups are formed, one row each (name, then why):
 *   greedy  the paper's walk, reading its rule pairwise: a merged Einsum
 *           joins the current group when it has an edge from the group and
 *           every edge between it and the group is of a class the strategy
 *           allows. Reproduces the 24/12/8/3/1 groups of Mamba-1 (§IV).
 *   alg1    Algorithm 1 as printed: intersect consecutive iteration spaces
 *           (rank names) and join while the intersection is equal to / a
 *           subset of / a superset of the previous one. Reproduces the
 *           five-Einsum example of §III-E.
 *   global  exact search over contiguous groupings of the merged cascade:
 *           the fewest off-chip intermediate elements, then the fewest
 *           groups (or the reverse, with OBJ_GROUPS). Beyond the paper
 *           (§III-E's suggested global stitching). */
#define STITCHERS(X) X(GREEDY, "greedy") X(ALG1, "alg1") X(GLOBAL, "global")

typedef enum {
#define X(id, name) STITCH_##id,
  STITCHERS(X)
#undef X
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
  int *einsums; /* in cascade order: the order they run in */
  int ntiled;
  int tiled[IR_MAX_RANKS]; /* ranks it may tile: see plan_tile_ranks */
  /* The memory level it is fused at, where the plan gives each group its
   * own (a search's mixed-level plan; plan files: "group_levels"), or "":
   * the plan's level. What it hands another group goes off chip whatever
   * either's level (docs/model.md, "A fusion level per group"). */
  char level[64];
  Loc level_at; /* where a plan file wrote it */
} Group;

/* ---- the plan's geometry (geometry.c) ----
 *
 * What the model prices and the executor runs, computed once from the
 * grouping: how every read is served, which tensors go off chip, and every
 * element that crosses off chip at the plan's algorithmic minimum:
 *
 *   - a tensor produced in a group is handed over on chip to its readers
 *     in that group, and written off chip once if it escapes (a result, or
 *     read by another group);
 *   - every other read comes from off-chip memory, each distinct element
 *     once per group (the group's readers share the fetch: NEX read by the
 *     merged TTX and RX, a window's halo);
 *   - reads inside a recurrence (H[i-1], and HH -> H) stay on chip: every
 *     plan holds a recurrence in one group (plan_can_run), co-iterated
 *     along its rank;
 *   - what a read before the start of an initialized rank sees comes from
 *     the initialization's inputs (the decode state: H0, the convolution
 *     history), read once per group.
 *
 * Elements are counted with ir's spans (span.c), so a window, a lag or a
 * read at a constant index counts exactly what it touches. */
typedef enum {
  SRC_DRAM,       /* from off-chip memory */
  SRC_HANDOVER,   /* produced in the same group: passed on chip */
  SRC_RECURRENCE, /* inside a recurrence, which its group holds whole:
                     on chip, a step (the lag) back */
} ReadSrc;

typedef enum {
  XFER_READ,  /* a tensor read by its group (charged at its first reader) */
  XFER_WRITE, /* a tensor written by its producer */
  XFER_STATE, /* an initialization's input (the decode state), read for the
                 group's reads before the start */
  XFER_STATE_OUT, /* the next pass's decode state, written by the Einsum
                     producing the tensor it continues (state_write_elems) */
} XferKind;

/* One tensor crossing off chip at one Einsum. */
typedef struct Transfer {
  int einsum, tensor;
  XferKind kind;
  double elems;
} Transfer;

/* The binding a plan was priced under, when it says (docs/model.md §2):
 * the model's BindPolicy, one ahead (0: the plan does not say). */
typedef enum { PLAN_BIND_UNSAID, PLAN_BIND_RULE, PLAN_BIND_COST,
               PLAN_BIND_COUNT } PlanBind;
const char *plan_bind_name(PlanBind b); /* "", "rule", "cost" */

typedef struct Plan {
  Strategy strategy; /* labelled "any" by a file: ST_FULL, or what its
                        "strategy" asked (an Algorithm 1 plan) */
  bool any; /* labelled "any": its groups need follow no strategy's classes
               (a file's label, or an Algorithm 1 plan that breaks ST's) */
  Stitcher stitcher;
  Objective objective;
  Nodes *nodes; /* the merged Einsums the groups are made of */
  int neinsums;      /* of the cascade */
  int ngroups;
  Group *groups;     /* in the order they run */
  int *group_of;     /* Einsum id -> group */
  int *members;      /* every group's einsums, one slice per group (owned) */
  /* The geometry. */
  ReadSrc **src;     /* per Einsum, per read (Einsum.reads[k]) */
  bool *written;     /* per tensor: its producer writes it off chip */
  bool *onchip;      /* per tensor: produced and never off chip */
  int nxfers;
  Transfer *xfers;   /* every off-chip transfer, in execution order
                        (elements need sizes: 0 without a complete Shape) */
  double offchip_elems; /* the intermediates' transfers: what `fuse`
                           prints, eval's ideal inter-Einsum traffic and
                           the executor's count, and what --stitch global
                           minimizes */
  /* The options the search chose per group (docs/search.md), carried so
   * that the plan prices as it was priced (plan files: "spilled",
   * "bind"). */
  bool *spilled;  /* per tensor, or NULL: the intermediates held in their
                     group that are sent off chip by choice -- exactly
                     these, in place of the model's distance rule (NULL:
                     the rule decides) */
  PlanBind bind;  /* the binding it was priced under, or unsaid */
  char design[16]; /* the named design whose pricing it takes (a search's
                      best that is FLAT or MARCA-like: their rows of the
                      design table price a plan differently), or "": its
                      label's (plan files: "design") */
  char fusion_level[64]; /* the memory level it was priced with as the
                            fusion level (a search that chose among
                            several), or "": the architecture's (plan
                            files: "fusion_level") */
  Loc fusion_level_at;   /* where a plan file wrote it */
} Plan;

/* Stitch C under strategy ST with stitcher HOW. PAIRS from
 * fusion_classify; S may be NULL (STITCH_GLOBAL with OBJ_TRAFFIC then
 * falls back to OBJ_GROUPS). NULL and D set if the stitcher cannot serve
 * the request (Algorithm 1 over more than 64 ranks). A plan whose groups
 * break ST's classes (Algorithm 1's can: it compares rank sets) is
 * labelled "any" (Plan.any). */
Plan *fusion_plan(const Cascade *c, const Shape *s, const Pair *pairs,
                  Strategy st, Stitcher how, Objective obj, Diag *d);
void plan_free(Plan *p); /* plan.c */
/* Does some group of P name its own fusion level (Group.level)? */
bool plan_names_levels(const Plan *p);
/* A copy of P (a plan of C) that owns its own arrays (plan.c). */
Plan *plan_copy(const Cascade *c, const Plan *p);
/* Can groups numbered GROUP_OF (in the order they run) run one after
 * another: does no Einsum read a tensor that a later group produces? A
 * lagged read counts as any other: a group reading S[i-1] before the
 * group producing S has run cuts S's recurrence (retnet's SD and S in two
 * groups), and reading it anyway would need every step of S written off
 * chip and read back while both groups advance together. False with D
 * set (the spec, the reader's line: the reader, its group, the tensor,
 * the producer's group, and the recurrence cut) otherwise. Every plan is
 * built through it (fusion_plan_groups); every stitcher's passes by
 * construction (a recurrence is one node). */
bool plan_can_run(const Cascade *c, const int *group_of, Diag *d);
/* A plan with the given grouping: GROUP_OF[e] numbers the groups in the
 * order they run (0, 1, ...). Merged nodes follow strategy ST. NULL and D
 * set when the grouping cannot run (plan_can_run). */
Plan *fusion_plan_groups(const Cascade *c, const Shape *s, Strategy st,
                         const int *group_of, Diag *d);
/* A plan whose groups are the sets UNIT names (unit[e]: an Einsum of e's
 * set), the sets a recurrence spans joined into one, numbered in an order
 * they can run: Kahn's, the set holding the earliest Einsum among the
 * ready ones first (the designs' own plans: MARCA's region, FLAT's
 * blocks, every other Einsum alone). NULL and D set when no order exists
 * (two sets each read what the other produces). */
Plan *fusion_plan_units(const Cascade *c, const Shape *s, Strategy st,
                        const int *unit, Diag *d);

/* The ranks a set of Einsums (MEMBER[e]) may tile together: those shared
 * by every tensor they produce and every produced tensor they read, in the
 * order of the first member's output (outermost first). For Mamba, the
 * tokens B and I. Tiling any other rank would refetch some tensor per
 * tile. Returns how many, into RANKS. */
int plan_tile_ranks(const Cascade *c, const bool *member, int *ranks);

/* Elements of tensor T that Einsum E's reads touch over its whole
 * iteration space (the union of its accesses' spans). */
double einsum_read_elems(const Shape *s, int e, int t);
/* Elements of the initializations' inputs that Einsum E's reads before a
 * start need (its own reach), per input tensor into ELEMS (indexed by
 * tensor; the caller zeroes it). */
void einsum_state_elems(const Shape *s, int e, double *elems);

/* Elements of the next pass's decode state that a pass writes for tensor
 * T (which has an initialization reading a state S): the steps this pass
 * adds. A history of K steps (the convolution's) is a ring of K slots, so
 * min(M, K) steps of M new ones; a cache that grows (`append:`) takes all
 * M; a state without a history rank (H0) is written whole. 0 when T has
 * no such state. */
double state_write_elems(const Shape *s, int t);

/* ---- plan files (planfile.c; the label check in stitch.c) ----
 *
 * A plan as `fuse --json` writes it: {"strategy": S, "groups": [[EINSUM,
 * ...], ...]}, or {"plans": [...]} holding several (--strategy S picks
 * one by its "strategy"). Its label, "label" when there is one, else S,
 * is a strategy, whose classes every group's internal edges must
 * respect, or "any": a plan that follows no named strategy, merged as
 * full and priced by what its groups contain. An Algorithm 1 plan that
 * breaks its strategy's classes is written {"strategy": S, "label":
 * "any"} (read back merged as S asked). */
#define PLAN_LABEL_ANY "any"
bool plan_label_from_name(const char *name, Strategy *st, bool *any);
const char *plan_label(const Plan *p); /* "any" or the strategy's name */

/* Does every group of P hold only edges of classes its strategy allows
 * (and, unfused, one Einsum, or one recurrence's)? Edges inside a
 * recurrence do not count (edge_in_recurrence). False with D set (FILE,
 * the group, the edge as producer -> consumer, and its class) otherwise.
 * PAIRS from fusion_classify. Every stitcher's plan passes (tests/unit). */
bool plan_check_label(const Cascade *c, const Pair *pairs, const Plan *p,
                      const char *file, Diag *d);

/* Read the plan in TEXT (named FILE in messages) for cascade C bound by
 * S: the one it holds, or the one labelled WANT of a file of several
 * (NULL: the file must hold one; else it is refused with the list of the
 * plans it holds). NULL and D set when it is not a plan, names an Einsum
 * C lacks, leaves one out or names it twice, has an empty group, breaks
 * its label or cannot run (plan_can_run: a group reading what a later
 * group produces, a recurrence's earlier step included). */
Plan *plan_read_text(const char *file, const char *text, size_t len,
                     const char *want, const Cascade *c, const Shape *s,
                     Diag *d);
/* plan_read_text on the file at PATH (read as every text input is). */
Plan *plan_read_file(const char *path, const char *want, const Cascade *c,
                     const Shape *s, Diag *d);

/* Fill P's geometry from its grouping (fusion_plan does). */
void plan_geometry(const Cascade *c, const Shape *s, Plan *p);

/* The ranks the group of N Einsums at EINSUMS (in cascade order) may tile
 * together: plan_tile_ranks's rule, over a list. */
int group_tile_ranks(const Cascade *c, int n, const int *einsums,
                     int *ranks);

/* One group at a time (geometry.c). The search prices each run [I, J) of
 * its nodes as group I of the plan where every other node stands alone;
 * making that plan whole (fusion_plan_groups) walks the cascade, per
 * group. A Regroup keeps the plan of every node alone and patches one run
 * into one group in time of the group (its members' reads, their
 * outputs' readers): the plan it gives is that plan for group I --
 * its members, tile ranks, how their reads are served, which of their
 * outputs go off chip, their transfers in order, all as
 * fusion_plan_groups makes them (a test compares them) -- and for
 * nothing else: its other groups' transfers are left out and the nodes
 * after the run keep their numbers. It is for pricing group I alone
 * (model_group_bind). */
typedef struct Regroup Regroup;
/* The plan of C bound by S where each of NODES is its own group, group k
 * node k (stitch.c); NULL where they cannot run so (an edge backwards in
 * their order). Every run of them can run when they alone can: merging a
 * run keeps every edge forward in the order. */
Plan *fusion_plan_alone(const Cascade *c, const Shape *s, const Nodes *nodes);
/* For C bound by S, from ALONE (fusion_plan_alone's, which it owns and
 * frees; NULL: no run can run). */
Regroup *regroup_new(const Cascade *c, const Shape *s, Plan *alone);
void regroup_free(Regroup *rg);
/* Nodes [I, J) as group I, the rest alone: the Regroup's plan, valid until
 * its next call (the plan of every node alone where J = I + 1). NULL when
 * the nodes alone cannot run (plan_can_run: an edge backwards in their
 * order; search_nodes' order, a topological one, has none), and then for
 * every run. */
Plan *regroup_plan(Regroup *rg, int i, int j);

/* The off-chip traffic of intermediates that a contiguous run of merged
 * nodes, as one group, would cause (the global stitcher's cost; additive
 * over groups, and equal to the plan's offchip_elems summed). */
typedef struct SegCost SegCost;
SegCost *segcost_new(const Cascade *c, const Shape *s, const Nodes *m);
void segcost_free(SegCost *sc);
/* Start an empty segment ending at node RIGHT, then grow it to the left a
 * node at a time: segcost_grow returns the cost of [left, RIGHT]. */
void segcost_start(SegCost *sc, int right);
double segcost_grow(SegCost *sc);

#endif
