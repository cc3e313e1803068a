/* af.h — an AccelForge workload as accelforge.c reads it (its accesses,
 * bounds, Einsums, ranks and tensors), the rank and tensor look-ups, and
 * the translation of a mixture of experts' scatter and gather (af_moe.c).
 * Private to src/workload/. */
#ifndef MAMBALAYA_AF_H
#define MAMBALAYA_AF_H

#include "peer.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

enum { AF_MAX_ACC = 16, AF_MAX_BOUNDS = 64 };

typedef struct AfAccess {
  const char *tensor;
  int n;
  const char *rank[IR_MAX_RANKS];
  const char *expr[IR_MAX_RANKS]; /* the index as written */
  bool plain[IR_MAX_RANKS];       /* a variable alone */
} AfAccess;

typedef struct AfBound {
  const char *var;
  double lo, hi; /* lo <= var < hi */
} AfBound;

typedef struct AfEinsum {
  const char *name;
  Loc loc;
  const char *rhs; /* the string spelling's right-hand side, or NULL */
  int nin;
  AfAccess in[AF_MAX_ACC];
  AfAccess out;
  bool copy; /* is_copy_operation */
  const char *reduce; /* variables the translation sums (`:: sum(...)`) */
  int nbounds;
  AfBound bounds[AF_MAX_BOUNDS];
} AfEinsum;

typedef struct AfRank {
  const char *name;
  const YamlNode *size; /* its rank_sizes entry, or NULL */
  double value;         /* NaN until known */
  int state;            /* evaluating rank_sizes: 0 new, 1 busy, 2 done */
  int parent;           /* union-find: ranks one variable indexes */
  Loc loc;
  const char *why; /* how the size was found, for the spec's comment */
  bool derived;    /* from an index expression that reaches it */
} AfRank;

/* A mixture-of-experts scatter: its token rank and the expert and slot
 * ranks it copies tokens into (rank classes' roots). */
typedef struct AfScatter {
  int token, expert, slot;
} AfScatter;

typedef struct AfTensor {
  const char *name;
  int n;
  int rank[IR_MAX_RANKS];
} AfTensor;

typedef struct Af {
  Arena ar;
  const char *path;
  Translation *t;
  Diag *d;
  AfRank *ranks;
  int nranks, ranks_cap;
  AfTensor *tensors;
  int ntensors, tensors_cap;
  AfEinsum *einsums;
  int neinsums, einsums_cap;
  AfBound bounds[AF_MAX_BOUNDS]; /* the workload's iteration_space_shape */
  int nbounds;
  const char *noted[16]; /* attributes said to be unmodelled */
  int nnoted;
  AfScatter scatters[8]; /* the MoE scatters seen so far, in order */
  int nscatters;
} Af;

#define fail(af, ...) diag_fail((af)->d, (af)->path, __VA_ARGS__)

static inline char *upper(Af *af, const char *s) {
  char *u = arena_strdup(&af->ar, s);
  for (char *p = u; *p; p++)
    *p = (char)toupper((unsigned char)*p);
  return u;
}

/* ---- ranks and tensors ---- */

_Static_assert(offsetof(AfRank, name) == 0 && offsetof(AfTensor, name) == 0,
               "find_named reads an entry's name at its start");

static inline int rank_find(const Af *af, const char *name) {
  return find_named(af->ranks, af->nranks, sizeof *af->ranks, name);
}

static inline int rank_get(Af *af, const char *name, Loc loc) {
  int r = rank_find(af, name);
  if (r >= 0)
    return r;
  AfRank k = {.name = name, .value = NAN, .parent = af->nranks, .loc = loc};
  VEC_PUSH(af->ranks, af->nranks, af->ranks_cap, k);
  return af->nranks - 1;
}

static inline int rank_root(const Af *af, int r) {
  while (af->ranks[r].parent != r)
    r = af->ranks[r].parent;
  return r;
}

static inline int tensor_find(const Af *af, const char *name) {
  return find_named(af->tensors, af->ntensors, sizeof *af->tensors, name);
}

/* ---- af_moe.c ---- */

/* Copy E as a mixture of experts' scatter of tokens to experts (1), or
 * not one (0; -1 after an error). */
int af_moe_scatter(Af *af, AfEinsum *e);
/* Copy E as the gather back from the experts (1), or not one (0; -1 after
 * an error). */
int af_moe_gather(Af *af, AfEinsum *e);

#endif
