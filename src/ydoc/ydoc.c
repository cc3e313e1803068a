#include "ydoc.h"

#include <limits.h>
#include <string.h>
#include <yaml.h>

enum { MAX_DEPTH = 64 };

/* A node under construction: its children grow on the heap and are copied
 * into the arena when the node closes. A mapping's keys are also in a
 * hash table (open addressing, key index + 1 per slot), so that checking
 * for duplicates costs O(1) a key: a 50 000-key mapping loads in
 * milliseconds, not the seconds a pairwise check takes. */
typedef struct Frame {
  YamlNode *node;
  YamlNode **items, **keys;
  int n, cap, nkeys, kcap;
  int *slots;
  size_t nslots; /* 0 or a power of two, at least twice nkeys */
} Frame;

typedef struct Builder {
  YamlDoc *doc;
  Diag *diag;
  size_t *line_start; /* byte offset of each line's start */
  int nlines;
  Frame stack[MAX_DEPTH];
  int depth;
  /* The last mark converted (its line and column) and its byte offset:
   * marks come in order, so each conversion walks on from the last
   * rather than from its line's start (a 500 KB line of flow mapping was
   * quadratic). */
  size_t at_line, at_col, at_byte;
  bool local_tags; /* ydoc_parse_tagged: keep `!Name` tags on nodes */
  const char *tag; /* the tag of the node being made, or NULL */
} Builder;

static void index_lines(Builder *b) {
  int cap = 64;
  b->line_start = xmalloc((size_t)cap * sizeof *b->line_start);
  b->nlines = 0;
  b->line_start[b->nlines++] = 0;
  for (size_t i = 0; i < b->doc->len; i++) {
    if (b->doc->src[i] == '\n') {
      if (b->nlines == cap) {
        cap *= 2;
        b->line_start =
            xrealloc(b->line_start, (size_t)cap * sizeof *b->line_start);
      }
      b->line_start[b->nlines++] = i + 1;
    }
  }
}

/* libyaml counts columns in characters; the source is UTF-8 bytes. */
static size_t byte_offset(Builder *b, yaml_mark_t m) {
  if (m.line >= (size_t)b->nlines)
    return b->doc->len;
  size_t p = b->line_start[m.line], c = 0;
  if (m.line == b->at_line && m.column >= b->at_col && b->at_byte >= p) {
    p = b->at_byte;
    c = b->at_col;
  }
  for (; c < m.column && p < b->doc->len; c++) {
    p++;
    while (p < b->doc->len && ((unsigned char)b->doc->src[p] & 0xC0) == 0x80)
      p++;
  }
  b->at_line = m.line;
  b->at_col = m.column;
  b->at_byte = p;
  return p;
}

static Loc mark_loc(yaml_mark_t m) {
  return (Loc){(int)m.line + 1, (int)m.column + 1};
}

static YamlNode *new_node(Builder *b, YamlKind kind, yaml_mark_t m) {
  YamlNode *n = arena_alloc(&b->doc->arena, sizeof *n);
  n->doc = b->doc;
  n->kind = kind;
  n->loc = mark_loc(m);
  n->offset = byte_offset(b, m);
  n->tag = b->tag ? arena_strdup(&b->doc->arena, b->tag) : NULL;
  return n;
}

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The slot where KEY is, or the empty one where it would go. */
static size_t find_slot(const Frame *f, const char *key) {
  size_t mask = f->nslots - 1, i = (size_t)hash(key) & mask;
  while (f->slots[i] && strcmp(f->keys[f->slots[i] - 1]->text, key) != 0)
    i = (i + 1) & mask;
  return i;
}

/* Make room for one more key, rehashing into a table twice as large. */
static void grow_slots(Frame *f) {
  if (2 * ((size_t)f->nkeys + 1) <= f->nslots)
    return;
  size_t n = f->nslots ? 2 * f->nslots : 16;
  free(f->slots);
  f->slots = xcalloc(n, sizeof *f->slots);
  f->nslots = n;
  for (int k = 0; k < f->nkeys; k++)
    f->slots[find_slot(f, f->keys[k]->text)] = k + 1;
}

static bool fail(Builder *b, Loc loc, const char *msg) {
  diag_error(b->diag, b->doc->path, loc, "%s", msg);
  return false;
}

/* Attach a finished node to its parent (or make it the root). */
static bool attach(Builder *b, YamlNode *node) {
  if (b->depth == 0) {
    b->doc->root = node;
    return true;
  }
  Frame *f = &b->stack[b->depth - 1];
  if (f->node->kind == YN_MAP && f->nkeys == f->n) {
    /* This node is a key. */
    if (node->kind != YN_SCALAR)
      return fail(b, node->loc, "mapping keys must be plain scalars");
    grow_slots(f);
    size_t slot = find_slot(f, node->text);
    if (f->slots[slot]) {
      char msg[600];
      snprintf(msg, sizeof msg,
               "duplicate key '%.200s' (first given at line %d)", node->text,
               f->keys[f->slots[slot] - 1]->loc.line);
      return fail(b, node->loc, msg);
    }
    VEC_PUSH(f->keys, f->nkeys, f->kcap, node);
    f->slots[slot] = f->nkeys;
    return true;
  }
  VEC_PUSH(f->items, f->n, f->cap, node);
  return true;
}

static bool open_frame(Builder *b, YamlNode *node) {
  if (b->depth == MAX_DEPTH)
    return fail(b, node->loc, "nesting deeper than 64 levels");
  b->stack[b->depth++] = (Frame){.node = node};
  return true;
}

static bool close_frame(Builder *b) {
  Frame *f = &b->stack[--b->depth];
  YamlNode *node = f->node;
  node->n = f->n;
  size_t sz = (size_t)f->n * sizeof(YamlNode *);
  node->items = arena_alloc(&b->doc->arena, sz);
  if (f->n)
    memcpy(node->items, f->items, sz);
  if (node->kind == YN_MAP) {
    node->keys = arena_alloc(&b->doc->arena, sz);
    if (f->n)
      memcpy(node->keys, f->keys, sz);
  }
  free(f->items);
  free(f->keys);
  free(f->slots);
  return attach(b, node);
}

/* Only the core schema's own tags (as written by `!!str` and the like)
 * pass: a spec is plain data. A local tag (`!Memory`) passes where the
 * caller asked for them, and is kept on the node. */
static bool check_tag(Builder *b, const yaml_char_t *tag, yaml_mark_t m) {
  b->tag = NULL;
  if (!tag || strncmp((const char *)tag, "tag:yaml.org,2002:", 18) == 0)
    return true;
  if (b->local_tags && tag[0] == '!' && tag[1] && tag[1] != '!') {
    b->tag = (const char *)tag;
    return true;
  }
  diag_error(b->diag, b->doc->path, mark_loc(m),
             "YAML tag '%s' is not supported: specs are plain data",
             (const char *)tag);
  return false;
}

static bool handle(Builder *b, yaml_event_t *ev, int *docs) {
  const yaml_char_t *tag = ev->type == YAML_SCALAR_EVENT
                               ? ev->data.scalar.tag
                           : ev->type == YAML_SEQUENCE_START_EVENT
                               ? ev->data.sequence_start.tag
                           : ev->type == YAML_MAPPING_START_EVENT
                               ? ev->data.mapping_start.tag
                               : NULL;
  if (!check_tag(b, tag, ev->start_mark))
    return false;
  switch (ev->type) {
  case YAML_DOCUMENT_START_EVENT:
    if (++*docs > 1)
      return fail(b, mark_loc(ev->start_mark),
                  "only one YAML document is allowed per file");
    return true;
  case YAML_ALIAS_EVENT:
    diag_error(b->diag, b->doc->path, mark_loc(ev->start_mark),
               "YAML alias '*%s' is not supported: write the value out",
               (const char *)ev->data.alias.anchor);
    return false;
  case YAML_SCALAR_EVENT: {
    YamlNode *n = new_node(b, YN_SCALAR, ev->start_mark);
    n->text = arena_strndup(&b->doc->arena, (const char *)ev->data.scalar.value,
                            ev->data.scalar.length);
    if (strlen(n->text) != ev->data.scalar.length)
      return fail(b, n->loc, "scalar contains a NUL character");
    n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    return attach(b, n);
  }
  case YAML_SEQUENCE_START_EVENT:
    return open_frame(b, new_node(b, YN_SEQ, ev->start_mark));
  case YAML_MAPPING_START_EVENT:
    return open_frame(b, new_node(b, YN_MAP, ev->start_mark));
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    return close_frame(b);
  default:
    return true;
  }
}

static YamlDoc *parse(const char *path, const char *text, size_t len,
                      bool local_tags, Diag *diag) {
  YamlDoc *doc = xcalloc(1, sizeof *doc);
  doc->path = arena_strdup(&doc->arena, path);
  doc->src = xmalloc(len + 1);
  memcpy(doc->src, text, len);
  doc->src[len] = 0;
  doc->len = len;

  Builder b = {.doc = doc, .diag = diag, .local_tags = local_tags};
  index_lines(&b);

  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_string(&parser, (const unsigned char *)doc->src, len);
  bool ok = true, done = false;
  int docs = 0;
  while (ok && !done) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      /* A construct left open at the end of the file (an unterminated
       * quote) is best shown where it started. */
      bool at_end = parser.problem && strstr(parser.problem, "end of stream");
      Loc loc = mark_loc(parser.context && at_end ? parser.context_mark
                                                  : parser.problem_mark);
      if (parser.context)
        diag_error(diag, path, loc, "YAML syntax error: %s %s",
                   parser.problem ? parser.problem : "unknown problem",
                   parser.context);
      else
        diag_error(diag, path, loc, "YAML syntax error: %s",
                   parser.problem ? parser.problem : "unknown problem");
      ok = false;
      break;
    }
    done = ev.type == YAML_STREAM_END_EVENT;
    ok = handle(&b, &ev, &docs);
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&parser);
  while (b.depth > 0) {
    Frame *f = &b.stack[--b.depth];
    free(f->items);
    free(f->keys);
    free(f->slots);
  }
  free(b.line_start);
  if (!ok) {
    ydoc_free(doc);
    return NULL;
  }
  return doc;
}

YamlDoc *ydoc_parse(const char *path, const char *text, size_t len,
                    Diag *diag) {
  return parse(path, text, len, false, diag);
}

YamlDoc *ydoc_parse_tagged(const char *path, const char *text, size_t len,
                           Diag *diag) {
  return parse(path, text, len, true, diag);
}

INPUT_LOADER(YamlDoc, ydoc_load, ydoc_parse)

void ydoc_free(YamlDoc *doc) {
  if (!doc)
    return;
  free(doc->src);
  arena_free(&doc->arena);
  free(doc);
}

YamlNode *ydoc_get(const YamlNode *map, const char *key) {
  if (!map || map->kind != YN_MAP)
    return NULL;
  for (int i = 0; i < map->n; i++)
    if (strcmp(map->keys[i]->text, key) == 0)
      return map->items[i];
  return NULL;
}

void ydoc_set(YamlDoc *doc, YamlNode *map, const YamlNode *key,
              YamlNode *value) {
  for (int i = 0; i < map->n; i++)
    if (strcmp(map->keys[i]->text, key->text) == 0) {
      map->items[i] = value;
      return;
    }
  size_t sz = ((size_t)map->n + 1) * sizeof(YamlNode *);
  YamlNode **items = arena_alloc(&doc->arena, sz),
           **keys = arena_alloc(&doc->arena, sz);
  if (map->n) {
    memcpy(items, map->items, sz - sizeof(YamlNode *));
    memcpy(keys, map->keys, sz - sizeof(YamlNode *));
  }
  items[map->n] = value;
  keys[map->n] = (YamlNode *)key;
  map->items = items;
  map->keys = keys;
  map->n++;
}

const char *ydoc_kind_name(YamlKind k) {
  switch (k) {
  case YN_SCALAR:
    return "a scalar";
  case YN_SEQ:
    return "a list";
  case YN_MAP:
    return "a mapping";
  }
  return "?";
}

/* Walk the raw source beside the scalar's value: characters that match
 * advance both; whatever the value lacks (quotes, the indentation and line
 * breaks of folded lines, escapes) advances the source alone. A cursor
 * resumes a walk where the last one stopped, so that locating every token
 * of a long expression in order costs one pass. */
Loc ydoc_scalar_loc_at(const YamlNode *s, YamlCursor *cur, size_t offset) {
  const YamlDoc *doc = s->doc;
  YamlCursor local = {0};
  if (!cur)
    cur = &local;
  const char *v = s->text, *src = doc->src;
  size_t vlen = strlen(v);
  if (offset > vlen)
    offset = vlen;
  if (cur->node != s || cur->voff > offset) {
    cur->node = s;
    cur->voff = 0;
    cur->soff = s->offset;
    cur->loc = s->loc;
    if (s->quoted && cur->soff < doc->len &&
        (src[cur->soff] == '"' || src[cur->soff] == '\'')) {
      cur->soff++;
      cur->loc.col++;
    }
  }
  for (;;) {
    if (cur->voff >= vlen) /* past the value's end: where the walk stands */
      return cur->loc;
    /* Find the source character that holds v[voff] (a bounded search). */
    size_t q = cur->soff;
    Loc ql = cur->loc;
    int guard = 0;
    while (q < doc->len && src[q] != v[cur->voff] && guard < 256) {
      if (src[q] == '\n') {
        ql.line++;
        ql.col = 1;
      } else if (((unsigned char)src[q] & 0xC0) != 0x80) {
        ql.col++;
      }
      q++;
      guard++;
    }
    if (q >= doc->len || guard == 256)
      return cur->loc; /* lost track: the best position known */
    if (cur->voff == offset)
      return ql;
    cur->voff++;
    cur->soff = q + 1;
    cur->loc = ql;
    if (src[q] == '\n') {
      cur->loc.line++;
      cur->loc.col = 1;
    } else {
      cur->loc.col++;
    }
  }
}

/* ---- checking a document ---- */

static const char *path_of(const YamlNode *n) {
  return n && n->doc ? n->doc->path : "";
}

void ydoc_join(Buf *b, const char *const *names, int n) {
  int count = 0;
  while (count < n && names[count])
    count++;
  for (int i = 0; i < count; i++)
    buf_printf(b, "%s%s", i == 0 ? "" : i == count - 1 ? " or " : ", ",
               names[i]);
}

bool ydoc_want(const YamlNode *n, YamlKind k, const char *what, Diag *d) {
  if (n && n->kind == k)
    return true;
  diag_error(d, path_of(n), n ? n->loc : (Loc){1, 1},
             "expected %s for %s, found %s", ydoc_kind_name(k), what,
             n ? ydoc_kind_name(n->kind) : "nothing");
  return false;
}

bool ydoc_known_keys(const YamlNode *map, const char *const *allowed,
                     const char *where, Diag *d) {
  for (int i = 0; i < map->n; i++) {
    const char *k = map->keys[i]->text;
    bool known = false;
    for (int j = 0; allowed[j] && !known; j++)
      known = strcmp(k, allowed[j]) == 0;
    if (!known) {
      Buf b = {0};
      buf_did_you_mean_of(&b, k, allowed, INT_MAX);
      buf_printf(&b, "expected ");
      ydoc_join(&b, allowed, INT_MAX);
      diag_error(d, path_of(map), map->keys[i]->loc,
                 "unknown key '%s' in %s (%s)", k, where, b.s);
      buf_free(&b);
      return false;
    }
  }
  return true;
}

const YamlNode *ydoc_need(const YamlNode *map, const char *key, Loc at,
                          const char *where, const char *hint, Diag *d) {
  const YamlNode *v = ydoc_get(map, key);
  if (!v)
    diag_error(d, path_of(map), at, "%s is missing '%s' (%s)", where, key,
               hint);
  return v;
}

int ydoc_enum(const YamlNode *n, const char *const *names, int count,
              const char *what, Diag *d) {
  if (!ydoc_want(n, YN_SCALAR, what, d))
    return -1;
  for (int i = 0; i < count; i++)
    if (names[i] && strcmp(names[i], n->text) == 0)
      return i;
  Buf b = {0};
  buf_did_you_mean_of(&b, n->text, names, count);
  buf_printf(&b, "expected ");
  ydoc_join(&b, names, count);
  diag_error(d, path_of(n), n->loc, "unknown %s '%s' (%s)", what, n->text,
             b.s);
  buf_free(&b);
  return -1;
}
