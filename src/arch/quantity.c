/* quantity.c — numbers with units, as architecture files write them:
 * "32 MiB", "2039 GB/s", "1.75 GHz", "1.25 pJ/B", "3.9 pJ/bit", "0.4 pJ",
 * for area "177 um2", "0.34 mm2/MiB", "7 nm", and a time "2.5 us". */
#include "arch.h"
#include "quantity.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct UnitDef {
  const char *symbol;
  const char *dim;
  double scale; /* value of one SYMBOL in the dimension's base unit */
} UnitDef;

/* Decimal prefixes are powers of 1000, binary ones powers of 1024. Energy
 * per bit is accepted because DRAM datasheets quote pJ/bit; it is stored
 * per byte. */
static const UnitDef units[] = {
    {"B", "bytes", 1},
    {"kB", "bytes", 1e3},
    {"MB", "bytes", 1e6},
    {"GB", "bytes", 1e9},
    {"TB", "bytes", 1e12},
    {"KiB", "bytes", 1024.0},
    {"MiB", "bytes", 1048576.0},
    {"GiB", "bytes", 1073741824.0},
    {"TiB", "bytes", 1099511627776.0},
    {"B/s", "bytes/s", 1},
    {"kB/s", "bytes/s", 1e3},
    {"MB/s", "bytes/s", 1e6},
    {"GB/s", "bytes/s", 1e9},
    {"TB/s", "bytes/s", 1e12},
    {"KiB/s", "bytes/s", 1024.0},
    {"MiB/s", "bytes/s", 1048576.0},
    {"GiB/s", "bytes/s", 1073741824.0},
    {"TiB/s", "bytes/s", 1099511627776.0},
    {"Hz", "Hz", 1},
    {"kHz", "Hz", 1e3},
    {"MHz", "Hz", 1e6},
    {"GHz", "Hz", 1e9},
    {"fJ/B", "pJ/B", 1e-3},
    {"pJ/B", "pJ/B", 1},
    {"nJ/B", "pJ/B", 1e3},
    {"fJ/bit", "pJ/B", 8e-3},
    {"pJ/bit", "pJ/B", 8},
    {"nJ/bit", "pJ/B", 8e3},
    {"fJ", "pJ", 1e-3},
    {"pJ", "pJ", 1},
    {"nJ", "pJ", 1e3},
    {"um2", "mm2", 1e-6},
    {"mm2", "mm2", 1},
    {"um2/bit", "mm2/B", 8e-6},
    {"um2/B", "mm2/B", 1e-6},
    {"mm2/KiB", "mm2/B", 1 / 1024.0},
    {"mm2/MiB", "mm2/B", 1 / 1048576.0},
    {"mm2/kB", "mm2/B", 1e-3},
    {"mm2/MB", "mm2/B", 1e-6},
    {"nm", "nm", 1},
    {"ns", "s", 1e-9},
    {"us", "s", 1e-6},
    {"ms", "s", 1e-3},
    {"s", "s", 1},
};
enum { NUNITS = sizeof units / sizeof units[0] };

/* Each dimension's plausible magnitudes, in its base unit: a value
 * outside them (other than zero, where the caller allows it) is a typo or
 * an attack, and would make latencies or energies overflow to inf. */
typedef struct DimDef {
  const char *dim, *what, *example;
  double min, max; /* the smallest and largest non-zero magnitudes */
  const char *range; /* the same, for messages */
} DimDef;

static const DimDef dims[] = {
    {"bytes", "a size in bytes", "32 MiB", 1, 1e18, "1 B to 1e18 B"},
    {"bytes/s", "a bandwidth in bytes/s", "2039 GB/s", 1, 1e18,
     "1 B/s to 1e18 B/s"},
    {"Hz", "a frequency in Hz", "1.75 GHz", 1, 1e13, "1 Hz to 1e13 Hz"},
    {"pJ/B", "an energy per byte", "1.25 pJ/B", 1e-6, 1e9,
     "1e-6 pJ/B to 1e9 pJ/B, or 0"},
    {"pJ", "an energy per operation", "0.4 pJ", 1e-6, 1e9,
     "1e-6 pJ to 1e9 pJ, or 0"},
    {"mm2", "an area", "177 um2", 1e-12, 1e6, "1e-12 mm2 to 1e6 mm2, or 0"},
    {"mm2/B", "an area per byte of capacity", "0.34 mm2/MiB", 1e-18, 1e3,
     "1e-18 mm2/B to 1e3 mm2/B, or 0"},
    {"nm", "a technology node in nm", "7 nm", 0.1, 1e4, "0.1 nm to 1e4 nm"},
    {"s", "a time", "2.5 us", 1e-12, 1, "1 ps to 1 s, or 0"},
};
enum { NDIMS = sizeof dims / sizeof dims[0] };

static const DimDef *find_dim(const char *dim) {
  for (int i = 0; dim && i < NDIMS; i++)
    if (strcmp(dims[i].dim, dim) == 0)
      return &dims[i];
  return NULL;
}

static const UnitDef *find_unit(const char *symbol) {
  for (int i = 0; i < NUNITS; i++)
    if (strcmp(units[i].symbol, symbol) == 0)
      return &units[i];
  return NULL;
}

/* strtod on exactly the N characters that decimal_length accepted. */
static double number_value(const char *s, size_t n) {
  char buf[64];
  if (n >= sizeof buf)
    return HUGE_VAL; /* no sane quantity is written with 64 digits */
  memcpy(buf, s, n);
  buf[n] = 0;
  return strtod(buf, NULL);
}

static const char *skip_blanks(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  return s;
}

QuantityStatus quantity_scan(const char *text, const char *dim, double *value,
                             const char **found_dim) {
  if (!find_dim(dim))
    return Q_BAD_DIM;
  const char *s = skip_blanks(text);
  size_t n = decimal_length(s);
  if (n == 0)
    return Q_NOT_NUMBER;
  const char *u = skip_blanks(s + n);
  size_t ulen = strlen(u);
  while (ulen > 0 && (u[ulen - 1] == ' ' || u[ulen - 1] == '\t'))
    ulen--;
  if (ulen == 0)
    return Q_NO_UNIT;
  char symbol[16];
  if (ulen >= sizeof symbol)
    return Q_UNKNOWN_UNIT;
  memcpy(symbol, u, ulen);
  symbol[ulen] = 0;
  const UnitDef *unit = find_unit(symbol);
  if (!unit)
    return Q_UNKNOWN_UNIT;
  if (strcmp(unit->dim, dim) != 0) {
    if (found_dim)
      *found_dim = unit->dim;
    return Q_OTHER_DIM;
  }
  double v = number_value(s, n) * unit->scale;
  const DimDef *d = find_dim(dim);
  if (!isfinite(v) || (v != 0 && (fabs(v) < d->min || fabs(v) > d->max)))
    return Q_RANGE;
  *value = v;
  return Q_OK;
}

bool parse_quantity(const char *text, const char *dim, double *value) {
  return text && quantity_scan(text, dim, value, NULL) == Q_OK;
}

const char *parse_any_quantity(const char *text, double *value) {
  const char *dim = dims[0].dim;
  QuantityStatus st =
      text ? quantity_scan(text, dim, value, &dim) : Q_NOT_NUMBER;
  if (st == Q_OTHER_DIM)
    st = quantity_scan(text, dim, value, NULL);
  if (st != Q_OK)
    return NULL;
  for (int i = 0; i < NUNITS; i++) /* the base unit: the one of scale 1 */
    if (strcmp(units[i].dim, dim) == 0 && units[i].scale == 1)
      return units[i].symbol;
  return NULL;
}

void quantity_units(const char *dim, Buf *out) {
  int k = 0;
  for (int i = 0; i < NUNITS; i++)
    if (strcmp(units[i].dim, dim) == 0)
      buf_printf(out, "%s%s", k++ ? ", " : "", units[i].symbol);
}

const char *quantity_what(const char *dim) {
  const DimDef *d = find_dim(dim);
  return d ? d->what : "a quantity";
}

const char *quantity_range(const char *dim) {
  const DimDef *d = find_dim(dim);
  return d ? d->range : "";
}

const char *quantity_example(const char *dim) {
  const DimDef *d = find_dim(dim);
  return d ? d->example : "";
}
