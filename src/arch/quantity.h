/* quantity.h — private to src/arch: the parts of quantity parsing that the
 * architecture loader needs to explain a bad value ("'32' has no unit",
 * "'32 GHz' is a frequency") rather than merely reject it. The public
 * entry point is parse_quantity() in arch.h. */
#ifndef MAMBALAYA_ARCH_QUANTITY_H
#define MAMBALAYA_ARCH_QUANTITY_H

#include "../util/util.h"

typedef enum {
  Q_OK,
  Q_NOT_NUMBER,   /* does not start with a decimal number */
  Q_NO_UNIT,      /* a bare number */
  Q_UNKNOWN_UNIT, /* a unit no dimension knows */
  Q_OTHER_DIM,    /* a known unit of another dimension */
  Q_RANGE,        /* outside the dimension's plausible magnitudes */
  Q_BAD_DIM       /* the caller asked for a dimension that does not exist */
} QuantityStatus;

/* Parse TEXT as a quantity of dimension DIM into *VALUE (base units: B,
 * B/s, Hz, pJ/B, pJ, mm2, mm2/B, nm, s). On Q_OTHER_DIM, *FOUND_DIM names the dimension of
 * the unit that was written. */
QuantityStatus quantity_scan(const char *text, const char *dim, double *value,
                             const char **found_dim);

/* For messages: the units of DIM ("B, kB, MB, ..."), what the dimension
 * is ("a size in bytes") and an example ("32 MiB"). */
void quantity_units(const char *dim, Buf *out);
const char *quantity_what(const char *dim);
const char *quantity_example(const char *dim);
/* The magnitudes DIM accepts ("1 B/s to 1e18 B/s"): Q_RANGE beyond. */
const char *quantity_range(const char *dim);

#endif
