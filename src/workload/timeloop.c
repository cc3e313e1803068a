/* timeloop.c — a Timeloop problem as a one-Einsum cascade.
 *
 * A Timeloop problem names its loop dimensions, its data spaces and how
 * each dimension projects into them, and the sizes of one instance:
 *
 *   problem:
 *     shape:
 *       name: CNN_Layer
 *       dimensions: [C, M, R, S, N, P, Q]
 *       coefficients: [{name: Wstride, default: 1}, ...]
 *       data-spaces:
 *         - {name: Weights, projection: [[[C]], [[M]], [[R]], [[S]]]}
 *         - name: Inputs
 *           projection: [[[N]], [[C]], [[R, Wdilation], [P, Wstride]], ...]
 *         - {name: Outputs, projection: [...], read-write: True}
 *     instance: {C: 3, M: 64, ..., Wstride: 2}
 *
 * Timeloop's v0.4 spelling (its current exercises, the FuseMax artifact)
 * writes data_spaces and read_write for data-spaces and read-write: both
 * load (one of the two in a file).
 *
 * It becomes one Einsum: the data space that is read and written (the
 * output) is the product of the others, summed over the dimensions it
 * lacks (Timeloop's multiply-accumulate). A coordinate of one dimension is
 * a rank named after it; a sum of products (R·Wdilation + P·Wstride) is a
 * rank named after its dimensions (RP), sized to hold every value the sum
 * takes. The assumptions are printed as notes. */
#include "peer.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TL_MAX_SPACES = 8, TL_MAX_DIMS = 16 };

typedef struct Tl {
  const char *path;
  Translation *t;
  Diag *d;
  const YamlNode *dims, *coefs, *instance;
  double size[TL_MAX_DIMS];
} Tl;

static bool tl_fail(Tl *tl, const YamlNode *n, const char *what) {
  diag_error(tl->d, tl->path, n ? n->loc : (Loc){1, 1}, "%s", what);
  return false;
}

/* M's key KEY, in the hyphen spelling (data-spaces) or Timeloop v0.4's
 * underscore one (data_spaces): *NODE, NULL when neither is there; false
 * when both are. */
static bool spelled(Tl *tl, const YamlNode *m, const char *key,
                    const YamlNode **node) {
  char under[32];
  snprintf(under, sizeof under, "%s", key);
  for (char *p = under; *p; p++)
    if (*p == '-')
      *p = '_';
  const YamlNode *a = ydoc_get(m, key), *b = ydoc_get(m, under);
  *node = a ? a : b;
  if (!a || !b)
    return true;
  char what[96];
  snprintf(what, sizeof what, "both %s and %s: give one", key, under);
  return tl_fail(tl, b, what);
}

static int dim_index(const Tl *tl, const char *name) {
  for (int i = 0; i < tl->dims->n; i++)
    if (strcmp(tl->dims->items[i]->text, name) == 0)
      return i;
  return -1;
}

/* A coefficient's value: the instance's, else its default, else a number
 * written in place. */
static double coef_value(const Tl *tl, const char *name) {
  const YamlNode *v = tl->instance ? ydoc_get(tl->instance, name) : NULL;
  for (int i = 0; !v && tl->coefs && tl->coefs->kind == YN_SEQ &&
                  i < tl->coefs->n; i++) {
    const YamlNode *c = tl->coefs->items[i];
    const YamlNode *cn = c->kind == YN_MAP ? ydoc_get(c, "name") : NULL;
    if (cn && cn->kind == YN_SCALAR && strcmp(cn->text, name) == 0)
      v = ydoc_get(c, "default");
  }
  if (v && v->kind != YN_SCALAR)
    return NAN;
  const char *text = v ? v->text : name;
  char *end;
  double x = strtod(text, &end);
  return *end || end == text ? NAN : x;
}

/* One term of a coordinate, [DIM] or [DIM, COEFFICIENT] (or DIM alone),
 * appended to IX ("2*p") and RANK ("P"); its reach into *SIZE. */
static bool term(Tl *tl, const YamlNode *t, Buf *ix, Buf *rank,
                 double *size) {
  const YamlNode *dim = t->kind == YN_SCALAR ? t : NULL;
  const YamlNode *coef = NULL;
  if (t->kind == YN_SEQ && (t->n == 1 || t->n == 2)) {
    dim = t->items[0];
    coef = t->n == 2 ? t->items[1] : NULL;
  }
  if (!dim || dim->kind != YN_SCALAR)
    return tl_fail(tl, t, "a projection term is [DIM] or [DIM, "
                          "COEFFICIENT]");
  int d = dim_index(tl, dim->text);
  if (d < 0)
    return tl_fail(tl, dim, "not a dimension of the problem");
  double c = !coef ? 1 : coef->kind == YN_SCALAR ? coef_value(tl, coef->text)
                                                 : NAN;
  if (isnan(c) || c < 1 || c != floor(c))
    return tl_fail(tl, coef, "a coefficient must be a positive whole number "
                             "(from the instance or its default)");
  buf_printf(ix, "%s", ix->len ? " + " : "");
  if (c != 1)
    buf_printf(ix, "%g*", c);
  for (const char *p = dim->text; *p; p++)
    buf_printf(ix, "%c", tolower((unsigned char)*p));
  buf_printf(rank, "%s", dim->text);
  *size += c * (tl->size[d] - 1);
  return true;
}

/* One coordinate of a data space: a sum of terms [[DIM], [DIM, COEF]]. */
static bool coordinate(Tl *tl, const YamlNode *sop, Buf *ix, Buf *rank,
                       double *size) {
  *size = 1;
  if (sop->kind != YN_SEQ)
    return term(tl, sop, ix, rank, size);
  if (!sop->n)
    return tl_fail(tl, sop, "an empty projection coordinate");
  for (int k = 0; k < sop->n; k++)
    if (!term(tl, sop->items[k], ix, rank, size))
      return false;
  return true;
}

static void note_sections(Tl *tl, const YamlNode *root) {
  Buf b = {0};
  for (int i = 0; i < root->n; i++)
    if (strcmp(root->keys[i]->text, "problem"))
      buf_printf(&b, "%s%s", b.len ? ", " : "", root->keys[i]->text);
  if (b.len)
    tr_note(tl->t, "the %s section%s read but not modelled", b.s,
            strchr(b.s, ',') ? "s are" : " is");
  buf_free(&b);
}

static bool sizes(Tl *tl) {
  if (!tl->instance || tl->instance->kind != YN_MAP)
    return tl_fail(tl, tl->instance, "problem.instance: the size of every "
                                     "dimension");
  for (int i = 0; i < tl->dims->n; i++) {
    const YamlNode *v = ydoc_get(tl->instance, tl->dims->items[i]->text);
    char *end = NULL;
    tl->size[i] = v && v->kind == YN_SCALAR ? strtod(v->text, &end) : NAN;
    if (isnan(tl->size[i]) || *end || tl->size[i] < 1 ||
        tl->size[i] != floor(tl->size[i]))
      return tl_fail(tl, v ? v : tl->dims->items[i],
                     "every dimension needs a positive whole size in "
                     "problem.instance");
  }
  for (int i = 0; i < tl->instance->n; i++) {
    const char *k = tl->instance->keys[i]->text;
    if (dim_index(tl, k) < 0 && isnan(coef_value(tl, k)))
      tr_note(tl->t, "instance.%s is read but not modelled", k);
  }
  return true;
}

typedef struct Space {
  const char *name;
  Buf ranks, index;
  bool output;
} Space;

/* Is RANK already a line "  RANK: ..." of SHAPE? (Two data spaces may
 * index the same sum of dimensions; it is one rank.) */
static bool declared(const Buf *shape, const char *rank) {
  size_t n = strlen(rank);
  for (const char *l = shape->s; l && *l; l = strchr(l, '\n') + 1)
    if (strncmp(l + 2, rank, n) == 0 && l[2 + n] == ':')
      return true;
  return false;
}

static bool load_space(Tl *tl, const YamlNode *s, Space *sp, Buf *shape) {
  const YamlNode *name = s->kind == YN_MAP ? ydoc_get(s, "name") : NULL;
  const YamlNode *proj = name ? ydoc_get(s, "projection") : NULL;
  if (!proj || proj->kind != YN_SEQ || name->kind != YN_SCALAR)
    return tl_fail(tl, s, "a data space is {name: NAME, projection: "
                          "[[[DIM]], ...]}");
  sp->name = name->text;
  const YamlNode *rw;
  if (!spelled(tl, s, "read-write", &rw))
    return false;
  sp->output = rw && rw->kind == YN_SCALAR &&
               (strcmp(rw->text, "True") == 0 || strcmp(rw->text, "true") == 0);
  for (int k = 0; k < proj->n; k++) {
    Buf rank = {0}, ix = {0};
    double size;
    bool ok = coordinate(tl, proj->items[k], &ix, &rank, &size);
    if (ok) {
      buf_printf(&sp->index, "%s%s", k ? ", " : "", ix.s);
      buf_printf(&sp->ranks, "%s%s", k ? ", " : "", rank.s);
      if (dim_index(tl, rank.s) < 0 && !declared(shape, rank.s))
        buf_printf(shape, "  %s: %.17g    # derived from %s of %s\n", rank.s,
                   size, ix.s, sp->name);
    }
    buf_free(&rank);
    buf_free(&ix);
    if (!ok)
      return false;
  }
  /* `projection: []` is a scalar: no rank, indexed S[] */
  buf_printf(&sp->index, "%s", "");
  buf_printf(&sp->ranks, "%s", "");
  return true;
}

/* Does the index text IX hold the variable V (a whole word)? */
static bool has_var(const char *ix, const char *v) {
  size_t n = strlen(v);
  for (const char *p = ix; (p = strstr(p, v)); p += n)
    if ((p == ix || !isalnum((unsigned char)p[-1])) &&
        !isalnum((unsigned char)p[n]) && p[n] != '_')
      return true;
  return false;
}

/* Dimension D's variable: its name in lower case. */
static void var_name(const Tl *tl, int d, char *v, size_t n) {
  snprintf(v, n, "%s", tl->dims->items[d]->text);
  for (char *p = v; *p; p++)
    *p = (char)tolower((unsigned char)*p);
}

/* Does a data space of SP[0..N) index dimension D? */
static bool projected(const Tl *tl, const Space *sp, int n, int d) {
  char v[64];
  var_name(tl, d, v, sizeof v);
  for (int i = 0; i < n; i++)
    if (has_var(sp[i].index.s ? sp[i].index.s : "", v))
      return true;
  return false;
}

/* " :: sum(a, b)": the variables the inputs (all but OUT) read and OUT
 * lacks, into E. One input with no operator is a copy to our loader,
 * which refuses one that drops a variable unless the sum is written. */
static void sum_suffix(const Tl *tl, const Space *sp, int n, int out,
                       Buf *e) {
  int k = 0;
  for (int d = 0; d < tl->dims->n; d++) {
    char v[64];
    var_name(tl, d, v, sizeof v);
    bool read = false;
    for (int i = 0; i < n; i++)
      read = read || (i != out && has_var(sp[i].index.s ? sp[i].index.s : "",
                                          v));
    if (read && !has_var(sp[out].index.s ? sp[out].index.s : "", v))
      buf_printf(e, "%s%s", k++ ? ", " : " :: sum(", v);
  }
  if (k)
    buf_printf(e, ")");
}

static bool emit(Tl *tl, const YamlNode *shape, Space *sp, int n,
                 const Buf *derived) {
  int out = -1;
  for (int i = 0; i < n; i++)
    if (sp[i].output)
      out = out < 0 ? i : -2;
  if (out < 0)
    return tl_fail(tl, shape, "one data space must be the output "
                              "(read-write: True)");
  Loc at = shape->loc;
  tr_line(tl->t, at, "shape:");
  /* A dimension no data space indexes (FuseMax's SLD lists N) repeats
   * Timeloop's multiply-accumulate; an Einsum of ours iterates only the
   * variables its tensors have, so it is left out, and said. */
  for (int i = 0; i < tl->dims->n; i++)
    if (projected(tl, sp, n, i))
      tr_line(tl->t, tl->dims->items[i]->loc, "  %s: %.17g",
              tl->dims->items[i]->text, tl->size[i]);
    else
      tr_note(tl->t, "dimension %s indexes no data space: left out "
                     "(Timeloop repeats the multiply-accumulate %.17g "
                     "times over it)", tl->dims->items[i]->text, tl->size[i]);
  if (derived->len)
    tr_line(tl->t, at, "%.*s", (int)derived->len - 1, derived->s);
  tr_line(tl->t, at, "einsum:");
  tr_line(tl->t, at, "  declaration:");
  for (int i = 0; i < n; i++)
    tr_line(tl->t, at, "    %s: [%s]", sp[i].name, sp[i].ranks.s);
  tr_line(tl->t, at, "  expressions:");
  Buf e = {0};
  buf_printf(&e, "%s[%s] =", sp[out].name, sp[out].index.s);
  for (int i = 0, k = 0; i < n; i++)
    if (i != out)
      buf_printf(&e, "%s%s[%s]", k++ ? " * " : " ", sp[i].name,
                 sp[i].index.s);
  if (n == 2)
    sum_suffix(tl, sp, n, out, &e);
  tr_line(tl->t, at, "    - \"%s\"", e.s);
  buf_free(&e);
  tr_note(tl->t, "the operator is a multiply-accumulate (Timeloop's): %s is "
                 "the product of the other data spaces, summed over the "
                 "dimensions it lacks", sp[out].name);
  tr_note(tl->t, "every data space is dense, its word the architecture's "
                 "(Timeloop's densities and word bits are not modelled)");
  return true;
}

static bool translate(Tl *tl, const YamlNode *root) {
  const YamlNode *p = root && root->kind == YN_MAP ? ydoc_get(root, "problem")
                                                   : NULL;
  const YamlNode *shape = p && p->kind == YN_MAP ? ydoc_get(p, "shape") : NULL;
  if (!shape || shape->kind != YN_MAP)
    return tl_fail(tl, p ? p : root, "problem.shape is missing (a named "
                   "shape such as 'cnn-layer' is not known: write it out)");
  tl->dims = ydoc_get(shape, "dimensions");
  tl->coefs = ydoc_get(shape, "coefficients");
  tl->instance = ydoc_get(p, "instance");
  const YamlNode *spaces;
  if (!spelled(tl, shape, "data-spaces", &spaces))
    return false;
  bool names = tl->dims && tl->dims->kind == YN_SEQ && tl->dims->n &&
               tl->dims->n <= TL_MAX_DIMS;
  for (int i = 0; names && i < tl->dims->n; i++)
    names = tl->dims->items[i]->kind == YN_SCALAR;
  if (!names)
    return tl_fail(tl, shape, "problem.shape.dimensions: a list of at most "
                              "16 names");
  if (!spaces || spaces->kind != YN_SEQ || spaces->n < 2 ||
      spaces->n > TL_MAX_SPACES)
    return tl_fail(tl, shape, "problem.shape.data-spaces: two to eight "
                              "data spaces");
  note_sections(tl, root);
  if (!sizes(tl))
    return false;
  Space sp[TL_MAX_SPACES] = {{0}};
  Buf derived = {0};
  bool ok = true;
  for (int i = 0; ok && i < spaces->n; i++)
    ok = load_space(tl, spaces->items[i], &sp[i], &derived);
  ok = ok && emit(tl, shape, sp, spaces->n, &derived);
  for (int i = 0; i < spaces->n; i++) {
    buf_free(&sp[i].ranks);
    buf_free(&sp[i].index);
  }
  buf_free(&derived);
  return ok;
}

bool timeloop_translate(const char *path, const char *text, size_t len,
                        const SpecLoad *o, Translation *t, Diag *d) {
  (void)o;
  YamlDoc *doc = ydoc_parse(path, text, len, d);
  Tl tl = {.path = path, .t = t, .d = d};
  bool ok = doc && translate(&tl, doc->root);
  ydoc_free(doc);
  return ok;
}
