/* cmd_export.c — `mambalaya export timeloop SPEC --out DIR`: each Einsum
 * of a cascade, with the loop nest the accelerator model chose for it, as
 * a Timeloop problem and mapping, to cross-check the model's traffic with
 * Timeloop's (docs/compat.md). */
#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { EXPORT_TIMELOOP, EXPORT_FORMATS };
static const char *format_at(int i) {
  (void)i;
  return "timeloop";
}
static const OptChoices format_choices = {"format", format_at, EXPORT_FORMATS,
                                          NULL, false};

typedef struct ExportOpts {
  int format;
  SpecOpts spec;
  const char *out, *arch;
  int design;
} ExportOpts;

static const Opt export_opts[] = {
    {"FORMAT", OPT_ENUM, offsetof(ExportOpts, format), NULL,
     .flags = OPT_POSITIONAL, .choices = &format_choices},
    {"--out", OPT_PATH, offsetof(ExportOpts, out), "DIR",
     .help = "the directory to write (created)", .flags = OPT_REQUIRED},
    ARCH_OPT(ExportOpts, arch),
    {"--design", OPT_ENUM, offsetof(ExportOpts, design), "D",
     .help = "whose loop nests (default: unfused)", .flags = OPT_LIST,
     .choices = &design_choices},
};
static const OptTable export_table = OPT_TABLE(export_opts);

/* Timeloop's names of an Einsum's dimensions. Its mapping parser reads a
 * permutation one character at a time (src/mapping/parser.cpp,
 * ParseUserPermutations), so every dimension is one upper-case letter:
 * a one-letter variable its own (h: H), then each longer one the first
 * free letter of its name (ed: E, else D), then of the alphabet. Upper
 * case only: our loader reads a dimension as its lower-case variable, so
 * H and h would be one. The problem file lists the renaming. */
typedef struct Dims {
  VarSet used;              /* the variables that are dimensions */
  char letter[IR_MAX_VARS]; /* V's name, for V in USED */
} Dims;

enum { DIM_LETTERS = 26 };

static bool letter_free(const Dims *n, char c) {
  for (int v = 0; v < IR_MAX_VARS; v++)
    if (VARSET_HAS(n->used, v) && n->letter[v] == c)
      return false;
  return true;
}

/* Name the dimensions in N->used; false when there are more than 26. */
static bool name_dims(const Einsum *e, Dims *n) {
  memset(n->letter, 0, sizeof n->letter);
  for (int pass = 0; pass < 2; pass++)
    for (int v = 0; v < e->nvars; v++) {
      const char *name = e->vars[v].name;
      if (!VARSET_HAS(n->used, v) || n->letter[v] ||
          (pass == 0) != (strlen(name) == 1))
        continue;
      for (const char *p = name; *p && !n->letter[v]; p++) {
        char c = (char)toupper((unsigned char)*p);
        if (c >= 'A' && c <= 'Z' && letter_free(n, c))
          n->letter[v] = c;
      }
      for (char c = 'A'; c <= 'Z' && !n->letter[v]; c++)
        if (letter_free(n, c))
          n->letter[v] = c;
      if (!n->letter[v])
        return false;
    }
  return true;
}

static void dim_name(const Dims *n, int v, Buf *b) {
  buf_printf(b, "%c", n->letter[v]);
}

/* One coordinate: [[V], [W, kN]] with a named coefficient kN = N. */
static void projection(const Shape *s, const Dims *dn, const Index *ix,
                       Buf *b, Buf *coefs, Buf *notes) {
  buf_printf(b, "          - [");
  for (int t = 0; t < ix->nterms; t++) {
    double c = ix->coef[t] ? shape_eval(s, ix->coef[t]) : 1;
    if (!(c >= 1 && c == floor(c) && c < 1e15)) {
      /* Timeloop's coefficients are positive whole numbers: -f walks
       * the footprint of f in reverse (|c|); anything else is stated */
      double kept = c <= -1 && c == floor(c) && c > -1e15 ? -c : 1;
      buf_printf(notes, "# a coefficient of %g is written as %g (Timeloop's "
                        "coefficients are positive whole numbers)\n",
                 c, kept);
      c = kept;
    }
    buf_printf(b, "%s[", t ? ", " : "");
    dim_name(dn, ix->var[t], b);
    if (c != 1) {
      buf_printf(b, ", k%g]", c);
      char line[64];
      snprintf(line, sizeof line, "      - {name: k%g, default: %g}\n", c, c);
      if (!coefs->s || !strstr(coefs->s, line))
        buf_printf(coefs, "%s", line);
    } else {
      buf_printf(b, "]");
    }
  }
  buf_printf(b, "]\n");
  double off = ix->off ? shape_eval(s, ix->off) : 0;
  if (off != 0)
    buf_printf(notes, "# an offset of %g in an index is dropped (Timeloop's "
                      "projections have none)\n", off);
}

/* One data space: T with its access A's projection. An access none of
 * whose coordinates varies (a scalar S[], or BTX[D] at a constant) is a
 * data space of no coordinate: `projection: []`, as Timeloop states a
 * scalar, never an empty key that no loader reads. */
static void data_space(const Cascade *c, const Shape *s, const Dims *dn,
                       const Access *a, bool out, Buf *b, Buf *coefs,
                       Buf *notes) {
  int varying = 0;
  for (int k = 0; k < a->n; k++)
    varying += a->idx[k].nterms > 0;
  buf_printf(b, "      - name: %s\n        projection:%s\n",
             c->tensors[a->tensor].name, varying ? "" : " []");
  for (int k = 0; k < a->n; k++)
    if (a->idx[k].nterms) /* a constant coordinate has no projection */
      projection(s, dn, &a->idx[k], b, coefs, notes);
    else
      buf_printf(notes, "# %s's coordinate %d is a constant: dropped "
                        "(Timeloop's projections are sums of dimensions)\n",
                 c->tensors[a->tensor].name, k + 1);
  if (out)
    buf_printf(b, "        read-write: True\n");
}

/* The note on an Einsum that reads no tensor (MK[l,s] = s <= l): a
 * Timeloop problem has two to eight data spaces, so its file does not
 * load as one (tests/fuzz/fuzz_export.c knows it by this text). */
#define EXPORT_NO_INPUT                                                      \
  "reads no tensor: Timeloop's problems have two data spaces at least, so " \
  "this file states the Einsum but does not load"

/* TEXT as YAML comments, every line of it: an Einsum written over several
 * lines (a folded or quoted string) must not leave a line uncommented. */
static void comment_lines(Buf *b, const char *text) {
  for (const char *l = text; *l;) {
    size_t n = strcspn(l, "\r\n"); /* YAML breaks lines at either */
    buf_printf(b, "# %.*s\n", (int)n, l);
    l += n + (l[n] != 0);
  }
}

/* The variables that are dimensions of E's problem: those of the data
 * spaces kept (a second read of a tensor, or the output read back, is
 * no data space of its own). */
static VarSet kept_vars(const Einsum *e) {
  VarSet used = access_vars(&e->out);
  for (int r = 0; r < e->nreads; r++) {
    const Access *a = e->reads[r];
    bool seen = a->n == 0;
    for (int q = 0; q < r; q++)
      seen = seen || e->reads[q]->tensor == a->tensor;
    if (!seen && a->tensor != e->out.tensor)
      used |= access_vars(a);
  }
  return used;
}

static void problem(const Cascade *c, const Shape *s, const Einsum *e,
                    const Dims *dn, Buf *b) {
  Buf spaces = {0}, coefs = {0}, notes = {0};
  for (int r = 0; r < e->nreads; r++) {
    const Access *a = e->reads[r];
    bool seen = false;
    for (int q = 0; q < r; q++)
      seen = seen || e->reads[q]->tensor == a->tensor;
    if (a->tensor == e->out.tensor) /* a recurrence reads its output */
      buf_printf(&notes, "# %s is read as well as written: its one data "
                 "space is the read-write one\n", c->tensors[a->tensor].name);
    else if (seen)
      buf_printf(&notes, "# %s is read twice: one data space, at its first "
                 "read's indices\n", c->tensors[a->tensor].name);
    else if (!seen)
      data_space(c, s, dn, a, false, &spaces, &coefs, &notes);
  }
  if (!spaces.len) /* Timeloop needs two data spaces at least */
    buf_printf(&notes, "# %s\n", EXPORT_NO_INPUT);
  data_space(c, s, dn, &e->out, true, &spaces, &coefs, &notes);
  buf_printf(&notes, "# dimensions (one letter each, as Timeloop's mappings "
                     "name them):");
  const char *sep = " ";
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(dn->used, v)) {
      buf_printf(&notes, "%s%c = %s", sep, dn->letter[v], e->vars[v].name);
      sep = ", ";
    }
  buf_printf(&notes, "\n");
  for (int v = 0; v < e->nvars; v++)
    if (!VARSET_HAS(dn->used, v)) /* only a dropped read had it */
      buf_printf(&notes, "# %s indexes no data space kept: not a dimension "
                 "(Timeloop iterates it once)\n", e->vars[v].name);
  comment_lines(b, e->text);
  buf_printf(b, "# (Timeloop computes a multiply-accumulate of the data "
                "spaces)\n%s", notes.s);
  buf_printf(b, "problem:\n  shape:\n    name: %s\n    dimensions: [",
             c->tensors[e->out.tensor].name);
  sep = "";
  for (int v = 0; v < e->nvars; v++)
    if (VARSET_HAS(dn->used, v)) {
      buf_printf(b, "%s", sep);
      dim_name(dn, v, b);
      sep = ", ";
    }
  buf_printf(b, "]\n");
  if (coefs.len)
    buf_printf(b, "    coefficients:\n%s", coefs.s);
  buf_printf(b, "    data-spaces:\n%s  instance:\n", spaces.s);
  for (int v = 0; v < e->nvars; v++) {
    if (!VARSET_HAS(dn->used, v))
      continue;
    buf_printf(b, "    ");
    dim_name(dn, v, b);
    buf_printf(b, ": %lld\n", (long long)s->size[e->vars[v].rank]);
  }
  buf_free(&spaces);
  buf_free(&coefs);
  buf_free(&notes);
}

/* ---- the architecture ----
 *
 * Timeloop's storage levels are ours, innermost first, each named as the
 * architecture names it, with its capacity in words, its instances and
 * the word; off-chip memory is its DRAM. Below the innermost level, one
 * MAC per instance of it: the model's innermost boundary reads every
 * operand once per iteration point, which is what a MAC fed by one
 * instance with temporal loops reads. Bandwidths, energies and the
 * compute units are not Timeloop's to count here: the export compares
 * counts (bench/timeloop/README.md). */
static void arch_file(const Arch *a, Buf *b) {
  int bits = a->word_bytes * 8, L = a->nlevels;
  buf_printf(b, "# %s (%s) in Timeloop's format, for the problems and "
                "mappings beside it:\n#   timeloop-model arch.yaml "
                "NN_X.problem.yaml NN_X.mapping.yaml\n# Capacities in words "
                "of %d bits; one MAC per instance of the innermost level "
                "(the\n# model's PE boundary); bandwidths, energies and "
                "compute units are not exported.\n",
             a->name, a->path ? a->path : "built in", bits);
  buf_printf(b, "arch:\n  arithmetic:\n    name: MAC\n    instances: %d\n"
                "    word-bits: %d\n  storage:\n",
             a->levels[L - 1].instances, bits);
  for (int l = L - 1; l >= 0; l--) {
    const MemLevel *lv = &a->levels[l];
    buf_printf(b, "  - name: %s\n", lv->name);
    if (arch_level_role(a, l) == LEVEL_OFFCHIP)
      buf_printf(b, "    technology: DRAM\n");
    else
      buf_printf(b, "    entries: %.0f\n",
                 floor(lv->capacity / a->word_bytes));
    buf_printf(b, "    instances: %d\n    word-bits: %d\n", lv->instances,
               bits);
  }
}

/* ---- the mapping ----
 *
 * The model's one loop nest per Einsum (LevelUse.loop, model.h) in
 * Timeloop's terms: the loops recorded at level l are the factors of
 * its parent l-1 (temporal, then its spatial split over l's instances);
 * the fusion level's loops, from off chip, are off-chip memory's (a
 * staging level between passes each tile through: factors 1); the
 * innermost level iterates its tile down to the MAC. */

/* One Einsum's loops at each Timeloop tiling level: per storage level
 * and kind (0 temporal, 1 spatial), each variable's trips and the
 * model's order (outermost first). */
typedef struct Nest {
  int L;
  double trips[2][IR_MAX_VARS]; /* of one level: 1 where no loop */
  int order[2][IR_MAX_VARS], norder[2];
  double step[2][IR_MAX_VARS]; /* the tile a loop steps: a temporal
                                  loop's, a spatial one's per instance */
} Nest;

static void nest_add(Nest *at, const NestLoop *lp) {
  int k = lp->spatial;
  at->trips[k][lp->var] = lp->trips;
  at->step[k][lp->var] = lp->tile;
  at->order[k][at->norder[k]++] = lp->var;
}

/* Einsum I's loops (execution order), one Nest per storage level: N[l]
 * the factors of target l. */
static void nest_of(const Arch *a, const Eval *ev, int i, const Einsum *e,
                    const Shape *s, Nest *n) {
  int L = a->nlevels, f = a->fusion_level;
  const LevelUse *use = &ev->use[(size_t)i * (size_t)L];
  for (int l = 0; l < L; l++) {
    n[l] = (Nest){.L = L};
    for (int k = 0; k < 2; k++)
      for (int v = 0; v < IR_MAX_VARS; v++)
        n[l].trips[k][v] = 1;
  }
  /* HELD: each variable's tile in one instance of the level reached. */
  double held[IR_MAX_VARS];
  for (int v = 0; v < e->nvars; v++)
    held[v] = (double)s->size[e->vars[v].rank];
  for (int l = f; l < L; l++) {
    const LevelUse *u = &use[l];
    int to = l == f ? 0 : l - 1;
    if (l == f && f == 0)
      continue;
    double split[IR_MAX_VARS];
    for (int v = 0; v < e->nvars; v++)
      split[v] = 1;
    for (int j = 0; j < u->nloops; j++)
      if (u->loop[j].spatial) {
        split[u->loop[j].var] = u->loop[j].trips;
        held[u->loop[j].var] = u->loop[j].tile;
      }
    for (int j = 0; j < u->nloops; j++) {
      const NestLoop *lp = &u->loop[j];
      if (lp->var < 0 || lp->var >= e->nvars)
        continue;
      nest_add(&n[to], lp);
      if (!lp->spatial)
        held[lp->var] = lp->tile / split[lp->var];
    }
  }
  for (int v = 0; v < e->nvars; v++)
    if (held[v] > 1)
      nest_add(&n[L - 1], &(NestLoop){.var = v, .tile = 1,
                                       .trips = held[v]});
}

/* The counts Timeloop iterates variable V's loops, outermost first, into
 * END, and the last iteration's into LAST (Timeloop's leftover, "V=32,24":
 * a loop runs its leftover count only when every loop of V outside it is
 * at its last iteration, so that the counts cover V's extent X exactly:
 * X = 1 + sum (last_i - 1) x prod_{j > i} end_j, checked by its mapping
 * parser). */
static void chain(const Nest *n, int v, double x, long long *end,
                  long long *last) {
  int k = 0;
  for (int l = 0; l < n->L; l++)
    for (int s = 0; s < 2; s++)
      end[k++] = llround(n[l].trips[s][v]);
  long long rest = llround(x);
  for (int i = 0; i < k; i++) {
    long long inner = 1;
    for (int j = i + 1; j < k; j++)
      inner *= end[j];
    last[i] = (rest + inner - 1) / inner;
    rest -= (last[i] - 1) * inner;
  }
}

/* Does every loop of V step what Timeloop's loops inside it cover? A
 * temporal loop's tile is the product of the counts inside it; an
 * instance's share, the product inside the split times the level's
 * temporal count (which runs over the instances' tiles at once). Else
 * Timeloop tiles V otherwise: 37 rows over 4 instances are 10 each to
 * the model, tiled by 4 (3 trips); to Timeloop 3 x 4 = 12 each. */
static bool nests_exactly(const Nest *n, int v, const long long *end) {
  int k = 0;
  for (int l = 0; l < n->L; l++)
    for (int s = 0; s < 2; s++, k++) {
      if (end[k] < 2)
        continue;
      long long inner = s ? end[k - 1] : 1;
      for (int j = k + 1; j < 2 * n->L; j++)
        inner *= end[j];
      if (llround(n[l].step[s][v]) != inner)
        return false;
    }
  return true;
}

/* One directive: TARGET's loops of kind K (0 temporal, 1 spatial). */
static void directive(const Einsum *e, const Dims *dn, const Nest *n, int l,
                      int k, const char *target, const char *spaces,
                      long long (*last)[2 * IR_MAX_VARS], Buf *b) {
  buf_printf(b, "- target: %s\n  type: %s\n  factors: \"", target,
             k ? "spatial" : "temporal");
  const char *sep = "";
  for (int v = 0; v < e->nvars; v++) {
    if (!VARSET_HAS(dn->used, v))
      continue;
    long long t = llround(n[l].trips[k][v]), r = last[v][2 * l + k];
    buf_printf(b, "%s%c=%lld", sep, dn->letter[v], t);
    if (r != t)
      buf_printf(b, ",%lld", r);
    sep = " ";
  }
  /* Timeloop's permutation: innermost first, one letter per dimension:
   * the model's loops here, innermost first, then the others. */
  buf_printf(b, "\"\n  permutation: ");
  for (int j = n[l].norder[k] - 1; j >= 0; j--)
    if (VARSET_HAS(dn->used, n[l].order[k][j]))
      buf_printf(b, "%c", dn->letter[n[l].order[k][j]]);
  int ndims = 0;
  for (int v = 0; v < e->nvars; v++) {
    if (!VARSET_HAS(dn->used, v))
      continue;
    ndims++;
    bool listed = false;
    for (int j = 0; j < n[l].norder[k]; j++)
      listed = listed || n[l].order[k][j] == v;
    if (!listed)
      buf_printf(b, "%c", dn->letter[v]);
  }
  buf_printf(b, "\n");
  if (k) /* every instance gets its operands alone, as the model sends
            them: no multicast, no spatial reduction, no neighbour links */
    buf_printf(b, "  split: %d\n  no_multicast_no_reduction: [%s]\n"
                  "  no_link_transfer: [%s]\n", ndims, spaces, spaces);
}

static void mapping(const Cascade *c, const Shape *s, const Arch *a,
                    const Eval *ev, int i, const Dims *dn, const char *file,
                    Buf *b) {
  const Einsum *e = c->einsums[ev->e[i].einsum];
  const LevelUse *use = &ev->use[(size_t)i * (size_t)a->nlevels];
  int L = a->nlevels;
  Nest *n = xcalloc((size_t)L, sizeof *n);
  long long(*last)[2 * IR_MAX_VARS] = xcalloc(IR_MAX_VARS, sizeof *last);
  long long end[2 * IR_MAX_VARS];
  nest_of(a, ev, i, e, s, n);
  buf_printf(b, "# the model's loop nest on %s for:\n", a->name);
  comment_lines(b, e->text);
  buf_printf(b, "#   timeloop-model arch.yaml %s.problem.yaml "
                "%s.mapping.yaml\n", file, file);
  for (int v = 0; v < e->nvars; v++) {
    if (!VARSET_HAS(dn->used, v))
      continue;
    chain(n, v, (double)s->size[e->vars[v].rank], end, last[v]);
    if (!nests_exactly(n, v, end))
      buf_printf(b, "# %s's tiles do not nest exactly (one is no multiple "
                    "of the tile inside it): Timeloop steps %c by the "
                    "product of the counts inside, and counts otherwise\n",
                 e->vars[v].name, dn->letter[v]);
  }
  for (int l = 0; l < L; l++)
    if (!use[l].fits)
      buf_printf(b, "# the model's tile overflows %s (its operands "
                    "stream): Timeloop refuses the mapping\n",
                 a->levels[l].name);
  Buf spaces = {0};
  const char *sep = "";
  for (int t = 0; t < c->ntensors; t++) {
    bool space = t == e->out.tensor;
    for (int r = 0; r < e->nreads; r++)
      space = space || (e->reads[r]->tensor == t && e->reads[r]->n);
    if (space) {
      buf_printf(&spaces, "%s%s", sep, c->tensors[t].name);
      sep = ", ";
    }
  }
  buf_printf(b, "mapping:\n");
  for (int l = L - 1; l >= 0; l--) {
    directive(e, dn, n, l, 0, a->levels[l].name, spaces.s, last, b);
    int below = l + 1 < L ? a->levels[l + 1].instances
                          : a->levels[L - 1].instances;
    if (below > a->levels[l].instances)
      directive(e, dn, n, l, 1, a->levels[l].name, spaces.s, last, b);
  }
  buf_free(&spaces);
  free(last);
  free(n);
}

/* The files' names fit a file name (NAME_MAX), and each Einsum's
 * dimensions Timeloop's one-letter names: refused before the work, not
 * when the set is staged. */
static int check_names(const char *cmd, const Cascade *c) {
  for (int k = 0; k < c->neinsums; k++) {
    const Einsum *e = c->einsums[k];
    const char *t = c->tensors[e->out.tensor].name;
    if (strlen(t) + strlen("00_.problem.yaml") > 255)
      return usage_error(cmd, "the tensor name '%.40s...' (%zu bytes) is too "
                              "long for a file name", t, strlen(t));
    Dims dn = {.used = kept_vars(e)};
    if (!name_dims(e, &dn))
      return usage_error(cmd, "%s's Einsum has %d dimensions: Timeloop names "
                              "each with one letter, %d at most", t,
                         __builtin_popcountll(dn.used), DIM_LETTERS);
  }
  return 0;
}

/* Stage the architecture, and each Einsum's problem and mapping, into
 * SET. */
static bool put_files(OutSet *set, const Cascade *c, const Shape *s,
                      const Arch *a, const Eval *ev, Diag *d) {
  Buf arch = {0};
  arch_file(a, &arch);
  bool ok = outset_put(set, "arch.yaml", arch.s, arch.len, d);
  buf_free(&arch);
  for (int k = 0; ok && k < ev->n; k++) {
    const Einsum *e = c->einsums[ev->e[k].einsum];
    Dims dn = {.used = kept_vars(e)};
    name_dims(e, &dn); /* check_names saw that it can */
    Buf p = {0}, m = {0};
    char file[280], name[300];
    snprintf(file, sizeof file, "%02d_%s", k + 1,
             c->tensors[e->out.tensor].name);
    problem(c, s, e, &dn, &p);
    mapping(c, s, a, ev, k, &dn, file, &m);
    snprintf(name, sizeof name, "%s.problem.yaml", file);
    ok = outset_put(set, name, p.s, p.len, d);
    snprintf(name, sizeof name, "%s.mapping.yaml", file);
    ok = ok && outset_put(set, name, m.s, m.len, d);
    buf_free(&p);
    buf_free(&m);
  }
  return ok;
}

static int run(const Parsed *p, const ExportOpts *o) {
  Diag dd = {0};
  if (!output_dir_check(o->out, &dd))
    return input_failed(&dd);
  Cascade *c;
  Shape *s;
  int err = load_spec(p->cmd, &o->spec, true, &c, &s);
  if (!err && (err = check_names(p->cmd, c))) {
    shape_free(s);
    cascade_free(c);
  }
  if (err)
    return err;
  Diag d = {0};
  Arch *a = open_arch(o->arch, &d);
  inputset_add(p->inputs, input_path("archs", o->arch));
  Pair *pairs = a ? fusion_classify(c, s) : NULL;
  ModelOpts mo = model_default_opts((Design)o->design);
  Eval *ev =
      a ? model_eval(c, s, a, pairs, (Design)o->design, &mo, &d) : NULL;
  OutSet *set = ev ? outset_new(o->out) : NULL;
  bool ok = set != NULL;
  if (set)
    outset_protect_inputs(set, p->inputs);
  ok = ok && put_files(set, c, s, a, ev, &d);
  bool refused = !set;
  ok = ok && outset_commit(set, &refused, &d);
  if (!ok)
    diag_print(&d, stderr);
  outset_free(set);
  eval_free(ev);
  free(pairs);
  arch_free(a);
  shape_free(s);
  cascade_free(c);
  return ok ? 0 : refused ? EXIT_INPUT : EXIT_RUN;
}

static int export(const Parsed *p, void *opts) {
  return run(p, opts);
}

const Command export_command = {
    "export", "each Einsum as a Timeloop problem and mapping",
    .about =
        "Write ARCH in Timeloop's format (arch.yaml: every memory level, named\n"
        "as ARCH names it), each Einsum of SPEC as a Timeloop problem\n"
        "(NN_NAME.problem.yaml: its variables the dimensions, renamed to one\n"
        "letter each, its tensors the data spaces, the output read-write) and\n"
        "the loop nest the model chose for it on ARCH under design D\n"
        "(NN_NAME.mapping.yaml: every level's factors, a leftover as Timeloop\n"
        "writes one, N=32,24). timeloop-model runs them as written. Timeloop\n"
        "computes a multiply-accumulate; what it cannot say (other operators,\n"
        "index offsets, a tensor read twice) is a comment in the problem.\n",
    .opts = &export_table,
    .uses = {USE_SPEC(ExportOpts)},
    .example = "mambalaya export timeloop mamba1 --set B=1 --set I=64 --out "
               "out/timeloop\n",
    .size = sizeof(ExportOpts), .run = export,
};
