/* tokenizer.c — text to token ids and back: the byte-level BPE of a
 * Hugging Face tokenizer.json (GPT-2, GPT-NeoX: what Mamba checkpoints
 * carry).
 *
 *   text ── added tokens ("<|endoftext|>") split out: each is its own id,
 *           the leftmost match first, the longest at a position
 *        ── the rest pre-tokenized by the GPT-2 pattern
 *             's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
 *             |\s+(?!\S)|\s+
 *        ── each piece's UTF-8 bytes merged pair by pair: the pair of
 *           lowest rank first (all its occurrences, left to right), until
 *           no adjacent pair is a merge
 *        ── each merged symbol's id from the vocabulary.
 *
 * The file's strings are in the byte-level alphabet (each of the 256 bytes
 * a printable character: "Ġ" is the space byte); they become bytes again
 * at load, so encoding works on bytes and decoding is a lookup.
 *
 * What is read of tokenizer.json: model (type BPE: vocab, and merges as
 * "a b" strings or ["a", "b"] pairs), added_tokens, normalizer (null, or
 * NFC taken as the identity: text is expected in NFC already, as typed
 * text is; a decomposed accent is not recomposed), pre_tokenizer
 * (ByteLevel, add_prefix_space false, use_regex true) and decoder
 * (ByteLevel or null). Anything else is refused with a message. */
#include "lm.h"

#include "unicode_classes.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- byte strings and a hash map of them ---- */

typedef struct Bytes {
  const unsigned char *p;
  int len;
} Bytes;

typedef struct Slot {
  uint64_t hash;
  Bytes key;
  int value;
  bool used;
} Slot;

/* Open addressing, at most half full. */
typedef struct Map {
  Slot *slots;
  int cap, n;
} Map;

static uint64_t hash_bytes(const unsigned char *p, int len, uint64_t h) {
  for (int i = 0; i < len; i++)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

static const uint64_t fnv_basis = 0xcbf29ce484222325ULL;

static Slot *map_slot(const Map *m, Bytes k, uint64_t h) {
  for (int i = (int)(h & (uint64_t)(m->cap - 1));; i = (i + 1) & (m->cap - 1)) {
    Slot *s = &m->slots[i];
    if (!s->used || (s->hash == h && s->key.len == k.len &&
                     memcmp(s->key.p, k.p, (size_t)k.len) == 0))
      return s;
  }
}

/* Insert K -> V unless K is there; false if it was. */
static bool map_put(Map *m, Bytes k, int v) {
  if (2 * (m->n + 1) > m->cap) {
    Map bigger = {.cap = m->cap ? 2 * m->cap : 1024};
    bigger.slots = xcalloc((size_t)bigger.cap, sizeof *bigger.slots);
    for (int i = 0; i < m->cap; i++)
      if (m->slots[i].used)
        *map_slot(&bigger, m->slots[i].key, m->slots[i].hash) = m->slots[i];
    bigger.n = m->n;
    free(m->slots);
    *m = bigger;
  }
  uint64_t h = hash_bytes(k.p, k.len, fnv_basis);
  Slot *s = map_slot(m, k, h);
  if (s->used)
    return false;
  *s = (Slot){.hash = h, .key = k, .value = v, .used = true};
  m->n++;
  return true;
}

static int map_get(const Map *m, Bytes k, uint64_t h) {
  if (!m->cap)
    return -1;
  const Slot *s = map_slot(m, k, h);
  return s->used ? s->value : -1;
}

/* ---- the tokenizer ---- */

typedef struct Added {
  Bytes text;
  int id;
} Added;

struct Tokenizer {
  Arena arena;
  Map vocab;  /* bytes -> id */
  Map merges; /* pair key -> rank */
  Bytes *text; /* per id: what it stands for (len -1: no such id) */
  int size;
  Added *added; /* longest first */
  int nadded;
};

int tokenizer_size(const Tokenizer *t) { return t->size; }

const char *tokenizer_token(const Tokenizer *t, int id, int *len) {
  if (id < 0 || id >= t->size || t->text[id].len < 0)
    return NULL;
  *len = t->text[id].len;
  return (const char *)t->text[id].p;
}

void tokenizer_free(Tokenizer *t) {
  if (!t)
    return;
  free(t->vocab.slots);
  free(t->merges.slots);
  free(t->text);
  free(t->added);
  arena_free(&t->arena);
  free(t);
}

/* ---- UTF-8 ---- */

/* The code point at S[*I] (advancing *I), or -1 if the bytes there are
 * not well-formed UTF-8 (overlong forms and surrogates included). */
static int32_t utf8_next(const unsigned char *s, size_t n, size_t *i) {
  unsigned c = s[*i];
  int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                         : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (!len || *i + (size_t)len > n)
    return -1;
  uint32_t cp = len == 1 ? c : c & (0x7fu >> len);
  for (int k = 1; k < len; k++) {
    unsigned b = s[*i + (size_t)k];
    if ((b & 0xc0) != 0x80)
      return -1;
    cp = cp << 6 | (b & 0x3f);
  }
  static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return -1;
  *i += (size_t)len;
  return (int32_t)cp;
}

/* A merge's key (in KEY, room for both symbols and 2 bytes): the left
 * symbol's length, then both symbols' bytes. */
static Bytes pair_key(Bytes a, Bytes b, unsigned char *key) {
  key[0] = (unsigned char)(a.len & 0xff);
  key[1] = (unsigned char)(a.len >> 8);
  memcpy(key + 2, a.p, (size_t)a.len);
  memcpy(key + 2 + a.len, b.p, (size_t)b.len);
  return (Bytes){key, a.len + b.len + 2};
}

/* ---- loading ---- */

/* The byte-level alphabet: byte b is the character b itself when
 * printable ('!'..'~', '¡'..'¬', '®'..'ÿ'), else U+0100 + its rank among
 * the others (GPT-2's bytes_to_unicode). */
enum { ALPHABET_END = 256 + 68 }; /* 68 bytes are not printable */

typedef struct Loader {
  const char *path;
  size_t file_len; /* ids are below it: a file of N bytes names fewer */
  Diag *d;
  Tokenizer *t;
  int16_t byte_of[ALPHABET_END]; /* per character: its byte, or -1 */
} Loader;

static void alphabet_init(Loader *l) {
  int other = 0;
  for (int c = 0; c < ALPHABET_END; c++)
    l->byte_of[c] = -1;
  for (int b = 0; b < 256; b++) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) ||
                     (b >= 0xae && b <= 0xff);
    l->byte_of[printable ? b : 256 + other++] = (int16_t)b;
  }
}

/* A string of the byte-level alphabet as the bytes it stands for, in the
 * arena; false if a character is not of the alphabet. */
static bool alphabet_bytes(const Loader *l, const char *s, Bytes *out) {
  size_t n = strlen(s), i = 0;
  unsigned char *p = arena_alloc(&l->t->arena, n + 1);
  int len = 0;
  while (i < n) {
    int32_t cp = utf8_next((const unsigned char *)s, n, &i);
    int b = cp >= 0 && cp < ALPHABET_END ? l->byte_of[cp] : -1;
    if (b < 0)
      return false;
    p[len++] = (unsigned char)b;
  }
  *out = (Bytes){p, len};
  return true;
}

#define lfail(l, ...) diag_fail((l)->d, (l)->path, (Loc){0, 0}, __VA_ARGS__)

/* OBJ.KEY's "type" is one of ALLOWED (NULL-terminated; "null" allows the
 * key to be absent or null). */
static bool check_type(const Loader *l, const json_t *obj, const char *key,
                       const char *const *allowed, const char *what) {
  const json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v)) {
    for (int i = 0; allowed[i]; i++)
      if (strcmp(allowed[i], "null") == 0)
        return true;
    return lfail(l, "%s: missing (this reader takes %s)", key, what);
  }
  const char *type = json_string_value(json_object_get(v, "type"));
  for (int i = 0; type && allowed[i]; i++)
    if (strcmp(allowed[i], type) == 0)
      return true;
  return lfail(l, "%s of type %s is not supported (this reader takes %s)",
               key, type ? type : "(none)", what);
}

/* Ids number the tokens a file lists, each in a few bytes of it: an id
 * past the file's size leaves most of its table empty, and would have a
 * 143-byte file ask for gigabytes. */
static bool id_fits(const Loader *l, json_int_t id, const char *where,
                    const char *token) {
  if ((uint64_t)id < l->file_len && id < INT_MAX / 2)
    return true;
  return lfail(l, "%s: the id of '%s' is %" JSON_INTEGER_FORMAT ", past what "
                  "a file of %zu bytes can number (ids are below its size)",
               where, token, id, l->file_len);
}

static bool load_vocab(const Loader *l, const json_t *vocab) {
  Tokenizer *t = l->t;
  if (!json_is_object(vocab))
    return lfail(l, "model.vocab must be an object {token: id}");
  const char *key;
  json_t *v;
  int max = -1;
  json_object_foreach((json_t *)vocab, key, v) {
    json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
    if (id < 0)
      return lfail(l, "model.vocab: the id of '%s' is not a non-negative "
                      "integer",
                   key);
    if (!id_fits(l, id, "model.vocab", key))
      return false;
    max = id > max ? (int)id : max;
  }
  t->size = max + 1;
  t->text = xmalloc(((size_t)t->size + 1) * sizeof *t->text);
  for (int i = 0; i < t->size; i++)
    t->text[i] = (Bytes){NULL, -1};
  json_object_foreach((json_t *)vocab, key, v) {
    Bytes b;
    int id = (int)json_integer_value(v);
    if (!alphabet_bytes(l, key, &b))
      return lfail(l, "model.vocab: '%s' is not in the byte-level alphabet "
                      "(not a byte-level BPE tokenizer?)",
                   key);
    if (t->text[id].len >= 0)
      return lfail(l, "model.vocab: id %d is given twice", id);
    if (!map_put(&t->vocab, b, id))
      return lfail(l, "model.vocab: '%s' is given twice", key);
    t->text[id] = b;
  }
  return true;
}

/* One merge, "a b" or ["a", "b"], into its two symbols. */
static bool merge_parts(const Loader *l, const json_t *m, int rank, Bytes *a,
                        Bytes *b) {
  const char *left = NULL, *right = NULL;
  char *copy = NULL;
  if (json_is_string(m)) {
    copy = xstrdup(json_string_value(m));
    char *sp = strchr(copy, ' ');
    if (sp && !strchr(sp + 1, ' ')) {
      *sp = 0;
      left = copy;
      right = sp + 1;
    }
  } else if (json_is_array(m) && json_array_size(m) == 2) {
    left = json_string_value(json_array_get(m, 0));
    right = json_string_value(json_array_get(m, 1));
  }
  bool ok = left && right && *left && *right && alphabet_bytes(l, left, a) &&
            alphabet_bytes(l, right, b);
  free(copy);
  if (!ok)
    return lfail(l, "model.merges[%d]: expected \"a b\" or [\"a\", \"b\"] "
                    "of byte-level symbols",
                 rank);
  return true;
}

static bool load_merges(const Loader *l, const json_t *merges) {
  Tokenizer *t = l->t;
  if (!json_is_array(merges))
    return lfail(l, "model.merges must be an array");
  for (size_t r = 0; r < json_array_size(merges); r++) {
    Bytes a, b;
    if (!merge_parts(l, json_array_get(merges, r), (int)r, &a, &b))
      return false;
    unsigned char *key = arena_alloc(&t->arena, (size_t)(a.len + b.len) + 2);
    /* A repeated merge keeps its first (lowest) rank. */
    map_put(&t->merges, pair_key(a, b, key), (int)r);
  }
  return true;
}

static int by_length(const void *pa, const void *pb) {
  const Added *a = pa, *b = pb;
  return b->text.len - a->text.len;
}

static bool load_added(const Loader *l, const json_t *added) {
  Tokenizer *t = l->t;
  if (!added || json_is_null(added))
    return true;
  if (!json_is_array(added))
    return lfail(l, "added_tokens must be an array");
  size_t n = json_array_size(added);
  t->added = xcalloc(n + 1, sizeof *t->added);
  for (size_t i = 0; i < n; i++) {
    const json_t *a = json_array_get(added, i);
    const char *content = json_string_value(json_object_get(a, "content"));
    const json_t *idv = json_object_get(a, "id");
    json_int_t id = json_is_integer(idv) ? json_integer_value(idv) : -1;
    if (!content || !*content || id < 0)
      return lfail(l, "added_tokens[%zu] needs a content and an id", i);
    if (!id_fits(l, id, "added_tokens", content))
      return false;
    size_t len = strlen(content), at = 0;
    while (at < len && utf8_next((const unsigned char *)content, len, &at) >= 0)
      ;
    if (at < len)
      return lfail(l, "added_tokens[%zu]: content is not valid UTF-8", i);
    Bytes b = {(const unsigned char *)arena_strdup(&t->arena, content),
               (int)len};
    if (id >= t->size) { /* beyond the model's vocabulary */
      t->text = xrealloc(t->text, ((size_t)id + 2) * sizeof *t->text);
      for (int k = t->size; k <= id; k++)
        t->text[k] = (Bytes){NULL, -1};
      t->size = (int)id + 1;
    }
    t->text[id] = b;
    t->added[t->nadded++] = (Added){b, (int)id};
  }
  qsort(t->added, (size_t)t->nadded, sizeof *t->added, by_length);
  return true;
}

static bool load_pre_tokenizer(const Loader *l, const json_t *root) {
  static const char *const byte_level[] = {"ByteLevel", NULL};
  if (!check_type(l, root, "pre_tokenizer", byte_level,
                  "ByteLevel, the byte-level BPE of GPT-2 and GPT-NeoX"))
    return false;
  const json_t *p = json_object_get(root, "pre_tokenizer");
  const json_t *prefix = json_object_get(p, "add_prefix_space");
  const json_t *regex = json_object_get(p, "use_regex");
  if (prefix && json_is_true(prefix))
    return lfail(l, "pre_tokenizer: add_prefix_space true is not supported "
                    "(GPT-NeoX has false)");
  if (regex && json_is_false(regex))
    return lfail(l, "pre_tokenizer: use_regex false is not supported");
  return true;
}

static bool load(Loader *l, const json_t *root) {
  static const char *const bpe[] = {"BPE", NULL};
  static const char *const normalizers[] = {"null", "NFC", NULL};
  static const char *const decoders[] = {"null", "ByteLevel", NULL};
  if (!json_is_object(root))
    return lfail(l, "not a tokenizer.json: expected a JSON object");
  if (!check_type(l, root, "model", bpe, "BPE") ||
      !check_type(l, root, "normalizer", normalizers, "null or NFC") ||
      !check_type(l, root, "decoder", decoders, "null or ByteLevel") ||
      !load_pre_tokenizer(l, root))
    return false;
  const json_t *model = json_object_get(root, "model");
  return load_vocab(l, json_object_get(model, "vocab")) &&
         load_merges(l, json_object_get(model, "merges")) &&
         load_added(l, json_object_get(root, "added_tokens"));
}

INPUT_LOADER(Tokenizer, tokenizer_load, tokenizer_parse)

Tokenizer *tokenizer_parse(const char *path, const char *text, size_t len,
                           Diag *d) {
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  if (!root) {
    diag_error(d, path, (Loc){err.line > 0 ? err.line : 0,
                              err.column > 0 ? err.column : 0},
               "%s", err.text);
    return NULL;
  }
  Tokenizer *t = xcalloc(1, sizeof *t);
  Loader l = {.path = path, .file_len = len, .d = d, .t = t};
  alphabet_init(&l);
  bool ok = load(&l, root);
  json_decref(root);
  if (!ok) {
    tokenizer_free(t);
    return NULL;
  }
  return t;
}

/* ---- pre-tokenizing ---- */

static bool in_ranges(const uint32_t (*r)[2], int n, int32_t cp) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if ((uint32_t)cp < r[mid][0])
      hi = mid - 1;
    else if ((uint32_t)cp > r[mid][1])
      lo = mid + 1;
    else
      return true;
  }
  return false;
}

/* Unicode's White_Space: \s of the pattern. */
static bool is_space(int32_t c) {
  return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
         c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

typedef enum { C_LETTER, C_NUMBER, C_SPACE, C_OTHER } Class;

static Class class_of(int32_t c) {
  enum {
    NL = sizeof letter_ranges / sizeof letter_ranges[0],
    NN = sizeof number_ranges / sizeof number_ranges[0]
  };
  if (is_space(c))
    return C_SPACE;
  if (in_ranges(letter_ranges, NL, c))
    return C_LETTER;
  if (in_ranges(number_ranges, NN, c))
    return C_NUMBER;
  return C_OTHER;
}

/* How many code points from I the pattern's match at I takes (CP: the
 * text's code points, CL their classes, N of them). */
static int piece_at(const int32_t *cp, const Class *cl, int n, int i) {
  /* 's 't 're 've 'm 'll 'd */
  if (cp[i] == '\'' && i + 1 < n) {
    int32_t a = cp[i + 1], b = i + 2 < n ? cp[i + 2] : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
      return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') ||
        (a == 'l' && b == 'l'))
      return 3;
  }
  /* ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': one class, from the
   * character after an optional space */
  int j = cp[i] == ' ' && i + 1 < n ? i + 1 : i;
  if (cl[j] != C_SPACE) {
    int k = j + 1;
    while (k < n && cl[k] == cl[j])
      k++;
    return k - i;
  }
  /* '\s+(?!\S)': a run of white space, less its last character when a
   * non-space follows; '\s+': a single one before a non-space */
  int k = i + 1;
  while (k < n && cl[k] == C_SPACE)
    k++;
  return k < n && k - i > 1 ? k - i - 1 : k - i;
}

/* ---- merging ---- */

static int rank_of(const Tokenizer *t, Bytes a, Bytes b) {
  unsigned char buf[512];
  int len = a.len + b.len + 2;
  unsigned char *mem = len <= (int)sizeof buf ? buf : xmalloc((size_t)len);
  Bytes k = pair_key(a, b, mem);
  int r = map_get(&t->merges, k, hash_bytes(k.p, k.len, fnv_basis));
  if (mem != buf)
    free(mem);
  return r < 0 ? INT_MAX : r;
}

typedef struct Ids {
  int *v;
  int n, cap;
} Ids;

/* The piece P (its bytes) merged, and its symbols' ids appended to OUT.
 * Symbols are runs of P: merging two joins neighbouring runs. RANK[i] is
 * the rank of symbols i and i + 1 as a pair, kept up to date. */
static bool merge_piece(const Tokenizer *t, Bytes p, Ids *out, Diag *d) {
  int n = p.len;
  int *start = xmalloc(((size_t)n + 1) * sizeof *start);
  int *len = xmalloc(((size_t)n + 1) * sizeof *len);
  int *rank = xmalloc(((size_t)n + 1) * sizeof *rank);
  for (int i = 0; i < n; i++) {
    start[i] = i;
    len[i] = 1;
  }
#define SYM(i) ((Bytes){p.p + start[i], len[i]})
  for (int i = 0; i + 1 < n; i++)
    rank[i] = rank_of(t, SYM(i), SYM(i + 1));
  for (;;) {
    int best = INT_MAX;
    for (int i = 0; i + 1 < n; i++)
      best = rank[i] < best ? rank[i] : best;
    if (best == INT_MAX)
      break;
    /* Every pair of that rank, left to right: a merged symbol is not
     * merged again in this pass. */
    int m = 0;
    for (int i = 0; i < n; i++) {
      start[m] = start[i];
      len[m] = len[i];
      if (i + 1 < n && rank[i] == best) {
        len[m] += len[i + 1];
        i++;
      }
      m++;
    }
    n = m;
    for (int i = 0; i + 1 < n; i++)
      rank[i] = rank_of(t, SYM(i), SYM(i + 1));
  }
  bool ok = true;
  for (int i = 0; ok && i < n; i++) {
    Bytes s = SYM(i);
    int id = map_get(&t->vocab, s, hash_bytes(s.p, s.len, fnv_basis));
    if (id < 0) {
      diag_error(d, "tokenizer", (Loc){0, 0},
                 "a merged symbol of %d bytes is not in the vocabulary (a "
                 "malformed tokenizer.json)",
                 s.len);
      ok = false;
    } else {
      VEC_PUSH(out->v, out->n, out->cap, id);
    }
  }
#undef SYM
  free(start);
  free(len);
  free(rank);
  return ok;
}

/* Text without added tokens: pre-tokenized, each piece merged. */
static bool encode_plain(const Tokenizer *t, const unsigned char *s, size_t n,
                         Ids *out, Diag *d) {
  int32_t *cp = xmalloc((n + 1) * sizeof *cp);
  Class *cl = xmalloc((n + 1) * sizeof *cl);
  size_t *at = xmalloc((n + 2) * sizeof *at); /* byte offset of each */
  int count = 0;
  for (size_t i = 0; i < n;) {
    at[count] = i;
    cp[count] = utf8_next(s, n, &i); /* valid: checked by the caller */
    cl[count] = class_of(cp[count]);
    count++;
  }
  at[count] = n;
  bool ok = true;
  for (int i = 0; ok && i < count;) {
    int k = piece_at(cp, cl, count, i);
    Bytes piece = {s + at[i], (int)(at[i + k] - at[i])};
    ok = merge_piece(t, piece, out, d);
    i += k;
  }
  free(cp);
  free(cl);
  free(at);
  return ok;
}

/* The added token at S (N bytes left), longest first; NULL if none. */
static const Added *added_at(const Tokenizer *t, const unsigned char *s,
                             size_t n) {
  for (int k = 0; k < t->nadded; k++)
    if ((size_t)t->added[k].text.len <= n &&
        memcmp(s, t->added[k].text.p, (size_t)t->added[k].text.len) == 0)
      return &t->added[k];
  return NULL;
}

bool tokenizer_encode(const Tokenizer *t, const char *text, size_t len,
                      int **ids, int *n, Diag *d) {
  const unsigned char *s = (const unsigned char *)text;
  *ids = NULL;
  *n = 0;
  for (size_t i = 0; i < len;)
    if (utf8_next(s, len, &i) < 0) {
      diag_error(d, "text", (Loc){0, 0},
                 "not valid UTF-8 (at byte %zu of %zu)", i, len);
      return false;
    }
  Ids out = {0};
  bool ok = true;
  size_t from = 0;
  for (size_t i = 0; ok && i <= len; i++) {
    const Added *a = i < len ? added_at(t, s + i, len - i) : NULL;
    if (!a && i < len)
      continue;
    ok = encode_plain(t, s + from, i - from, &out, d);
    if (ok && a) {
      VEC_PUSH(out.v, out.n, out.cap, a->id);
      i += (size_t)a->text.len - 1;
      from = i + 1;
    }
  }
  if (!ok) {
    free(out.v);
    return false;
  }
  *ids = out.v;
  *n = out.n;
  return true;
}
