/* input.c — the one way inputs are read (util.h, "reading inputs"): only
 * regular files and named pipes, up to a size limit, with memory running
 * out reported rather than aborting; and what the machine has to give. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *file_kind(unsigned m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISFIFO(m) ? "a named pipe"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
         : S_ISLNK(m)  ? "a symbolic link"
                       : "not a regular file";
}

static bool readable_kind(mode_t m) { return S_ISREG(m) || S_ISFIFO(m); }

/* Read FD to its end, at most MAX bytes. */
static char *read_fd(int fd, size_t hint, size_t max, size_t *len) {
  size_t cap = hint < max ? hint + 1 : max + 1, n = 0;
  if (cap < 4096)
    cap = 4096;
  char *s = malloc(cap + 1);
  if (!s) {
    errno = ENOMEM;
    return NULL;
  }
  for (;;) {
    if (n == cap) {
      if (cap > max) { /* read max + 1 bytes: one too many */
        free(s);
        errno = EFBIG;
        return NULL;
      }
      size_t next = cap > SIZE_MAX / 4 ? SIZE_MAX / 2 : cap * 2;
      if (next > max)
        next = max + 1;
      char *t = realloc(s, next + 1);
      if (!t) {
        free(s);
        errno = ENOMEM;
        return NULL;
      }
      s = t;
      cap = next;
    }
    ssize_t got = read(fd, s + n, cap - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int e = errno;
      free(s);
      errno = e;
      return NULL;
    }
    if (got == 0)
      break;
    n += (size_t)got;
    if (n > max) {
      free(s);
      errno = EFBIG;
      return NULL;
    }
  }
  s[n] = 0;
  *len = n;
  return s;
}

char *read_file_max(const char *path, size_t max, size_t *len) {
  if (max > SIZE_MAX / 4) /* so that the buffer's sizes cannot wrap */
    max = SIZE_MAX / 4;
  struct stat st;
  if (stat(path, &st) != 0)
    return NULL;
  if (!readable_kind(st.st_mode)) { /* never open a device */
    errno = EINVAL;
    return NULL;
  }
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
    errno = EFBIG;
    return NULL;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  /* The same check on what was opened: the path may have changed. */
  if (fstat(fd, &st) != 0 || !readable_kind(st.st_mode)) {
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  size_t n = 0;
  char *s = read_fd(fd, S_ISREG(st.st_mode) ? (size_t)st.st_size : 0, max,
                    &n);
  int e = errno;
  close(fd);
  errno = e;
  if (s && len)
    *len = n;
  return s;
}

char *read_file(const char *path, size_t *len) {
  return read_file_max(path, SIZE_MAX / 4, len);
}

char *read_input(const char *path, size_t max, size_t *len, Diag *d) {
  char *s = read_file_max(path, max, len);
  if (s)
    return s;
  int e = errno;
  struct stat st;
  if (e == EINVAL && stat(path, &st) == 0)
    diag_error(d, path, (Loc){0, 0},
               "cannot read: %s, not a regular file or a named pipe",
               file_kind(st.st_mode));
  else if (e == EFBIG)
    diag_error(d, path, (Loc){0, 0},
               "cannot read: more than %zu bytes, the limit for this input",
               max);
  else if (e == ENOMEM)
    diag_error(d, path, (Loc){0, 0}, "cannot read: out of memory");
  else
    diag_error(d, path, (Loc){0, 0}, "cannot read: %s", strerror(e));
  return NULL;
}

bool same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

/* "MemAvailable:   24280196 kB" */
static uint64_t meminfo_available(void) {
  char *text = read_file_max("/proc/meminfo", 1 << 20, NULL);
  if (!text)
    return 0;
  uint64_t kb = 0;
  const char *p = strstr(text, "MemAvailable:");
  if (p)
    kb = strtoull(p + strlen("MemAvailable:"), NULL, 10);
  free(text);
  return kb > UINT64_MAX / 1024 ? UINT64_MAX : kb * 1024;
}

uint64_t memory_available(void) {
  uint64_t m = meminfo_available();
  if (m)
    return m;
  long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || size <= 0)
    return 0;
  return (uint64_t)pages * (uint64_t)size;
}

bool load_input(const char *path, ParseText *parse, void *out, Diag *d) {
  size_t len;
  char *text = read_input(path, INPUT_TEXT_MAX, &len, d);
  bool ok = text && parse(path, text, len, out, d);
  free(text);
  return ok;
}
