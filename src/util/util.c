#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
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

int find_named(const void *arr, int n, size_t size, const char *name) {
  for (int i = 0; i < n; i++) {
    const char *const *entry =
        (const void *)((const char *)arr + (size_t)i * size);
    if (strcmp(*entry, name) == 0)
      return i;
  }
  return -1;
}

bool diag_fail(Diag *d, const char *file, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, file, loc, fmt, ap);
  va_end(ap);
  return false;
}

void diag_print(const Diag *d, FILE *out) {
  Buf b = {0};
  if (d->file[0]) {
    buf_escaped(&b, d->file);
    if (d->loc.line > 0)
      buf_printf(&b, ":%d:%d", d->loc.line, d->loc.col > 0 ? d->loc.col : 1);
    buf_printf(&b, ": ");
  }
  buf_printf(&b, "error: ");
  buf_escaped(&b, d->msg);
  fprintf(out, "%s\n", b.s);
  buf_free(&b);
}

/* ---- allocation ---- */

/* Say so, remove the temporaries (temps.c) and end the run: nothing
 * half-written is left. */
void out_of_memory(size_t size) {
  char msg[96];
  snprintf(msg, sizeof msg, "mambalaya: out of memory (allocating %zu "
           "bytes)\n", size);
  fatal(msg);
}

int int_ascending(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Four independent lanes, combined at the end: the mapping memo hashes a
 * key of a hundred words or so millions of times in a sweep with `best`,
 * and one chain of dependent multiplies was a fifth of its time. */
uint64_t hash_words(const uint64_t *w, int n) {
  uint64_t h[4] = {0x9e3779b97f4a7c15u, 0xc2b2ae3d27d4eb4fu,
                   0x165667b19e3779f9u, 0x27d4eb2f165667c5u};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; k++) {
      h[k] ^= w[i + k];
      h[k] *= 0xff51afd7ed558ccdu;
      h[k] ^= h[k] >> 32;
    }
  for (; i < n; i++) {
    h[0] ^= w[i];
    h[0] *= 0xff51afd7ed558ccdu;
    h[0] ^= h[0] >> 32;
  }
  uint64_t x = h[0] ^ (h[1] * 0xc4ceb9fe1a85ec53u) ^
               (h[2] * 0x9e3779b97f4a7c15u) ^ (h[3] * 0xff51afd7ed558ccdu);
  return x ^ x >> 29;
}

void *xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p)
    out_of_memory(size);
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p)
    out_of_memory(n * size);
  return p;
}

void *xrealloc(void *p, size_t size) {
  p = realloc(p, size ? size : 1);
  if (!p)
    out_of_memory(size);
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

static bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

void buf_escaped(Buf *b, const char *s) {
  const char *run = s;
  for (;; s++) {
    if (*s && !is_control((unsigned char)*s))
      continue;
    if (s > run)
      buf_printf(b, "%.*s", (int)(s - run), run);
    if (!*s)
      break;
    buf_printf(b, "\\x%02x", (unsigned char)*s);
    run = s + 1;
  }
  if (!b->s)
    buf_printf(b, "%s", "");
}

size_t escaped_len(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += is_control((unsigned char)*s) ? 4 : 1;
  return n;
}

/* ---- numbers and sizes ---- */

size_t decimal_length(const char *s) {
  size_t i = 0, digits = 0;
  if (s[i] == '+' || s[i] == '-')
    i++;
  while (isdigit((unsigned char)s[i]))
    i++, digits++;
  if (s[i] == '.') {
    i++;
    while (isdigit((unsigned char)s[i]))
      i++, digits++;
  }
  if (digits == 0)
    return 0;
  if (s[i] == 'e' || s[i] == 'E') {
    size_t j = i + 1;
    if (s[j] == '+' || s[j] == '-')
      j++;
    if (isdigit((unsigned char)s[j])) {
      while (isdigit((unsigned char)s[j]))
        j++;
      i = j;
    }
  }
  return i;
}

static const char *skip_blanks(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  return s;
}

bool parse_decimal(const char *text, double *value) {
  const char *s = skip_blanks(text);
  size_t n = decimal_length(s);
  if (n == 0 || *skip_blanks(s + n) != 0)
    return false;
  char buf[64];
  if (n >= sizeof buf) /* no sane number is written with 64 characters */
    return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  double v = strtod(buf, NULL);
  if (!isfinite(v))
    return false;
  *value = v;
  return true;
}

bool count_elements(int n, const int64_t *dims, uint64_t max,
                    uint64_t *count) {
  uint64_t c = 1;
  bool ok = true;
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0 || (uint64_t)dims[i] > max)
      return false;
    /* Keep checking every dimension after an overflow or a zero. */
    ok = ok && mul_u64(c, (uint64_t)dims[i], &c) && c <= max;
  }
  if (ok)
    *count = c;
  return ok;
}

void buf_bytes(Buf *b, double bytes) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
                                      "PiB", "EiB"};
  int u = 0;
  double v = bytes;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    u++;
  }
  if (u == 0)
    buf_printf(b, "%.0f B", v);
  else
    buf_printf(b, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, units[u]);
}

double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
