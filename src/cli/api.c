/* api.c — mambalaya_call (api.h): the command engine of the program run
 * in process, its stdout and stderr captured in memory. */
#include "api.h"

#include "cli.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one piece of process-wide state here, by necessity: stdout and
 * stderr are the C library's globals, so two calls at once (two Python
 * threads: ctypes releases the GIL) must take turns holding them. */
static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER;

/* The signals whose handlers staging an output installs (util/temps.c):
 * the host's (Python's KeyboardInterrupt) come back after the call. */
static const int kept_signals[] = {SIGINT, SIGTERM, SIGHUP};
enum { NKEPT = sizeof kept_signals / sizeof kept_signals[0] };

typedef struct Capture {
  FILE *out, *err;         /* the memory streams */
  char *obuf, *ebuf;       /* what they hold once closed */
  size_t olen, elen;
  FILE *saved_out, *saved_err;
  struct sigaction saved_sig[NKEPT];
} Capture;

/* Swap stdout and stderr for memory streams; false if none can be had. */
static bool capture_begin(Capture *k) {
  k->out = open_memstream(&k->obuf, &k->olen);
  k->err = k->out ? open_memstream(&k->ebuf, &k->elen) : NULL;
  if (!k->err) {
    if (k->out)
      fclose(k->out);
    free(k->obuf);
    return false;
  }
  fflush(stdout);
  fflush(stderr);
  k->saved_out = stdout;
  k->saved_err = stderr;
  stdout = k->out; /* glibc's stdout and stderr are assignable variables */
  stderr = k->err;
  for (int i = 0; i < NKEPT; i++)
    sigaction(kept_signals[i], NULL, &k->saved_sig[i]);
  return true;
}

/* Put stdout, stderr and the signal handlers back; the texts into
 * k->obuf and k->ebuf. */
static void capture_end(Capture *k) {
  stdout = k->saved_out;
  stderr = k->saved_err;
  fclose(k->out);
  fclose(k->err);
  for (int i = 0; i < NKEPT; i++)
    sigaction(kept_signals[i], &k->saved_sig[i], NULL);
}

/* Hand TEXT to the caller through P (or free it when P is NULL). */
static void hand_over(char *text, size_t len, char **p, size_t *plen) {
  if (plen)
    *plen = len;
  if (p)
    *p = text;
  else
    free(text);
}

/* `mambalaya ARGV...`: the program's name first, the arguments copied
 * (the engine takes char **; it does not write them, but the caller's are
 * const). */
static int run_engine(int argc, const char *const *argv) {
  char **args = xcalloc((size_t)argc + 2, sizeof *args);
  args[0] = xstrdup("mambalaya");
  for (int i = 0; i < argc; i++)
    args[i + 1] = xstrdup(argv[i]);
  int status = cli_main(argc + 1, args);
  for (int i = 0; i <= argc; i++)
    free(args[i]);
  free(args);
  return status;
}

int mambalaya_call(int argc, const char *const *argv, char **out,
                   size_t *outlen, char **err, size_t *errlen) {
  if (out)
    *out = NULL;
  if (err)
    *err = NULL;
  if (argc < 0 || (argc > 0 && !argv))
    return EXIT_INPUT;
  Capture k = {0};
  pthread_mutex_lock(&call_lock);
  if (!capture_begin(&k)) {
    pthread_mutex_unlock(&call_lock);
    return EXIT_RUN;
  }
  /* A fatal error (out of memory) ends the command, not the host: it
   * comes back here with status 1 and its message (util.h, "fatal
   * errors"), which goes to the command's stderr, the capture. */
  FatalTrap trap;
  FatalTrap *outer = fatal_trap(&trap);
  volatile int status = EXIT_RUN;
  if (setjmp(trap.env) == 0)
    status = run_engine(argc, argv);
  else
    fputs(trap.msg, stderr);
  fatal_trap(outer);
  fflush(stdout);
  capture_end(&k);
  pthread_mutex_unlock(&call_lock);
  hand_over(k.obuf, k.olen, out, outlen);
  hand_over(k.ebuf, k.elen, err, errlen);
  return status;
}

void mambalaya_free(void *p) { free(p); }

int mambalaya_option_arity(const char *command, const char *option) {
  const Command *c = command && option ? cli_command(command) : NULL;
  return c ? command_option_arity(c, option) : -1;
}

const char *mambalaya_shipped(const char *dir, const char *name,
                              size_t *len) {
  const EmbeddedFile *f = name ? embedded_named(dir, name) : NULL;
  if (len)
    *len = f ? f->len : 0;
  return f ? (const char *)f->data : NULL;
}

const char *mambalaya_quantity(const char *text, double *value) {
  return parse_any_quantity(text, value);
}
