/* study_values.h — what study.c and study_values.c share while a study
 * file loads: the Loader (the study being filled, where to report, the
 * memory budget) and the checks of one value (study_values.c). */
#ifndef STUDY_VALUES_H
#define STUDY_VALUES_H

#include "study.h"

typedef struct Loader {
  Study *s;
  Diag *d;
  double budget; /* bytes the study may hold (INFINITY: no limit) */
} Loader;

#define fail(L, ...) diag_fail((L)->d, (L)->s->path, __VA_ARGS__)

/* The document checks of ydoc.h, in the loader's terms. */
static inline bool want(Loader *L, const YamlNode *n, YamlKind k,
                        const char *what) {
  return ydoc_want(n, k, what, L->d);
}

static inline bool check_keys(Loader *L, const YamlNode *m,
                              const char *const *allowed, const char *where) {
  return ydoc_known_keys(m, allowed, where, L->d);
}

/* The value under KEY of map M (WHERE names it), which must have one:
 * else NULL, with ydoc's wording ("WHERE is missing 'KEY' (HINT)"), as
 * every loader says it. */
static inline const YamlNode *need(Loader *L, const YamlNode *m,
                                   const char *key, const char *where,
                                   const char *hint) {
  return ydoc_need(m, key, m->loc, where, hint, L->d);
}

/* N a list (WHAT says what it is) with an item (else "NAME is empty"). */
bool study_list(Loader *L, const YamlNode *n, const char *what,
                const char *name);
/* N as a list of ITEMS: a scalar is a list of one (held in *ONE). */
bool study_as_list(Loader *L, const YamlNode *n, const char *what,
                   YamlNode *const **items, int *count, YamlNode **one);
/* N as a plain decimal number, the rule of specs and the CLI. */
bool study_number(Loader *L, const YamlNode *n, const char *what, double *v);
/* NAME: a letter or '_', then letters, digits, '_', '-', '.'. */
bool study_is_name(const char *s);
/* A value, a list of values, or a range, as nodes (study_values.c). */
bool study_values(Loader *L, const YamlNode *n, const char *what,
                  bool list_values, YamlNode ***out, int *count);
/* The same, each value a number. */
bool study_numbers(Loader *L, const YamlNode *n, const char *what,
                   double **out, int *count);

#endif
