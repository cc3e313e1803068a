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
  MEMO_MAX_ENTRIES = 1 << 14, /* then it starts over: at most ~16 MB */
};

typedef struct Entry {
  uint64_t hash;
  int nwords;
  uint64_t *key; /* NULL: an empty slot */
  Mapping *answer;
} Entry;

struct MapMemo {
  int n, cap; /* entries; slots (a power of two, open addressing) */
  Entry *slot;
  long hits, misses;
  bool shared;           /* several threads use it: LOCK guards the table */
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

static uint64_t hash_words(const uint64_t *w, int n) {
  uint64_t h = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < n; i++) {
    h ^= w[i];
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 32;
  }
  return h;
}

MapMemo *map_memo_new(bool shared) {
  MapMemo *m = xcalloc(1, sizeof *m);
  m->cap = 1024;
  m->slot = xcalloc((size_t)m->cap, sizeof *m->slot);
  m->shared = shared;
  if (shared)
    pthread_mutex_init(&m->lock, NULL);
  return m;
}

static void clear(MapMemo *m) {
  for (int i = 0; i < m->cap; i++) {
    free(m->slot[i].key);
    free(m->slot[i].answer);
  }
  memset(m->slot, 0, (size_t)m->cap * sizeof *m->slot);
  m->n = 0;
}

void map_memo_free(MapMemo *m) {
  if (!m)
    return;
  clear(m);
  if (m->shared)
    pthread_mutex_destroy(&m->lock);
  free(m->slot);
  free(m);
}

static Entry *find(const MapMemo *m, uint64_t h, const uint64_t *w, int n) {
  for (size_t i = h & (size_t)(m->cap - 1);; i = (i + 1) & (size_t)(m->cap - 1)) {
    Entry *e = &m->slot[i];
    if (!e->key ||
        (e->hash == h && e->nwords == n &&
         memcmp(e->key, w, (size_t)n * sizeof *w) == 0))
      return e;
  }
}

/* Double the table; false, the table as it was, if memory is short. */
static bool grow(MapMemo *m) {
  Entry *old = m->slot;
  int ocap = m->cap;
  Entry *slot = calloc(2 * (size_t)ocap, sizeof *slot);
  if (!slot)
    return false;
  m->cap *= 2;
  m->slot = slot;
  for (int i = 0; i < ocap; i++)
    if (old[i].key)
      *find(m, old[i].hash, old[i].key, old[i].nwords) = old[i];
  free(old);
  return true;
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
  Entry *e = find(m, h, w, n);
  bool hit = e->key != NULL;
  if (hit)
    *best = *e->answer;
  hit ? m->hits++ : m->misses++;
  if (m->shared)
    pthread_mutex_unlock(&m->lock);
  if (hit)
    return;
  map_search(p, best);
  /* Nothing under the lock may be a fatal error (util.h): a sweep's
   * thread that failed there would leave the others waiting on it
   * forever. So the entry is allocated first, and a table that cannot
   * grow just does not remember this answer. */
  uint64_t *key = xmalloc((size_t)n * sizeof *w);
  memcpy(key, w, (size_t)n * sizeof *w);
  Mapping *answer = xmalloc(sizeof *answer);
  *answer = *best;
  if (m->shared)
    pthread_mutex_lock(&m->lock);
  if (m->n == MEMO_MAX_ENTRIES)
    clear(m);
  bool room = 2 * (m->n + 1) <= m->cap || grow(m);
  e = room ? find(m, h, w, n) : NULL; /* the slot may have moved, or
                 another thread may have searched the problem meanwhile */
  if (e && !e->key) {
    *e = (Entry){.hash = h, .nwords = n, .key = key, .answer = answer};
    m->n++;
    key = NULL;
    answer = NULL;
  }
  if (m->shared)
    pthread_mutex_unlock(&m->lock);
  free(key);
  free(answer);
}

void map_memo_stats(const MapMemo *m, long *hits, long *misses) {
  *hits = m ? m->hits : 0;
  *misses = m ? m->misses : 0;
}
