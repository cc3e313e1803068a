/* accelforge_arch.c — an AccelForge architecture as one of ours.
 *
 * AccelForge (Accelergy project) writes an accelerator as `arch: nodes:`,
 * a list from off-chip memory down to the MACs of tagged nodes:
 * `!Memory` (a level: `size` in bits, `read` and `write` actions with an
 * `energy` in joules and a `throughput` in actions per second, an action
 * moving `bits_per_action` bits, 1 unless given), `!Compute` (a unit: one
 * `compute` action) and `!Container` (a fanout: `spatial` copies of
 * everything below it). Numbers may be Python expressions (`8 * 614e9`,
 * `weight.bits_per_value if weight else 0`); the file may be a Jinja
 * template (rendered as a workload template is: render.c). The
 * translation (docs/compat.md has the table):
 *
 *  - memory levels in order, the first off-chip; capacity = size / 8 per
 *    instance, instances = the product of the fanouts above and at the
 *    level; the level below an off-chip memory that keeps
 *    `~Intermediates` is the fusion level;
 *  - read and write energies per bit = energy / bits_per_action; the
 *    bandwidth from the throughputs and `total_latency`: AccelForge's
 *    default, the sum of the actions' times, is one port (reads and
 *    writes share a bandwidth); `max(...)` is separate ports (a read and
 *    a write bandwidth); `sum(a.n_calls ...) / RATE` one port of RATE
 *    actions per second;
 *  - compute units: the one with the most instances is the matrix unit
 *    (its fanouts its shape, the last one its columns), the others vector
 *    units; the clock is the matrix unit's throughput per instance (one
 *    operation per PE per cycle), every operation class at that rate; the
 *    energy of every class is the matrix unit's compute energy;
 *  - an energy or throughput the file leaves to the node's
 *    `component_class` (hwcomponents' model, not run) is the class's
 *    published figure (accelforge_classes.c), one note each;
 *  - the word is 2 B (AccelForge's is the workload's bits_per_value);
 *  - fields AccelForge's component models or mapper read and mambalaya
 *    does not model (leak power, area, tensors kept, reuse, ...) are one
 *    note each; anything else is an error at the line that says it. */
#include "accelforge_arch.h"
#include "accelforge_classes.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { AA_MAX_NODES = 64, AA_MAX_FANOUTS = 16, AA_WORD_BYTES = 2 };

typedef struct AaLevel {
  const char *name;
  Loc loc, size_at, inst_at, fusion_at;
  double bytes;             /* per instance; INFINITY: off chip */
  long instances;
  double rd_pj, wr_pj;      /* pJ per bit */
  Loc rd_at, wr_at;
  double bw, rd_bw, wr_bw;  /* bytes/s per instance; INFINITY: none */
  Loc bw_at;
  bool fusion;
} AaLevel;

typedef struct AaUnit {
  const char *name;
  Loc loc, tp_at, e_at;
  long instances;
  int nfan;
  long fan[AA_MAX_FANOUTS]; /* the fanouts above and at it, outer first */
  double rate;              /* operations per second per instance */
  double pj;                /* energy per operation */
} AaUnit;

/* A field read and not modelled: the nodes that give it, said once. */
typedef struct AaUnmodelled {
  const char *field, *why;
} AaUnmodelled;

static const AaUnmodelled unmodelled[] = {
    {"leak_power", "mambalaya prices dynamic energy only, no leakage"},
    {"area", "AccelForge's area per component is not translated; "
             "mambalaya's area model needs its own `area` section "
             "(docs/architecture.md, \"Area\")"},
    {"component_class", "the file writes every energy and throughput of "
                        "these nodes: their class gives none"},
    {"extra_attributes_for_component_model", "inputs of hwcomponents' "
                                             "models, which mambalaya does "
                                             "not run (a class's figures: "
                                             "docs/compat.md)"},
    {"extra_attributes_for_all_component_models", "inputs of hwcomponents' "
                                                  "models: a class's figures "
                                                  "are at their sources' "
                                                  "own technology nodes "
                                                  "(docs/compat.md)"},
    {"tensors", "mambalaya's mapper lets every level hold every tensor "
                "(no keep, may_keep or bypass); off-chip memory's "
                "~Intermediates marks the fusion level"},
    {"bits_per_value", "one word for every tensor (the word above)"},
    {"enabled", "mambalaya binds an Einsum to a unit by its roles "
                "(docs/model.md), not by this condition"},
    {"reuse", "each instance of a fanout is sent its own operands: "
              "multicast and reuse over a fanout are not modelled"},
    {"may_reuse", "each instance of a fanout is sent its own operands: "
                  "multicast and reuse over a fanout are not modelled"},
    {"min_usage", "the mapper uses as many instances as a tile spreads "
                  "over; no minimum is imposed"},
};
enum { AA_UNMODELLED = sizeof unmodelled / sizeof unmodelled[0] };

typedef struct Aa {
  const char *path; /* as errors name it */
  Translation *t;
  Diag *d;
  Arena ar;
  AaLevel levels[AA_MAX_NODES];
  int nlevels;
  AaUnit units[AA_MAX_NODES];
  int nunits;
  long fan[AA_MAX_FANOUTS]; /* the fanouts above the current node */
  int nfan;
  Buf said[AA_UNMODELLED]; /* per unmodelled field: the nodes giving it */
  const char *keep;        /* the current node's tensors.keep, or NULL */
  Loc arch_at;
} Aa;

#define fail(aa, ...) diag_fail((aa)->d, (aa)->path, __VA_ARGS__)

/* ---- what the file says ---- */

/* Does a top-level line say `arch:`? */
bool accelforge_arch_format(const char *text, size_t len) {
  const char *end = text + len;
  for (const char *l = text; l < end;) {
    const char *nl = memchr(l, '\n', (size_t)(end - l));
    size_t n = nl ? (size_t)(nl - l) : (size_t)(end - l);
    if (n >= 5 && memcmp(l, "arch:", 5) == 0 &&
        (n == 5 || l[5] == ' ' || l[5] == '\t' || l[5] == '\r'))
      return true;
    l = nl ? nl + 1 : end;
  }
  return false;
}

/* Is NODE among the names, ", "-separated, in LIST? */
static bool listed(const Buf *list, const char *node) {
  size_t n = strlen(node);
  for (const char *p = list->s; p && *p;) {
    size_t k = strcspn(p, ",");
    if (k == n && strncmp(p, node, n) == 0)
      return true;
    p += k;
    p += *p ? 2 : 0;
  }
  return false;
}

static void note_field(Aa *aa, const char *field, const char *node) {
  for (int i = 0; i < AA_UNMODELLED; i++)
    if (strcmp(unmodelled[i].field, field) == 0) {
      if (!listed(&aa->said[i], node))
        buf_printf(&aa->said[i], "%s%s", aa->said[i].len ? ", " : "",
                   node);
      return;
    }
}

/* Note every unmodelled field of mapping M (node NODE). */
static void note_fields(Aa *aa, const YamlNode *m, const char *node) {
  for (int i = 0; i < m->n; i++)
    note_field(aa, m->keys[i]->text, node);
}

/* Note every unmodelled field of node M, but its component_class where
 * the class gave a figure (GAVE), and its model's inputs where they
 * were all read (READ). */
static void note_node(Aa *aa, const YamlNode *m, const char *node, bool gave,
                      bool read) {
  for (int i = 0; i < m->n; i++) {
    const char *key = m->keys[i]->text;
    if (!(gave && strcmp(key, "component_class") == 0) &&
        !(read && strcmp(key, "extra_attributes_for_component_model") == 0))
      note_field(aa, key, node);
  }
}

/* ---- numbers: AccelForge's Python expressions ---- */

static double word_bits(void *ctx, const char *name) {
  (void)ctx;
  return strcmp(name, "bits_per_value") == 0 ? AA_WORD_BYTES * 8 : NAN;
}

static bool is_word(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
      return false;
  return n > 0;
}

/* Is tensor set NAME (N characters: weight, input, output) among what
 * the current node keeps? AccelForge asks per Einsum; the translation
 * has one capacity per level, that of a level holding what it keeps. */
static bool keeps(const Aa *aa, const char *name_at, size_t n) {
  char name[64];
  if (!aa->keep || n >= sizeof name)
    return false;
  memcpy(name, name_at, n);
  name[n] = 0;
  if (strcmp(aa->keep, "All") == 0)
    return true;
  for (const char *p = aa->keep; (p = strstr(p, name)); p += n)
    if ((p == aa->keep || !isalnum((unsigned char)p[-1])) &&
        !isalnum((unsigned char)p[n]) && (p == aa->keep || p[-1] != '~'))
      return true;
  return false;
}

/* TEXT with `X.bits_per_value` as `bits_per_value` (the word), into B. */
static void drop_tensor_prefix(const char *text, Buf *b) {
  const char *key = ".bits_per_value";
  const char *p = text, *q;
  while ((q = strstr(p, key))) {
    const char *w = q;
    while (w > p && (isalnum((unsigned char)w[-1]) || w[-1] == '_'))
      w--;
    buf_printf(b, "%.*s", (int)(w - p), p);
    p = q + 1;
  }
  buf_printf(b, "%s", p);
}

/* The value of scalar N (WHAT for messages): a number, `inf`, an
 * expression, or `A if T else B` for T a tensor set the node keeps. */
static bool number(Aa *aa, const YamlNode *n, const char *what,
                   double *out) {
  if (!n || n->kind != YN_SCALAR)
    return fail(aa, n ? n->loc : aa->arch_at, "expected a number for %s",
                what);
  const char *s = n->text;
  while (isspace((unsigned char)*s))
    s++;
  if (strcmp(s, "inf") == 0 || strcmp(s, "float('inf')") == 0 ||
      strcmp(s, ".inf") == 0) {
    *out = INFINITY;
    return true;
  }
  Buf b = {0};
  const char *iff = strstr(s, " if "), *els = iff ? strstr(iff, " else ")
                                                   : NULL;
  if (iff && els) {
    const char *c = iff + 4;
    while (isspace((unsigned char)*c))
      c++;
    size_t cn = (size_t)(els - c);
    while (cn && isspace((unsigned char)c[cn - 1]))
      cn--;
    if (!is_word(c, cn)) {
      fail(aa, n->loc, "%s: cannot read the condition of '%s' (the "
           "translation reads `A if TENSORS else B` for TENSORS a tensor "
           "set: weight, input, output)", what, s);
      return false;
    }
    Buf part = {0};
    if (keeps(aa, c, cn))
      buf_printf(&part, "%.*s", (int)(iff - s), s);
    else
      buf_printf(&part, "%s", els + 6);
    drop_tensor_prefix(part.s, &b);
    buf_free(&part);
  } else {
    drop_tensor_prefix(s, &b);
  }
  char err[400] = "";
  *out = peer_eval(b.s, word_bits, NULL, err, sizeof err);
  buf_free(&b);
  if (isnan(*out))
    return fail(aa, n->loc, "%s: %s", what, err);
  return true;
}

/* ---- the nodes ---- */

/* The copies of the current node: the product of the fanouts above and
 * at it. */
static long instances(const Aa *aa) {
  long n = 1;
  for (int i = 0; i < aa->nfan; i++)
    n *= aa->fan[i];
  return n;
}

/* Member KEY of M, a list (WHAT in messages), into *OUT: NULL where M
 * has none. False (D set) when it is no list. */
static bool list_of(Aa *aa, const YamlNode *m, const char *key,
                    const char *what, const YamlNode **out) {
  *out = ydoc_get(m, key);
  return !*out || ydoc_want(*out, YN_SEQ, what, aa->d);
}

/* N, an item of a list of mappings of KEYS (each WHAT in messages), or
 * NULL (D set) when it is no such mapping. */
static const YamlNode *map_item(Aa *aa, const YamlNode *n, const char *what,
                                const char *const *keys) {
  return ydoc_want(n, YN_MAP, what, aa->d) &&
                 ydoc_known_keys(n, keys, what, aa->d)
             ? n
             : NULL;
}

static const char *const spatial_keys[] = {"name", "fanout", "reuse",
                                           "may_reuse", "min_usage", NULL};

/* A node's `spatial` list: its fanouts, pushed on the stack of those
 * above the nodes below; *AT where the first was written. */
static bool load_spatial(Aa *aa, const YamlNode *m, const char *node,
                         Loc *at) {
  const YamlNode *sp;
  if (!list_of(aa, m, "spatial", "spatial (a list of fanouts)", &sp))
    return false;
  if (sp)
    *at = sp->loc;
  for (int i = 0; sp && i < sp->n; i++) {
    const YamlNode *f = map_item(aa, sp->items[i], "a fanout", spatial_keys);
    const YamlNode *k = f ? ydoc_need(f, "fanout", f->loc, "a fanout",
                                      "e.g. 'fanout: 128'", aa->d)
                          : NULL;
    double v;
    if (!k || !number(aa, k, "fanout", &v))
      return false;
    if (!(v >= 1 && v <= 1 << 20 && v == floor(v)))
      return fail(aa, k->loc, "fanout must be a whole number from 1 to "
                  "2^20, found '%s'", k->text);
    if (aa->nfan == AA_MAX_FANOUTS)
      return fail(aa, k->loc, "more than %d fanouts", AA_MAX_FANOUTS);
    aa->fan[aa->nfan++] = (long)v;
    if (instances(aa) > 1 << 30)
      return fail(aa, k->loc, "the fanouts down to here make more than "
                  "2^30 instances");
    note_fields(aa, f, node);
  }
  return true;
}

/* The action named NAME of node M's `actions`, or NULL. */
static const YamlNode *action(const YamlNode *m, const char *name) {
  const YamlNode *acts = ydoc_get(m, "actions");
  for (int i = 0; acts && acts->kind == YN_SEQ && i < acts->n; i++) {
    const YamlNode *nm = ydoc_get(acts->items[i], "name");
    if (nm && nm->kind == YN_SCALAR && strcmp(nm->text, name) == 0)
      return acts->items[i];
  }
  return NULL;
}

static const char *const action_keys[] = {"name", "energy", "throughput",
                                          "bits_per_action", NULL};

/* Node M's `actions` are a list of mappings named from NAMES (N). */
static bool check_actions(Aa *aa, const YamlNode *m,
                          const char *const *names, int n,
                          const char *expected) {
  const YamlNode *acts;
  if (!list_of(aa, m, "actions", "actions (a list)", &acts))
    return false;
  for (int i = 0; acts && i < acts->n; i++) {
    const YamlNode *a = map_item(aa, acts->items[i], "an action", action_keys);
    const YamlNode *nm =
        a ? ydoc_need(a, "name", a->loc, "an action", expected, aa->d) : NULL;
    if (!nm || ydoc_enum(nm, names, n, "action", aa->d) < 0)
      return false;
  }
  return true;
}

/* A node's `component_class` and the figures it stands for
 * (accelforge_classes.h), for the fields the file leaves to it. */
typedef struct AaClass {
  const YamlNode *cc; /* the class as written, or NULL */
  int cls;            /* afc_find's, or -1 */
  bool memory;        /* a !Memory node's (else a !Compute's) */
  AfcFigures f;
  bool gave_pj, gave_rate; /* a figure of the node came from the class */
} AaClass;

/* The class of node M (a !Memory if MEMORY) of SIZE_BITS bits, or whose
 * operands are W wide. */
static AaClass node_class(const YamlNode *m, bool memory, double size_bits,
                          AfcWidths w) {
  AaClass k = {.cc = ydoc_get(m, "component_class"), .cls = -1,
               .memory = memory};
  if (k.cc && k.cc->kind == YN_SCALAR && (k.cls = afc_find(k.cc->text)) >= 0)
    k.f = afc_figures(k.cls, size_bits, w);
  return k;
}

/* An action's field FIELD (energy or throughput): the file's, or else its
 * class's, DFLT (in the action's units: K's figures for BITS_PER_ACTION
 * bits); else an error, as only hwcomponents' model would know it. */
static bool action_value(Aa *aa, const YamlNode *m, const char *node,
                         const char *act, const char *field, AaClass *k,
                         double dflt, double *out, Loc *at) {
  const YamlNode *a = action(m, act);
  const YamlNode *v = a ? ydoc_get(a, field) : NULL;
  if (v) {
    *at = v->loc;
    char what[200];
    snprintf(what, sizeof what, "%s of %s's %s", field, node, act);
    return number(aa, v, what, out);
  }
  if (k->cls >= 0 && !afc_fits(k->cls, k->memory))
    return fail(aa, k->cc->loc, "%s's %s %s would come from its class, but "
                "'%s' is not a %s node's", node, act, field,
                afc_name(k->cls), k->memory ? "!Memory" : "!Compute");
  if (k->cls >= 0) {
    *out = dflt;
    *at = k->cc->loc;
    *(strcmp(field, "energy") == 0 ? &k->gave_pj : &k->gave_rate) = true;
    return true;
  }
  if (k->cc && k->cc->kind == YN_SCALAR)
    return fail(aa, (a ? a : k->cc)->loc, "%s's %s %s comes from "
                "AccelForge's component model '%s' (hwcomponents), which "
                "mambalaya does not run and has no figure for (the classes it "
                "has: docs/compat.md): give '%s:' in its '%s' action", node,
                act, field, k->cc->text, field, act);
  return fail(aa, (a ? a : m)->loc, "%s has no %s for its '%s' action "
              "(and no component_class)", node, field, act);
}

/* One note per figure node NODE took from its class K. */
static void note_class(Aa *aa, const AaClass *k, const char *node) {
  const char *per = k->memory ? "bit" : "operation";
  if (k->gave_pj)
    tr_note(aa->t, "%s: energy %.10g pJ per %s from its class %s (%s)",
            node, k->f.pj, per, afc_name(k->cls), k->f.pj_from);
  if (k->gave_rate && isinf(k->f.per_s))
    tr_note(aa->t, "%s: throughput unlimited from its class %s (%s)", node,
            afc_name(k->cls), k->f.per_s_from);
  else if (k->gave_rate)
    tr_note(aa->t, "%s: throughput %.10g %s/s per instance from its class "
            "%s (%s)", node, k->f.per_s, k->memory ? "bits" : "operations",
            afc_name(k->cls), k->f.per_s_from);
}

/* Bits per action of action ACT (1 unless given). */
static bool bits_per_action(Aa *aa, const YamlNode *m, const char *act,
                            double *out) {
  const YamlNode *a = action(m, act);
  const YamlNode *b = a ? ydoc_get(a, "bits_per_action") : NULL;
  *out = 1;
  if (!b)
    return true;
  if (!number(aa, b, "bits_per_action", out))
    return false;
  if (!(*out > 0) || isinf(*out))
    return fail(aa, b->loc, "bits_per_action must be positive and finite, "
                "found '%s'", b->text);
  return true;
}

/* `sum(a.n_calls for a in actions) / RATE...`: the rate, in actions per
 * second, of one port all actions share; 0 if TL is not of that form. */
static bool shared_port_rate(Aa *aa, const YamlNode *tl, double *rate) {
  static const char head[] = "sum(a.n_calls for a in actions)";
  char squeezed[512];
  size_t k = 0;
  for (const char *p = tl->text; *p && k + 1 < sizeof squeezed; p++)
    if (!isspace((unsigned char)*p))
      squeezed[k++] = *p;
  squeezed[k] = 0;
  *rate = 0;
  if (strncmp(squeezed, "sum(a.n_callsforainactions)", 27) != 0)
    return true;
  /* The time of one action: 1 with the same divisions. */
  const char *rest = strstr(tl->text, head);
  if (!rest)
    return true;
  rest += sizeof head - 1;
  Buf one = {0};
  buf_printf(&one, "1%s", rest);
  char err[400] = "";
  double t = peer_eval(one.s, word_bits, NULL, err, sizeof err);
  buf_free(&one);
  if (!(t > 0))
    return fail(aa, tl->loc, "total_latency: %s",
                err[0] ? err : "the time of one action is not positive");
  *rate = 1 / t;
  return true;
}

/* TL (squeezed of blanks) is FORM. */
static bool latency_is(const YamlNode *tl, const char *form) {
  size_t k = 0;
  for (const char *p = tl->text; *p; p++) {
    if (isspace((unsigned char)*p))
      continue;
    if (form[k] != *p)
      return false;
    k++;
  }
  return form[k] == 0;
}

/* The bandwidths of level LV (node M, of class K) from its total_latency
 * and, unless that gives its rate, its read and write throughputs (RBPA
 * and WBPA bits per action). */
static bool level_bandwidth(Aa *aa, const YamlNode *m, AaLevel *lv,
                            AaClass *k, double rbpa, double wbpa) {
  const YamlNode *tl = ydoc_get(m, "total_latency");
  lv->bw = lv->rd_bw = lv->wr_bw = INFINITY;
  if (tl && !ydoc_want(tl, YN_SCALAR, "total_latency", aa->d))
    return false;
  double shared = 0;
  if (tl && !shared_port_rate(aa, tl, &shared))
    return false;
  if (shared > 0) { /* one port of SHARED actions per second */
    lv->bw = shared * rbpa / 8;
    lv->bw_at = tl->loc;
    return true;
  }
  double rt, wt; /* bits per second */
  Loc tat;
  if (!action_value(aa, m, lv->name, "read", "throughput", k,
                    k->f.per_s / rbpa, &rt, &lv->bw_at) ||
      !action_value(aa, m, lv->name, "write", "throughput", k,
                    k->f.per_s / wbpa, &wt, &tat))
    return false;
  rt *= rbpa;
  wt *= wbpa;
  if (tl && latency_is(tl, "max(a.n_calls/a.throughputforainactions)")) {
    lv->rd_bw = rt / 8; /* separate ports */
    lv->wr_bw = wt / 8;
    return true;
  }
  if (tl && !latency_is(tl, "sum(a.n_calls/a.throughputforainactions)"))
    return fail(aa, tl->loc, "total_latency '%s' is not one the "
                "translation reads (AccelForge's default sum(a.n_calls / "
                "a.throughput for a in actions), max(...) of the same, or "
                "sum(a.n_calls for a in actions) / RATE)", tl->text);
  /* The default: reads and writes take turns on one port. */
  if (isinf(rt) || isinf(wt) || rt == wt) {
    if (isinf(rt) || isinf(wt)) {
      lv->rd_bw = rt / 8;
      lv->wr_bw = wt / 8;
    } else {
      lv->bw = rt / 8;
    }
    return true;
  }
  return fail(aa, tl ? tl->loc : m->loc, "%s reads at %g bits/s and writes "
              "at %g on one port (AccelForge's default total_latency, the "
              "sum of their times), which mambalaya's bandwidths cannot "
              "say: give them equal throughputs, or separate ports with "
              "'total_latency: max(a.n_calls / a.throughput for a in "
              "actions)'", lv->name, rt, wt);
}

static const char *const memory_keys[] = {
    "name", "component_class", "size", "leak_power", "area", "tensors",
    "actions", "total_latency", "spatial", "bits_per_value",
    "extra_attributes_for_component_model", NULL};
static const char *const memory_actions[] = {"read", "write"};

/* The current node's `tensors.keep`, as text (NULL: none). */
static bool read_keep(Aa *aa, const YamlNode *m) {
  const YamlNode *t = ydoc_get(m, "tensors");
  aa->keep = NULL;
  if (!t)
    return true;
  if (!ydoc_want(t, YN_MAP, "tensors (keep, may_keep)", aa->d))
    return false;
  const YamlNode *k = ydoc_get(t, "keep");
  if (k && !ydoc_want(k, YN_SCALAR, "tensors.keep", aa->d))
    return false;
  aa->keep = k ? k->text : NULL;
  return true;
}

static bool load_memory(Aa *aa, const YamlNode *m, const char *name) {
  if (!ydoc_known_keys(m, memory_keys, "a !Memory node", aa->d) ||
      !read_keep(aa, m))
    return false;
  if (aa->nlevels == AA_MAX_NODES)
    return fail(aa, m->loc, "more than %d memory levels", AA_MAX_NODES);
  AaLevel *lv = &aa->levels[aa->nlevels++];
  *lv = (AaLevel){.name = name, .loc = m->loc, .inst_at = m->loc};
  if (!load_spatial(aa, m, name, &lv->inst_at))
    return false;
  lv->instances = instances(aa);
  const YamlNode *size = ydoc_need(m, "size", m->loc, "a !Memory node",
                                   "bits, e.g. 'size: 1024*1024*8'", aa->d);
  double bits;
  if (!size || !number(aa, size, "size", &bits))
    return false;
  lv->size_at = size->loc;
  lv->bytes = bits / 8;
  if (!(bits >= 0))
    return fail(aa, size->loc, "size must not be negative, found '%s'",
                size->text);
  if (!check_actions(aa, m, memory_actions, 2, "read or write"))
    return false;
  AaClass k = node_class(m, true, bits, (AfcWidths){0, 0});
  double re, we, rbpa, wbpa;
  if (!bits_per_action(aa, m, "read", &rbpa) ||
      !bits_per_action(aa, m, "write", &wbpa) ||
      !action_value(aa, m, name, "read", "energy", &k, k.f.pj * 1e-12 * rbpa,
                    &re, &lv->rd_at) ||
      !action_value(aa, m, name, "write", "energy", &k,
                    k.f.pj * 1e-12 * wbpa, &we, &lv->wr_at))
    return false;
  lv->rd_pj = re * 1e12 / rbpa;
  lv->wr_pj = we * 1e12 / wbpa;
  if (!level_bandwidth(aa, m, lv, &k, rbpa, wbpa))
    return false;
  note_class(aa, &k, name);
  note_node(aa, m, name, k.gave_pj || k.gave_rate, false);
  const char *keep = aa->keep;
  if (aa->nlevels == 1 && keep && strstr(keep, "~Intermediates"))
    lv->fusion_at = ydoc_get(m, "tensors")->loc; /* marks the next level */
  return true;
}

/* A unit's operand widths, as an IntMAC reads them from
 * `extra_attributes_for_component_model` (multiplier_width, adder_width;
 * the word's 16 bits where not given): *GIVEN of them given, *ALL: it
 * holds nothing else. */
static bool unit_widths(Aa *aa, const YamlNode *m, AfcWidths *w, int *given,
                        bool *all) {
  static const char *const keys[] = {"multiplier_width", "adder_width"};
  double *at[] = {&w->multiplier, &w->adder};
  const YamlNode *x = ydoc_get(m, "extra_attributes_for_component_model");
  *w = (AfcWidths){AA_WORD_BYTES * 8, AA_WORD_BYTES * 8};
  *given = 0;
  *all = x && x->kind == YN_MAP;
  if (!*all)
    return true;
  for (int i = 0; i < 2; i++) {
    const YamlNode *v = ydoc_get(x, keys[i]);
    if (v && !number(aa, v, keys[i], at[i]))
      return false;
    if (v && !(*at[i] >= 1 && *at[i] <= 1024))
      return fail(aa, v->loc, "%s must be from 1 to 1024 bits, found '%s'",
                  keys[i], v->text);
    *given += v != NULL;
  }
  *all = *given == x->n;
  return true;
}

static const char *const compute_keys[] = {
    "name", "component_class", "leak_power", "area", "actions", "enabled",
    "total_latency", "spatial", "extra_attributes_for_component_model",
    NULL};
static const char *const compute_actions[] = {"compute", NULL};

static bool load_compute(Aa *aa, const YamlNode *m, const char *name) {
  if (!ydoc_known_keys(m, compute_keys, "a !Compute node", aa->d))
    return false;
  if (aa->nunits == AA_MAX_NODES)
    return fail(aa, m->loc, "more than %d compute units", AA_MAX_NODES);
  AaUnit *u = &aa->units[aa->nunits++];
  *u = (AaUnit){.name = name, .loc = m->loc};
  int above = aa->nfan;
  Loc at;
  if (!load_spatial(aa, m, name, &at))
    return false;
  u->instances = instances(aa);
  for (int i = 0; i < aa->nfan; i++)
    if (aa->fan[i] > 1)
      u->fan[u->nfan++] = aa->fan[i];
  aa->nfan = above; /* a unit's own fanout is no node's below it */
  if (!check_actions(aa, m, compute_actions, 1, "compute"))
    return false;
  AfcWidths w;
  int given;
  bool widths; /* all of extra_attributes_for_component_model read */
  if (!unit_widths(aa, m, &w, &given, &widths))
    return false;
  AaClass k = node_class(m, false, 0, w);
  double e;
  if (!action_value(aa, m, name, "compute", "energy", &k, k.f.pj * 1e-12, &e,
                    &u->e_at))
    return false;
  u->pj = e * 1e12;
  const YamlNode *tl = ydoc_get(m, "total_latency");
  if (tl) {
    if (!ydoc_want(tl, YN_SCALAR, "total_latency", aa->d) ||
        !shared_port_rate(aa, tl, &u->rate))
      return false;
    if (u->rate <= 0 &&
        !latency_is(tl, "sum(a.n_calls/a.throughputforainactions)"))
      return fail(aa, tl->loc, "total_latency '%s' is not one the "
                  "translation reads (sum(a.n_calls for a in actions) / "
                  "RATE, or AccelForge's default)", tl->text);
    u->tp_at = tl->loc;
  }
  if (!(u->rate > 0) && !action_value(aa, m, name, "compute", "throughput",
                                      &k, k.f.per_s, &u->rate, &u->tp_at))
    return false;
  if (!(u->rate > 0) || isinf(u->rate))
    return fail(aa, u->tp_at, "%s's compute throughput is %g operations "
                "per second: mambalaya's clock needs a finite, positive "
                "one", name, u->rate);
  note_class(aa, &k, name);
  bool read_widths = k.gave_pj && afc_reads_widths(k.cls);
  if (read_widths)
    tr_note(aa->t, "%s: multiplier %g bits, adder %g bits%s", name,
            w.multiplier, w.adder, given == 2 ? "" : " (the word's where "
            "extra_attributes_for_component_model does not give them)");
  note_node(aa, m, name, k.gave_pj || k.gave_rate, read_widths && widths);
  return true;
}

static const char *const container_keys[] = {"name", "spatial", NULL};

static bool load_node(Aa *aa, const YamlNode *m) {
  if (!ydoc_want(m, YN_MAP, "a node (!Memory, !Compute or !Container)",
                 aa->d))
    return false;
  const char *tag = m->tag ? m->tag : "";
  const YamlNode *nm = ydoc_need(m, "name", m->loc, "a node",
                                 "e.g. 'name: GlobalBuffer'", aa->d);
  if (!nm || !ydoc_want(nm, YN_SCALAR, "a node's name", aa->d))
    return false;
  const char *name = arena_strdup(&aa->ar, nm->text);
  if (strcmp(tag, "!Memory") == 0)
    return load_memory(aa, m, name);
  if (strcmp(tag, "!Compute") == 0)
    return load_compute(aa, m, name);
  if (strcmp(tag, "!Container") == 0) {
    Loc at;
    return ydoc_known_keys(m, container_keys, "a !Container node", aa->d) &&
           load_spatial(aa, m, name, &at);
  }
  return fail(aa, m->loc, "node '%s' %s%s%s: the translation reads "
              "!Memory, !Compute and !Container nodes", name,
              m->tag ? "is a " : "has no tag", m->tag ? m->tag : "",
              m->tag ? " node" : "");
}

static const char *const top_keys[] = {"arch", NULL};
static const char *const arch_keys[] = {
    "nodes", "extra_attributes_for_all_component_models", NULL};

static bool load_doc(Aa *aa, const YamlNode *root) {
  if (!ydoc_want(root, YN_MAP, "the top level (an 'arch' section)", aa->d) ||
      !ydoc_known_keys(root, top_keys, "an AccelForge architecture file",
                       aa->d))
    return false;
  const YamlNode *arch = ydoc_need(root, "arch", root->loc,
                                  "an AccelForge architecture file",
                                  "its one section", aa->d);
  if (!arch)
    return false;
  aa->arch_at = root->keys[0]->loc;
  if (!ydoc_want(arch, YN_MAP, "the arch section", aa->d) ||
      !ydoc_known_keys(arch, arch_keys, "arch", aa->d))
    return false;
  note_fields(aa, arch, "arch");
  const YamlNode *nodes = ydoc_need(arch, "nodes", aa->arch_at, "arch",
                                    "a list of !Memory, !Compute and "
                                    "!Container nodes", aa->d);
  if (!nodes || !ydoc_want(nodes, YN_SEQ, "nodes (a list)", aa->d))
    return false;
  for (int i = 0; i < nodes->n; i++)
    if (!load_node(aa, nodes->items[i]))
      return false;
  if (aa->nlevels < 2)
    return fail(aa, nodes->loc, "arch has %d !Memory node%s: mambalaya "
                "needs off-chip memory and at least one level on chip",
                aa->nlevels, aa->nlevels == 1 ? "" : "s");
  if (aa->nunits == 0)
    return fail(aa, nodes->loc, "arch has no !Compute node");
  const AaLevel *off = &aa->levels[0];
  if (!isfinite(off->bw))
    return fail(aa, off->bw_at, "%s, off-chip memory, has %s: mambalaya "
                "needs one finite bandwidth for its reads and writes (the "
                "roofline's memory side)", off->name,
                isinf(off->rd_bw) && isinf(off->wr_bw)
                    ? "an unlimited throughput"
                    : "separate read and write ports");
  if (off->fusion_at.line)
    aa->levels[1].fusion = true;
  return true;
}

/* ---- our architecture, as text ---- */

/* The matrix unit: the one with the most instances (the last of those). */
static int matrix_unit(const Aa *aa) {
  int best = 0;
  for (int i = 1; i < aa->nunits; i++)
    if (aa->units[i].instances >= aa->units[best].instances)
      best = i;
  return best;
}

/* "ops: {macc: R, add: R, ...}": every class at rate R. */
static void ops_line(Aa *aa, Loc at, double r) {
  static const char *const classes[] = {"macc", "add", "mul", "div", "exp",
                                        "log", "sqrt", "silu", "max"};
  Buf b = {0};
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
    buf_printf(&b, "%s%s: %.10g", i ? ", " : "", classes[i], r);
  tr_line(aa->t, at, "      ops: {%s}", b.s);
  buf_free(&b);
}

static void emit_level(Aa *aa, const AaLevel *lv) {
  Translation *t = aa->t;
  tr_line(t, lv->loc, "    - name: %s", lv->name);
  if (isfinite(lv->bytes))
    tr_line(t, lv->size_at, "      capacity: %.10g B", lv->bytes);
  if (lv->instances > 1)
    tr_line(t, lv->inst_at, "      instances: %ld", lv->instances);
  if (lv->fusion)
    tr_line(t, aa->levels[0].fusion_at, "      fusion: true");
  if (isfinite(lv->bw))
    tr_line(t, lv->bw_at, "      bandwidth: %.10g GB/s", lv->bw / 1e9);
  if (isfinite(lv->rd_bw))
    tr_line(t, lv->bw_at, "      read_bandwidth: %.10g GB/s",
            lv->rd_bw / 1e9);
  if (isfinite(lv->wr_bw))
    tr_line(t, lv->bw_at, "      write_bandwidth: %.10g GB/s",
            lv->wr_bw / 1e9);
  tr_line(t, lv->rd_at, "      read_energy: %.10g pJ/bit", lv->rd_pj);
  tr_line(t, lv->wr_at, "      write_energy: %.10g pJ/bit", lv->wr_pj);
}

static void emit_unit(Aa *aa, const AaUnit *u, bool matrix, double clock) {
  Translation *t = aa->t;
  tr_line(t, u->loc, "    - name: %s", u->name);
  tr_line(t, u->loc, "      role: %s", matrix ? "matrix" : "vector");
  if (matrix) {
    long rows = 1, cols = u->nfan ? u->fan[u->nfan - 1] : 1;
    for (int i = 0; i + 1 < u->nfan; i++)
      rows *= u->fan[i];
    tr_line(t, u->loc, "      shape: [%ld, %ld]", rows, cols);
  } else {
    tr_line(t, u->loc, "      pes: %ld", u->instances);
  }
  ops_line(aa, u->tp_at, u->rate / clock);
}

/* The name of the architecture: PATH's file name without its extension. */
static const char *stem(Aa *aa, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strcspn(base, ". ");
  return n ? arena_strndup(&aa->ar, base, n) : "accelforge";
}

static void emit(Aa *aa, const char *path) {
  Translation *t = aa->t;
  int mu = matrix_unit(aa);
  const AaUnit *m = &aa->units[mu];
  double clock = m->rate;
  Loc none = {0, 0};
  tr_line(t, aa->arch_at, "architecture:");
  tr_line(t, aa->arch_at, "  name: %s", stem(aa, path));
  tr_line(t, m->tp_at, "  clock: %.10g GHz", clock / 1e9);
  tr_line(t, none, "  word: %d B", AA_WORD_BYTES);
  tr_line(t, aa->arch_at, "  memory:");
  for (int i = 0; i < aa->nlevels; i++)
    emit_level(aa, &aa->levels[i]);
  tr_line(t, aa->arch_at, "  compute:");
  for (int i = 0; i < aa->nunits; i++)
    emit_unit(aa, &aa->units[i], i == mu, clock);
  tr_line(t, aa->arch_at, "  energy:");
  static const char *const classes[] = {"macc", "add", "mul", "div", "exp",
                                        "log", "sqrt", "silu", "max"};
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
    tr_line(t, m->e_at, "    %s: %.10g pJ", classes[i], m->pj);

  tr_note(t, "word: %d B assumed (AccelForge takes bits_per_value from the "
          "workload; `X.bits_per_value` reads %d)", AA_WORD_BYTES,
          AA_WORD_BYTES * 8);
  tr_note(t, "clock: %s's throughput per instance, %.10g operations/s: one "
          "operation per PE per cycle, every operation class at that rate "
          "(AccelForge's compute is one action)", m->name, clock);
  for (int i = 0; i < aa->nunits; i++)
    if (i != mu && aa->units[i].pj != m->pj)
      tr_note(t, "%s's energy per operation (%.10g pJ) is not modelled: "
              "mambalaya's energy is per operation class, here %s's "
              "(%.10g pJ)", aa->units[i].name, aa->units[i].pj, m->name,
              m->pj);
  if (aa->levels[1].fusion)
    tr_note(t, "fusion level: %s (%s keeps ~Intermediates: they stay in "
            "the level below it)", aa->levels[1].name, aa->levels[0].name);
  for (int i = 0; i < AA_UNMODELLED; i++)
    if (aa->said[i].len)
      tr_note(t, "%s: %s read, not modelled: %s", aa->said[i].s,
              unmodelled[i].field, unmodelled[i].why);
}

/* ---- the entry point ---- */

bool accelforge_arch_translate(const char *path, const char *text,
                               size_t len, const char *const *vars,
                               int nvars, InputSet *read, Translation *t,
                               Diag *d) {
  *t = (Translation){.path = path};
  Aa aa = {.path = path, .t = t, .d = d};
  Buf rendered = {0};
  YamlDoc *doc = NULL;
  bool jinja = false;
  for (size_t i = 0; i + 1 < len && !jinja; i++)
    jinja = text[i] == '{' &&
            (text[i + 1] == '%' || text[i + 1] == '{' || text[i + 1] == '#');
  if (jinja) {
    SpecLoad o = {.vars = vars, .nvars = nvars, .read = read};
    if (spec_render_accelforge(path, &o, &rendered, d)) {
      /* Positions refer to the rendered text (import --rendered). */
      snprintf(t->rendered, sizeof t->rendered, "%s (rendered)", path);
      aa.path = t->path = t->rendered;
      doc = ydoc_parse_tagged(aa.path, rendered.s, rendered.len, d);
    }
  } else if (nvars) {
    diag_error(d, path, (Loc){0, 0}, "--set %.*s: the file is no template "
               "(it reads no variables)", (int)strcspn(vars[0], "="),
               vars[0]);
  } else {
    doc = ydoc_parse_tagged(path, text, len, d);
  }
  bool ok = doc && load_doc(&aa, doc->root);
  if (ok)
    emit(&aa, path);
  ydoc_free(doc);
  buf_free(&rendered);
  for (int i = 0; i < AA_UNMODELLED; i++)
    buf_free(&aa.said[i]);
  arena_free(&aa.ar);
  return ok;
}
