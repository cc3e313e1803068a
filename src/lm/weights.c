/* weights.c — the `weights:` section of a cascade spec: how a checkpoint's
 * keys fill a layer's weight tensors (docs/spec-format.md, "Weights").
 *
 *   weights:
 *     layer: backbone.layers.{i}.          # the prefix of layer i's keys
 *     tensors:                             # cascade tensor: its source
 *       WEX: norm.weight                   #   a key, taken whole
 *       WTTX: {key: mixer.in_proj.weight, rows: [0, D]}
 *       WConv: {key: mixer.conv1d.weight, shape: [D, 1, F]}
 *       A: {key: mixer.A_log, map: neg_exp}
 *     model:                               # model-level tensors
 *       embedding: [backbone.embeddings.weight, backbone.embedding.weight]
 *       norm_f: backbone.norm_f.weight
 *     stream: {hidden: PEY, residual: PLEX, hidden_out: EY, residual_out: LEX}
 *     state:                               # the decode state's names
 *       conv_state: {tensors: [CS], time_last: true}
 *       ssm_state: H0
 *
 * Sizes (rows, shape) are constant expressions of the spec's ranks and
 * model parameters, parsed by the spec's own parser, so errors point at
 * the character. The section is checked when a language model is built
 * from the spec, not by the spec loader, which keeps it as YAML. */
#include "lm.h"

#include "../workload/workload.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum { FN_NONE, FN_NEG, FN_EXP, FN_NEG_EXP, FN_COUNT } WeightFn;
static const char *const fn_names[] = {"none", "neg", "exp", "neg_exp"};
_Static_assert(sizeof fn_names / sizeof fn_names[0] == FN_COUNT,
               "a name per map function");

enum { MAX_KEYS = 8, MAX_STATE_TENSORS = 8 };

/* One weight tensor's source. */
typedef struct Entry {
  int tensor;
  const char *key; /* after the layer prefix */
  Loc loc;         /* the tensor's name in the section */
  Expr *rows[2];   /* [lo, hi); both NULL: every row */
  Loc rows_loc;
  int nshape; /* > 0: the checkpoint tensor's shape (after rows) */
  Expr *shape[IR_MAX_RANKS];
  Loc shape_loc;
  WeightFn fn;
} Entry;

/* A model-level tensor: its candidate keys, the first one found wins. */
typedef struct ModelEntry {
  const char *name;
  int nkeys;
  const char *keys[MAX_KEYS];
  Loc loc;
} ModelEntry;

/* A decode state written under a reference name. */
typedef struct StateOut {
  const char *name;
  Loc loc;
  int n;
  int tensors[MAX_STATE_TENSORS];
  bool time_last; /* [B, T, channels...] written as [B, channels, T] */
} StateOut;

struct WeightMap {
  Cascade *c;
  Arena arena;
  const char *layer;
  int n;
  Entry *entries;
  ModelEntry model[2]; /* embedding, norm_f */
  LayerStream stream;
  int nstate;
  StateOut *state;
};

static const char *const model_names[2] = {"embedding", "norm_f"};

/* ---- parsing helpers ---- */

typedef struct P {
  Cascade *c;
  WeightMap *m;
  Diag *d;
} P;

#define perr(p, ...) diag_fail((p)->d, (p)->c->path, __VA_ARGS__)

/* The document checks of ydoc.h, in the parser's terms. */
static bool want(P *p, const YamlNode *n, YamlKind k, const char *what) {
  return ydoc_want(n, k, what, p->d);
}

static bool known_keys(P *p, const YamlNode *n, const char *const *allowed,
                       const char *where) {
  return ydoc_known_keys(n, allowed, where, p->d);
}

/* N, a section weights must have, of kind K (WHAT in messages): when it
 * is missing, the error at SECTION (the weights section) says what it
 * NEEDS. */
static bool want_section(P *p, const YamlNode *n, Loc section,
                         const char *needs, YamlKind k, const char *what) {
  return n ? want(p, n, k, what) : perr(p, section, "weights needs %s", needs);
}

/* A cascade tensor named by scalar N. */
static int tensor_ref(P *p, const YamlNode *n, const char *what) {
  if (!want(p, n, YN_SCALAR, what))
    return -1;
  int t = cascade_tensor(p->c, n->text);
  if (t < 0)
    perr(p, n->loc, "%s: '%s' is not a tensor of the cascade", what,
         n->text);
  return t;
}

static bool is_input(const Cascade *c, int t) {
  return c->tensors[t].producer < 0;
}

/* Does an Einsum read T? (Cascade.nconsumers counts only intermediates.) */
static bool is_read(const Cascade *c, int t) {
  for (int i = 0; i < c->neinsums; i++)
    for (int k = 0; k < c->einsums[i]->nreads; k++)
      if (c->einsums[i]->reads[k]->tensor == t)
        return true;
  return false;
}

bool weights_is_state(const Cascade *c, int t) {
  return tensor_is_init_read(c, t);
}

/* ---- tensors: ---- */

static bool parse_sizes(P *p, const YamlNode *n, Expr **out, int max,
                        int *count, const char *what) {
  if (!want(p, n, YN_SEQ, what))
    return false;
  if (n->n < 1 || n->n > max)
    return perr(p, n->loc, "%s must list 1 to %d sizes", what, max);
  for (int i = 0; i < n->n; i++) {
    if (!want(p, n->items[i], YN_SCALAR, what))
      return false;
    if (!(out[i] = spec_parse_const(p->c, n->items[i], p->d)))
      return false;
  }
  *count = n->n;
  return true;
}

/* One entry NAME: V of a section into *OUT (an Entry, a StateOut). */
typedef bool (*EntryParser)(P *p, const YamlNode *name, const YamlNode *v,
                            void *out);

static bool parse_entry(P *p, const YamlNode *name, const YamlNode *v,
                        void *out) {
  Entry *e = out;
  e->tensor = tensor_ref(p, name, "weights.tensors");
  e->loc = name->loc;
  if (e->tensor < 0)
    return false;
  const Tensor *T = &p->c->tensors[e->tensor];
  if (!is_input(p->c, e->tensor))
    return perr(p, name->loc,
                "weights.tensors: %s is computed by the cascade, not a "
                "weight",
                T->name);
  if (v->kind == YN_SCALAR) {
    e->key = v->text;
    return true;
  }
  if (!want(p, v, YN_MAP, "a weights.tensors entry"))
    return false;
  static const char *const fields[] = {"key", "rows", "shape", "map", NULL};
  if (!known_keys(p, v, fields, "a weights.tensors entry"))
    return false;
  const YamlNode *key = ydoc_get(v, "key"), *rows = ydoc_get(v, "rows");
  const YamlNode *shape = ydoc_get(v, "shape"), *map = ydoc_get(v, "map");
  if (!key)
    return perr(p, v->loc, "weights.tensors.%s needs a key", T->name);
  if (!want(p, key, YN_SCALAR, "key"))
    return false;
  e->key = key->text;
  if (rows) {
    int n = 0;
    e->rows_loc = rows->loc;
    if (rows->kind == YN_SEQ && rows->n != 2)
      return perr(p, rows->loc, "rows must be [FIRST, END): two sizes");
    if (!parse_sizes(p, rows, e->rows, 2, &n, "rows"))
      return false;
  }
  if (shape) {
    e->shape_loc = shape->loc;
    if (!parse_sizes(p, shape, e->shape, IR_MAX_RANKS, &e->nshape, "shape"))
      return false;
  }
  if (map) {
    if (!want(p, map, YN_SCALAR, "map"))
      return false;
    int f = 0;
    while (f < FN_COUNT && strcmp(fn_names[f], map->text) != 0)
      f++;
    if (f == FN_COUNT)
      return perr(p, map->loc,
                  "unknown map '%s' (expected none, neg, exp or neg_exp)",
                  map->text);
    e->fn = (WeightFn)f;
  }
  return true;
}

/* Section N, a mapping (WHAT in messages), into a table of an item of
 * SIZE bytes per key, in the map's arena, each parsed by PARSE; *COUNT
 * counts the items parsed. The table, or NULL. */
static void *parse_section(P *p, const YamlNode *n, const char *what,
                           size_t size, int *count, EntryParser parse) {
  if (!want(p, n, YN_MAP, what))
    return NULL;
  char *table = arena_alloc(&p->m->arena, ((size_t)n->n + 1) * size);
  for (int i = 0; i < n->n; i++, (*count)++)
    if (!parse(p, n->keys[i], n->items[i], table + (size_t)i * size))
      return NULL;
  return table;
}

static bool parse_tensors(P *p, const YamlNode *n, Loc section) {
  WeightMap *m = p->m;
  if (!want_section(p, n, section, "tensors: the source of each weight "
                    "tensor", YN_MAP, "weights.tensors"))
    return false;
  m->entries = parse_section(p, n, "weights.tensors", sizeof(Entry), &m->n,
                             parse_entry);
  return m->entries;
}

/* ---- model:, stream:, state: ---- */

static bool parse_model(P *p, const YamlNode *n, Loc section) {
  if (!want_section(p, n, section, "a model section (embedding, norm_f)",
                    YN_MAP, "weights.model"))
    return false;
  static const char *const fields[] = {"embedding", "norm_f", NULL};
  if (!known_keys(p, n, fields, "weights.model"))
    return false;
  for (int k = 0; k < 2; k++) {
    ModelEntry *me = &p->m->model[k];
    me->name = model_names[k];
    const YamlNode *v = ydoc_get(n, me->name);
    if (!v)
      return perr(p, n->loc, "weights.model needs %s", me->name);
    me->loc = v->loc;
    if (v->kind == YN_SCALAR) {
      me->keys[me->nkeys++] = v->text;
      continue;
    }
    if (!want(p, v, YN_SEQ, me->name))
      return false;
    if (v->n < 1 || v->n > MAX_KEYS)
      return perr(p, v->loc, "%s must list 1 to %d keys", me->name, MAX_KEYS);
    for (int i = 0; i < v->n; i++) {
      if (!want(p, v->items[i], YN_SCALAR, me->name))
        return false;
      me->keys[me->nkeys++] = v->items[i]->text;
    }
  }
  return true;
}

static bool parse_stream(P *p, const YamlNode *n) {
  static const char *const roles[] = {"hidden", "residual", "hidden_out",
                                      "residual_out", NULL};
  static const char *const defaults[] = {"PEY", "PLEX", "EY", "LEX"};
  int *slot[] = {&p->m->stream.hidden_in, &p->m->stream.residual_in,
                 &p->m->stream.hidden_out, &p->m->stream.residual_out};
  if (n && (!want(p, n, YN_MAP, "weights.stream") ||
            !known_keys(p, n, roles, "weights.stream")))
    return false;
  for (int k = 0; k < 4; k++) {
    const YamlNode *v = n ? ydoc_get(n, roles[k]) : NULL;
    Loc loc = v ? v->loc : n ? n->loc : (Loc){0, 0};
    int t = v ? tensor_ref(p, v, "weights.stream")
              : cascade_tensor(p->c, defaults[k]);
    if (v && t < 0)
      return false;
    if (t < 0)
      return perr(p, loc,
                  "the cascade has no tensor %s: name the layer's %s in "
                  "weights.stream",
                  defaults[k], roles[k]);
    bool in = k < 2;
    if (in != is_input(p->c, t) || (!in && !p->c->tensors[t].output))
      return perr(p, loc, "weights.stream.%s: %s must be %s", roles[k],
                  p->c->tensors[t].name,
                  in ? "an input of the cascade" : "an output of the cascade");
    *slot[k] = t;
  }
  return true;
}

/* With time_last, T is [batch, time, channels...] over the same batch
 * and time ranks as FIRST. */
static bool same_batch_time(const Cascade *c, int t, int first) {
  const Tensor *T = &c->tensors[t], *F = &c->tensors[first];
  return T->nranks >= 2 && T->ranks[0] == F->ranks[0] &&
         T->ranks[1] == F->ranks[1];
}

static bool parse_state_entry(P *p, const YamlNode *name, const YamlNode *v,
                              void *out) {
  StateOut *so = out;
  so->name = name->text;
  so->loc = name->loc;
  const YamlNode *list = v;
  if (v->kind == YN_MAP) {
    static const char *const fields[] = {"tensors", "time_last", NULL};
    if (!known_keys(p, v, fields, "a weights.state entry"))
      return false;
    list = ydoc_get(v, "tensors");
    const YamlNode *tl = ydoc_get(v, "time_last");
    if (!list)
      return perr(p, v->loc, "weights.state.%s needs tensors", so->name);
    if (tl) {
      if (tl->kind != YN_SCALAR ||
          (strcmp(tl->text, "true") && strcmp(tl->text, "false")))
        return perr(p, tl->loc, "time_last must be true or false");
      so->time_last = strcmp(tl->text, "true") == 0;
    }
  }
  int n = list->kind == YN_SEQ ? list->n : 1;
  if (n < 1 || n > MAX_STATE_TENSORS)
    return perr(p, list->loc, "weights.state.%s must list 1 to %d tensors",
                so->name, MAX_STATE_TENSORS);
  if (n > 1 && !so->time_last)
    return perr(p, list->loc,
                "weights.state.%s: several tensors are concatenated along "
                "their channels, which needs time_last: true",
                so->name);
  for (int i = 0; i < n; i++) {
    const YamlNode *item = list->kind == YN_SEQ ? list->items[i] : list;
    int t = tensor_ref(p, item, "weights.state");
    if (t < 0)
      return false;
    if (!weights_is_state(p->c, t))
      return perr(p, item->loc,
                  "weights.state: %s is not a decode state (no "
                  "initialization reads it)",
                  p->c->tensors[t].name);
    if (so->time_last && !same_batch_time(p->c, t, i ? so->tensors[0] : t))
      return perr(p, item->loc,
                  "weights.state: with time_last, every tensor must be "
                  "[batch, time, channels...] over the same batch and time "
                  "ranks");
    so->tensors[so->n++] = t;
  }
  return true;
}

static bool parse_state(P *p, const YamlNode *n) {
  if (!n)
    return true;
  WeightMap *m = p->m;
  m->state = parse_section(p, n, "weights.state", sizeof(StateOut),
                           &m->nstate, parse_state_entry);
  return m->state;
}

/* ---- the whole section ---- */

static bool parse_layer(P *p, const YamlNode *n, Loc section) {
  if (!want_section(p, n, section, "layer: the prefix of a layer's keys, "
                    "with {i} for its number", YN_SCALAR, "weights.layer"))
    return false;
  const char *at = strstr(n->text, "{i}");
  if (!at || strstr(at + 3, "{i}"))
    return perr(p, n->loc, "weights.layer must contain {i} (the layer "
                           "number) once, e.g. backbone.layers.{i}.");
  p->m->layer = n->text;
  return true;
}

/* Every input is a weight, a stream input or a state, and only one.
 * SECTION: where to point (the tensors: mapping). */
static bool check_coverage(P *p, Loc section) {
  const Cascade *c = p->c;
  const WeightMap *m = p->m;
  for (int t = 0; t < c->ntensors; t++) {
    if (!is_input(c, t))
      continue;
    int roles = 0;
    for (int i = 0; i < m->n; i++)
      roles += m->entries[i].tensor == t;
    bool stream = t == m->stream.hidden_in || t == m->stream.residual_in;
    bool state = weights_is_state(c, t);
    if (roles + stream + state > 1)
      return perr(p, section,
                  "%s is %s and %s: a tensor has one role", c->tensors[t].name,
                  roles ? "a mapped weight" : "a stream input",
                  state ? "a decode state" : "a stream input");
    if (roles + stream + state == 0 && is_read(c, t))
      return perr(p, section,
                  "input %s has no source: map it in weights.tensors (or "
                  "make it the layer's stream or a decode state)",
                  c->tensors[t].name);
  }
  return true;
}

WeightMap *weights_parse(const Spec *spec, Diag *d) {
  Cascade *c = spec->cascade;
  const YamlNode *w = spec_section(spec, "weights");
  if (!w) {
    diag_error(d, c->path, (Loc){0, 0},
               "no weights section: the spec does not say which checkpoint "
               "keys fill its weights (docs/spec-format.md, Weights)");
    return NULL;
  }
  WeightMap *m = xcalloc(1, sizeof *m);
  m->c = c;
  P p = {.c = c, .m = m, .d = d};
  static const char *const sections[] = {"layer", "tensors", "model",
                                         "stream", "state", NULL};
  bool ok = want(&p, w, YN_MAP, "weights") &&
            known_keys(&p, w, sections, "weights") &&
            parse_layer(&p, ydoc_get(w, "layer"), w->loc);
  const YamlNode *t = ok ? ydoc_get(w, "tensors") : NULL;
  ok = ok && parse_tensors(&p, t, w->loc) &&
       parse_model(&p, ydoc_get(w, "model"), w->loc) &&
       parse_stream(&p, ydoc_get(w, "stream")) &&
       parse_state(&p, ydoc_get(w, "state")) && check_coverage(&p, t->loc);
  if (!ok) {
    weights_free(m);
    return NULL;
  }
  return m;
}

void weights_free(WeightMap *m) {
  if (!m)
    return;
  arena_free(&m->arena);
  free(m);
}

LayerStream weights_stream(const WeightMap *m) { return m->stream; }

/* ---- loading ---- */

static void shape_text(Buf *b, const int64_t *shape, int n) {
  buf_printf(b, "[");
  for (int k = 0; k < n; k++)
    buf_printf(b, "%s%lld", k ? ", " : "", (long long)shape[k]);
  buf_printf(b, "]");
}

/* "(WTTX, mapped at specs/mamba1.yaml:80:5)": where a load error's
 * mapping was written. */
static void origin(Buf *b, const WeightMap *m, const char *tensor, Loc loc) {
  buf_printf(b, " (%s, mapped at %s:%d:%d)", tensor, m->c->path, loc.line,
             loc.col);
}

static bool eval_size(const Shape *s, const Expr *e, int64_t *out) {
  double v = shape_eval(s, e);
  if (!(v >= 0 && v <= 9e15 && v == floor(v)))
    return false;
  *out = (int64_t)v;
  return true;
}

/* Dimensions other than 1, for comparing a stored shape with a tensor's
 * ([D, 1, F] stores [D, F]). */
static int squeeze(const int64_t *shape, int n, int64_t *out) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (shape[i] != 1)
      out[k++] = shape[i];
  return k;
}

static void apply_fn(Array *a, WeightFn fn) {
  for (int64_t i = 0; i < a->n && fn != FN_NONE; i++) {
    float x = a->data[i];
    a->data[i] = fn == FN_NEG ? -x : fn == FN_EXP ? expf(x) : -expf(x);
  }
}

typedef struct Load {
  const WeightMap *m;
  const Shape *s;
  const Checkpoint *ck;
  const Entry *e;
  const char *key; /* the full key */
  Diag *d;
} Load;

static bool lerr(const Load *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool lerr(const Load *l, const char *fmt, ...) {
  Buf b = {0};
  va_list ap;
  va_start(ap, fmt);
  char msg[768];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  buf_printf(&b, "%s", msg);
  origin(&b, l->m, l->m->c->tensors[l->e->tensor].name, l->e->loc);
  diag_error(l->d, l->ck->path, (Loc){0, 0}, "%s", b.s);
  buf_free(&b);
  return false;
}

/* The rows [*lo, *hi) of SRC the entry selects. */
static bool select_rows(const Load *l, const Array *src, int64_t *lo,
                        int64_t *hi) {
  *lo = 0;
  *hi = src->ndim ? src->shape[0] : 1;
  if (!l->e->rows[0])
    return true;
  int64_t a, b;
  if (!eval_size(l->s, l->e->rows[0], &a) ||
      !eval_size(l->s, l->e->rows[1], &b) || a >= b) {
    diag_error(l->d, l->m->c->path, l->e->rows_loc,
               "rows must evaluate to [FIRST, END) with 0 <= FIRST < END");
    return false;
  }
  if (src->ndim == 0 || b > src->shape[0]) {
    Buf sh = {0};
    shape_text(&sh, src->shape, src->ndim);
    lerr(l, "%s has shape %s: rows [%lld, %lld) are out of range", l->key,
         sh.s, (long long)a, (long long)b);
    buf_free(&sh);
    return false;
  }
  *lo = a;
  *hi = b;
  return true;
}

/* Does the selected block (SHAPE, N dims) fit the tensor? With a shape
 * written in the entry it must be exactly that; else it must be the
 * tensor's shape up to dimensions of 1. */
static bool check_shape(const Load *l, const int64_t *shape, int n,
                        const int64_t *want, int nwant) {
  const Entry *e = l->e;
  Buf got = {0}, exp = {0};
  bool ok = true;
  if (e->nshape) {
    int64_t said[IR_MAX_RANKS];
    for (int k = 0; k < e->nshape; k++)
      if (!eval_size(l->s, e->shape[k], &said[k])) {
        diag_error(l->d, l->m->c->path, e->shape_loc,
                   "shape must evaluate to non-negative integers");
        return false;
      }
    ok = n == e->nshape && memcmp(shape, said, (size_t)n * sizeof *said) == 0;
    shape_text(&exp, said, e->nshape);
    /* Sizes come from the spec and the config: overflow-checked. */
    uint64_t count = 0, tcount = 0;
    bool counted = count_elements(e->nshape, said, INT64_MAX, &count) &&
                   count_elements(nwant, want, INT64_MAX, &tcount);
    if (ok && (!counted || count != tcount)) {
      Buf ts = {0};
      shape_text(&ts, want, nwant);
      if (!counted)
        diag_error(l->d, l->m->c->path, e->shape_loc,
                   "shape %s or %s's shape %s has too many elements (more "
                   "than 2^63)",
                   exp.s, l->m->c->tensors[e->tensor].name, ts.s);
      else
        diag_error(l->d, l->m->c->path, e->shape_loc,
                   "shape %s has %llu elements, but %s is %s (%llu)", exp.s,
                   (unsigned long long)count,
                   l->m->c->tensors[e->tensor].name, ts.s,
                   (unsigned long long)tcount);
      buf_free(&ts);
      buf_free(&exp);
      return false;
    }
  } else {
    int64_t a[IR_MAX_RANKS], b[IR_MAX_RANKS];
    int na = squeeze(shape, n, a), nb = squeeze(want, nwant, b);
    ok = na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
    shape_text(&exp, want, nwant);
  }
  if (!ok) {
    shape_text(&got, shape, n);
    lerr(l, "%s%s has shape %s, but the spec expects %s", l->key,
         e->rows[0] ? " (the rows selected)" : "", got.s, exp.s);
  }
  buf_free(&got);
  buf_free(&exp);
  return ok;
}

static Array *load_entry(const Load *l) {
  const Entry *e = l->e;
  const Tensor *T = &l->m->c->tensors[e->tensor];
  Array *src = l->ck->get(l->ck, l->key);
  if (!src) {
    lerr(l, "the checkpoint has no tensor %s", l->key);
    return NULL;
  }
  int64_t lo, hi, want[IR_MAX_RANKS], shape[IR_MAX_RANKS];
  for (int k = 0; k < T->nranks; k++)
    want[k] = l->s->size[T->ranks[k]];
  Array *dst = NULL;
  if (select_rows(l, src, &lo, &hi)) {
    int n = src->ndim ? src->ndim : 1;
    memcpy(shape, src->shape, sizeof shape);
    shape[0] = hi - lo;
    if (check_shape(l, shape, n, want, T->nranks)) {
      /* The rows as stored, where they lie when the checkpoint's values
       * outlive SRC (a mapped file); a map computes new fp32 values. */
      int64_t row = src->ndim && src->shape[0] ? src->n / src->shape[0] : 1;
      dst = array_part(src, lo * row, T->nranks, want);
      if (e->fn != FN_NONE) {
        Array *f = array_f32(dst);
        array_free(dst);
        dst = f;
        apply_fn(dst, e->fn);
      }
    }
  }
  array_free(src);
  return dst;
}

/* PREFIX with {i} replaced by LAYER. */
static void layer_key(const WeightMap *m, int layer, const char *rest,
                      Buf *out) {
  const char *at = strstr(m->layer, "{i}");
  buf_printf(out, "%.*s%d%s%s", (int)(at - m->layer), m->layer, layer, at + 3,
             rest);
}

bool weights_load_layer(const WeightMap *m, const Shape *s,
                        const Checkpoint *ck, int layer, Tensors *out,
                        Diag *d) {
  for (int i = 0; i < m->n; i++) {
    Buf key = {0};
    layer_key(m, layer, m->entries[i].key, &key);
    Load l = {.m = m, .s = s, .ck = ck, .e = &m->entries[i], .key = key.s,
              .d = d};
    Array *a = load_entry(&l);
    buf_free(&key);
    if (!a)
      return false;
    tensors_put(out, m->c->tensors[m->entries[i].tensor].name, a, true);
  }
  return true;
}

Array *weights_load_model(const WeightMap *m, const Checkpoint *ck,
                          const char *what, Diag *d) {
  const ModelEntry *me = NULL;
  for (int k = 0; k < 2; k++)
    if (strcmp(m->model[k].name, what) == 0)
      me = &m->model[k];
  if (!me) {
    diag_error(d, m->c->path, (Loc){0, 0}, "no model tensor '%s'", what);
    return NULL;
  }
  for (int k = 0; k < me->nkeys; k++) {
    Array *a = ck->get(ck, me->keys[k]);
    if (a)
      return a;
  }
  Buf b = {0};
  for (int k = 0; k < me->nkeys; k++)
    buf_printf(&b, "%s%s", k ? (k + 1 < me->nkeys ? ", " : " or ") : "",
               me->keys[k]);
  diag_error(d, ck->path, (Loc){0, 0},
             "the checkpoint has no %s%s (%s, mapped at %s:%d:%d)",
             me->nkeys > 1 ? "tensor of " : "tensor ", b.s, what, m->c->path,
             me->loc.line, me->loc.col);
  buf_free(&b);
  return NULL;
}

/* ---- the decode state under its reference names ---- */

static Array *export_time_last(const WeightMap *m, const StateOut *so,
                               const Tensors *state) {
  int64_t batch = 0, steps = 0, channels = 0;
  for (int k = 0; k < so->n; k++) {
    const Array *a = tensors_get(state, m->c->tensors[so->tensors[k]].name);
    if (!a)
      return NULL;
    batch = a->shape[0];
    steps = a->shape[1];
    int64_t bt = batch * steps;
    channels += bt ? a->n / bt : 0;
  }
  Array *out = array_new(3, (int64_t[]){batch, channels, steps});
  int64_t c0 = 0;
  for (int k = 0; k < so->n; k++) {
    const Array *a = tensors_get(state, m->c->tensors[so->tensors[k]].name);
    int64_t bt = batch * steps, ch = bt ? a->n / bt : 0;
    for (int64_t b = 0; b < batch; b++)
      for (int64_t t = 0; t < steps; t++)
        for (int64_t c = 0; c < ch; c++)
          out->data[(b * channels + c0 + c) * steps + t] =
              a->data[(b * steps + t) * ch + c];
    c0 += ch;
  }
  return out;
}

void weights_export_state(const WeightMap *m, const Tensors *state,
                          const char *prefix, Tensors *out) {
  for (int i = 0; i < m->nstate; i++) {
    const StateOut *so = &m->state[i];
    Array *a = NULL;
    if (so->time_last) {
      a = export_time_last(m, so, state);
    } else {
      const Array *src = tensors_get(state, m->c->tensors[so->tensors[0]].name);
      a = src ? array_clone(src) : NULL;
    }
    if (!a)
      continue;
    Buf name = {0};
    buf_printf(&name, "%s%s", prefix, so->name);
    tensors_put(out, name.s, a, true);
    buf_free(&name);
  }
}

/* ---- checkpoints ---- */

static Array *file_get(const Checkpoint *ck, const char *key) {
  const StFile *f = ck->src;
  const StEntry *e = st_find(f, key);
  return e ? st_tensor(f, e) : NULL;
}

Checkpoint checkpoint_of_file(const StFile *f) {
  return (Checkpoint){.path = f->path, .get = file_get, .src = f};
}

static Array *tensors_src_get(const Checkpoint *ck, const char *key) {
  const Array *a = tensors_get(ck->src, key);
  return a ? array_clone(a) : NULL;
}

Checkpoint checkpoint_of_tensors(const Tensors *t, const char *name) {
  return (Checkpoint){.path = name, .get = tensors_src_get, .src = t};
}
