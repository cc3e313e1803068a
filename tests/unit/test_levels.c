/* test_levels.c — the memory hierarchy by role (docs/architecture.md,
 * "Memory levels"; docs/model.md §4): a three-level GEMM counted by hand,
 * the fusion level named, never inferred from a position, a neutral level
 * changing nothing, every field of every shipped level moving a figure,
 * and the loader's refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/model/model.h"
#include "../../src/net/net.h"
#include "../../src/preset/preset.h"
#include "../../src/workload/workload.h"
#include "test.h"

/* ---- a GEMM on three levels, by hand ---- */

static const char gemm_arch[] =
    "architecture:\n"
    "  name: three\n"
    "  clock: 1 GHz\n"
    "  word: 2 B\n"
    "  memory:\n"
    "    - {name: DRAM, bandwidth: 16 GB/s, read_energy: 10 pJ/B, "
    "write_energy: 10 pJ/B}\n"
    "    - {name: Buffer, capacity: 1 MiB, bandwidth: 4 GB/s, "
    "read_energy: 1 pJ/B, write_energy: 2 pJ/B}\n"
    "    - {name: Registers, capacity: 576 B, read_energy: 0.1 pJ/B, "
    "write_energy: 0.2 pJ/B}\n"
    "  compute:\n"
    "    - {name: mat, role: matrix, shape: [4, 4], pipeline: 1, ops: {macc: "
    "1}}\n"
    "  energy: {macc: 1 pJ, add: 1 pJ, mul: 1 pJ, div: 1 pJ, exp: 1 pJ, "
    "log: 1 pJ, sqrt: 1 pJ, silu: 1 pJ, max: 1 pJ}\n";

static const char gemm_spec[] =
    "shape: {M: 32, K: 32, N: 32}\n"
    "einsum:\n"
    "  declaration: {A: [M, K], B: [K, N], C: [M, N]}\n"
    "  expressions:\n"
    "    - \"C[m,n] = A[m,k] * B[k,n] :: sum(k)\"\n";

typedef struct Case {
  Arch *a;
  Cascade *c;
  Shape *s;
  Pair *pairs;
} Case;

static Case load_case(const char *arch, size_t alen, const char *spec,
                      size_t slen) {
  Case k = {0};
  Diag d = {0};
  k.a = arch_parse("a.yaml", arch, alen, &d);
  if (k.a)
    k.c = spec_parse("s.yaml", spec, slen, &d);
  if (k.c)
    k.s = shape_bind(k.c, NULL, NULL, 0, true, &d);
  if (k.s)
    k.pairs = fusion_classify(k.c, k.s);
  else
    test_fail(__FILE__, __LINE__, "%d:%d %s", d.loc.line, d.loc.col, d.msg);
  return k;
}

static void case_free(Case *k) {
  free(k->pairs);
  shape_free(k->s);
  cascade_free(k->c);
  arch_free(k->a);
}

static Eval *price(const Case *k, const Arch *a, Design des) {
  Diag d = {0};
  ModelOpts o = model_default_opts(des);
  Eval *ev = model_eval(k->c, k->s, a, k->pairs, des, &o, &d);
  if (!ev)
    test_fail(__FILE__, __LINE__, "%s: %s", design_name(des), d.msg);
  return ev;
}

static const TensorUse *find(const Eval *ev, const Cascade *c, int l,
                             const char *name) {
  const TensorUse *t;
  int n = eval_tensors(ev, 0, l, &t);
  for (int j = 0; j < n; j++)
    if (strcmp(c->tensors[t[j].tensor].name, name) == 0)
      return &t[j];
  return NULL;
}

static void check_tensor(const Eval *ev, const Cascade *c, int l,
                         const char *name, double read, double write) {
  const TensorUse *t = find(ev, c, l, name);
  CHECK(t != NULL);
  if (!t)
    return;
  CHECK_NEAR(t->read, read, 0);
  CHECK_NEAR(t->write, write, 0);
}

/* C[32,32] = A[32,32] B[32,32], 2-byte words.
 *   DRAM <-> Buffer (1 MiB: all fits): A, B read once (2048 B each), C
 *     written once (2048 B).
 *   Buffer <-> Registers (576 B = 288 elements = 16 x 16 + 2 x 16):
 *     16 x 16 tiles of C, k innermost; A fetched once per column tile of
 *     C (N/16 = 2), B once per row tile (M/16 = 2): 2 x 2048 B each; C
 *     written once (2048 B), no partial sums.
 *   Registers <-> PEs: 32768 points read A and B (65536 B each), update C
 *     (65536 B written; 32768 - 1024 partial sums read back: 63488 B).
 * A level reads what it sends across either boundary, writes what it
 * receives:
 *   Buffer:    A r 4096 w 2048; B r 4096 w 2048; C r 2048 w 2048
 *   Registers: A r 65536 w 4096; B the same; C r 2048 + 63488, w 65536.
 * Energy: DRAM 6144 x 10; Buffer 10240 x 1 + 6144 x 2; Registers
 * 196608 x 0.1 + 73728 x 0.2. Time: DRAM 6144 B / 16 B per cycle = 384;
 * Buffer 16384 B / 4 = 4096 cycles, above compute (32768 MACCs on 16
 * PEs: 2048): the Buffer bounds the Einsum. */
TEST(levels_three_level_gemm_by_hand) {
  Case k = load_case(gemm_arch, strlen(gemm_arch), gemm_spec,
                     strlen(gemm_spec));
  if (!k.s)
    return;
  Eval *ev = price(&k, k.a, DES_UNFUSED);
  if (ev) {
    check_tensor(ev, k.c, 0, "A", 2048, 0);
    check_tensor(ev, k.c, 0, "B", 2048, 0);
    check_tensor(ev, k.c, 0, "C", 0, 2048);
    check_tensor(ev, k.c, 1, "A", 4096, 2048);
    check_tensor(ev, k.c, 1, "B", 4096, 2048);
    check_tensor(ev, k.c, 1, "C", 2048, 2048);
    check_tensor(ev, k.c, 2, "A", 65536, 4096);
    check_tensor(ev, k.c, 2, "B", 65536, 4096);
    check_tensor(ev, k.c, 2, "C", 65536, 65536);
    const LevelUse *u = ev->use;
    CHECK_NEAR(u[0].energy_pj, 61440, 1e-9);
    CHECK_NEAR(u[1].energy_pj, 10240 + 12288, 1e-9);
    CHECK_NEAR(u[2].energy_pj, 19660.8 + 14745.6, 1e-6);
    CHECK_NEAR(u[0].cycles, 384, 1e-9);
    CHECK_NEAR(u[1].cycles, 4096, 1e-9);
    CHECK_NEAR(u[2].cycles, 0, 0); /* unlimited */
    CHECK_NEAR(ev->e[0].compute_cycles, 2048, 0);
    CHECK_INT(ev->e[0].bound, 1);
    CHECK_NEAR(ev->cycles, 4096 + 1, 1e-9); /* + the pipeline */
    CHECK_NEAR(ev->energy_pj, 61440 + 22528 + 34406.4 + 32768, 1e-6);
  }
  eval_free(ev);
  case_free(&k);
}

/* Separate read and write bandwidths: the Buffer reads 10240 B at 2 B per
 * cycle (5120 cycles) and writes 6144 B at 8 B per cycle (768): its reads
 * bound the GEMM, above the shared 4 B per cycle (4096). */
TEST(levels_read_and_write_bandwidth) {
  Buf arch = {0};
  const char *at = strstr(gemm_arch, "bandwidth: 4 GB/s,");
  buf_printf(&arch, "%.*sbandwidth: 4 GB/s, read_bandwidth: 2 GB/s, "
                    "write_bandwidth: 8 GB/s,%s",
             (int)(at - gemm_arch), gemm_arch,
             at + strlen("bandwidth: 4 GB/s,"));
  Case k = load_case(arch.s, arch.len, gemm_spec, strlen(gemm_spec));
  buf_free(&arch);
  if (!k.s)
    return;
  Eval *ev = price(&k, k.a, DES_UNFUSED);
  if (ev) {
    CHECK_NEAR(ev->use[1].cycles, 5120, 1e-9);
    CHECK_INT(ev->e[0].bound, 1);
    CHECK_NEAR(ev->cycles, 5120 + 1, 1e-9);
  }
  eval_free(ev);
  case_free(&k);
}

/* ---- levels by role, on the paper's architecture ---- */

static bool contains(const char *s, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(s + i, needle, n) == 0)
      return true;
  return false;
}

static char *read_text(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = malloc(1 << 16);
  *n = fread(buf, 1, (1 << 16) - 1, f);
  buf[*n] = 0;
  fclose(f);
  return buf;
}

/* archs/mambalaya.yaml with TEXT inserted after the line holding AFTER
 * (and, with DROP, the line holding DROP removed). */
static Arch *edited(const char *after, const char *text, const char *drop,
                    Diag *d) {
  size_t n;
  char *src = read_text("archs/mambalaya.yaml", &n);
  if (!src)
    return NULL;
  Buf b = {0};
  for (char *line = src; *line;) {
    char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
    bool skip = drop && contains(line, len, drop);
    if (!skip)
      buf_printf(&b, "%.*s", (int)len, line);
    if (contains(line, len, after))
      buf_printf(&b, "%s", text);
    line += len;
  }
  Arch *a = arch_parse("edited.yaml", b.s, b.len, d);
  buf_free(&b);
  free(src);
  return a;
}

static const char after_dram[] = "write_energy: 3.9 pJ/bit";

typedef struct Mamba {
  Arch *a;
  Cascade *c;
  Shape *s;
  Pair *pairs;
} Mamba;

static Mamba mamba1(void) {
  Mamba m = {0};
  Diag d = {0};
  m.a = arch_load("archs/mambalaya.yaml", &d);
  m.c = spec_load("specs/mamba1.yaml", &d);
  if (m.a && m.c)
    m.s = shape_bind(m.c, preset_sizes("mamba-370m"), NULL, 0, true, &d);
  if (m.s)
    m.pairs = fusion_classify(m.c, m.s);
  else
    test_fail(__FILE__, __LINE__, "mamba1: %s", d.msg);
  return m;
}

static void mamba_free(Mamba *m) {
  free(m->pairs);
  shape_free(m->s);
  cascade_free(m->c);
  arch_free(m->a);
}

static Eval *on(const Mamba *m, const Arch *a, Design des) {
  Diag d = {0};
  ModelOpts o = model_default_opts(des);
  Eval *ev = model_eval(m->c, m->s, a, m->pairs, des, &o, &d);
  if (!ev)
    test_fail(__FILE__, __LINE__, "%s: %s", design_name(des), d.msg);
  return ev;
}

/* A level with unlimited bandwidth and zero energy between off-chip
 * memory and the fusion level, holding more than the fusion level,
 * changes no figure: it passes the fusion level's traffic through. (Inside
 * the fusion level, such a level would hold each Einsum's operands whole
 * and spare the fusion level its refetches: not neutral, by design.) */
TEST(levels_neutral_staging_level_changes_nothing) {
  Mamba m = mamba1();
  Diag d = {0};
  Arch *b = edited(after_dram,
                   "    - {name: Pass, capacity: 1 TiB, read_energy: 0 pJ/B, "
                   "write_energy: 0 pJ/B, area: 0 mm2/MiB}\n",
                   NULL, &d);
  CHECK(b != NULL);
  if (m.s && b) {
    CHECK_INT(b->fusion_level, 2);
    CHECK_INT(arch_level_role(b, 1), LEVEL_STAGING);
    const Design ds[] = {DES_UNFUSED, DES_FULL, DES_IDEAL};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
      Eval *x = on(&m, m.a, ds[i]), *y = on(&m, b, ds[i]);
      if (x && y) {
        CHECK_NEAR(y->cycles, x->cycles, 0);
        CHECK_NEAR(y->energy_pj, x->energy_pj, 1e-9 * x->energy_pj);
        CHECK_NEAR(y->read + y->write, x->read + x->write, 0);
        CHECK_NEAR(y->level[1].read, x->read + x->write, 0); /* passed */
        CHECK_NEAR(y->level[2].energy_pj, x->level[1].energy_pj,
                   1e-9 * x->level[1].energy_pj);
      }
      eval_free(x);
      eval_free(y);
    }
  }
  arch_free(b);
  mamba_free(&m);
}

/* A 512 MiB L2 inserted above the GlobalBuffer does not take its place:
 * the file names the fusion level. Tiles and DRAM traffic are unchanged;
 * the L2's accesses add their energy. */
TEST(levels_inserted_l2_keeps_the_fusion_buffer) {
  Mamba m = mamba1();
  Diag d = {0};
  Arch *b = edited(after_dram,
                   "    - {name: L2, capacity: 512 MiB, read_energy: 1 pJ/B, "
                   "write_energy: 1 pJ/B, area: 0.32 mm2/MiB}\n",
                   NULL, &d);
  CHECK(b != NULL);
  if (m.s && b) {
    CHECK_STR(b->levels[b->fusion_level].name, "GlobalBuffer");
    Eval *x = on(&m, m.a, DES_FULL), *y = on(&m, b, DES_FULL);
    if (x && y) {
      CHECK_NEAR(y->cycles, x->cycles, 0);
      CHECK_NEAR(y->read + y->write, x->read + x->write, 0);
      CHECK_STR(y->e[0].mapping, x->e[0].mapping);
      CHECK_NEAR(y->g[0].tile[0], x->g[0].tile[0], 0);
      CHECK_NEAR(y->level[1].energy_pj, 2 * (x->read + x->write), 1e-6);
      CHECK_NEAR(y->energy_pj - x->energy_pj, y->level[1].energy_pj,
                 1e-9 * x->energy_pj);
    }
    eval_free(x);
    eval_free(y);
  }
  arch_free(b);
  /* Without the GlobalBuffer's flag, four levels are ambiguous: an
   * error naming the file and the memory list, never a guess. */
  b = edited(after_dram,
             "    - {name: L2, capacity: 512 MiB, read_energy: 1 pJ/B, "
             "write_energy: 1 pJ/B, area: 0.32 mm2/MiB}\n",
             "fusion: true", &d);
  CHECK(b == NULL);
  CHECK(strstr(d.msg, "fusion: true") != NULL);
  CHECK_STR(d.file, "edited.yaml");
  CHECK_INT(d.loc.line, 18); /* the list's first level */
  arch_free(b);
  mamba_free(&m);
}

/* The GlobalBuffer's bandwidth, given, bounds the Einsums that move the
 * most through it. */
TEST(levels_buffer_bandwidth_moves_latency) {
  Mamba m = mamba1();
  Diag d = {0};
  Arch *b = edited("fusion: true", "      bandwidth: 1 TB/s\n", NULL, &d);
  CHECK(b != NULL);
  if (m.s && b) {
    Eval *x = on(&m, m.a, DES_FULL), *y = on(&m, b, DES_FULL);
    if (x && y) {
      CHECK(y->cycles > 1.5 * x->cycles);
      int bound = 0;
      for (int i = 0; i < y->n; i++)
        bound += y->e[i].bound == 1;
      CHECK(bound > 0);
      CHECK_NEAR(y->energy_pj, x->energy_pj, 1e-9 * x->energy_pj);
    }
    eval_free(x);
    eval_free(y);
  }
  arch_free(b);
  mamba_free(&m);
}

/* ---- every field of every shipped level moves a figure ---- */

typedef struct Figures {
  double cycles, energy, area;
  double available; /* a whole model's memory check: the bytes it has */
  double waits;     /* a GPU kernel's waits on off-chip memory (gpu.c) */
  double unfused;   /* the cycles unfused: the groups of only elementwise
                       Einsums, which a vector unit runs */
} Figures;

/* A whole model's available off-chip bytes on A (src/net/): the figure
 * the off-chip level's capacity moves (docs/models.md). */
static double model_available(const Arch *a) {
  Net *net = xmalloc(sizeof *net);
  Diag d = {0};
  double avail = NAN;
  if (net_config_load("tests/configs/tiny/hybrid.json", net, &d)) {
    NetOpts o = net_default_opts();
    o.prompt = 4;
    o.generate = 1;
    NetRun *r = xmalloc(sizeof *r);
    if (net_run(net, a, &o, r, NULL, &d))
      avail = r->capacity_bytes;
    free(r);
  }
  free(net);
  return avail;
}

static Figures figures(const Mamba *m, const Arch *a) {
  /* 10^6 blocks of 256 threads, each waiting on two accesses in turn:
   * waves of sms x threads / 256 blocks (validate's kernels). */
  const GpuKernel k = {1e6, 256, 0, 2};
  Figures f = {NAN, NAN, arch_area(a), model_available(a),
               gpu_wait_seconds(a, &k), NAN};
  Eval *ev = on(m, a, DES_FULL);
  if (ev) {
    f.cycles = ev->cycles;
    f.energy = ev->energy_pj;
  }
  eval_free(ev);
  ev = on(m, a, DES_UNFUSED);
  f.unfused = ev ? ev->cycles : NAN;
  eval_free(ev);
  return f;
}

static bool moved(Figures x, Figures y) {
  return fabs(x.cycles - y.cycles) > 1e-9 * x.cycles ||
         fabs(x.energy - y.energy) > 1e-9 * x.energy ||
         (isfinite(x.area) && fabs(x.area - y.area) > 1e-9 * x.area) ||
         (isfinite(x.available) && x.available != y.available) ||
         x.waits != y.waits ||
         fabs(x.unfused - y.unfused) > 1e-9 * x.unfused;
}

/* Change field F of level L of A (MEM_LEVEL_FIELDS): a quantity to a
 * 64th, a count to half; false when the level does not give it (a value
 * that is infinite, zero, or a count of 1). Not changed here: the
 * efficiency, which the loader has applied to the bandwidths already
 * (test_arch checks the product), and the fusion flag, which the loader
 * turns into the fusion level (test_fusion_level). */
static bool change(Arch *a, int l, const ArchField *f) {
  MemLevel *lv = &a->levels[l];
  double v = arch_field_value(lv, f);
  if (f->kind == LF_SHARE || f->kind == LF_FLAG || !isfinite(v) || v == 0 ||
      (f->kind == LF_COUNT && v < 2))
    return false;
  arch_field_set(lv, f, f->kind == LF_COUNT ? v / 2 : v / 64);
  return true;
}

/* ---- every field of every shipped level and unit moves a figure ---- */

/* Change field F of unit U of A (COMPUTE_UNIT_FIELDS) when the file gives
 * it (a value other than the default): a share to half, a count to a
 * thousand times. A count halved could stop dividing (sms, the PEs) or
 * reach 0; a pipeline only a few cycles deeper hides under a memory-bound
 * Einsum's transfer, a thousand times deeper does not. */
static bool change_unit(Arch *a, int u, const ArchField *f) {
  Unit *un = &a->units[u];
  double v = arch_field_value(un, f);
  if (v == f->dflt)
    return false;
  arch_field_set(un, f, f->kind == LF_SHARE ? v / 2 : v * 1000);
  return true;
}

/* How many fields of the file at PATH its levels (or, with UNITS, its
 * units) give, each changed alone (change, change_unit) and checked to
 * move a figure of M. */
static int fields_tried(const Mamba *m, const char *path, bool units) {
  Diag d = {0};
  Arch *a = arch_load(path, &d);
  CHECK(a != NULL);
  if (!a)
    return 0;
  const ArchField *fields = units ? compute_unit_fields : mem_level_fields;
  int nfields = units ? COMPUTE_UNIT_NFIELDS : MEM_LEVEL_NFIELDS;
  int nparts = units ? a->nunits : a->nlevels;
  Figures base = figures(m, a);
  int tried = 0;
  for (int p = 0; p < nparts; p++)
    for (int k = 0; k < nfields; k++) {
      Arch *b = arch_load(path, &d);
      if (b && (units ? change_unit(b, p, &fields[k])
                      : change(b, p, &fields[k]))) {
        tried++;
        if (!moved(base, figures(m, b)))
          test_fail(__FILE__, __LINE__, "%s: %s %s, field %s moves nothing",
                    path, units ? "unit" : "level",
                    units ? a->units[p].name : a->levels[p].name,
                    fields[k].key);
      }
      arch_free(b);
    }
  arch_free(a);
  return tried;
}

TEST(levels_every_shipped_field_moves_a_figure) {
  Mamba m = mamba1();
  if (!m.s)
    return;
  const char *const archs[] = {"archs/mambalaya.yaml", "archs/h100.yaml",
                               "archs/eyeriss.yaml"};
  int tried = 0;
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
    tried += fields_tried(&m, archs[i], false);
  CHECK(tried >= 25);
  mamba_free(&m);
}

TEST(units_every_shipped_field_moves_a_figure) {
  Mamba m = mamba1();
  if (!m.s)
    return;
  const char *const archs[] = {"archs/mambalaya.yaml", "archs/h100.yaml",
                               "archs/eyeriss.yaml", "archs/a100.yaml",
                               "archs/h100-sxm.yaml"};
  int tried = 0;
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
    tried += fields_tried(&m, archs[i], true);
  /* mambalaya's three pipelines, eyeriss's one, and the tensor unit's
   * efficiency, sms and threads on a100 and h100-sxm (h100 gives none). */
  CHECK_INT(tried, 10);
  mamba_free(&m);
}

/* ---- the loader's refusals ---- */

static void refused(const char *memory, int line, const char *needle) {
  Buf b = {0};
  buf_printf(&b,
             "architecture:\n"
             "  name: t\n"
             "  clock: 1 GHz\n"
             "  word: 2 B\n"
             "  memory:\n%s"
             "  compute:\n"
             "    - {name: m, role: matrix, shape: [2, 2], ops: {macc: 1}}\n"
             "  energy: {macc: 1 pJ}\n",
             memory);
  Diag d = {0};
  Arch *a = arch_parse("bad.yaml", b.s, b.len, &d);
  CHECK(a == NULL);
  if (!a) {
    CHECK_STR(d.file, "bad.yaml");
    CHECK_INT(d.loc.line, line);
    if (!strstr(d.msg, needle))
      test_fail(__FILE__, __LINE__, "'%s' not in: %s", needle, d.msg);
  }
  arch_free(a);
  buf_free(&b);
}

#define DRAM_LINE                                                          \
  "    - {name: D, bandwidth: 1 GB/s, read_energy: 1 pJ/B, write_energy: " \
  "1 pJ/B}\n"
#define LEVEL(name, extra)                                                  \
  "    - {name: " name ", capacity: 1 MiB, read_energy: 1 pJ/B, "           \
  "write_energy: 1 pJ/B" extra "}\n"

TEST(levels_loader_refusals) {
  refused("    - {name: D, bandwidth: 1 GB/s, read_energy: 1 pJ/B, "
          "write_energy: 1 pJ/B, fusion: true}\n" LEVEL("B", ""),
          6, "off chip");
  refused(DRAM_LINE LEVEL("B", ", fusion: true") LEVEL("C", ", fusion: true"),
          8, "second fusion level");
  refused(DRAM_LINE LEVEL("B", ", fusion: yes"), 7, "false or true");
  refused(DRAM_LINE LEVEL("B", ", instances: 4"), 7, "inside the fusion");
  refused(DRAM_LINE
          "    - {name: L2, capacity: 64 KiB, read_energy: 1 pJ/B, "
          "write_energy: 1 pJ/B}\n" LEVEL("B", ", fusion: true"),
          7, "at least as much");
  refused(DRAM_LINE LEVEL("B", "") LEVEL("C", "") LEVEL("R", ""), 6,
          "fusion: true");
  refused(DRAM_LINE LEVEL("B", ", colour: red"), 7, "colour");
}

/* Three levels without a flag: the fusion level is the one on-chip level
 * above the registers; instances inside it are per instance. */
TEST(levels_default_fusion_and_instances) {
  Diag d = {0};
  const char text[] =
      "architecture:\n"
      "  name: t\n"
      "  clock: 1 GHz\n"
      "  word: 2 B\n"
      "  memory:\n" DRAM_LINE LEVEL("B", "")
      "    - {name: S, capacity: 512 B, instances: 8, read_energy: 1 pJ/B, "
      "write_energy: 1 pJ/B}\n"
      "  compute:\n"
      "    - {name: m, role: matrix, shape: [2, 4], ops: {macc: 1}}\n"
      "  energy: {macc: 1 pJ}\n";
  Arch *a = arch_parse("t.yaml", text, strlen(text), &d);
  CHECK(a != NULL);
  if (a) {
    CHECK_INT(a->fusion_level, 1);
    CHECK(a->levels[1].fusion);
    CHECK_INT(a->levels[2].instances, 8);
    CHECK_STR(level_role_name(arch_level_role(a, 2)), "registers");
  }
  arch_free(a);
}
