/* names.c — a hash index over the names of a cascade's ranks, tensors,
 * symbols or parameters (ir.h, NameHash): a lookup is O(1), so that a
 * spec of tens of thousands of ranks loads in linear time, where the
 * linear search (find_named) made it quadratic (40 000 ranks: 41 s). The
 * index holds positions in the array it indexes; the names are the
 * entries' own (each entry's first member). */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_name(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static const char *name_at(const void *arr, size_t size, int i) {
  return *(const char *const *)((const char *)arr + (size_t)i * size);
}

/* Put entry I of ARR in X's slots (X has room). */
static void place(NameHash *x, const void *arr, size_t size, int i) {
  size_t mask = (size_t)x->cap - 1;
  size_t at = hash_name(name_at(arr, size, i)) & mask;
  while (x->slot[at])
    at = (at + 1) & mask;
  x->slot[at] = i + 1;
}

void names_add(NameHash *x, const void *arr, int n, size_t size) {
  if (2 * (long)n > x->cap) { /* at most half full: short probes */
    int cap = x->cap ? 2 * x->cap : 16;
    while (2 * (long)n > cap)
      cap *= 2;
    free(x->slot);
    x->slot = xcalloc((size_t)cap, sizeof *x->slot);
    x->cap = cap;
    for (int i = 0; i < n - 1; i++)
      place(x, arr, size, i);
  }
  place(x, arr, size, n - 1);
}

int names_find(const NameHash *x, const void *arr, int n, size_t size,
               const char *name) {
  if (!x->cap)
    return find_named(arr, n, size, name);
  size_t mask = (size_t)x->cap - 1;
  for (size_t at = hash_name(name) & mask; x->slot[at]; at = (at + 1) & mask)
    if (strcmp(name_at(arr, size, x->slot[at] - 1), name) == 0)
      return x->slot[at] - 1;
  return -1;
}

void names_free(NameHash *x) {
  free(x->slot);
  *x = (NameHash){0};
}
