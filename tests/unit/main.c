/* main.c — runs the registered unit tests, and names the slowest (where
 * the time of `make test` goes) before the last line, "N unit tests, M
 * failed", which tests/run.sh reads. */
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"

enum { MAX_TESTS = 1024 };

/* The harness's own state: tests are programs, not the library. */
typedef struct Entry {
  const char *name;
  TestFn fn;
  double seconds; /* wall time of its run */
} Entry;
static Entry tests[MAX_TESTS];
static int ntests, failures_in_test;

void test_register(const char *name, TestFn fn) {
  if (ntests < MAX_TESTS)
    tests[ntests++] = (Entry){name, fn, 0};
}

void test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  failures_in_test++;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const Entry *)a)->name, ((const Entry *)b)->name);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The SLOWEST tests that ran, slowest first (run after the tests: it
 * reorders the table). */
enum { SLOWEST = 5 };
static int by_time(const void *a, const void *b) {
  double ta = ((const Entry *)a)->seconds, tb = ((const Entry *)b)->seconds;
  return (ta < tb) - (ta > tb);
}
static void print_slowest(void) {
  qsort(tests, (size_t)ntests, sizeof tests[0], by_time);
  printf("slowest unit tests:\n");
  for (int i = 0; i < ntests && i < SLOWEST && tests[i].seconds > 0; i++)
    printf("  %.1f s  %s\n", tests[i].seconds, tests[i].name);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  qsort(tests, (size_t)ntests, sizeof tests[0], by_name);
  int run = 0, failed = 0;
  for (int i = 0; i < ntests; i++) {
    if (filter && !strstr(tests[i].name, filter))
      continue;
    failures_in_test = 0;
    double start = now();
    tests[i].fn();
    tests[i].seconds = now() - start;
    run++;
    if (failures_in_test) {
      failed++;
      fprintf(stderr, "FAIL %s\n", tests[i].name);
    }
  }
  print_slowest();
  printf("%d unit tests, %d failed\n", run, failed);
  return failed ? 1 : 0;
}
