/* main.c — runs the registered unit tests, and names the slowest (where
 * the time of `make test` goes) before the last line, "N unit tests, M
 * failed", which tests/run.sh reads. Under the sanitizers
 * (MAMBALAYA_SANITIZED=1, as `make test` runs them) it leaves out the
 * tests named in TESTS_UNIT_OPTIMIZED_ONLY: the Makefile's
 * UNIT_OPTIMIZED_ONLY, which says why for each. */
#include <stdarg.h>
#include <stdbool.h>
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

/* Is NAME a word of LIST (blank-separated; NULL: none)? */
static bool listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; p && *p;) {
    p += strspn(p, " \t\n");
    size_t k = strcspn(p, " \t\n");
    if (k == n && strncmp(p, name, n) == 0)
      return true;
    p += k;
  }
  return false;
}

static bool registered(const char *name, size_t n) {
  for (int i = 0; i < ntests; i++)
    if (strlen(tests[i].name) == n && strncmp(tests[i].name, name, n) == 0)
      return true;
  return false;
}

/* The names in LIST that no test has (a list gone stale), each said on
 * stderr: how many. */
static int unknown(const char *list) {
  int bad = 0;
  for (const char *p = list; p && *p;) {
    p += strspn(p, " \t\n");
    size_t k = strcspn(p, " \t\n");
    if (k && !registered(p, k)) {
      fprintf(stderr, "FAIL TESTS_UNIT_OPTIMIZED_ONLY names %.*s, and no "
              "unit test has that name\n", (int)k, p);
      bad++;
    }
    p += k;
  }
  return bad;
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  const char *san = getenv("MAMBALAYA_SANITIZED");
  const char *only = san && strcmp(san, "1") == 0
                         ? getenv("TESTS_UNIT_OPTIMIZED_ONLY")
                         : NULL;
  qsort(tests, (size_t)ntests, sizeof tests[0], by_name);
  int failed = unknown(only), run = failed; /* a stale name: a failed test */
  for (int i = 0; i < ntests; i++) {
    if ((filter && !strstr(tests[i].name, filter)) ||
        listed(only, tests[i].name))
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
  if (only && *only)
    printf("not run under the sanitizers (the Makefile's "
           "UNIT_OPTIMIZED_ONLY says why): %s\n", only);
  print_slowest();
  printf("%d unit tests, %d failed\n", run, failed);
  return failed ? 1 : 0;
}
