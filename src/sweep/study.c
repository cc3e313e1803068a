/* study.c — loading a study file (docs/sweep.md) into a Study: strict,
 * like the other loaders (every key known, every value checked, the first
 * problem reported at its FILE:LINE:COL), and complete: the cascades are
 * bound to every shape the points need and every architecture variant is
 * built and loaded here, so that a point can only fail for what the model
 * finds (a buffer too small for one tile). */
#include "study.h"
#include "study_values.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../embed/embed.h"
#include "../net/net.h"
#include "../workload/accelforge_arch.h"
#include "../workload/workload.h"

enum { MAX_POINTS = 100000000 };

/* *ACC times N (a count of values, >= 0), checked: false when the product
 * passes MAX_POINTS (five ranges of 8192 values would wrap a long). */
static bool count_times(long *acc, long n) {
  uint64_t r;
  if (n < 0 || !mul_u64((uint64_t)*acc, (uint64_t)n, &r) || r > MAX_POINTS)
    return false;
  *acc = (long)r;
  return true;
}

/* What a study holds while it runs, measured on studies of 4000 and 8000
 * points (peak RSS): per point about 16 KiB (its result, on its rank and
 * gathered on rank 0; sweep.json's tree and text; points.csv; the chart),
 * and per shape slot (a cascade bound to a settings tuple, with its
 * classified pairs) about 4 KiB. */
enum { POINT_BYTES = 16 << 10, SHAPE_BYTES = 4 << 10 };

double study_memory(long points, double shapes) {
  return (double)points * POINT_BYTES + shapes * SHAPE_BYTES;
}

/* Refuse, before it is allocated, a study of POINTS points (WHAT says
 * which) and SHAPES shape slots that would hold more than the budget. */
static bool memory_fits(Loader *L, Loc loc, const char *what, long points,
                        double shapes) {
  double need = study_memory(points, shapes);
  if (need <= L->budget)
    return true;
  Buf n = {0}, b = {0};
  buf_bytes(&n, need);
  buf_bytes(&b, L->budget);
  fail(L, loc, "%s %ld point%s: about %s of memory, more than the budget "
               "of %s (--max-memory, else the memory available)",
       what, points, points == 1 ? "" : "s", n.s, b.s);
  buf_free(&n);
  buf_free(&b);
  return false;
}


/* ---- inputs named by the study ---- */

/* NAME relative to the study's directory if such a file exists, else as
 * source_open finds it (the working directory, then the shipped files). */
static bool open_input(Loader *L, const char *dir, const YamlNode *name,
                       Source *src) {
  const char *slash = strrchr(L->s->path, '/');
  if (slash && name->text[0] != '/') {
    size_t n = (size_t)(slash - L->s->path) + 1;
    char *rel = arena_alloc(&L->s->arena, n + strlen(name->text) + 1);
    memcpy(rel, L->s->path, n);
    strcpy(rel + n, name->text);
    Diag ignore = {0};
    if (access(rel, R_OK) == 0 && source_open(dir, rel, src, &ignore))
      return true;
  }
  Diag d = {0};
  if (source_open(dir, name->text, src, &d))
    return true;
  return fail(L, name->loc,
              "cannot read '%s': not a file (here or beside the study) nor a "
              "shipped one under %s/",
              name->text, dir);
}

/* ---- cascades ---- */

static const char *const cascade_keys[] = {"spec", "models", "set", NULL};
static const char *const config_keys[] = {"config", NULL};

static bool load_models(Loader *L, const YamlNode *models, int ci) {
  Study *s = L->s;
  const Cascade *c = s->cascades[ci].c;
  YamlNode *one;
  YamlNode *const *items = NULL;
  int n = 1;
  if (models && !study_as_list(L, models, "models", &items, &n, &one))
    return false;
  for (int i = 0; i < n; i++) {
    const Preset *p = NULL;
    const char *name = models ? items[i]->text : c->model;
    if (models && !want(L, items[i], YN_SCALAR, "a model"))
      return false;
    if (name) {
      p = preset_find(name);
      Loc at = models ? items[i]->loc : s->cascades[ci].loc;
      if (!p) {
        Buf b = {0};
        for (int k = 0; preset_at(k); k++)
          buf_printf(&b, "%s%s", k ? ", " : "", preset_at(k)->sizes.name);
        fail(L, at, "unknown model '%s' (expected one of %s)", name, b.s);
        buf_free(&b);
        return false;
      }
      const Preset *own = c->model ? preset_find(c->model) : NULL;
      if (own && own->version != p->version)
        return fail(L, at,
                    "%s is written for Mamba-%d models (its model is %s), "
                    "but %s is a Mamba-%d model",
                    c->path, own->version, own->sizes.name, p->sizes.name,
                    p->version);
    }
    s->cms = xrealloc(s->cms, (size_t)(s->ncms + 1) * sizeof *s->cms);
    s->cms[s->ncms++] = (CascadeModel){ci, p};
  }
  return true;
}

static bool load_cascade(Loader *L, const YamlNode *m, int ci) {
  Study *s = L->s;
  StudyCascade *sc = &s->cascades[ci];
  if (!want(L, m, YN_MAP, "a cascade ({spec, models, set})") ||
      !check_keys(L, m, cascade_keys, "a cascade"))
    return false;
  const YamlNode *spec = need(L, m, "spec", "a cascade",
                              "a path or a shipped spec: mamba1, mamba2, "
                              "transformer");
  if (!spec || !want(L, spec, YN_SCALAR, "spec"))
    return false;
  sc->spec = spec->text;
  sc->loc = m->loc;
  if (!open_input(L, "specs", spec, &sc->src))
    return false;
  SpecLoad load = {.read = &s->read};
  sc->c = spec_parse_with(sc->src.path, sc->src.text, sc->src.len, &load,
                          L->d);
  if (!sc->c)
    return false;
  const YamlNode *set = ydoc_get(m, "set");
  if (set) {
    if (!want(L, set, YN_MAP, "set (NAME: value)"))
      return false;
    sc->set = arena_alloc(&s->arena, ((size_t)set->n + 1) * sizeof *sc->set);
    for (int i = 0; i < set->n; i++) {
      const char *name = set->keys[i]->text;
      if (!shape_setting_known(sc->c, name) && !preset_is_param(name))
        return fail(L, set->keys[i]->loc,
                    "'%s' is not a rank, parameter or model parameter of %s",
                    name, sc->c->path);
      double v;
      if (!study_number(L, set->items[i], name, &v))
        return false;
      sc->set[sc->nset++] = (Setting){name, v};
    }
  }
  return load_models(L, ydoc_get(m, "models"), ci);
}

/* A whole model ({config: PATH}, docs/models.md): one cascade per
 * distinct block of the model, its shipped spec with the block's sizes as
 * the cascade's own settings, named "MODEL: BLOCK"; the points price each
 * block per layer (a routed block's experts follow the batch and the
 * tokens: its spec's routing). */
static bool load_config(Loader *L, const YamlNode *m) {
  Study *s = L->s;
  if (!check_keys(L, m, config_keys, "a whole model ({config})"))
    return false;
  const YamlNode *cfg = ydoc_get(m, "config");
  if (!want(L, cfg, YN_SCALAR, "config (a config.json or its folder)"))
    return false;
  Source where;
  if (!open_input(L, "configs", cfg, &where))
    return false;
  Net *net = xmalloc(sizeof *net);
  Diag d = {0};
  bool ok = net_config_parse(where.path, where.text, where.len, net, &d);
  if (!ok)
    fail(L, cfg->loc, "%s", d.msg);
  inputset_add(&s->read, where.path);
  source_free(&where);
  for (int b = 0; ok && b < net->nblocks; b++) {
    const Block *bk = &net->blocks[b];
    const EmbeddedFile *f = embedded_file(block_kind_spec(bk->kind, false));
    s->cascades = xrealloc(s->cascades,
                           (size_t)(s->ncascades + 1) * sizeof *s->cascades);
    int ci = s->ncascades++;
    StudyCascade *sc = &s->cascades[ci];
    *sc = (StudyCascade){.loc = m->loc};
    Buf name = {0};
    buf_printf(&name, "%s: %s", net->name, bk->label);
    sc->spec = arena_strdup(&s->arena, name.s);
    buf_free(&name);
    sc->src = (Source){.path = f->name, .shipped = true,
                       .text = xmalloc(f->len + 1), .len = f->len};
    memcpy(sc->src.text, f->data, f->len);
    sc->src.text[f->len] = 0;
    sha256_hex(sc->src.text, sc->src.len, sc->src.sha256);
    ok = (sc->c = spec_parse(f->name, sc->src.text, sc->src.len, L->d));
    sc->set = arena_alloc(&s->arena, (size_t)(bk->nsizes + 1) *
                                         sizeof *sc->set);
    for (int k = 0; ok && k < bk->nsizes; k++)
      sc->set[sc->nset++] =
          (Setting){arena_strdup(&s->arena, bk->names[k]), bk->values[k]};
    s->cms = xrealloc(s->cms, (size_t)(s->ncms + 1) * sizeof *s->cms);
    s->cms[s->ncms++] = (CascadeModel){ci, NULL};
  }
  free(net);
  return ok;
}

static bool load_cascades(Loader *L, const YamlNode *seq) {
  Study *s = L->s;
  if (!study_list(L, seq, "cascades (a list)", "cascades"))
    return false;
  for (int i = 0; i < seq->n; i++) {
    const YamlNode *m = seq->items[i];
    if (m->kind == YN_MAP && ydoc_get(m, "config")) {
      if (!load_config(L, m))
        return false;
      continue;
    }
    s->cascades = xrealloc(s->cascades,
                           (size_t)(s->ncascades + 1) * sizeof *s->cascades);
    memset(&s->cascades[s->ncascades], 0, sizeof *s->cascades);
    s->ncascades++;
    if (!load_cascade(L, m, s->ncascades - 1))
      return false;
  }
  return true;
}

/* ---- settings ---- */

/* NAME must bind something in every cascade ("tokens": each one's
 * sequence rank), and not also be fixed by a cascade's own set. */
static bool check_setting(Loader *L, const YamlNode *key) {
  const Study *s = L->s;
  const char *name = key->text;
  for (int i = 0; i < s->ncascades; i++) {
    const StudyCascade *sc = &s->cascades[i];
    if (strcmp(name, "tokens") == 0) {
      if (cascade_sequence_rank(sc->c) < 0)
        return fail(L, key->loc,
                    "tokens: %s has no sequence rank (name it with "
                    "'sequence: RANK')",
                    sc->c->path);
    } else if (!shape_setting_known(sc->c, name) && !preset_is_param(name)) {
      return fail(L, key->loc,
                  "'%s' is not a rank, parameter or model parameter of %s "
                  "(give it in that cascade's 'set', or use 'tokens' for "
                  "each cascade's sequence rank)",
                  name, sc->c->path);
    }
    for (int k = 0; k < sc->nset; k++)
      if (strcmp(sc->set[k].name, name) == 0)
        return fail(L, key->loc, "'%s' is also fixed by the 'set' of %s",
                    name, sc->spec);
    int r = cascade_sequence_rank(sc->c);
    for (int k = 0; r >= 0 && k < s->nsettings; k++) {
      const char *o = s->settings[k].name;
      bool tok = strcmp(o, "tokens") == 0 || strcmp(name, "tokens") == 0;
      const char *rank = sc->c->ranks[r].name;
      if (tok && (strcmp(o, rank) == 0 || strcmp(name, rank) == 0))
        return fail(L, key->loc,
                    "'tokens' and '%s' both set the sequence rank of %s",
                    rank, sc->c->path);
    }
  }
  return true;
}

static bool add_setting(Loader *L, const YamlNode *key) {
  Study *s = L->s;
  for (int k = 0; k < s->nsettings; k++)
    if (strcmp(s->settings[k].name, key->text) == 0)
      return fail(L, key->loc, "'%s' is given twice", key->text);
  if (!check_setting(L, key))
    return false;
  s->settings = xrealloc(s->settings,
                         (size_t)(s->nsettings + 1) * sizeof *s->settings);
  s->settings[s->nsettings++] = (SettingAxis){key->text, key->loc, 0, NULL};
  return true;
}

static bool load_settings(Loader *L, const YamlNode *m) {
  if (!want(L, m, YN_MAP, "settings (NAME: value, list or range)"))
    return false;
  for (int i = 0; i < m->n; i++) {
    if (!add_setting(L, m->keys[i]))
      return false;
    SettingAxis *ax = &L->s->settings[L->s->nsettings - 1];
    if (!study_numbers(L, m->items[i], ax->name, &ax->values, &ax->n))
      return false;
  }
  return true;
}

/* ---- architectures and their parameters ---- */

/* An AccelForge architecture (docs/compat.md) is studied as its
 * translation into ours, as eval loads it: the study's parameter paths
 * name the translation's fields (`import accelforge-arch` writes it).
 * SA's source text becomes the translation (its sha256 stays the file's),
 * its notes SA's, for the caller to print; the files a template reads
 * are the study's inputs. */
static bool as_ours(Loader *L, StudyArch *sa) {
  sa->notes = "";
  if (!accelforge_arch_format(sa->src.text, sa->src.len))
    return true;
  Buf out = {0};
  Arch *a = arch_parse_accelforge(sa->src.path, sa->src.text, sa->src.len,
                                  NULL, 0, &L->s->read, &out, L->d);
  if (a) {
    sa->notes = arena_strdup(&L->s->arena, a->notes);
    free(sa->src.text);
    sa->src.text = out.s;
    sa->src.len = out.len;
  } else {
    buf_free(&out);
  }
  arch_free(a);
  return a != NULL;
}

static bool load_archs(Loader *L, const YamlNode *n) {
  Study *s = L->s;
  static const YamlNode dflt = {.kind = YN_SCALAR, .text = "mambalaya"};
  YamlNode *one;
  YamlNode *const *items = NULL;
  int count = 1;
  if (n && !study_as_list(L, n, "architectures", &items, &count, &one))
    return false;
  s->archs = xcalloc((size_t)count, sizeof *s->archs);
  for (int i = 0; i < count; i++) {
    const YamlNode *a = n ? items[i] : &dflt;
    if (!want(L, a, YN_SCALAR, "an architecture"))
      return false;
    s->narchs = i + 1;
    s->archs[i].name = a->text;
    s->archs[i].loc = n ? a->loc : (Loc){1, 1};
    if (!open_input(L, "archs", a, &s->archs[i].src) ||
        !as_ours(L, &s->archs[i]))
      return false;
  }
  return true;
}

/* Resolve parameter path KEY on base architecture A into *AT (canonical:
 * path.c); *LISTED as add_param's. False, reported at KEY, if it names
 * no field there, or a field another path of the study names. */
static bool resolve_param(Loader *L, const YamlNode *key, int a,
                          const char **at, bool *listed) {
  Study *s = L->s;
  const StudyArch *sa = &s->archs[a];
  YamlDoc *doc = ydoc_parse(sa->src.path, sa->src.text, sa->src.len, L->d);
  if (!doc)
    return false;
  Buf canon = {0}, why = {0};
  bool ok = study_path_resolve(doc->root, sa->src.path, key->text, &canon,
                               &why);
  if (!ok)
    fail(L, key->loc, "%s: %s has no such field: %s", key->text,
         sa->src.path, why.s);
  YamlNode *parent;
  const char *k;
  if (ok && study_path_node(doc->root, canon.s, &parent, &k, &why)) {
    const YamlNode *now = ydoc_get(parent, k);
    *listed = *listed || (now && now->kind == YN_SEQ);
  }
  *at = ok ? arena_strdup(&s->arena, canon.s) : NULL;
  for (int p = 0; ok && p < s->nparams; p++)
    if (strcmp(s->params[p].at[a], *at) == 0) {
      fail(L, key->loc, "'%s' and '%s' (line %d) name one field of %s (%s)",
           key->text, s->params[p].path, s->params[p].loc.line, sa->name,
           *at);
      ok = false;
    }
  buf_free(&canon);
  buf_free(&why);
  ydoc_free(doc);
  return ok;
}

/* Add the parameter at KEY (a path), which must name a field of every
 * base architecture, each its own (a role selector may name differently
 * named levels: memory[fusion]); *LISTED: the field holds a list (shape:
 * [R, C]), so that a list of numbers is one value of it. */
static bool add_param(Loader *L, const YamlNode *key, bool *listed) {
  Study *s = L->s;
  *listed = false;
  if (!study_path_valid(key->text))
    return fail(L, key->loc, "'%s' is not a parameter path: keys joined by "
                             "'.', none of them empty "
                             "(compute.array2d.shape)",
                key->text);
  for (int k = 0; k < s->nparams; k++)
    if (strcmp(s->params[k].path, key->text) == 0)
      return fail(L, key->loc, "'%s' is given twice", key->text);
  const char **at = arena_alloc(&s->arena, (size_t)s->narchs * sizeof *at);
  for (int a = 0; a < s->narchs; a++)
    if (!resolve_param(L, key, a, &at[a], listed))
      return false;
  s->params = xrealloc(s->params, (size_t)(s->nparams + 1) * sizeof *s->params);
  s->params[s->nparams++] = (ParamPath){key->text, key->loc, at};
  return true;
}

/* One axis: paths whose value lists have one length, zipped. VALUES gets
 * each path's nodes. */
static bool load_param_axis(Loader *L, const YamlNode *key,
                            const YamlNode *m, YamlNode ****values,
                            int *count) {
  char what[160];
  snprintf(what, sizeof what, "parameter axis '%s' (path: values)",
           key->text);
  if (!want(L, m, YN_MAP, what))
    return false;
  if (m->n == 0)
    return fail(L, m->loc, "parameter axis '%s' has no path", key->text);
  *values = arena_alloc(&L->s->arena, (size_t)m->n * sizeof **values);
  for (int i = 0; i < m->n; i++) {
    bool listed;
    if (!add_param(L, m->keys[i], &listed))
      return false;
    int n;
    if (!study_values(L, m->items[i], m->keys[i]->text, listed, &(*values)[i],
                   &n))
      return false;
    if (i == 0)
      *count = n;
    else if (n != *count)
      return fail(L, m->items[i]->loc,
                  "%s has %d values but %s has %d: the paths of one axis "
                  "vary together",
                  m->keys[i]->text, n, m->keys[0]->text, *count);
  }
  return true;
}

/* ---- the settings and parameter combinations ---- */

/* The product: settings tuples x parameter tuples, each in mixed radix
 * (the last axis fastest). */
static bool product_combos(Loader *L, const YamlNode *params) {
  Study *s = L->s;
  long ns = 1, np = 1, both = 1;
  bool fits = true;
  for (int k = 0; k < s->nsettings; k++)
    fits = fits && count_times(&ns, s->settings[k].n);
  int naxes = params ? params->n : 0;
  YamlNode ****axv = xcalloc((size_t)naxes + 1, sizeof *axv);
  int *axn = xcalloc((size_t)naxes + 1, sizeof *axn);
  bool ok = true;
  for (int a = 0; ok && a < naxes; a++) {
    ok = load_param_axis(L, params->keys[a], params->items[a], &axv[a],
                         &axn[a]);
    fits = fits && (!ok || count_times(&np, axn[a]));
  }
  fits = fits && count_times(&both, ns) && count_times(&both, np);
  if (ok && !fits)
    ok = fail(L, (Loc){1, 1}, "the settings and parameter values make more "
                              "than %d combinations",
              MAX_POINTS);
  /* Each combination is at least a point: refused before its tuples. */
  ok = ok && memory_fits(L, (Loc){1, 1}, "the settings and parameters alone "
                         "make", both, 0);
  if (ok) {
    s->nstuples = (int)ns;
    s->nptuples = (int)np;
    s->stuple = xcalloc((size_t)(ns * s->nsettings) + 1, sizeof *s->stuple);
    for (long t = 0; t < ns; t++)
      for (long k = s->nsettings - 1, r = t; k >= 0; k--) {
        const SettingAxis *ax = &s->settings[k];
        s->stuple[t * s->nsettings + k] = ax->values[r % ax->n];
        r /= ax->n;
      }
    s->ptuple = xcalloc((size_t)(np * s->nparams) + 1, sizeof *s->ptuple);
    for (long t = 0; t < np; t++) {
      long r = t;
      int p = s->nparams;
      for (int a = naxes - 1; a >= 0; a--) {
        int v = (int)(r % axn[a]);
        r /= axn[a];
        p -= params->items[a]->n;
        for (int i = 0; i < params->items[a]->n; i++)
          s->ptuple[t * s->nparams + p + i] = axv[a][i][v];
      }
    }
    s->ncombos = s->nstuples * s->nptuples;
    s->combo_s = xmalloc((size_t)s->ncombos * sizeof *s->combo_s);
    s->combo_p = xmalloc((size_t)s->ncombos * sizeof *s->combo_p);
    for (int i = 0; i < s->ncombos; i++) {
      s->combo_s[i] = i / s->nptuples;
      s->combo_p[i] = i % s->nptuples;
    }
  }
  free(axv);
  free(axn);
  return ok;
}

/* The listed points: each gives every setting and parameter the first
 * one gives, one value each. */
static bool listed_combos(Loader *L, const YamlNode *seq) {
  Study *s = L->s;
  if (!study_list(L, seq, "points (a list of {NAME or PATH: value})",
                  "points"))
    return false;
  const YamlNode *first = seq->items[0];
  if (!want(L, first, YN_MAP, "a point ({NAME or PATH: value})"))
    return false;
  for (int i = 0; i < first->n; i++) {
    bool path = strchr(first->keys[i]->text, '.') != NULL, listed;
    if (!(path ? add_param(L, first->keys[i], &listed)
               : add_setting(L, first->keys[i])))
      return false;
  }
  s->listed = true;
  s->ncombos = s->nstuples = s->nptuples = seq->n;
  s->stuple = xcalloc((size_t)(seq->n * s->nsettings) + 1, sizeof *s->stuple);
  s->ptuple = xcalloc((size_t)(seq->n * s->nparams) + 1, sizeof *s->ptuple);
  s->combo_s = xmalloc((size_t)seq->n * sizeof *s->combo_s);
  s->combo_p = xmalloc((size_t)seq->n * sizeof *s->combo_p);
  for (int i = 0; i < seq->n; i++) {
    const YamlNode *pt = seq->items[i];
    if (!want(L, pt, YN_MAP, "a point ({NAME or PATH: value})"))
      return false;
    if (pt->n != first->n)
      return fail(L, pt->loc,
                  "this point gives %d values, the first gives %d: every "
                  "point gives the same settings and parameters",
                  pt->n, first->n);
    int ks = 0, kp = 0;
    for (int k = 0; k < first->n; k++) {
      const char *name = first->keys[k]->text;
      const YamlNode *v = ydoc_get(pt, name);
      if (!v)
        return fail(L, pt->loc, "this point does not give '%s'", name);
      if (strchr(name, '.')) {
        if (v->kind == YN_MAP)
          return fail(L, v->loc, "a point gives one value of %s", name);
        s->ptuple[i * s->nparams + kp++] = (YamlNode *)v;
      } else if (!study_number(L, v, name,
                               &s->stuple[i * s->nsettings + ks++])) {
        return false;
      }
    }
    s->combo_s[i] = s->combo_p[i] = i;
  }
  return true;
}

/* ---- designs, options, workloads, objectives ---- */

static bool load_designs(Loader *L, const YamlNode *dn, const YamlNode *sn) {
  Study *s = L->s;
  static const YamlNode full = {.kind = YN_SCALAR, .text = "full"};
  static const YamlNode greedy = {.kind = YN_SCALAR, .text = "greedy"};
  YamlNode *one1, *one2;
  YamlNode *const *ds = NULL, *const *ss = NULL;
  int nd = 1, nst = 1;
  if (dn && !study_as_list(L, dn, "designs", &ds, &nd, &one1))
    return false;
  if (sn && !study_as_list(L, sn, "stitchers", &ss, &nst, &one2))
    return false;
  int stitch[STITCH_COUNT];
  for (int i = 0; i < nst; i++) {
    const YamlNode *n = sn ? ss[i] : &greedy;
    Stitcher st;
    if (!want(L, n, YN_SCALAR, "a stitcher") ||
        !stitcher_from_name(n->text, &st))
      return fail(L, n->loc, "unknown stitcher '%s' (expected greedy, alg1 "
                             "or global)",
                  n->text);
    for (int j = 0; j < i; j++)
      if (stitch[j] == (int)st)
        return fail(L, n->loc, "stitcher '%s' is given twice", n->text);
    stitch[i] = (int)st;
  }
  s->ds = xcalloc((size_t)(nd * nst), sizeof *s->ds);
  for (int i = 0; i < nd; i++) {
    const YamlNode *n = dn ? ds[i] : &full;
    Design d = DESIGN_BEST;
    char names[256];
    if (!want(L, n, YN_SCALAR, "a design") ||
        (strcmp(n->text, "best") && !design_from_name(n->text, &d)))
      return fail(L, n->loc, "unknown design '%s' (expected one of %s or "
                             "best)",
                  n->text, design_names(names, sizeof names));
    for (int j = 0; j < s->nds; j++)
      if (s->ds[j].design == d)
        return fail(L, n->loc, "design '%s' is given twice", n->text);
    /* The strategies stitch; the others' plans are fixed; best's search
     * tries every stitcher. */
    bool stitches = d != DESIGN_BEST && design_strategy(d) != ST_UNFUSED;
    for (int k = 0; k < (stitches ? nst : 1); k++)
      s->ds[s->nds++] = (DesignStitch){d, stitches ? stitch[k] : -1};
  }
  return true;
}

/* The model's options a study may vary: MODEL_OPTIONS' rows marked so
 * (model.h); an ENUM's value by its name. */
static bool named_value(Loader *L, const YamlNode *n, ModelOption k,
                        double *v) {
  Buf b = {0};
  int hi = model_option_info[k].hi;
  for (int i = 0; i < hi; i++) {
    const char *name = model_option_value_name(k, i);
    if (!strcmp(n->text, name)) {
      buf_free(&b);
      *v = i;
      return true;
    }
    buf_printf(&b, "%s%s", i == 0 ? "" : i + 1 < hi ? ", " : " or ", name);
  }
  fail(L, n->loc, "%s is %s, found '%s'", model_option_info[k].name, b.s,
       n->text);
  buf_free(&b);
  return false;
}

static bool option_value(Loader *L, const YamlNode *n, ModelOption k,
                         double *v) {
  const ModelOptionInfo *o = &model_option_info[k];
  if (!want(L, n, YN_SCALAR, o->name))
    return false;
  switch (o->kind) {
  case MOK_ENUM:
    return named_value(L, n, k, v);
  case MOK_BOOL:
  case MOK_SWITCH:
    if (strcmp(n->text, "true") && strcmp(n->text, "false"))
      return fail(L, n->loc, "%s is true or false, found '%s'", o->name,
                  n->text);
    *v = strcmp(n->text, "true") == 0;
    return true;
  case MOK_SHARE:
    if (!study_number(L, n, o->name, v))
      return false;
    if (!(*v > 0 && *v <= o->hi))
      return fail(L, n->loc, "%s is a %s, found '%s'", o->name, o->noun,
                  n->text);
    return true;
  case MOK_INT:
    if (!study_number(L, n, o->name, v))
      return false;
    if (!(*v >= 0 && *v == floor(*v) && *v <= o->hi))
      return fail(L, n->loc, "%s is a %s, found '%s'", o->name, o->noun,
                  n->text);
    return true;
  }
  return false;
}

/* Option NAME's row, or MO_COUNT after an error naming the others. */
static ModelOption option_named(Loader *L, const YamlNode *key) {
  for (int k = 0; k < MO_COUNT; k++)
    if (model_option_info[k].sweep &&
        !strcmp(model_option_info[k].name, key->text))
      return (ModelOption)k;
  Buf b = {0};
  for (int k = 0; k < MO_COUNT; k++)
    if (model_option_info[k].sweep)
      buf_printf(&b, "%s%s", b.len ? ", " : "", model_option_info[k].name);
  fail(L, key->loc, "unknown option '%s' (expected %s)", key->text, b.s);
  buf_free(&b);
  return MO_COUNT;
}

static bool load_options(Loader *L, const YamlNode *m) {
  Study *s = L->s;
  if (m) {
    if (!want(L, m, YN_MAP, "options (NAME: value or list)"))
      return false;
    s->options = xcalloc((size_t)m->n + 1, sizeof *s->options);
    for (int i = 0; i < m->n; i++) {
      const YamlNode *key = m->keys[i];
      ModelOption k = option_named(L, key);
      if (k == MO_COUNT)
        return false;
      OptionAxis *ax = &s->options[s->noptions++];
      *ax = (OptionAxis){key->text, key->loc, 0, NULL, k};
      YamlNode *one;
      YamlNode *const *items = NULL;
      if (!study_as_list(L, m->items[i], key->text, &items, &ax->n, &one))
        return false;
      ax->values = arena_alloc(&s->arena, (size_t)ax->n * sizeof(double));
      for (int j = 0; j < ax->n; j++)
        if (!option_value(L, items[j], k, &ax->values[j]))
          return false;
    }
  }
  long n = 1;
  for (int k = 0; k < s->noptions; k++)
    if (!count_times(&n, s->options[k].n))
      return fail(L, m->loc, "the options make more than %d combinations",
                  MAX_POINTS);
  s->nocombos = (int)n;
  s->ocombo = xmalloc((size_t)n * sizeof *s->ocombo);
  for (long t = 0; t < n; t++) {
    ModelOverrides o = model_no_overrides();
    for (long k = s->noptions - 1, r = t; k >= 0; k--) {
      model_override_set(&o, s->options[k].option,
                         s->options[k].values[r % s->options[k].n]);
      r /= s->options[k].n;
    }
    s->ocombo[t] = o;
  }
  return true;
}

static const char *const scenario_keys[] = {"name", "prompt", "generate",
                                            "layers", NULL};

static bool add_workload(Loader *L, Workload w) {
  Study *s = L->s;
  for (int i = 0; i < s->nworkloads; i++)
    if (strcmp(s->workloads[i].name, w.name) == 0)
      return fail(L, w.loc, "workload '%s' is given twice", w.name);
  s->workloads = xrealloc(s->workloads,
                          (size_t)(s->nworkloads + 1) * sizeof *s->workloads);
  s->workloads[s->nworkloads++] = w;
  return true;
}

/* N as a whole number from LO to HI into *V; else the error "WHAT is
 * IS, found 'N'". */
static bool whole_number(Loader *L, const YamlNode *n, const char *what,
                         const char *is, double lo, double hi, double *v) {
  if (!study_number(L, n, what, v))
    return false;
  if (!(*v >= lo && *v <= hi && *v == floor(*v)))
    return fail(L, n->loc, "%s is %s, found '%s'", what, is, n->text);
  return true;
}

static bool load_scenario(Loader *L, const YamlNode *m) {
  if (!want(L, m, YN_MAP, "a scenario ({name, prompt, generate, layers})") ||
      !check_keys(L, m, scenario_keys, "a scenario"))
    return false;
  const YamlNode *name = ydoc_get(m, "name"), *gen = ydoc_get(m, "generate");
  if (!name || !gen)
    return fail(L, m->loc, "a scenario needs 'name' and 'generate' (decode "
                           "steps after the prompt)");
  if (!want(L, name, YN_SCALAR, "name"))
    return false;
  if (!study_is_name(name->text) || !strcmp(name->text, "prefill") ||
      !strcmp(name->text, "decode"))
    return fail(L, name->loc, "scenario name '%s' is not a name, or is a "
                              "phase's",
                name->text);
  Workload w = {name->text, WL_SCENARIO, m->loc, NAN, 0, 0, 0};
  const YamlNode *prompt = ydoc_get(m, "prompt");
  const YamlNode *layers = ydoc_get(m, "layers");
  double nlayers = 0;
  if (!whole_number(L, gen, "generate", "a count of decode steps", 0,
                    INFINITY, &w.generate) ||
      (prompt && !whole_number(L, prompt, "prompt", "a count of tokens", 1,
                               INFINITY, &w.prompt)) ||
      (layers && !whole_number(L, layers, "layers",
                               "a count from 1 to 1000000", 1, 1e6, &nlayers)))
    return false;
  w.layers = (int)nlayers;
  return add_workload(L, w);
}

static bool load_workloads(Loader *L, const YamlNode *phases,
                           const YamlNode *scenarios) {
  Study *s = L->s;
  if (phases) {
    YamlNode *one;
    YamlNode *const *items = NULL;
    int n = 0;
    if (!study_as_list(L, phases, "phases", &items, &n, &one))
      return false;
    for (int i = 0; i < n; i++) {
      if (!want(L, items[i], YN_SCALAR, "a phase"))
        return false;
      bool pre = !strcmp(items[i]->text, "prefill");
      if (!pre && strcmp(items[i]->text, "decode"))
        return fail(L, items[i]->loc,
                    "unknown phase '%s' (expected prefill or decode)",
                    items[i]->text);
      if (!add_workload(L, (Workload){items[i]->text,
                                      pre ? WL_PREFILL : WL_DECODE,
                                      items[i]->loc, NAN, 0, 0, 0}))
        return false;
    }
  }
  if (scenarios) {
    if (!want(L, scenarios, YN_SEQ, "scenarios (a list)"))
      return false;
    for (int i = 0; i < scenarios->n; i++)
      if (!load_scenario(L, scenarios->items[i]))
        return false;
  }
  if (!phases && !scenarios) {
    add_workload(L, (Workload){"prefill", WL_PREFILL, {1, 1}, NAN, 0, 0, 0});
    add_workload(L, (Workload){"decode", WL_DECODE, {1, 1}, NAN, 0, 0, 0});
  }
  /* Scenarios with a prompt of their own fix the sequence length: the
   * settings may not vary it as well. */
  s->nslots = SLOT_SCENARIOS;
  for (int i = 0; i < s->nworkloads; i++) {
    Workload *w = &s->workloads[i];
    w->prompt_slot = w->kind == WL_DECODE ? SLOT_DECODE : SLOT_GIVEN;
    if (w->kind == WL_SCENARIO && !isnan(w->prompt))
      w->prompt_slot = s->nslots++;
    for (int k = 0; k < s->ncascades && w->kind != WL_PREFILL; k++)
      if (cascade_sequence_rank(s->cascades[k].c) < 0)
        return fail(L, w->loc,
                    "%s decodes, but %s has no sequence rank (name it with "
                    "'sequence: RANK')",
                    w->name, s->cascades[k].c->path);
  }
  return true;
}

static bool load_objectives(Loader *L, const YamlNode *n) {
  Study *s = L->s;
  static const char *dflt[] = {"latency", "energy"};
  YamlNode *one;
  YamlNode *const *items = NULL;
  int count = 2;
  if (n && !study_as_list(L, n, "objectives", &items, &count, &one))
    return false;
  if (count < 2 || count > SWEEP_MAX_OBJECTIVES)
    return fail(L, n->loc,
                "a Pareto front needs 2 to %d objectives (of latency, "
                "energy, edp, area, traffic), found %d",
                SWEEP_MAX_OBJECTIVES, count);
  for (int i = 0; i < count; i++) {
    const char *name = n ? items[i]->text : dflt[i];
    if (n && !want(L, items[i], YN_SCALAR, "an objective"))
      return false;
    int f = 0;
    while (f < FIG_COUNT &&
           !(figure_objective((Figure)f) &&
             strcmp(figure_objective((Figure)f), name) == 0))
      f++;
    if (f == FIG_COUNT)
      return fail(L, items[i]->loc,
                  "unknown objective '%s' (expected latency, energy, edp, "
                  "area or traffic)",
                  name);
    for (int j = 0; j < s->nobjectives; j++)
      if (s->objectives[j] == (Figure)f)
        return fail(L, items[i]->loc, "objective '%s' is given twice", name);
    s->objectives[s->nobjectives++] = (Figure)f;
  }
  return true;
}

/* front_per: input columns whose values split the fronts (the workload
 * always does). */
static bool load_front_per(Loader *L, const YamlNode *n) {
  Study *s = L->s;
  if (!n)
    return true;
  YamlNode *one;
  YamlNode *const *items = NULL;
  int count = 0;
  if (!study_as_list(L, n, "front_per", &items, &count, &one))
    return false;
  Cell *cells = xcalloc((size_t)study_ncells(s), sizeof *cells);
  int nc = study_cells(s, 0, cells);
  s->front_per = xcalloc((size_t)count, sizeof *s->front_per);
  bool ok = true;
  for (int i = 0; ok && i < count; i++) {
    int c = 0;
    ok = want(L, items[i], YN_SCALAR, "an input column");
    while (ok && c < nc - 1 && strcmp(cells[c].name, items[i]->text))
      c++;
    if (ok && c == nc - 1) {
      Buf b = {0};
      for (int k = 0; k < nc - 1; k++)
        buf_printf(&b, "%s%s", k ? ", " : "", cells[k].name);
      ok = fail(L, items[i]->loc,
                "front_per: '%s' is not an input of this study (inputs: %s; "
                "the workload always splits the fronts)",
                items[i]->text, b.s);
      buf_free(&b);
    }
    if (ok)
      s->front_per[s->nfront_per++] = c;
  }
  free(cells);
  return ok;
}

static bool load_reference(Loader *L, const YamlNode *n) {
  Study *s = L->s;
  s->reference_area = NAN;
  if (!n)
    return true;
  Source src;
  if (!want(L, n, YN_SCALAR, "reference (an architecture)") ||
      !open_input(L, "archs", n, &src))
    return false;
  Arch *a = arch_parse(src.path, src.text, src.len, L->d);
  source_free(&src);
  if (!a)
    return false;
  s->reference = n->text;
  s->reference_area = arch_area(a);
  arch_free(a);
  if (isnan(s->reference_area))
    return fail(L, n->loc, "reference %s has no area section", n->text);
  return true;
}

/* ---- the whole file ---- */

static const char *const study_keys[] = {
    "name",       "description", "cascades", "settings",  "architectures",
    "parameters", "points",      "designs",  "stitchers", "options",
    "phases",     "scenarios",   "objectives", "reference", "front_per",
    NULL};

static bool load_study(Loader *L, const YamlNode *root) {
  Study *s = L->s;
  if (!root)
    return fail(L, (Loc){1, 1}, "empty study file: expected a 'study' "
                                "section");
  if (!want(L, root, YN_MAP, "the top level (a 'study' section)"))
    return false;
  for (int i = 0; i < root->n; i++)
    if (strcmp(root->keys[i]->text, "study"))
      return fail(L, root->keys[i]->loc, "unknown section '%s' (expected "
                                         "study)",
                  root->keys[i]->text);
  const YamlNode *m = need(L, root, "study", "the study file",
                           "its one section");
  if (!m || !want(L, m, YN_MAP, "the study section") ||
      !check_keys(L, m, study_keys, "study"))
    return false;
  const YamlNode *name = need(L, m, "name", "the study",
                           "its outputs go to out/NAME");
  if (!name || !want(L, name, YN_SCALAR, "name"))
    return false;
  if (!study_is_name(name->text))
    return fail(L, name->loc, "'%s' is not a name (a letter or '_', then "
                              "letters, digits, '_', '-', '.')",
                name->text);
  s->name = name->text;
  const YamlNode *desc = ydoc_get(m, "description");
  if (desc && !want(L, desc, YN_SCALAR, "description"))
    return false;
  s->description = desc ? desc->text : "";
  const YamlNode *cascades = need(L, m, "cascades", "the study",
                               "a list of {spec, models}");
  if (!cascades)
    return false;
  const YamlNode *settings = ydoc_get(m, "settings");
  const YamlNode *params = ydoc_get(m, "parameters");
  const YamlNode *points = ydoc_get(m, "points");
  if (points && (settings || params))
    return fail(L, ydoc_get(m, "points")->loc,
                "give either 'points' (a listed set) or 'settings' and "
                "'parameters' (their product), not both");
  if (params && !want(L, params, YN_MAP, "parameters (AXIS: {PATH: values})"))
    return false;
  if (!load_cascades(L, cascades) ||
      (settings && !load_settings(L, settings)) ||
      !load_archs(L, ydoc_get(m, "architectures")) ||
      !(points ? listed_combos(L, points) : product_combos(L, params)) ||
      !load_designs(L, ydoc_get(m, "designs"), ydoc_get(m, "stitchers")) ||
      !load_options(L, ydoc_get(m, "options")) ||
      !load_workloads(L, ydoc_get(m, "phases"), ydoc_get(m, "scenarios")) ||
      !load_objectives(L, ydoc_get(m, "objectives")) ||
      !load_reference(L, ydoc_get(m, "reference")))
    return false;
  for (int w = 0; w < s->nworkloads; w++)
    for (int cm = 0; cm < s->ncms; cm++)
      if (s->workloads[w].kind == WL_SCENARIO && !s->workloads[w].layers &&
          !s->cms[cm].preset)
        return fail(L, s->workloads[w].loc,
                    "scenario %s needs 'layers': %s has no model preset to "
                    "take them from",
                    s->workloads[w].name,
                    s->cascades[s->cms[cm].cascade].spec);
  long dims[] = {s->ncms, s->ncombos, s->narchs,
                 s->nds,  s->nocombos, s->nworkloads};
  _Static_assert(sizeof dims / sizeof dims[0] == DIM_COUNT,
                 "a count per dimension");
  long total = 1;
  double shown = 1; /* the count in the message, past the limit */
  bool fits = true;
  for (int k = 0; k < DIM_COUNT; k++) {
    shown *= (double)(s->dim[k] = dims[k]);
    fits = fits && count_times(&total, dims[k]);
  }
  if (!fits)
    return fail(L, m->loc, "the study has %.3g points (at most %d)", shown,
                MAX_POINTS);
  s->npoints = total;
  double shapes = (double)s->ncms * s->nstuples * s->nslots;
  if (!memory_fits(L, m->loc, "the study has", total, shapes) ||
      !study_build(s, L->d))
    return false;
  return load_front_per(L, ydoc_get(m, "front_per"));
}

Study *study_load(const char *name, double budget, Diag *d) {
  Source src;
  if (!source_open("studies", name, &src, d))
    return NULL;
  Study *s = study_parse(src.path, src.text, src.len, budget, d);
  source_free(&src);
  return s;
}

Study *study_parse(const char *path, const char *text, size_t len,
                   double budget, Diag *d) {
  YamlDoc *doc = ydoc_parse(path, text, len, d);
  if (!doc)
    return NULL;
  Study *s = xcalloc(1, sizeof *s);
  s->path = arena_strdup(&s->arena, path);
  s->doc = doc;
  sha256_hex(text, len, s->sha256);
  Loader L = {s, d, budget};
  if (!load_study(&L, doc->root)) {
    study_free(s);
    return NULL;
  }
  return s;
}

void study_free(Study *s) {
  if (!s)
    return;
  long nshapes = (long)s->ncms * s->nstuples * s->nslots;
  for (long i = 0; s->shapes && i < nshapes; i++) {
    shape_free(s->shapes[i].s);
    free(s->shapes[i].pairs);
  }
  free(s->shapes);
  for (long i = 0; s->variant && i < (long)s->narchs * s->nptuples; i++)
    arch_free(s->variant[i]);
  free(s->variant);
  for (int i = 0; i < s->ncascades; i++) {
    cascade_free(s->cascades[i].c);
    source_free(&s->cascades[i].src);
  }
  for (int i = 0; i < s->narchs; i++)
    source_free(&s->archs[i].src);
  inputset_free(&s->read);
  free(s->cascades);
  free(s->cms);
  free(s->settings);
  free(s->params);
  free(s->stuple);
  free(s->ptuple);
  free(s->combo_s);
  free(s->combo_p);
  free(s->archs);
  free(s->ds);
  free(s->options);
  free(s->ocombo);
  free(s->workloads);
  free(s->front_per);
  ydoc_free(s->doc);
  arena_free(&s->arena);
  free(s);
}

const char *study_name(const Study *s) { return s->name; }
long study_points(const Study *s) { return s->npoints; }

const char *study_arch_notes(const Study *s, int i, const char **path) {
  if (i >= s->narchs)
    return NULL;
  *path = s->archs[i].src.path;
  return s->archs[i].notes;
}


/* The ski slope's axis: a parameter naming the fusion level's capacity
 * on every architecture ("memory[1].capacity" where level 1 is the
 * fusion level), by whatever path the study writes it
 * (memory.GlobalBuffer.capacity, memory[fusion].capacity). */
int study_fusion_capacity(const Study *s) {
  for (int p = 0; p < s->nparams; p++) {
    bool all = s->narchs > 0 && s->nptuples > 0;
    for (int a = 0; all && a < s->narchs; a++) {
      char want[64];
      snprintf(want, sizeof want, "memory[%d].capacity",
               s->variant[(long)a * s->nptuples]->fusion_level);
      all = strcmp(s->params[p].at[a], want) == 0;
    }
    if (all)
      return p;
  }
  return -1;
}
