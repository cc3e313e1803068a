/* fatal.c — the end of a run that cannot go on (util.h, "fatal
 * errors"): memory ran out, a library the program calls failed. The
 * program exits with status 1; a host that runs a command in process
 * (mambalaya_call) has set a trap on its thread, and the run ends there
 * instead, with the same status, the host alive. */
#include "util.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Per thread, by necessity: the trap is the caller's stack frame, and
 * only the thread that set it can return to it. Set and cleared by
 * mambalaya_call alone. */
static _Thread_local FatalTrap *trap;

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
    if (msg)
      fputs(msg, stderr); /* the host's capture (it may be in memory) */
    longjmp(t->env, 1);
  }
  /* The process ends: write(2) needs no memory, stdio might. */
  if (msg && write(STDERR_FILENO, msg, strlen(msg)) < 0) {
    /* nothing more can be said */
  }
  _exit(1);
}
