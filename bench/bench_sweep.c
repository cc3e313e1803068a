/* bench_sweep.c — sweep throughput: design points per second for one
 * Mamba-1 layer (a prefill of 2048 tokens and a decode step per point),
 * the study bench/sweep.yaml (3780 points: array shape x buffer x DRAM
 * bandwidth x clock x design), with 1 thread and with 2 (target: at
 * least 5000 points/s on the 2-core machine). Loading the study (every
 * architecture variant edited and loaded, every shape bound) is timed
 * apart; each run starts with empty memos and plan caches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../src/sweep/sweep.h"

int main(void) {
  Diag d = {0};
  double t0 = now_seconds();
  Study *s = study_load("bench/sweep.yaml", INFINITY, &d);
  double load = now_seconds() - t0;
  if (!s) {
    diag_print(&d, stderr);
    return 1;
  }
  long n = study_points(s);
  PointResult *res = xcalloc((size_t)n, sizeof *res);
  printf("sweep: %ld points (one mamba-370m layer, prefill + decode each); "
         "loading the study %.3f s\n",
         n, load);
  for (int threads = 1; threads <= 2; threads++) {
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
      double t1 = now_seconds();
      sweep_eval(s, 0, n, threads, res, NULL, NULL);
      double t = now_seconds() - t1;
      best = t < best ? t : best;
    }
    long failed = 0;
    for (long i = 0; i < n; i++)
      failed += res[i].error[0] != 0;
    printf("sweep, %d thread%s: %.0f points/s (best of 3: %.3f s; %ld "
           "failed)%s\n",
           threads, threads > 1 ? "s" : "", n / best, best, failed,
           threads == 2 ? " (target >= 5000 points/s)" : "");
  }
  free(res);
  study_free(s);
  return 0;
}
