/* nearest.c — "did you mean": the name of a closed set (an option, a
 * design, a role, an op class, a shipped file) nearest to one that was
 * refused, by edit distance. One rule for every such message. */
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The Levenshtein distance between A and B (both short names). */
static size_t edit_distance(const char *a, const char *b) {
  size_t nb = strlen(b);
  size_t *row = xmalloc((nb + 1) * sizeof *row);
  for (size_t j = 0; j <= nb; j++)
    row[j] = j;
  for (size_t i = 1; a[i - 1]; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= nb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  size_t r = row[nb];
  free(row);
  return r;
}

/* Close enough to be a typo of GOT: a third of its length, at least 1. */
bool name_is_near(const char *got, const char *name) {
  size_t limit = strlen(got) / 3;
  return edit_distance(got, name) <= (limit ? limit : 1);
}

Nearest nearest_start(const char *got) {
  return (Nearest){got ? got : "", NULL, (size_t)-1};
}

void nearest_offer(Nearest *n, const char *name) {
  if (!name || !name_is_near(n->got, name))
    return;
  size_t d = edit_distance(n->got, name);
  if (d < n->dist) /* the first of equals: the table's order */
    n->best = name, n->dist = d;
}

void buf_did_you_mean(Buf *b, const Nearest *n) {
  if (n->best)
    buf_printf(b, "did you mean '%s'? ", n->best);
}

void buf_did_you_mean_of(Buf *b, const char *got, const char *const *names,
                         int n) {
  Nearest near = nearest_start(got);
  for (int i = 0; i < n && names[i]; i++)
    nearest_offer(&near, names[i]);
  buf_did_you_mean(b, &near);
}
