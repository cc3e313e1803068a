/* quantity.c — numbers with units, as architecture files write them:
 * "32 MiB", "2039 GB/s", "1.75 GHz", "1.25 pJ/B", "3.9 pJ/bit", "0.4 pJ",
 * and for area "177 um2", "0.34 mm2/MiB", "7 nm". */
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
};
enum { NUNITS = sizeof units / sizeof units[0] };

typedef struct DimDef {
  const char *dim, *what, *example;
} DimDef;

static const DimDef dims[] = {
    {"bytes", "a size in bytes", "32 MiB"},
    {"bytes/s", "a bandwidth in bytes/s", "2039 GB/s"},
    {"Hz", "a frequency in Hz", "1.75 GHz"},
    {"pJ/B", "an energy per byte", "1.25 pJ/B"},
    {"pJ", "an energy per operation", "0.4 pJ"},
    {"mm2", "an area", "177 um2"},
    {"mm2/B", "an area per byte of capacity", "0.34 mm2/MiB"},
    {"nm", "a technology node in nm", "7 nm"},
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

/* Length of the decimal number at the start of S: [+-] digits [. digits]
 * [e [+-] digits], with at least one digit in the mantissa; 0 if none.
 * Written out rather than left to strtod, which would also take "inf",
 * "nan" and hex floats. */
static size_t number_length(const char *s) {
  size_t i = 0, digits = 0;
  if (s[i] == '+' || s[i] == '-')
    i++;
  while (isdigit((unsigned char)s[i]))
    i++, digits++;
  if (s[i] == '.') {
    i++;
    while (isdigit((unsigned char)s[i]))
      i++, digits++;
  }
  if (digits == 0)
    return 0;
  if (s[i] == 'e' || s[i] == 'E') {
    size_t j = i + 1;
    if (s[j] == '+' || s[j] == '-')
      j++;
    if (isdigit((unsigned char)s[j])) {
      while (isdigit((unsigned char)s[j]))
        j++;
      i = j;
    }
  }
  return i;
}

/* strtod on exactly the N characters that number_length accepted. */
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

bool parse_number(const char *text, double *value) {
  const char *s = skip_blanks(text);
  size_t n = number_length(s);
  if (n == 0 || *skip_blanks(s + n) != 0)
    return false;
  double v = number_value(s, n);
  if (!isfinite(v))
    return false;
  *value = v;
  return true;
}

QuantityStatus quantity_scan(const char *text, const char *dim, double *value,
                             const char **found_dim) {
  if (!find_dim(dim))
    return Q_BAD_DIM;
  const char *s = skip_blanks(text);
  size_t n = number_length(s);
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
  if (!isfinite(v))
    return Q_RANGE;
  *value = v;
  return Q_OK;
}

bool parse_quantity(const char *text, const char *dim, double *value) {
  return text && quantity_scan(text, dim, value, NULL) == Q_OK;
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

const char *quantity_example(const char *dim) {
  const DimDef *d = find_dim(dim);
  return d ? d->example : "";
}
