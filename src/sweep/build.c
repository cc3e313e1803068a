/* build.c — what a study's points need, built once when it loads: each
 * architecture variant (the file's YAML tree with the study's values set
 * at their paths, then loaded by the strict loader, so that it checks
 * them as it checks the file) and each cascade's shape per settings tuple
 * and sequence length. */
#include "study.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void study_param_text(Buf *b, const Study *s, int pt, int p) {
  const YamlNode *n = s->ptuple[(long)pt * s->nparams + p];
  if (n->kind == YN_SCALAR) {
    buf_printf(b, "%s", n->text);
    return;
  }
  for (int i = 0; i < n->n; i++)
    buf_printf(b, "%s%s", i ? "x" : "",
               n->items[i]->kind == YN_SCALAR ? n->items[i]->text : "?");
}

/* Architecture A with parameter tuple PT: DOC, its file's tree, with the
 * study's values set, loaded by the strict loader. Every tuple sets the
 * same fields, each replacing the one before's, so one tree parsed once
 * serves every tuple of A (parsing it again for each was most of a
 * study's loading). An error the loader finds at a study value is
 * reported there; any other, at the study's first parameter, with the
 * loader's own position. */
static Arch *build_variant(Study *s, YamlDoc *doc, int a, int pt, Diag *d) {
  const StudyArch *sa = &s->archs[a];
  for (int p = 0; p < s->nparams; p++) {
    YamlNode *parent;
    const char *key;
    Buf why = {0};
    study_path_node(doc->root, s->params[p].at[a], &parent, &key, &why);
    buf_free(&why);
    YamlNode *k = arena_alloc(&doc->arena, sizeof *k);
    *k = (YamlNode){.kind = YN_SCALAR,
                    .loc = s->params[p].loc,
                    .text = arena_strdup(&doc->arena, key)};
    ydoc_set(doc, parent, k, s->ptuple[(long)pt * s->nparams + p]);
  }
  Diag ad = {0};
  Arch *arch = arch_from_yaml(sa->src.path, doc->root, &ad);
  if (arch)
    return arch;
  Buf vals = {0};
  for (int p = 0; p < s->nparams; p++) {
    buf_printf(&vals, "%s%s = ", p ? ", " : "", s->params[p].path);
    study_param_text(&vals, s, pt, p);
  }
  const YamlNode *at = NULL;
  for (int p = 0; p < s->nparams && !at; p++) {
    const YamlNode *v = s->ptuple[(long)pt * s->nparams + p];
    if (v->loc.line == ad.loc.line && v->loc.col == ad.loc.col)
      at = v;
  }
  if (at)
    diag_error(d, s->path, at->loc, "%s with %s: %s", sa->name, vals.s,
               ad.msg);
  else
    diag_error(d, s->path,
               s->nparams ? s->ptuple[(long)pt * s->nparams]->loc : sa->loc,
               "%s with %s: %s:%d:%d: %s", sa->name, vals.s, ad.file,
               ad.loc.line, ad.loc.col, ad.msg);
  buf_free(&vals);
  return NULL;
}

/* Variant PT of architecture A (DOC: its tree) into the study, checked
 * against what a sweep can show of it; false (D set) where it fails. */
static bool variant_checked(Study *s, YamlDoc *doc, int a, int pt, Diag *d) {
  Arch *arch = build_variant(s, doc, a, pt, d);
  if (!arch)
    return false;
  s->variant[(long)a * s->nptuples + pt] = arch;
  if (arch->nlevels + arch->nunits > SWEEP_MAX_COMPONENTS) {
    diag_error(d, s->path, s->archs[a].loc,
               "%s has more than %d memory levels and units",
               s->archs[a].name, SWEEP_MAX_COMPONENTS);
    return false;
  }
  for (int o = 0; o < s->nobjectives; o++)
    if (s->objectives[o] == FIG_AREA && !arch->area.given) {
      diag_error(d, s->path, s->archs[a].loc,
                 "the objectives include area, but %s has no area "
                 "section (docs/architecture.md, \"Area\")",
                 arch->path);
      return false;
    }
  return true;
}

static bool build_variants(Study *s, Diag *d) {
  s->variant = xcalloc((size_t)s->narchs * (size_t)s->nptuples,
                       sizeof *s->variant);
  for (int a = 0; a < s->narchs; a++) {
    const StudyArch *sa = &s->archs[a];
    YamlDoc *doc = ydoc_parse(sa->src.path, sa->src.text, sa->src.len, d);
    if (!doc)
      return false;
    bool ok = true;
    for (int pt = 0; ok && pt < s->nptuples; pt++)
      ok = variant_checked(s, doc, a, pt, d);
    ydoc_free(doc);
    if (!ok)
      return false;
  }
  return true;
}

const StudyShape *study_shape(const Study *s, int cm, int st, int slot) {
  return &s->shapes[((long)cm * s->nstuples + st) * s->nslots + slot];
}

/* The settings of cascade-model CM with tuple ST and slot SLOT. */
static int point_settings(const Study *s, int cm, int st, int slot,
                          Setting *set) {
  const StudyCascade *sc = &s->cascades[s->cms[cm].cascade];
  int n = 0, r = cascade_sequence_rank(sc->c);
  for (int k = 0; k < sc->nset; k++)
    set[n++] = sc->set[k];
  for (int k = 0; k < s->nsettings; k++) {
    const char *name = s->settings[k].name;
    if (strcmp(name, "tokens") == 0)
      name = sc->c->ranks[r].name;
    set[n++] = (Setting){name, s->stuple[(long)st * s->nsettings + k]};
  }
  double seq = NAN;
  if (slot == SLOT_DECODE)
    seq = 1;
  for (int w = 0; w < s->nworkloads; w++)
    if (slot >= SLOT_SCENARIOS && s->workloads[w].prompt_slot == slot)
      seq = s->workloads[w].prompt;
  if (!isnan(seq)) {
    const char *rank = sc->c->ranks[r].name;
    int k = 0;
    while (k < n && strcmp(set[k].name, rank))
      k++;
    set[k] = (Setting){rank, seq};
    n += k == n;
  }
  return n;
}

static bool slot_used(const Study *s, int slot) {
  for (int w = 0; w < s->nworkloads; w++) {
    const Workload *wl = &s->workloads[w];
    if (wl->prompt_slot == slot ||
        (slot == SLOT_DECODE && wl->kind == WL_SCENARIO))
      return true;
  }
  return false;
}

static bool build_shapes(Study *s, Diag *d) {
  long n = (long)s->ncms * s->nstuples * s->nslots;
  s->shapes = xcalloc((size_t)n + 1, sizeof *s->shapes);
  Setting *set = xcalloc((size_t)(s->nsettings + 64), sizeof *set);
  bool ok = true;
  for (int cm = 0; ok && cm < s->ncms; cm++)
    for (int st = 0; ok && st < s->nstuples; st++)
      for (int slot = 0; ok && slot < s->nslots; slot++) {
        if (!slot_used(s, slot))
          continue;
        const StudyCascade *sc = &s->cascades[s->cms[cm].cascade];
        int ns = point_settings(s, cm, st, slot, set);
        Diag sd = {0};
        Shape *sh = shape_bind(sc->c, s->cms[cm].preset ? &s->cms[cm].preset->sizes : NULL,
                   set, ns, true, &sd);
        if (!sh || !sh->complete) {
          Buf b = {0};
          for (int k = 0; k < ns; k++)
            buf_printf(&b, "%s%s=%g", k ? ", " : "", set[k].name,
                       set[k].value);
          diag_error(d, s->path, sc->loc, "%s%s%s with %s: %s", sc->spec,
                     s->cms[cm].preset ? " " : "",
                     s->cms[cm].preset ? s->cms[cm].preset->sizes.name : "",
                     b.len ? b.s : "its own sizes",
                     sh ? "some ranks have no size" : sd.msg);
          ok = false;
          buf_free(&b);
          shape_free(sh);
          break;
        }
        StudyShape *ss = &s->shapes[((long)cm * s->nstuples + st) * s->nslots +
                                    slot];
        ss->s = sh;
        ss->pairs = fusion_classify(sc->c, sh);
      }
  free(set);
  return ok;
}

bool study_build(Study *s, Diag *d) {
  return build_variants(s, d) && build_shapes(s, d);
}
