/* temps.c — the temporaries that have a name right now (util.h,
 * "writing outputs"): output.c lists each staged file here while it has a
 * name, and a signal or an out-of-memory exit removes them all. It uses
 * nothing but libc, so the allocator (util.c) may call it. */
#include "util.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

/* Process-wide state, by necessity: a signal handler can only reach
 * globals. Each slot is a path and a flag saying it is in use; slots
 * change with the signals blocked, and the handler only reads them and
 * calls unlink (async-signal-safe). Static storage, not the heap: the
 * handler never reads memory that another thread may have freed. */

enum { MAX_NAMED = 256, NAME_CAP = 4096 };
static char named[MAX_NAMED][NAME_CAP];
static volatile sig_atomic_t in_use[MAX_NAMED];
static volatile sig_atomic_t handlers_installed;
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { NSIGNALS = sizeof cleanup_signals / sizeof cleanup_signals[0] };

void temps_remove_all(void) {
  for (int i = 0; i < MAX_NAMED; i++)
    if (in_use[i])
      unlink(named[i]);
}

static void on_signal(int sig) {
  temps_remove_all();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Install the handlers once, leaving alone a signal the caller ignores
 * (nohup's SIGHUP). */
static void install_handlers(void) {
  if (handlers_installed)
    return;
  handlers_installed = 1;
  for (int i = 0; i < NSIGNALS; i++) {
    struct sigaction old;
    if (sigaction(cleanup_signals[i], NULL, &old) == 0 &&
        old.sa_handler == SIG_IGN)
      continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(cleanup_signals[i], &sa, NULL);
  }
}

static void block_signals(sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  for (int i = 0; i < NSIGNALS; i++)
    sigaddset(&set, cleanup_signals[i]);
  pthread_sigmask(SIG_BLOCK, &set, old);
}

static void restore_signals(const sigset_t *old) {
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Register PATH (copied); false if the list is full or PATH too long. */
bool temps_note(const char *path) {
  install_handlers();
  if (strlen(path) >= NAME_CAP)
    return false;
  sigset_t old;
  block_signals(&old);
  bool ok = false;
  for (int i = 0; i < MAX_NAMED && !ok; i++)
    if (!in_use[i]) {
      strcpy(named[i], path);
      in_use[i] = 1;
      ok = true;
    }
  restore_signals(&old);
  return ok;
}

/* Forget PATH (after it was renamed or removed). */
void temps_forget(const char *path) {
  sigset_t old;
  block_signals(&old);
  bool found = false;
  for (int i = 0; i < MAX_NAMED && !found; i++)
    if (in_use[i] && strcmp(named[i], path) == 0) {
      in_use[i] = 0;
      found = true;
    }
  restore_signals(&old);
}
