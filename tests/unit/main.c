/* main.c — runs the registered unit tests. */
#include <stdarg.h>
#include <stdlib.h>

#include "test.h"

enum { MAX_TESTS = 1024 };

/* The harness's own state: tests are programs, not the library. */
typedef struct Entry {
  const char *name;
  TestFn fn;
} Entry;
static Entry tests[MAX_TESTS];
static int ntests, failures_in_test;

void test_register(const char *name, TestFn fn) {
  if (ntests < MAX_TESTS)
    tests[ntests++] = (Entry){name, fn};
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

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  qsort(tests, (size_t)ntests, sizeof tests[0], by_name);
  int run = 0, failed = 0;
  for (int i = 0; i < ntests; i++) {
    if (filter && !strstr(tests[i].name, filter))
      continue;
    failures_in_test = 0;
    tests[i].fn();
    run++;
    if (failures_in_test) {
      failed++;
      fprintf(stderr, "FAIL %s\n", tests[i].name);
    }
  }
  printf("%d unit tests, %d failed\n", run, failed);
  return failed ? 1 : 0;
}
