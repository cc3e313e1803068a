/* vm.h — private to src/exec: evaluating one Einsum over a region of its
 * iteration space, reading and writing views of tensors.
 *
 * An Einsum's right-hand side is compiled into a short program over
 * vector registers of VM_LANES floats. The region's output is walked in
 * chunks of contiguous output elements (the lanes); for each chunk the
 * program runs once per point of the variables it reduces, accumulating
 * in double precision; a term that reduces a long variable for few
 * outputs (a norm) instead runs with its lanes along that variable. A term
 * that is a plain contraction of two tensors goes to kernel_gemm. A view
 * may extend before the start of a rank, holding what reads there see (the
 * tensor's initialization, or 0); reads outside every view take those
 * through vm_read. */
#ifndef MAMBALAYA_EXEC_VM_H
#define MAMBALAYA_EXEC_VM_H

#include "exec.h"

enum { VM_LANES = 256 };

/* Below this many evaluations of a term's point (an output element times
 * the points it reduces) a job runs on the calling thread alone (vm.c,
 * scan.c): handing it to the pool and waiting for the workers costs more
 * than the work (a decode step's norms, gates and convolutions). */
enum { VM_MIN_SHARED_WORK = 16384 };

/* A window onto a tensor: global coordinate x on dimension k lives at
 * data[sum_k (x_k - origin_k) * stride_k], for origin_k <= x_k <
 * origin_k + extent_k. A full array is the view with origin 0. An input
 * held in 16 bits (weights) has HALF instead of DATA: kernel_gemm reads it
 * as it is, other reads through a widened copy (vm.c). */
typedef struct View {
  float *data;
  const uint16_t *half;
  DType dtype;
  int n;
  int64_t origin[IR_MAX_RANKS], extent[IR_MAX_RANKS], stride[IR_MAX_RANKS];
} View;

/* What an evaluation reads and writes: one view per tensor of the
 * cascade (data NULL where a tensor is not available). */
typedef struct Env {
  const Cascade *c;
  const Shape *s;
  View *views;
  Pool *pool;
  int *fault; /* set when a read falls outside its view */
} Env;

/* (Region and region_full, boxes of an iteration space, are in ir.h.) */
/* A view covering all of an fp32 array of SHAPE at DATA. */
View view_of(float *data, const int64_t *shape, int n);
/* A view covering all of array A, in its dtype. */
View view_of_array(const Array *a);

/* Evaluate an Einsum over a region into the view of its output (false, D
 * set, when a read falls outside its tensor's view), in two steps, for
 * an Einsum run over many regions (the steps of a recurrence, the tiles
 * of a group): compile once, run often. Views may move between runs
 * (their data, origin and extent are read each time). */
typedef struct VmJob VmJob;
VmJob *vm_prepare(const Env *env, const Einsum *e);
bool vm_exec(VmJob *j, const Region *r, Diag *d);
/* The jobs J[0..N) over their regions R[0..N), in order, as one walk
 * where they form a chain: Einsums small enough to run on the calling
 * thread, none through kernel_gemm, whose outputs are walked alike, each
 * reading what an earlier member writes only at the element it writes
 * itself (the same offsets over the walk: no lag, broadcast or reduction
 * of an earlier member's output; a norm's residual add and square, its
 * gate and the gate's square). Each unit of the walk (up to VM_LANES
 * outputs) runs every member before the next unit, so the values stay in
 * L1 between them; each element takes the same operations as by vm_exec,
 * so the numbers are the same. Runs the longest such prefix (J[0] alone,
 * as by vm_exec, when it starts none; *CHAINED its length, 0 then) and
 * the member that ends it, alone (bound already to be found out), and
 * returns how many ran; -1 with D set on failure. */
int vm_exec_chain(VmJob *const *j, const Region *r, int n, int *chained,
                  Diag *d);
/* When J over R is exactly one matrix-vector product (a decode step's
 * projection: the weights' rows contiguous along the reduced variable,
 * nothing added), the product, in G, for the caller to run (vm_gemvs);
 * J is bound for R either way, so that false leaves vm_exec to run it
 * (or to report why it cannot). */
bool vm_gemv(VmJob *j, const Region *r, Gemm *g, Diag *d);
/* The N products G (from vm_gemv; none reading another's output) as one
 * job of POOL, each in parts of its rows: the same numbers as each by
 * kernel_gemm. */
void vm_gemvs(const Gemm *g, int n, Pool *pool);
/* Bytes of such a product's weights: what it streams. */
double vm_gemv_bytes(const Gemm *g);
/* One such product G started on POOL's workers alone (pool_start: the
 * caller goes on, its own pool_runs inline), and its end: the same
 * numbers as kernel_gemm. */
typedef struct VmGemv VmGemv;
VmGemv *vm_gemv_start(const Gemm *g, Pool *pool);
void vm_gemv_join(VmGemv *b, Pool *pool);
/* Bytes the job holds for the current run (weights packed for
 * kernel_gemm, widened copies of 16-bit inputs), and their release: the
 * compiled job stays, for the next run. */
double vm_job_held(const VmJob *j);
void vm_job_release(VmJob *j);
void vm_job_free(VmJob *j);
/* One element of tensor T at global COORDS: from its view, or from its
 * initialization (or 0) before the start of a rank, or 0 past the end. */
float vm_read(const Env *env, int t, const int64_t *coords);

/* The operators of src/ir/ops.h over float arrays (vmath.c): Y = op(A,
 * B, C) lane by lane; the operands past the op's arity are not read. */
void vm_op(Op op, float *y, const float *a, const float *b, const float *c,
           int n);
float vm_op1(Op op, float a, float b, float c);
/* Whether this CPU runs the AVX2 + FMA versions of the loops. */
bool vm_have_avx2(void);

#endif
