/* repro.h — the paper's evaluation (§II, §IV, §VI) as data: every figure
 * of reference/paper-targets.md computed by the model beside the paper's
 * value, and every series its figures plot — for the paper's setup, or
 * the same evaluation for any cascade, model and architecture.
 *
 * The paper's setup: the shipped Mamba-1 cascade, the mambalaya
 * architecture, batch 64; prefill at I = 2048, decode at I = 1;
 * mamba-370m for the figures, mamba-370m and mamba-2.8b for the sweeps
 * over I = 2^0 .. 2^20. End-to-end scenarios: L layers, a prefill of I0
 * tokens, then G decode steps. A figure of the paper is set beside ours
 * only when the part of the setup it depends on is the paper's: the
 * cascade's structure on the spec, Table II on the architecture, the
 * evaluation on all of it. */
#ifndef MAMBALAYA_REPRO_H
#define MAMBALAYA_REPRO_H

#include "../model/model.h"

enum {
  REPRO_MAX_MODELS = 2, /* the figures' model, and a second for a sweep */
  REPRO_LENGTHS = 21,   /* I = 2^0 .. 2^20 */
  REPRO_SCENARIOS = 3,
  REPRO_MAX_TARGETS = 64,
  REPRO_MAX_SEARCHED = 8,
  /* The ski slope: the fusion level's capacity at 2^-10 .. 2^4 times the
   * architecture's. */
  REPRO_SLOPE_LO = -10,
  REPRO_CAPACITIES = 15,
};

/* The paper's setup. The spec and architecture are the shipped files
 * (byte for byte: an edited copy is another setup). */
#define REPRO_PAPER_SPEC "specs/mamba1.yaml"
#define REPRO_PAPER_ARCH "archs/mambalaya.yaml"
#define REPRO_PAPER_MODEL "mamba-370m"   /* the figures' model */
#define REPRO_PAPER_SWEEP "mamba-2.8b"   /* the sweeps' second model */
enum { REPRO_PAPER_BATCH = 64, REPRO_PAPER_PREFILL = 2048 };

/* What to evaluate. */
typedef struct ReproSetup {
  const Cascade *spec;
  const char *spec_shipped; /* the shipped file SPEC is, by name or as a
                               byte-for-byte copy ("specs/mamba1.yaml"),
                               or NULL */
  const Arch *arch;
  const char *arch_shipped; /* likewise ("archs/mambalaya.yaml") */
  const char *model; /* a preset; NULL: the spec's default model (and,
                        for the paper's spec, mamba-2.8b for a second
                        sweep, as in the paper), or none when the spec
                        names none: its own sizes alone */
  int layers;        /* layers end to end; 0: the model's n_layer, or no
                        end-to-end figures when there is no model */
  int nsets;
  const Setting *sets; /* B sets the batch, I the prefill's length (by
                          default the spec's sizes of B and I, or 64 and
                          2048 where it gives none); the others bind as
                          given at every point */
  ModelOverrides opts; /* the model's options, over each design's defaults
                          (composition and accounting are the figures') */
  /* Told after each shape priced and searched (a phase, a scenario's
   * prefill, a length of a sweep: each shape once) and each capacity of
   * the ski slope priced (they run on two threads: it is told from one
   * at a time): the share DONE of them, and the seconds since the start;
   * NULL: nobody listens. */
  void (*progress)(void *ctx, double done, double elapsed);
  void *progress_ctx;
} ReproSetup;

typedef enum { PH_PREFILL, PH_DECODE, PH_COUNT } Phase;

/* One figure: our value beside the paper's. */
typedef struct Target {
  const char *key;    /* stable: "ideal.speedup.prefill" */
  const char *where;  /* "Table I", "§VI-C", ... */
  char what[128];     /* a description */
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
  /* Where it goes, joules: per memory level of the architecture (Arch.
   * levels, outermost first: nlevels entries, owned), and the operations;
   * they sum to energy_j. */
  double *level_j;
  double ops_j;
  int groups;
} Result;

/* One Einsum's interval on a layer's timeline. */
typedef struct Segment {
  int einsum;
  int unit;             /* the compute unit it runs on (Arch.units) */
  double start, end;    /* seconds */
  double compute_util;  /* the share of its unit's peak it achieves: the
                           time its ops take at the unit's peak rates, over
                           its duration */
  double memory_util;   /* DRAM bytes / (duration x bandwidth) */
  double intensity;     /* ops per DRAM byte */
  double perf;          /* ops per second */
} Segment;

typedef struct Timeline {
  int n;
  Segment *seg;
  double seconds;
} Timeline;

/* "best (searched)": the schedule `search` finds for latency
 * (sequential, achieved traffic: src/search) at one model and phase. */
typedef struct Searched {
  double seconds; /* its latency */
  double ideal;   /* the bound's (the ideal design's): gap = seconds/ideal */
  double energy_j, dram_bytes;
  int groups;
  Design from; /* the named design it is, or DES_COUNT: a partition the
                  search found */
} Searched;

/* A figure where the paper's "best variant" appears (the best of the four
 * strategies), with the search's best in its place: added beside the
 * paper's figures, never replacing one. */
typedef struct SearchedRow {
  const char *key;   /* the figure's target key: "vs_marca.prefill" */
  char what[128];
  double paper;      /* the paper's value (NAN unless its setup) */
  bool at_least;     /* the paper gives a lower bound */
  double variant;    /* ours, with the best variant (the target's) */
  double searched;   /* ours, with best (searched) */
  double gap;        /* best (searched)'s latency over ideal's, there */
  double variant_gap; /* the best variant's */
} SearchedRow;

typedef struct Scenario {
  const char *name;
  const char *label;
  double prompt, generated; /* I0 and G */
} Scenario;

typedef struct Repro {
  /* The setup, as run. */
  const Cascade *cascade; /* the caller's */
  const Arch *arch;       /* the caller's */
  const char *spec_label; /* the spec's path ("specs/mamba2.yaml") */
  const char *arch_label; /* the architecture's name ("h100") */
  const char *arch_path;
  int nmodels;
  const char *model_names[REPRO_MAX_MODELS]; /* the first is the figures';
                                                NULL: no model (the spec's
                                                sizes alone) */
  int layers[REPRO_MAX_MODELS]; /* 0: unknown (no model, no --layers):
                                   no end-to-end figures */
  double batch, prefill; /* B, and I of the prefill */
  char settings[256];    /* the other --set values, "d_state=32", or "" */
  char sizes[256];       /* the other ranks' sizes at the prefill point,
                            "D=2048, E=2048" */
  bool paper_spec;  /* the paper's cascade */
  bool paper_arch;  /* the paper's architecture */
  bool paper_setup; /* all of the paper's setup: its evaluation compares */
  int ntargets;
  Target targets[REPRO_MAX_TARGETS];
  Scenario scenarios[REPRO_SCENARIOS];
  /* Per model, phase and design (prefill at I = prefill). */
  Result res[REPRO_MAX_MODELS][PH_COUNT][DES_COUNT];
  /* The first model's timelines, achieved and ideal (sequential). */
  Timeline timeline[PH_COUNT][DES_COUNT];
  Timeline ideal_timeline[PH_COUNT][DES_COUNT];
  /* End to end (the first model), seconds: achieved, ideal, pipelined. */
  double e2e[REPRO_SCENARIOS][DES_COUNT];
  double e2e_ideal[REPRO_SCENARIOS][DES_COUNT];
  double e2e_pipelined[REPRO_SCENARIOS][DES_COUNT];
  /* Per-layer prefill latency over I = 2^k (achieved, sequential). */
  double sweep[REPRO_MAX_MODELS][REPRO_LENGTHS][DES_COUNT];
  /* best (searched), beside the designs: per model and phase, end to end
   * (sequential, achieved), and over I = 2^k (prefill). */
  Searched best[REPRO_MAX_MODELS][PH_COUNT];
  double e2e_best[REPRO_SCENARIOS];
  double sweep_best[REPRO_MAX_MODELS][REPRO_LENGTHS];
  /* The ski slope (the first model, prefill, achieved, sequential): each
   * design's DRAM bytes and latency with the fusion level's capacity at
   * slope_capacity[k] bytes; NAN where the design cannot run (a tile that
   * does not fit) or the capacity passes a staging level's, which must
   * hold what the fusion level holds. */
  double slope_capacity[REPRO_CAPACITIES];
  double slope_bytes[REPRO_CAPACITIES][DES_COUNT];
  double slope_seconds[REPRO_CAPACITIES][DES_COUNT];
  int nsearched;
  SearchedRow searched[REPRO_MAX_SEARCHED];
  double bandwidth; /* DRAM bytes/s */
  double elapsed;   /* seconds the whole evaluation took */
} Repro;

/* Run the whole evaluation for SETUP. NULL, with D set, when the setup
 * cannot be evaluated (an unknown model, a spec without ranks B and I, a
 * shape that does not bind, an architecture that cannot run the
 * cascade). */
Repro *repro_run(const ReproSetup *setup, Diag *d);
void repro_free(Repro *r);
const Target *repro_target(const Repro *r, const char *key);
/* What one layer of model M is called in titles and captions: the model's
 * name, or the spec's path when there is no model. */
const char *repro_workload(const Repro *r, int m);
/* Whether the end-to-end figures exist: a layer count was known. */
bool repro_has_e2e(const Repro *r);
/* best (searched)'s gap to ideal: its latency over the bound's. */
double repro_searched_gap(const Searched *s);
/* The peak of unit U (ops/s): its fastest op class. */
double repro_unit_peak(const Arch *a, int u);

#endif
