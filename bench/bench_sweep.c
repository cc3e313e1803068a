/* bench_sweep.c — sweep throughput: design points per second for one
 * Mamba-1 layer (a prefill of 2048 tokens and a decode step per point).
 * First the study bench/sweep.yaml (3780 points: array shape x buffer x
 * DRAM bandwidth x clock x design), with 1 thread and with 2 (target: at
 * least 5000 points/s on the 2-core machine); then bench/sweep_best.yaml
 * (56 points of design best, each two searches: buffer x DRAM bandwidth
 * x clock) on 2 threads (issue 35's goal: 200 points/s), with what its
 * points shared: searches served again, the mapping memo's hit rate, the
 * candidate groups and named designs' plans priced from kept bills
 * (search.h's GroupMemo). `bench_sweep STUDY [THREADS]` times STUDY's
 * sweep alone.
 * Loading a study (every architecture variant edited and loaded, every
 * shape bound) is timed apart; each run starts with empty memos and
 * plan caches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "../src/sweep/sweep.h"

/* CPU seconds of this process so far (every thread, user and system):
 * on a shared machine, what the work cost beside how long it took. */
static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static Study *load(const char *path, long *n) {
  Diag d = {0};
  double t0 = now_seconds();
  Study *s = study_load(path, INFINITY, &d);
  if (!s) {
    diag_print(&d, stderr);
    return NULL;
  }
  *n = study_points(s);
  printf("%s: %ld points; loading the study %.3f s\n", path, *n,
         now_seconds() - t0);
  return s;
}

static long failures(const PointResult *res, long n) {
  long failed = 0;
  for (long i = 0; i < n; i++)
    failed += res[i].error[0] != 0;
  return failed;
}

/* bench/sweep.yaml on 1 and 2 threads, best of 3 each. */
static bool named_designs(void) {
  long n;
  Study *s = load("bench/sweep.yaml", &n);
  if (!s)
    return false;
  PointResult *res = xcalloc((size_t)n, sizeof *res);
  for (int threads = 1; threads <= 2; threads++) {
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
      double t1 = now_seconds();
      sweep_eval(s, 0, n, threads, res, NULL, NULL);
      double t = now_seconds() - t1;
      best = t < best ? t : best;
    }
    printf("sweep, %d thread%s: %.0f points/s (best of 3: %.3f s; %ld "
           "failed)%s\n",
           threads, threads > 1 ? "s" : "", n / best, best,
           failures(res, n), threads == 2 ? " (target >= 5000 points/s)" : "");
  }
  free(res);
  study_free(s);
  return true;
}

/* PATH (bench/sweep_best.yaml) on THREADS threads, once (each run is
 * seconds). */
static bool searched(const char *path, int threads) {
  long n;
  Study *s = load(path, &n);
  if (!s)
    return false;
  PointResult *res = xcalloc((size_t)n, sizeof *res);
  SweepStats st;
  double t0 = now_seconds(), c0 = cpu_seconds();
  sweep_eval_counted(s, 0, n, threads, res, NULL, NULL, &st);
  double t = now_seconds() - t0, cpu = cpu_seconds() - c0;
  long asked = st.map_hits + st.map_misses;
  const GroupMemoStats *g = &st.groups;
  long groups = g->served + g->priced;
  printf("sweep with best, %d thread%s: %.1f points/s (%.2f s wall), %.1f "
         "points per CPU second (%.2f s); %ld failed (goal 200 points/s)\n"
         "  %ld searches, %ld served again; mapping memo: %ld problems, "
         "%.1f %% found (%ld searched)\n"
         "  candidate groups: %ld, %.1f %% from a kept bill (%ld priced, "
         "%ld of them where a kept bill's comparison of times moved); "
         "named designs' plans: %ld from bills, %ld priced whole; "
         "%ld shelves, %.1f MB\n",
         threads, threads > 1 ? "s" : "", n / t, t, n / cpu, cpu,
         failures(res, n), st.searches, st.reused,
         asked, 100.0 * (double)st.map_hits / (double)(asked ? asked : 1),
         st.map_misses, groups,
         100.0 * (double)g->served / (double)(groups ? groups : 1),
         g->priced, g->refused, g->plans_served, g->plans_priced,
         g->shelves, g->bytes / 1e6);
  free(res);
  study_free(s);
  return true;
}

/* With a study and a thread count, that study alone (a sweep with best
 * under a profiler, say); else both benchmarks. */
int main(int argc, char **argv) {
  if (argc > 1)
    return searched(argv[1], argc > 2 ? atoi(argv[2]) : 2) ? 0 : 1;
  return named_designs() && searched("bench/sweep_best.yaml", 2) ? 0 : 1;
}
