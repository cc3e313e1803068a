/* reuse.c — candidate groups' prices kept across searches (search.h,
 * GroupMemo): shelves, one per pricer's inputs but the bandwidths and the
 * clock (and what the search prices there: its candidate groups, or a
 * named design's plans), each a table of slots -- a candidate group
 * [i, j), a stitcher's plan -- each a list of kept prices (bills),
 * newest first.
 *
 * A kept price is never changed once put, and a shelf is never dropped
 * while a search has it open, so a search reads its groups' lists
 * without the lock (a slot's head is published with release order, once
 * the price and its link to the one before are written); putting,
 * opening, closing and dropping take it. */
#include "search.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct Shelf {
  struct Shelf *next;
  uint64_t hash;
  int nkey;
  uint64_t *key; /* model_group_key's words */
  int nslots;
  _Atomic(Kept *) *slot; /* each slot's newest price */
  int *kept;         /* prices kept per slot */
  int users;         /* searches that have it open */
  long used;         /* the memo's clock when it was last opened */
  double bytes;
};

struct GroupMemo {
  Shelf *shelves;
  long clock;
  double bytes, max_bytes;
  GroupMemoStats st;
  bool shared;
  pthread_mutex_t lock;
};

static void lock(GroupMemo *m) {
  if (m->shared)
    pthread_mutex_lock(&m->lock);
}

static void unlock(GroupMemo *m) {
  if (m->shared)
    pthread_mutex_unlock(&m->lock);
}

GroupMemo *group_memo_new(bool shared, double max_bytes) {
  GroupMemo *m = xcalloc(1, sizeof *m);
  m->shared = shared;
  m->max_bytes = max_bytes;
  if (shared)
    pthread_mutex_init(&m->lock, NULL);
  return m;
}

void kept_free(Kept *k) {
  if (!k)
    return;
  free(k->energy);
  free(k->traffic);
  free(k->spill_at);
  free(k->spill_t);
  for (int b = 0; b < k->nbills; b++)
    group_bill_free(k->bills[b]);
  free(k->bills);
  plan_free(k->plan);
  free(k);
}

/* What K holds, for the memo's bound (its plan counted by its groups). */
static double kept_bytes(const Kept *k) {
  double b = (double)sizeof *k +
             (double)(k->cap_v + 1) * (2 * sizeof(double) + sizeof(int)) +
             (double)k->cap_t * sizeof(int) +
             (double)k->nbills * sizeof *k->bills;
  for (int i = 0; i < k->nbills; i++)
    b += (double)group_bill_bytes(k->bills[i]);
  if (k->plan)
    b += (double)k->plan->ngroups * (sizeof(Group) + 64);
  return b;
}

static void shelf_free(Shelf *s) {
  for (int g = 0; g < s->nslots; g++)
    for (Kept *k = atomic_load_explicit(&s->slot[g], memory_order_relaxed),
              *next;
         k; k = next) {
      next = k->next;
      kept_free(k);
    }
  free(s->slot);
  free(s->kept);
  free(s->key);
  free(s);
}

void group_memo_free(GroupMemo *m) {
  if (!m)
    return;
  for (Shelf *s = m->shelves, *next; s; s = next) {
    next = s->next;
    shelf_free(s);
  }
  if (m->shared)
    pthread_mutex_destroy(&m->lock);
  free(m);
}

void group_memo_stats(GroupMemo *m, GroupMemoStats *st) {
  lock(m);
  *st = m->st;
  st->shelves = 0;
  for (const Shelf *s = m->shelves; s; s = s->next)
    st->shelves++;
  st->bytes = m->bytes;
  unlock(m);
}

void group_memo_count(GroupMemo *m, const GroupMemoStats *st) {
  lock(m);
  m->st.served += st->served;
  m->st.priced += st->priced;
  m->st.refused += st->refused;
  m->st.plans_served += st->plans_served;
  m->st.plans_priced += st->plans_priced;
  unlock(m);
}

/* Drop the shelves used longest ago that no search has open until the
 * memo is within its bound (or none is left to drop). Under the lock. */
static void make_room(GroupMemo *m) {
  while (m->bytes > m->max_bytes) {
    Shelf **oldest = NULL;
    for (Shelf **p = &m->shelves; *p; p = &(*p)->next)
      if ((*p)->users == 0 && (!oldest || (*p)->used < (*oldest)->used))
        oldest = p;
    if (!oldest)
      return;
    Shelf *s = *oldest;
    *oldest = s->next;
    m->bytes -= s->bytes;
    m->st.dropped++;
    shelf_free(s);
  }
}

Shelf *shelf_open(GroupMemo *m, uint64_t *key, int nkey, int nslots) {
  if (!m) {
    free(key);
    return NULL;
  }
  uint64_t h = hash_words(key, nkey);
  lock(m);
  Shelf *s = m->shelves;
  while (s && !(s->hash == h && s->nkey == nkey && s->nslots == nslots &&
                memcmp(s->key, key, (size_t)nkey * sizeof *key) == 0))
    s = s->next;
  if (s) {
    free(key);
  } else {
    s = xcalloc(1, sizeof *s);
    s->hash = h;
    s->nkey = nkey;
    s->key = key;
    s->nslots = nslots;
    s->slot = xcalloc((size_t)nslots + 1, sizeof *s->slot);
    s->kept = xcalloc((size_t)nslots + 1, sizeof *s->kept);
    s->bytes = (double)sizeof *s + (double)nkey * sizeof *key +
               (double)nslots * (sizeof *s->slot + sizeof *s->kept);
    m->bytes += s->bytes;
    s->next = m->shelves;
    m->shelves = s;
  }
  s->users++;
  s->used = ++m->clock;
  unlock(m);
  return s;
}

void shelf_close(GroupMemo *m, Shelf *s) {
  if (!s)
    return;
  lock(m);
  s->users--;
  make_room(m);
  unlock(m);
}

const Kept *shelf_first(GroupMemo *m, const Shelf *s, int slot) {
  (void)m; /* read without its lock: above */
  return s ? atomic_load_explicit(&s->slot[slot], memory_order_acquire)
           : NULL;
}

void shelf_put(GroupMemo *m, Shelf *s, int slot, Kept *k) {
  lock(m);
  if (s->kept[slot] >= GROUP_MEMO_BILLS) {
    unlock(m);
    kept_free(k);
    return;
  }
  double b = kept_bytes(k);
  k->next = atomic_load_explicit(&s->slot[slot], memory_order_relaxed);
  atomic_store_explicit(&s->slot[slot], k, memory_order_release);
  s->kept[slot]++;
  s->bytes += b;
  m->bytes += b;
  make_room(m);
  unlock(m);
}
