/* arch.c — loading an architecture file (docs/architecture.md) into an
 * Arch. The loader is strict: every key is known, every quantity carries a
 * unit of the right dimension, and the first problem is reported at its
 * FILE:LINE:COL. Everything the Arch holds lives in its arena; the YAML
 * tree is freed once loading ends. */
#include "arch.h"
#include "quantity.h"

#include "../workload/accelforge_arch.h"
#include "../ydoc/ydoc.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const opclass_names[] = {
    "macc", "add", "mul", "div", "exp", "log", "sqrt", "silu", "max"};
_Static_assert(sizeof opclass_names / sizeof opclass_names[0] == OPC_COUNT,
               "a name per operation class");
static const char *const role_names[] = {"matrix", "vector", "feeder"};
_Static_assert(sizeof role_names / sizeof role_names[0] == ROLE_COUNT,
               "a name per role");
static const char *const rednet_names[] = {"chain", "tree", "none"};
_Static_assert(sizeof rednet_names / sizeof rednet_names[0] == REDNET_COUNT,
               "a name per reduction network");

const char *opclass_name(OpClass k) {
  return (unsigned)k < OPC_COUNT ? opclass_names[k] : "?";
}

const char *role_name(UnitRole r) {
  return (unsigned)r < ROLE_COUNT ? role_names[r] : "?";
}

int arch_unit(const Arch *a, UnitRole r) {
  for (int i = 0; i < a->nunits; i++)
    if (a->units[i].role == r)
      return i;
  return -1;
}

int arch_array_of(const Arch *a, int u) {
  while (a->units[u].mode_of >= 0)
    u = a->units[u].mode_of;
  return u;
}

double arch_peak(const Arch *a, int unit, OpClass k) {
  if (unit < 0 || unit >= a->nunits || (unsigned)k >= OPC_COUNT)
    return 0;
  const Unit *u = &a->units[unit];
  return (double)u->pes * u->rate[k] * a->clock_hz;
}

/* ---- the loader's helpers ---- */

typedef struct Loader {
  Arch *a;
  Diag *d;
} Loader;

#define fail(L, ...) diag_fail((L)->d, (L)->a->path, __VA_ARGS__)

/* The document checks of ydoc.h, in the loader's terms. */
static bool want(Loader *L, const YamlNode *n, YamlKind kind,
                 const char *what) {
  return ydoc_want(n, kind, what, L->d);
}

static bool check_keys(Loader *L, const YamlNode *map,
                       const char *const *allowed, const char *where) {
  return ydoc_known_keys(map, allowed, where, L->d);
}

/* The value under KEY, or NULL with an error at AT (where the mapping's
 * owner was written: its key, or the list item). */
static const YamlNode *need_at(Loader *L, Loc at, const YamlNode *map,
                               const char *key, const char *where,
                               const char *hint) {
  return ydoc_need(map, key, at, where, hint, L->d);
}

static const YamlNode *need(Loader *L, const YamlNode *map, const char *key,
                            const char *where, const char *hint) {
  return need_at(L, map->loc, map, key, where, hint);
}

/* A quantity of dimension DIM. Messages say what was expected and, where
 * they can, what was written instead: a bare number, another dimension. */
static bool get_quantity(Loader *L, const YamlNode *n, const char *dim,
                         const char *what, double *out) {
  if (!want(L, n, YN_SCALAR, what))
    return false;
  if (n->text[0] == 0)
    return fail(L, n->loc, "%s has no value: expected %s such as '%s'", what,
                quantity_what(dim), quantity_example(dim));
  const char *found = NULL;
  QuantityStatus st = quantity_scan(n->text, dim, out, &found);
  if (st == Q_OK)
    return true;
  Buf units = {0};
  quantity_units(dim, &units);
  switch (st) {
  case Q_NO_UNIT:
    fail(L, n->loc,
         "%s '%s' has no unit: expected %s such as '%s' (units: %s)", what,
         n->text, quantity_what(dim), quantity_example(dim), units.s);
    break;
  case Q_OTHER_DIM:
    fail(L, n->loc, "%s '%s' is %s, expected %s such as '%s' (units: %s)",
         what, n->text, quantity_what(found), quantity_what(dim),
         quantity_example(dim), units.s);
    break;
  case Q_RANGE:
    fail(L, n->loc, "%s '%s' is out of range (%s)", what, n->text,
         quantity_range(dim));
    break;
  default:
    fail(L, n->loc, "%s '%s' is not %s such as '%s' (units: %s)", what,
         n->text, quantity_what(dim), quantity_example(dim), units.s);
    break;
  }
  buf_free(&units);
  return false;
}

/* A quantity that must be > 0 (clock, capacity, bandwidth). */
static bool get_positive(Loader *L, const YamlNode *n, const char *dim,
                         const char *what, double *out) {
  if (!get_quantity(L, n, dim, what, out))
    return false;
  if (!(*out > 0))
    return fail(L, n->loc, "%s must be positive, found '%s'", what, n->text);
  return true;
}

/* A quantity that must be >= 0 (energies: zero is a legitimate choice). */
static bool get_non_negative(Loader *L, const YamlNode *n, const char *dim,
                             const char *what, double *out) {
  if (!get_quantity(L, n, dim, what, out))
    return false;
  if (*out < 0)
    return fail(L, n->loc, "%s must not be negative, found '%s'", what,
                n->text);
  return true;
}

/* A whole number >= 1 that fits an int. */
static bool get_count(Loader *L, const YamlNode *n, const char *what,
                      int *out) {
  if (!want(L, n, YN_SCALAR, what))
    return false;
  const char *s = n->text;
  size_t i = s[0] == '-' ? 1 : 0;
  bool digits = isdigit((unsigned char)s[i]) != 0;
  while (isdigit((unsigned char)s[i]))
    i++;
  if (!digits || s[i] != 0)
    return fail(L, n->loc, "%s must be a positive integer, found '%s'", what,
                s);
  long long v = strtoll(s, NULL, 10); /* saturates, so the test below holds */
  if (v < 1 || v > INT_MAX)
    return fail(L, n->loc, "%s must be a positive integer (at most %d), "
                           "found '%s'",
                what, INT_MAX, s);
  *out = (int)v;
  return true;
}

/* Names are referred to from the command line and from mode_of: a letter
 * or '_' first, then letters, digits, '_', '-' and '.'. */
static bool get_name(Loader *L, const YamlNode *n, const char *what,
                     const char **out) {
  if (!want(L, n, YN_SCALAR, what))
    return false;
  const char *s = n->text;
  bool ok = isalpha((unsigned char)s[0]) || s[0] == '_';
  for (const char *p = s; ok && *p; p++)
    ok = isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.';
  if (!ok)
    return fail(L, n->loc,
                "%s '%s' is not a name (a letter or '_', then letters, "
                "digits, '_', '-' or '.')",
                what, s);
  *out = arena_strdup(&L->a->arena, s);
  return true;
}

static int find_opclass(const char *s) {
  for (int k = 0; k < OPC_COUNT; k++)
    if (strcmp(opclass_names[k], s) == 0)
      return k;
  return -1;
}

static bool unknown_opclass(Loader *L, const YamlNode *key,
                            const char *where) {
  Buf b = {0};
  buf_did_you_mean_of(&b, key->text, opclass_names, OPC_COUNT);
  buf_printf(&b, "expected ");
  ydoc_join(&b, opclass_names, OPC_COUNT);
  fail(L, key->loc, "unknown operation class '%s' in %s (%s)", key->text,
       where, b.s);
  buf_free(&b);
  return false;
}

/* ---- memory ---- */

const ArchField mem_level_fields[] = {
#define LEVEL_FIELD(key, member, KIND, dim, dflt, NEED, hint, json)           \
  {key, LF_##KIND, dim, dflt, LF_##NEED, hint, json,                          \
   offsetof(MemLevel, member)},
    MEM_LEVEL_FIELDS(LEVEL_FIELD)
#undef LEVEL_FIELD
};
_Static_assert(sizeof mem_level_fields / sizeof mem_level_fields[0] ==
                   MEM_LEVEL_NFIELDS,
               "a row per level field");

static const char *const level_keys[] = {
#define LEVEL_KEY(key, ...) key,
    "name", MEM_LEVEL_FIELDS(LEVEL_KEY) NULL
#undef LEVEL_KEY
};

double arch_field_value(const void *rec, const ArchField *f) {
  const char *at = (const char *)rec + f->offset;
  switch (f->kind) {
  case LF_COUNT:
    return *(const int *)at;
  case LF_FLAG:
    return *(const bool *)at;
  case LF_POSITIVE:
  case LF_NON_NEGATIVE:
  case LF_SHARE:
    break;
  }
  return *(const double *)at;
}

void arch_field_set(void *rec, const ArchField *f, double v) {
  char *at = (char *)rec + f->offset;
  switch (f->kind) {
  case LF_COUNT:
    *(int *)at = (int)lround(v);
    return;
  case LF_FLAG:
    *(bool *)at = v != 0;
    return;
  case LF_POSITIVE:
  case LF_NON_NEGATIVE:
  case LF_SHARE:
    *(double *)at = v;
  }
}

static const char *const level_role_names[] = {"dram", "staging", "buffer",
                                               "level", "registers"};
_Static_assert(sizeof level_role_names / sizeof level_role_names[0] ==
                   LEVEL_ROLE_COUNT,
               "a name per level role");

const char *level_role_name(LevelRole r) { return level_role_names[r]; }

bool arch_level_has_bandwidth(const MemLevel *m) {
  return isfinite(m->bandwidth) || isfinite(m->read_bandwidth) ||
         isfinite(m->write_bandwidth);
}

LevelRole arch_level_role(const Arch *a, int l) {
  if (l == 0)
    return LEVEL_OFFCHIP;
  if (l < a->fusion_level)
    return LEVEL_STAGING;
  if (l == a->fusion_level)
    return LEVEL_FUSION;
  return l == a->nlevels - 1 ? LEVEL_REGISTERS : LEVEL_INNER;
}

static bool get_flag(Loader *L, const YamlNode *n, const char *what,
                     bool *out) {
  static const char *const flags[] = {"false", "true"};
  int k = ydoc_enum(n, flags, 2, what, L->d);
  *out = k == 1;
  return k >= 0;
}

/* ports and port_area go with area; ports past the first need
 * port_area. Area itself is checked against the area section once it is
 * loaded (check_level_areas). */
static bool check_level_ports(Loader *L, const YamlNode *m,
                              const MemLevel *lv) {
  const YamlNode *area = ydoc_get(m, "area"), *ports = ydoc_get(m, "ports");
  const YamlNode *pa = ydoc_get(m, "port_area");
  if ((ports || pa) && !area)
    return fail(L, (ports ? ports : pa)->loc,
                "ports and port_area need 'area' (per MiB with one port, "
                "e.g. '0.34 mm2/MiB')");
  if (lv->ports > 1 && !pa)
    return fail(L, ports->loc,
                "%d ports need 'port_area' (the area each port past the "
                "first adds per MiB, e.g. '0.1 mm2/MiB')",
                lv->ports);
  return true;
}

/* A share in (0, 1] (`efficiency`), read at N as WHAT. */
static bool get_share(Loader *L, const YamlNode *n, const char *what,
                      double *out) {
  if (!want(L, n, YN_SCALAR, what))
    return false;
  if (!parse_decimal(n->text, out) || !(*out > 0) || *out > 1)
    return fail(L, n->loc,
                "%s must be a share of the peak in (0, 1], found '%s'", what,
                n->text);
  return true;
}

/* efficiency: the share of its bandwidths a kernel achieves, applied to
 * them here once; a level without a bandwidth has none to scale. */
static bool apply_level_efficiency(Loader *L, const YamlNode *m,
                                   MemLevel *lv) {
  const YamlNode *eff = ydoc_get(m, "efficiency");
  if (!eff)
    return true;
  if (isinf(lv->bandwidth) && isinf(lv->read_bandwidth) &&
      isinf(lv->write_bandwidth))
    return fail(L, eff->loc,
                "efficiency of memory level '%s' needs a bandwidth to scale "
                "(it has none: unlimited)",
                lv->name);
  lv->bandwidth *= lv->efficiency;
  lv->read_bandwidth *= lv->efficiency;
  lv->write_bandwidth *= lv->efficiency;
  return true;
}

/* Field F of the level or unit REC read from M (WHERE, for messages), by
 * its row of MEM_LEVEL_FIELDS or COMPUTE_UNIT_FIELDS: its default when not
 * given, an error when it must be (OUTERMOST: REC is off-chip memory). */
static bool load_field(Loader *L, const YamlNode *m, bool outermost,
                       const char *where, const ArchField *f, void *rec) {
  arch_field_set(rec, f, f->dflt);
  const YamlNode *v = ydoc_get(m, f->key);
  bool needed = f->need == LF_REQUIRED ||
                (f->need == LF_ON_CHIP && !outermost) ||
                (f->need == LF_OFF_CHIP && outermost);
  if (!v)
    return !needed || need(L, m, f->key, where, f->hint);
  void *at = (char *)rec + f->offset;
  switch (f->kind) {
  case LF_POSITIVE:
    return get_positive(L, v, f->dim, f->key, at);
  case LF_NON_NEGATIVE:
    return get_non_negative(L, v, f->dim, f->key, at);
  case LF_SHARE:
    return get_share(L, v, f->key, at);
  case LF_COUNT:
    return get_count(L, v, f->key, at);
  case LF_FLAG:
    return get_flag(L, v, f->key, at);
  }
  return false;
}

/* Every field of TABLE (N rows) of REC, in the table's order. */
static bool load_fields(Loader *L, const YamlNode *m, bool outermost,
                        const char *where, const ArchField *table, int n,
                        void *rec) {
  for (int k = 0; k < n; k++)
    if (!load_field(L, m, outermost, where, &table[k], rec))
      return false;
  return true;
}

/* A level: its name, then every field of MEM_LEVEL_FIELDS, then the rules
 * between them. */
static bool load_level(Loader *L, const YamlNode *m, bool outermost,
                       MemLevel *lv) {
  if (!want(L, m, YN_MAP, "a memory level"))
    return false;
  if (!check_keys(L, m, level_keys, "a memory level"))
    return false;
  const YamlNode *name =
      need(L, m, "name", "memory level", "e.g. 'name: DRAM'");
  if (!name || !get_name(L, name, "memory level name", &lv->name))
    return false;
  lv->loc = m->loc;
  char where[300];
  snprintf(where, sizeof where, "memory level '%s'", lv->name);
  if (!load_fields(L, m, outermost, where, mem_level_fields,
                   MEM_LEVEL_NFIELDS, lv))
    return false;
  /* latency: the round trip a GPU kernel's dependent access waits, to
   * off-chip memory (check_gpu_waits: a GPU's field). */
  const YamlNode *lat = ydoc_get(m, "latency");
  if (lat && !outermost)
    return fail(L, lat->loc,
                "%s: 'latency' is off-chip memory's (the round trip a GPU "
                "kernel's dependent access waits), not an on-chip level's",
                where);
  return apply_level_efficiency(L, m, lv) && check_level_ports(L, m, lv);
}

/* The fusion level: the one marked `fusion: true`; unmarked, the only
 * on-chip level above the registers (files of two or three levels); with
 * more, the file must say. */
static bool find_fusion(Loader *L, const YamlNode *seq) {
  Arch *a = L->a;
  a->fusion_level = -1;
  for (int i = 0; i < a->nlevels; i++) {
    if (!a->levels[i].fusion)
      continue;
    const YamlNode *f = ydoc_get(seq->items[i], "fusion");
    if (a->fusion_level >= 0)
      return fail(L, f->loc,
                  "memory level '%s' is a second fusion level ('%s' is "
                  "one): a fusion group keeps its intermediates in one",
                  a->levels[i].name, a->levels[a->fusion_level].name);
    a->fusion_level = i;
  }
  if (a->fusion_level < 0 && a->nlevels > 3)
    return fail(L, seq->loc,
                "memory has %d on-chip levels: mark the one a fusion group "
                "keeps its intermediates in with 'fusion: true'",
                a->nlevels - 1);
  if (a->fusion_level < 0)
    a->fusion_level = 1;
  a->levels[a->fusion_level].fusion = true;
  return true;
}

/* The fusion level found must be one (arch_fusion_problem, the rule the
 * search's candidates follow too): refused at the key at fault. */
static bool check_roles(Loader *L, const YamlNode *seq) {
  const Arch *a = L->a;
  int f = a->fusion_level, at;
  FusionProblem p = arch_fusion_problem(a, f, &at);
  if (p == FUSION_OK)
    return true;
  const char *key = p == FUSION_INSTANCES ? "instances"
                    : p == FUSION_STAGING ? "capacity"
                                          : "fusion";
  const YamlNode *n = ydoc_get(seq->items[at], key);
  Buf why = {0};
  arch_fusion_why(a, f, &why);
  fail(L, n ? n->loc : seq->items[at]->loc, "%s", why.s);
  buf_free(&why);
  return false;
}

static bool load_memory(Loader *L, const YamlNode *seq) {
  if (!want(L, seq, YN_SEQ, "memory (a list of levels, outermost first)"))
    return false;
  if (seq->n < 2)
    return fail(L, seq->loc,
                "memory has %d level%s: give off-chip memory and at least "
                "one on-chip level, outermost first",
                seq->n, seq->n == 1 ? "" : "s");
  Arch *a = L->a;
  a->nlevels = seq->n;
  a->levels = arena_alloc(&a->arena, (size_t)seq->n * sizeof *a->levels);
  for (int i = 0; i < seq->n; i++) {
    if (!load_level(L, seq->items[i], i == 0, &a->levels[i]))
      return false;
    for (int j = 0; j < i; j++)
      if (strcmp(a->levels[j].name, a->levels[i].name) == 0)
        return fail(L, ydoc_get(seq->items[i], "name")->loc,
                    "duplicate memory level name '%s' (first at line %d)",
                    a->levels[i].name, a->levels[j].loc.line);
  }
  return find_fusion(L, seq) && check_roles(L, seq);
}

/* ---- compute ---- */

const ArchField compute_unit_fields[] = {
#define UNIT_FIELD(key, member, KIND, dim, dflt, NEED, hint, json)            \
  {key, LF_##KIND, dim, dflt, LF_##NEED, hint, json, offsetof(Unit, member)},
    COMPUTE_UNIT_FIELDS(UNIT_FIELD)
#undef UNIT_FIELD
};
_Static_assert(sizeof compute_unit_fields / sizeof compute_unit_fields[0] ==
                   COMPUTE_UNIT_NFIELDS,
               "a row per unit field");

/* The structured fields' keys (arch.h) around the table's. */
static const char *const unit_keys[] = {
#define UNIT_KEY(key, ...) key,
    "name", "role", "shape", "pes", "mode_of", COMPUTE_UNIT_FIELDS(UNIT_KEY)
    "ops", "epilogue", "reduction", "tile", NULL
#undef UNIT_KEY
};

static bool load_role(Loader *L, const YamlNode *n, UnitRole *out) {
  int r = ydoc_enum(n, role_names, ROLE_COUNT, "role", L->d);
  *out = (UnitRole)r;
  return r >= 0;
}

/* shape: [ROWS, COLS] and/or pes: N; when both are given they must agree. */
static bool load_geometry(Loader *L, const YamlNode *m, const char *where,
                          Unit *u) {
  const YamlNode *shape = ydoc_get(m, "shape"), *pes = ydoc_get(m, "pes");
  if (!shape && !pes)
    return fail(L, m->loc, "%s needs 'pes' (a count) or 'shape' ([ROWS, "
                           "COLS])",
                where);
  if (shape) {
    if (!want(L, shape, YN_SEQ, "shape ([ROWS, COLS])"))
      return false;
    if (shape->n != 2)
      return fail(L, shape->loc,
                  "shape must be two positive integers [ROWS, COLS], found "
                  "%d item%s",
                  shape->n, shape->n == 1 ? "" : "s");
    if (!get_count(L, shape->items[0], "shape rows", &u->rows) ||
        !get_count(L, shape->items[1], "shape columns", &u->cols))
      return false;
    if ((long long)u->rows * u->cols > INT_MAX)
      return fail(L, shape->loc, "shape [%d, %d] has too many PEs", u->rows,
                  u->cols);
    u->pes = u->rows * u->cols;
  }
  if (pes) {
    int n;
    if (!get_count(L, pes, "pes", &n))
      return false;
    if (shape && n != u->pes)
      return fail(L, pes->loc,
                  "pes %d does not match shape [%d, %d] (%d PEs)", n, u->rows,
                  u->cols, u->pes);
    if (!shape) {
      u->pes = u->rows = n;
      u->cols = 1;
    }
  }
  return true;
}

static bool load_ops(Loader *L, const YamlNode *ops, const char *where,
                     Unit *u) {
  if (!want(L, ops, YN_MAP, "ops (operation class: rate per PE per cycle)"))
    return false;
  for (int i = 0; i < ops->n; i++) {
    const YamlNode *k = ops->keys[i], *v = ops->items[i];
    int c = find_opclass(k->text);
    if (c < 0)
      return unknown_opclass(L, k, where);
    if (!want(L, v, YN_SCALAR, "an operation rate"))
      return false;
    double r;
    if (!parse_decimal(v->text, &r) || r < 0 || (r > 0 && r < 1e-6) ||
        r > 1e6)
      return fail(L, v->loc,
                  "rate of '%s' must be 0 or a number of operations per PE "
                  "per cycle from 1e-6 to 1e6, found '%s'",
                  k->text, v->text);
    u->rate[c] = r;
  }
  return true;
}

/* The rules between a GPU's kernel fields (read by COMPUTE_UNIT_FIELDS)
 * and tile: [M, N]: threads need sms; the tile and the SMs come
 * together, on a matrix unit whose PEs the SMs divide. */
static bool load_kernel_fields(Loader *L, const YamlNode *m,
                               const char *where, Unit *u) {
  const YamlNode *tile = ydoc_get(m, "tile"), *sms = ydoc_get(m, "sms");
  const YamlNode *threads = ydoc_get(m, "threads");
  if (threads && !sms)
    return fail(L, threads->loc,
                "%s: 'threads' (resident per SM) needs 'sms'", where);
  if (!tile && !sms)
    return true;
  if (!tile || !sms)
    return fail(L, (tile ? tile : sms)->loc,
                "%s: 'tile' ([M, N], a kernel's output tile per SM) and "
                "'sms' (the SMs its PEs are spread over) come together",
                where);
  if (u->role != ROLE_MATRIX)
    return fail(L, tile->loc,
                "%s: 'tile' and 'sms' are for a matrix unit (a GEMM's "
                "output tiles in waves over the SMs)",
                where);
  if (!want(L, tile, YN_SEQ, "tile ([M, N])"))
    return false;
  if (tile->n != 2)
    return fail(L, tile->loc, "tile must be two positive integers [M, N], "
                              "found %d item%s",
                tile->n, tile->n == 1 ? "" : "s");
  if (!get_count(L, tile->items[0], "tile M", &u->tile_m) ||
      !get_count(L, tile->items[1], "tile N", &u->tile_n))
    return false;
  if (u->pes % u->sms != 0)
    return fail(L, sms->loc, "%s: sms %d does not divide its %d PEs", where,
                u->sms, u->pes);
  return true;
}

/* Everything of one unit that does not depend on other units. A mode's
 * ops and pipeline may be omitted: they are its parent's (same PEs). */
static bool load_unit(Loader *L, const YamlNode *m, Unit *u) {
  if (!want(L, m, YN_MAP, "a compute unit"))
    return false;
  if (!check_keys(L, m, unit_keys, "a compute unit"))
    return false;
  const YamlNode *name =
      need(L, m, "name", "compute unit", "e.g. 'name: array2d'");
  if (!name || !get_name(L, name, "unit name", &u->name))
    return false;
  u->loc = m->loc;
  u->mode_of = -1;
  char where[300];
  snprintf(where, sizeof where, "unit '%s'", u->name);
  const YamlNode *role =
      need(L, m, "role", where, "matrix, vector or feeder");
  if (!role || !load_role(L, role, &u->role))
    return false;
  if (!load_geometry(L, m, where, u))
    return false;
  if (!load_fields(L, m, false, where, compute_unit_fields,
                   COMPUTE_UNIT_NFIELDS, u))
    return false;
  const YamlNode *red = ydoc_get(m, "reduction");
  u->reduction = REDNET_CHAIN;
  u->epilogue = -1;
  if (red) {
    int r = ydoc_enum(red, rednet_names, REDNET_COUNT, "reduction network",
                      L->d);
    if (r < 0)
      return false;
    u->reduction = (RedNet)r;
  }
  if (!load_kernel_fields(L, m, where, u))
    return false;
  const YamlNode *ops = ydoc_get(m, "ops");
  if (!ops && !ydoc_get(m, "mode_of"))
    return fail(L, m->loc,
                "%s is missing 'ops' (operations per PE per cycle, e.g. "
                "'{macc: 1, add: 1}')",
                where);
  return !ops || load_ops(L, ops, where, u);
}

_Static_assert(offsetof(Unit, name) == 0,
               "find_named reads a unit's name at its start");

static int find_unit(const Arch *a, const char *name) {
  return find_named(a->units, a->nunits, sizeof *a->units, name);
}

/* A unit named at N (mode_of, epilogue, binding), or an error listing the
 * units. */
static int named_unit(Loader *L, const YamlNode *n, const char *what) {
  if (!want(L, n, YN_SCALAR, what))
    return -1;
  int u = find_unit(L->a, n->text);
  if (u < 0) {
    Buf b = {0};
    Nearest near = nearest_start(n->text);
    for (int j = 0; j < L->a->nunits; j++)
      nearest_offer(&near, L->a->units[j].name);
    buf_did_you_mean(&b, &near);
    buf_printf(&b, "units: ");
    for (int j = 0; j < L->a->nunits; j++)
      buf_printf(&b, "%s%s", j ? ", " : "", L->a->units[j].name);
    fail(L, n->loc, "%s names unknown unit '%s' (%s)", what, n->text, b.s);
    buf_free(&b);
  }
  return u;
}

/* epilogue: the unit that runs what this one cannot (not itself, not a
 * unit with an epilogue of its own). */
static bool resolve_epilogue(Loader *L, const YamlNode *seq, int i) {
  const YamlNode *ep = ydoc_get(seq->items[i], "epilogue");
  if (!ep)
    return true;
  int u = named_unit(L, ep, "epilogue");
  if (u < 0)
    return false;
  if (u == i || ydoc_get(seq->items[u], "epilogue"))
    return fail(L, ep->loc,
                "epilogue of '%s' must name another unit without an "
                "epilogue of its own",
                L->a->units[i].name);
  L->a->units[i].epilogue = u;
  return true;
}

/* mode_of: a mode reuses a physical array's PEs, so it names a unit that
 * is not itself a mode, and has at most that unit's PEs. */
static bool resolve_mode(Loader *L, const YamlNode *seq, int i) {
  Arch *a = L->a;
  Unit *u = &a->units[i];
  const YamlNode *mo = ydoc_get(seq->items[i], "mode_of");
  if (!mo)
    return true;
  int p = named_unit(L, mo, "mode_of");
  if (p < 0)
    return false;
  if (p == i)
    return fail(L, mo->loc, "unit '%s' cannot be a mode of itself", u->name);
  /* The parent's own mode_of may not be resolved yet: ask its YAML. */
  if (ydoc_get(seq->items[p], "mode_of"))
    return fail(L, mo->loc,
                "unit '%s' is a mode of '%s', which is itself a mode: "
                "mode_of must name a physical array",
                u->name, a->units[p].name);
  if (u->pes > a->units[p].pes)
    return fail(L, mo->loc,
                "mode '%s' has %d PEs but '%s' has only %d: a mode reuses "
                "its array's PEs",
                u->name, u->pes, a->units[p].name, a->units[p].pes);
  u->mode_of = p;
  return true;
}

/* Modes take their array's ops and pipeline unless they give their own;
 * then every unit must be able to do something, and a matrix unit must
 * do MACCs on a 2D geometry. */
static bool finish_unit(Loader *L, const YamlNode *m, Unit *u) {
  if (u->mode_of >= 0) {
    const Unit *p = &L->a->units[u->mode_of];
    if (!ydoc_get(m, "ops"))
      memcpy(u->rate, p->rate, sizeof u->rate);
    if (!ydoc_get(m, "pipeline"))
      u->pipeline = p->pipeline;
  }
  const YamlNode *ops = ydoc_get(m, "ops");
  Loc at = ops ? ops->loc : m->loc;
  bool any = false;
  for (int k = 0; k < OPC_COUNT; k++)
    any = any || u->rate[k] > 0;
  if (!any)
    return fail(L, at, "unit '%s' performs no operation: give a positive "
                       "rate in ops",
                u->name);
  if (u->role == ROLE_MATRIX && !(u->rate[OPC_MACC] > 0))
    return fail(L, at,
                "unit '%s' has role matrix but no macc rate: a matrix unit "
                "runs GEMMs",
                u->name);
  if (u->role == ROLE_MATRIX && !ydoc_get(m, "shape"))
    return fail(L, m->loc,
                "unit '%s' has role matrix but no shape: give 'shape: [ROWS, "
                "COLS]'",
                u->name);
  return true;
}

static bool load_compute(Loader *L, const YamlNode *seq) {
  if (!want(L, seq, YN_SEQ, "compute (a list of units)"))
    return false;
  if (seq->n == 0)
    return fail(L, seq->loc, "compute is empty: give at least one unit");
  Arch *a = L->a;
  a->units = arena_alloc(&a->arena, (size_t)seq->n * sizeof *a->units);
  for (int i = 0; i < seq->n; i++) {
    if (!load_unit(L, seq->items[i], &a->units[i]))
      return false;
    for (int j = 0; j < i; j++)
      if (strcmp(a->units[j].name, a->units[i].name) == 0)
        return fail(L, ydoc_get(seq->items[i], "name")->loc,
                    "duplicate unit name '%s' (first at line %d)",
                    a->units[i].name, a->units[j].loc.line);
    a->nunits = i + 1;
  }
  /* Two passes: mode_of may name a unit listed later, and whether the
   * parent is itself a mode must be known before inheriting from it. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < seq->n; i++) {
      bool ok = pass == 0 ? resolve_mode(L, seq, i) &&
                                resolve_epilogue(L, seq, i)
                          : finish_unit(L, seq->items[i], &a->units[i]);
      if (!ok)
        return false;
    }
  return true;
}

/* binding: {TENSOR: UNIT}: the unit that runs the Einsum writing TENSOR,
 * whatever the binding rules say (names no cascade has are ignored: one
 * architecture serves many cascades). */
static bool load_bindings(Loader *L, const YamlNode *m) {
  if (!want(L, m, YN_MAP, "binding (output tensor: unit name)"))
    return false;
  Arch *a = L->a;
  a->bindings = arena_alloc(&a->arena, ((size_t)m->n + 1) * sizeof *a->bindings);
  for (int i = 0; i < m->n; i++) {
    int u = named_unit(L, m->items[i], "binding");
    if (u < 0)
      return false;
    a->bindings[a->nbindings++] =
        (ArchBinding){arena_strdup(&a->arena, m->keys[i]->text), u,
                      m->keys[i]->loc};
  }
  return true;
}

/* ---- energy ---- */

/* Energy per operation for each class; a class some unit performs must
 * have one, so that no energy report silently prices it at zero. */
static bool load_energy(Loader *L, const YamlNode *m) {
  if (!want(L, m, YN_MAP, "energy (operation class: energy per operation)"))
    return false;
  Arch *a = L->a;
  bool given[OPC_COUNT] = {false};
  for (int i = 0; i < m->n; i++) {
    int c = find_opclass(m->keys[i]->text);
    if (c < 0)
      return unknown_opclass(L, m->keys[i], "energy");
    char what[64];
    snprintf(what, sizeof what, "energy of '%s'", opclass_names[c]);
    if (!get_non_negative(L, m->items[i], "pJ", what, &a->op_pj[c]))
      return false;
    given[c] = true;
  }
  for (int c = 0; c < OPC_COUNT; c++)
    for (int u = 0; u < a->nunits && !given[c]; u++)
      if (a->units[u].rate[c] > 0)
        return fail(L, m->loc,
                    "energy has no entry for '%s', which unit '%s' performs",
                    opclass_names[c], a->units[u].name);
  return true;
}

/* ---- area ---- */

static const char *const area_keys[] = {"node", "functional_units",
                                        "interconnect", "nonlinear", NULL};

/* The classes MARCA's nonlinear unit computes on the PE's FMA. */
static bool nonlinear_class(int k) {
  return k == OPC_DIV || k == OPC_EXP || k == OPC_LOG || k == OPC_SQRT ||
         k == OPC_SILU;
}
static const char *const fu_keys[] = {"name", "ops", "area", NULL};

/* One functional unit: {name, ops: [CLASS, ...], area}. A class belongs
 * to at most one functional unit (OWNER: its index so far, or -1). */
static bool load_fu(Loader *L, const YamlNode *m, FuncUnit *f, int *owner,
                    int index) {
  if (!want(L, m, YN_MAP, "a functional unit"))
    return false;
  if (!check_keys(L, m, fu_keys, "a functional unit"))
    return false;
  const YamlNode *name = need(L, m, "name", "functional unit",
                              "e.g. 'name: fma'");
  if (!name || !get_name(L, name, "functional unit name", &f->name))
    return false;
  f->loc = m->loc;
  char where[300];
  snprintf(where, sizeof where, "functional unit '%s'", f->name);
  const YamlNode *ops =
      need(L, m, "ops", where, "the classes it performs, e.g. [macc, add]");
  if (!ops || !want(L, ops, YN_SEQ, "ops (a list of operation classes)"))
    return false;
  if (ops->n == 0)
    return fail(L, ops->loc, "%s performs no operation class", where);
  for (int i = 0; i < ops->n; i++) {
    const YamlNode *k = ops->items[i];
    if (!want(L, k, YN_SCALAR, "an operation class"))
      return false;
    int c = find_opclass(k->text);
    if (c < 0)
      return unknown_opclass(L, k, where);
    if (owner[c] >= 0)
      return fail(L, k->loc,
                  "operation class '%s' is already performed by functional "
                  "unit '%s'",
                  k->text, L->a->area.fus[owner[c]].name);
    owner[c] = index;
    f->ops[c] = true;
  }
  f->nonlinear = true;
  for (int k = 0; k < OPC_COUNT; k++)
    f->nonlinear = f->nonlinear && (!f->ops[k] || nonlinear_class(k));
  const YamlNode *area =
      need(L, m, "area", where, "for one operation per cycle, e.g. '177 um2'");
  return area && get_positive(L, area, "mm2", "area", &f->area);
}

/* `nonlinear: separate | marca` (default separate): MARCA's reading
 * builds the nonlinear units from the FMA, so the file needs one. */
static bool load_nonlinear(Loader *L, const YamlNode *m, ArchArea *ar) {
  const YamlNode *n = ydoc_get(m, "nonlinear");
  ar->nonlinear = NONLINEAR_SEPARATE;
  if (!n)
    return true;
  static const char *const names[] = {"separate", "marca"};
  _Static_assert(sizeof names / sizeof names[0] == NONLINEAR_COUNT,
                 "a name per reading of the nonlinear hardware");
  int k = ydoc_enum(n, names, NONLINEAR_COUNT, "nonlinear hardware", L->d);
  if (k < 0)
    return false;
  ar->nonlinear = (NonlinearHw)k;
  for (int f = 0; f < ar->nfus; f++)
    if (ar->fus[f].ops[OPC_MACC] || k == NONLINEAR_SEPARATE)
      return true;
  return fail(L, n->loc,
              "nonlinear: marca builds the nonlinear units from the PE's "
              "FMA, but no functional unit performs macc");
}

/* The area section: the node every figure is scaled to, the functional
 * units PEs are built of, the interconnect per PE, the reading of the
 * nonlinear units. */
static bool load_area(Loader *L, const YamlNode *key, const YamlNode *m) {
  if (!want(L, m, YN_MAP, "area (node, functional_units, interconnect)"))
    return false;
  if (!check_keys(L, m, area_keys, "area"))
    return false;
  ArchArea *ar = &L->a->area;
  ar->given = true;
  const YamlNode *node = need_at(L, key->loc, m, "node", "area",
                                 "the technology node every figure is "
                                 "scaled to, e.g. '7 nm'");
  if (!node || !get_positive(L, node, "nm", "node", &ar->node_nm))
    return false;
  const YamlNode *fus = need_at(L, key->loc, m, "functional_units", "area",
                                "a list of {name, ops, area}");
  if (!fus || !want(L, fus, YN_SEQ, "functional_units (a list)"))
    return false;
  ar->fus = arena_alloc(&L->a->arena, ((size_t)fus->n + 1) * sizeof *ar->fus);
  int owner[OPC_COUNT];
  for (int k = 0; k < OPC_COUNT; k++)
    owner[k] = -1;
  for (int i = 0; i < fus->n; i++) {
    if (!load_fu(L, fus->items[i], &ar->fus[i], owner, i))
      return false;
    ar->nfus = i + 1;
  }
  for (int k = 0; k < OPC_COUNT; k++)
    for (int u = 0; u < L->a->nunits && owner[k] < 0; u++)
      if (L->a->units[u].rate[k] > 0)
        return fail(L, fus->loc,
                    "no functional unit performs '%s', which unit '%s' "
                    "performs: its PEs' area would be unknown",
                    opclass_names[k], L->a->units[u].name);
  const YamlNode *ic = ydoc_get(m, "interconnect");
  return (!ic ||
          get_non_negative(L, ic, "mm2", "interconnect", &ar->interconnect)) &&
         load_nonlinear(L, m, ar);
}

/* With an area section, every on-chip level has an area and off-chip
 * memory none (it is not on the die); without one, no level has one. */
static bool check_level_areas(Loader *L, const YamlNode *mem) {
  const Arch *a = L->a;
  for (int i = 0; i < a->nlevels; i++) {
    const MemLevel *lv = &a->levels[i];
    const YamlNode *area = ydoc_get(mem->items[i], "area");
    if (i == 0 && area)
      return fail(L, area->loc,
                  "memory level '%s' is off chip: it has no area on the die "
                  "(give area to on-chip levels only)",
                  lv->name);
    if (!a->area.given && area)
      return fail(L, area->loc,
                  "the area of memory level '%s' needs the architecture's "
                  "area section (its technology node and functional units)",
                  lv->name);
    if (a->area.given && i > 0 && !area)
      return fail(L, lv->loc,
                  "memory level '%s' has no 'area' (e.g. '0.34 mm2/MiB'): "
                  "with an area section, every on-chip level needs one",
                  lv->name);
  }
  return true;
}

/* ---- the whole file ---- */

static const char *const arch_keys[] = {"name",    "clock",   "word",
                                        "memory",  "compute", "energy",
                                        "binding", "area",    "kernel",
                                        NULL};

/* Off-chip memory's `latency` and a unit's `threads` price the waits of
 * a GPU kernel's threads (src/model/gpu.c): they come together, on a
 * file with kernels (`kernel`). */
static bool check_gpu_waits(Loader *L) {
  const Arch *a = L->a;
  const MemLevel *dram = &a->levels[0];
  const Unit *t = NULL;
  for (int i = 0; i < a->nunits; i++)
    if (a->units[i].threads)
      t = &a->units[i];
  if (dram->latency > 0 && (a->kernel_s == 0 || !t))
    return fail(L, dram->loc,
                "memory level '%s': 'latency' is a GPU kernel's: it needs "
                "the architecture's 'kernel' and a unit's 'threads'",
                dram->name);
  if (t && dram->latency == 0)
    return fail(L, t->loc,
                "compute unit '%s': 'threads' needs off-chip memory's "
                "'latency' (the waits it prices)",
                t->name);
  return true;
}

static bool load_word(Loader *L, const YamlNode *n) {
  double w;
  if (!get_positive(L, n, "bytes", "word", &w))
    return false;
  if (w != floor(w) || w > 1024)
    return fail(L, n->loc,
                "word must be a whole number of bytes per element (at most "
                "1024), found '%s'",
                n->text);
  L->a->word_bytes = (int)w;
  return true;
}

/* KEY is the 'architecture' key: missing fields are reported there. */
static bool load_architecture(Loader *L, const YamlNode *key,
                              const YamlNode *m) {
  if (!want(L, m, YN_MAP, "the architecture section"))
    return false;
  if (!check_keys(L, m, arch_keys, "architecture"))
    return false;
  const char *w = "architecture";
  Loc at = key->loc;
  const YamlNode *name =
      need_at(L, at, m, "name", w, "e.g. 'name: mambalaya'");
  if (!name || !get_name(L, name, "architecture name", &L->a->name))
    return false;
  const YamlNode *clock = need_at(L, at, m, "clock", w, "e.g. '1.75 GHz'");
  if (!clock || !get_positive(L, clock, "Hz", "clock", &L->a->clock_hz))
    return false;
  const YamlNode *word =
      need_at(L, at, m, "word", w, "bytes per element, e.g. '2 B'");
  if (!word || !load_word(L, word))
    return false;
  const YamlNode *mem =
      need_at(L, at, m, "memory", w, "a list of levels, outermost first");
  if (!mem || !load_memory(L, mem))
    return false;
  const YamlNode *comp = need_at(L, at, m, "compute", w, "a list of units");
  if (!comp || !load_compute(L, comp))
    return false;
  const YamlNode *energy = need_at(
      L, at, m, "energy", w, "energy per operation, e.g. 'macc: 1.5 pJ'");
  if (!energy || !load_energy(L, energy))
    return false;
  const YamlNode *bind = ydoc_get(m, "binding");
  if (bind && !load_bindings(L, bind))
    return false;
  const YamlNode *kernel = ydoc_get(m, "kernel");
  if (kernel && !get_positive(L, kernel, "s", "kernel", &L->a->kernel_s))
    return false;
  if (!check_gpu_waits(L))
    return false;
  for (int i = 0; i < m->n; i++)
    if (strcmp(m->keys[i]->text, "area") == 0 &&
        !load_area(L, m->keys[i], m->items[i]))
      return false;
  return check_level_areas(L, mem);
}

static bool load_root(Loader *L, const YamlNode *root) {
  if (!root)
    return fail(L, (Loc){1, 1},
                "empty architecture file: expected an 'architecture' "
                "section");
  if (!want(L, root, YN_MAP, "the top level (an 'architecture' section)"))
    return false;
  for (int i = 0; i < root->n; i++)
    if (strcmp(root->keys[i]->text, "architecture") != 0)
      return fail(L, root->keys[i]->loc,
                  "unknown section '%s' (expected architecture)",
                  root->keys[i]->text);
  if (!ydoc_need(root, "architecture", root->loc, "the architecture file",
                 "its one section", L->d))
    return false;
  return load_architecture(L, root->keys[0], root->items[0]);
}

Arch *arch_from_yaml(const char *path, const YamlNode *root, Diag *d) {
  Arch *a = xcalloc(1, sizeof *a);
  a->path = arena_strdup(&a->arena, path);
  a->notes = "";
  Loader L = {a, d};
  if (!load_root(&L, root)) {
    arch_free(a);
    return NULL;
  }
  return a;
}

static Arch *arch_from_doc(const char *path, YamlDoc *doc, Diag *d) {
  Arch *a = arch_from_yaml(path, doc->root, d);
  ydoc_free(doc);
  return a;
}

Arch *arch_parse(const char *path, const char *text, size_t len, Diag *d) {
  if (accelforge_arch_format(text, len))
    return arch_parse_accelforge(path, text, len, NULL, 0, NULL, NULL, d);
  YamlDoc *doc = ydoc_parse(path, text, len, d);
  return doc ? arch_from_doc(path, doc, d) : NULL;
}

INPUT_LOADER(Arch, arch_load, arch_parse)

/* The translation is loaded as a file of ours; where it fails, the
 * error's place is moved back to the line of the AccelForge file that
 * line came from. */
Arch *arch_parse_accelforge(const char *path, const char *text, size_t len,
                            const char *const *vars, int nvars,
                            InputSet *read, Buf *out, Diag *d) {
  Translation t;
  Arch *a = NULL;
  if (accelforge_arch_translate(path, text, len, vars, nvars, read, &t,
                                d)) {
    YamlDoc *doc = ydoc_parse(t.path, t.text.s, t.text.len, d);
    a = doc ? arch_from_doc(path, doc, d) : NULL;
    if (!a)
      tr_remap(&t, &d->loc);
  }
  if (a)
    a->notes = arena_strdup(&a->arena, t.notes.s ? t.notes.s : "");
  if (a && out)
    tr_print(&t, path, "AccelForge architecture", out);
  tr_free(&t);
  return a;
}

void arch_free(Arch *a) {
  if (!a)
    return;
  arena_free(&a->arena);
  free(a);
}
