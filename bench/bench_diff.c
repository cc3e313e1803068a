/* bench_diff.c — `mambalaya diff` on two large results: two eval-like
 * results of 1 000 000 Einsum records each (a figure changed in one
 * record of a hundred, one record gone and one new), written to files,
 * then what the command does timed: both files parsed (a thread each),
 * the records
 * matched by name (a hash of the names), the differences listed
 * (target: under 5 s in all). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../src/report/report.h"

enum { RECORDS = 1000000 };

/* CPU seconds of this process so far (both threads, user and system):
 * on a shared machine, what the work cost beside how long it took. */
static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/* An eval-like result of RECORDS records; CHANGED: every hundredth
 * record's latency differs, the first is gone and one is new. */
static bool write_result(const char *path, bool changed) {
  FILE *f = fopen(path, "w");
  if (!f)
    return false;
  fprintf(f, "{\"inputs\": {\"command\": \"eval\", \"spec\": \"big\"},\n"
             " \"einsums\": [\n");
  for (int i = changed ? 1 : 0; i <= RECORDS; i++) {
    if (i == RECORDS && !changed)
      break;
    double lat = 1e-6 * (i % 977 + 1) * (changed && i % 100 == 7 ? 1.5 : 1);
    fprintf(f, "%s  {\"name\": \"E%d\", \"unit\": \"array2d\", \"latency_s\": "
               "%.9g, \"dram_bytes\": %d, \"ops\": %d}\n",
            i > (changed ? 1 : 0) ? "," : "", i, lat, 64 * (i % 4099),
            1000 + i % 31);
  }
  fprintf(f, " ],\n \"totals\": {\"latency_s\": %g}}\n", changed ? 2.0 : 1.0);
  return fclose(f) == 0;
}

int main(void) {
  char dir[] = "/tmp/bench_diff.XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  char a[64], b[64];
  snprintf(a, sizeof a, "%s/a.json", dir);
  snprintf(b, sizeof b, "%s/b.json", dir);
  if (!write_result(a, false) || !write_result(b, true))
    return 1;
  double t0 = now_seconds(), c0 = cpu_seconds();
  const char *paths[2] = {a, b};
  json_t *xy[2] = {NULL, NULL};
  Diag d = {0};
  if (!report_load_results(paths, xy, &d))
    diag_print(&d, stderr);
  json_t *x = xy[0], *y = xy[1];
  double t1 = now_seconds();
  char why[256];
  Buf out = {0};
  int n = x && y && report_comparable(x, y, why, sizeof why)
              ? report_diff(&out, x, y, 0)
              : -1;
  double t2 = now_seconds();
  buf_free(&out);
  json_decref(x);
  json_decref(y);
  double t3 = now_seconds();
  printf("diff of two results of %d records: %d differences; parse %.2f s, "
         "compare %.2f s, free %.2f s, total %.2f s (target < 5 s; %.2f s "
         "of CPU)\n",
         RECORDS, n, t1 - t0, t2 - t1, t3 - t2, t3 - t0, cpu_seconds() - c0);
  unlink(a);
  unlink(b);
  rmdir(dir);
  return n == RECORDS / 100 + 3 ? 0 : 1;
}
