/* util.h — the few things every module needs: source locations and
 * diagnostics, an arena that owns a whole data structure, growable arrays,
 * and small string helpers.
 *
 * Nothing here is global or mutable: a Diag is passed down by the caller,
 * an Arena belongs to the structure it allocates for. */
#ifndef MAMBALAYA_UTIL_H
#define MAMBALAYA_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A position in a source file, 1-based. line == 0 means "unknown". */
typedef struct Loc {
  int line, col;
} Loc;

/* The first error met while loading or checking an input. Loaders stop at
 * the first error: its position and text are what the user sees, as
 * "FILE:LINE:COL: error: MSG". */
typedef struct Diag {
  bool failed;
  char file[512];
  Loc loc;
  char msg[1024];
} Diag;

/* Record an error unless one is already recorded (the first one wins). */
void diag_error(Diag *d, const char *file, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_verror(Diag *d, const char *file, Loc loc, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));
/* Print "FILE:LINE:COL: error: MSG" (or "FILE: error: MSG" without a line). */
void diag_print(const Diag *d, FILE *out);

/* An arena: many small allocations, freed together. Memory is zeroed. */
typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
  ArenaBlock *head;
} Arena;

void *arena_alloc(Arena *a, size_t size);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
void arena_free(Arena *a);

/* Allocation that cannot fail silently: out of memory aborts. */
void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);

/* A growable array of fixed-size items, heap-allocated. */
#define VEC_PUSH(arr, n, cap, item)                                        \
  do {                                                                     \
    if ((n) == (cap)) {                                                    \
      (cap) = (cap) ? 2 * (cap) : 8;                                       \
      (arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr));              \
    }                                                                      \
    (arr)[(n)++] = (item);                                                 \
  } while (0)

/* A string builder. */
typedef struct Buf {
  char *s;
  size_t len, cap;
} Buf;

void buf_printf(Buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void buf_free(Buf *b);

/* Read a whole file; NULL with errno set on failure. *len excludes the
 * terminating NUL that is always appended. */
char *read_file(const char *path, size_t *len);

/* Write a file atomically: into PATH.tmp, then rename, so that a failure
 * never leaves a half-written file. Returns false with errno set. */
bool write_file_atomic(const char *path, const char *data, size_t len);

/* The SHA-256 digest of DATA as 64 lowercase hex digits (and a NUL):
 * what `sha256sum` prints, to name an input by its content. */
void sha256_hex(const void *data, size_t len, char out[65]);

/* Wall-clock seconds from a monotonic clock. */
double now_seconds(void);

#endif
