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

static const char usage[] =
    "usage: mambalaya sweep STUDY [--out DIR] [--threads N] [--format LIST]\n"
    "                             [--json] [--max-memory B]\n"
    "\n"
    "Price every point of a design-space study (docs/sweep.md): the\n"
    "cartesian product (or a listed set) of its cascades and models, shape\n"
    "settings, architecture parameters, designs, stitchers, model options,\n"
    "phases and scenarios. Writes into DIR:\n"
    "\n"
    "  points.csv   one row per point: a column per input, per figure\n"
    "               (latency, energy, EDP, area, DRAM traffic, energy and\n"
    "               area by component role) and whether it is on the front\n"
    "  sweep.json   the same, with every component's energy and area, the\n"
    "               fronts, and the study's inputs (paths and SHA-256)\n"
    "  pareto.svg   every point and the Pareto front over the study's\n"
    "               objectives, a panel per workload (and .pdf, .png with\n"
    "               --format)\n"
    "\n"
    "then prints each front. STUDY is a path or a shipped study (studies/:\n"
    "arch-neighbourhood, model-comparison). Progress and an ETA go to\n"
    "stderr when it is a terminal.\n"
    "\n"
    "  --out DIR      where the outputs go (default: out/NAME, NAME the\n"
    "                 study's name)\n"
    "  --threads N    threads pricing points (default: every core; under\n"
    "                 MPI, 1 per rank)\n"
    "  --format LIST  the chart's formats, of svg, pdf, png (default: svg)\n"
    "  --json         print sweep.json instead of the fronts\n"
    "  --max-memory B refuse (exit 2) a study whose points would need more\n"
    "                 memory than B (8GiB, 512MiB; default: what the\n"
    "                 machine has available)\n"
    "\n"
    "Under MPI (when the build found OpenMPI), `mpirun -n K mambalaya sweep\n"
    "STUDY` splits the points over K ranks and writes, from rank 0, the\n"
    "same files as one process.\n"
    "\n"
    "example:\n"
    "  mambalaya sweep arch-neighbourhood --out out/neighbourhood\n"
    "  mpirun -n 2 mambalaya sweep studies/model-comparison.yaml\n";

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

static Ranks ranks_begin(int *argc, char ***argv) {
  Ranks r = {0, 1, false};
  bool launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
                  getenv("PMIX_RANK");
#ifdef MAMBALAYA_MPI
  if (launched) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r.size);
    r.mpi = true;
  }
#else
  (void)argc;
  (void)argv;
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

static int finish(const Study *s, const PointResult *res, const char *dir,
                  unsigned formats, bool json) {
  long n = study_points(s);
  bool *on = xcalloc((size_t)n + 1, sizeof *on);
  sweep_front(s, res, on);
  Buf csv = {0}, js = {0}, text = {0}, charts[FMT_COUNT] = {{0}};
  sweep_csv(&csv, s, res, on);
  json_t *j = sweep_json(s, res, on);
  report_json(&js, j);
  json_decref(j);
  for (int f = 0; f < FMT_COUNT; f++)
    if (formats & 1u << f)
      sweep_chart(&charts[f], s, res, on, (Format)f);
  Diag d = {0};
  int status = 0;
  bool refused;
  if (!sweep_write(s, dir, &csv, &js, charts, formats, &refused, &d)) {
    diag_print(&d, stderr);
    status = refused ? EXIT_INPUT : EXIT_RUN;
  } else if (json) {
    emit(&js);
  } else {
    sweep_text(&text, s, res, on);
    buf_printf(&text, "\nwritten to %s/{points.csv, sweep.json, pareto.*}\n",
               dir);
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

int cmd_sweep(int argc, char **argv) {
  Args a = {.cmd = "mambalaya sweep", .argc = argc, .argv = argv, .i = 1};
  const char *study = NULL, *out = NULL;
  double max_memory = 0;
  unsigned formats = 1u << FMT_SVG;
  int threads = 0;
  bool json = false;
  int k;
  while ((k = args_next(&a))) {
    if (k == 2) {
      if (study)
        return args_unknown(&a);
      study = a.val;
    } else if (args_is(&a, "--help") || args_is(&a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else if (args_is(&a, "--out")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      out = a.val;
    } else if (args_is(&a, "--threads")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      char *end;
      errno = 0;
      long v = strtol(a.val, &end, 10);
      if (errno || end == a.val || *end || v < 1 || v > 1024)
        return usage_error(&a, "--threads expects a count from 1 to 1024, "
                               "got '%s'",
                           a.val);
      threads = (int)v;
    } else if (args_is(&a, "--format")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      formats = parse_formats(a.val);
      if (!formats)
        return usage_error(&a, "--format expects a list of svg, pdf and "
                               "png, got '%s'",
                           a.val);
    } else if (args_is(&a, "--json")) {
      json = true;
    } else if (args_is(&a, "--max-memory")) {
      if (!args_value(&a))
        return EXIT_INPUT;
      if (!parse_bytes(a.val, &max_memory) || !(max_memory >= 1))
        return usage_error(&a, "--max-memory expects a size in bytes (e.g. "
                               "8GiB), got '%s'",
                           a.val);
    } else {
      return args_unknown(&a);
    }
  }
  if (!study)
    return usage_error(&a, "missing STUDY (see mambalaya sweep --help)");
  Ranks r = ranks_begin(&argc, &argv);
  if (!threads) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    threads = r.mpi ? 1 : (int)(cores > 0 ? cores : 1);
  }
  Diag d = {0};
  Study *s = study_load(study, memory_budget(max_memory), &d);
  if (!s) {
    if (r.rank == 0)
      diag_print(&d, stderr);
    ranks_end(&r);
    return EXIT_INPUT;
  }
  Buf dir = {0};
  buf_printf(&dir, out ? "%s" : "out/%s", out ? out : study_name(s));
  /* The outputs are checked before the first point is priced. */
  if (!sweep_output_check(s, dir.s, formats, &d)) {
    if (r.rank == 0)
      diag_print(&d, stderr);
    buf_free(&dir);
    study_free(s);
    ranks_end(&r);
    return EXIT_INPUT;
  }
  long n = study_points(s);
  long lo = share(n, r.rank, r.size), hi = share(n, r.rank + 1, r.size);
  PointResult *mine = xcalloc((size_t)(hi - lo) + 1, sizeof *mine);
  Progress pr = {now_seconds(), r.rank, r.size, false};
  bool tty = r.rank == 0 && isatty(2);
  sweep_eval(s, lo, hi, threads, mine, tty ? show_progress : NULL, &pr);
  if (pr.shown)
    fprintf(stderr, "\n");
  PointResult *all =
      r.rank == 0 ? xcalloc((size_t)n + 1, sizeof *all) : NULL;
  gather(&r, n, mine, hi - lo, all);
  int status = 0;
  if (r.rank == 0)
    status = finish(s, all, dir.s, formats, json);
  buf_free(&dir);
  free(all);
  free(mine);
  study_free(s);
  ranks_end(&r);
  return status;
}
