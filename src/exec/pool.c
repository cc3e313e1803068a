/* pool.c — a fixed set of worker threads that run the indices of a job.
 *
 * The workers are started once, in pool_new. pool_run posts a job (a
 * function and an index count), works on it from the calling thread too,
 * and returns once every index has run. Indices are claimed one at a time
 * from one atomic word: a worker that starts late simply claims fewer,
 * which balances uneven tasks as well.
 *
 * Posting and finishing a job take no lock. The claim word holds the
 * job's number (so that each post changes it), its index count and the
 * next index; a worker claims by compare-and-swap, which succeeds only on
 * the current job's word, and reads the job's function only after it has
 * claimed: the job cannot end (nor the next be posted) before that index
 * is done, so a worker descheduled for a whole job never runs an index
 * with another job's function. A job ends when its count of finished
 * indices reaches its count, so a caller that ran every index itself
 * returns at once, without waiting for workers that took none (on a
 * shared machine, a descheduled worker would otherwise stall every job by
 * a scheduler tick).
 *
 * Waiting is spin-then-sleep. Waking a sleeping thread costs tens of
 * microseconds (on a virtual machine, ~100 us: the idle vCPU is halted),
 * as much as a whole decode-sized matrix product; and a model runs such
 * products back to back. So a worker watches for the next job for
 * SPIN_SECONDS before sleeping on a condition variable, and the caller
 * likewise watches for the end of a job before sleeping. The mutex and
 * conditions are touched only when someone sleeps: a sleeper announces
 * itself (SLEEPERS, CALLER_ASLEEP) before its last look, and the other
 * side looks for the announcement after its change (both sequentially
 * consistent, so one of them sees the other). An idle pool therefore
 * spins for at most SPIN_SECONDS, then costs no CPU.
 *
 * One job at a time: a pool_run made while the pool is already running a
 * job (from inside FN, or from another thread, or between pool_start and
 * pool_join) runs its indices inline on its own thread instead of
 * deadlocking. pool_start posts a job for the workers alone and returns
 * at once, so that the caller works on something else meanwhile (on its
 * own: its pool_runs run inline) until pool_join.
 *
 * A fatal error in an index (memory running out) must not end a host's
 * process from a worker, nor unwind the caller while workers still read
 * its job: every index, the caller's too, runs under fatal_catch; after
 * a failure the remaining indices are counted done without running, and
 * once the job has ended the caller ends its run with the failure
 * (fatal_rethrow: its trap, or exit status 1). */
#include "exec.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define SPIN_SECONDS 100e-6

/* The claim word: job number (JOB_BITS), index count and next index
 * (IDX_BITS each). A job of more indices is posted in parts. */
enum { IDX_BITS = 22, JOB_BITS = 64 - 2 * IDX_BITS };
#define IDX_MASK ((UINT64_C(1) << IDX_BITS) - 1)
#define MAX_PART ((int)IDX_MASK)

typedef void (*PoolFn)(void *arg, int i, int n);

struct Pool {
  int threads;          /* workers + the caller */
  pthread_t *workers;   /* threads - 1 of them */
  pthread_mutex_t mu;   /* for sleeping and waking only */
  pthread_cond_t wake;  /* a job was posted, or the pool is stopping */
  pthread_cond_t ended; /* the job's last index is done */
  /* The job: written before CLAIM is stored (release), read after an
   * index of it is claimed (acquire). Index i of the part runs as
   * FN(ARG, BASE + i, N). */
  PoolFn fn;
  void *arg;
  int base, n;
  _Atomic uint64_t claim; /* job number | count | next index */
  atomic_int done;        /* indices of the job finished */
  atomic_int sleepers;    /* workers asleep or about to be */
  atomic_bool caller_asleep;
  atomic_bool running; /* a job is posted and not finished */
  atomic_bool stop;
  int started; /* indices of the job pool_start posted, 0 when none */
  FatalRecord failure; /* the job's first fatal error */
};

static uint64_t word(uint64_t job, uint64_t count, uint64_t next) {
  return job << (2 * IDX_BITS) | count << IDX_BITS | next;
}
static int word_count(uint64_t w) { return (int)(w >> IDX_BITS & IDX_MASK); }
static int word_next(uint64_t w) { return (int)(w & IDX_MASK); }

/* Claim an index of whatever job W (the claim word as last read) is; -1
 * when it has none left. */
static int claim_index(Pool *p, uint64_t *w) {
  while (word_next(*w) < word_count(*w)) {
    if (atomic_compare_exchange_weak_explicit(&p->claim, w, *w + 1,
                                              memory_order_acquire,
                                              memory_order_acquire))
      return word_next(*w);
  }
  return -1;
}

/* The caller may be asleep on the end of the job: wake it. */
static void signal_end(Pool *p) {
  if (!atomic_load(&p->caller_asleep))
    return;
  pthread_mutex_lock(&p->mu);
  pthread_cond_signal(&p->ended);
  pthread_mutex_unlock(&p->mu);
}

typedef struct PoolIndex {
  Pool *p;
  int i;
} PoolIndex;

static void run_index(void *arg) {
  const PoolIndex *x = arg;
  x->p->fn(x->p->arg, x->p->base + x->i, x->p->n);
}

/* Claim and run indices of the posted job until none is left (after a
 * failure, claim them only); W is the claim word as last read, and is
 * left at the word with none left. */
static void run_claimed(Pool *p, uint64_t *w) {
  int i;
  while ((i = claim_index(p, w)) >= 0) {
    if (!fatal_failed(&p->failure))
      fatal_catch(&p->failure, run_index, &(PoolIndex){p, i});
    /* seq_cst: the index's writes reach the caller, and CALLER_ASLEEP is
     * read after (see the head comment). */
    if (atomic_fetch_add(&p->done, 1) + 1 == word_count(*w))
      signal_end(p);
    *w = atomic_load_explicit(&p->claim, memory_order_acquire);
  }
}

/* Spin until the claim word moves past SEEN or the pool stops, for at
 * most SPIN_SECONDS; true if it did. */
static bool spin_for_job(Pool *p, uint64_t seen) {
  double until = now_seconds() + SPIN_SECONDS;
  for (int i = 0;; i++) {
    if (atomic_load_explicit(&p->claim, memory_order_acquire) != seen ||
        atomic_load_explicit(&p->stop, memory_order_acquire))
      return true;
    if (i % 64 == 63 && now_seconds() > until)
      return false;
    cpu_relax();
  }
}

static void sleep_for_job(Pool *p, uint64_t seen) {
  atomic_fetch_add(&p->sleepers, 1);
  pthread_mutex_lock(&p->mu);
  while (atomic_load(&p->claim) == seen && !atomic_load(&p->stop))
    pthread_cond_wait(&p->wake, &p->mu);
  pthread_mutex_unlock(&p->mu);
  atomic_fetch_sub(&p->sleepers, 1);
}

static void *worker_main(void *vp) {
  Pool *p = vp;
  uint64_t w = atomic_load_explicit(&p->claim, memory_order_acquire);
  for (;;) {
    run_claimed(p, &w);
    if (!spin_for_job(p, w))
      sleep_for_job(p, w);
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
      return NULL;
    w = atomic_load_explicit(&p->claim, memory_order_acquire);
  }
}

Pool *pool_new(int threads) {
  Pool *p = xcalloc(1, sizeof *p);
  p->threads = 1;
  atomic_init(&p->claim, 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->sleepers, 0);
  atomic_init(&p->caller_asleep, false);
  atomic_init(&p->running, false);
  atomic_init(&p->stop, false);
  atomic_init(&p->failure.state, 0);
  if (threads <= 1)
    return p;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->ended, NULL);
  p->workers = xcalloc((size_t)threads - 1, sizeof *p->workers);
  /* If the system refuses a thread, the pool is simply smaller. */
  for (int i = 0; i < threads - 1; i++) {
    if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0)
      break;
    p->threads++;
  }
  return p;
}

int pool_size(const Pool *p) { return p ? p->threads : 1; }

static void run_inline(PoolFn fn, void *arg, int n) {
  for (int i = 0; i < n; i++)
    fn(arg, i, n);
}

/* Wait until the job's COUNT indices are done: spin a while, then
 * sleep. */
static void wait_done(Pool *p, int count) {
  double until = now_seconds() + SPIN_SECONDS;
  for (int i = 0; atomic_load(&p->done) < count; i++) {
    if (i % 64 == 63 && now_seconds() > until) {
      atomic_store(&p->caller_asleep, true);
      pthread_mutex_lock(&p->mu);
      while (atomic_load(&p->done) < count)
        pthread_cond_wait(&p->ended, &p->mu);
      pthread_mutex_unlock(&p->mu);
      atomic_store(&p->caller_asleep, false);
      return;
    }
    cpu_relax();
  }
}

/* Post indices [BASE, BASE + COUNT) of a job of N for the workers; the
 * claim word as posted. */
static uint64_t post(Pool *p, PoolFn fn, void *arg, int base, int count,
                     int n) {
  p->fn = fn;
  p->arg = arg;
  p->base = base;
  p->n = n;
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  uint64_t old = atomic_load_explicit(&p->claim, memory_order_relaxed);
  uint64_t job = (old >> (2 * IDX_BITS)) + 1;
  uint64_t w = word(job & ((UINT64_C(1) << JOB_BITS) - 1), (uint64_t)count, 0);
  atomic_store(&p->claim, w); /* seq_cst: SLEEPERS is read after */
  if (atomic_load(&p->sleepers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  return w;
}

/* Post indices [BASE, BASE + COUNT) of a job of N, run them with the
 * workers, and return when all are done. */
static void run_part(Pool *p, PoolFn fn, void *arg, int base, int count,
                     int n) {
  uint64_t w = post(p, fn, arg, base, count, n);
  run_claimed(p, &w);
  wait_done(p, count);
}

void pool_run(Pool *p, void (*fn)(void *arg, int i, int n), void *arg, int n) {
  if (n <= 0)
    return;
  if (!p || p->threads <= 1 || n == 1 ||
      atomic_exchange_explicit(&p->running, true, memory_order_acquire)) {
    run_inline(fn, arg, n);
    return;
  }
  for (int base = 0; base < n && !fatal_failed(&p->failure); base += MAX_PART)
    run_part(p, fn, arg, base, n - base < MAX_PART ? n - base : MAX_PART, n);
  atomic_store_explicit(&p->running, false, memory_order_release);
  fatal_rethrow(&p->failure);
}

void pool_start(Pool *p, void (*fn)(void *arg, int i, int n), void *arg,
                int n) {
  if (n <= 0)
    return;
  if (!p || p->threads <= 1 || n > MAX_PART ||
      atomic_exchange_explicit(&p->running, true, memory_order_acquire)) {
    run_inline(fn, arg, n);
    return;
  }
  p->started = n;
  post(p, fn, arg, 0, n, n);
}

void pool_join(Pool *p) {
  if (!p || p->started == 0)
    return;
  /* What no worker has taken yet, the caller runs (a worker descheduled
   * for the whole job would otherwise stall it). */
  uint64_t w = atomic_load_explicit(&p->claim, memory_order_acquire);
  run_claimed(p, &w);
  wait_done(p, p->started);
  p->started = 0;
  atomic_store_explicit(&p->running, false, memory_order_release);
  fatal_rethrow(&p->failure);
}

void pool_free(Pool *p) {
  if (!p)
    return;
  if (p->workers) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->threads - 1; i++)
      pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->ended);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
  }
  free(p->workers);
  free(p);
}
