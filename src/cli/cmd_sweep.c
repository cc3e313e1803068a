/* cmd_sweep.c — `mambalaya sweep STUDY.yaml`: a design-space study, on
 * the threads of one machine or, under mpirun, over MPI ranks.
 *
 * Under MPI (compiled in when the build finds it: MAMBALAYA_MPI) every
 * rank loads the study, prices its contiguous share of the points, and
 * rank 0 gathers every result in point order and writes the outputs:
 * the same bytes as one process writes. A rank knows it was started by
 * an MPI launcher from its environment (OpenMPI's mpirun, or a PMI/PMIx
 * launcher such as Slurm's srun); otherwise MPI is not initialized. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sweep/sweep.h"

#ifdef MAMBALAYA_MPI
#include <mpi.h>
#endif

typedef struct SweepArgs {
  const char *study, *out;
  int threads; /* 0: every core (1 per rank under MPI) */
  unsigned formats;
  bool json;
  double max_memory; /* 0: what the machine has */
} SweepArgs;

static const Opt sweep_opts[] = {
    {"STUDY", OPT_PATH, offsetof(SweepArgs, study), NULL,
     .flags = OPT_POSITIONAL},
    {"--out", OPT_PATH, offsetof(SweepArgs, out), "DIR",
     .help = "where the outputs go (default: out/NAME, NAME the study's name)"},
    {"--threads", OPT_INT, offsetof(SweepArgs, threads), "N",
     .help = "threads pricing points (default: every core; under MPI, 1 per "
             "rank)",
     .lo = 1, .hi = 1024},
    {"--format", OPT_CUSTOM, offsetof(SweepArgs, formats), "LIST",
     .help = "the chart's formats, of svg, pdf, png (default: svg)",
     .parse = parse_formats},
    {"--json", OPT_FLAG, offsetof(SweepArgs, json), NULL,
     .help = "print sweep.json instead of the fronts"},
    MAX_MEMORY_OPT(SweepArgs, max_memory, "a study whose points"),
};
static const OptTable sweep_table = OPT_TABLE(sweep_opts);

static void sweep_init(void *opts) {
  *(SweepArgs *)opts = (SweepArgs){.formats = 1u << FMT_SVG};
}

/* ---- progress ---- */

typedef struct Progress {
  double t0;
  int rank, size;
  bool shown;
} Progress;

static void show_progress(long done, long total, void *arg) {
  Progress *p = arg;
  double t = now_seconds() - p->t0;
  double eta = done > 0 ? t * (double)(total - done) / (double)done : 0;
  char who[48] = "";
  if (p->size > 1)
    snprintf(who, sizeof who, " on rank %d of %d", p->rank, p->size);
  fprintf(stderr, "\rsweep: %ld/%ld points%s (%.0f%%), %.1f s, ETA %.1f s   ",
          done, total, who, total ? 100.0 * (double)done / (double)total : 100,
          t, eta);
  p->shown = true;
}

/* ---- MPI ---- */

typedef struct Ranks {
  int rank, size;
  bool mpi;
} Ranks;

static Ranks ranks_begin(void) {
  Ranks r = {0, 1, false};
  bool launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
                  getenv("PMIX_RANK");
#ifdef MAMBALAYA_MPI
  if (launched) {
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.size);
    r.mpi = true;
  }
#else
  if (launched)
    fprintf(stderr, "mambalaya sweep: this build has no MPI (OpenMPI was "
                    "not found when it was built): every rank prices the "
                    "whole study\n");
#endif
  return r;
}

static void ranks_end(const Ranks *r) {
#ifdef MAMBALAYA_MPI
  if (r->mpi)
    MPI_Finalize();
#else
  (void)r;
#endif
}

/* The first point of rank K's share. */
static long share(long n, int k, int size) {
  return (long)((double)n * k / size);
}

/* Every rank's results, in point order, into ALL on rank 0. */
static void gather(const Ranks *r, long n, PointResult *mine, long count,
                   PointResult *all) {
#ifdef MAMBALAYA_MPI
  if (r->mpi && r->size > 1) {
    MPI_Datatype point;
    MPI_Type_contiguous((int)sizeof(PointResult), MPI_BYTE, &point);
    MPI_Type_commit(&point);
    int *counts = NULL, *displs = NULL;
    if (r->rank == 0) {
      counts = xcalloc((size_t)r->size, sizeof *counts);
      displs = xcalloc((size_t)r->size, sizeof *displs);
      for (int k = 0; k < r->size; k++) {
        displs[k] = (int)share(n, k, r->size);
        counts[k] = (int)(share(n, k + 1, r->size) - displs[k]);
      }
    }
    MPI_Gatherv(mine, (int)count, point, all, counts, displs, point, 0,
                MPI_COMM_WORLD);
    MPI_Type_free(&point);
    free(counts);
    free(displs);
    return;
  }
#else
  (void)r;
  (void)n;
#endif
  memcpy(all, mine, (size_t)count * sizeof *mine);
}

/* ---- outputs ---- */

/* How the points were priced, when MPI ranks shared them: the outputs do
 * not depend on it (byte for byte), so only the report says it. */
static void say_ranks(Buf *b, const Ranks *r, int threads) {
  if (r->size > 1)
    buf_printf(b, "priced on %d MPI ranks, %d thread%s each\n", r->size,
               threads, threads == 1 ? "" : "s");
}

static int finish(const Study *s, const PointResult *res, const char *dir,
                  const SweepArgs *o, const Ranks *r, int threads) {
  unsigned formats = o->formats;
  long n = study_points(s);
  bool *on = xcalloc((size_t)n + 1, sizeof *on);
  sweep_front(s, res, on);
  Buf csv = {0}, js = {0}, text = {0}, charts[FMT_COUNT] = {{0}};
  sweep_render(s, res, on, formats, &csv, &js, charts);
  Diag d = {0};
  int status = 0;
  bool refused;
  if (!sweep_write(s, dir, &csv, &js, charts, formats, &refused, &d)) {
    diag_print(&d, stderr);
    status = refused ? EXIT_INPUT : EXIT_RUN;
  } else if (o->json) {
    emit(&js);
    say_ranks(&text, r, threads); /* stdout is the JSON: said on stderr */
    fputs(text.s ? text.s : "", stderr);
  } else {
    sweep_text(&text, s, res, on);
    buf_printf(&text, "\nwritten to %s/{points.csv, sweep.json, pareto.*}\n",
               dir);
    say_ranks(&text, r, threads);
    emit(&text);
  }
  buf_free(&csv);
  buf_free(&js);
  buf_free(&text);
  for (int f = 0; f < FMT_COUNT; f++)
    buf_free(&charts[f]);
  free(on);
  return status;
}

/* This rank's share of the points priced, gathered on rank 0, and the
 * outputs written there. */
static int sweep(const SweepArgs *o, const Study *s, const Ranks *r) {
  int threads = o->threads;
  if (!threads) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    threads = r->mpi ? 1 : (int)(cores > 0 ? cores : 1);
  }
  Buf dir = {0};
  buf_printf(&dir, o->out ? "%s" : "out/%s", o->out ? o->out : study_name(s));
  /* The outputs are checked before the first point is priced. */
  Diag d = {0};
  if (!sweep_output_check(s, dir.s, o->formats, &d)) {
    if (r->rank == 0)
      diag_print(&d, stderr);
    buf_free(&dir);
    return EXIT_INPUT;
  }
  long n = study_points(s);
  long lo = share(n, r->rank, r->size), hi = share(n, r->rank + 1, r->size);
  PointResult *mine = xcalloc((size_t)(hi - lo) + 1, sizeof *mine);
  Progress pr = {now_seconds(), r->rank, r->size, false};
  bool tty = r->rank == 0 && isatty(2);
  sweep_eval(s, lo, hi, threads, mine, tty ? show_progress : NULL, &pr);
  if (pr.shown)
    fprintf(stderr, "\n");
  PointResult *all =
      r->rank == 0 ? xcalloc((size_t)n + 1, sizeof *all) : NULL;
  gather(r, n, mine, hi - lo, all);
  int status = 0;
  if (r->rank == 0)
    status = finish(s, all, dir.s, o, r, threads);
  buf_free(&dir);
  free(all);
  free(mine);
  return status;
}

static int sweep_cmd(const Parsed *p, void *opts) {
  (void)p;
  const SweepArgs *o = opts;
  Ranks r = ranks_begin();
  Diag d = {0};
  Study *s = study_load(o->study, memory_budget(o->max_memory), &d);
  int status = EXIT_INPUT;
  const char *notes, *path;
  for (int i = 0; s && r.rank == 0 && (notes = study_arch_notes(s, i, &path));
       i++)
    print_arch_notes(path, notes);
  if (s)
    status = sweep(o, s, &r);
  else if (r.rank == 0)
    diag_print(&d, stderr);
  study_free(s);
  ranks_end(&r);
  return status;
}

const Command sweep_command = {
    "sweep", "a design-space study: many points, their Pareto front",
    .about =
        "Price every point of a design-space study (docs/sweep.md): the\n"
        "cartesian product (or a listed set) of its cascades and models,\n"
        "shape settings, architecture parameters, designs, stitchers, model\n"
        "options, phases and scenarios. Writes into DIR:\n"
        "\n"
        "  points.csv   one row per point: a column per input, per figure\n"
        "               (latency, energy, EDP, area, DRAM traffic, energy and\n"
        "               area by component role) and whether it is on the front\n"
        "  sweep.json   the same, with every component's energy and area, the\n"
        "               fronts, and the study's inputs (paths and SHA-256)\n"
        "  pareto.svg   every point and the Pareto front over the study's\n"
        "               objectives: a panel per front (the workload, and the\n"
        "               study's front_per values) and pair of objectives (and\n"
        "               .pdf, .png with --format)\n"
        "\n"
        "then prints each front. STUDY is a path or a shipped study\n"
        "(studies/: arch-neighbourhood, model-comparison). Progress and an\n"
        "ETA go to stderr when it is a terminal.\n",
    .opts = &sweep_table,
    .notes =
        "Under MPI (when the build found OpenMPI), `mpirun -n K mambalaya\n"
        "sweep STUDY` splits the points over K ranks and writes, from rank 0,\n"
        "the same files as one process.\n",
    .example = "mambalaya sweep arch-neighbourhood --out out/neighbourhood\n"
               "mpirun -n 2 mambalaya sweep studies/model-comparison.yaml\n",
    .size = sizeof(SweepArgs), .init = sweep_init, .run = sweep_cmd,
};
