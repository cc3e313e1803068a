/* classified.h — a cascade loaded for the fusion tests: parsed, bound and
 * its producer→consumer pairs classified, with a lookup of one pair's
 * class. Shared by test_fusion.c and test_literature.c. */
#ifndef MAMBALAYA_TEST_CLASSIFIED_H
#define MAMBALAYA_TEST_CLASSIFIED_H

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

#endif
