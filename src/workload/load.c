/* load.c — reading the sections of a cascade spec. */
#include "peer.h"

#include "../preset/preset.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Sections of TeAAL (and ours) that later stages may read; the loader
 * keeps them as YAML trees. */
static const char *const kept_sections[] = {"mapping", "format",
                                            "architecture", "bindings",
                                            "weights", NULL};
static const char *const own_sections[] = {
    "einsum", "shape", "params", "model", "outputs", "sequence", "units",
    "append", NULL};

static bool in_list(const char *const *list, const char *s) {
  for (int i = 0; list[i]; i++)
    if (strcmp(list[i], s) == 0)
      return true;
  return false;
}

static bool is_identifier(const char *s) {
  if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return false;
  return true;
}

/* ydoc.h's check, in the loader's terms (N NULL: the section is empty). */
static bool want(Cascade *c, const YamlNode *n, YamlKind kind,
                 const char *what, Diag *d) {
  if (!n) { /* an empty value: no node to name the file */
    diag_error(d, c->path, (Loc){1, 1}, "expected %s for %s, found nothing",
               ydoc_kind_name(kind), what);
    return false;
  }
  return ydoc_want(n, kind, what, d);
}

static bool want_identifier(Cascade *c, const YamlNode *n, const char *what,
                            Diag *d) {
  if (!want(c, n, YN_SCALAR, what, d))
    return false;
  if (!is_identifier(n->text)) {
    diag_error(d, c->path, n->loc,
               "%s '%s' is not a name (letters, digits and '_', not starting "
               "with a digit)",
               what, n->text);
    return false;
  }
  return true;
}

static bool load_declaration(Cascade *c, const YamlNode *decl, Diag *d) {
  if (decl->kind == YN_SCALAR && decl->text[0] == 0) {
    diag_error(d, c->path, decl->loc,
               "einsum.declaration is empty: declare TENSOR: [RANKS]");
    return false;
  }
  if (!want(c, decl, YN_MAP, "einsum.declaration (TENSOR: [RANKS])", d))
    return false;
  for (int i = 0; i < decl->n; i++) {
    const YamlNode *name = decl->keys[i], *ranks = decl->items[i];
    if (!want_identifier(c, name, "tensor name", d))
      return false;
    if (!want(c, ranks, YN_SEQ, "the ranks of a tensor (a list of rank names)", d))
      return false;
    if (ranks->n > IR_MAX_RANKS) {
      diag_error(d, c->path, ranks->loc, "%s has %d ranks (at most %d)",
                 name->text, ranks->n, IR_MAX_RANKS);
      return false;
    }
    int r[IR_MAX_RANKS];
    for (int k = 0; k < ranks->n; k++) {
      if (!want_identifier(c, ranks->items[k], "rank", d))
        return false;
      r[k] = cascade_add_rank(c, ranks->items[k]->text, ranks->items[k]->loc);
    }
    cascade_add_tensor(c, name->text, name->loc, ranks->n, r);
  }
  return true;
}

static bool load_params(Cascade *c, const YamlNode *params, Diag *d) {
  if (!params)
    return true;
  if (!want(c, params, YN_MAP, "params (NAME: value)", d))
    return false;
  for (int i = 0; i < params->n; i++) {
    const YamlNode *k = params->keys[i], *v = params->items[i];
    if (!want_identifier(c, k, "parameter name", d))
      return false;
    if (cascade_rank(c, k->text) >= 0) {
      diag_error(d, c->path, k->loc,
                 "parameter '%s' has the name of a rank: bind rank sizes in "
                 "the shape section",
                 k->text);
      return false;
    }
    if (!want(c, v, YN_SCALAR, "a parameter's value (a constant)", d))
      return false;
    Expr *e = spec_parse_const(c, v, d);
    if (!e)
      return false;
    Param p = {.name = arena_strdup(&c->arena, k->text), .loc = k->loc,
               .value = e};
    cascade_add_param(c, p);
  }
  return true;
}

/* `J: I`, a size that is exactly another rank's name, makes J another
 * name of I: follow such chains to the rank that has a size of its own,
 * and declare every tensor over that rank. */
static bool resolve_aliases(Cascade *c, const YamlNode *shape, Diag *d) {
  for (int i = 0; i < shape->n; i++) {
    int r = cascade_rank(c, shape->keys[i]->text);
    const Expr *e = c->ranks[r].size;
    int to = e->kind == EX_SYM ? cascade_rank(c, c->syms[e->sym].name) : -1;
    if (to >= 0 && to != r)
      c->ranks[r].same_as = to;
  }
  for (int r = 0; r < c->nranks; r++) {
    int to = r, steps = 0;
    while (c->ranks[to].same_as >= 0 && steps++ <= c->nranks)
      to = c->ranks[to].same_as;
    if (c->ranks[to].same_as >= 0) {
      diag_error(d, c->path, c->ranks[r].size_loc,
                 "rank %s is another name of %s, which is in turn another "
                 "name of %s: give one of them a size",
                 c->ranks[r].name, c->ranks[c->ranks[r].same_as].name,
                 c->ranks[r].name);
      return false;
    }
    c->ranks[r].same_as = to == r ? -1 : to;
  }
  for (int t = 0; t < c->ntensors; t++)
    for (int k = 0; k < c->tensors[t].nranks; k++) {
      int *r = &c->tensors[t].ranks[k];
      if (c->ranks[*r].same_as >= 0)
        *r = c->ranks[*r].same_as;
      c->ranks[*r].window = false; /* a tensor has it now */
    }
  return true;
}

static bool load_shape(Cascade *c, const YamlNode *shape, Diag *d) {
  if (!shape)
    return true;
  if (!want(c, shape, YN_MAP, "shape (RANK: size)", d))
    return false;
  c->has_shape = true;
  for (int i = 0; i < shape->n; i++) {
    const YamlNode *k = shape->keys[i], *v = shape->items[i];
    if (!want_identifier(c, k, "rank", d))
      return false;
    if (cascade_param(c, k->text) >= 0) {
      diag_error(d, c->path, k->loc,
                 "rank '%s' has the name of a parameter of the params "
                 "section",
                 k->text);
      return false;
    }
    int r = cascade_rank(c, k->text);
    if (r < 0) { /* a window rank, if a variable ranges over it (below) */
      r = cascade_add_rank(c, k->text, k->loc);
      c->ranks[r].window = true;
    }
    if (!want(c, v, YN_SCALAR, "a rank's size (an expression)", d))
      return false;
    c->ranks[r].size = spec_parse_const(c, v, d);
    c->ranks[r].size_loc = v->loc;
    if (!c->ranks[r].size)
      return false;
  }
  return resolve_aliases(c, shape, d);
}

/* Does E have a window variable over RANK: one named as RANK in lower
 * case (the rule of expr.c)? */
static bool window_var_over(const Cascade *c, const Einsum *e, int rank) {
  const char *name = c->ranks[rank].name;
  int same = c->ranks[rank].same_as >= 0 ? c->ranks[rank].same_as : rank;
  for (int v = 0; e && v < e->nvars; v++) {
    const char *x = e->vars[v].name;
    if (e->vars[v].rank != same)
      continue;
    size_t k = 0;
    while (x[k] && toupper((unsigned char)x[k]) == name[k])
      k++;
    if (!x[k] && !name[k])
      return true;
  }
  return false;
}

/* A rank named only in the shape section must be a window rank that some
 * index variable ranges over: anything else is a typo. */
static bool check_window_ranks(Cascade *c, Diag *d) {
  for (int r = 0; r < c->nranks; r++) {
    bool used = !c->ranks[r].window;
    for (int i = 0; !used && i < c->neinsums; i++)
      used = window_var_over(c, c->einsums[i], r);
    for (int t = 0; !used && t < c->ntensors; t++)
      used = window_var_over(c, c->tensors[t].init, r);
    if (!used) {
      diag_error(d, c->path, c->ranks[r].loc,
                 "undeclared rank '%s' in shape: no tensor of "
                 "einsum.declaration has it, and no index variable ranges "
                 "over it (a window variable is named as its rank in lower "
                 "case: u for U)",
                 c->ranks[r].name);
      return false;
    }
  }
  return true;
}

static bool load_model(Cascade *c, const YamlNode *model, Diag *d) {
  if (!model)
    return true;
  if (!want(c, model, YN_SCALAR, "model (a preset name)", d))
    return false;
  if (!preset_find(model->text)) {
    Buf b = {0};
    for (int i = 0; preset_at(i); i++)
      buf_printf(&b, "%s%s", i ? ", " : "", preset_at(i)->sizes.name);
    diag_error(d, c->path, model->loc, "unknown model '%s' (expected one of %s)",
               model->text, b.s);
    buf_free(&b);
    return false;
  }
  c->model = arena_strdup(&c->arena, model->text);
  c->model_loc = model->loc;
  return true;
}

static bool load_expressions(Cascade *c, const YamlNode *exprs, Diag *d) {
  if (!want(c, exprs, YN_SEQ, "einsum.expressions (a list of strings)", d))
    return false;
  if (exprs->n == 0) {
    diag_error(d, c->path, exprs->loc, "einsum.expressions is empty");
    return false;
  }
  for (int i = 0; i < exprs->n; i++) {
    const YamlNode *x = exprs->items[i];
    if (x->kind == YN_MAP) {
      diag_error(d, c->path, x->loc,
                 "expected an expression string, found a mapping: a ': ' "
                 "inside an expression makes YAML read 'key: value'; quote "
                 "the expression (\"Y[i] = X[i,k] :: max(k)\")");
      return false;
    }
    if (!want(c, x, YN_SCALAR, "an expression (a string)", d))
      return false;
    if (!spec_parse_einsum(c, x, d))
      return false;
  }
  if (c->neinsums == 0) {
    diag_error(d, c->path, exprs->loc,
               "einsum.expressions holds only initializations");
    return false;
  }
  return true;
}

/* What a section that lists tensors does to each one it lists: T, named
 * at X. False (D set) when T cannot be one. */
typedef bool TakeTensor(Cascade *c, int t, const YamlNode *x, Diag *d);

/* SECTION: [TENSOR, ...] (LIST; absent: none), WHAT the list is for
 * messages, ENTRY each name; each a declared tensor, given to TAKE. */
static bool load_tensor_list(Cascade *c, const YamlNode *list,
                             const char *section, const char *what,
                             const char *entry, TakeTensor *take, Diag *d) {
  if (!list)
    return true;
  if (!want(c, list, YN_SEQ, what, d))
    return false;
  for (int i = 0; i < list->n; i++) {
    const YamlNode *x = list->items[i];
    if (!want_identifier(c, x, entry, d))
      return false;
    int t = cascade_tensor(c, x->text);
    if (t < 0) {
      diag_error(d, c->path, x->loc, "unknown tensor '%s' in %s", x->text,
                 section);
      return false;
    }
    if (!take(c, t, x, d))
      return false;
  }
  return true;
}

static bool take_output(Cascade *c, int t, const YamlNode *x, Diag *d) {
  (void)x, (void)d;
  c->tensors[t].output = true;
  return true;
}

/* sequence: RANK -- the rank `--phase decode` sets to one token. */
static bool load_sequence(Cascade *c, const YamlNode *n, Diag *d) {
  if (!n)
    return true;
  if (!want_identifier(c, n, "sequence rank", d))
    return false;
  int r = cascade_rank(c, n->text);
  if (r < 0) {
    diag_error(d, c->path, n->loc,
               "sequence names '%s', which is not a declared rank", n->text);
    return false;
  }
  c->sequence = r;
  c->sequence_loc = n->loc;
  return true;
}

/* units: {TENSOR: ROLE} -- the kind of unit that runs the Einsum writing
 * TENSOR, whatever the model's binding rules say (docs/model.md §2). */
static bool load_units(Cascade *c, const YamlNode *m, Diag *d) {
  static const char *const roles[] = {"matrix", "vector", "feeder", NULL};
  if (!m)
    return true;
  if (!want(c, m, YN_MAP, "units (TENSOR: matrix, vector or feeder)", d))
    return false;
  for (int i = 0; i < m->n; i++) {
    const YamlNode *k = m->keys[i], *v = m->items[i];
    int t = cascade_tensor(c, k->text);
    if (t < 0 || c->tensors[t].producer < 0) {
      diag_error(d, c->path, k->loc,
                 "units: '%s' is not the output of an Einsum", k->text);
      return false;
    }
    if (!want(c, v, YN_SCALAR, "a unit (matrix, vector or feeder)", d))
      return false;
    if (!in_list(roles, v->text)) {
      diag_error(d, c->path, v->loc,
                 "unknown unit role '%s' (expected matrix, vector or feeder)",
                 v->text);
      return false;
    }
    Einsum *e = c->einsums[c->tensors[t].producer];
    e->unit = arena_strdup(&c->arena, v->text);
    e->unit_loc = v->loc;
  }
  return true;
}

/* Does an initialization read input T whole, with its conditioned
 * variable plainly offset along one coordinate of T (K[b,h,m<0,e] =
 * KC[b,h,m+T,e]), so that a next pass's T can be derived step by step? */
static bool is_history(const Cascade *c, int t) {
  for (int u = 0; u < c->ntensors; u++) {
    const Einsum *ini = c->tensors[u].init;
    int k = ini ? init_history_dim(ini) : -1;
    if (k >= 0 && ini->rhs->acc->tensor == t &&
        ini->rhs->acc->idx[k].nterms == 1 && !ini->rhs->acc->idx[k].coef[0])
      return true;
  }
  return false;
}

/* append: [TENSOR, ...] -- decode states that grow (a KV cache): each an
 * input that an initialization reads whole, along its conditioned
 * variable (K[b,h,m<0,e] = KC[b,h,m+T,e]). */
static bool take_append(Cascade *c, int t, const YamlNode *x, Diag *d) {
  if (!is_history(c, t)) {
    diag_error(d, c->path, x->loc,
               "append: %s is not a history an initialization reads: "
               "expected an input read as T[..., v<0, ...] = %s[..., v+N, "
               "...] (a KV cache: K[b,h,m<0,e] = KC[b,h,m+T,e])",
               x->text, x->text);
    return false;
  }
  c->tensors[t].append = true;
  return true;
}

static bool check_outputs_produced(Cascade *c, const YamlNode *outs,
                                   Diag *d) {
  for (int i = 0; outs && i < outs->n; i++) {
    int t = cascade_tensor(c, outs->items[i]->text);
    if (c->tensors[t].producer < 0) {
      diag_error(d, c->path, outs->items[i]->loc,
                 "output %s is an input: no Einsum produces it",
                 outs->items[i]->text);
      return false;
    }
  }
  return true;
}

static bool load_root(Cascade *c, const YamlNode *root, Diag *d) {
  if (!root) {
    diag_error(d, c->path, (Loc){1, 1},
               "empty spec: expected an 'einsum' section");
    return false;
  }
  if (!want(c, root, YN_MAP, "the top level (with an 'einsum' section)", d))
    return false;
  for (int i = 0; i < root->n; i++) {
    const char *k = root->keys[i]->text;
    if (!in_list(kept_sections, k) && !in_list(own_sections, k)) {
      diag_error(d, c->path, root->keys[i]->loc,
                 "unknown section '%s' (expected einsum, shape, params, model, "
                 "outputs, sequence, units, append, weights, or TeAAL's "
                 "mapping, format, architecture, bindings)",
                 k);
      return false;
    }
  }
  const YamlNode *einsum = ydoc_need(root, "einsum", root->loc, "the spec",
                                    "declarations and expressions", d);
  Loc einsum_loc = root->loc;
  for (int i = 0; i < root->n; i++)
    if (strcmp(root->keys[i]->text, "einsum") == 0)
      einsum_loc = root->keys[i]->loc;
  if (!einsum)
    return false;
  if (!want(c, einsum, YN_MAP, "einsum (declaration, expressions)", d))
    return false;
  static const char *const einsum_keys[] = {"declaration", "expressions",
                                             NULL};
  if (!ydoc_known_keys(einsum, einsum_keys, "einsum", d))
    return false;
  const YamlNode *decl = ydoc_get(einsum, "declaration");
  const YamlNode *exprs = ydoc_get(einsum, "expressions");
  if (!decl || !exprs) {
    diag_error(d, c->path, einsum_loc, "einsum has no '%s' (it needs both "
                                       "'declaration' and 'expressions')",
               decl ? "expressions" : "declaration");
    return false;
  }
  return load_declaration(c, decl, d) &&
         load_params(c, ydoc_get(root, "params"), d) &&
         load_shape(c, ydoc_get(root, "shape"), d) &&
         load_model(c, ydoc_get(root, "model"), d) &&
         load_expressions(c, exprs, d) && check_window_ranks(c, d) &&
         load_tensor_list(c, ydoc_get(root, "outputs"), "outputs",
                          "outputs (a list of tensor names)",
                          "an output (a tensor name)", take_output, d) &&
         cascade_finish(c, d) &&
         check_outputs_produced(c, ydoc_get(root, "outputs"), d) &&
         load_sequence(c, ydoc_get(root, "sequence"), d) &&
         load_units(c, ydoc_get(root, "units"), d) &&
         load_tensor_list(c, ydoc_get(root, "append"), "append",
                          "append (a list of decode-state tensors)",
                          "tensor name", take_append, d);
}

static bool is_set(const SpecLoad *o, const char *name) {
  for (int i = 0; o && i < o->nsets; i++)
    if (strcmp(o->sets[i].name, name) == 0)
      return true;
  return false;
}

/* A scalar that nothing binds would evaluate as NaN (an all-NaN result,
 * exit 0): refuse it where it is first used. */
static bool check_bound(Cascade *c, const SpecLoad *o, Diag *d) {
  for (int i = 0; i < c->nsyms; i++) {
    const char *n = c->syms[i].name;
    if (cascade_rank(c, n) >= 0 || cascade_param(c, n) >= 0 ||
        preset_is_param(n) || is_set(o, n))
      continue;
    diag_error(d, c->path, c->syms[i].loc,
               "unknown name '%s': an unbound scalar (not a rank, a params "
               "entry or a model parameter); give its value in the params "
               "section or with --set %s=VALUE",
               n, n);
    return false;
  }
  return true;
}

/* TeAAL's sections that we keep but do not model: said once, by name. */
static void note_unmodelled(const Cascade *c, const YamlNode *root,
                            FILE *notes) {
  static const char *const teaal[] = {"mapping", "format", "architecture",
                                      "bindings", NULL};
  Buf b = {0};
  for (int i = 0; root && i < root->n; i++)
    if (in_list(teaal, root->keys[i]->text))
      buf_printf(&b, "%s%s", b.len ? ", " : "", root->keys[i]->text);
  if (b.len && notes)
    fprintf(notes,
            "%s: warning: TeAAL's %s section%s read but not modelled: the "
            "cascade is priced dense, with the mappings of the accelerator "
            "model (docs/compat.md)\n",
            c->path, b.s, strchr(b.s, ',') ? "s are" : " is");
  buf_free(&b);
}

/* ---- a sum over one factor of a product ---- */

static bool reads_tensor(const Expr *x) {
  return x && (x->kind == EX_READ || reads_tensor(x->a) ||
               reads_tensor(x->b) || reads_tensor(x->c));
}

/* The factors of product X (through '*', both sides of '/' and prefix
 * '-') that read a tensor; constants and sizes are not factors here. */
static int tensor_factors(const Expr *x, const Expr **out, int n, int max) {
  if (expr_is(x, OP_MUL) || expr_is(x, OP_DIV))
    return tensor_factors(x->b, out, tensor_factors(x->a, out, n, max), max);
  if (expr_is(x, OP_NEG))
    return tensor_factors(x->a, out, n, max);
  if (reads_tensor(x) && n < max)
    out[n++] = x;
  return n;
}

/* Where variable V is first used in X: an index of a read, or V as a
 * value. */
static const Loc *var_loc(const Expr *x, int v) {
  if (!x)
    return NULL;
  if (x->kind == EX_VAR && x->var == v)
    return &x->loc;
  if (x->kind == EX_READ)
    for (int k = 0; k < x->acc->n; k++)
      for (int t = 0; t < x->acc->idx[k].nterms; t++)
        if (x->acc->idx[k].var[t] == v)
          return &x->acc->idx[k].loc;
  const Loc *l = var_loc(x->a, v);
  l = l ? l : var_loc(x->b, v);
  return l ? l : var_loc(x->c, v);
}

/* The implicit sum of term X of E over a variable that only one factor of
 * the product reads: sum_w ON[v] * silu(GA[w]) scales ON by a sum of GA,
 * which a typo (w for v) writes as often as the intent does. */
static void warn_one_factor_sums(const Cascade *c, const Einsum *e,
                                 const Expr *x, FILE *notes) {
  if (expr_is(x, OP_ADD) || expr_is(x, OP_SUB)) {
    warn_one_factor_sums(c, e, x->a, notes);
    warn_one_factor_sums(c, e, x->b, notes);
    return;
  }
  const Expr *f[IR_MAX_VARS];
  int n = tensor_factors(x, f, 0, IR_MAX_VARS);
  VarSet red = expr_vars(x) & ~e->out_vars;
  for (int v = 0; n >= 2 && v < e->nvars; v++) {
    if (!VARSET_HAS(red, v))
      continue;
    int in = -1, count = 0;
    for (int i = 0; i < n; i++)
      if (VARSET_HAS(expr_vars(f[i]), v)) {
        in = i;
        count++;
      }
    const Loc *l = count == 1 ? var_loc(f[in], v) : NULL;
    if (l)
      fprintf(notes,
              "%s:%d:%d: warning: '%s' is summed but only one factor of the "
              "product reads it: the sum scales the other factors by a sum "
              "over %s; write ':: sum(%s)' if that is meant, else check the "
              "index\n",
              c->path, l->line, l->col, e->vars[v].name, e->vars[v].name,
              e->vars[v].name);
  }
}

static void warn_sums(const Cascade *c, FILE *notes) {
  for (int i = 0; notes && i < c->neinsums; i++)
    if (!c->einsums[i]->explicit_red)
      warn_one_factor_sums(c, c->einsums[i], c->einsums[i]->rhs, notes);
}

/* The spec of DOC (consumed: freed on failure), or NULL. */
Spec *spec_of(const char *path, YamlDoc *doc, const SpecLoad *o,
                     Diag *d) {
  if (!doc)
    return NULL;
  Cascade *c = cascade_new(path);
  if (!load_root(c, doc->root, d) || !check_bound(c, o, d)) {
    cascade_free(c);
    ydoc_free(doc);
    return NULL;
  }
  note_unmodelled(c, doc->root, o ? o->notes : NULL);
  warn_sums(c, o ? o->notes : NULL);
  Spec *s = xmalloc(sizeof *s);
  *s = (Spec){c, doc};
  return s;
}

/* The cascade of S, whose document is freed. */
Cascade *cascade_only(Spec *s) {
  if (!s)
    return NULL;
  Cascade *c = s->cascade;
  ydoc_free(s->doc);
  free(s);
  return c;
}

Cascade *spec_parse_native(const char *path, const char *text, size_t len,
                           const SpecLoad *o, Diag *d) {
  return cascade_only(spec_of(path, ydoc_parse(path, text, len, d), o, d));
}

const YamlNode *spec_section(const Spec *s, const char *name) {
  return s->doc && in_list(kept_sections, name)
             ? ydoc_get(s->doc->root, name)
             : NULL;
}

void spec_close(Spec *s) {
  if (!s)
    return;
  cascade_free(s->cascade);
  ydoc_free(s->doc);
  free(s);
}
