/* safetensors.c — reading and writing safetensors files.
 *
 *   [8 bytes]  N, the header's length, unsigned little-endian
 *   [N bytes]  a UTF-8 JSON object {name: {"dtype", "shape",
 *              "data_offsets": [begin, end]}, "__metadata__": {str: str}}
 *   [rest]     the data section; each tensor is [begin, end) of it,
 *              little-endian, row-major
 *
 * Reading is strict, as the reference implementation (huggingface/
 * safetensors) is: the tensors must tile the data section exactly, with no
 * overlap, hole or trailing byte, and each one's byte size must be its
 * dtype's size times its element count. A file that breaks any rule is
 * rejected with one message; nothing is ever half-read. */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference reader's limit: a header longer than this is not a
 * header but a corrupt length (and would make us allocate for nothing). */
enum { ST_MAX_HEADER = 100000000 };

/* Dtypes of the format that we recognize but do not read: integer and
 * 8-bit float tensors have no place in a Mamba checkpoint's weights. */
static const char *const unsupported_dtypes[] = {
    "BOOL",    "U8",  "I8",      "U16",     "I16",     "U32",
    "I32",     "U64", "I64",     "C64",     "F8_E4M3", "F8_E5M2",
    "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", NULL};

/* ---- little-endian access and float conversions (host-independent) ---- */

static uint64_t get_le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static void put_le(unsigned char *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++, v >>= 8)
    p[i] = (unsigned char)(v & 0xff);
}

/* ---- messages ---- */

/* S made printable for a one-line message: control bytes become \xNN and
 * long strings are cut (at a character boundary, unless the UTF-8 is
 * broken) with "...". CAP must be at least 16. */
static void printable(const char *s, char *out, size_t cap) {
  size_t o = 0;
  const size_t keep = cap - 8; /* room for one \xNN or 3 more bytes, "..." */
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (o >= keep && ((c & 0xc0) != 0x80 || o >= keep + 3)) {
      memcpy(out + o, "...", 4);
      return;
    }
    if (c < 0x20 || c == 0x7f)
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
    else
      out[o++] = (char)c;
  }
  out[o] = 0;
}

/* 'NAME', printable, for messages about one tensor or key. */
typedef struct Quoted {
  char s[96];
} Quoted;

static Quoted quoted(const char *name) {
  Quoted q;
  q.s[0] = '\'';
  printable(name, q.s + 1, sizeof q.s - 2);
  strcat(q.s, "'");
  return q;
}

static const char *json_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
  case JSON_REAL:
    return "a number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  default:
    return "null";
  }
}

/* "[3, 4]" */
static void shape_text(char *out, size_t cap, int ndim, const int64_t *shape) {
  size_t o = (size_t)snprintf(out, cap, "[");
  for (int i = 0; i < ndim && o < cap; i++)
    o += (size_t)snprintf(out + o, cap - o, "%s%lld", i ? ", " : "",
                          (long long)shape[i]);
  if (o < cap)
    snprintf(out + o, cap - o, "]");
}

/* ---- parsing ---- */

typedef struct Parser {
  StFile *f;
  Diag *d;
  uint64_t data_len;
} Parser;

#define fail(p, ...) diag_fail((p)->d, (p)->f->path, (Loc){0, 0}, __VA_ARGS__)

static bool parse_dtype(Parser *p, const Quoted *q, const json_t *v,
                        DType *out) {
  if (!json_is_string(v))
    return fail(p, "tensor %s: dtype is %s, not a string", q->s, json_kind(v));
  const char *s = json_string_value(v);
  if (dtype_from_name(s, out))
    return true;
  Quoted dq = quoted(s);
  for (int i = 0; unsupported_dtypes[i]; i++)
    if (strcmp(s, unsupported_dtypes[i]) == 0)
      return fail(p,
                  "tensor %s: unsupported dtype %s (mambalaya reads F32, F16, "
                  "BF16 and F64)",
                  q->s, dq.s);
  return fail(p, "tensor %s: unknown dtype %s", q->s, dq.s);
}

static bool parse_shape(Parser *p, const Quoted *q, const json_t *v,
                        StEntry *e) {
  if (!json_is_array(v))
    return fail(p, "tensor %s: shape is %s, not an array", q->s, json_kind(v));
  size_t n = json_array_size(v);
  if (n > IR_MAX_RANKS)
    return fail(p, "tensor %s: shape has %zu dimensions (at most %d)", q->s, n,
                IR_MAX_RANKS);
  e->ndim = (int)n;
  for (size_t i = 0; i < n; i++) {
    const json_t *x = json_array_get(v, i);
    if (!json_is_integer(x) || json_integer_value(x) < 0)
      return fail(p,
                  "tensor %s: shape[%zu] is not a non-negative integer "
                  "(shape must list the dimensions' sizes)",
                  q->s, i);
    e->shape[i] = (int64_t)json_integer_value(x);
  }
  return true;
}

static bool parse_offsets(Parser *p, const Quoted *q, const json_t *v,
                          StEntry *e) {
  if (!json_is_array(v) || json_array_size(v) != 2)
    return fail(p, "tensor %s: data_offsets must be an array [begin, end]",
                q->s);
  const json_t *b = json_array_get(v, 0), *x = json_array_get(v, 1);
  if (!json_is_integer(b) || !json_is_integer(x) || json_integer_value(b) < 0 ||
      json_integer_value(x) < 0)
    return fail(p, "tensor %s: data_offsets must be two non-negative integers",
                q->s);
  e->begin = (uint64_t)json_integer_value(b);
  e->end = (uint64_t)json_integer_value(x);
  if (e->begin > e->end)
    return fail(p, "tensor %s: data_offsets [%llu, %llu] end before they begin",
                q->s, (unsigned long long)e->begin, (unsigned long long)e->end);
  return true;
}

/* The byte size that E's dtype and shape call for must be the size of its
 * range, which must lie inside the data section. */
static bool check_size(Parser *p, const Quoted *q, const StEntry *e) {
  char sh[256];
  shape_text(sh, sizeof sh, e->ndim, e->shape);
  /* The count must fit an int64_t in bytes (Array.n), at the widest dtype,
   * and so must every dimension (whatever the others are). */
  const uint64_t limit = (uint64_t)INT64_MAX / 8;
  uint64_t count;
  if (!count_elements(e->ndim, e->shape, limit, &count))
    return fail(p,
                "tensor %s: shape %s has too many elements (a dimension or "
                "their product exceeds %llu)",
                q->s, sh, (unsigned long long)limit);
  if (e->end > p->data_len)
    return fail(p,
                "tensor %s: data_offsets [%llu, %llu] run past the end of the "
                "data section (%llu bytes)",
                q->s, (unsigned long long)e->begin, (unsigned long long)e->end,
                (unsigned long long)p->data_len);
  uint64_t need = count * (uint64_t)dtype_size(e->dtype);
  if (e->end - e->begin != need)
    return fail(p,
                "tensor %s: data_offsets [%llu, %llu] hold %llu bytes but %s "
                "%s needs %llu",
                q->s, (unsigned long long)e->begin, (unsigned long long)e->end,
                (unsigned long long)(e->end - e->begin), dtype_name(e->dtype),
                sh, (unsigned long long)need);
  return true;
}

static bool parse_entry(Parser *p, const char *name, const json_t *v,
                        StEntry *e) {
  Quoted q = quoted(name);
  if (!json_is_object(v))
    return fail(p, "tensor %s: entry is %s, not an object", q.s, json_kind(v));
  static const char *const fields[] = {"dtype", "shape", "data_offsets"};
  for (int i = 0; i < 3; i++)
    if (!json_object_get(v, fields[i]))
      return fail(p, "tensor %s: missing \"%s\"", q.s, fields[i]);
  const char *key;
  const json_t *x;
  json_object_foreach((json_t *)v, key, x) {
    if (strcmp(key, "dtype") && strcmp(key, "shape") &&
        strcmp(key, "data_offsets"))
      return fail(p,
                  "tensor %s: unexpected field %s (an entry has only dtype, "
                  "shape and data_offsets)",
                  q.s, quoted(key).s);
  }
  e->name = arena_strdup(&p->f->arena, name);
  return parse_dtype(p, &q, json_object_get(v, "dtype"), &e->dtype) &&
         parse_shape(p, &q, json_object_get(v, "shape"), e) &&
         parse_offsets(p, &q, json_object_get(v, "data_offsets"), e) &&
         check_size(p, &q, e);
}

static bool parse_metadata(Parser *p, const json_t *v) {
  if (!json_is_object(v))
    return fail(p, "__metadata__ is %s, not an object of strings",
                json_kind(v));
  StFile *f = p->f;
  size_t n = json_object_size(v);
  f->meta_keys = arena_alloc(&f->arena, (n ? n : 1) * sizeof(char *));
  f->meta_values = arena_alloc(&f->arena, (n ? n : 1) * sizeof(char *));
  const char *key;
  const json_t *x;
  json_object_foreach((json_t *)v, key, x) {
    if (!json_is_string(x))
      return fail(p, "__metadata__ %s is %s, not a string", quoted(key).s,
                  json_kind(x));
    f->meta_keys[f->nmeta] = arena_strdup(&f->arena, key);
    f->meta_values[f->nmeta++] = arena_strdup(&f->arena, json_string_value(x));
  }
  return true;
}

/* An entry and its place in the header, so that sorting by offsets is
 * deterministic even for empty tensors sharing an offset. */
typedef struct Slot {
  StEntry e;
  size_t order;
} Slot;

static int by_offsets(const void *pa, const void *pb) {
  const Slot *a = pa, *b = pb;
  if (a->e.begin != b->e.begin)
    return a->e.begin < b->e.begin ? -1 : 1;
  if (a->e.end != b->e.end)
    return a->e.end < b->e.end ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

/* Sorted by offset, the tensors must cover the data section exactly. */
static bool check_tiling(Parser *p, const Slot *s, size_t n) {
  uint64_t pos = 0;
  const char *prev = NULL;
  uint64_t prev_begin = 0;
  for (size_t i = 0; i < n; i++) {
    const StEntry *e = &s[i].e;
    if (e->begin < pos)
      return fail(p, "tensors %s [%llu, %llu) and %s [%llu, %llu) overlap",
                  quoted(prev).s, (unsigned long long)prev_begin,
                  (unsigned long long)pos, quoted(e->name).s,
                  (unsigned long long)e->begin, (unsigned long long)e->end);
    if (e->begin > pos)
      return fail(p,
                  "bytes [%llu, %llu) of the data section belong to no "
                  "tensor (a hole before tensor %s)",
                  (unsigned long long)pos, (unsigned long long)e->begin,
                  quoted(e->name).s);
    if (e->end > e->begin || !prev) {
      prev = e->name;
      prev_begin = e->begin;
    }
    pos = e->end;
  }
  if (pos != p->data_len)
    return fail(p,
                "%llu trailing bytes: the data section is %llu bytes but the "
                "tensors end at %llu",
                (unsigned long long)(p->data_len - pos),
                (unsigned long long)p->data_len, (unsigned long long)pos);
  return true;
}

static bool parse_entries(Parser *p, const json_t *root) {
  StFile *f = p->f;
  size_t cap = json_object_size(root), n = 0;
  Slot *slots = xcalloc(cap ? cap : 1, sizeof *slots);
  bool ok = true;
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)root, key, v) {
    if (strcmp(key, "__metadata__") == 0) {
      ok = parse_metadata(p, v);
    } else {
      slots[n].order = n;
      ok = parse_entry(p, key, v, &slots[n].e);
      n++;
    }
    if (!ok)
      break;
  }
  if (ok) {
    qsort(slots, n, sizeof *slots, by_offsets);
    ok = check_tiling(p, slots, n);
  }
  if (ok) {
    f->n = (int)n;
    f->entries = arena_alloc(&f->arena, (n ? n : 1) * sizeof *f->entries);
    for (size_t i = 0; i < n; i++)
      f->entries[i] = slots[i].e;
  }
  free(slots);
  return ok;
}

/* The frame: a length word that fits the file. */
static bool check_frame(Parser *p, uint64_t *hlen) {
  StFile *f = p->f;
  if (f->len < 8)
    return fail(p, "file is %zu bytes, too short for the 8-byte header length",
                f->len);
  uint64_t n = get_le(f->bytes, 8);
  if (n > ST_MAX_HEADER)
    return fail(p,
                "header length %llu is absurdly large (the limit is %d bytes)",
                (unsigned long long)n, ST_MAX_HEADER);
  if (n > f->len - 8)
    return fail(p,
                "header length %llu runs past the end of the file (%zu bytes)",
                (unsigned long long)n, f->len);
  if (n == 0)
    return fail(p, "header is empty (it must be a JSON object)");
  *hlen = n;
  return true;
}

/* The format requires the header's first byte to be the object's '{'
 * (no leading whitespace), so that a reader can tell a safetensors file
 * from its first bytes. */
static bool check_start(Parser *p, unsigned char c) {
  if (c == '{')
    return true;
  char shown[8];
  if (c >= 0x20 && c < 0x7f)
    snprintf(shown, sizeof shown, "'%c'", c);
  else
    snprintf(shown, sizeof shown, "\\x%02x", c);
  return fail(p, "header must start with '{', found %s", shown);
}

static bool parse_header(Parser *p) {
  StFile *f = p->f;
  uint64_t hlen = 0;
  if (!check_frame(p, &hlen))
    return false;
  f->data_start = 8 + (size_t)hlen;
  p->data_len = f->len - f->data_start;
  json_error_t err;
  json_t *root = json_loadb((const char *)f->bytes + 8, (size_t)hlen,
                            JSON_REJECT_DUPLICATES, &err);
  if (!root) {
    char text[sizeof err.text];
    printable(err.text, text, sizeof text);
    if (json_error_code(&err) == json_error_duplicate_key)
      return fail(p, "the header has a duplicate key (%s, at header byte %d)",
                  text, err.position);
    return fail(p, "the header is not valid JSON: %s (at header byte %d)", text,
                err.position);
  }
  bool ok =
      json_is_object(root)
          ? check_start(p, f->bytes[8]) && parse_entries(p, root)
          : fail(p, "the header is %s, not a JSON object", json_kind(root));
  json_decref(root);
  return ok;
}

/* Parse BYTES (LEN bytes, malloc'd or MAPPED), taking ownership of
 * them. */
static StFile *parse_owned(const char *path, unsigned char *bytes, size_t len,
                           bool mapped, Diag *d) {
  StFile *f = xcalloc(1, sizeof *f);
  f->path = arena_strdup(&f->arena, path);
  f->bytes = bytes;
  f->len = len;
  f->mapped = mapped;
  Parser p = {.f = f, .d = d};
  if (!parse_header(&p)) {
    st_close(f);
    return NULL;
  }
  return f;
}

StFile *st_parse(const char *path, const unsigned char *bytes, size_t len,
                 Diag *d) {
  unsigned char *copy = xmalloc(len);
  if (len)
    memcpy(copy, bytes, len);
  return parse_owned(path, copy, len, false, d);
}

/* FD's LEN bytes read into HUGE (map_huge); false on a short read. */
static bool read_all(int fd, unsigned char *huge, size_t len) {
  size_t got = 0;
  while (got < len) {
    size_t want = len - got < ((size_t)1 << 30) ? len - got : (size_t)1 << 30;
    ssize_t k = pread(fd, huge + got, want, (off_t)got);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    got += (size_t)k;
  }
  return true;
}

/* The file's bytes in memory of their own, read-only, in huge pages where
 * the system gives them (a decode step streams through every weight:
 * util/pages.c); else the file mapped read-only; NULL if it is not a
 * regular file, is empty, or the system refuses both: then it is read
 * instead. Either way the bytes are released by munmap. */
static unsigned char *map_file(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return NULL;
  struct stat st;
  void *p = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      (uint64_t)st.st_size <= SIZE_MAX) {
    *len = (size_t)st.st_size;
    unsigned char *huge = map_huge(*len);
    if (huge && read_all(fd, huge, *len) &&
        mprotect(huge, *len, PROT_READ) == 0) {
      p = huge;
    } else {
      unmap_huge(huge, *len);
      p = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
    }
  }
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}

StFile *st_open(const char *path, Diag *d) {
  size_t len;
  unsigned char *map = map_file(path, &len);
  /* One copy: a checkpoint may be gigabytes, and its tensors are used
   * where they lie (st_tensor). A regular file is read into huge pages
   * or mapped; anything else (a pipe) is read as util.h's read_input
   * reads inputs. */
  if (map)
    return parse_owned(path, map, len, true, d);
  char *bytes = read_input(path, SIZE_MAX / 4, &len, d);
  if (!bytes)
    return NULL;
  return parse_owned(path, (unsigned char *)bytes, len, false, d);
}

void st_close(StFile *f) {
  if (!f)
    return;
  if (f->mapped)
    munmap(f->bytes, f->len);
  else
    free(f->bytes);
  arena_free(&f->arena);
  free(f);
}

/* A linear search: checkpoints hold hundreds of tensors, not millions,
 * and each is looked up once. */
_Static_assert(offsetof(StEntry, name) == 0, "find_named reads it there");
const StEntry *st_find(const StFile *f, const char *name) {
  int i = find_named(f->entries, f->n, sizeof *f->entries, name);
  return i < 0 ? NULL : &f->entries[i];
}

Array *st_array(const StFile *f, const StEntry *e) {
  Array *a = array_new(e->ndim, e->shape);
  if (!a)
    return NULL;
  const unsigned char *p = f->bytes + f->data_start + e->begin;
  int size = dtype_size(e->dtype);
  for (int64_t i = 0; i < a->n; i++, p += size) {
    switch (e->dtype) {
    case DT_F32:
      a->data[i] = f32_from_bits((uint32_t)get_le(p, 4));
      break;
    case DT_F16:
      a->data[i] = dtype_half_value(DT_F16, (uint16_t)get_le(p, 2));
      break;
    case DT_BF16:
      a->data[i] = dtype_half_value(DT_BF16, (uint16_t)get_le(p, 2));
      break;
    default: { /* F64, narrowed with IEEE rounding (out of range: inf) */
      uint64_t u = get_le(p, 8);
      double v;
      memcpy(&v, &u, sizeof v);
      a->data[i] = (float)v;
      break;
    }
    }
  }
  return a;
}

static bool little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

Array *st_tensor(const StFile *f, const StEntry *e) {
  if (e->dtype == DT_F64)
    return st_array(f, e);
  const unsigned char *p = f->bytes + f->data_start + e->begin;
  int size = dtype_size(e->dtype);
  bool in_place = little_endian() && (uintptr_t)p % (uintptr_t)size == 0;
  Array whole = {.ndim = 1, .shape = {(int64_t)((e->end - e->begin) / size)},
                 .dtype = e->dtype};
  whole.n = whole.shape[0];
  if (in_place) {
    if (e->dtype == DT_F32)
      whole.data = (float *)p; /* read-only: never written */
    else
      whole.half = (const uint16_t *)p;
    return array_part(&whole, 0, e->ndim, e->shape);
  }
  /* A copy in the stored dtype, decoded from little-endian. */
  void *copy = xmalloc(whole.n ? (size_t)whole.n * (size_t)size : 1);
  for (int64_t i = 0; i < whole.n; i++) {
    uint64_t v = get_le(p + i * size, size);
    if (size == 4) {
      float x = f32_from_bits((uint32_t)v);
      memcpy((char *)copy + i * 4, &x, 4);
    } else {
      uint16_t h = (uint16_t)v;
      memcpy((char *)copy + i * 2, &h, 2);
    }
  }
  if (e->dtype == DT_F32)
    whole.data = copy;
  else
    whole.half = copy;
  Array *a = array_part(&whole, 0, e->ndim, e->shape); /* borrows COPY */
  if (a)
    a->own = copy; /* and now owns it */
  else
    free(copy);
  return a;
}

/* ---- writing ---- */

typedef struct StItem {
  char *name;
  DType dtype;
  int ndim;
  int64_t shape[IR_MAX_RANKS];
  unsigned char *bytes; /* encoded when added: the writer owns a copy */
  size_t nbytes;
} StItem;

typedef struct StMeta {
  char *key, *value;
} StMeta;
_Static_assert(offsetof(StItem, name) == 0 && offsetof(StMeta, key) == 0,
               "find_named reads the name, the key, there");

struct StWriter {
  StItem *items;
  int n, cap;
  StMeta *meta;
  int nmeta, meta_cap;
};

/* Misuse of the writer is a bug in the caller, not bad input. */
static _Noreturn void writer_bug(const char *what, const char *name) {
  fprintf(stderr, "mambalaya: st_writer: %s %s\n", what, quoted(name).s);
  abort();
}

/* Keys must be valid UTF-8 to be written as JSON. */
static void check_key(const char *name) {
  json_t *probe = json_string(name);
  if (!probe)
    writer_bug("name is not valid UTF-8:", name);
  json_decref(probe);
}

StWriter *st_writer_new(void) { return xcalloc(1, sizeof(StWriter)); }

void st_writer_add(StWriter *w, const char *name, const Array *a, DType as) {
  if ((unsigned)as >= DT_COUNT)
    writer_bug("unknown dtype for tensor", name);
  if (strcmp(name, "__metadata__") == 0)
    writer_bug("reserved tensor name", name);
  if (find_named(w->items, w->n, sizeof *w->items, name) >= 0)
    writer_bug("duplicate tensor name", name);
  check_key(name);
  StItem it = {.name = xstrdup(name), .dtype = as, .ndim = a->ndim};
  memcpy(it.shape, a->shape, sizeof it.shape);
  int size = dtype_size(as);
  it.nbytes = (size_t)a->n * (size_t)size;
  it.bytes = xmalloc(it.nbytes);
  unsigned char *p = it.bytes;
  for (int64_t i = 0; i < a->n; i++, p += size) {
    float v = a->data[i];
    switch (as) {
    case DT_F32:
      put_le(p, f32_bits(v), 4);
      break;
    case DT_F16:
      put_le(p, dtype_half_of(DT_F16, v), 2);
      break;
    case DT_BF16:
      put_le(p, dtype_half_of(DT_BF16, v), 2);
      break;
    default: {
      double x = v;
      uint64_t u;
      memcpy(&u, &x, sizeof u);
      put_le(p, u, 8);
      break;
    }
    }
  }
  VEC_PUSH(w->items, w->n, w->cap, it);
}

void st_writer_meta(StWriter *w, const char *key, const char *value) {
  if (find_named(w->meta, w->nmeta, sizeof *w->meta, key) >= 0)
    writer_bug("duplicate metadata key", key);
  check_key(key);
  check_key(value);
  StMeta m = {xstrdup(key), xstrdup(value)};
  VEC_PUSH(w->meta, w->nmeta, w->meta_cap, m);
}

/* The header, in insertion order, with contiguous data_offsets. */
static char *writer_header(const StWriter *w) {
  json_t *root = json_object();
  if (w->nmeta) {
    json_t *m = json_object();
    for (int i = 0; i < w->nmeta; i++)
      json_object_set_new(m, w->meta[i].key, json_string(w->meta[i].value));
    json_object_set_new(root, "__metadata__", m);
  }
  uint64_t off = 0;
  for (int i = 0; i < w->n; i++) {
    const StItem *it = &w->items[i];
    json_t *shape = json_array();
    for (int k = 0; k < it->ndim; k++)
      json_array_append_new(shape, json_integer((json_int_t)it->shape[k]));
    json_t *e = json_object();
    json_object_set_new(e, "dtype", json_string(dtype_name(it->dtype)));
    json_object_set_new(e, "shape", shape);
    json_object_set_new(
        e, "data_offsets",
        json_pack("[II]", (json_int_t)off, (json_int_t)(off + it->nbytes)));
    json_object_set_new(root, it->name, e);
    off += it->nbytes;
  }
  char *s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!s) {
    fputs("mambalaya: st_writer: cannot serialize the header\n", stderr);
    abort();
  }
  return s;
}

unsigned char *st_writer_image(const StWriter *w, size_t *len) {
  char *header = writer_header(w);
  size_t hlen = strlen(header);
  size_t padded = (hlen + 7) / 8 * 8; /* so the data starts 8-byte aligned */
  size_t total = 8 + padded;
  for (int i = 0; i < w->n; i++)
    total += w->items[i].nbytes;
  unsigned char *img = xmalloc(total);
  put_le(img, padded, 8);
  memcpy(img + 8, header, hlen);
  memset(img + 8 + hlen, ' ', padded - hlen);
  free(header);
  size_t o = 8 + padded;
  for (int i = 0; i < w->n; i++) {
    if (w->items[i].nbytes)
      memcpy(img + o, w->items[i].bytes, w->items[i].nbytes);
    o += w->items[i].nbytes;
  }
  *len = total;
  return img;
}

bool st_writer_save(const StWriter *w, const char *path, Diag *d) {
  size_t total;
  unsigned char *img = st_writer_image(w, &total);
  bool ok = write_file_atomic(path, (const char *)img, total);
  if (!ok)
    diag_error(d, path, (Loc){0, 0}, "cannot write: %s", strerror(errno));
  free(img);
  return ok;
}

void st_writer_free(StWriter *w) {
  if (!w)
    return;
  for (int i = 0; i < w->n; i++) {
    free(w->items[i].name);
    free(w->items[i].bytes);
  }
  for (int i = 0; i < w->nmeta; i++) {
    free(w->meta[i].key);
    free(w->meta[i].value);
  }
  free(w->items);
  free(w->meta);
  free(w);
}
