/* array.c — dense arrays: fp32, or 16-bit weights as a checkpoint stores
 * them (possibly where they lie in a mapped file). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "exec.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A zero-filled array of at least MAP_BYTES is mapped from the system, not
 * taken from the heap: its pages cost memory only once written (a fused
 * unit's tile buffer for a tensor that the scan kernel keeps inside is
 * never written: fused.c, mark_written), and go back when it is freed.
 * From glibc's heap, whose threshold for mapping rises as mapped blocks
 * are freed, calloc cleared such buffers page by page and the heap kept
 * them: a 512-token mamba2-130m prefill under ri+rsb, its scan's
 * 14 MB buffers, peaked at 393 MB of RSS against the interpreter's 311. */
enum { MAP_BYTES = 1 << 20 };

static float *zeroed(size_t bytes, size_t *mapped) {
  *mapped = 0;
  if (bytes >= MAP_BYTES) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      *mapped = bytes;
      return p;
    }
  }
  return xcalloc(bytes ? bytes : 1, 1);
}

/* The element count of SHAPE, or -1 if a dimension is negative or the
 * count (in bytes, as float) does not fit both int64_t and size_t. */
static int64_t shape_count(int ndim, const int64_t *shape) {
  const uint64_t limit =
      (SIZE_MAX < INT64_MAX ? (uint64_t)SIZE_MAX : (uint64_t)INT64_MAX) /
      sizeof(float);
  uint64_t n;
  return count_elements(ndim, shape, limit, &n) ? (int64_t)n : -1;
}

/* An array of SHAPE without values yet; NULL if the size overflows. */
static Array *shell(int ndim, const int64_t *shape) {
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
  return a;
}

Array *array_new(int ndim, const int64_t *shape) {
  Array *a = shell(ndim, shape);
  if (a)
    a->own = a->data = zeroed((size_t)a->n * sizeof(float), &a->mapped);
  return a;
}

Array *array_uninit(int ndim, const int64_t *shape) {
  Array *a = shell(ndim, shape);
  if (a)
    a->own = a->data = xmalloc((size_t)(a->n ? a->n : 1) * sizeof(float));
  return a;
}

double array_bytes(const Array *a) {
  return (double)a->n * dtype_size(a->dtype);
}

/* An array of SHAPE in dtype T whose values start at P: copied into
 * memory of its own when COPY, else borrowed. */
static Array *array_at(DType t, const void *p, bool copy, int ndim,
                       const int64_t *shape) {
  Array *a = shell(ndim, shape);
  if (!a)
    return NULL;
  size_t bytes = (size_t)a->n * (size_t)dtype_size(t);
  a->dtype = t;
  if (copy) {
    a->own = xmalloc(bytes ? bytes : 1);
    if (bytes)
      memcpy(a->own, p, bytes);
    p = a->own;
  }
  if (t == DT_F32)
    a->data = (float *)p; /* borrowed values are never written */
  else
    a->half = p;
  return a;
}

static const void *values(const Array *a) {
  return a->dtype == DT_F32 ? (const void *)a->data : (const void *)a->half;
}

Array *array_clone(const Array *a) {
  return array_at(a->dtype, values(a), true, a->ndim, a->shape);
}

Array *array_part(const Array *a, int64_t first, int ndim,
                  const int64_t *shape) {
  int64_t n = shape_count(ndim, shape);
  if (ndim < 0 || ndim > IR_MAX_RANKS || n < 0 || first < 0 ||
      first > a->n - n)
    return NULL;
  const char *p = (const char *)values(a) + first * dtype_size(a->dtype);
  return array_at(a->dtype, p, a->own != NULL, ndim, shape);
}

Array *array_f32(const Array *a) {
  Array *b = array_new(a->ndim, a->shape);
  if (!b || !a->n)
    return b;
  if (a->dtype == DT_F32)
    memcpy(b->data, a->data, (size_t)a->n * sizeof(float));
  else
    kernel_widen(a->dtype, a->half, b->data, a->n);
  return b;
}

void array_free(Array *a) {
  if (!a)
    return;
  if (a->mapped)
    munmap(a->own, a->mapped);
  else
    free(a->own);
  free(a);
}
