/* memo.c — remembering mapping searches across evaluations.
 *
 * map_search is a pure function of its problem, and the same problems
 * come back: the designs of one point share their unfused Einsums, and
 * a sweep's points that differ only in the array, the bandwidth or the
 * clock pose exactly the same loop nests to the same buffer. The memo
 * keys each problem by the bytes the search reads (its canonical form:
 * sizes, the loops above, the DRAM and output flags, each coordinate's variables and
 * coefficients, the capacity, the group's tiles) and keeps the answer.
 * A hit returns the very Mapping the search returned, so an evaluation
 * with a memo gives the same figures as one without -- whichever thread
 * searched a problem first, in a shared memo. */
#include "model.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum {
  MEMO_KEY_WORDS = 2 + MAP_MAX_VARS + 2 + MAP_MAX_VARS + 1 +
                   2 * NEST_MAX_LOOPS +
                   MAP_MAX_TENSORS * (3 + IR_MAX_RANKS * (1 + MAP_MAX_VARS)),
  /* Entries of a generation (below): two of them at most, ~45 MB (a
   * sweep with `best` of Mamba-1 keeps ~700 bytes an entry). */
  MEMO_GENERATION = 1 << 15,
};

/* An answer and its key in one block: a hit reads both. */
typedef struct Stored {
  Mapping answer;
  uint64_t key[];
} Stored;

typedef struct Entry {
  uint64_t hash;
  int nwords; /* -1: moved to the young generation (the block is its) */
  Stored *p;  /* NULL: an empty slot */
} Entry;

/* One open-addressing table (a power of two slots). */
typedef struct Table {
  int n, cap;
  Entry *slot;
} Table;

/* Two generations: problems go into the young one; when it is full, the
 * old one is dropped and the young one becomes old, and a problem found
 * in the old one moves back into the young. A sweep's points walk
 * through their problems (a buffer's, then the next buffer's), and one
 * table cleared when full kept dropping the problems of the points it
 * was in the middle of: ten times the searches on the 56 points of
 * bench/sweep_best.yaml. */
struct MapMemo {
  Table young, old;
  long hits, misses;
  bool shared;           /* several threads use it: LOCK guards the tables */
  pthread_mutex_t lock;  /* (the searches themselves run outside it) */
};

static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

/* The problem's canonical form: everything map_search reads, nothing
 * else (unused coefficients and stale entries past the counts are left
 * out, so equal problems give equal keys). */
static int problem_key(const MapProblem *p, uint64_t *w) {
  int n = 0;
  /* The problem's variables (a set's members past them are no part of
   * it): each set below is walked by its bits, lowest first. */
  VarSet in = p->nvars >= 64 ? ~(VarSet)0 : ((VarSet)1 << p->nvars) - 1;
  w[n++] = (uint64_t)p->nvars;
  w[n++] = (uint64_t)p->ntensors;
  for (int v = 0; v < p->nvars; v++)
    w[n++] = dbits(p->size[v]);
  w[n++] = dbits(p->capacity);
  w[n++] = p->outer;
  for (VarSet b = p->outer & in; b; b &= b - 1)
    w[n++] = dbits(p->outer_tile[__builtin_ctzll(b)]);
  w[n++] = (uint64_t)p->nabove;
  for (int j = 0; j < p->nabove; j++) {
    w[n++] = (uint64_t)p->above[j].var | (uint64_t)p->above[j].group << 32;
    w[n++] = dbits(p->above[j].trips);
  }
  for (int t = 0; t < p->ntensors; t++) {
    const MapTensor *T = &p->t[t];
    w[n++] = T->vars;
    w[n++] = dbits(T->elems);
    w[n++] = (uint64_t)T->ndims | (uint64_t)T->output << 32 |
             (uint64_t)T->dram << 33;
    for (int k = 0; k < T->ndims; k++) {
      w[n++] = T->dim_vars[k];
      for (VarSet b = T->dim_vars[k] & in; b; b &= b - 1)
        w[n++] = dbits(T->dim_coef[k][__builtin_ctzll(b)]);
    }
  }
  return n;
}

static void table_init(Table *t) {
  t->n = 0;
  t->cap = 1024;
  t->slot = xcalloc((size_t)t->cap, sizeof *t->slot);
}

MapMemo *map_memo_new(bool shared) {
  MapMemo *m = xcalloc(1, sizeof *m);
  table_init(&m->young);
  table_init(&m->old);
  m->shared = shared;
  if (shared)
    pthread_mutex_init(&m->lock, NULL);
  return m;
}

/* Empty T, freeing what its entries own (a moved one owns nothing). */
static void clear(Table *t) {
  for (int i = 0; i < t->cap; i++)
    if (t->slot[i].nwords >= 0)
      free(t->slot[i].p);
  memset(t->slot, 0, (size_t)t->cap * sizeof *t->slot);
  t->n = 0;
}

void map_memo_free(MapMemo *m) {
  if (!m)
    return;
  clear(&m->young);
  clear(&m->old);
  if (m->shared)
    pthread_mutex_destroy(&m->lock);
  free(m->young.slot);
  free(m->old.slot);
  free(m);
}

/* The entry of key W (N words, hash H) in T, or the empty slot where it
 * would go (a moved entry keeps the probe going: it matches nothing). */
static Entry *find(const Table *t, uint64_t h, const uint64_t *w, int n) {
  for (size_t i = h & (size_t)(t->cap - 1);;
       i = (i + 1) & (size_t)(t->cap - 1)) {
    Entry *e = &t->slot[i];
    if (!e->p ||
        (e->hash == h && e->nwords == n &&
         memcmp(e->p->key, w, (size_t)n * sizeof *w) == 0))
      return e;
  }
}

/* Double T; false, T as it was, if memory is short. */
static bool grow(Table *t) {
  Entry *old = t->slot;
  int ocap = t->cap;
  Entry *slot = calloc(2 * (size_t)ocap, sizeof *slot);
  if (!slot)
    return false;
  t->cap *= 2;
  t->slot = slot;
  for (int i = 0; i < ocap; i++)
    if (old[i].p)
      *find(t, old[i].hash, old[i].p->key, old[i].nwords) = old[i];
  free(old);
  return true;
}

/* The young generation's empty slot for key W, or NULL when it cannot
 * grow: a full generation first becomes the old one. */
static Entry *young_slot(MapMemo *m, uint64_t h, const uint64_t *w, int n) {
  if (m->young.n == MEMO_GENERATION) {
    clear(&m->old);
    Table t = m->old;
    m->old = m->young;
    m->young = t;
  }
  Table *y = &m->young;
  if (2 * (y->n + 1) > y->cap && !grow(y))
    return NULL;
  Entry *e = find(y, h, w, n);
  return e->p ? NULL : e; /* another thread searched it meanwhile */
}

/* The answer to key W in M, or NULL (under M's lock when shared). One in
 * the old generation moves into the young one, while it has room. */
static const Mapping *lookup(MapMemo *m, uint64_t h, const uint64_t *w,
                             int n) {
  Entry *e = find(&m->young, h, w, n);
  if (e->p)
    return &e->p->answer;
  Entry *o = find(&m->old, h, w, n);
  if (!o->p)
    return NULL;
  const Mapping *answer = &o->p->answer;
  /* (Not into a full young generation: making room would drop O.) */
  Entry *y = m->young.n < MEMO_GENERATION ? young_slot(m, h, w, n) : NULL;
  if (y) {
    *y = *o;
    m->young.n++;
    o->nwords = -1; /* the young entry owns the block now */
  }
  return answer;
}

void map_search_memo(MapMemo *m, const MapProblem *p, Mapping *best) {
  if (!m) {
    map_search(p, best);
    return;
  }
  uint64_t w[MEMO_KEY_WORDS];
  int n = problem_key(p, w);
  uint64_t h = hash_words(w, n);
  if (m->shared)
    pthread_mutex_lock(&m->lock);
  const Mapping *known = lookup(m, h, w, n);
  if (known)
    *best = *known;
  known ? m->hits++ : m->misses++;
  if (m->shared)
    pthread_mutex_unlock(&m->lock);
  if (known)
    return;
  map_search(p, best);
  /* Nothing under the lock may be a fatal error (util.h): a sweep's
   * thread that failed there would leave the others waiting on it
   * forever. So the entry is allocated first, and a table that cannot
   * grow just does not remember this answer. */
  Stored *st = xmalloc(sizeof *st + (size_t)n * sizeof *w);
  st->answer = *best;
  memcpy(st->key, w, (size_t)n * sizeof *w);
  if (m->shared)
    pthread_mutex_lock(&m->lock);
  Entry *e = young_slot(m, h, w, n);
  if (e) {
    *e = (Entry){.hash = h, .nwords = n, .p = st};
    m->young.n++;
    st = NULL;
  }
  if (m->shared)
    pthread_mutex_unlock(&m->lock);
  free(st);
}

void map_memo_stats(const MapMemo *m, long *hits, long *misses) {
  *hits = m ? m->hits : 0;
  *misses = m ? m->misses : 0;
}
