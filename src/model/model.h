/* model.h — pricing a fusion plan on an accelerator (paper §V–VI).
 *
 * The paper priced every Einsum with Timeloop (minutes per Einsum); this is
 * an analytical model built on the same rules, answering in microseconds:
 *
 *   work      each Einsum's operations by class (MACC, add, exp, ...),
 *             from its expression tree and iteration space;
 *   binding   which compute unit runs it (§V-B: GEMMs on the 2D array,
 *             groups of elementwise Einsums on its 1D mode, elementwise
 *             producers of a GEMM on the small 1D array, elementwise work
 *             after a GEMM in 2D mode), or by cost: the assignment of a
 *             group's Einsums to units with the least compute time;
 *   mapping   a tiling of its loop nest between DRAM and the fusion
 *             level (the global buffer), searched exhaustively (with
 *             provably neutral choices pruned) under its capacity and the
 *             fusion group's constraints, minimizing DRAM traffic; and one
 *             tiling per level inside it, per instance (levels.c);
 *   cost      cycles = the slowest of compute (ops / (PEs x utilization x
 *             rate)) and every level (its bytes / its bandwidth); energy
 *             from every level's bytes and the per-op figures;
 *   designs   best unfused, ideal, MARCA-like, Geens-like, FLAT and the
 *             four fusion strategies, each "ideal" (algorithmic-minimum
 *             traffic) or "achieved" (from the mapping search);
 *   scenarios L layers, a prefill of I0 tokens then G decode steps.
 *
 * Every choice the paper leaves open is a named field of ModelOpts,
 * documented in docs/model.md. */
#ifndef MAMBALAYA_MODEL_H
#define MAMBALAYA_MODEL_H

#include "../arch/arch.h"
#include "../fusion/fusion.h"

/* ---- work ---- */

typedef struct Work {
  double ops[OPC_COUNT]; /* over the whole iteration space */
  double total;
  double points;   /* iteration points (all variables) */
  double parallel; /* points of the output: independent results */
  double reduced;  /* points per output: a reduction's length (1: none) */
  bool gemm;       /* GEMM-like: the paper's count (einsum_is_gemm) */
  bool matrix;     /* a matrix operation: a sum-reduced product of two
                      reads that are both reused (docs/model.md §2) */
} Work;

/* Count E's operations: each additive term over the variables it uses
 * (Einstein's convention); in a sum-reduced term, factors independent of
 * the reduced variables once per output, the rest per point, their last
 * multiply and the sum's add one MACC; constants free; softplus as exp +
 * add + log. */
void model_work(const Cascade *c, const Shape *s, const Einsum *e, Work *w);

/* ---- designs and options ---- */

/* Which plan a design prices. */
typedef enum {
  PLAN_STITCHED,   /* its strategy's plan, stitched by ModelOpts.stitch */
  PLAN_RECURRENCE, /* unfused, with the recurrence's RI region fused (the
                      MARCA-like and Geens-like baselines, §VI-B) */
  PLAN_ATTENTION,  /* unfused, with each attention block (QK, its softmax,
                      AV) one group tiled by query rows: FLAT (flat.c) */
} PlanSource;

/* The designs of §VI, one row each: X(ID, name, label, strategy,
 * baseline...), where the baseline is the ModelOpts fields that make the
 * design what it is (model_default_opts applies them). The options'
 * choices, `reproduce`, the figures, the study loader and the tests
 * iterate this table:
 * adding a design (or a baseline) is one row here; a new strategy is one
 * row of fusion.h's STRATEGIES too. Rows priced with a strategy's plan and
 * no baseline field are the paper's fusion strategies (design_is_strategy).
 *
 *   ideal   a lower bound: no inter-Einsum traffic, every Einsum on the
 *           fastest unit able to run it; pipelined, the most of the
 *           slowest Einsum, the units' least busiest load over every
 *           fractional binding and every level's bytes / bandwidth
 *           (compose.c, docs/model.md §5);
 *   marca   unfused + RI fusion of the recurrence's region, with
 *           intermediates over the whole iterative rank;
 *   geens   the same region, the state partitioned to unit size along the
 *           iterative rank;
 *   flat    FLAT (Kao et al., ASPLOS 2023), the attention baseline FuseMax
 *           compares against: each attention block fused at row
 *           granularity (whole rows of the scores held, so a row's passes
 *           and reductions stay on chip: no two-pass spill, no partial
 *           products by default), its GEMMs on the
 *           2D array and its softmax on the 1D array; on a cascade without
 *           attention it is the unfused design.
 * The rules that depend on what a group contains (two passes, the distance
 * spill, RD partial products) are not a design's: every plan is priced by
 * its groups' content (docs/model.md §2, "One plan, one price"). */
#define DESIGNS(X)                                                          \
  X(UNFUSED, "unfused", "Best unfused", ST_UNFUSED, .plan = PLAN_STITCHED)  \
  X(IDEAL, "ideal", "Ideal fusion", ST_UNFUSED, .bound = true)              \
  X(MARCA, "marca", "MARCA-like", ST_UNFUSED, .plan = PLAN_RECURRENCE,      \
    .hold_whole = true)                                                     \
  X(GEENS, "geens", "Geens-like", ST_UNFUSED, .plan = PLAN_RECURRENCE)      \
  X(FLAT, "flat", "FLAT", ST_UNFUSED, .plan = PLAN_ATTENTION,               \
    .bind_alone = true)                                                     \
  X(RI, "ri", "RI", ST_RI, .plan = PLAN_STITCHED)                           \
  X(RI_RSB, "ri+rsb", "RI+RSb", ST_RI_RSB, .plan = PLAN_STITCHED)           \
  X(RI_RSB_RSP, "ri+rsb+rsp", "RI+RSb+RSp", ST_RI_RSB_RSP,                  \
    .plan = PLAN_STITCHED)                                                  \
  X(FULL, "full", "Fully fused", ST_FULL, .plan = PLAN_STITCHED)

typedef enum {
#define X(id, ...) DES_##id,
  DESIGNS(X)
#undef X
  DES_COUNT
} Design;

const char *design_name(Design d); /* "unfused", "ideal", "marca", ... */
const char *design_label(Design d); /* "Best unfused", "MARCA-like", ... */
bool design_from_name(const char *name, Design *d);
/* "unfused, ideal, ..., full": every design's name, for messages, into
 * BUF (256 bytes hold them). */
const char *design_names(char *buf, size_t n);
/* The fusion strategy a design stitches with. */
Strategy design_strategy(Design d);
/* Is D one of the paper's fusion strategies (RI ... full)? The figures
 * and `reproduce` iterate these. */
bool design_is_strategy(Design d);
/* The design that prices a plan of strategy S (unfused, ri, ..., full). */
Design design_of_strategy(Strategy s);
/* A design's label for a plan: "Fully fused" only when the plan is one
 * group ("All classes, 5 groups" otherwise). BUF receives it. */
const char *design_plan_label(Design d, const Plan *p, char *buf, size_t n);

typedef enum { COMPOSE_SEQUENTIAL, COMPOSE_PIPELINED } Compose;
/* How a group's Einsums are bound to units (docs/model.md §2): the
 * paper's rule (§V-B), or, per group, the assignment to the units able to
 * run them that takes the least compute time (bind.c). */
typedef enum { BIND_RULE, BIND_COST, BIND_COUNT } BindPolicy;
const char *bind_policy_name(BindPolicy b); /* "rule", "cost" */
typedef enum { ACCOUNT_ACHIEVED, ACCOUNT_IDEAL } Accounting;

const char *compose_name(Compose c);       /* "sequential", "pipelined" */
const char *accounting_name(Accounting a); /* "achieved", "ideal" */

/* MODEL_OPTIONS(X): every choice the paper leaves open, one row each
 * (docs/model.md names each with its flag). From a row come its field of
 * ModelOpts and of ModelOverrides, its default, the apply step, its JSON
 * in results (docs/results.md), its command-line flags
 * (src/cli/modelopts.c) and its entry in a study's options
 * (src/sweep/study.c): adding an option is one row here (and its
 * paragraph in docs/model.md).
 *
 * X(KIND, name, field, type, default, flag, arg, hi, names, noun, sweep,
 *   help)
 *   KIND     BOOL: --flag sets it, --no-flag clears it; SWITCH: --flag
 *            alone sets it; ENUM: --flag NAME, one of names(0 .. hi-1);
 *            INT: --flag N, a whole number in [0, hi]; SHARE: --flag X,
 *            a double in (0, 1]
 *   name     the option: ModelOverrides' field, its key in JSON and in a
 *            study's options
 *   field    ModelOpts' field, of TYPE; DEFAULT an expression over the
 *            design's baseline `o` (a ModelOpts)
 *   flag     the flag without its dashes; ARG its value's name in --help
 *   names    the names of the field's values (JSON, ENUM's values), or
 *            NULL (a bool, a number); NOUN what one is called in errors
 *   sweep    whether a study's options take it (a study's stitchers are
 *            its designs': docs/sweep.md)
 *   help     --help's line */
#define MODEL_OPTIONS(X)                                                      \
  X(ENUM, stitch, stitch, Stitcher, STITCH_GREEDY, "stitch", "HOW",           \
    STITCH_COUNT, stitcher_name, "stitcher", false,                           \
    "greedy (default), alg1 or global: how the fused designs stitch their "   \
    "groups")                                                                 \
  /* The named designs bind by the paper's rule (§V-B), as the paper        \
   * prices them; the search binds by cost (docs/model.md §2). */           \
  X(ENUM, bind, bind, BindPolicy, BIND_RULE, "bind", "HOW", BIND_COUNT,       \
    bind_policy_name, "binding", true,                                        \
    "rule (the paper's §V-B; default for named designs) or cost (each "       \
    "group's Einsums on the units with the least compute time; default for "  \
    "search)")                                                                \
  X(SWITCH, pipelined, compose, Compose, COMPOSE_SEQUENTIAL, "pipelined",     \
    NULL, 2, compose_name, "composition", true,                               \
    "compose a group's Einsums by parallel pipelining")                       \
  X(SWITCH, ideal, accounting, Accounting, ACCOUNT_ACHIEVED, "ideal", NULL,   \
    2, accounting_name, "accounting", true,                                   \
    "the plan's algorithmic-minimum traffic instead of the mapping search's") \
  X(BOOL, state_io, state_io, bool, false, "state-io", NULL, 2, NULL, NULL,   \
    true,                                                                     \
    "count the decode state (H0, the convolution history, a KV cache): read " \
    "before the pass, the steps it adds written after (default: on for "     \
    "--phase decode, off for a prefill, as the paper)")                       \
  X(SWITCH, no_overlap, no_overlap, bool, false, "no-overlap", NULL, 2, NULL, \
    NULL, true, "an Einsum's compute and DRAM transfers do not overlap")            \
  X(SHARE, reserve_share, reserve_share, double, 0.75, "reserve-share", "X",  \
    1, NULL, "share in (0, 1]", true,                                         \
    "share of the buffer a group may hold across its Einsums (default "       \
    "0.75)")                                                                  \
  X(SHARE, weight_share, weight_share, double, 0.5, "weight-share", "X", 1,   \
    NULL, "share in (0, 1]", true,                                            \
    "a group's weights stay resident when they fit in this share of the "     \
    "buffer (default 0.5)")                                                   \
  /* The fully fused design's rules (§IV-E, §VI), achieved accounting.     \
   * Each fires only where a group holds what it is about (a reduction     \
   * read on both sides over a rank its tile splits, a far reader, an RD   \
   * pair), so they price any plan by its content. FLAT holds whole rows   \
   * of the scores: a row's reductions complete on chip, so it writes no   \
   * partial products (its tile holds the reduced rank whole: two passes   \
   * never fire). */                                                        \
  X(BOOL, two_pass, two_pass, bool, true, "two-pass", NULL, 2, NULL, NULL,    \
    true,                                                                     \
    "FuseMax's second pass over LEX and X (default: on for full only)")       \
  X(INT, spill_distance, spill_distance, int, 12, "spill-distance", "N",      \
    1000000, NULL, "count of Einsums (0 = never)", true,                     \
    "send an on-chip intermediate off chip when its last reader is more "     \
    "than N Einsums later (default 12; 0: never)")       \
  X(BOOL, rd_partials, rd_partials, bool, o.plan != PLAN_ATTENTION,           \
    "rd-partials", NULL, 2, NULL, NULL, true,                                 \
    "RD pairs write partial products (default: on for full only)")

/* The options as one enum: MO_stitch, ... */
#define MODEL_OPTION_ENUM(K, name, ...) MO_##name,
typedef enum { MODEL_OPTIONS(MODEL_OPTION_ENUM) MO_COUNT } ModelOption;
#undef MODEL_OPTION_ENUM

/* Every choice the paper leaves open, and the baselines' behaviour. */
typedef struct ModelOpts {
#define MODEL_OPTION_FIELD(K, name, field, type, ...) type field;
  MODEL_OPTIONS(MODEL_OPTION_FIELD)
#undef MODEL_OPTION_FIELD
  /* The baselines' behaviour (set by their DESIGNS row, no flag): */
  PlanSource plan; /* which plan the design prices */
  bool bound;      /* a lower bound: the plan's algorithmic minimum traffic
                      and the fastest unit for each Einsum (ideal) */
  bool hold_whole; /* intermediates held over the whole iterative rank
                      (MARCA-like) */
  bool bind_alone; /* every Einsum on the unit it has alone: elementwise
                      work on the vector unit even after a GEMM in its group
                      (FLAT's softmax on the 1D array) */
} ModelOpts;

/* The options each design is evaluated with by default: the defaults of
 * MODEL_OPTIONS over the fields of its DESIGNS row. */
ModelOpts model_default_opts(Design d);

/* Options a user gave, applied over each design's defaults: an int
 * (a bool, an enum's value, a count) is -1 where the default stands, a
 * share NAN. */
typedef struct ModelOverrides {
#define MODEL_OVERRIDE_FIELD(K, name, field, type, ...) MO_UNSET_##K name;
#define MO_UNSET_BOOL int
#define MO_UNSET_SWITCH int
#define MO_UNSET_ENUM int
#define MO_UNSET_INT int
#define MO_UNSET_SHARE double
  MODEL_OPTIONS(MODEL_OVERRIDE_FIELD)
#undef MODEL_OVERRIDE_FIELD
} ModelOverrides;

ModelOverrides model_no_overrides(void);
/* Design D's options with O's overrides. */
ModelOpts model_opts_with(const ModelOverrides *o, Design d);
/* model_opts_for_plan for pricing plan P (NULL: the design's own): the
 * binding P says it was priced under (a plan file's "bind", the search's)
 * unless O gives one. */
ModelOpts model_opts_for_plan(const ModelOverrides *o, Design d,
                              const Plan *p);

/* The options as data, for the front ends that iterate them (results'
 * JSON, a study's options): option K's row, and its value as a double
 * (a bool 0 or 1, an enum's value). */
typedef enum {
  MOK_BOOL,
  MOK_SWITCH,
  MOK_ENUM,
  MOK_INT,
  MOK_SHARE
} ModelOptionKind;
typedef struct ModelOptionInfo {
  const char *name;  /* "spill_distance" */
  const char *field; /* ModelOpts' field: "compose" for pipelined */
  ModelOptionKind kind;
  int hi;           /* ENUM: the count; INT: the most */
  const char *noun; /* "stitcher", "count of Einsums" */
  bool sweep;       /* a study's options take it */
} ModelOptionInfo;
extern const ModelOptionInfo model_option_info[MO_COUNT];
/* The name of option K's value V ("pipelined", "cost"); NULL for a bool
 * or a number. */
const char *model_option_value_name(ModelOption k, int v);
double model_opt_value(const ModelOpts *o, ModelOption k);
/* NAN where O does not set K. */
double model_override_value(const ModelOverrides *o, ModelOption k);
void model_override_set(ModelOverrides *o, ModelOption k, double v);

/* ---- evaluation ---- */

typedef enum {
  SPILL_CAPACITY, /* the group's on-chip set did not fit (partial fusion) */
  SPILL_DISTANCE, /* spill_distance */
  SPILL_TWO_PASS, /* two_pass: written, then read again */
  SPILL_CHOSEN,   /* the plan sends it off chip (Plan.spilled: the
                     search's choice) */
  SPILL_OVERBOOKED, /* part of its tile: the group's tile overbooks its
                       reservation, the share that does not fit goes off
                       chip and back (group.c) */
  SPILL_COUNT
} SpillReason;

const char *spill_reason_name(SpillReason r); /* "capacity", ... */

/* The distance rule (ModelOpts.spill_distance): does intermediate T's
 * last reader lie more than DISTANCE Einsums after its producer? Never
 * for DISTANCE <= 0. It applies to an intermediate handed over inside its
 * group and not written off chip anyway (group.c), unless the plan
 * chooses its spills (Plan.spilled). OUT (may be NULL: every edge is
 * walked): the cascade's edges by producer, so that only the producer's
 * are. */
bool model_distance_spills(const Cascade *c, const EdgeIndex *out, int t,
                           int distance);

typedef struct Spill {
  int tensor;
  SpillReason why;
} Spill;

/* One loop of an Einsum's loop nest (docs/model.md §4): variable VAR
 * (an index into the Einsum's variables) stepped TRIPS times over tiles
 * of TILE points each -- in time, or side by side over instances of the
 * level below (SPATIAL). The last tile of a loop whose tile does not
 * divide its extent is the leftover (Timeloop's "N=32,24"). */
typedef struct NestLoop {
  int var;
  double tile, trips;
  bool spatial;
  bool group; /* a loop over the fusion group's tiles: the group's other
                 Einsums run inside each step, so nothing of this one
                 stays on chip across it (but what the group holds) */
} NestLoop;

enum { NEST_MAX_LOOPS = 24 };

/* One Einsum's use of one memory level, or a level's total over the
 * layer (docs/model.md §4). */
typedef struct LevelUse {
  double read, write; /* bytes read from and written into the level */
  double cycles;      /* (read + write) / the level's bandwidth over the
                         instances in use; 0 when unlimited */
  double energy_pj;   /* read x read_energy + write x write_energy */
  double footprint;   /* elements per instance of the Einsum's tile: the
                         fusion level's mapping, or this level's own */
  double instances;   /* instances the Einsum's iteration space is split
                         over (1 outside the fusion level) */
  bool fits;          /* the tile fits one instance; else its operands
                         stream from the next level out (the search's
                         least footprint) */
  char mapping[48];   /* a level inside the fusion level: its tiled loops
                         above it, as EinsumEval.mapping ("" elsewhere) */
  /* The loops that bring this level its tiles, outermost first: at the
   * fusion level the Einsum's mapping from off chip (the group's tile
   * loops first), at a level inside it the loops within one tile of the
   * level above (its spatial split last). Every level's loops together,
   * outermost level first, are the Einsum's one loop nest: the nest
   * every boundary's counts come from (and `export timeloop` writes).
   * None at off-chip and staging levels. */
  int nloops;
  NestLoop loop[NEST_MAX_LOOPS];
  /* What bounded the search of these loops (Mapping's): tiles at powers
   * of 2^(2^coarsened), classes of variables kept in written order. */
  int coarsened, pinned;
} LevelUse;

/* Bytes of one tensor at one level for one Einsum. */
typedef struct TensorUse {
  int tensor;
  double read, write;
} TensorUse;

typedef struct EinsumEval {
  int einsum, group;
  int unit;     /* index into Arch.units */
  int epilogue; /* the unit running the ops UNIT cannot (a GPU's CUDA
                   cores beside its tensor cores), or -1 */
  Work work;
  double util;           /* spatial utilization of the unit, 0..1 */
  double spread;         /* PEs per output a reduction spreads over (1:
                            none) */
  double unit_cycles, epilogue_cycles; /* compute on each (overlapped) */
  double compute_cycles; /* the slower of the two */
  double mem_cycles;     /* the slowest level: its bytes / bandwidth */
  int bound;             /* that level, or -1 when compute is slower */
  double cycles;         /* compute and memory composed, + pipeline */
  double read, write;    /* DRAM bytes */
  double inter_read, inter_write; /* intermediates (read by an Einsum
                                     other than their producer) */
  double intra_read, intra_write; /* weights, inputs, outputs, partial
                                     products */
  double ideal_inter, ideal_intra; /* the plan's algorithmic minimum */
  double energy_pj;
  double footprint, capacity; /* its tiles in the buffer, elements */
  bool fits;                  /* footprint <= capacity */
  char mapping[160]; /* loop order and tiles, e.g. "m/512 d/256 | ed" */
  double start, end; /* cycles from the start of the layer */
} EinsumEval;

typedef struct GroupEval {
  double cycles;
  double start, end;
  double busy[ROLE_COUNT]; /* compute cycles per role */
  double mem_cycles;
  int first, n; /* its Einsums: Eval.e[first .. first+n) */
  int ntiled;
  int tiled[IR_MAX_RANKS];  /* the ranks its tile loops over */
  double tile[IR_MAX_RANKS]; /* and the tile along each */
  double reserve, budget;   /* elements held across its Einsums, and what
                               it may hold (reserve_share x buffer) */
  int nspills;
  Spill *spills;            /* what went off chip that the plan keeps on
                               chip, and why */
  int level;                /* the memory level it is fused at (its plan
                               group's, else the architecture's) */
} GroupEval;

/* A binding -- the architecture's `binding:` or the spec's `units:` --
 * that puts a matrix operation on a unit without the matrix role, where
 * another unit runs it faster: what it costs (bind.c). A name bound for
 * one cascade binds it in every other (AV elementwise in one attention
 * cascade, the A·V product in the next), so it is said, never silent. */
typedef struct BindWarning {
  int einsum;
  int unit, best;      /* the unit it is bound to; the fastest able one */
  double cycles, best_cycles; /* its compute (with the pipeline) on each */
  const char *file;    /* where the binding is written */
  Loc at;
} BindWarning;

typedef struct Eval {
  Design design;
  ModelOpts opts;
  Plan *plan; /* owned */
  char label[64]; /* design_plan_label */
  int n;
  EinsumEval *e; /* in execution order */
  int ngroups;
  GroupEval *g;
  double *tensor_read, *tensor_write; /* DRAM bytes per tensor */
  double cycles, seconds;
  double read, write, inter, intra; /* DRAM bytes */
  double ideal_inter, ideal_intra;
  double ops;
  /* Energy by role: off-chip memory; the staging and fusion levels;
   * the levels inside the fusion level; operations. */
  double energy_pj, energy_dram, energy_glb, energy_reg, energy_ops;
  int nlevels;     /* the architecture's */
  LevelUse *use;   /* [i * nlevels + l]: Einsum i (execution order) at
                      level l */
  LevelUse *level; /* per level, summed over the layer */
  int nslots;      /* room for tensors per Einsum and level */
  TensorUse *tuse; /* per Einsum id and level: eval_tensors */
  int *ntuse;      /* the tensors used in each */
  double *unit_energy; /* pJ of operations per unit (Arch.units): the unit
                          an Einsum runs on, or its epilogue for the classes
                          the unit has no rate for; they sum to energy_ops */
  int bind_capped; /* groups bound by cost whose assignments were not all
                      tried (bind.c's budget): their binding is the best
                      found, not proven least */
  int nwarnings;
  BindWarning *warnings; /* the matrix operations bound off the matrix
                            role, in cascade order */
} Eval;

/* A GPU kernel as its implementation runs it (docs/architecture.md, "GPU
 * kernels"): BLOCKS blocks of work of BLOCK threads, at most PER_SM of
 * them resident on an SM (0: as many as its `threads` allow; a launch
 * that caps its grid and strides over the rest), each thread waiting
 * STEPS round trips to off-chip memory one after another per block. */
typedef struct GpuKernel {
  double blocks;
  int block, per_sm;
  double steps;
} GpuKernel;
/* The seconds K's waits add on A beyond the one every kernel pays
 * (gpu_kernel_cycles): its blocks in waves over the SMs, STEPS latencies
 * each; 0 on an architecture without `latency` and `threads`
 * (src/model/gpu.c). */
double gpu_wait_seconds(const Arch *a, const GpuKernel *k);

/* Price design D of cascade C (bound by S) on A. PAIRS from
 * fusion_classify. NULL and DIAG set when the architecture cannot run the
 * cascade (an op class no unit implements; a buffer too small for one
 * tile), naming the architecture file, the unit and the Einsum. */
Eval *model_eval(const Cascade *c, const Shape *s, const Arch *a,
                 const Pair *pairs, Design d, const ModelOpts *o, Diag *diag);
/* The same for a given plan (owned by the Eval from here on, even on
 * failure), priced with D's rules (its binding; MARCA's whole
 * intermediates). */
Eval *model_eval_plan(const Cascade *c, const Shape *s, const Arch *a,
                      const Pair *pairs, Design d, Plan *plan,
                      const ModelOpts *o, Diag *diag);
void eval_free(Eval *e);
/* Einsum I's (execution order) bytes per tensor at level L: *T gets
 * them; returns how many. */
int eval_tensors(const Eval *ev, int i, int l, const TensorUse **t);

/* ---- reuse across evaluations ----
 *
 * The mapping search is a pure function of its problem (below), and the
 * same problems come back: the designs of one point share their unfused
 * Einsums; a sweep's points that differ in the arrays, the bandwidth or
 * the clock pose the same loop nests to the same buffer. A MapMemo keeps
 * each answer (memo.c); an evaluation given one gives exactly the figures
 * it gives without. SHARED: threads may use it at once (a lock guards the
 * table, the searches run outside it); else one thread only. */
typedef struct MapMemo MapMemo;
MapMemo *map_memo_new(bool shared);
void map_memo_free(MapMemo *m);
/* Hits and misses so far (for benchmarks). */
void map_memo_stats(const MapMemo *m, long *hits, long *misses);
/* The plan design D prices: its strategy stitched with O's stitcher
 * (MARCA's and Geens's: the recurrence's region). NULL and DIAG set when
 * the stitcher cannot serve the cascade. A plan does not depend on the
 * architecture: a sweep stitches once per cascade and shape. */
Plan *model_plan(const Cascade *c, const Shape *s, const Pair *pairs,
                 Design d, const ModelOpts *o, Diag *diag);
/* model_eval_plan with its mapping searches through MEMO (NULL: none). */
Eval *model_eval_memo(const Cascade *c, const Shape *s, const Arch *a,
                      const Pair *pairs, Design d, Plan *plan,
                      const ModelOpts *o, MapMemo *memo, Diag *diag);
/* model_eval_memo at A's own fusion level, the bound too (model_eval_memo
 * prices the bound over every level A can fuse in: model_ideal_least),
 * each group of PLAN that names its own level (Group.level) at that one. */
Eval *model_eval_at_level(const Cascade *c, const Shape *s, const Arch *a,
                          const Pair *pairs, Design d, Plan *plan,
                          const ModelOpts *o, MapMemo *memo, Diag *diag);

/* What the bound over fusion levels keeps least: the layer's time (ties:
 * energy), its energy or its off-chip bytes (ties: time). */
typedef enum { IDEAL_BY_TIME, IDEAL_BY_ENERGY, IDEAL_BY_TRAFFIC } IdealBy;
/* Design D (a bound: the ideal) on PLAN (owned) over every fusion level A
 * can take, each group at its own (a plan may fuse each group at its own
 * level: docs/model.md §5): priced at every candidate level, each group
 * given the level where its figure BY is least, the plan priced so, and
 * the least of that and the single levels' kept. Under sequential
 * composition that is the least over every mixed-level plan of the
 * ideal's groups. model_eval_at_level where A has one candidate. */
Eval *model_ideal_least(const Cascade *c, const Shape *s, const Arch *a,
                        const Pair *pairs, Design d, Plan *plan,
                        const ModelOpts *o, IdealBy by, MapMemo *memo,
                        Diag *diag);

/* ---- one group alone ----
 *
 * A group's price depends on its own Einsums only (src/search/search.h):
 * its binding, its traffic under the plan's geometry and spills, every
 * level's bytes, its cycles and energy. A GroupPricer prices one group of
 * a plan without the rest, in time proportional to the group: exactly
 * the figures model_eval_memo gives that group's Einsums and GroupEval in
 * the whole plan (a test checks it). The work and what every read touches
 * are computed once, when it is made; the binding and compute once per
 * group (model_group_bind), the traffic and the rest once per spill
 * choice (model_group_price). */
typedef struct GroupPricer GroupPricer;
/* A pricer of groups of C (bound by S) on A, priced as design D prices
 * under O (MEMO and DIAG as model_eval_memo's), every group at A's fusion
 * level (a group's Group.level is not read: the search makes one pricer
 * per level). NULL for a bound (the ideal's units and pipelined span are
 * the whole cascade's). */
GroupPricer *model_group_pricer_new(const Cascade *c, const Shape *s,
                                    const Arch *a, const Pair *pairs,
                                    Design d, const ModelOpts *o,
                                    MapMemo *memo, Diag *diag);
void model_group_pricer_free(GroupPricer *gp);
/* Bind group G of PLAN (kept, not owned, until the next bind) to units and
 * price its compute: the pricer's Eval, whose bind_capped counts G's
 * binding as model_eval_memo counts it (its figures are
 * model_group_price's to fill); NULL (diag set) when a unit cannot run one
 * of G's Einsums. */
const Eval *model_group_bind(GroupPricer *gp, Plan *plan, int g);
/* Price the group bound last under its plan's spills (Plan.spilled, read
 * now), starting at cycle START of the layer (the sum of the cycles of the
 * groups before it: a sequential group's cycles are the advance of the
 * layer's clock, as model_eval_memo composes them). An Eval, the
 * pricer's, valid until its next call, whose group G (g[G]) and its
 * Einsums (e[g[G].first ...]) are what model_eval_memo gives them in the
 * whole plan. The layer's totals (read, write, energy_pj, cycles, level,
 * tensor_read, ...) are not summed: the search reads G's figures alone.
 * NULL (diag set) when not even one tile of it fits. */
const Eval *model_group_price(GroupPricer *gp, double start);

/* ---- a group's price at any bandwidth and clock (timing.c) ----
 *
 * A group's price is its choices (binding, tile, spills, overbooking),
 * every level's bytes, its energy and traffic -- its bill, which no
 * level's bandwidth and not the clock changes -- and its time at a
 * bandwidth and clock, which the bill gives cheaply: each member's
 * memory time from its bytes, the unit the latency binding gives it
 * (bind_for_latency: its compute on each unit it weighs is in the bill),
 * the group's composition from its start. Where the tile was chosen by
 * time (docs/model.md §3: a member refetches weights, or a tile
 * overbooks), the bill keeps every comparison of times the choice made,
 * with the trials' moves; it serves a bandwidth and clock only where
 * each comes out as it did (then every choice is the same), and says
 * no elsewhere: the group is priced again there. A search keeps bills
 * across the points of a sweep (search.h's GroupMemo). */
typedef struct GroupBill GroupBill;
/* Make GP's prices keep what a bill needs (the comparisons of times). */
void model_group_pricer_bills(GroupPricer *gp);
/* A bill for the group GP bound last (model_group_bind): its members'
 * compute on every unit the latency binding weighs, no variant yet. */
GroupBill *group_bill_new(GroupPricer *gp);
/* Add the price GP gave last (model_group_price, its pricer making
 * bills) as B's next variant. */
void group_bill_add(GroupBill *b, const GroupPricer *gp);
int group_bill_variants(const GroupBill *b);
size_t group_bill_bytes(const GroupBill *b);
void group_bill_free(GroupBill *b);
/* Each variant's cycles (into CYCLES, per variant) on A -- the
 * architecture of B's prices, at any bandwidths and clock -- from cycle
 * START of the layer: what model_group_price gives there, to the bit. False
 * where a comparison of times the prices made comes out otherwise on A
 * (CYCLES then unset). */
bool group_bill_cycles(const GroupBill *b, const Arch *a, double start,
                       double *cycles);
/* A's fields but the levels' bandwidths (of which only whether each has
 * one) and the clock, as words into *KEY (allocated; their number
 * returned): architectures with equal words price every group to the
 * same bill. */
int model_arch_key(const Arch *a, uint64_t **key);
/* The inputs of a pricer's prices (model_group_pricer_new's: C bound by
 * S on A, design D under O) but the levels' bandwidths and the clock, as
 * words into *KEY (allocated; their number returned): equal words, equal
 * bills. The cascade is named by its address (a key outlives none). */
int model_group_key(const Cascade *c, const Shape *s, const Arch *a,
                    Design d, const ModelOpts *o, uint64_t **key);

/* ---- the mapping search (exposed for tests) ---- */

enum { MAP_MAX_VARS = 16, MAP_MAX_TENSORS = 24 };

typedef struct MapTensor {
  VarSet vars;   /* variables indexing it */
  double elems;  /* its size */
  int ndims;
  VarSet dim_vars[IR_MAX_RANKS]; /* variables of each coordinate */
  double dim_coef[IR_MAX_RANKS][MAP_MAX_VARS]; /* |coefficient| per var */
  bool output;   /* written (partial sums when a reduction is tiled out) */
  bool dram;     /* moves between DRAM and the buffer (else on chip) */
} MapTensor;

typedef struct MapProblem {
  int nvars;
  double size[MAP_MAX_VARS];
  int ntensors;
  MapTensor t[MAP_MAX_TENSORS];
  double capacity; /* elements the buffer can give this loop nest */
  VarSet outer;    /* variables tiled by the fusion group, outermost */
  double outer_tile[MAP_MAX_VARS];
  /* A level inside the fusion level: the temporal loops of the levels
   * above it, outermost first (fixed; their trips count). SIZE is then
   * each variable's last tile above, which this level's loops tile
   * within, while each tensor's ELEMS stays its whole size: its count at
   * this boundary is over the whole nest, these loops included
   * (docs/model.md §4). */
  int nabove;
  NestLoop above[NEST_MAX_LOOPS];
} MapProblem;

typedef struct Mapping {
  int norder;
  int order[MAP_MAX_VARS]; /* tiled loops, outermost first */
  double tile[MAP_MAX_VARS];
  double read[MAP_MAX_TENSORS], write[MAP_MAX_TENSORS]; /* elements */
  double traffic;   /* total elements moved */
  double footprint; /* elements held in the buffer */
  bool fits;
  long evaluated; /* candidate mappings priced */
  int pinned;     /* classes kept innermost in their written order, not
                     permuted (beyond MAP_MAX_PERM_CLASSES) */
  int coarsened;  /* tile candidates were powers of 2^coarsened (the
                     search's budget: see map_search) */
} Mapping;

/* Minimize DRAM traffic (then footprint) over loop orders and tile sizes
 * (powers of two and the full extent) among the mappings that fit;
 * best->fits is false when none does (then it has the least footprint).
 * Variables that index every DRAM tensor, or the same tensors as another,
 * cannot change the traffic and are not enumerated separately; the
 * innermost tiled loop's tile cannot either and is kept small. When the
 * space exceeds MAP_BUDGET candidates (many small ranks: a convolution),
 * tiles are tried at powers of 4, 16, ... until it does not; the loop
 * orders stay exhaustive up to MAP_MAX_PERM_CLASSES classes, beyond which
 * the classes indexing one DRAM tensor only keep their written order. */
enum { MAP_BUDGET = 1 << 12, MAP_MAX_PERM_CLASSES = 6 };
void map_search(const MapProblem *p, Mapping *best);
/* map_search through MEMO (NULL: none): a problem met before is answered
 * with the Mapping the search returned then. */
void map_search_memo(MapMemo *memo, const MapProblem *p, Mapping *best);
/* Traffic and footprint of one mapping (ORDER and TILE set). */
void map_price(const MapProblem *p, Mapping *m);

#endif
