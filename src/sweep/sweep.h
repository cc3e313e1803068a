/* sweep.h — design-space studies: many points priced, their Pareto front.
 *
 * A study file (docs/sweep.md) names what varies:
 *
 *   cascades      specs, each with model presets (and fixed settings)
 *   settings      shape settings, each a value, a list or a range
 *                 (`tokens` is each cascade's sequence rank)
 *   architectures the architecture files the parameters edit
 *   parameters    fields of an architecture file by path
 *                 (compute.array2d.shape, memory.GlobalBuffer.capacity),
 *                 grouped in axes whose paths vary together
 *   points        or: a listed set of settings and parameters
 *   designs, stitchers, options   what the model prices, and how
 *   phases, scenarios             per layer (prefill, decode), or a
 *                                 model end to end (L x (prefill of I0
 *                                 tokens + G decode steps))
 *   objectives    what the Pareto front minimizes
 *
 * and the points are their cartesian product, in a fixed order: cascade
 * and model, then settings and parameters, architecture, design and
 * stitcher, options, workload (the innermost). A point's figures depend
 * on nothing but its inputs: any split of the points over threads or MPI
 * ranks gives the same results, byte for byte.
 *
 *   Study --study.c--> shapes, architecture variants (each edited on the
 *                      YAML tree, then loaded by the strict loader)
 *         --eval.c---> PointResult per point (threads; a mapping memo
 *                      they share, a plan cache and best's searches of
 *                      the block of points per thread)
 *         --pareto.c-> the front per workload
 *         --output.c-> points.csv, sweep.json, pareto.svg (pdf, png) */
#ifndef MAMBALAYA_SWEEP_H
#define MAMBALAYA_SWEEP_H

#include "../report/report.h"

/* The figures of a point: one column each. X(ID, column, objective name
 * or NULL). The energies and areas by role add up the components of that
 * role (report_components); the areas by class are arch_area_by_class's
 * (compute, nonlinear, interconnect, memory: they add up to the area). */
#define SWEEP_FIGURES(X)                                                   \
  X(LATENCY, "latency_s", "latency")                                       \
  X(ENERGY, "energy_j", "energy")                                          \
  X(EDP, "edp_js", "edp")                                                  \
  X(AREA, "area_mm2", "area")                                              \
  X(TRAFFIC, "dram_bytes", "traffic")                                      \
  X(INTER, "inter_bytes", NULL)                                            \
  X(INTRA, "intra_bytes", NULL)                                            \
  X(OPS, "ops", NULL)                                                      \
  X(GROUPS, "groups", NULL)                                                \
  X(E_DRAM, "energy_dram_j", NULL)                                         \
  X(E_BUFFER, "energy_buffer_j", NULL)                                     \
  X(E_REGISTERS, "energy_registers_j", NULL)                               \
  X(E_MATRIX, "energy_matrix_j", NULL)                                     \
  X(E_VECTOR, "energy_vector_j", NULL)                                     \
  X(E_FEEDER, "energy_feeder_j", NULL)                                     \
  X(A_BUFFER, "area_buffer_mm2", NULL)                                     \
  X(A_REGISTERS, "area_registers_mm2", NULL)                               \
  X(A_MATRIX, "area_matrix_mm2", NULL)                                     \
  X(A_VECTOR, "area_vector_mm2", NULL)                                     \
  X(A_FEEDER, "area_feeder_mm2", NULL)                                     \
  X(A_COMPUTE, "area_compute_mm2", NULL)                                   \
  X(A_NONLINEAR, "area_nonlinear_mm2", NULL)                               \
  X(A_INTERCONNECT, "area_interconnect_mm2", NULL)                         \
  X(A_MEMORY, "area_memory_mm2", NULL)

typedef enum {
#define SWEEP_FIG_ENUM(id, col, obj) FIG_##id,
  SWEEP_FIGURES(SWEEP_FIG_ENUM)
#undef SWEEP_FIG_ENUM
      FIG_COUNT
} Figure;

const char *figure_column(Figure f);    /* "latency_s" */
const char *figure_objective(Figure f); /* "latency", or NULL */

enum {
  SWEEP_MAX_COMPONENTS = 32, /* memory levels + compute units */
  SWEEP_MAX_OBJECTIVES = 5,
  SWEEP_ERROR_LEN = 240,
};

/* What one point gave: its figures, and the energy of each component of
 * its architecture (levels, then units, as report_components lists
 * them). Plain data, the same on every rank, gathered as bytes. */
typedef struct PointResult {
  char error[SWEEP_ERROR_LEN]; /* "" when priced; else why not (the
                                  buffer cannot hold a tile, ...) */
  double fig[FIG_COUNT];
  double component_j[SWEEP_MAX_COMPONENTS];
} PointResult;

typedef struct Study Study;

/* Load and check the study NAME (a path, or a shipped study under
 * studies/): every field known, every value possible, every spec, model,
 * setting and architecture variant loadable, the points at most 10^8 and
 * their memory within BUDGET. NULL and D set (FILE:LINE:COL in the
 * study, or in the file it names) otherwise. */
Study *study_load(const char *name, double budget, Diag *d);
/* The same for the LEN bytes of TEXT, read from PATH (the files it names
 * are looked for beside PATH). */
Study *study_parse(const char *path, const char *text, size_t len,
                   double budget, Diag *d);
/* What a study of POINTS points and SHAPES shape slots holds while it
 * runs, in bytes (an estimate: study.c). study_load refuses a study
 * whose estimate passes BUDGET (bytes; INFINITY: no limit) before it
 * builds anything per point. */
double study_memory(long points, double shapes);
void study_free(Study *s);

const char *study_name(const Study *s);
long study_points(const Study *s);
/* The notes of its architecture I, one a line ("": none; an AccelForge
 * file's translation's, docs/compat.md), and *PATH the file; NULL past
 * the last. */
const char *study_arch_notes(const Study *s, int i, const char **path);

/* Progress of sweep_eval, called from its first thread now and then with
 * the points done so far; may be NULL. */
typedef void (*SweepProgress)(long done, long total, void *arg);

/* Price points [LO, HI) into RES[0 .. HI-LO) with THREADS threads. */
void sweep_eval(const Study *s, long lo, long hi, int threads,
                PointResult *res, SweepProgress progress, void *arg);
/* What a sweep shared (for benchmarks and tests): the searches of design
 * best it ran, and those it served again (a phase and a scenario that
 * price the same shape at one point); the mapping memo's hits and
 * misses; the candidate groups of best's searches priced from a kept
 * bill and priced in full (search.h's GroupMemo). */
typedef struct SweepStats {
  long searches, reused, map_hits, map_misses;
  GroupMemoStats groups;
} SweepStats;
/* sweep_eval, counting into STATS. */
void sweep_eval_counted(const Study *s, long lo, long hi, int threads,
                        PointResult *res, SweepProgress progress, void *arg,
                        SweepStats *stats);

/* The Pareto front over the study's objectives, per workload: ON[i] is
 * true when no priced point of the same workload is at least as good in
 * every objective and better in one. */
void sweep_front(const Study *s, const PointResult *res, bool *on);

/* The outputs, from every point's result. */
void sweep_csv(Buf *b, const Study *s, const PointResult *res,
               const bool *on);
json_t *sweep_json(const Study *s, const PointResult *res, const bool *on);
/* The front drawn over all points, one panel per workload (the first two
 * objectives as axes), in format F. */
void sweep_chart(Buf *b, const Study *s, const PointResult *res,
                 const bool *on, Format f);
/* Every output's text: points.csv into CSV, sweep.json into JSON, the
 * charts of FORMATS (a set of Format bits) into CHARTS[f] -- the JSON on
 * a second thread beside the rest (the longest part of a sweep's
 * serial tail). */
void sweep_render(const Study *s, const PointResult *res, const bool *on,
                  unsigned formats, Buf *csv, Buf *json, Buf *charts);
/* Can the outputs (points.csv, sweep.json, pareto.* in FORMATS, a set
 * of Format bits) go into DIR? Its name fits the system's limits, it can
 * be created or written, and no output is one of the files the study
 * read (itself, a spec, an architecture). False with D set otherwise:
 * checked before the first point is priced. */
bool sweep_output_check(const Study *s, const char *dir, unsigned formats,
                        Diag *d);
/* Write the outputs into DIR as one set (util.h's OutSet): they land
 * together or not at all, never over one of the study's inputs. False
 * with D set on failure; *REFUSED when the reason is the output path
 * itself (exit 2) rather than the writing (exit 1). */
bool sweep_write(const Study *s, const char *dir, const Buf *csv,
                 const Buf *json, const Buf *charts, unsigned formats,
                 bool *refused, Diag *d);

/* A short table of each workload's front for the terminal. */
void sweep_text(Buf *b, const Study *s, const PointResult *res,
                const bool *on);

#endif
