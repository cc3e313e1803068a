/* diff.c — what changed between two results (`mambalaya diff`): every
 * member whose value differs, by its path, inputs first. Objects are
 * compared member by member; arrays of records (Einsums, components,
 * points) by their name, through a hash of the names (a million records
 * in about a second), others item by item; numbers within a relative
 * tolerance. Two results of different commands are not compared. */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct Differ {
  Buf *out;
  double tol;
  int n;
} Differ;

/* The records of an array by name: open addressing over the names'
 * hashes, so that matching a million records takes linear time. */
typedef struct Slot {
  uint64_t hash;
  const char *name; /* NULL: empty */
  json_t *record;
} Slot;

typedef struct NameIndex {
  size_t cap; /* a power of two, at least twice the records */
  Slot *slot;
  const char *key; /* the member naming them */
} NameIndex;

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static const char *record_name(const NameIndex *ix, json_t *x) {
  return json_string_value(json_object_get(x, ix->key));
}

/* The slot of NAME (hashed H) in IX: its record's, or the empty one it
 * would take. */
static Slot *index_slot(const NameIndex *ix, const char *name, uint64_t h) {
  size_t i = h & (ix->cap - 1);
  while (ix->slot[i].name &&
         (ix->slot[i].hash != h || strcmp(ix->slot[i].name, name) != 0))
    i = (i + 1) & (ix->cap - 1);
  return &ix->slot[i];
}

static json_t *index_get(const NameIndex *ix, const char *name) {
  return index_slot(ix, name, name_hash(name))->record;
}

/* ARR's items by their member KEY; false (IX empty) when some item is not
 * a record with a string KEY, or two share one. */
static bool index_build(NameIndex *ix, json_t *arr, const char *key) {
  size_t n = json_array_size(arr);
  *ix = (NameIndex){16, NULL, key};
  while (ix->cap < 2 * n)
    ix->cap *= 2;
  ix->slot = xcalloc(ix->cap, sizeof *ix->slot);
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) {
    json_t *x = json_array_get(arr, i);
    const char *name = record_name(ix, x);
    uint64_t h = name ? name_hash(name) : 0;
    Slot *at = name ? index_slot(ix, name, h) : NULL;
    ok = at && !at->name;
    if (ok)
      *at = (Slot){h, name, x};
  }
  if (!ok) {
    free(ix->slot);
    ix->slot = NULL;
  }
  return ok;
}

/* The member naming the records of both A and B, with their indexes, or
 * NULL when they are not both arrays of records named alike. */
static const char *record_key(json_t *a, json_t *b, NameIndex *ia, NameIndex *ib) {
  static const char *const keys[] = {"name", "einsum", "key", "tensor", NULL};
  for (int k = 0; keys[k]; k++) {
    if (!index_build(ia, a, keys[k]))
      continue;
    if (index_build(ib, b, keys[k]))
      return keys[k];
    free(ia->slot);
  }
  return NULL;
}

static void value_text(Buf *b, json_t *v) {
  char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
  size_t n = s ? strlen(s) : 0;
  if (n > 72)
    buf_printf(b, "%.69s...", s);
  else
    buf_printf(b, "%s", s ? s : "?");
  free(s);
}

/* Where a value is: its parent's path and its member name, record name
 * or index. Built on the stack as the walk descends, and written out only
 * for a value that differs: a million equal records cost no text. */
typedef struct Path {
  const struct Path *up;
  const char *name; /* a member (".name"), or a record's name ("[name]") */
  bool record;
  size_t index; /* without a name: "[index]" */
} Path;

static void path_text(Buf *b, const Path *p) {
  if (!p)
    return;
  path_text(b, p->up);
  if (p->name && !p->record && p->up)
    buf_printf(b, ".");
  if (!p->name || p->record)
    buf_printf(b, "[");
  if (p->name)
    buf_escaped(b, p->name);
  else
    buf_printf(b, "%zu", p->index);
  if (!p->name || p->record)
    buf_printf(b, "]");
}

static void report(Differ *d, const Path *path, json_t *a, json_t *b) {
  d->n++;
  buf_printf(d->out, "  ");
  path_text(d->out, path);
  buf_printf(d->out, ": ");
  if (!a) {
    buf_printf(d->out, "(absent) -> ");
    value_text(d->out, b);
  } else if (!b) {
    value_text(d->out, a);
    buf_printf(d->out, " -> (absent)");
  } else {
    value_text(d->out, a);
    buf_printf(d->out, " -> ");
    value_text(d->out, b);
    if (json_is_number(a) && json_is_number(b) &&
        json_number_value(a) != 0)
      buf_printf(d->out, " (%+.3g%%)",
                 100 * (json_number_value(b) / json_number_value(a) - 1));
  }
  buf_printf(d->out, "\n");
}

static void walk(Differ *d, const Path *path, json_t *a, json_t *b);

static void walk_object(Differ *d, const Path *path, json_t *a, json_t *b) {
  const char *k;
  json_t *v;
  size_t shared = 0;
  json_object_foreach(a, k, v) {
    Path sub = {path, k, false, 0};
    json_t *w = json_object_get(b, k);
    shared += w != NULL;
    walk(d, &sub, v, w);
  }
  if (shared == json_object_size(b))
    return; /* B has no member A lacks */
  json_object_foreach(b, k, v) {
    Path sub = {path, k, false, 0};
    if (!json_object_get(a, k))
      walk(d, &sub, NULL, v);
  }
}

static void walk_array(Differ *d, const Path *path, json_t *a, json_t *b) {
  NameIndex ia, ib;
  if (record_key(a, b, &ia, &ib)) {
    for (size_t i = 0; i < json_array_size(a); i++) {
      json_t *x = json_array_get(a, i);
      Path sub = {path, record_name(&ia, x), true, 0};
      walk(d, &sub, x, index_get(&ib, sub.name));
    }
    for (size_t i = 0; i < json_array_size(b); i++) {
      json_t *y = json_array_get(b, i);
      Path sub = {path, record_name(&ib, y), true, 0};
      if (!index_get(&ia, sub.name))
        walk(d, &sub, NULL, y);
    }
    free(ia.slot);
    free(ib.slot);
    return;
  }
  size_t na = json_array_size(a), nb = json_array_size(b);
  for (size_t i = 0; i < (na > nb ? na : nb); i++) {
    Path sub = {path, NULL, false, i};
    walk(d, &sub, i < na ? json_array_get(a, i) : NULL,
         i < nb ? json_array_get(b, i) : NULL);
  }
}

static bool same_number(double x, double y, double tol) {
  if (x == y)
    return true;
  return fabs(x - y) <= tol * fmax(fabs(x), fabs(y));
}

static void walk(Differ *d, const Path *path, json_t *a, json_t *b) {
  if (!a || !b) {
    report(d, path, a, b);
    return;
  }
  if (json_is_object(a) && json_is_object(b)) {
    walk_object(d, path, a, b);
  } else if (json_is_array(a) && json_is_array(b)) {
    walk_array(d, path, a, b);
  } else if (json_is_number(a) && json_is_number(b)) {
    if (!same_number(json_number_value(a), json_number_value(b), d->tol))
      report(d, path, a, b);
  } else if (!json_equal(a, b)) {
    report(d, path, a, b);
  }
}

int report_diff(Buf *out, json_t *a, json_t *b, double tol) {
  Differ d = {out, tol, 0};
  json_t *ia = json_object_get(a, "inputs"), *ib = json_object_get(b, "inputs");
  Buf inputs = {0}, figures = {0};
  d.out = &inputs;
  Path top = {NULL, "inputs", false, 0};
  if (ia || ib)
    walk(&d, &top, ia, ib);
  int ninputs = d.n;
  d.out = &figures;
  if (json_is_object(a) && json_is_object(b)) {
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v) {
      top.name = k;
      if (strcmp(k, "inputs") != 0)
        walk(&d, &top, v, json_object_get(b, k));
    }
    json_object_foreach(b, k, v) {
      top.name = k;
      if (strcmp(k, "inputs") != 0 && !json_object_get(a, k))
        walk(&d, &top, NULL, v);
    }
  } else {
    walk(&d, NULL, a, b);
  }
  int nfigures = d.n - ninputs;
  if (ninputs)
    buf_printf(out, "inputs (%d):\n%s", ninputs, inputs.s);
  if (nfigures)
    buf_printf(out, "%sresults (%d):\n%s", ninputs ? "\n" : "", nfigures,
               figures.s);
  if (!ninputs && !nfigures)
    buf_printf(out, "no difference\n");
  buf_free(&inputs);
  buf_free(&figures);
  return d.n;
}

bool report_comparable(json_t *a, json_t *b, char *why, size_t n) {
  json_t *r[2] = {a, b};
  const char *cmd[2];
  for (int i = 0; i < 2; i++) {
    cmd[i] = json_string_value(
        json_object_get(json_object_get(r[i], "inputs"), "command"));
    if (!cmd[i]) {
      snprintf(why, n, "the %s file is not a result written with --json "
                       "(it has no inputs.command)",
               i ? "second" : "first");
      return false;
    }
  }
  if (strcmp(cmd[0], cmd[1]) == 0)
    return true;
  snprintf(why, n, "a result of `%s` and one of `%s` are not comparable",
           cmd[0], cmd[1]);
  return false;
}

/* ---- reading two results ---- */

typedef struct Load {
  const char *path;
  json_t *json;
  Diag d;
} Load;

/* Read a result whole (a regular file or a pipe: read_file) and parse it
 * from memory, which is faster than jansson's reading a byte at a time. */
static void load_one(void *arg) {
  Load *l = arg;
  size_t len;
  char *text = read_file(l->path, &len);
  if (!text) {
    diag_error(&l->d, l->path, (Loc){0, 0}, "cannot read: %s",
               errno == EINVAL ? "not a regular file or a named pipe"
                               : strerror(errno));
    return;
  }
  json_error_t e;
  l->json = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
  if (!l->json)
    diag_error(&l->d, l->path, (Loc){e.line, e.column}, "%s", e.text);
  free(text);
}

/* The second result's thread: under a trap of its own (util.h, "fatal
 * errors"), which hands a failure to the caller. */
typedef struct Loader {
  Load *load;
  FatalRecord *failure;
} Loader;

static void *loader_main(void *arg) {
  Loader *t = arg;
  fatal_catch(t->failure, load_one, t->load);
  return NULL;
}

bool report_load_results(const char *const path[2], json_t *out[2],
                         Diag *d) {
  Load l[2] = {{path[0], NULL, {0}}, {path[1], NULL, {0}}};
  FatalRecord failure = {0};
  Loader second = {&l[1], &failure};
  pthread_t other;
  bool threaded = pthread_create(&other, NULL, loader_main, &second) == 0;
  fatal_catch(&failure, load_one, &l[0]);
  if (threaded)
    pthread_join(other, NULL);
  else
    fatal_catch(&failure, load_one, &l[1]);
  fatal_rethrow(&failure);
  for (int i = 0; i < 2; i++)
    if (!l[i].json && !d->failed)
      *d = l[i].d;
  if (l[0].json && l[1].json) {
    out[0] = l[0].json;
    out[1] = l[1].json;
    return true;
  }
  json_decref(l[0].json);
  json_decref(l[1].json);
  return false;
}
