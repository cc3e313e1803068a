/* render.c — AccelForge's templating, rendered by the jinja2 library.
 *
 * An AccelForge workload is a Jinja template over YAML: `{% set %}`,
 * `{{ include("f.yaml") }}` (another file's document, referred to by a
 * `!include_loaded` tag), `include_text`, `add_to_path`, `{% assert %}`,
 * and `<<`/`<<<` merges. src/workload/render.py (compiled in) renders it as
 * AccelForge's _yaml.py does and prints the resolved document as plain
 * YAML. A template is code from whoever wrote the file, so the script runs
 * it sandboxed (render.py says how) and this side runs the script as
 * untrusted: Python in isolated mode (-I: neither the current directory
 * nor PYTHON* variables reach its imports) from a fixed path, never
 * PATH's; limits on its CPU time, memory, wall time and output; killed
 * when this process dies. */
#define _GNU_SOURCE /* prctl */
#include "peer.h"

#include "../embed/embed.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The build may name another interpreter (make PYTHON=...). */
#ifndef MAMBALAYA_PYTHON
#define MAMBALAYA_PYTHON "/usr/bin/python3"
#endif

/* What a rendering may take: far above any real workload's (the largest
 * AccelForge example renders in a fraction of a second, in 40 MB). */
enum { RENDER_CPU_S = 60, RENDER_WALL_S = 120 };
static const rlim_t render_memory = (rlim_t)2 << 30;

/* The child: limits, death with the parent, stdout and stderr into the
 * pipe FD, then the interpreter. Only async-signal-safe calls: the parent
 * may have threads. */
static _Noreturn void child(int fd[2], pid_t parent, char **argv) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) /* the parent died before prctl */
    _exit(127);
  struct rlimit cpu = {RENDER_CPU_S, RENDER_CPU_S + 1};
  struct rlimit mem = {render_memory, render_memory};
  setrlimit(RLIMIT_CPU, &cpu);
  setrlimit(RLIMIT_AS, &mem);
  dup2(fd[1], 1);
  dup2(fd[1], 2);
  close(fd[0]);
  close(fd[1]);
  execv(MAMBALAYA_PYTHON, argv);
  _exit(127);
}

/* The interpreter's command line: -I -c SCRIPT [--strict] PATH NAME=VALUE
 * ...; the strings it holds are freed by argv_free. */
static char **script_argv(const char *path, const SpecLoad *o,
                          const char *script) {
  int nvars = o ? (o->vars ? o->nvars : o->nsets) : 0;
  char **argv = xcalloc((size_t)nvars + 7, sizeof *argv);
  int n = 0;
  argv[n++] = xstrdup(MAMBALAYA_PYTHON);
  argv[n++] = xstrdup("-I");
  argv[n++] = xstrdup("-c");
  argv[n++] = xstrdup(script);
  if (o && o->vars) /* given for the template alone: each must be read */
    argv[n++] = xstrdup("--strict");
  argv[n++] = xstrdup(path);
  for (int i = 0; i < nvars; i++) {
    Buf b = {0};
    if (o->vars)
      buf_printf(&b, "%s", o->vars[i]);
    else
      buf_printf(&b, "%s=%.17g", o->sets[i].name, o->sets[i].value);
    argv[n++] = b.s;
  }
  return argv;
}

static void argv_free(char **argv) {
  for (int i = 0; argv[i]; i++)
    free(argv[i]);
  free(argv);
}

/* Read the child's output from FD into OUT until it ends, the output
 * passes INPUT_TEXT_MAX or the wall-clock limit passes: NULL, or what
 * went wrong. A long rendering says so on NOTES (if any) every few
 * seconds, naming PATH. */
static const char *read_child(int fd, Buf *out, const char *path,
                              FILE *notes) {
  double start = now_seconds(), until = start + RENDER_WALL_S, told = 0;
  char chunk[65536];
  for (;;) {
    double now = now_seconds(), left = until - now;
    if (notes && now - start >= 3 && now - told >= 5) {
      told = now;
      fprintf(notes, "%s: note: rendering the template, %.0f s so far "
              "(at most %d)\n", path, now - start, RENDER_WALL_S);
    }
    if (left <= 0)
      return "rendering took more than the limit of 120 s";
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue; /* the deadline is checked above */
    ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return NULL;
    if (out->len + (size_t)got > INPUT_TEXT_MAX)
      return "the template renders to more than 64 MiB";
    buf_printf(out, "%.*s", (int)got, chunk);
  }
}

/* Why the child ended as STATUS says, or NULL for an exit. */
static const char *child_end(int status) {
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
    return "rendering took more than the limit of 60 s of CPU time";
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
    return "rendering was killed (a limit of its time or memory)";
  if (WIFSIGNALED(status))
    return "rendering ended on a signal";
  return NULL;
}

/* Run the script on PATH with the template variables; its output into
 * OUT. False, with D set, if python3 cannot run or the rendering passed a
 * limit. */
static bool run_script(const char *path, const SpecLoad *o, Buf *out,
                       Diag *d) {
  const EmbeddedFile *script = embedded_file("src/workload/render.py");
  if (!script)
    return diag_fail(d, path, (Loc){0, 0}, "the renderer is not built in");
  char **argv = script_argv(path, o, (const char *)script->data);
  int fd[2];
  bool ok = pipe2(fd, O_CLOEXEC) == 0;
  pid_t parent = getpid();
  pid_t pid = ok ? fork() : -1;
  if (pid == 0)
    child(fd, parent, argv);
  if (ok)
    close(fd[1]);
  const char *why =
      pid > 0 ? read_child(fd[0], out, path, o ? o->notes : NULL) : NULL;
  if (pid > 0 && why)
    kill(pid, SIGKILL);
  if (ok)
    close(fd[0]);
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  argv_free(argv);
  if (!why && pid > 0)
    why = child_end(status);
  if (pid < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 127))
    why = "an AccelForge template is rendered by " MAMBALAYA_PYTHON
          " with python3-jinja2 and python3-yaml, and it cannot be run";
  if (why)
    return diag_fail(d, path, (Loc){0, 0}, "%s", why);
  return true;
}

/* "ERROR\tFILE\tLINE\tMESSAGE" into D. */
static void script_error(const char *path, const char *line, Diag *d) {
  char file[512] = "", msg[1024] = "";
  int l = 0;
  const char *f = strchr(line, '\t');
  const char *ln = f ? strchr(f + 1, '\t') : NULL;
  const char *m = ln ? strchr(ln + 1, '\t') : NULL;
  if (m) {
    snprintf(file, sizeof file, "%.*s", (int)(ln - f - 1), f + 1);
    l = atoi(ln + 1);
    snprintf(msg, sizeof msg, "%.*s", (int)strcspn(m + 1, "\n"), m + 1);
  } else { /* not the script's line (a traceback): its last line says */
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
      n--;
    size_t start = n;
    while (start > 0 && line[start - 1] != '\n')
      start--;
    snprintf(msg, sizeof msg, "rendering failed: %.*s", (int)(n - start),
             line + start);
  }
  diag_error(d, file[0] ? file : path, (Loc){l, l ? 1 : 0}, "%s", msg);
}

/* Take the last line of RAW, "# read: [...]" (the files the template
 * read, JSON), off it, adding each file to READ; false if it is not
 * there (the script did not finish). */
static bool take_read(Buf *raw, InputSet *read) {
  const char *mark = "# read: ";
  char *at = NULL;
  for (char *p = raw->s; (p = strstr(p, mark)); p++)
    if (p == raw->s || p[-1] == '\n')
      at = p;
  if (!at)
    return false;
  json_t *list = json_loads(at + strlen(mark), JSON_DECODE_ANY, NULL);
  size_t i;
  json_t *f;
  json_array_foreach(list, i, f) {
    if (json_is_string(f))
      inputset_add(read, json_string_value(f));
  }
  json_decref(list);
  *at = 0;
  raw->len = (size_t)(at - raw->s);
  return true;
}

bool spec_render_accelforge(const char *path, const SpecLoad *o, Buf *out,
                            Diag *d) {
  Buf raw = {0};
  if (!run_script(path, o, &raw, d)) {
    buf_free(&raw);
    return false;
  }
  bool ok = raw.s && strncmp(raw.s, "# variables:", 12) == 0 &&
            take_read(&raw, o ? o->read : NULL);
  if (ok)
    buf_printf(out, "%s", raw.s);
  else
    script_error(path, raw.s ? raw.s : "python3 printed nothing", d);
  buf_free(&raw);
  return ok;
}
