/* test_fatal.c — a fatal error in a worker thread (util.h, "fatal
 * errors") ends the run of the thread that started it, through that
 * thread's trap, with the worker's message; the process lives. */
#include "../../src/exec/exec.h"
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>

static void run_out(void *arg) {
  (void)arg;
  out_of_memory(12345);
}

static void *thread_run_out(void *arg) {
  fatal_catch(arg, run_out, NULL);
  return NULL;
}

#define OOM_12345 "mambalaya: out of memory (allocating 12345 bytes)\n"

TEST(fatal_worker_thread_hands_its_failure_to_the_caller) {
  FatalRecord r = {0};
  pthread_t t;
  CHECK_INT(pthread_create(&t, NULL, thread_run_out, &r), 0);
  pthread_join(t, NULL);
  CHECK(fatal_failed(&r));
  FatalTrap trap;
  FatalTrap *outer = fatal_trap(&trap);
  volatile int reached = 0;
  if (setjmp(trap.env) == 0) {
    fatal_rethrow(&r);
    reached = 1; /* not reached: the rethrow ends here, at the trap */
  } else {
    reached = 2;
  }
  fatal_trap(outer);
  CHECK_INT(reached, 2);
  CHECK_STR(trap.msg, OOM_12345);
  /* A catch on this thread restores the trap it found. */
  CHECK(!fatal_catch(&r, run_out, NULL));
  CHECK(fatal_trap(NULL) == outer);
}

/* The pool: the caller's index waits until a worker has taken the other
 * one, which fails, so the failure is a worker's whatever the timing. */
typedef struct Race {
  pthread_t caller;
  atomic_int worker_in;
  atomic_int caller_waited; /* 1 saw the worker, 2 gave up */
} Race;

static void race_index(void *arg, int i, int n) {
  (void)i, (void)n;
  Race *r = arg;
  if (!pthread_equal(pthread_self(), r->caller)) {
    atomic_store(&r->worker_in, 1);
    out_of_memory(12345);
  }
  double until = now_seconds() + 10;
  while (!atomic_load(&r->worker_in) && now_seconds() < until)
    sched_yield();
  atomic_store(&r->caller_waited, atomic_load(&r->worker_in) ? 1 : 2);
}

TEST(fatal_in_a_pool_worker_ends_the_callers_run) {
  Pool *pool = pool_new(3);
  CHECK(pool_size(pool) >= 2);
  Race race = {.caller = pthread_self()};
  FatalTrap trap;
  FatalTrap *outer = fatal_trap(&trap);
  volatile int reached = 0;
  if (setjmp(trap.env) == 0) {
    pool_run(pool, race_index, &race, 2);
    reached = 1;
  } else {
    reached = 2;
  }
  fatal_trap(outer);
  CHECK_INT(reached, 2);
  CHECK_INT(atomic_load(&race.caller_waited), 1);
  CHECK_STR(trap.msg, OOM_12345);
  pool_free(pool); /* the workers are idle, the pool whole */
}
