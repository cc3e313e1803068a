/* csv.c — fields of RFC 4180 CSV files (figures.csv, eval --csv, the
 * sweep's points.csv). */
#include "report.h"

#include <math.h>
#include <string.h>

void csv_field(Buf *b, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    buf_printf(b, "%s", s);
    return;
  }
  buf_printf(b, "\"");
  for (; *s; s++)
    if (*s == '"')
      buf_printf(b, "\"\"");
    else
      buf_printf(b, "%c", *s);
  buf_printf(b, "\"");
}

void csv_number(Buf *b, double v) {
  if (isfinite(v))
    buf_printf(b, "%.10g", v);
}

void csv_numbers(Buf *b, const double *v, size_t n) {
  for (size_t k = 0; k < n; k++) {
    buf_printf(b, ",");
    csv_number(b, v[k]);
  }
}
