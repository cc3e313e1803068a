/* test.h — a tiny unit-test harness. Each test file defines tests with
 * TEST(name) { ... } and checks with the CHECK macros; tests/unit/main.c
 * runs them all (or those whose name contains argv[1]). A failed check
 * prints FILE:LINE and the values, and fails its test; the run goes on. */
#ifndef MAMBALAYA_TEST_H
#define MAMBALAYA_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*TestFn)(void);
void test_register(const char *name, TestFn fn);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define TEST(name)                                                          \
  static void name(void);                                                  \
  __attribute__((constructor)) static void register_##name(void) {         \
    test_register(#name, name);                                            \
  }                                                                        \
  static void name(void)

#define CHECK(cond)                                                         \
  do {                                                                     \
    if (!(cond))                                                           \
      test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                   \
  } while (0)

#define CHECK_INT(a, b)                                                     \
  do {                                                                     \
    long long va_ = (long long)(a), vb_ = (long long)(b);                  \
    if (va_ != vb_)                                                        \
      test_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a,  \
                va_, #b, vb_);                                             \
  } while (0)

#define CHECK_STR(a, b)                                                     \
  do {                                                                     \
    const char *sa_ = (a), *sb_ = (b);                                     \
    if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0)                             \
      test_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a,    \
                sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)");               \
  } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_NEAR(a, b, tol)                                               \
  do {                                                                     \
    double va_ = (double)(a), vb_ = (double)(b);                           \
    double sc_ = fabs(vb_) > 1 ? fabs(vb_) : 1;                            \
    if (!(fabs(va_ - vb_) <= (tol) * sc_))                                 \
      test_fail(__FILE__, __LINE__, "%s == %.17g, expected %.17g (tol %g)", \
                #a, va_, vb_, (double)(tol));                              \
  } while (0)

#endif
