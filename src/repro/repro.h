/* repro.h — the paper's evaluation (§II, §IV, §VI) as data: every figure
 * of reference/paper-targets.md computed by the model beside the paper's
 * value, and every series its figures plot.
 *
 * Setup (the paper's): the shipped Mamba-1 cascade, the mambalaya
 * architecture, batch 64; prefill at I = 2048, decode at I = 1;
 * mamba-370m for the figures, mamba-370m and mamba-2.8b for the sweeps
 * over I = 2^0 .. 2^20. End-to-end scenarios: L layers, a prefill of I0
 * tokens, then G decode steps. */
#ifndef MAMBALAYA_REPRO_H
#define MAMBALAYA_REPRO_H

#include "../model/model.h"

enum {
  REPRO_MODELS = 2,     /* mamba-370m, mamba-2.8b */
  REPRO_LENGTHS = 21,   /* I = 2^0 .. 2^20 */
  REPRO_SCENARIOS = 3,
  REPRO_MAX_TARGETS = 64,
};

typedef enum { PH_PREFILL, PH_DECODE, PH_COUNT } Phase;

/* One figure: our value beside the paper's. */
typedef struct Target {
  const char *key;    /* stable: "ideal.speedup.prefill" */
  const char *where;  /* "Table I", "§VI-C", ... */
  const char *what;   /* a description */
  double paper, ours;
  const char *unit;   /* "x", "%", "groups", "" */
  bool at_least;      /* the paper gives a lower bound ("> 44%") */
} Target;

/* A design priced one way: per-layer latency and traffic. */
typedef struct Result {
  double seconds;            /* sequential, achieved */
  double seconds_ideal;      /* sequential, algorithmic-minimum traffic */
  double seconds_pipelined;  /* parallel pipelining, achieved */
  double inter, intra;       /* achieved DRAM bytes */
  double ideal_inter, ideal_intra;
  double read, write;
  double energy_j;
  int groups;
} Result;

/* One Einsum's interval on a layer's timeline. */
typedef struct Segment {
  int einsum;
  double start, end;    /* seconds */
  double compute_util;  /* ops / (duration x the machine's peak) */
  double memory_util;   /* DRAM bytes / (duration x bandwidth) */
  double intensity;     /* ops per DRAM byte */
  double perf;          /* ops per second */
} Segment;

typedef struct Timeline {
  int n;
  Segment *seg;
  double seconds;
} Timeline;

typedef struct Scenario {
  const char *name;
  const char *label;
  double prompt, generated; /* I0 and G */
} Scenario;

typedef struct Repro {
  int ntargets;
  Target targets[REPRO_MAX_TARGETS];
  const char *model_names[REPRO_MODELS];
  int layers[REPRO_MODELS];
  Scenario scenarios[REPRO_SCENARIOS];
  /* Per model, phase and design (prefill at I = 2048). */
  Result res[REPRO_MODELS][PH_COUNT][DES_COUNT];
  /* mamba-370m timelines, achieved and ideal (sequential). */
  Timeline timeline[PH_COUNT][DES_COUNT];
  Timeline ideal_timeline[PH_COUNT][DES_COUNT];
  /* End to end (mamba-370m), seconds: achieved, ideal, pipelined. */
  double e2e[REPRO_SCENARIOS][DES_COUNT];
  double e2e_ideal[REPRO_SCENARIOS][DES_COUNT];
  double e2e_pipelined[REPRO_SCENARIOS][DES_COUNT];
  /* Per-layer prefill latency over I = 2^k (achieved, sequential). */
  double sweep[REPRO_MODELS][REPRO_LENGTHS][DES_COUNT];
  double peak_ops;  /* the machine's peak, ops/s (the matrix unit) */
  double vector_ops; /* the 1D mode's peak */
  double feeder_ops;
  double bandwidth; /* DRAM bytes/s */
  const Cascade *cascade; /* for names (owned by the Repro) */
  double elapsed;   /* seconds the whole evaluation took */
} Repro;

/* Run the paper's whole evaluation. SPEC and ARCH are loaded by the
 * caller (the shipped mamba1 and mambalaya by default). */
Repro *repro_run(Cascade *spec, const Arch *arch, Diag *d);
void repro_free(Repro *r);
const Target *repro_target(const Repro *r, const char *key);

#endif
