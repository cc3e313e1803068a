/* ir.h — the Cascade: the one data model every later stage reads.
 *
 * A cascade is an ordered list of extended Einsums over named tensors
 * (paper §II and appendix). Each Einsum writes one output tensor from an
 * expression tree over tensor reads, constants, named scalars and index
 * values, joined by the operators of ops.h's table:
 *
 *     TX[b,i,d] = WConv[d,f] * TTX[b, i+f-F+1, d] + BTX[d]
 *
 * Ranks are the named dimensions of tensors (B, I, D, ...); their sizes are
 * symbolic (`D: d_inner`) until a Shape binds them for one model (a rank
 * may be another name of one: `J: I`). Inside an Einsum, lower-case index
 * variables (b, i, d, f) range over ranks; a tensor is indexed by affine
 * expressions of them (i+f-F+1, Q*p+q). Variables absent from the output
 * are reduced: summed per additive term (Einstein's convention) or by an
 * explicit operator (`:: max(k)`).
 *
 * A read of an earlier iteration (H[b, i-1, d, n]) is *lagged*: it closes
 * the recurrences of iterative ranks, and reads before the start of the rank
 * take the tensor's initialization (`H[b, i<0, d, n] = 0`) or zero.
 *
 * Everything a Cascade owns lives in its arena; cascade_free releases it.
 * The derived graph (producers, the producer->consumer edges, the order)
 * is filled in by cascade_finish and never changes afterwards. */
#ifndef MAMBALAYA_IR_H
#define MAMBALAYA_IR_H

#include "../util/util.h"
#include "ops.h"

enum {
  IR_MAX_VARS = 64,  /* index variables per Einsum (a VarSet is 64 bits) */
  IR_MAX_RANKS = 16, /* ranks per tensor */
  IR_MAX_TERMS = 8,  /* variables in one affine index */
};

/* A set of one Einsum's index variables: bit v is Einsum.vars[v]. */
typedef uint64_t VarSet;
#define VARSET_HAS(s, v) (((s) >> (v)) & 1u)
#define VARSET_BIT(v) ((VarSet)1 << (v))
int varset_count(VarSet s);

/* A value: a number, a named scalar, an index variable's value (the `j`
 * and `i` of a causal mask `j <= i`), a tensor read, or an operator of
 * src/ir/ops.h's table applied to op_arity(op) operands. */
typedef enum { EX_NUM, EX_SYM, EX_VAR, EX_READ, EX_OP } ExprKind;

typedef enum { RED_SUM, RED_MAX, RED_MIN, RED_PROD, RED_COUNT } RedOp;

typedef struct Expr Expr;

/* An affine index: sum of coef[k] * var[k], plus off. Coefficients and the
 * offset are constant expressions (numbers, rank sizes, parameters):
 * `i-1`, `i+f-F+1`, `Q*p+q`. */
typedef struct Index {
  int nterms;
  int var[IR_MAX_TERMS];
  Expr *coef[IR_MAX_TERMS]; /* NULL means 1 */
  Expr *off;                /* NULL means 0 */
  Loc loc;
  bool plain; /* exactly one variable, coefficient 1, no offset */
  int lag;    /* v - c with a constant c >= 1: c (an earlier iteration) */
} Index;

/* A tensor access T[idx0, idx1, ...] inside one Einsum. */
typedef struct Access {
  int tensor;
  int n;
  Index *idx;
  Loc loc;
  int cond_dim; /* initializations only: the dimension written `v<0` */
} Access;

struct Expr {
  ExprKind kind;
  Loc loc;
  double num;  /* EX_NUM */
  int sym;     /* EX_SYM: index into Cascade.syms */
  int var;     /* EX_VAR: the Einsum's variable */
  Access *acc; /* EX_READ */
  Op op;       /* EX_OP */
  Expr *a, *b, *c; /* its operands, in order */
};

/* An index variable of one Einsum and the rank it ranges over. */
typedef struct Var {
  const char *name;
  int rank;
} Var;

typedef struct Einsum {
  int id; /* position in the cascade (0-based) */
  const char *text;
  Loc loc;
  Access out; /* distinct plain variables (or one `v<0` for an init) */
  Expr *rhs;
  RedOp red;         /* how variables absent from the output are reduced */
  bool explicit_red; /* written `:: op(vars)`; else a per-term sum */
  int nvars;
  Var *vars;
  VarSet out_vars; /* the variables of the output */
  int nreads;
  Access **reads; /* every tensor read of rhs, left to right */
  const char *unit; /* the spec's `units:` choice (matrix, vector, feeder),
                       or NULL: the model's binding rules decide */
  Loc unit_loc;
} Einsum;

typedef struct Rank {
  const char *name;
  Loc loc;   /* first declaration */
  Expr *size; /* from the shape section; NULL if unbound */
  Loc size_loc; /* where the size was written */
  /* -1, or the rank this one is another name of (`J: I` in the shape
   * section: keys over the same tokens as the queries). Tensors declared
   * over J are over I: one rank, one size. */
  int same_as;
  /* Named only in the shape section, by no tensor: the rank of window
   * variables named after it (the u of R[c, 2*y+u, 2*x+v] ranges over U). */
  bool window;
} Rank;

typedef struct Tensor {
  const char *name;
  Loc loc;
  int nranks;
  int *ranks;
  int producer;  /* the Einsum writing it, or -1 for an input */
  Einsum *init;  /* its value before an iterative rank starts; NULL: 0 */
  /* An input that an initialization reads (a decode state) and that grows
   * from pass to pass (`append:`, a KV cache): the next pass's value is
   * this one followed by the pass's steps, where a plain state keeps its
   * size and holds the last steps (the convolution history). */
  bool append;
  bool output;   /* must reach memory after the cascade (a result) */
  int nconsumers; /* Einsums reading it */
  bool intermediate; /* read by an Einsum other than its producer
                       (cascade_finish; tensor_is_intermediate) */
} Tensor;

/* A name used as a scalar: a rank's size (ED), a spec parameter (eps) or a
 * model parameter (d_inner). Resolved when a Shape is bound. */
typedef struct Sym {
  const char *name;
  Loc loc; /* first use */
} Sym;

/* A named scalar of the spec's `params` section. */
typedef struct Param {
  const char *name;
  Loc loc;
  Expr *value;
} Param;

/* A producer->consumer dependence through one intermediate tensor. */
typedef struct Edge {
  int producer, consumer, tensor;
  int nacc;
  const Access *acc[4]; /* the consumer's reads of the tensor */
  bool lagged;   /* every read is of an earlier iteration: a recurrence */
  bool windowed; /* some read is not plain variables (i-f, Q*p+q, i-1) */
} Edge;

/* A hash index over the names of one of a cascade's arrays (names.c):
 * slot k holds an entry's position + 1, or 0. */
typedef struct NameHash {
  int *slot;
  int cap;
} NameHash;
/* Index the last of the N entries of SIZE bytes at ARR (each a struct
 * whose first member is its name). */
void names_add(NameHash *x, const void *arr, int n, size_t size);
/* The position of NAME among them, or -1. */
int names_find(const NameHash *x, const void *arr, int n, size_t size,
               const char *name);
void names_free(NameHash *x);

typedef struct Cascade {
  Arena arena;
  const char *path;
  const char *model; /* the spec's default model (`model:`), or NULL */
  Loc model_loc;
  bool has_shape; /* a shape section was given: every rank must be bound */
  int sequence;   /* the `sequence:` rank, or -1 (cascade_sequence_rank) */
  Loc sequence_loc;

  int nranks, ranks_cap;
  Rank *ranks;
  int ntensors, tensors_cap;
  Tensor *tensors;
  int neinsums, einsums_cap;
  Einsum **einsums;
  int nsyms, syms_cap;
  Sym *syms;
  int nparams, params_cap;
  Param *params;
  /* Their names, hashed: the add and find functions below keep them. */
  NameHash rank_names, tensor_names, sym_names, param_names;

  /* Derived by cascade_finish. */
  int nedges;
  Edge *edges;
  int reach_words;  /* words per row of reach */
  uint64_t *reach;  /* bit (i, j): j depends on i within one iteration */
  int *recurrence;  /* per Einsum: the recurrence it belongs to (a cycle of
                       the dependence graph, lagged reads included), named
                       by its first Einsum; -1 outside every recurrence */
} Cascade;

/* ---- construction (used by the spec loader) ---- */

Cascade *cascade_new(const char *path);
void cascade_free(Cascade *c);
/* Find or add a rank / symbol; -1 from the finders when absent. */
int cascade_rank(const Cascade *c, const char *name);
int cascade_add_rank(Cascade *c, const char *name, Loc loc);
int cascade_tensor(const Cascade *c, const char *name);
/* Add parameter P (its name not yet a parameter's); its index. */
int cascade_add_param(Cascade *c, Param p);
int cascade_add_tensor(Cascade *c, const char *name, Loc loc, int nranks,
                       const int *ranks);
int cascade_sym(Cascade *c, const char *name, Loc loc);
int cascade_param(const Cascade *c, const char *name);
void cascade_add_einsum(Cascade *c, Einsum *e);

/* Derive producers and edges and check the graph: one producer per tensor,
 * every non-lagged read after its producer, every cycle through a lagged
 * read, initializations only of iterative tensors. */
bool cascade_finish(Cascade *c, Diag *d);

/* ---- queries ---- */

/* Variables appearing in the reads of E (for one access, or all). */
VarSet access_vars(const Access *a);
VarSet einsum_all_vars(const Einsum *e);
/* Variables of E that its output does not index: the reduced ones. */
VarSet einsum_reduced_vars(const Einsum *e);
/* A contraction of two operands that each bring an output variable the
 * other lacks: a matrix product (the paper's "GEMM-like" Einsums). */
bool einsum_is_gemm(const Cascade *c, const Einsum *e);
/* Is TO reachable from FROM through non-lagged edges (does TO depend on
 * FROM within one iteration)? An Einsum reaches itself. */
bool cascade_reaches(const Cascade *c, int from, int to);
/* The rank `--phase decode` sets to one token: the spec's `sequence:`,
 * else the rank a recurrence iterates (an initialization's `i<0`), else a
 * rank named I; -1 if none. */
int cascade_sequence_rank(const Cascade *c);
/* Does some Einsum, or some initialization, read tensor T? */
bool tensor_is_read(const Cascade *c, int t);
/* Does some initialization read tensor T (a decode state)? */
bool tensor_is_init_read(const Cascade *c, int t);
/* Does tensor T have rank R among its dimensions? */
bool tensor_has_rank(const Tensor *T, int r);
/* Is tensor T an intermediate: read by some Einsum other than its
 * producer? (An output may be one too: LEX.) */
bool tensor_is_intermediate(const Cascade *c, int t);
/* Does access A read an earlier iteration (some index i-c, c >= 1)? */
bool access_lagged(const Access *a);
/* Is it inside a recurrence: the lagged read that closes its cycle
 * (H[i-1] read by HH), or a read between two Einsums of the cycle (HH ->
 * H)? A recurrence is co-iterated along its rank whatever the plan, so
 * these values pass on chip. A lagged read from outside the cycle (the
 * chunked SSD's YO reading the state HS[c-1]) is not: its reader needs
 * the recurrence's result like any other reader. */
bool read_in_recurrence(const Cascade *c, int einsum, const Access *a);
/* Does edge E order its Einsums: must its consumer run after its producer
 * in every order the cascade runs in? Every edge does, except a lagged
 * read that closes a recurrence's cycle (HH reads H[i-1] before H's step
 * i): the recurrence's members advance together, a step at a time. */
bool edge_orders(const Cascade *c, const Edge *e);
/* The cascade's edges grouped by one of their ends: those whose key is k
 * are edges[ord[q]] for q in [at[k], at[k + 1]), in edge order (a stable
 * counting sort; a producer of -1, a cascade input, comes first). So a
 * group reads its own members' edges, not every edge per member. */
typedef enum { EDGES_BY_PRODUCER, EDGES_BY_CONSUMER, EDGES_BY_TENSOR } EdgeKey;
typedef struct EdgeIndex {
  int *at, *ord;
} EdgeIndex;
EdgeIndex cascade_edge_index(const Cascade *c, EdgeKey by);
void edge_index_free(EdgeIndex *x);
/* For an initialization that reads one tensor whole (H[b,i<0,d,n] =
 * H0[b,d,n], TX[b,i<0,d] = CS[b,i+K,d]), the coordinate of that tensor its
 * conditioned variable indexes: the steps of the history it holds; -1 if
 * none does (H0: the state before the first step) or the right-hand side
 * is not a read. */
int init_history_dim(const Einsum *ini);
/* The tensor that tensor T's initialization reads whole (its decode
 * state's source), with *K its init_history_dim; -1 if T has no such
 * initialization. */
int init_state_source(const Cascade *c, int t, int *k);

bool redop_from_name(const char *name, RedOp *op);

/* Is X the operator OP? */
bool expr_is(const Expr *x, Op op);
/* Does X depend on the iteration point (read a tensor or use an index
 * variable's value)? If not, it is a constant: numbers and symbols. */
bool expr_varies(const Expr *x);
/* The index variables X uses, in its reads' indices and as values. */
VarSet expr_vars(const Expr *x);

/* ---- binding sizes: the Shape ---- */

/* A `--set NAME=VALUE` override. */
typedef struct Setting {
  const char *name;
  double value;
} Setting;

/* A model's sizes: a named list of settings that a cascade's names fall
 * back on (src/preset/ holds the published ones; a model's config.json
 * gives another). */
typedef struct ModelSizes {
  const char *name;
  int n;
  const Setting *set;
} ModelSizes;

/* The sizes of a cascade's ranks and the values of its symbols for one
 * model. Names resolve in this order: --set, rank sizes, spec params,
 * the model's settings. A rank without a size has size 0. A size is a
 * positive integer of at most MAX_RANK_SIZE (so that any product of
 * IR_MAX_RANKS sizes is a finite double and each fits an int64_t); a
 * parameter is a finite number. */
#define MAX_RANK_SIZE 1e15
typedef struct Shape {
  const Cascade *c;
  const ModelSizes *model; /* NULL when bound without one */
  int64_t *size; /* per rank */
  double *sym;   /* per symbol; NaN where unresolved */
  bool complete; /* every rank has a size */
} Shape;

/* Can a setting called NAME bind something of C: a rank, a parameter or a
 * symbol? (A model's own parameters are the model's to name.) */
bool shape_setting_known(const Cascade *c, const char *name);
/* Bind C's sizes for MODEL (NULL: none) with SET's overrides. With
 * REQUIRE, every rank and symbol must resolve (specs with a shape
 * section); otherwise unresolved ones are left unknown. */
Shape *shape_bind(const Cascade *c, const ModelSizes *model,
                  const Setting *set, int nset, bool require, Diag *d);
/* Bind C as shape_bind does, then give every rank still without a size
 * the size FILL and every unknown scalar the value 1: for cascades written
 * without sizes (TeAAL's), in tests and benchmarks. */
Shape *shape_bind_filled(const Cascade *c, const ModelSizes *model,
                         const Setting *set, int nset, int64_t fill,
                         Diag *d);
void shape_free(Shape *s);
/* Value of a constant expression (numbers and symbols). */
double shape_eval(const Shape *s, const Expr *e);
/* How many last steps of tensor T (which has an initialization) the next
 * pass's decode state holds: its input's extent along the history (the
 * convolution's K), or that plus this pass's steps for a growing one
 * (`append`: a KV cache), or 1 (H0: the last step); 0 if nothing is
 * carried. One fact for the executor and whoever prices the state. */
int64_t tensor_state_steps(const Shape *s, int t);
/* Number of elements of a tensor (product of its rank sizes). */
double shape_tensor_elems(const Shape *s, int tensor);
/* Number of points of an Einsum's iteration space. */
double shape_einsum_points(const Shape *s, const Einsum *e);
/* Is this index injective over its variables' ranges (no two iteration
 * points read the same element)? `Q*p+q` with q < Q is; `i-f` is not.
 * Extents of 1 count as 2, so that the answer describes the cascade's
 * structure rather than a degenerate size (`i+f` with one token is still a
 * window). Without sizes (S NULL or incomplete) only the pattern `Q*p+q`
 * where q ranges over rank Q counts as injective. */
bool index_injective(const Cascade *c, const Shape *s, const Einsum *e,
                     const Index *ix);

/* ---- what an access touches ----
 *
 * Over a box of its Einsum's iteration space, an access touches, per
 * coordinate, the values its affine index takes inside the rank (a read
 * before the start of a rank touches nothing there: the initialization
 * supplies it). Those values form an arithmetic progression, a Span, and
 * the elements touched are the product of the coordinates' spans. The
 * model's traffic and the executor's byte counts both use this one rule,
 * so they agree element for element. */

/* A box of an Einsum's iteration space: variable v over [lo[v], hi[v]). */
typedef struct Region {
  int64_t lo[IR_MAX_VARS], hi[IR_MAX_VARS];
} Region;

/* first, first + step, ..., count values (count 0: none). */
typedef struct Span {
  int64_t first, step, count;
} Span;

/* The whole iteration space of E. */
void region_full(const Shape *s, const Einsum *e, Region *r);
/* The values index IX takes over R, unclipped (the least may be negative:
 * a read before the start). An index whose terms leave gaps between them
 * (3*y+u with u < 2) is taken as its hull. */
Span index_span(const Shape *s, const Index *ix, const Region *r);
/* Those values inside [0, size). */
Span span_clip(Span p, int64_t size);
/* Per coordinate of A's tensor, the values it touches over R (clipped). */
void access_spans(const Shape *s, const Access *a, const Region *r,
                  Span *dims);
double spans_elems(const Span *dims, int n);
/* Elements in the union of N boxes of spans over NDIMS coordinates. */
double spans_union(const Span (*box)[IR_MAX_RANKS], int n, int ndims);

/* ---- constant expressions ---- */

/* Evaluate a constant expression; SYM gives each symbol's value. Reads
 * and index variables evaluate to NaN. */
double expr_eval_const(const Expr *e, double (*sym)(void *ctx, int sym),
                       void *ctx);

#endif
