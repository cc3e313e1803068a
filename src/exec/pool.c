/* pool.c — a fixed set of worker threads that run the indices of a job.
 *
 * The workers are started once, in pool_new, and sleep on a condition
 * variable between jobs, so an idle pool costs no CPU. pool_run posts a
 * job (a function and an index count), works on it from the calling
 * thread too, and waits until every worker has checked out of it.
 * Indices are claimed one at a time from an atomic counter: a worker that
 * wakes late simply claims fewer, which balances uneven tasks as well.
 *
 * One job at a time: a pool_run made while the pool is already running a
 * job (from inside FN, or from another thread) runs its indices inline on
 * its own thread instead of deadlocking. */
#include "exec.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef void (*PoolFn)(void *arg, int i, int n);

struct Pool {
  int threads;         /* workers + the caller */
  pthread_t *workers;  /* threads - 1 of them */
  pthread_mutex_t mu;  /* guards everything below but NEXT */
  pthread_cond_t wake; /* a job was posted, or the pool is stopping */
  pthread_cond_t idle; /* the last worker checked out of the job */
  unsigned long job;   /* bumped per job: workers wait for it to change */
  int busy;            /* workers that have not checked out of the job */
  bool running;        /* a job is posted and not yet finished */
  bool stop;
  PoolFn fn;
  void *arg;
  int n;
  atomic_int next; /* the next index to claim */
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

static void *worker_main(void *vp) {
  Pool *p = vp;
  unsigned long seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (p->job == seen && !p->stop)
      pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop)
      break;
    seen = p->job;
    PoolFn fn = p->fn;
    void *arg = p->arg;
    int n = p->n;
    pthread_mutex_unlock(&p->mu);
    run_claimed(p, fn, arg, n);
    pthread_mutex_lock(&p->mu);
    /* The unlock that follows publishes this worker's writes to the
     * caller, which reads BUSY under the same mutex. */
    if (--p->busy == 0)
      pthread_cond_signal(&p->idle);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

Pool *pool_new(int threads) {
  Pool *p = xcalloc(1, sizeof *p);
  p->threads = 1;
  atomic_init(&p->next, 0);
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

void pool_run(Pool *p, void (*fn)(void *arg, int i, int n), void *arg,
              int n) {
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
  p->busy = p->threads - 1;
  p->job++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);

  run_claimed(p, fn, arg, n);

  pthread_mutex_lock(&p->mu);
  while (p->busy > 0)
    pthread_cond_wait(&p->idle, &p->mu);
  p->running = false;
  pthread_mutex_unlock(&p->mu);
}

void pool_free(Pool *p) {
  if (!p)
    return;
  if (p->threads > 1) {
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->threads - 1; i++)
      pthread_join(p->workers[i], NULL);
  }
  if (p->workers) {
    pthread_cond_destroy(&p->idle);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
  }
  free(p->workers);
  free(p);
}
