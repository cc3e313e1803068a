/* accelforge.c — an AccelForge workload as a spec of ours.
 *
 * AccelForge (Accelergy project) describes a cascade as `workload:` with
 * `rank_sizes`, `iteration_space_shape` (bounds of rank variables) and
 * `einsums`, each written in one of three spellings: a string
 * "QK[b,m,p,h] = Q[b,m,h,e] * K[b, M: p, h, e]", a mapping with that
 * string under `einsum:` and more attributes, or a mapping listing its
 * `tensor_accesses` with their projections. A projection names the rank
 * each index goes to: a list [m, n] means {M: m, N: n}; `M: p` says that
 * variable p indexes rank M here (a rank annotation), `H: p0*2 + r0` that
 * an expression does. The translation:
 *
 *  - a tensor's ranks are those of its first access, in that order (a
 *    projection is a mapping: later accesses are put in that order);
 *  - a variable that indexes two ranks (p over M in K and over P in QK)
 *    makes them one rank (P another name of M) when their sizes agree;
 *    else it is an error that says so;
 *  - sizes: rank_sizes (evaluated: ceil, floor, min, max, ...), else the
 *    bound of a variable over the rank, else derived from the indices
 *    that reach the rank (an image's H from p*2 + r: 2(P-1) + R);
 *  - the right-hand side keeps the string's operators; the mapping
 *    spelling, which names tensors only, is their product (a
 *    multiply-accumulate, AccelForge's compute);
 *  - a copy (is_copy_operation, or one read and no operator) whose output
 *    lacks a variable of its input is an error: a copy does not reduce;
 *    except a mixture of experts' scatter of tokens to experts and the
 *    gather back, translated as the even split the file describes;
 *  - bits per value, persistence, renames and instance counts are read
 *    and said not to be modelled (notes). */
#include "af.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *dup_trim(Af *af, const char *s, size_t n) {
  while (n && isspace((unsigned char)*s))
    s++, n--;
  while (n && isspace((unsigned char)s[n - 1]))
    n--;
  return arena_strndup(&af->ar, s, n);
}

static bool is_name(const char *s) {
  if (!(isalpha((unsigned char)*s) || *s == '_'))
    return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_'))
      return false;
  return true;
}

/* The document checks of ydoc.h (one wording for every loader), in the
 * translation's terms. */
static bool check_keys(Af *af, const YamlNode *m, const char *where,
                       const char *const *keys) {
  return ydoc_known_keys(m, keys, where, af->d);
}

static bool want(Af *af, const YamlNode *n, YamlKind k, const char *what) {
  return ydoc_want(n, k, what, af->d);
}

/* ---- sizes ---- */

static double rank_sizes_value(Af *af, int r);

static double lookup_rank(void *ctx, const char *name) {
  Af *af = ctx;
  int r = rank_find(af, name);
  return r >= 0 ? rank_sizes_value(af, r) : NAN;
}

/* The value of rank R's rank_sizes entry (NaN if none or failed). */
static double rank_sizes_value(Af *af, int r) {
  AfRank *k = &af->ranks[r];
  if (!k->size || k->state == 2)
    return k->value;
  if (k->state == 1) {
    fail(af, k->size->loc, "the size of rank %s depends on itself", k->name);
    return NAN;
  }
  k->state = 1;
  char err[256] = "";
  double v = peer_eval(k->size->text, lookup_rank, af, err, sizeof err);
  k = &af->ranks[r];
  k->state = 2;
  if (isnan(v) && !af->d->failed)
    fail(af, k->size->loc, "rank %s: size '%s' cannot be evaluated: %s",
         k->name, k->size->text, err);
  else if (!isnan(v) && (v < 1 || v != floor(v)))
    fail(af, k->size->loc, "rank %s: size '%s' is %g, not a positive whole "
         "number", k->name, k->size->text, v);
  k->value = v;
  if (!is_name(k->size->text) && strspn(k->size->text, "0123456789") !=
                                     strlen(k->size->text))
    k->why = arena_strdup(&af->ar, k->size->text);
  return v;
}

/* "LO <= v < HI" (or <= HI, or without a lower bound) into B. */
static bool parse_bound(Af *af, const YamlNode *n, AfBound *b) {
  const char *s = n->text;
  const char *lt1 = strchr(s, '<');
  const char *lt2 = lt1 ? strchr(lt1 + 1, '<') : NULL;
  if (lt1 && !lt2) { /* "v < HI" */
    lt2 = lt1;
    lt1 = NULL;
  }
  char err[256] = "";
  const char *vs = lt1 ? lt1 + 1 + (lt1[1] == '=') : s;
  if (!lt2 || strchr(lt2 + 1, '<') || strchr(s, '>'))
    return fail(af, n->loc, "iteration_space_shape: expected 'LO <= v < HI', "
                            "found '%s'", s);
  b->var = dup_trim(af, vs, (size_t)(lt2 - vs));
  b->lo = lt1 ? peer_eval(dup_trim(af, s, (size_t)(lt1 - s)), lookup_rank,
                          af, err, sizeof err)
              : 0;
  bool incl = lt2[1] == '=';
  b->hi = peer_eval(lt2 + 1 + incl, lookup_rank, af, err, sizeof err) + incl;
  if (!is_name(b->var) || isnan(b->lo) || isnan(b->hi))
    return fail(af, n->loc, "iteration_space_shape: cannot read '%s'%s%s", s,
                err[0] ? ": " : "", err);
  if (b->lo != 0)
    return fail(af, n->loc, "iteration_space_shape: '%s' starts %s at %g; "
                "mambalaya's ranks start at 0 (an offset is not modelled)",
                s, b->var, b->lo);
  return true;
}

/* rank_sizes: RANK: size, of the workload (OVERRIDE: it sets every size
 * it names) or of an Einsum (it sets a size the workload left unset). */
static bool load_rank_sizes(Af *af, const YamlNode *sizes, bool override) {
  if (sizes && !want(af, sizes, YN_MAP, "rank_sizes (RANK: size)"))
    return false;
  for (int i = 0; sizes && i < sizes->n; i++) {
    if (!want(af, sizes->items[i], YN_SCALAR, "a size"))
      return false;
    int r = rank_get(af, sizes->keys[i]->text, sizes->keys[i]->loc);
    if (override || !af->ranks[r].size)
      af->ranks[r].size = sizes->items[i];
  }
  return true;
}

static bool load_bounds(Af *af, const YamlNode *n, AfBound *b, int *nb) {
  if (!n)
    return true;
  if (n->kind != YN_MAP && n->kind != YN_SEQ)
    return want(af, n, YN_SEQ, "iteration_space_shape (bounds)");
  for (int i = 0; i < n->n; i++) {
    if (!want(af, n->items[i], YN_SCALAR, "a bound ('LO <= v < HI')"))
      return false;
    if (*nb == AF_MAX_BOUNDS)
      return fail(af, n->items[i]->loc, "more than %d bounds", AF_MAX_BOUNDS);
    if (!parse_bound(af, n->items[i], &b[*nb]))
      return false;
    ++*nb;
  }
  return true;
}

/* ---- Einsums ---- */

/* One projection entry: "RANK: expr" or a variable (its rank: upper case). */
static bool add_dim(Af *af, AfAccess *a, const char *rank, const char *expr,
                    Loc loc) {
  if (a->n == IR_MAX_RANKS)
    return fail(af, loc, "%s has more than %d ranks", a->tensor,
                IR_MAX_RANKS);
  if (!expr[0])
    return fail(af, loc, "%s: an empty index", a->tensor);
  a->plain[a->n] = is_name(expr);
  a->rank[a->n] = rank ? rank : upper(af, expr);
  a->expr[a->n] = expr;
  if (!rank && !a->plain[a->n])
    return fail(af, loc, "%s: index '%s' is an expression: name its rank "
                "('H: %s')", a->tensor, expr, expr);
  if (!is_name(a->rank[a->n]))
    return fail(af, loc, "%s: '%s' is not a rank name", a->tensor,
                a->rank[a->n]);
  for (int k = 0; k < a->n; k++)
    if (strcmp(a->rank[k], a->rank[a->n]) == 0)
      return fail(af, loc, "%s indexes rank %s twice", a->tensor,
                  a->rank[k]);
  a->n++;
  return true;
}

/* The indices of "T[a, M: p, H: p0*2 + r0]" between S and END. */
static bool parse_indices(Af *af, AfAccess *a, const char *s,
                          const char *end, Loc loc) {
  while (s < end) {
    const char *comma = s;
    int depth = 0;
    while (comma < end && (depth || *comma != ',')) {
      depth += *comma == '(' ? 1 : *comma == ')' ? -1 : 0;
      comma++;
    }
    const char *colon = memchr(s, ':', (size_t)(comma - s));
    char *rank = colon ? dup_trim(af, s, (size_t)(colon - s)) : NULL;
    const char *from = colon ? colon + 1 : s;
    if (!add_dim(af, a, rank, dup_trim(af, from, (size_t)(comma - from)),
                 loc))
      return false;
    s = comma + (comma < end);
  }
  return true;
}

/* The next access "NAME[...]" of S at or after *AT; false at the end. */
static bool next_access(const char *s, size_t *at, size_t *name,
                        size_t *open, size_t *close) {
  for (size_t i = *at; s[i]; i++) {
    if (!(isalpha((unsigned char)s[i]) || s[i] == '_') ||
        (i && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_')))
      continue;
    size_t j = i;
    while (isalnum((unsigned char)s[j]) || s[j] == '_')
      j++;
    size_t k = j;
    while (s[k] == ' ')
      k++;
    if (s[k] != '[')
      continue;
    const char *c = strchr(s + k, ']');
    if (!c)
      return false;
    *name = i;
    *open = k;
    *close = (size_t)(c - s);
    *at = *close + 1;
    return true;
  }
  return false;
}

static bool parse_access_text(Af *af, AfAccess *a, const char *s, size_t name,
                              size_t open, size_t close, Loc loc) {
  a->tensor = dup_trim(af, s + name, open - name);
  return parse_indices(af, a, s + open + 1, s + close, loc);
}

/* "OUT[...] = RHS": the output and every read of RHS. */
static bool parse_string(Af *af, AfEinsum *e, const YamlNode *n) {
  const char *s = n->text;
  const char *eq = strchr(s, '=');
  size_t at = 0, nm, op, cl;
  if (!eq || !next_access(s, &at, &nm, &op, &cl) || cl > (size_t)(eq - s))
    return fail(af, n->loc, "expected an Einsum 'OUT[i, j] = A[i, k] * "
                            "B[k, j]', found '%s'", s);
  if (!parse_access_text(af, &e->out, s, nm, op, cl, n->loc))
    return false;
  e->rhs = eq + 1;
  at = (size_t)(e->rhs - s);
  while (next_access(s, &at, &nm, &op, &cl)) {
    if (e->nin == AF_MAX_ACC)
      return fail(af, n->loc, "more than %d reads", AF_MAX_ACC);
    if (!parse_access_text(af, &e->in[e->nin++], s, nm, op, cl, n->loc))
      return false;
  }
  if (!e->nin)
    return fail(af, n->loc, "no input tensor in '%s'", s);
  e->name = e->out.tensor;
  return true;
}

static bool parse_projection(Af *af, AfAccess *a, const YamlNode *p) {
  if (!p || p->kind == YN_SCALAR)
    return fail(af, p ? p->loc : (Loc){1, 1}, "tensor access %s: expected a "
                "projection, a list [m, n] or a mapping {M: m}", a->tensor);
  for (int i = 0; i < p->n; i++) {
    const YamlNode *x = p->items[i];
    if (!want(af, x, YN_SCALAR, "a projection index"))
      return false;
    const char *rank = p->kind == YN_MAP ? p->keys[i]->text : NULL;
    if (!add_dim(af, a, rank, dup_trim(af, x->text, strlen(x->text)),
                 x->loc))
      return false;
  }
  return true;
}

/* Said once per attribute, naming where it was first met. */
static void note_unmodelled_attr(Af *af, const char *attr, const char *on) {
  for (int i = 0; i < af->nnoted; i++)
    if (strcmp(af->noted[i], attr) == 0)
      return;
  if (af->nnoted < (int)(sizeof af->noted / sizeof af->noted[0]))
    af->noted[af->nnoted++] = attr;
  tr_note(af->t, "%s is read but not modelled (first in %s)", attr, on);
}

static bool is_true(const YamlNode *n) {
  return n && n->kind == YN_SCALAR &&
         (strcmp(n->text, "true") == 0 || strcmp(n->text, "True") == 0);
}

/* A scalar other than TEXT (n_instances other than 1). */
static bool is_not(const YamlNode *n, const char *text) {
  return n && (n->kind != YN_SCALAR || strcmp(n->text, text) != 0);
}

/* tensor_accesses: [{name, projection, output, ...}, ...] */
static bool load_accesses(Af *af, AfEinsum *e, const YamlNode *list,
                          bool from_string) {
  static const char *const keys[] = {"name", "projection", "output",
                                     "persistent", "bits_per_value",
                                     "backing_storage_size_scale", NULL};
  if (!want(af, list, YN_SEQ, "tensor_accesses"))
    return false;
  for (int i = 0; i < list->n; i++) {
    const YamlNode *m = list->items[i];
    if (!want(af, m, YN_MAP, "a tensor access") ||
        !check_keys(af, m, "a tensor access", keys))
      return false;
    const YamlNode *name = ydoc_get(m, "name");
    if (!name || !want(af, name, YN_SCALAR, "a tensor name"))
      return fail(af, m->loc, "a tensor access without a name");
    for (int k = 0; k < m->n; k++)
      if (strcmp(m->keys[k]->text, "name") &&
          strcmp(m->keys[k]->text, "projection") &&
          strcmp(m->keys[k]->text, "output"))
        note_unmodelled_attr(af, m->keys[k]->text, name->text);
    if (from_string) {
      if (ydoc_get(m, "projection") || ydoc_get(m, "output"))
        return fail(af, m->loc, "%s: the einsum string already gives its "
                    "projection", name->text);
      continue;
    }
    bool is_out = is_true(ydoc_get(m, "output"));
    if (is_out && e->out.tensor)
      return fail(af, m->loc, "a second output (%s): mambalaya's Einsums "
                  "write one tensor", name->text);
    if (!is_out && e->nin == AF_MAX_ACC)
      return fail(af, m->loc, "more than %d inputs", AF_MAX_ACC);
    AfAccess *a = is_out ? &e->out : &e->in[e->nin++];
    a->tensor = name->text;
    if (!parse_projection(af, a, ydoc_get(m, "projection")))
      return false;
  }
  return true;
}

static bool load_einsum_map(Af *af, AfEinsum *e, const YamlNode *m) {
  static const char *const keys[] = {"einsum", "name", "tensor_accesses",
                                     "is_copy_operation", "renames",
                                     "iteration_space_shape", "shape",
                                     "rank_sizes", "n_instances", NULL};
  if (!check_keys(af, m, "an Einsum", keys))
    return false;
  const YamlNode *str = ydoc_get(m, "einsum");
  const YamlNode *acc = ydoc_get(m, "tensor_accesses");
  if (str) {
    if (!want(af, str, YN_SCALAR, "einsum ('OUT[...] = ...')") ||
        !parse_string(af, e, str) || (acc && !load_accesses(af, e, acc, true)))
      return false;
  } else {
    const YamlNode *name = ydoc_get(m, "name");
    if (!acc || !load_accesses(af, e, acc, false))
      return acc ? false : fail(af, m->loc, "an Einsum needs 'einsum' or "
                                            "'tensor_accesses'");
    if (!e->out.tensor)
      return fail(af, m->loc, "an Einsum without an output (output: True)");
    e->name = name && name->kind == YN_SCALAR ? name->text : e->out.tensor;
  }
  e->copy = is_true(ydoc_get(m, "is_copy_operation"));
  if (is_not(ydoc_get(m, "n_instances"), "1"))
    note_unmodelled_attr(af, "n_instances", e->name);
  if (ydoc_get(m, "renames"))
    note_unmodelled_attr(af, "renames", e->name);
  return load_rank_sizes(af, ydoc_get(m, "rank_sizes"), false) &&
         load_bounds(af, ydoc_get(m, "iteration_space_shape"), e->bounds,
                     &e->nbounds) &&
         load_bounds(af, ydoc_get(m, "shape"), e->bounds, &e->nbounds);
}

/* workload.einsums, flattened: AccelForge splices a list inside the list
 * (an included file's Einsums). */
static bool load_einsums(Af *af, const YamlNode *list) {
  for (int i = 0; i < list->n; i++) {
    const YamlNode *x = list->items[i];
    if (x->kind == YN_SEQ) {
      if (!load_einsums(af, x))
        return false;
      continue;
    }
    AfEinsum e = {.loc = x->loc};
    bool ok = x->kind == YN_SCALAR ? parse_string(af, &e, x)
                                   : load_einsum_map(af, &e, x);
    if (!ok)
      return false;
    for (int k = 0; k < af->neinsums; k++)
      if (strcmp(af->einsums[k].out.tensor, e.out.tensor) == 0)
        return fail(af, x->loc, "%s is written twice (line %d too)",
                    e.out.tensor, af->einsums[k].loc.line);
    VEC_PUSH(af->einsums, af->neinsums, af->einsums_cap, e);
  }
  return true;
}

/* ---- tensors, aliases, sizes ---- */

/* Put A's indices in the order of its tensor's ranks (the first access
 * decides them). */
static bool order_access(Af *af, AfAccess *a, Loc loc) {
  int t = tensor_find(af, a->tensor);
  if (t < 0) {
    AfTensor nt = {.name = a->tensor, .n = a->n};
    for (int k = 0; k < a->n; k++)
      nt.rank[k] = rank_get(af, a->rank[k], loc);
    VEC_PUSH(af->tensors, af->ntensors, af->tensors_cap, nt);
    return true;
  }
  const AfTensor *T = &af->tensors[t];
  AfAccess o = *a;
  bool same = T->n == a->n;
  for (int k = 0; same && k < T->n; k++) {
    int j = 0;
    while (j < a->n && strcmp(a->rank[j], af->ranks[T->rank[k]].name))
      j++;
    same = j < a->n;
    if (same) {
      o.rank[k] = a->rank[j];
      o.expr[k] = a->expr[j];
      o.plain[k] = a->plain[j];
    }
  }
  if (!same)
    return fail(af, loc, "%s is indexed over other ranks than at its first "
                "access", a->tensor);
  *a = o;
  return true;
}

/* A variable that indexes two ranks in one Einsum makes them one. */
static void unite_vars(Af *af, AfEinsum *e) {
  AfAccess *acc[AF_MAX_ACC + 1];
  int n = 0;
  acc[n++] = &e->out;
  for (int i = 0; i < e->nin; i++)
    acc[n++] = &e->in[i];
  for (int i = 0; i < n; i++)
    for (int k = 0; k < acc[i]->n; k++)
      for (int j = 0; j <= i; j++)
        for (int l = 0; l < acc[j]->n; l++) {
          if (!acc[i]->plain[k] || !acc[j]->plain[l] ||
              strcmp(acc[i]->expr[k], acc[j]->expr[l]))
            continue;
          int a = rank_root(af, rank_find(af, acc[i]->rank[k]));
          int b = rank_root(af, rank_find(af, acc[j]->rank[l]));
          if (a == b)
            continue;
          if (af->ranks[a].size && !af->ranks[b].size) {
            af->ranks[b].parent = a; /* the rank with a size names both */
          } else {
            af->ranks[a].parent = b;
          }
          tr_note(af->t, "%s: variable %s indexes rank %s of %s and rank %s "
                  "of %s: they are one rank (as AccelForge's rank "
                  "annotation says)", e->name, acc[i]->expr[k],
                  acc[i]->rank[k], acc[i]->tensor, acc[j]->rank[l],
                  acc[j]->tensor);
        }
}

static const AfBound *find_bound(const Af *af, const AfEinsum *e,
                                 const char *var) {
  for (int i = 0; i < e->nbounds; i++)
    if (strcmp(e->bounds[i].var, var) == 0)
      return &e->bounds[i];
  for (int i = 0; i < af->nbounds; i++)
    if (strcmp(af->bounds[i].var, var) == 0)
      return &af->bounds[i];
  return NULL;
}

/* Give a rank class the size S (from WHY); a different one is an error. */
static bool class_size(Af *af, int r, double s, const char *why, Loc loc) {
  AfRank *root = &af->ranks[rank_root(af, r)];
  if (isnan(root->value)) {
    root->value = s;
    root->why = why;
    return true;
  }
  if (root->value == s)
    return true;
  return fail(af, loc, "rank %s has size %g (%s) and size %g (%s): "
              "mambalaya gives a rank one size",
              af->ranks[r].name, root->value,
              root->why ? root->why : "rank_sizes", s, why);
}

/* Sizes from rank_sizes, then from the bounds of variables alone at an
 * index. */
static bool size_classes(Af *af) {
  for (int r = 0; r < af->nranks; r++) {
    if (!af->ranks[r].size)
      continue;
    double v = rank_sizes_value(af, r);
    if (af->d->failed ||
        !class_size(af, r, v, af->ranks[r].why, af->ranks[r].size->loc))
      return false;
  }
  for (int i = 0; i < af->neinsums; i++) {
    AfEinsum *e = &af->einsums[i];
    for (int a = -1; a < e->nin; a++) {
      const AfAccess *x = a < 0 ? &e->out : &e->in[a];
      for (int k = 0; k < x->n; k++) {
        const AfBound *b = x->plain[k] ? find_bound(af, e, x->expr[k]) : NULL;
        if (b && !class_size(af, rank_find(af, x->rank[k]), b->hi,
                             "iteration_space_shape", e->loc))
          return false;
      }
    }
  }
  return true;
}

/* The extent of variable V in E: its bound, the size of a rank it indexes
 * alone, or the size of the rank named as it in upper case. */
static double var_extent(Af *af, const AfEinsum *e, const char *v) {
  const AfBound *b = find_bound(af, e, v);
  if (b)
    return b->hi - b->lo;
  for (int a = -1; a < e->nin; a++) {
    const AfAccess *x = a < 0 ? &e->out : &e->in[a];
    for (int k = 0; k < x->n; k++)
      if (x->plain[k] && strcmp(x->expr[k], v) == 0)
        return af->ranks[rank_root(af, rank_find(af, x->rank[k]))].value;
  }
  int r = rank_find(af, upper(af, v));
  return r >= 0 ? af->ranks[rank_root(af, r)].value : NAN;
}

static double lookup_extent_max(void *ctx, const char *name) {
  void **c = ctx;
  double x = var_extent(c[0], c[1], name);
  return isnan(x) ? NAN : x - 1;
}

/* The size an index expression reaches: its value at every variable's
 * last point, plus one (AccelForge's projections are increasing). */
static bool derive_sizes(Af *af) {
  for (int i = 0; i < af->neinsums; i++) {
    AfEinsum *e = &af->einsums[i];
    for (int a = 0; a < e->nin; a++) {
      const AfAccess *x = &e->in[a];
      AfTensor *T = &af->tensors[tensor_find(af, x->tensor)];
      for (int k = 0; k < x->n; k++) {
        int r = rank_root(af, T->rank[k]);
        if (x->plain[k] || (!isnan(af->ranks[r].value) &&
                            !af->ranks[r].derived))
          continue;
        void *ctx[2] = {af, e};
        char err[256] = "";
        double v = peer_eval(x->expr[k], lookup_extent_max, ctx, err,
                             sizeof err) + 1;
        if (isnan(v))
          return fail(af, e->loc, "%s: the size of rank %s of %s cannot be "
                      "derived from '%s' (%s): give it in rank_sizes",
                      e->name, x->rank[k], x->tensor, x->expr[k], err);
        if (!isnan(af->ranks[r].value) && af->ranks[r].value == v)
          continue;
        if (!isnan(af->ranks[r].value)) { /* another tensor's H: its own */
          Buf name = {0};
          buf_printf(&name, "%s_%s", af->ranks[r].name, x->tensor);
          r = T->rank[k] = rank_get(af, arena_strdup(&af->ar, name.s), e->loc);
          buf_free(&name);
        }
        Buf why = {0};
        buf_printf(&why, "derived from %s of %s", x->expr[k], x->tensor);
        af->ranks[r].value = v;
        af->ranks[r].derived = true;
        af->ranks[r].why = arena_strdup(&af->ar, why.s);
        buf_free(&why);
        tr_note(af->t, "rank %s of %s has size %g, derived from %s",
                af->ranks[r].name, x->tensor, v, x->expr[k]);
      }
    }
  }
  for (int r = 0; r < af->nranks; r++)
    if (isnan(af->ranks[rank_root(af, r)].value))
      return fail(af, af->ranks[r].loc, "rank %s has no size: give it in "
                  "rank_sizes or bound a variable over it in "
                  "iteration_space_shape", af->ranks[r].name);
  return true;
}

/* A copy does not reduce: its output must keep every variable it reads,
 * except in a mixture of experts' scatter and gather (af_moe.c). */
static bool check_copy(Af *af, AfEinsum *e) {
  const char *rest = e->rhs;
  if (rest) { /* a string: one read, and nothing else around it */
    size_t at = 0, nm, op, cl;
    next_access(rest, &at, &nm, &op, &cl);
    bool bare = strspn(rest, " ") == nm && rest[cl + 1 + strspn(rest + cl + 1,
                                                                  " ")] == 0;
    if (!bare && !e->copy)
      return true;
  }
  if (!e->copy && e->nin != 1)
    return true;
  if (e->nin != 1)
    return fail(af, e->loc, "%s is a copy of %d tensors: a copy reads one",
                e->name, e->nin);
  Buf lost = {0};
  const AfAccess *in = &e->in[0];
  for (int k = 0; k < in->n; k++) {
    bool kept = false;
    for (int j = 0; j < e->out.n; j++)
      kept = kept || strcmp(in->expr[k], e->out.expr[j]) == 0;
    if (!kept)
      buf_printf(&lost, "%s%s", lost.len ? ", " : "", in->expr[k]);
  }
  int moe = lost.len ? af_moe_scatter(af, e) : 0;
  if (lost.len && !moe)
    moe = af_moe_gather(af, e);
  if (lost.len && !moe)
    fail(af, e->loc, "%s is a copy, but its output lacks %s of its input "
         "%s: a copy does not reduce; write the reduction if one is meant "
         "(\"... = %s[...] :: sum(%s)\"; a gather from experts is "
         "translated after a scatter to them)", e->name, lost.s,
         in->tensor, in->tensor, lost.s);
  buf_free(&lost);
  return !af->d->failed;
}

/* Every access in its tensor's rank order; ranks one variable indexes
 * made one. */
static bool order_einsums(Af *af) {
  for (int i = 0; i < af->neinsums; i++) {
    AfEinsum *e = &af->einsums[i];
    for (int a = 0; a < e->nin; a++)
      if (!order_access(af, &e->in[a], e->loc))
        return false;
    if (!order_access(af, &e->out, e->loc))
      return false;
    for (int k = 0; k < e->out.n; k++)
      if (!e->out.plain[k])
        return fail(af, e->loc, "%s: the output is indexed by an expression "
                    "('%s'): mambalaya's outputs take variables", e->name,
                    e->out.expr[k]);
    unite_vars(af, e);
  }
  return true;
}

/* ---- the spec of ours ---- */

static void emit_access(Buf *b, const AfAccess *a) {
  buf_printf(b, "%s[", a->tensor);
  for (int k = 0; k < a->n; k++)
    buf_printf(b, "%s%s", k ? ", " : "", a->expr[k]);
  buf_printf(b, "]");
}

static void emit_einsum(Af *af, const AfEinsum *e) {
  Buf b = {0};
  emit_access(&b, &e->out);
  buf_printf(&b, " =");
  if (e->rhs) { /* the operators as written, each read in rank order */
    size_t at = 0, from = 0, nm, op, cl;
    for (int i = 0; next_access(e->rhs, &at, &nm, &op, &cl); i++) {
      buf_printf(&b, "%.*s", (int)(nm - from), e->rhs + from);
      emit_access(&b, &e->in[i]);
      from = cl + 1;
    }
    buf_printf(&b, "%s", e->rhs + from);
  } else {
    for (int i = 0; i < e->nin; i++) {
      buf_printf(&b, "%s", i ? " * " : " ");
      emit_access(&b, &e->in[i]);
    }
  }
  if (e->reduce)
    buf_printf(&b, " :: sum(%s)", e->reduce);
  Buf q = {0}; /* a double-quoted YAML scalar */
  for (const char *c = b.s; *c; c++)
    buf_printf(&q, "%s%c", *c == '"' || *c == '\\' ? "\\" : "", *c);
  tr_line(af->t, e->loc, "    - \"%s\"", q.s);
  buf_free(&q);
  buf_free(&b);
}

static void emit_shape(Af *af) {
  tr_line(af->t, (Loc){0, 0}, "shape:");
  for (int r = 0; r < af->nranks; r++) {
    const AfRank *k = &af->ranks[r];
    int root = rank_root(af, r);
    Loc at = k->size ? k->size->loc : k->loc;
    if (root != r)
      tr_line(af->t, at, "  %s: %s", k->name, af->ranks[root].name);
    else
      tr_line(af->t, at, "  %s: %.17g%s%s", k->name, k->value,
              k->why ? "    # " : "", k->why ? k->why : "");
  }
}

/* The template variables the file read, as params, so that --set may
 * give them again (classify/eval re-render with the new value). */
static void emit_params(Af *af, const char *used, const SpecLoad *o) {
  bool first = true;
  for (const char *s = used; s && *s && *s != '\n';) {
    s += strspn(s, " ");
    size_t n = strcspn(s, " \n");
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)n, s);
    s += n;
    for (int i = 0; o && i < o->nsets; i++)
      if (strcmp(o->sets[i].name, name) == 0 && rank_find(af, name) < 0) {
        if (first)
          tr_line(af->t, (Loc){0, 0}, "params:    # template variables");
        first = false;
        tr_line(af->t, (Loc){0, 0}, "  %s: %.17g", name, o->sets[i].value);
      }
  }
}

static void emit_spec(Af *af, const char *used, const SpecLoad *o) {
  emit_shape(af);
  emit_params(af, used, o);
  tr_line(af->t, (Loc){0, 0}, "einsum:");
  tr_line(af->t, (Loc){0, 0}, "  declaration:");
  for (int t = 0; t < af->ntensors; t++) {
    Buf b = {0};
    for (int k = 0; k < af->tensors[t].n; k++)
      buf_printf(&b, "%s%s", k ? ", " : "",
                 af->ranks[af->tensors[t].rank[k]].name);
    tr_line(af->t, (Loc){0, 0}, "    %s: [%s]", af->tensors[t].name,
            b.s ? b.s : "");
    buf_free(&b);
  }
  tr_line(af->t, (Loc){0, 0}, "  expressions:");
  for (int i = 0; i < af->neinsums; i++)
    emit_einsum(af, &af->einsums[i]);
}

/* ---- the workload ---- */

static bool load_workload(Af *af, const YamlNode *w) {
  static const char *const keys[] = {"version", "rank_sizes",
                                     "iteration_space_shape", "shape",
                                     "einsums",
                                     "bits_per_value", "persistent_tensors",
                                     "n_instances", NULL};
  if (!want(af, w, YN_MAP, "workload (rank_sizes, einsums, ...)") ||
      !check_keys(af, w, "workload", keys))
    return false;
  for (int i = 0; i < w->n; i++) {
    const char *k = w->keys[i]->text;
    if (strcmp(k, "bits_per_value") == 0 ||
        strcmp(k, "persistent_tensors") == 0 ||
        (strcmp(k, "n_instances") == 0 && is_not(w->items[i], "1")))
      note_unmodelled_attr(af, k, "workload");
  }
  if (!load_rank_sizes(af, ydoc_get(w, "rank_sizes"), true))
    return false;
  /* `shape` is version 0.5's name of iteration_space_shape. */
  if (!load_bounds(af, ydoc_get(w, "iteration_space_shape"), af->bounds,
                   &af->nbounds) ||
      !load_bounds(af, ydoc_get(w, "shape"), af->bounds, &af->nbounds))
    return false;
  const YamlNode *einsums = ydoc_get(w, "einsums");
  if (!einsums || einsums->kind != YN_SEQ || !einsums->n)
    return fail(af, w->loc, "workload has no einsums");
  if (!load_einsums(af, einsums) || !order_einsums(af) ||
      !size_classes(af) || !derive_sizes(af))
    return false;
  for (int i = 0; i < af->neinsums; i++)
    if (!check_copy(af, &af->einsums[i]))
      return false;
  return true;
}

static bool translate_doc(Af *af, const YamlNode *root, const char *used,
                          const SpecLoad *o) {
  static const char *const keys[] = {"workload", "renames", NULL};
  if (!want(af, root, YN_MAP, "the top level (workload:)") ||
      !check_keys(af, root, "an AccelForge file", keys))
    return false;
  const YamlNode *w = ydoc_get(root, "workload");
  if (!w)
    return fail(af, root->loc, "an AccelForge file without 'workload'");
  if (ydoc_get(root, "renames"))
    note_unmodelled_attr(af, "renames", "the file");
  if (!load_workload(af, w))
    return false;
  emit_spec(af, used, o);
  return true;
}

/* Does TEXT (LEN bytes, not NUL-terminated) hold PAT? */
static bool holds(const char *text, size_t len, const char *pat) {
  size_t n = strlen(pat);
  for (size_t i = 0; i + n <= len; i++)
    if (text[i] == pat[0] && memcmp(text + i, pat, n) == 0)
      return true;
  return false;
}

/* Does TEXT need AccelForge's preprocessing (Jinja, includes, merges)? */
static bool templated(const char *text, size_t len) {
  static const char *const marks[] = {"{{", "{%", "{#", "!include", "<<"};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (holds(text, len, marks[i]))
      return true;
  return false;
}

bool accelforge_translate(const char *path, const char *text, size_t len,
                          const SpecLoad *o, Translation *t, Diag *d) {
  Af af = {.path = path, .t = t, .d = d};
  Buf rendered = {0};
  YamlDoc *doc = NULL;
  const char *used = NULL;
  if (templated(text, len)) {
    if (spec_render_accelforge(path, o, &rendered, d)) {
      /* Positions refer to the rendered text (import --rendered). */
      snprintf(t->rendered, sizeof t->rendered, "%s (rendered)", path);
      af.path = t->path = t->rendered;
      used = rendered.s + strlen("# variables:");
      doc = ydoc_parse(af.path, rendered.s, rendered.len, d);
    }
  } else if (o && o->vars && o->nvars) {
    diag_error(d, path, (Loc){0, 0}, "--set %.*s: the file is no template "
               "(it reads no variables)", (int)strcspn(o->vars[0], "="),
               o->vars[0]);
  } else {
    doc = ydoc_parse(path, text, len, d);
  }
  bool ok = doc && translate_doc(&af, doc->root, used, o);
  ydoc_free(doc);
  buf_free(&rendered);
  free(af.ranks);
  free(af.tensors);
  free(af.einsums);
  arena_free(&af.ar);
  return ok;
}
