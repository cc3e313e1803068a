/* run.h — private to src/exec: the state of a cascade's runs, shared by
 * the interpreter (run.c), the fused executor (fused.c) and the entry
 * point (exec.c). What does not depend on the inputs' values (the
 * schedule, each tensor's last reader, the compiled jobs) is made once
 * and kept from run to run; the arrays live for one run. */
#ifndef MAMBALAYA_EXEC_RUN_H
#define MAMBALAYA_EXEC_RUN_H

#include "vm.h"

/* The order Einsums run in: the cascade's, except that a recurrence's
 * members come together (consecutive in ORDER), after everything they
 * read and before everything that reads them. */
typedef struct Sched {
  int n;
  int *order; /* the Einsums */
  int *scc;   /* per Einsum, its recurrence (Cascade.recurrence) */
} Sched;

typedef struct StretchSlot StretchSlot;

typedef struct Run {
  const Cascade *c;
  const Shape *s;
  const ExecOpts *o;
  Diag *d;
  Sched sched;
  int *last_use; /* per tensor: the last position in SCHED reading or
                    writing it (-1: none) */
  int *input_at; /* per tensor: where the last run found it in its inputs */
  int *inputs;   /* the tensors bind_inputs binds (the cascade's inputs
                    that something reads), NINPUTS of them */
  int ninputs;
  /* Compiled jobs, per slot and Einsum: slot 0 runs on the caller's
   * thread (with the pool), slot 1 + w is worker w of a stretch, which
   * runs with ENVS[w] (no pool, its own fault flag). */
  int nslots;
  VmJob **jobs;
  Env *envs;
  int *faults;
  struct StretchSlot *slots; /* per worker of a stretch (run.c) */
  VmJob **init_jobs; /* per tensor: its initialization's (slot 0) */
  Array **arrays; /* per tensor: the materialized array, or NULL */
  Array **spare;  /* arrays released, for reuse by any tensor (a stack of
                     NSPARE, at most one per tensor and one more) */
  int nspare;
  bool *borrowed; /* the array is the caller's input */
  View *views;    /* per tensor: where evaluation reads and writes it */
  int64_t *front; /* per tensor: steps of its array before the start of its
                     initialized rank (filled from the initialization) */
  Env env;
  int fault;
  ExecStats *st;
  double live, peak; /* bytes of arrays held */
  struct Units *units; /* the fused executor's decisions per group, kept
                          from run to run (fused.c; fused_forget) */
} Run;

void run_init(Run *r, const Cascade *c, const Shape *s, const ExecOpts *o,
              Diag *d);
/* The end of a run: its arrays released, and what the jobs hold for it
 * (packed weights, widened copies), counted in PEAK first. */
void run_reset(Run *r);
void run_done(Run *r);
/* The compiled job of Einsum E for SLOT (see Run). */
VmJob *run_job(Run *r, int slot, int e);
/* Release what the jobs of the Einsums in MEMBER hold for the run. */
void run_release_jobs(Run *r, const bool *member);
void tensor_shape(const Run *r, int t, int64_t *shape);
bool bind_inputs(Run *r, const Tensors *inputs);
/* Allocate tensor T whole (run_array: its values are the producer's to
 * write) and point its view at it, with the steps its readers reach
 * before the start of its initialized rank in front, filled from the
 * initialization. */
Array *run_alloc(Run *r, int t);
void run_release(Run *r, int t);
/* An fp32 array of SHAPE (a tensor's array or tile buffer): a spare of
 * as many elements, released earlier by any tensor (its old values
 * kept), else a new, zeroed one (array_new); and its return,
 * kept as a spare whatever its size (run.c). */
Array *run_array(Run *r, int ndim, const int64_t *shape);
void run_drop(Run *r, Array *a);

/* Along dimension K of the tensor that A reads in E, the index is E's
 * output variable over that rank plus an offset in [*LO, *HI] (a lag, a
 * window). False if the index has no such form. */
bool read_offset(const Run *r, const Einsum *e, const Access *a, int k,
                 int64_t *lo, int64_t *hi);
/* How many steps before the start of T's initialized rank its readers
 * reach (0: none, or T has no initialization). */
int64_t init_reach(const Run *r, int t);
/* The region of T's initialization that writes the STEPS steps before the
 * start, over the box [LO, HI) of T's other dimensions (NULL: all). */
void front_region(const Run *r, int t, int64_t steps, const int64_t *lo,
                  const int64_t *hi, Region *reg);
/* Write those steps from the initialization; T's view must hold them. */
bool fill_front(Run *r, int t, int64_t steps, const int64_t *lo,
                const int64_t *hi);
/* The same by *JOB (prepared at its first use), where fronts of two
 * lengths are filled at every run (a decode step's halo and its next
 * state's): a job for each stays bound, where one would bind anew at
 * every call. */
bool fill_front_by(Run *r, VmJob **job, int t, int64_t steps,
                   const int64_t *lo, const int64_t *hi);

/* The rank a recurrence iterates over. */
int recurrence_rank(const Cascade *c, int member, const int *scc);
/* E's output variable over RANK, or -1. */
int var_over(const Einsum *e, int rank);

void sched_build(const Cascade *c, Sched *sc);
void sched_free(Sched *sc);

/* Einsums run together slice by slice along SPLIT, a rank they all keep:
 * the pool's workers take whole slices, and run every member over a slice
 * before the next slice, a recurrence's members a step at a time. */
typedef struct Stretch {
  const int *members; /* in schedule order */
  int n;
  const Region *base; /* per member: the region to cover */
  int split;          /* -1: one slice, one worker */
  int64_t slice;      /* the split rank's extent per slice (0: whole) */
} Stretch;
/* The rank of largest extent in BASE that every member keeps and reads
 * the others' outputs plainly along (so a slice needs nothing from
 * another), or -1. */
int stretch_rank(const Run *r, const int *members, int n, const Region *base);
bool run_stretch(Run *r, const Stretch *st, const int *scc);

/* Put into NEXT the state a following pass needs from tensor T (which has
 * an initialization), reading T's last steps through its view. */
bool next_state(Run *r, int t, Tensors *next);

/* A linear recurrence and its read-out, recognized in the schedule and run
 * as one kernel (scan.c): Einsums (ids; -1 where absent)
 *   PROD: U = F * G, MUL: T = DECAY * S[i-1], ADD: S = U + T,
 *   OUT:  Y = COEF * S :: sum(the state's innermost variable). */
typedef struct Scan {
  int prod, mul, add, out;
  int npos; /* schedule positions covered: the producers?, PROD?, the
               recurrence, OUT? */
  int lag_dim; /* the dimension of S the recurrence runs along */
  const Access *f, *g, *decay, *lagged, *input, *coef, *state;
  /* Folded producers (scan_match_folded; -1 otherwise): DPROD: DECAY =
   * exp(DP * DQ), FPROD: F = FP * FQ (F: whichever of F and G it makes),
   * each computed by the kernel instead of materialized. */
  int dprod, fprod;
  const Access *dp, *dq, *fp, *fq;
} Scan;
/* The pattern at the start of ORDER (N positions of a schedule whose
 * recurrences SCC gives), or 0. */
int scan_match(const Cascade *c, const int *order, const int *scc, int n,
               Scan *sc);
/* The same preceded by the producers of its decay, exp(P * Q) varying
 * along the state's innermost rank (Mamba-1's Abar = exp(Delta * A)), and
 * of its input factor, P * Q (Bbar = Delta * B), in either order; or by
 * the factor's producer alone where the decay is constant along that
 * rank (Mamba-2's Bbar, read as the state's coordinates or a part of
 * them: one row for a head's channels; DPROD -1); or 0.
 * (The interpreter's: what it needs is R's, scan_internal.) */
int scan_match_folded(const Cascade *c, const int *order, const int *scc,
                      int n, Scan *sc);
/* The pattern the executors run by the scan kernel at the start of ORDER
 * (N positions of R's schedule): scan_match_folded's where nothing else
 * reads the folded producers' outputs, else scan_match's; none under
 * ExecOpts.vm_only. */
bool scan_find(const Run *r, const int *order, int n, Scan *sc);
/* Run it over BASE (per position of ORDER, as for a stretch) through the
 * current views: S and OUT always written, T and U when asked. False,
 * having written nothing, when the views do not suit the kernel (a
 * 16-bit operand, a layout not contiguous along the state's innermost
 * rank, regions that disagree): then run the Einsums as usual. */
bool scan_run(Run *r, const Scan *sc, const int *order, const Region *base,
              bool write_t, bool write_u);
/* With ExecOpts.state_in_place, point the view of the scan's state S at
 * its initialization's input (the previous state, borrowed), read at the
 * step before the start and written at the last step (stride 0 along the
 * recurrence: the steps between live in the kernel's buffer): the next
 * state is then that input, advanced (next_state hands it back). False,
 * changing nothing, where that would not hold the same values (S read
 * outside the pattern, more than one step carried, another layout). The
 * caller undoes it if scan_run then refuses: scan_state_undo, S's view
 * back to HELD, the one it had before. */
bool scan_state_in_place(Run *r, const Scan *sc);
void scan_state_undo(Run *r, const Scan *sc, const View *held);
/* Is T read by nothing but the pattern's Einsums (and neither a result
 * nor kept)? */
bool scan_read_inside(const Run *r, const Scan *sc, int t);
/* Is tensor T read by nothing but the pattern's Einsums (and neither a
 * result nor kept)? Then the kernel need not write it. */
bool scan_internal(const Run *r, const Scan *sc, int t);

/* A matrix-vector product run in the background (vm_gemv_start) while
 * the caller runs the positions up to JOIN, the first that reads its
 * result; then vm_gemv_join. */
typedef struct Background {
  VmGemv *job; /* NULL: none */
  int join;    /* a schedule position */
} Background;
/* Matrix-vector products at the start of ORDER (N positions from schedule
 * position AT; none a recurrence's member, nor reading another's output,
 * nor a tensor UNREADY marks: per tensor, values not written yet; NULL:
 * none), each over its region REGS[p] (NULL: its whole iteration space),
 * as one job of the pool (vm_gemvs); or one of them in the background
 * (into BG, when none runs there yet) and the rest as one job. An output
 * with no place yet is allocated whole. Returns the positions run: 0 when
 * fewer than two and none for the background (run them as usual), -1
 * when an allocation failed. Both executors run a decode step's
 * projections so: what they compute is what each product computes
 * alone. */
int run_gemvs(Run *r, const int *order, int n, int at, const Region *regs,
              const bool *unready, Background *bg);
/* Wait for BG's product when what runs next reaches END, past its first
 * reader; true if it waited (nothing runs in the background then). */
bool background_join(Run *r, Background *bg, int end);
/* Of the N positions from I, those that may run while BG's product does:
 * the ones before its first reader. */
int background_avail(const Background *bg, int i, int n);

/* The interpreter: every Einsum over its whole iteration space, in the
 * schedule's order, each output a whole array freed after its last
 * reader. */
bool run_interpret(Run *r);
/* The fused executor (fused.c): run r->o->plan, filling NEXT. */
bool run_fused(Run *r, Tensors *next);
/* Free what run_fused kept in R from run to run. */
void fused_forget(Run *r);

#endif
