/* pool.c — a fixed set of worker threads that run the indices of a job.
 *
 * The workers are started once, in pool_new. pool_run posts a job (a
 * function and an index count), works on it from the calling thread too,
 * and waits until every worker has checked out of it. Indices are claimed
 * one at a time from an atomic counter: a worker that starts late simply
 * claims fewer, which balances uneven tasks as well.
 *
 * Waiting is spin-then-sleep. Waking a sleeping thread costs tens of
 * microseconds (on a virtual machine, ~100 us: the idle vCPU is halted),
 * as much as a whole decode-sized matrix product; and a model runs such
 * products back to back. So after a job a worker watches for the next
 * one for SPIN_SECONDS before sleeping on a condition variable, and the
 * caller likewise watches for the end of a job before sleeping. An idle
 * pool therefore spins for at most SPIN_SECONDS, then costs no CPU.
 *
 * One job at a time: a pool_run made while the pool is already running a
 * job (from inside FN, or from another thread) runs its indices inline on
 * its own thread instead of deadlocking. */
#include "exec.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define SPIN_SECONDS 100e-6

typedef void (*PoolFn)(void *arg, int i, int n);

struct Pool {
  int threads;         /* workers + the caller */
  pthread_t *workers;  /* threads - 1 of them */
  pthread_mutex_t mu;  /* for sleeping and waking, and RUNNING */
  pthread_cond_t wake; /* a job was posted, or the pool is stopping */
  pthread_cond_t idle; /* the last worker checked out of the job */
  bool running;        /* a job is posted and not finished (under MU) */
  /* The job: written before JOB is bumped (release), read after it is
   * seen to change (acquire). */
  PoolFn fn;
  void *arg;
  int n;
  atomic_ulong job; /* bumped per job: workers wait for it to change */
  atomic_int busy;  /* workers that have not checked out of the job */
  atomic_int next;  /* the next index to claim */
  atomic_bool stop;
};

/* Claim and run indices of the current job until none is left. */
static void run_claimed(Pool *p, PoolFn fn, void *arg, int n) {
  for (;;) {
    int i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (i >= n)
      return;
    fn(arg, i, n);
  }
}

/* Spin until JOB moves past SEEN or the pool stops, for at most
 * SPIN_SECONDS; true if it did. */
static bool spin_for_job(Pool *p, unsigned long seen) {
  double until = now_seconds() + SPIN_SECONDS;
  for (int i = 0;; i++) {
    if (atomic_load_explicit(&p->job, memory_order_acquire) != seen ||
        atomic_load_explicit(&p->stop, memory_order_acquire))
      return true;
    if (i % 64 == 63 && now_seconds() > until)
      return false;
    cpu_relax();
  }
}

static void *worker_main(void *vp) {
  Pool *p = vp;
  unsigned long seen = 0;
  for (;;) {
    if (!spin_for_job(p, seen)) {
      pthread_mutex_lock(&p->mu);
      while (atomic_load(&p->job) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->mu);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
      return NULL;
    seen = atomic_load_explicit(&p->job, memory_order_acquire);
    run_claimed(p, p->fn, p->arg, p->n);
    /* acq_rel: this worker's writes reach the caller, which reads BUSY
     * (acquire) before it returns. */
    if (atomic_fetch_sub_explicit(&p->busy, 1, memory_order_acq_rel) == 1) {
      /* The caller may be asleep: signal under the mutex it checks BUSY
       * under, so the signal cannot fall between its check and its wait. */
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->idle);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

Pool *pool_new(int threads) {
  Pool *p = xcalloc(1, sizeof *p);
  p->threads = 1;
  atomic_init(&p->job, 0);
  atomic_init(&p->busy, 0);
  atomic_init(&p->next, 0);
  atomic_init(&p->stop, false);
  if (threads <= 1)
    return p;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->idle, NULL);
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

/* Wait until every worker has checked out of the job: spin a while, then
 * sleep. */
static void wait_idle(Pool *p) {
  double until = now_seconds() + SPIN_SECONDS;
  for (int i = 0; atomic_load_explicit(&p->busy, memory_order_acquire) > 0;
       i++) {
    if (i % 64 == 63 && now_seconds() > until) {
      pthread_mutex_lock(&p->mu);
      while (atomic_load_explicit(&p->busy, memory_order_acquire) > 0)
        pthread_cond_wait(&p->idle, &p->mu);
      pthread_mutex_unlock(&p->mu);
      return;
    }
    cpu_relax();
  }
}

void pool_run(Pool *p, void (*fn)(void *arg, int i, int n), void *arg, int n) {
  if (n <= 0)
    return;
  if (!p || p->threads <= 1 || n == 1) {
    run_inline(fn, arg, n);
    return;
  }
  pthread_mutex_lock(&p->mu);
  if (p->running) {
    pthread_mutex_unlock(&p->mu);
    run_inline(fn, arg, n);
    return;
  }
  p->running = true;
  p->fn = fn;
  p->arg = arg;
  p->n = n;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->busy, p->threads - 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&p->job, 1, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);

  run_claimed(p, fn, arg, n);
  wait_idle(p);

  pthread_mutex_lock(&p->mu);
  p->running = false;
  pthread_mutex_unlock(&p->mu);
}

void pool_free(Pool *p) {
  if (!p)
    return;
  if (p->workers) {
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->stop, true, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->threads - 1; i++)
      pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
  }
  free(p->workers);
  free(p);
}
