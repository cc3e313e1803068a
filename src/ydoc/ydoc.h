/* ydoc.h — a YAML document as a tree of located nodes.
 *
 * libyaml does the parsing; this module turns its event stream into a small
 * tree (scalars, sequences, mappings) in which every node remembers where it
 * was written, so that later stages (the cascade spec, the architecture
 * spec) can report errors as FILE:LINE:COL. Aliases, tags other than the
 * core ones, duplicate keys and multi-document streams are rejected: specs
 * are plain data. */
#ifndef MAMBALAYA_YDOC_H
#define MAMBALAYA_YDOC_H

#include "../util/util.h"

typedef enum { YN_SCALAR, YN_SEQ, YN_MAP } YamlKind;

typedef struct YamlNode YamlNode;
typedef struct YamlDoc YamlDoc;
struct YamlNode {
  const YamlDoc *doc; /* the document it was written in */
  YamlKind kind;
  Loc loc;        /* where the node starts */
  size_t offset;  /* byte offset of that start in the source */
  const char *text; /* YN_SCALAR: the value */
  bool quoted;      /* YN_SCALAR: written in quotes or as a block scalar */
  const char *tag;  /* a local tag (`!Memory`) where ydoc_parse_tagged
                       kept one, else NULL */
  int n;            /* YN_SEQ, YN_MAP: number of items */
  YamlNode **items; /* YN_SEQ: the items; YN_MAP: the values */
  YamlNode **keys;  /* YN_MAP: the keys (scalars) */
};

struct YamlDoc {
  Arena arena;
  const char *path;
  char *src; /* the source text, NUL-terminated, owned */
  size_t len;
  YamlNode *root; /* NULL for an empty document */
};

/* Parse TEXT (copied) as one YAML document. NULL and *diag set on error. */
YamlDoc *ydoc_parse(const char *path, const char *text, size_t len,
                    Diag *diag);
/* The same, keeping local tags (`!Memory`, AccelForge's architecture
 * nodes) on their nodes instead of refusing them. */
YamlDoc *ydoc_parse_tagged(const char *path, const char *text, size_t len,
                           Diag *diag);
/* Read and parse a file. */
YamlDoc *ydoc_load(const char *path, Diag *diag);
void ydoc_free(YamlDoc *doc);

/* The value under KEY in a mapping, or NULL. */
YamlNode *ydoc_get(const YamlNode *map, const char *key);
/* Set KEY (a scalar node) of mapping MAP, in DOC, to VALUE: replaced if
 * present, else appended. The nodes are not copied: they may belong to
 * another document that outlives DOC (a sweep sets an architecture's
 * fields to a study's values, then loads the architecture). */
void ydoc_set(YamlDoc *doc, YamlNode *map, const YamlNode *key,
              YamlNode *value);
/* A short name for a node kind: "a scalar", "a list", "a mapping". */
const char *ydoc_kind_name(YamlKind k);

/* ---- checking a document ----
 *
 * The one wording every loader (cascade specs, architectures, studies,
 * the weights section) gives for the same mistake; each reports at the
 * node, in the node's own file, into D and returns false (NULL, -1). */

/* N is of kind K: "expected a mapping for WHAT, found a list". N NULL:
 * "found nothing" at line 1 of DOC's file. */
bool ydoc_want(const YamlNode *n, YamlKind k, const char *what, Diag *d);
/* Every key of MAP is in ALLOWED (NULL-terminated): "unknown key 'x' in
 * WHERE (expected a, b or c)". */
bool ydoc_known_keys(const YamlNode *map, const char *const *allowed,
                     const char *where, Diag *d);
/* The value under KEY of MAP: "WHERE is missing 'KEY' (HINT)" at AT. */
const YamlNode *ydoc_need(const YamlNode *map, const char *key, Loc at,
                          const char *where, const char *hint, Diag *d);
/* The index of scalar N's text in NAMES (COUNT of them): "unknown WHAT
 * 'x' (expected a, b or c)". */
int ydoc_enum(const YamlNode *n, const char *const *names, int count,
              const char *what, Diag *d);
/* "a, b or c" from the first N of NAMES (stopping at a NULL), into B. */
void ydoc_join(Buf *b, const char *const *names, int n);

/* Where the character at byte OFFSET of a scalar's value was written.
 * Plain and quoted scalars on one or several lines are mapped back to the
 * source, so an error inside an expression string points at the exact
 * column. CURSOR (zero-initialized before first use; or NULL) resumes the
 * walk, so that offsets asked in increasing order cost one pass over the
 * scalar. */
typedef struct YamlCursor {
  const YamlNode *node;
  size_t voff, soff; /* the next value character, and where to look */
  Loc loc;           /* the location of soff */
} YamlCursor;
Loc ydoc_scalar_loc_at(const YamlNode *scalar, YamlCursor *cur,
                       size_t offset);

#endif
