/* output.c — the one way outputs are written (util.h, "writing outputs").
 *
 * A file is staged in a temporary in its target's directory
 * (the same file system, so the final rename is atomic) and renamed over
 * the target once it is whole and on disk. Where the file system offers
 * O_TMPFILE the temporary has no name until the very end (linkat, then
 * rename), so a process killed at any point leaves nothing behind; else
 * it gets a fresh name with O_CREAT|O_EXCL|O_NOFOLLOW (never a user's
 * file, never through a symlink). Temporaries that have a name are
 * listed (temps.c), so that SIGINT, SIGTERM and SIGHUP remove them before
 * the process dies. */
#define _GNU_SOURCE /* O_TMPFILE */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- paths ---- */

/* The directory part of PATH ("." if none), and its last component. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return xstrdup(".");
  if (slash == path)
    return xstrdup("/");
  size_t n = (size_t)(slash - path);
  char *s = xmalloc(n + 1);
  memcpy(s, path, n);
  s[n] = 0;
  return s;
}

static const char *base_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static char *join(const char *dir, const char *name) {
  Buf b = {0};
  size_t n = strlen(dir);
  buf_printf(&b, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
  return b.s;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A temporary's name beside NAME in DIR: ".NAME.<8 random>.tmp", NAME cut so
 * that the whole fits a file name. */
static char *temp_name(const char *dir, const char *name) {
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  /* Distinct per process, per call and per moment; O_EXCL settles the
   * rest (a collision is retried with new letters). */
  static _Atomic unsigned long counter;
  uint64_t x = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^
               (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
               (uint64_t)++counter * 0xBF58476D1CE4E5B9ull;
  char rnd[11];
  for (int i = 0; i < 10; i++) {
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    rnd[i] = digits[(x >> 40) % 36];
  }
  rnd[10] = 0;
  Buf b = {0};
  size_t n = strlen(name);
  buf_printf(&b, ".%.*s.%s.tmp", (int)(n > 200 ? 200 : n), name, rnd);
  char *path = join(dir, b.s);
  buf_free(&b);
  return path;
}

/* ---- one staged file ---- */

/* A file written and flushed, not yet in place: an anonymous O_TMPFILE
 * (fd >= 0, tmp NULL until linked) or a named temporary (tmp). */
typedef struct Staged {
  int fd;
  char *tmp; /* a listed name, or NULL */
} Staged;

static bool write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return false;
    data += n;
    len -= (size_t)n;
  }
  return true;
}

static void staged_discard(Staged *s) {
  int e = errno;
  if (s->fd >= 0)
    close(s->fd);
  if (s->tmp) {
    unlink(s->tmp);
    temps_forget(s->tmp);
    free(s->tmp);
  }
  s->fd = -1;
  s->tmp = NULL;
  errno = e;
}

/* Make a fresh name beside NAME in DIR with MAKE (which fails with EEXIST
 * when the name is taken), listed for removal on a signal; retried with new
 * names a hundred times. */
static bool claim_name(Staged *s, const char *dir, const char *name,
                       bool (*make)(Staged *s, const char *tmp,
                                    const char *ctx),
                       const char *ctx) {
  for (int tries = 0; tries < 100; tries++) {
    char *tmp = temp_name(dir, name);
    if (!temps_note(tmp)) {
      free(tmp);
      errno = EMFILE;
      return false;
    }
    if (make(s, tmp, ctx)) {
      s->tmp = tmp;
      return true;
    }
    int e = errno;
    temps_forget(tmp);
    free(tmp);
    errno = e;
    if (e != EEXIST)
      return false;
  }
  return false;
}

static bool create_named(Staged *s, const char *tmp, const char *ctx) {
  (void)ctx;
  s->fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
               0666);
  return s->fd >= 0;
}

static bool link_named(Staged *s, const char *tmp, const char *proc) {
  (void)s;
  return linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0;
}

/* An anonymous temporary in DIR, or a named one beside NAME. */
static bool staged_open(Staged *s, const char *dir, const char *name) {
  *s = (Staged){.fd = -1};
#ifdef O_TMPFILE
  /* linkat names it through /proc/self/fd (AT_EMPTY_PATH would need a
   * capability). */
  if (access("/proc/self/fd", X_OK) == 0) {
    s->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (s->fd >= 0)
      return true;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
      return false; /* ENOENT, EACCES, EROFS, ...: a named file would fail */
  }
#endif
  return claim_name(s, dir, name, create_named, NULL);
}

/* What is at an output's path (util.h): where the file lands and what
 * it keeps of the file it replaces. */
typedef struct Target {
  char *path;  /* PATH, or the file its symbolic link names */
  bool exists; /* a regular file is there: keep its mode and owner */
  struct stat st;
} Target;

/* PATH as an output's target into T (FOLLOW: through a symbolic link to
 * the file it names; else a link is refused, as a set renames into its
 * own directory). False with a message in D when PATH must not be
 * replaced. */
static bool target_of(const char *path, bool follow, Target *t, Diag *d) {
  *t = (Target){0};
  if (lstat(path, &t->st) != 0) {
    if (errno != ENOENT)
      return diag_fail(d, path, (Loc){0, 0}, "cannot write: %s",
                       strerror(errno));
    t->path = xstrdup(path);
    return true;
  }
  if (S_ISLNK(t->st.st_mode) && follow) {
    char *real = realpath(path, NULL);
    if (!real || stat(real, &t->st) != 0) {
      free(real);
      return diag_fail(d, path, (Loc){0, 0},
                       "cannot write: a symbolic link to a missing file "
                       "(an output never replaces a link)");
    }
    t->path = real;
  } else {
    t->path = xstrdup(path);
  }
  if (!S_ISREG(t->st.st_mode))
    diag_error(d, path, (Loc){0, 0},
               "cannot write: it is %s, and an output replaces only a "
               "regular file", file_kind(t->st.st_mode));
  else if (t->st.st_nlink > 1)
    diag_error(d, path, (Loc){0, 0},
               "cannot write: the file has other names (%lu hard links), "
               "which a new file would leave with the old content; remove "
               "it first", (unsigned long)t->st.st_nlink);
  if (!S_ISREG(t->st.st_mode) || t->st.st_nlink > 1) {
    free(t->path);
    t->path = NULL;
    return false;
  }
  t->exists = true;
  return true;
}

/* Give the staged file FD the owner (where allowed) and the mode of the
 * file it replaces. */
static void keep_mode(int fd, const Target *t) {
  if (!t || !t->exists)
    return;
  if (fchown(fd, t->st.st_uid, t->st.st_gid) != 0) {
    /* not ours to give: the new file is the writer's, as a copy is */
  }
  fchmod(fd, t->st.st_mode & 07777);
}

/* Stage DATA for NAME in directory DIR, with T's mode (T may be NULL). */
static bool staged_write(Staged *s, const char *dir, const char *name,
                         const char *data, size_t len, const Target *t) {
  if (!staged_open(s, dir, name))
    return false;
  keep_mode(s->fd, t);
  if (!write_all(s->fd, data, len) || fsync(s->fd) != 0) {
    staged_discard(s);
    return false;
  }
  return true;
}

/* Give an anonymous temporary a (listed) name in DIR, beside NAME. */
static bool staged_link(Staged *s, const char *dir, const char *name) {
  if (s->tmp)
    return true;
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", s->fd);
  return claim_name(s, dir, name, link_named, proc);
}

/* Rename the linked temporary over PATH. */
static bool staged_rename(Staged *s, const char *path) {
  if (rename(s->tmp, path) != 0)
    return false;
  temps_forget(s->tmp);
  free(s->tmp);
  s->tmp = NULL;
  close(s->fd);
  s->fd = -1;
  return true;
}

/* Make the renames in DIR durable. */
static void sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

bool output_write(const char *path, const void *data, size_t len,
                  const InputSet *in, bool *refused, Diag *d) {
  *refused = true;
  const char *input = inputset_find(in, path);
  if (input)
    return diag_fail(d, path, (Loc){0, 0},
                     "refusing to write: this output is the input %s", input);
  Target t;
  if (!target_of(path, true, &t, d))
    return false;
  *refused = false;
  char *dir = dir_of(t.path);
  const char *name = base_of(t.path);
  Staged s;
  bool ok = staged_write(&s, dir, name, data, len, &t) &&
            staged_link(&s, dir, name) && staged_rename(&s, t.path);
  if (!ok) {
    diag_error(d, path, (Loc){0, 0}, "cannot write: %s", strerror(errno));
    staged_discard(&s);
  } else {
    sync_dir(dir);
  }
  free(dir);
  free(t.path);
  return ok;
}

bool write_file_atomic(const char *path, const char *data, size_t len) {
  Diag d = {0};
  bool refused;
  if (output_write(path, data, len, NULL, &refused, &d))
    return true;
  if (refused)
    errno = EINVAL;
  return false;
}

/* ---- checking output paths ---- */

bool output_check(const char *path, Diag *d) {
  if (!path[0]) {
    diag_error(d, NULL, (Loc){0, 0}, "the output file name is empty");
    return false;
  }
  char *dir = dir_of(path);
  struct stat st;
  bool ok = false;
  if (path[strlen(path) - 1] == '/' || (stat(path, &st) == 0 &&
                                        S_ISDIR(st.st_mode)))
    diag_error(d, path, (Loc){0, 0},
               "cannot write: is a directory (give a file name)");
  else if (stat(dir, &st) != 0)
    diag_error(d, path, (Loc){0, 0}, "cannot write: directory %s: %s", dir,
               strerror(errno));
  else if (!S_ISDIR(st.st_mode))
    diag_error(d, path, (Loc){0, 0}, "cannot write: %s is not a directory",
               dir);
  else if (access(dir, W_OK | X_OK) != 0)
    diag_error(d, path, (Loc){0, 0}, "cannot write into %s: %s", dir,
               strerror(errno));
  else
    ok = true;
  free(dir);
  Target t;
  if (ok && (ok = target_of(path, true, &t, d)))
    free(t.path);
  return ok;
}

/* The longest prefix of DIR that exists (DIR itself, or an ancestor), or
 * NULL with a message if a component is not a directory. */
static char *existing_ancestor(const char *dir, Diag *d) {
  char *p = xstrdup(dir);
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/')
    p[--n] = 0;
  for (;;) {
    struct stat st;
    if (stat(p, &st) == 0) {
      if (S_ISDIR(st.st_mode))
        return p;
      diag_error(d, p, (Loc){0, 0},
                 "exists and is not a directory, so %s cannot be written",
                 dir);
      free(p);
      return NULL;
    }
    if (errno != ENOENT && errno != ENOTDIR) {
      diag_error(d, p, (Loc){0, 0}, "cannot use: %s", strerror(errno));
      free(p);
      return NULL;
    }
    char *slash = strrchr(p, '/');
    if (!slash) {
      free(p);
      return xstrdup(".");
    }
    if (slash == p) {
      p[1] = 0;
      continue;
    }
    *slash = 0;
  }
}

bool output_dir_check(const char *dir, Diag *d) {
  if (!dir[0]) {
    diag_error(d, NULL, (Loc){0, 0}, "the output directory name is empty");
    return false;
  }
  char *base = existing_ancestor(dir, d);
  if (!base)
    return false;
  bool ok = access(base, W_OK | X_OK) == 0;
  if (!ok)
    diag_error(d, dir, (Loc){0, 0}, "cannot write into %s: %s", base,
               strerror(errno));
  free(base);
  return ok;
}

/* ---- a set of files ---- */

typedef struct SetFile {
  char *name;
  Staged st;
} SetFile;

struct OutSet {
  char *dir;
  char *stage; /* DIR, or the ancestor of DIR that exists: its file system */
  int n, cap;
  SetFile *files;
  int nprotect, pcap;
  char **protect;
};

OutSet *outset_new(const char *dir) {
  OutSet *s = xcalloc(1, sizeof *s);
  s->dir = xstrdup(dir);
  return s;
}

const char *outset_dir(const OutSet *s) { return s->dir; }

void outset_protect(OutSet *s, const char *input) {
  char *copy = xstrdup(input);
  VEC_PUSH(s->protect, s->nprotect, s->pcap, copy);
}

void outset_protect_inputs(OutSet *s, const InputSet *in) {
  for (int i = 0; i < inputset_count(in); i++)
    outset_protect(s, inputset_path(in, i));
}

bool outset_put(OutSet *s, const char *name, const void *data, size_t len,
                Diag *d) {
  if (!s->stage && !(s->stage = existing_ancestor(s->dir, d)))
    return false;
  SetFile f = {.name = xstrdup(name)};
  if (!staged_write(&f.st, s->stage, name, data, len, NULL)) {
    char *path = join(s->dir, name);
    diag_error(d, path, (Loc){0, 0}, "cannot write: %s", strerror(errno));
    free(path);
    free(f.name);
    return false;
  }
  VEC_PUSH(s->files, s->n, s->cap, f);
  return true;
}

/* mkdir -p DIR; the directories made are pushed onto MADE (deepest
 * last), to be removed if the commit fails. */
static bool make_dirs(const char *dir, char ***made, int *nmade, int *cap,
                      Diag *d) {
  char *p = xstrdup(dir);
  bool ok = true;
  for (char *s = p + 1; ok; s++) {
    bool end = *s == 0;
    if (*s != '/' && !end)
      continue;
    *s = 0;
    if (p[0] && !is_dir(p)) {
      if (mkdir(p, 0777) == 0) {
        char *copy = xstrdup(p);
        VEC_PUSH(*made, *nmade, *cap, copy);
      } else if (!(errno == EEXIST && is_dir(p))) {
        diag_error(d, p, (Loc){0, 0}, "cannot create the directory: %s",
                   strerror(errno));
        ok = false;
      }
    }
    if (end)
      break;
    *s = '/';
  }
  free(p);
  return ok;
}

bool outset_commit(OutSet *s, bool *refused, Diag *d) {
  *refused = false;
  char **paths = xcalloc((size_t)s->n + 1, sizeof *paths);
  for (int i = 0; i < s->n; i++)
    paths[i] = join(s->dir, s->files[i].name);
  bool ok = true;
  for (int i = 0; ok && i < s->n; i++) {
    for (int k = 0; ok && k < s->nprotect; k++)
      if (same_file(paths[i], s->protect[k])) {
        diag_error(d, paths[i], (Loc){0, 0},
                   "refusing to write: this output is the input %s",
                   s->protect[k]);
        *refused = true;
        ok = false;
      }
    Target t;
    if (ok && !target_of(paths[i], false, &t, d)) {
      *refused = true;
      ok = false;
    } else if (ok) {
      keep_mode(s->files[i].st.fd, &t);
      free(t.path);
    }
  }
  char **made = NULL;
  int nmade = 0, mcap = 0;
  if (ok && !make_dirs(s->dir, &made, &nmade, &mcap, d)) {
    *refused = true;
    ok = false;
  }
  /* One set lands at a time in a directory: two runs committing at once
   * leave one whole set, never one's first file and the other's second. */
  int dirfd = ok ? open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dirfd >= 0)
    while (flock(dirfd, LOCK_EX) != 0 && errno == EINTR)
      ;
  /* Name every file beside its target first: nothing has moved yet, so
   * a failure here leaves the directory as it was. */
  for (int i = 0; ok && i < s->n; i++)
    if (!staged_link(&s->files[i].st, s->dir, s->files[i].name)) {
      diag_error(d, paths[i], (Loc){0, 0}, "cannot write: %s",
                 strerror(errno));
      ok = false;
    }
  /* Then the renames, which only fail for reasons beyond this program
   * (an I/O error, the directory removed under it): the files already
   * renamed then stay, the others are dropped. */
  for (int i = 0; ok && i < s->n; i++)
    if (!staged_rename(&s->files[i].st, paths[i])) {
      diag_error(d, paths[i], (Loc){0, 0}, "cannot write: %s",
                 strerror(errno));
      ok = false;
    }
  if (dirfd >= 0) {
    if (ok)
      fsync(dirfd); /* the renames, durable */
    close(dirfd);   /* and the lock released */
  }
  if (!ok) {
    for (int i = 0; i < s->n; i++)
      staged_discard(&s->files[i].st);
    for (int i = nmade - 1; i >= 0; i--)
      rmdir(made[i]);
  }
  for (int i = 0; i < nmade; i++)
    free(made[i]);
  free(made);
  for (int i = 0; i < s->n; i++)
    free(paths[i]);
  free(paths);
  return ok;
}

void outset_free(OutSet *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n; i++) {
    staged_discard(&s->files[i].st);
    free(s->files[i].name);
  }
  for (int i = 0; i < s->nprotect; i++)
    free(s->protect[i]);
  free(s->protect);
  free(s->files);
  free(s->stage);
  free(s->dir);
  free(s);
}
