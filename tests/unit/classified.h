/* classified.h — a cascade loaded for the fusion tests: parsed, bound and
 * its producer→consumer pairs classified, with a lookup of one pair's
 * class (test_fusion.c, test_literature.c); and the same beside an
 * architecture, for the search's tests (test_search.c,
 * test_fusion_level.c). */
#ifndef MAMBALAYA_TEST_CLASSIFIED_H
#define MAMBALAYA_TEST_CLASSIFIED_H

#include "../../src/arch/arch.h"
#include "../../src/fusion/fusion.h"

typedef struct Classified {
  Cascade *c;
  Shape *s;
  Pair *pairs; /* one per edge of c, in edge order */
} Classified;

/* Load PATH and classify it; a spec with a shape section must bind every
 * rank. A failure fails the running test and leaves the fields NULL. */
Classified classified_load(const char *path);
/* The same for a spec given as TEXT (named t.yaml in messages). */
Classified classified_parse(const char *text);
void classified_free(Classified *l);

/* The class name of the pair PRODUCER -> CONSUMER (Einsums named by their
 * outputs) through TENSOR, or through any tensor when TENSOR is NULL;
 * "none" when there is no such pair. */
const char *pair_class(const Classified *l, const char *producer,
                       const char *consumer, const char *tensor);

/* A cascade bound and classified, with an architecture. */
typedef struct Case {
  Cascade *c;
  Shape *s;
  Pair *pairs;
  Arch *a;
} Case;

/* Load SPEC (at its preset's sizes, with the N settings SET) and ARCH; a
 * failure fails the running test and returns false. */
bool case_load(Case *k, const char *spec, const char *arch,
               const Setting *set, int n);
void case_free(Case *k);

#endif
