/* price.h — private to src/model: the state of one evaluation, shared by
 * binding (bind.c), the tiling of groups (group.c) and the pricing and
 * composition of Einsums (eval.c, compose.c). */
#ifndef MAMBALAYA_MODEL_PRICE_H
#define MAMBALAYA_MODEL_PRICE_H

#include "model.h"

typedef struct Frame Frame;         /* group.c */
typedef struct BindKeep BindKeep;   /* bind.c */
typedef struct Trace Trace;         /* trace.c */

/* Per-tensor scratch of a group's pricing (group.c), at rest between
 * groups: indices -1, counts and elements 0. */
typedef struct HeldScratch {
  int *first, *last, *made, *held_of, *readers; /* rows of one block */
  double *rd, *wr;                               /* and of another */
} HeldScratch;

typedef struct Ctx {
  const Cascade *c;
  const Shape *s;
  const Arch *a;
  const Pair *pairs;
  Design d;
  ModelOpts o;
  Plan *plan;
  /* The plan's transfers by Einsum (plan_xfers_index): Einsum e's are
   * xfers[xfer_ord[k]] for k in [xfer_at[e], xfer_at[e + 1]), in the
   * plan's order -- a group's reads them without walking the plan's. */
  int *xfer_at, *xfer_ord;
  /* The cascade's edges by consumer (cascade_edge_index). */
  EdgeIndex in;
  double word; /* bytes per element */
  double glb;  /* elements the fusion level holds */
  double bw;   /* DRAM bytes per cycle */
  Work *work;  /* per Einsum */
  int *unit;   /* per Einsum: the unit it runs on */
  bool *inter; /* per tensor: an intermediate */
  double **touch; /* per Einsum, per read: the elements it touches
                     (einsum_read_elems), for every level's nest */
  Eval *ev;
  MapMemo *memo; /* the caller's, or NULL */
  Diag *diag;
  /* What a context pricing many groups keeps across them (the group
   * pricer's; NULL: built per use): per Einsum, its loop nest as its
   * group maps it (group.c) and its levels inside the fusion level
   * (levels.c), neither of which depends on its group. */
  struct Nest **nests;
  struct Inner **inner;
  /* What binding finds for an Einsum whatever its group -- its compute
   * on each unit, the units able to run it -- kept (bind.c; a group
   * pricer's, NULL: none): binding by cost and the latency binding price
   * every unit of every member, for every group and spill variant. */
  BindKeep *bind_keep;
  /* A group pricer's: the layer's totals (per tensor, per level, per
   * unit, and their sums) are not kept -- model_group_price promises the
   * group's figures and its Einsums' alone, which is all the search
   * reads, and summing them was an O(group) pass per spill variant. */
  bool no_totals;
  HeldScratch *held; /* group.c's, per tensor */
  /* A group pricer's: the members of the group it bound, as bound (their
   * compute priced), what a member priced again starts from
   * (member_restart); and per member whether the last price of the group
   * priced it again (REDO: its charges or its mapping changed) or kept
   * its evaluation from the variant before. NULL: every member is priced
   * once, from its evaluation as it stands. */
  const EinsumEval *base;
  bool *redo;
  Frame *frame; /* a group pricer's: the group bound last (group.c) */
  /* A group pricer's that makes bills (timing.c), or NULL: the
   * comparisons of times its last price made. */
  Trace *trace;
  /* A plan may fuse each group at its own level (Group.level: docs/model.md,
   * "A fusion level per group"): ARCH is the architecture given, A and GLB
   * the one the group being priced is fused at (eval.c's ctx_at_group),
   * AT_LEVEL the copies of ARCH with another fusion level the plan's
   * groups name (per memory level; NULL where none), GROUP_AT per group
   * its copy (NULL: ARCH). Every copy shares ARCH's levels and units but
   * their roles. */
  const Arch *arch;
  Arch **at_level;
  const Arch **group_at;
} Ctx;

/* Index X->plan's transfers by Einsum (x->xfer_at, x->xfer_ord), the
 * previous plan's index freed. */
void ctx_index_xfers(Ctx *x);
/* A's off-chip bytes per cycle (Ctx.bw). */
double dram_bytes_per_cycle(const Arch *a);

/* The group pricer (model.h): a context that prices one group at a time,
 * and that group's Einsums as bound (eval.c; timing.c reads both). */
struct GroupPricer {
  Ctx x;
  int g;                /* the group bound last, or -1 */
  EinsumEval *computed; /* its Einsums, bound and their compute priced
                           (x.base) */
};

/* ---- binding (bind.c) ---- */

enum { BIND_MAX_CAND = 16 }; /* units weighed for one Einsum */

/* Bind every Einsum of X's plan to a unit (x->unit); for DES_IDEAL, the
 * fastest unit able to run it, with MEM[e] its DRAM cycles. False
 * (diag set) when a unit cannot run an Einsum's operations. */
bool bind_units(Ctx *x, const double *mem);
/* bind_units for group G's Einsums alone: the units it gives them (a
 * group's binding depends on its own Einsums only). Not for the ideal
 * design. */
bool bind_group(Ctx *x, int g);
/* Under sequential composition, bound by cost: move Einsum evaluation R
 * (its memory cycles priced) to the unit on which its compute and memory
 * composed take the least (ties: its own), as the ideal rebinds
 * (compose.c). Binding by cost chose the least compute before the memory
 * was known, and a unit with a deeper pipeline is the slower on a
 * memory-bound Einsum; the group's cycles are the sum of its Einsums', so
 * each Einsum's least is the group's. An Einsum an override binds
 * stays. */
void bind_for_latency(Ctx *x, EinsumEval *r);
/* The units bind_for_latency weighs for Einsum E beside its own, in its
 * order, into OUT (room for BIND_MAX_CAND): their number, or -1 where it
 * keeps E's unit whatever the times (an override binds E; the options do
 * not rebind). */
int latency_candidates(Ctx *x, int e, int *out);
/* bind_for_latency's test: does a unit on which the Einsum takes CYC
 * cycles replace the one taking NOW? Only when faster beyond rounding. */
static inline bool latency_rebinds(double cyc, double now) {
  return cyc < now * (1 - 1e-12);
}
/* Compute on unit U for Einsum E (filled into R: util, spread, the unit's
 * and its epilogue's cycles, compute_cycles). */
void price_compute(const Ctx *x, int e, int u, EinsumEval *r);
/* An empty Ctx.bind_keep for X's cascade and architecture; its end. */
BindKeep *bind_keep_new(const Ctx *x);
void bind_keep_free(BindKeep *k);
/* The unit that runs op class K of an Einsum bound to unit U: U if it has
 * a rate for K, else its epilogue (if any). Inline: the layer's energy
 * asks it per class of every Einsum of every price. */
static inline int op_unit(const Arch *a, int u, OpClass k) {
  const Unit *U = &a->units[u];
  return U->rate[k] > 0 || U->epilogue < 0 ? u : U->epilogue;
}
/* Can unit U, with its epilogue, run every operation of E? */
bool unit_runs(const Ctx *x, int e, int u);

/* ---- groups (group.c, members.c, extras.c) ---- */

/* Tile group G, decide what it holds (spilling what does not fit), map its
 * Einsums (evaluated in EV, in order, their compute known) and charge
 * their DRAM traffic, the plan's geometry's (the decode state) with it;
 * GE gets the tile, the reservation and the spills. With Ctx.base (a
 * group pricer), a member billed as at the group's last price keeps its
 * evaluation and Ctx.redo says which were charged again. Achieved
 * accounting only. False (diag set) when not even one tile fits. */
bool price_group(Ctx *x, int g, EinsumEval *ev, GroupEval *ge);

/* Ctx.frame: what a group holds before its spills and its members'
 * mappings per candidate tile, kept across its spill variants; forgotten
 * when another group is bound. */
Frame *frame_new(void);
void frame_forget(Frame *f);
void frame_free(Frame *f);
/* Ctx.held for a cascade of NTENSORS tensors, at rest; and its end. */
HeldScratch *held_scratch_new(int ntensors);
void held_scratch_free(HeldScratch *h);
/* Free N Einsums' kept nests (Ctx.nests) and the array (members.c). */
void nests_free(struct Nest **nests, int n);

/* The time of a candidate tile (group.c's choice): N members moving
 * MEM[i] elements each off chip, made their DRAM cycles at X's bandwidth
 * (in place) and composed with their compute BOUND; CYCLES, where not
 * NULL, keeps each member's cycles across trials (compose_span). */
double trial_latency(const Ctx *x, const EinsumEval *bound, int n,
                     double *mem, double *cycles);
/* The tile choice's order: is a tile of LAT_A cycles moving TRAFFIC_A
 * elements better than one of LAT_B, TRAFFIC_B? */
bool tile_faster(double lat_a, double traffic_a, double lat_b,
                 double traffic_b);

/* ---- the comparisons of times of one price (trace.c) ----
 *
 * What a bill (timing.c) keeps of the tile choice's weighing of times:
 * each trial -- its members' elements moved off chip, ELEMS[at .. at +
 * n), and their sum -- and each comparison of two trials with its
 * outcome. */
typedef struct TraceTrial {
  int at, n;
  double traffic;
} TraceTrial;

typedef struct TraceCompare {
  int a, b;    /* trials */
  bool better; /* a came out better than b */
} TraceCompare;

struct Trace {
  int ntrials, cap_trials, nelems, cap_elems, ncmp, cap_cmp;
  TraceTrial *trial;
  double *elems;
  TraceCompare *cmp;
};


/* Keep in T (NULL: nothing kept) a trial of N members moving ELEMS[i]
 * elements each off chip, TRAFFIC in all: its number (-1 without T). */
int trace_trial(Trace *t, const double *elems, int n, double traffic);
/* Keep in T (NULL: nothing) that trial A came out better than trial B,
 * or not (BETTER). */
void trace_compare(Trace *t, int a, int b, bool better);
/* T emptied, for the next price. */
void trace_clear(Trace *t);
void trace_free(Trace *t);

/* Einsum E's loop nest as a mapping problem: its distinct reads (each
 * x->touch[e][k] elements, what read k touches), then its output; no
 * tensor crosses a boundary yet (.dram false), no tile is fixed.
 * TENSOR_OF maps the problem's tensors to the cascade's, READ_AT each
 * read to its problem tensor (-1 past MAP_MAX_TENSORS). */
void einsum_nest(const Ctx *x, int e, MapProblem *p, int *tensor_of,
                 int *read_at);

/* M's tiled loops as "NAME/TILE ...", outermost first ("-": none), into
 * BUF of CAP bytes. */
void mapping_text(const Einsum *e, const Mapping *m, char *buf, size_t cap);

/* ---- DRAM traffic (bill.c) ---- */

/* One charge of DRAM traffic: N elements of tensor T to member MEMBER of
 * a group (charge()'s arguments), as a read or a write; INTRA forces the
 * intra-Einsum class (partial products). */
typedef struct Charge {
  int member, t;
  double n;
  bool write, intra;
} Charge;

typedef struct Charges {
  int n, cap;
  Charge *c;
} Charges;

/* Charge N elements of tensor T to Einsum evaluation R, as a read or a
 * write (its DRAM bytes, at the off-chip level), and into the per-tensor
 * totals; charge_einsum: to R alone, charge_total: to the totals alone
 * (a group's are summed after its members', in the order they were
 * charged; none with Ctx.no_totals). INTRA forces the intra-Einsum class (partial products). */
void charge(const Ctx *x, EinsumEval *r, int t, double n, bool write,
            bool intra);
void charge_einsum(const Ctx *x, EinsumEval *r, int t, double n, bool write,
                   bool intra);
void charge_total(const Ctx *x, int t, double n, bool write);
/* Append a charge to L (inline: a group's bills push a few per member
 * per spill variant). */
static inline void charges_push(Charges *l, int member, int t, double n,
                                bool write, bool intra) {
  VEC_PUSH(l->c, l->n, l->cap, ((Charge){member, t, n, write, intra}));
}
/* Every charge of L to R (charge_einsum), or to the totals. */
void charges_apply(const Ctx *x, EinsumEval *r, const Charges *l);
void charges_total(const Ctx *x, const Charges *l);

/* The plan's geometry at Einsum E: its algorithmic minimum (R's ideal
 * figures) and, with MOVES, its traffic (ideal accounting), with STATE
 * the decode state's (state_io), charged to R -- and into the per-tensor
 * totals, or with LOG into LOG instead (summed later). */
void geometry_traffic(const Ctx *x, int e, EinsumEval *r, bool moves,
                      bool state, Charges *log);

/* Member I of the group being priced, R, back to its evaluation as bound
 * where the context keeps one (Ctx.base): no traffic, no level's bytes. */
void member_restart(const Ctx *x, int i, EinsumEval *r);

/* What member I of a group was charged at its last price, and the facts
 * of its mapping its evaluation reads besides (its loops at the fusion
 * level, its footprint, its fit): where two prices of a member bill the
 * same, its evaluation is the same (members.c keeps the last per member). */
typedef struct Billed {
  bool set;
  Charges geo, own, extra; /* the geometry's (the decode state's), its
                              mapping's and the group's once-per-group
                              moves at it, its share of the design's
                              extras (design_extras), each in order */
  int norder, order[MAP_MAX_VARS];
  double tile[MAP_MAX_VARS];
  int coarsened, pinned;
  int nt; /* the group's tile ranks its problem nests in (which of its
             variables are the group's follows from them) */
  double footprint, capacity;
  bool fits;
} Billed;

/* B's facts from mapping M, nested in NT tile ranks of its group with
 * CAPACITY elements of buffer. */
void billed_facts(Billed *b, const Mapping *m, int nt, double capacity);
/* Do A and B bill the same charges (but the geometry's, a member's own)
 * with the same facts? */
bool billed_same(const Billed *a, const Billed *b);
/* Do A and B list the same charges, in the same order? */
bool charges_same(const Charges *a, const Charges *b);
/* Free N bills' lists (not the array). */
void billed_free(Billed *b, int n);

/* ---- FLAT's plan (flat.c) ---- */

/* Each attention block of C (the scores' GEMM, its softmax, the GEMM with
 * the values) one group, every other Einsum alone: the unfused plan where
 * C has no attention. NULL and D set if the grouping cannot run. */
Plan *flat_plan(const Cascade *c, const Shape *s, Diag *d);

/* ---- the memory levels (levels.c) ---- */

/* Einsum evaluation R's bytes at every level, per tensor, from its
 * off-chip traffic (charged) and a mapping per level inside the fusion
 * level; each level's time and energy; R's mem_cycles and the slowest
 * level (R.bound; price_einsum clears it where compute bounds R). The
 * layer's totals are levels_total's. */
void price_levels(Ctx *x, EinsumEval *r);
/* Add Einsum evaluation R's levels (price_levels') to the layer's totals:
 * each level's bytes, time and energy. */
void levels_total(Ctx *x, const EinsumEval *r);
/* Einsum evaluation R's loops at the fusion level: mapping M of problem
 * P (the group's), or none (M NULL: the algorithmic minimum maps
 * nothing). price_levels nests every level inside within them. */
void level_set_mapping(const Ctx *x, const EinsumEval *r, const Mapping *m,
                       const MapProblem *p);
/* Free N Einsums' kept inner levels (Ctx.inner) and the array. */
void inner_free(struct Inner **inner, int n);
/* Cycles level LV takes to move READ and WRITE bytes over INSTANCES
 * instances at CLOCK_HZ: each of its bandwidths (per instance) bounds,
 * the slowest the level's (0 where it has none). */
double level_cycles(const MemLevel *lv, double instances, double clock_hz,
                    double read, double write);
/* Record B bytes of tensor T read from / written to level L by Einsum
 * R. */
void level_add(const Ctx *x, const EinsumEval *r, int l, int t, double read,
               double write);

/* ---- composition (compose.c) ---- */

/* Cycles of N Einsums EV run as one group, with MEM[i] DRAM cycles each,
 * under the options' composition. CYCLES (may be NULL): each Einsum's own
 * cycles at MEM[i], where known (>= 0: a trial of the tile before, kept)
 * taken, else found and set -- read only under sequential composition,
 * whose sum they are. */
double compose_span(const Ctx *x, const EinsumEval *ev, int n,
                    const double *mem, double *cycles);
/* One Einsum's cycles: its compute and MEM DRAM cycles composed (the
 * slower, or their sum with no_overlap), plus its unit's pipeline. */
double einsum_cycles(const Ctx *x, const EinsumEval *r, double mem);
/* Group G's cycles, composed from cycle T of the layer (its start), with
 * its start, end, memory and busy cycles (X->ev). Not for the ideal's
 * pipelined span. */
double compose_group(Ctx *x, int g, double t);
/* compose_group's cycles alone, of the N members E of group G, setting
 * nothing: a bill's time per spill variant (timing.c). */
double compose_cycles(const Ctx *x, int g, const EinsumEval *e, int n,
                      double t);
/* Every group's cycles, start and end, and the layer's (X->ev). */
void compose_layer(Ctx *x);

/* ---- a GPU's kernels (gpu.c) ---- */

/* Cycles of matrix Einsum E on unit U, its output tiles in waves over
 * U's SMs (U has a tile). */
double gpu_wave_cycles(const Ctx *x, int e, const Unit *u);
/* Einsum E's compute R (price_compute's) under its units' efficiency
 * and, on a unit with a tile, its waves: unit, epilogue and compute
 * cycles. Only compute_cycles is set on an architecture without these
 * fields: the slower of the unit's and the epilogue's. */
void gpu_compute(const Ctx *x, int e, EinsumEval *r);
/* The fixed cycles of one kernel (a group of the plan); 0 without. */
double gpu_kernel_cycles(const Arch *a);

#endif
