/* job.h — an Einsum compiled for a region (vm.c's Job): its reads and
 * their guards, its terms as programs over vector registers, the walk
 * over the output and the scratch a run uses; and the plain contractions
 * among its terms, which vm_gemm.c hands to kernel_gemm. Private to
 * src/exec/. */
#ifndef MAMBALAYA_JOB_H
#define MAMBALAYA_JOB_H

#include "vm.h"

/* How a read's lanes lie in memory: one value for all lanes, consecutive
 * values, values a constant stride apart, runs of one value (Delta[b,i,d]
 * across (d, n): each value N times), a repeated run of consecutive values
 * (B[b,i,n] across (d, n)), or anywhere (a table of offsets). */
typedef enum {
  K_BCAST,
  K_CONTIG,
  K_STRIDED,
  K_REPEAT,
  K_CYCLE,
  K_GATHER
} AccKind;

/* One read, compiled for a region: its element offset is base + sum_v
 * lin[v] * x_v; a guarded read has a coordinate that is not a plain
 * variable and may fall outside the tensor. */
typedef struct Guard { /* a coordinate that is not a plain variable */
  int dim, nterms;
  int var[IR_MAX_TERMS];
  int64_t coef[IR_MAX_TERMS], off;
  int64_t lo, hi; /* where the view and the tensor both have data */
  bool per_lane;  /* it moves with the chunk's variables */
} Guard;

typedef struct Acc {
  const Access *a;
  const View *v;
  int64_t lin[IR_MAX_VARS];
  int64_t base;
  int nguard;
  Guard guard[IR_MAX_RANKS];
  bool live; /* a guard may fail somewhere in the current region */
  AccKind kind;
  int64_t run, step; /* K_STRIDED: STEP apart; K_REPEAT: runs of RUN lanes,
                        STEP apart; K_CYCLE: a period of RUN values */
} Acc;

/* Load a read, set a constant, take an index variable's value, or apply
 * an operator of ops.h to registers A, B, C. */
typedef enum { I_LOAD, I_CONST, I_VAR, I_OP } InsKind;

typedef struct Ins {
  InsKind op;
  int dst, a, b, c;
  int acc; /* I_LOAD */
  int var; /* I_VAR */
  float val;
  Op fn; /* I_OP */
} Ins;

/* One additive term (or, with an explicit reduction, the whole side).
 * A term that reduces a long variable for few outputs (a norm's sum over
 * the model width) runs a row at a time: its lanes along that variable,
 * each read loaded by ROW_KIND and ROW_STEP instead of the walk's layout. */
typedef struct Term {
  const Expr *x;
  double sign;
  VarSet red;   /* the variables it reduces */
  int row_var;  /* -1, or the reduced variable its lanes run along */
  int row_fold; /* -1, or a reduced variable whose points continue the */
                /* row in memory (plan_row): both walked as one row */
  AccKind *row_kind; /* per read */
  int64_t *row_step;
  bool gemm_done; /* by kernel_gemm, with GEMM's strides and sizes */
  Gemm gemm;
  /* An operand that stays the same over the job's runs (an input of the
   * cascade: weights), packed once the job runs a second time (the next
   * tile of a fused group); kept until vm_job_release. */
  GemmPack *pack;
  int gemm_runs;
  int nins, cap, nregs, result;
  Ins *ins;
} Term;

/* How the output region is walked: chunks of contiguous outputs. */
typedef struct Walk {
  int nchunk, nouter;
  int cvar[IR_MAX_RANKS], ovar[IR_MAX_RANKS];
  int64_t cext[IR_MAX_RANKS], olo[IR_MAX_RANKS], oext[IR_MAX_RANKS];
  int64_t flat, blocks, units;
  int lanes;    /* outputs per chunk (at most VM_LANES) */
  bool uniform; /* every chunk decomposes alike: one lane-offset table */
} Walk;

typedef struct Scratch {
  float *regs;               /* nregs x VM_LANES */
  const float **src;         /* nregs: where each register's lanes are */
  double *acc;               /* VM_LANES */
  int64_t *lane_x;           /* nchunk x VM_LANES: chunk variables per lane */
  int64_t *gather;           /* nacc x VM_LANES: lane offsets */
  int nregs_max;
} Scratch;

/* A 16-bit input that a read other than kernel_gemm's takes: its view's
 * values widened to fp32, laid out as the view. The copy lives for one run
 * (vm_job_release drops it); the next run of the job widens the input's
 * values again, without binding anew. */
typedef struct Wide {
  View view;   /* the copy's; DATA NULL between runs */
  float *data; /* owned */
  bool used;
} Wide;

struct VmJob {
  const Env *env;
  const Einsum *e;
  Wide *wide; /* per read */
  Region reg;       /* the region of the last run */
  bool bound;       /* compiled for REG's extents and SEEN's views */
  View *seen;       /* the reads' views, then the output's */
  int64_t *table; /* nacc x lanes: lane offsets, when the walk is uniform */
  int nacc;
  Acc *acc;  /* one per read */
  int nterms;
  Term *terms;
  Walk w;
  const View *out;
  int64_t out_lin[IR_MAX_VARS];
  int64_t out_base;
  bool accumulate;  /* add to the output (a term went to kernel_gemm) */
  bool guards;      /* some read's guard may fail (and read lane by lane) */
  bool rows;        /* some term runs a row at a time */
  bool values;      /* some term takes an index variable's value */
  Scratch serial;   /* for runs on the calling thread alone */
};

typedef struct VmJob Job;

/* The read of JOB that is access A (its index in acc), or -1. */
static inline int acc_index(const Job *j, const Access *a) {
  for (int k = 0; k < j->nacc; k++)
    if (j->acc[k].a == a)
      return k;
  return -1;
}

/* The length of a term's row along V (vm_plan_row): V's extent, times
 * its fold's. */
static inline int64_t row_length(const Job *j, int v, int fold) {
  int64_t n = j->reg.hi[v] - j->reg.lo[v];
  return fold < 0 ? n : n * (j->reg.hi[fold] - j->reg.lo[fold]);
}

/* ---- vm_gemm.c: plain contractions ---- */

/* Can term T of J go to kernel_gemm (a plain contraction of two reads
 * whose variables flatten into M, N, K and batch dimensions)? Plans it
 * (T->gemm) if so. */
bool vm_plan_gemm(Job *j, Term *t);
/* T's product at J's current region: its operands' and output's
 * addresses. */
Gemm vm_gemm_at(const Job *j, const Term *t);
/* Run T by kernel_gemm (packing an operand that stays the same over the
 * job's runs, from its second run on). */
void vm_run_gemm(const Job *j, Term *t);
/* Whether T runs a row at a time, and along which variable (T->row_var,
 * T->row_fold, and its reads' kinds along it). */
void vm_plan_row(Job *j, Term *t);

#endif
