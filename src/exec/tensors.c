/* tensors.c — a set of named arrays. */
#include "exec.h"

#include <stdlib.h>
#include <string.h>

static int find(const Tensors *t, const char *name) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->names[i], name) == 0)
      return i;
  return -1;
}

void tensors_put(Tensors *t, const char *name, Array *a, bool owned) {
  int i = find(t, name);
  if (i >= 0) {
    if (t->owned[i] && t->arrays[i] != a)
      array_free(t->arrays[i]);
    t->arrays[i] = a;
    t->owned[i] = owned;
    return;
  }
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 16;
    t->names = xrealloc(t->names, (size_t)t->cap * sizeof *t->names);
    t->arrays = xrealloc(t->arrays, (size_t)t->cap * sizeof *t->arrays);
    t->owned = xrealloc(t->owned, (size_t)t->cap * sizeof *t->owned);
  }
  t->names[t->n] = xstrdup(name);
  t->arrays[t->n] = a;
  t->owned[t->n] = owned;
  t->n++;
}

Array *tensors_get(const Tensors *t, const char *name) {
  int i = find(t, name);
  return i >= 0 ? t->arrays[i] : NULL;
}

Array *tensors_take(Tensors *t, const char *name) {
  int i = find(t, name);
  if (i < 0)
    return NULL;
  Array *a = t->arrays[i];
  free(t->names[i]);
  t->n--;
  t->names[i] = t->names[t->n];
  t->arrays[i] = t->arrays[t->n];
  t->owned[i] = t->owned[t->n];
  return a;
}

void tensors_free(Tensors *t) {
  for (int i = 0; i < t->n; i++) {
    free(t->names[i]);
    if (t->owned[i])
      array_free(t->arrays[i]);
  }
  free(t->names);
  free(t->arrays);
  free(t->owned);
  memset(t, 0, sizeof *t);
}
