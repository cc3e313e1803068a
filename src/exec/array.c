/* array.c — dense fp32 arrays. */
#include "exec.h"

#include <stdlib.h>
#include <string.h>

/* The element count of SHAPE, or -1 if a dimension is negative or the
 * count (in bytes, as float) does not fit both int64_t and size_t. */
static int64_t shape_count(int ndim, const int64_t *shape) {
  const uint64_t limit =
      (SIZE_MAX < INT64_MAX ? (uint64_t)SIZE_MAX : (uint64_t)INT64_MAX) /
      sizeof(float);
  uint64_t n;
  return count_elements(ndim, shape, limit, &n) ? (int64_t)n : -1;
}

Array *array_new(int ndim, const int64_t *shape) {
  if (ndim < 0 || ndim > IR_MAX_RANKS)
    return NULL;
  int64_t n = shape_count(ndim, shape);
  if (n < 0)
    return NULL;
  Array *a = xcalloc(1, sizeof *a);
  a->ndim = ndim;
  if (ndim)
    memcpy(a->shape, shape, (size_t)ndim * sizeof shape[0]);
  a->n = n;
  a->data = xcalloc((size_t)n, sizeof(float));
  return a;
}

Array *array_clone(const Array *a) {
  Array *b = array_new(a->ndim, a->shape);
  if (b && a->n)
    memcpy(b->data, a->data, (size_t)a->n * sizeof(float));
  return b;
}

void array_free(Array *a) {
  if (!a)
    return;
  free(a->data);
  free(a);
}
