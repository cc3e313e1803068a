/* search.h — the best schedule of a cascade on an architecture, found and
 * proven within a stated space (docs/search.md).
 *
 * The space: every partition of the merged cascade (fusion_merge's nodes,
 * in their stitching order) into contiguous groups that can run (the
 * plan's dependencies allow them: fusion_plan_groups), each group priced
 * by the model under the given options, its Einsums bound to units by cost
 * (every assignment to the units able to run them: bind.c), its passes,
 * spills and tiles as the model decides them for that group; and, beside those, the
 * plan of every named design under every stitcher, priced as that design
 * prices it. The chosen schedule is the best of these for the objective.
 *
 * Why a dynamic program is exact here: a group's price depends only on
 * which Einsums it holds. Its reads come off chip unless produced inside
 * it, its writes go off chip when a reader lies outside it, its mapping,
 * binding and spills are decided from its own content, and the layer's
 * latency, energy and traffic are sums over its groups (docs/model.md,
 * "One plan, one price"). So the best partition of the first j nodes is
 * the best partition of some first i plus the group [i, j): the program
 * keeps, for each prefix, the partitions not dominated in the objective's
 * two additive figures (latency and energy; traffic and latency), which
 * makes it exact for a product (EDP) too. A test checks it against every
 * partition priced whole on small cascades.
 *
 * Each group may be fused at any level the architecture can take as its
 * fusion level (arch_fusion_candidates; level.c): the program prices each
 * candidate group at each, on a copy of the architecture with the level
 * moved. What one group hands another goes off chip whatever their levels
 * (docs/model.md, "A fusion level per group"), so a group's price owes
 * nothing to its neighbours' levels and the program stays exact over
 * mixed-level plans: a front entry records its last group's level.
 *
 * The lower bound is the `ideal` design (docs/model.md §5) with each of
 * its groups at its own least level (model_ideal_least): under sequential
 * composition no schedule of any plan, its groups at any levels, beats it
 * (docs/search.md, "The bound over the levels"); the gap is found /
 * bound. */
#ifndef MAMBALAYA_SEARCH_H
#define MAMBALAYA_SEARCH_H

#include "../model/model.h"

/* What a search minimizes: X(ID, name, unit, the column its figure has in
 * a CSV: eval's, sweep's). */
#define SEARCH_OBJECTIVES(X)                                                \
  X(LATENCY, "latency", "s", "latency_s")                                   \
  X(ENERGY, "energy", "J", "energy_j")                                      \
  X(EDP, "edp", "J s", "edp_js")                                            \
  X(TRAFFIC, "traffic", "B", "dram_bytes")

typedef enum {
#define X(id, name, unit, column) SO_##id,
  SEARCH_OBJECTIVES(X)
#undef X
  SO_COUNT
} SearchObjective;

const char *search_objective_name(SearchObjective o);
const char *search_objective_unit(SearchObjective o);   /* "s", "J", ... */
const char *search_objective_column(SearchObjective o); /* "latency_s" */
bool search_objective_from_name(const char *name, SearchObjective *o);
/* The objective's figure of an evaluation (seconds, joules, J·s, bytes). */
double search_figure(const Eval *ev, SearchObjective o);

/* A schedule on the latency-energy front: no other priced schedule is as
 * fast and as frugal, one of them strictly. */
typedef struct SearchPoint {
  double seconds, joules;
  int groups;  /* of its plan */
  Design from; /* a named design, or DES_COUNT: a partition */
} SearchPoint;

typedef struct SearchResult {
  Eval *best;       /* the chosen schedule, priced (it owns its plan) */
  Design from;      /* the named design it is, or DES_COUNT: a partition
                       found by the search */
  Eval *bound;      /* ideal: the lower bound */
  double found;     /* search_figure(best) */
  double lower;     /* search_figure(bound) */
  int nodes;        /* what the partitions cut: search_nodes */
  double partitions; /* 2^(nodes-1): the contiguous partitions */
  long groups;       /* candidate groups: nodes (nodes + 1) / 2 */
  long priced;       /* of which could run, and were priced */
  long variants;     /* group prices: each priced group once per spill
                        variant (docs/search.md) */
  long named;        /* named-design plans priced beside */
  long skipped;      /* candidate groups the budget left unpriced */
  long named_skipped; /* named-design plans the budget or the time limit
                         left unpriced */
  long budget;       /* candidate groups the search could price (0: all) */
  bool timed_out;    /* the time limit passed: what was priced by then */
  bool stopped;      /* the budget ran out: the rest of the program took
                        single nodes only, so found is the best of what was
                        priced, its gap to the bound stated, not proven */
  long bind_capped;  /* priced groups whose binding by cost stopped at its
                        own budget (bind.c): best found, not proven */
  int npareto;       /* the latency-energy front (objectives latency,
                        energy, edp; else 0), fastest first */
  SearchPoint *pareto;
  int levels;        /* candidate fusion levels tried (level.c) */
  int fusion_level;  /* the one best was priced with, of the given
                        architecture's levels, or -1: its plan fuses each
                        group at its own (Group.level; best->g[g].level) */
  Arch *arch;        /* the given architecture with that fusion level, or
                        NULL: its own (owned; shares the given one's
                        content): what best and bound are reported on */
} SearchResult;

/* Search the space above for C (bound by S) on A under O (the model's
 * options; the designs' own baseline fields are theirs). MEMO (may be
 * NULL) shares mapping searches. NULL and D set when the architecture
 * cannot run the cascade. */
SearchResult *search_best(const Cascade *c, const Shape *s, const Arch *a,
                          const Pair *pairs, const ModelOverrides *o,
                          SearchObjective obj, MapMemo *memo, Diag *d);
typedef struct GroupMemo GroupMemo; /* below */

/* What bounds a search and who hears of its progress. */
typedef struct SearchControl {
  long budget;    /* candidate groups it may price (0: all); past it, the
                     program extends each prefix by single nodes only and
                     the named designs are priced only within the
                     search's first second (each is a plan of the whole
                     cascade: 16 of them took 1.5 s on 2000 Einsums) */
  double seconds; /* wall-clock time it may take (0: no limit). Past it
                     nothing more is priced: the program stops, the named
                     designs and fusion levels not yet priced are skipped
                     (the first design of the first level always is), and
                     the best of what was priced is the result (stopped) */
  /* Called every few seconds once the search has run for a few (by
   * search_best_ctl; search_levels calls it at every step): the share
   * of its work done (0 to 1) and the seconds so far. NULL: none. */
  void (*progress)(void *ctx, double done, double elapsed);
  void *ctx;
  /* Candidate groups' prices the caller keeps across searches (NULL:
   * none): a sweep's points at other bandwidths and clocks. */
  GroupMemo *groups;
  /* The named designs' plans the caller has priced already (NULL: none),
   * per design (DES_COUNT; NULL where not): design d's own plan
   * (model_plan under model_opts_with(o, d): the options' stitcher)
   * priced whole on the given architecture under those options. The
   * search takes their figures rather than pricing them again, and
   * prices one whole only where it beats the best so far (to keep it):
   * reproduce has priced every design at each shape it searches. */
  const Eval *const *named;
} SearchControl;
/* search_best under CTL's limits. */
SearchResult *search_best_ctl(const Cascade *c, const Shape *s,
                              const Arch *a, const Pair *pairs,
                              const ModelOverrides *o, SearchObjective obj,
                              const SearchControl *ctl, MapMemo *memo,
                              Diag *d);
/* search_best pricing at most BUDGET candidate groups (0: no limit). */
SearchResult *search_best_within(const Cascade *c, const Shape *s,
                                 const Arch *a, const Pair *pairs,
                                 const ModelOverrides *o, SearchObjective obj,
                                 long budget, MapMemo *memo, Diag *d);
void search_free(SearchResult *r);
/* The architecture R's schedule was priced on: R's copy, or A. */
const Arch *search_arch(const SearchResult *r, const Arch *a);

/* ---- the program over the levels (search.c), under level.c ----
 *
 * A candidate fusion level: its index among the given architecture's
 * levels and that architecture with it as the fusion level (the given one
 * itself for its own level). */
typedef struct SearchLevel {
  int level;
  const Arch *a;
} SearchLevel;
/* search_best_ctl over the NLEV levels LV of A (the architecture's own
 * first: it keeps a tie), each candidate group priced at each; the named
 * designs at each level, the bound over them. fusion_level is the level
 * best was priced at (-1: its plan gives each group its own, priced on A);
 * arch is left for level.c to set. */
SearchResult *search_levels(const Cascade *c, const Shape *s, const Arch *a,
                            const SearchLevel *lv, int nlev,
                            const Pair *pairs, const ModelOverrides *o,
                            SearchObjective obj, const SearchControl *ctl,
                            MapMemo *memo, Diag *d);
/* The nodes the program cuts into contiguous groups: the merged
 * Einsums' canonical order (fusion_merge) with each merged node opened
 * into its Einsums, in cascade order (a recurrence's stay one node: no
 * plan parts it), so that a group may hold a merged node whole or a part
 * of it (docs/search.md, item 1). */
Nodes *search_nodes(const Cascade *c, const Shape *s);
/* Keep the front's points no other point dominates, fastest first. */
void search_pareto_filter(SearchResult *r);

/* The spill variants of group G of plan P under O: the ways the group may
 * send the intermediates it holds off chip by choice (docs/search.md,
 * "The space"), each priced as one more candidate price of the group.
 * Their number; variant 0 sends none. */
int search_spill_variants(const Cascade *c, const Plan *p, int g,
                          const ModelOpts *o);
/* Set in SPILLED (per tensor; the rest untouched) the intermediates that
 * variant V of group G sends off chip. */
void search_spill_variant(const Cascade *c, const Plan *p, int g,
                          const ModelOpts *o, int v, bool *spilled);

/* ---- candidate groups kept across searches (reuse.c) ----
 *
 * Searches that differ in a level's bandwidth or the clock alone (a
 * sweep's points) price the same candidate groups to the same bills
 * (model.h, "a group's price at any bandwidth and clock"): what each
 * chose, moved and spent, of which only the time moves with them. A
 * GroupMemo keeps, per pricer's inputs but those (model_group_key: a
 * shelf, its groups numbered by the search's nodes), each candidate
 * group's bills with its variants' energy, traffic and spills; a search
 * takes a group's figures from a bill whose comparisons of times hold
 * at its bandwidths and clock (its time from the bill), and prices it
 * in full where none does (keeping that bill beside, at most
 * GROUP_MEMO_BILLS per group). Every figure is the one a search without
 * it finds. It holds at most MAX_BYTES (a sweep's: GROUP_MEMO_BYTES),
 * dropping the shelves used longest ago that no search has open. SHARED:
 * threads may use it at once (a lock guards it; the pricing runs
 * outside). */
enum { GROUP_MEMO_BILLS = 8 };
#define GROUP_MEMO_BYTES (128.0 * 1024 * 1024)
GroupMemo *group_memo_new(bool shared, double max_bytes);
void group_memo_free(GroupMemo *m);
typedef struct GroupMemoStats {
  long served;    /* candidate groups whose figures a bill gave */
  long priced;    /* priced in full: no bill, or none that held */
  long refused;   /* of those, where a bill's comparison came out
                     otherwise (its choice by time moved) */
  long plans_served, plans_priced; /* the named designs' plans: from
                                      bills, whole */
  long shelves;   /* kept now */
  long dropped;   /* shelves dropped for room */
  double bytes;   /* held now */
} GroupMemoStats;
void group_memo_stats(GroupMemo *m, GroupMemoStats *st);

/* search.c's side of it: a shelf (opened for a search, closed after it)
 * of NSLOTS slots, each a list of kept prices, newest first: a
 * candidate group's (every spill variant priced: one bill), or a named
 * design's plan (its groups' bills, in order: the layer's time). */
typedef struct Shelf Shelf;
typedef struct Kept {
  struct Kept *next;
  bool norun;        /* the grouping cannot run, or the design has no plan
                        (no more below) */
  long capped;       /* a group's binding's budget count (bind.c) */
  int nv;            /* variants priced (a plan: 1) */
  double *energy;    /* per variant: joules, bytes off chip */
  double *traffic;
  int *spill_at;     /* per variant v: the tensors it sends off chip by
                        choice, spill_t[spill_at[v] .. spill_at[v + 1]) */
  int *spill_t;
  int cap_v, nt, cap_t;
  int nbills;        /* a group: 1, its variants' time; a plan: a bill per
                        group, each of one variant */
  GroupBill **bills;
  Plan *plan;        /* a named design's, as priced (owned) */
} Kept;
/* The shelf of the words KEY (NKEY of them, taken) with NSLOTS slots,
 * found or made (NULL without M). */
Shelf *shelf_open(GroupMemo *m, uint64_t *key, int nkey, int nslots);
void shelf_close(GroupMemo *m, Shelf *s);
const Kept *shelf_first(GroupMemo *m, const Shelf *s, int slot);
/* Keep K (taken) in SLOT: dropped instead where the slot keeps
 * GROUP_MEMO_BILLS already. */
void shelf_put(GroupMemo *m, Shelf *s, int slot, Kept *k);
/* Add one search's counts (ST's served, priced, refused and plans). */
void group_memo_count(GroupMemo *m, const GroupMemoStats *st);
void kept_free(Kept *k);

/* The narrowest strategy whose classes cover every edge inside P's groups:
 * the label a found plan carries (unfused when no group holds an edge). */
Strategy search_label(const Cascade *c, const Pair *pairs, const Plan *p);

#endif
