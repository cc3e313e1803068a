/* fatal.c — the end of a run that cannot go on (util.h, "fatal
 * errors"): memory ran out, a library the program calls failed. The
 * program exits with status 1; a host that runs a command in process
 * (mambalaya_call) has set a trap on its thread, and the run ends there
 * instead, with the same status, the host alive. A worker thread the
 * library started has a trap of its own (fatal_catch): its failure is
 * handed to the thread that started it, which ends as above. */
#include "util.h"

#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Per thread, by necessity: the trap is the caller's stack frame, and
 * only the thread that set it can return to it. Set and cleared by
 * mambalaya_call and fatal_catch alone. Initial-exec: in a host that
 * loaded libmambalaya.so with dlopen (Python), the default model would
 * allocate a new thread's copy on its first use, and glibc aborts the
 * process when that allocation fails -- on a thread set to catch just
 * that. Eight bytes fit in the static TLS glibc keeps for dlopen. */
static _Thread_local FatalTrap *trap __attribute__((tls_model("initial-exec")));

FatalTrap *fatal_trap(FatalTrap *t) {
  FatalTrap *old = trap;
  trap = t;
  return old;
}

void fatal(const char *msg) {
  temps_remove_all();
  FatalTrap *t = trap;
  if (t) {
    trap = NULL; /* a second failure on the way out must not loop */
    snprintf(t->msg, sizeof t->msg, "%s", msg ? msg : "");
    longjmp(t->env, 1);
  }
  /* The process ends: write(2) needs no memory, stdio might. */
  if (msg && write(STDERR_FILENO, msg, strlen(msg)) < 0) {
    /* nothing more can be said */
  }
  _exit(1);
}

/* Keep MSG as R's failure unless another thread's came first. */
static void record(FatalRecord *r, const char *msg) {
  int none = 0;
  if (!atomic_compare_exchange_strong(&r->state, &none, 1))
    return;
  snprintf(r->msg, sizeof r->msg, "%s", msg);
  atomic_store(&r->state, 2);
}

bool fatal_catch(FatalRecord *r, void (*fn)(void *arg), void *arg) {
  FatalTrap t;
  FatalTrap *outer = fatal_trap(&t);
  if (setjmp(t.env) == 0) {
    fn(arg);
    fatal_trap(outer);
    return true;
  }
  fatal_trap(outer);
  record(r, t.msg);
  return false;
}

bool fatal_failed(const FatalRecord *r) {
  return atomic_load(&r->state) != 0;
}

void fatal_rethrow(FatalRecord *r) {
  /* Every thread of R has stopped (the caller's promise): MSG is whole. */
  if (atomic_load(&r->state) != 0)
    fatal(r->msg);
}
