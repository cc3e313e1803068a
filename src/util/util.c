#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void diag_verror(Diag *d, const char *file, Loc loc, const char *fmt,
                 va_list ap) {
  if (!d || d->failed)
    return;
  d->failed = true;
  snprintf(d->file, sizeof d->file, "%s", file ? file : "");
  d->loc = loc;
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
}

void diag_error(Diag *d, const char *file, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, file, loc, fmt, ap);
  va_end(ap);
}

void diag_print(const Diag *d, FILE *out) {
  if (d->loc.line > 0)
    fprintf(out, "%s:%d:%d: error: %s\n", d->file, d->loc.line,
            d->loc.col > 0 ? d->loc.col : 1, d->msg);
  else if (d->file[0])
    fprintf(out, "%s: error: %s\n", d->file, d->msg);
  else
    fprintf(out, "error: %s\n", d->msg);
}

/* ---- allocation ---- */

void *xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p) {
    fputs("mambalaya: out of memory\n", stderr);
    abort();
  }
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) {
    fputs("mambalaya: out of memory\n", stderr);
    abort();
  }
  return p;
}

void *xrealloc(void *p, size_t size) {
  p = realloc(p, size ? size : 1);
  if (!p) {
    fputs("mambalaya: out of memory\n", stderr);
    abort();
  }
  return p;
}

char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = xmalloc(n);
  memcpy(p, s, n);
  return p;
}

/* ---- arena ---- */

struct ArenaBlock {
  ArenaBlock *next;
  size_t used, cap;
  _Alignas(max_align_t) unsigned char data[];
};

enum { ARENA_BLOCK = 64 * 1024 };

void *arena_alloc(Arena *a, size_t size) {
  size = (size + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
  ArenaBlock *b = a->head;
  if (!b || b->cap - b->used < size) {
    size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
    b = xmalloc(sizeof *b + cap);
    b->next = a->head;
    b->used = 0;
    b->cap = cap;
    a->head = b;
  }
  void *p = b->data + b->used;
  b->used += size;
  memset(p, 0, size);
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_strdup(Arena *a, const char *s) {
  return arena_strndup(a, s, strlen(s));
}

void arena_free(Arena *a) {
  ArenaBlock *b = a->head;
  while (b) {
    ArenaBlock *next = b->next;
    free(b);
    b = next;
  }
  a->head = NULL;
}

/* ---- strings and files ---- */

void buf_printf(Buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    va_end(ap2);
    return;
  }
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + (size_t)n + 1)
      cap *= 2;
    b->s = xrealloc(b->s, cap);
    b->cap = cap;
  }
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  b->len += (size_t)n;
}

void buf_free(Buf *b) {
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}

char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, n = 0;
  char *s = xmalloc(cap);
  for (;;) {
    if (n + 1 >= cap) {
      cap *= 2;
      s = xrealloc(s, cap);
    }
    size_t got = fread(s + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) {
        int e = errno;
        fclose(f);
        free(s);
        errno = e ? e : EIO;
        return NULL;
      }
      break;
    }
  }
  fclose(f);
  s[n] = 0;
  if (len)
    *len = n;
  return s;
}

bool write_file_atomic(const char *path, const char *data, size_t len) {
  size_t n = strlen(path) + 8;
  char *tmp = xmalloc(n);
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    free(tmp);
    return false;
  }
  bool ok = fwrite(data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (ok)
    ok = rename(tmp, path) == 0;
  if (!ok) {
    int e = errno;
    unlink(tmp);
    errno = e;
  }
  free(tmp);
  return ok;
}

double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
