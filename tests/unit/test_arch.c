/* test_arch.c — quantities, the shipped architectures, and the loader's
 * diagnostics for malformed architecture files. */
#include "test.h"

#include <stdlib.h>

#include "../../src/arch/arch.h"

/* ---- parse_quantity ---- */

typedef struct QCase {
  const char *text, *dim;
  double value;
} QCase;

TEST(arch_quantity_units) {
  static const QCase ok[] = {
      {"32 MiB", "bytes", 32.0 * 1048576},
      {"32MiB", "bytes", 32.0 * 1048576},
      {"4.25 MiB", "bytes", 4.25 * 1048576},
      {"2 B", "bytes", 2},
      {"1 kB", "bytes", 1e3},
      {"1.5 MB", "bytes", 1.5e6},
      {"50 GB", "bytes", 50e9},
      {"1 KiB", "bytes", 1024},
      {"1 GiB", "bytes", 1073741824.0},
      {"1e3 B", "bytes", 1e3},
      {"2039 GB/s", "bytes/s", 2039e9},
      {"2039GB/s", "bytes/s", 2039e9},
      {"1 B/s", "bytes/s", 1},
      {"3 kB/s", "bytes/s", 3e3},
      {"3 MB/s", "bytes/s", 3e6},
      {"1.5 TB/s", "bytes/s", 1.5e12},
      {"1 KiB/s", "bytes/s", 1024},
      {"1 MiB/s", "bytes/s", 1048576},
      {"1 GiB/s", "bytes/s", 1073741824.0},
      {"1.75 GHz", "Hz", 1.75e9},
      {"100 MHz", "Hz", 1e8},
      {"2 kHz", "Hz", 2e3},
      {"50 Hz", "Hz", 50},
      {"1.25 pJ/B", "pJ/B", 1.25},
      {"3.9 pJ/bit", "pJ/B", 31.2},
      {"1 nJ/B", "pJ/B", 1e3},
      {"500 fJ/B", "pJ/B", 0.5},
      {"0.4 pJ", "pJ", 0.4},
      {"0.4pJ", "pJ", 0.4},
      {"1 nJ", "pJ", 1e3},
      {"2 fJ", "pJ", 2e-3},
      {"-1 pJ", "pJ", -1}, /* sign accepted: the loader reports "negative" */
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    double v = -12345;
    if (!parse_quantity(ok[i].text, ok[i].dim, &v))
      test_fail(__FILE__, __LINE__, "parse_quantity(\"%s\", \"%s\") failed",
                ok[i].text, ok[i].dim);
    else
      CHECK_NEAR(v, ok[i].value, 1e-12);
  }
}

TEST(arch_quantity_rejects) {
  static const char *const bad[][2] = {
      {"32", "bytes"},          /* no unit */
      {"32 GHz", "bytes"},      /* wrong dimension */
      {"2039 GB", "bytes/s"},   /* a size, not a bandwidth */
      {"1.75 GB/s", "Hz"},      /* a bandwidth, not a frequency */
      {"0.4 pJ", "pJ/B"},       /* per op, not per byte */
      {"1 pJ/B", "pJ"},         /* per byte, not per op */
      {"MiB", "bytes"},         /* no number */
      {"", "bytes"},            /* nothing */
      {"32 mib", "bytes"},      /* units are case-sensitive */
      {"32 KB", "bytes"},       /* ambiguous: kB or KiB */
      {"32 Gb/s", "bytes/s"},   /* bits, not bytes */
      {"inf GB", "bytes"},      /* not finite */
      {"nan B", "bytes"},
      {"0x10 B", "bytes"},      /* no hex */
      {"1e999 B", "bytes"},     /* overflows */
      {"32 MiB extra", "bytes"},
      {"3..5 B", "bytes"},
      {"1e B", "bytes"},
      {"32 MiB", "furlongs"},   /* no such dimension */
      {"32 MiB", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    double v = 0;
    if (parse_quantity(bad[i][0], bad[i][1], &v))
      test_fail(__FILE__, __LINE__,
                "parse_quantity(\"%s\", \"%s\") accepted it as %g", bad[i][0],
                bad[i][1] ? bad[i][1] : "(null)", v);
  }
  double v = 0;
  CHECK(!parse_quantity(NULL, "bytes", &v));
}

TEST(arch_names) {
  CHECK_STR(opclass_name(OPC_MACC), "macc");
  CHECK_STR(opclass_name(OPC_SILU), "silu");
  CHECK_STR(opclass_name(OPC_MAX), "max");
  CHECK_STR(opclass_name(OPC_COUNT), "?");
  CHECK_STR(role_name(ROLE_MATRIX), "matrix");
  CHECK_STR(role_name(ROLE_VECTOR), "vector");
  CHECK_STR(role_name(ROLE_FEEDER), "feeder");
  CHECK_STR(role_name(ROLE_COUNT), "?");
}

/* ---- the shipped architectures ---- */

static Arch *load_shipped(const char *path) {
  Diag d = {0};
  Arch *a = arch_load(path, &d);
  if (!a)
    test_fail(__FILE__, __LINE__, "%s:%d:%d: %s", d.file, d.loc.line,
              d.loc.col, d.msg);
  return a;
}

TEST(arch_mambalaya) {
  Arch *a = load_shipped("archs/mambalaya.yaml");
  if (!a)
    return;
  CHECK_STR(a->name, "mambalaya");
  CHECK_NEAR(a->clock_hz, 1.75e9, 0);
  CHECK_INT(a->word_bytes, 2);
  CHECK_INT(a->nlevels, 3);
  CHECK_STR(a->levels[0].name, "DRAM");
  CHECK(isinf(a->levels[0].capacity));
  CHECK_NEAR(a->levels[0].bandwidth, 2039e9, 0);
  CHECK_NEAR(a->levels[0].read_pj, 3.9 * 8, 1e-12);
  CHECK_STR(a->levels[1].name, "GlobalBuffer");
  CHECK_NEAR(a->levels[1].capacity, 32.0 * (1 << 20), 0);
  CHECK(isinf(a->levels[1].bandwidth));
  CHECK_NEAR(a->levels[2].capacity, 4.25 * (1 << 20), 0);

  CHECK_INT(a->nunits, 3);
  int m = arch_unit(a, ROLE_MATRIX), v = arch_unit(a, ROLE_VECTOR),
      f = arch_unit(a, ROLE_FEEDER);
  CHECK_INT(m, 0);
  CHECK_INT(v, 1);
  CHECK_INT(f, 2);
  if (m < 0 || v < 0 || f < 0) {
    arch_free(a);
    return;
  }
  CHECK_INT(a->units[m].pes, 65536);
  CHECK_INT(a->units[m].rows, 256);
  CHECK_INT(a->units[m].cols, 256);
  CHECK_INT(a->units[m].mode_of, -1);
  CHECK_INT(a->units[m].pipeline, 6);
  CHECK_INT(a->units[v].pes, 8192);
  CHECK_INT(a->units[v].rows, 8192);
  CHECK_INT(a->units[v].cols, 1);
  CHECK_INT(a->units[v].mode_of, m);
  CHECK_INT(a->units[f].pes, 256);
  CHECK_INT(a->units[f].mode_of, -1);
  for (int u = 0; u < 3; u++)
    for (int k = 0; k < OPC_COUNT; k++)
      CHECK_NEAR(a->units[u].rate[k], 1, 0);
  CHECK_NEAR(arch_peak(a, m, OPC_MACC), 65536 * 1.75e9, 0);
  CHECK_NEAR(arch_peak(a, v, OPC_EXP), 8192 * 1.75e9, 0);
  CHECK_NEAR(arch_peak(a, f, OPC_SILU), 256 * 1.75e9, 0);
  CHECK_NEAR(arch_peak(a, 99, OPC_MACC), 0, 0);
  CHECK_NEAR(a->op_pj[OPC_MACC], 1.5, 1e-12);
  CHECK_NEAR(a->op_pj[OPC_ADD], 0.4, 1e-12);
  CHECK_NEAR(a->op_pj[OPC_MUL], 1.1, 1e-12);
  arch_free(a);
}

TEST(arch_h100) {
  Arch *a = load_shipped("archs/h100.yaml");
  if (!a)
    return;
  CHECK_STR(a->name, "h100");
  CHECK_NEAR(a->clock_hz, 1.75e9, 0);
  CHECK_INT(a->word_bytes, 2);
  CHECK_NEAR(a->levels[0].bandwidth, 2039e9, 0);
  CHECK_NEAR(a->levels[1].capacity, 50.0 * (1 << 20), 0);
  CHECK_NEAR(a->levels[1].bandwidth, 5.5e12, 0);
  CHECK_INT(a->fusion_level, 1); /* the L2, as Table II's model */
  CHECK_STR(a->levels[2].name, "SharedMemory");
  CHECK_NEAR(a->levels[2].capacity, 228.0 * 1024, 0);
  CHECK_INT(a->levels[2].instances, 114);
  CHECK_NEAR(a->levels[2].bandwidth, 224.6e9, 0);
  CHECK_INT(arch_level_role(a, 2), LEVEL_INNER);
  /* Table II's 28.5 MB of registers: 114 SMs x 256 KiB. */
  CHECK_NEAR(a->levels[3].instances * a->levels[3].capacity,
             28.5 * (1 << 20), 0);
  CHECK_INT(arch_level_role(a, 3), LEVEL_REGISTERS);
  CHECK_INT(arch_unit(a, ROLE_FEEDER), -1);
  int m = arch_unit(a, ROLE_MATRIX), v = arch_unit(a, ROLE_VECTOR);
  CHECK(m >= 0 && v >= 0);
  if (m < 0 || v < 0) {
    arch_free(a);
    return;
  }
  CHECK_INT(a->units[m].pes, 456 * 512);
  /* 456 tensor cores x 512 FMA/clk x 1.75 GHz = 817.2 dense FP16 TFLOP/s */
  CHECK_NEAR(2 * arch_peak(a, m, OPC_MACC), 817.152e12, 1e-12);
  CHECK_NEAR(arch_peak(a, m, OPC_EXP), 0, 0);
  CHECK_INT(a->units[v].pes, 14592);
  CHECK_NEAR(arch_peak(a, v, OPC_ADD), 14592 * 2 * 1.75e9, 0);
  CHECK_NEAR(arch_peak(a, v, OPC_EXP), 14592 * 0.125 * 1.75e9, 0);
  arch_free(a);
}

/* ---- inheritance of a mode ---- */

static const char base[] =
    "architecture:\n"                   /* 1 */
    "  name: t\n"                       /* 2 */
    "  clock: 1 GHz\n"                  /* 3 */
    "  word: 2 B\n"                     /* 4 */
    "  memory:\n"                       /* 5 */
    "    - name: DRAM\n"                /* 6 */
    "      bandwidth: 1 GB/s\n"         /* 7 */
    "      read_energy: 1 pJ/B\n"       /* 8 */
    "      write_energy: 1 pJ/B\n"      /* 9 */
    "    - name: Buf\n"                 /* 10 */
    "      capacity: 1 MiB\n"           /* 11 */
    "      read_energy: 1 pJ/B\n"       /* 12 */
    "      write_energy: 1 pJ/B\n"      /* 13 */
    "  compute:\n"                      /* 14 */
    "    - name: mx\n"                  /* 15 */
    "      role: matrix\n"              /* 16 */
    "      shape: [4, 4]\n"             /* 17 */
    "      ops: {macc: 1, add: 1}\n"    /* 18 */
    "      pipeline: 3\n"               /* 19 */
    "    - name: vx\n"                  /* 20 */
    "      role: vector\n"              /* 21 */
    "      mode_of: mx\n"               /* 22 */
    "      pes: 8\n"                    /* 23 */
    "  energy: {macc: 1 pJ, add: 1 pJ}\n"; /* 24 */

TEST(arch_mode_inherits) {
  Diag d = {0};
  Arch *a = arch_parse("t.yaml", base, strlen(base), &d);
  CHECK(a != NULL);
  if (!a) {
    fprintf(stderr, "%s:%d:%d: %s\n", d.file, d.loc.line, d.loc.col, d.msg);
    return;
  }
  CHECK_INT(a->nunits, 2);
  CHECK_INT(a->units[1].mode_of, 0);
  CHECK_INT(a->units[1].pipeline, 3);
  CHECK_NEAR(a->units[1].rate[OPC_MACC], 1, 0);
  CHECK_NEAR(a->units[1].rate[OPC_ADD], 1, 0);
  CHECK_NEAR(a->units[1].rate[OPC_EXP], 0, 0);
  CHECK_INT(a->units[0].rows, 4);
  CHECK_INT(a->units[1].rows, 8);
  CHECK_INT(a->units[1].cols, 1);
  CHECK(isinf(a->levels[1].bandwidth));
  CHECK_STR(a->path, "t.yaml");
  CHECK_STR(a->units[1].name, "vx");
  CHECK_INT(a->units[1].loc.line, 20);
  CHECK_INT(a->units[1].loc.col, 7);
  arch_free(a);
}

/* A mode listed before its array; an outermost level with a capacity. */
TEST(arch_mode_forward) {
  static const char text[] =
      "architecture:\n"
      "  name: fwd\n"
      "  clock: 500MHz\n"
      "  word: 4B\n"
      "  memory:\n"
      "    - {name: D, capacity: 8 GiB, bandwidth: 1 TB/s, read_energy: "
      "3.9 pJ/bit, write_energy: 0 pJ/B}\n"
      "    - {name: G, capacity: 1 kB, read_energy: 1 pJ/B, write_energy: "
      "1 pJ/B}\n"
      "  compute:\n"
      "    - {name: m1, role: vector, mode_of: p, pes: 4, pipeline: 2}\n"
      "    - {name: p, role: feeder, pes: 8, ops: {exp: 0.5}}\n"
      "  energy: {exp: 0 pJ, macc: 2 pJ}\n";
  Diag d = {0};
  Arch *a = arch_parse("fwd.yaml", text, strlen(text), &d);
  CHECK(a != NULL);
  if (!a) {
    fprintf(stderr, "%s:%d:%d: %s\n", d.file, d.loc.line, d.loc.col, d.msg);
    return;
  }
  CHECK_NEAR(a->clock_hz, 5e8, 0);
  CHECK_INT(a->word_bytes, 4);
  CHECK_NEAR(a->levels[0].capacity, 8.0 * (1 << 30), 0);
  CHECK_NEAR(a->levels[0].bandwidth, 1e12, 0);
  CHECK_NEAR(a->levels[0].write_pj, 0, 0);
  CHECK_NEAR(a->levels[1].capacity, 1000, 0);
  CHECK_INT(a->units[0].mode_of, 1);
  CHECK_INT(a->units[0].pipeline, 2);
  CHECK_NEAR(a->units[0].rate[OPC_EXP], 0.5, 0);
  CHECK_NEAR(arch_peak(a, 0, OPC_EXP), 4 * 0.5 * 5e8, 0);
  CHECK_INT(arch_unit(a, ROLE_MATRIX), -1);
  CHECK_INT(arch_unit(a, ROLE_FEEDER), 1);
  CHECK_NEAR(a->op_pj[OPC_MACC], 2, 0);
  arch_free(a);
}

/* The area model: PEs by their op set (each functional unit once per PE,
 * times the fastest rate among its classes), modes free, on-chip levels
 * by capacity and ports, off-chip memory none. */
TEST(arch_area_model) {
  static const char text[] =
      "architecture:\n"
      "  name: t\n  clock: 1 GHz\n  word: 2 B\n"
      "  memory:\n"
      "    - {name: DRAM, bandwidth: 1 GB/s, read_energy: 1 pJ/B, "
      "write_energy: 1 pJ/B}\n"
      "    - {name: Buf, capacity: 2 MiB, read_energy: 1 pJ/B, write_energy: "
      "1 pJ/B, area: 0.5 mm2/MiB}\n"
      "    - {name: Reg, capacity: 1 MiB, read_energy: 1 pJ/B, write_energy: "
      "1 pJ/B, area: 1 mm2/MiB, ports: 3, port_area: 0.25 mm2/MiB}\n"
      "  compute:\n"
      "    - {name: mx, role: matrix, shape: [10, 10], ops: {macc: 1, add: "
      "2, exp: 0.25}}\n"
      "    - {name: vx, role: vector, mode_of: mx, pes: 8}\n"
      "  energy: {macc: 1 pJ, add: 1 pJ, exp: 1 pJ}\n"
      "  area:\n"
      "    node: 7 nm\n"
      "    functional_units:\n"
      "      - {name: fma, ops: [macc, add, mul], area: 100 um2}\n"
      "      - {name: nl, ops: [exp], area: 400 um2}\n"
      "      - {name: cmp, ops: [max], area: 7 um2}\n"
      "    interconnect: 10 um2\n";
  Diag d = {0};
  Arch *a = arch_parse("t.yaml", text, strlen(text), &d);
  CHECK(a != NULL);
  if (!a) {
    test_fail(__FILE__, __LINE__, "%d:%d %s", d.loc.line, d.loc.col, d.msg);
    return;
  }
  CHECK_NEAR(a->area.node_nm, 7, 0);
  /* 100 PEs x (2 x 100 + 0.25 x 400 + 0 x 7 + 10) um2 = 0.031 mm2 */
  CHECK_NEAR(arch_unit_area(a, 0), 100 * 310e-6, 1e-12);
  CHECK_NEAR(arch_unit_area(a, 1), 0, 0);
  CHECK_NEAR(arch_level_area(a, 0), 0, 0);
  CHECK_NEAR(arch_level_area(a, 1), 1.0, 1e-12);
  CHECK_NEAR(arch_level_area(a, 2), 1.5, 1e-12);
  CHECK_NEAR(arch_area(a), 2.531, 1e-12);
  arch_free(a);
  a = arch_parse("t.yaml", base, strlen(base), &d);
  CHECK(a && isnan(arch_area(a)));
  arch_free(a);
}

/* The shipped presets' areas at 7 nm (docs/architecture.md, "Area"). */
TEST(arch_area_presets) {
  Diag d = {0};
  Arch *m = arch_load("archs/mambalaya.yaml", &d);
  Arch *h = arch_load("archs/h100.yaml", &d);
  CHECK(m && h);
  if (m && h) {
    CHECK_NEAR(arch_area(m), 135.357, 1e-5);
    /* + shared memory: 114 x 228 KiB x 0.3593 mm2/MiB (the whole 256 KiB
     * L1/shared array of each SM at 0.32 mm2/MiB) = 9.120 mm2. */
    CHECK_NEAR(arch_area(h), 85.478 + 114 * 228.0 / 1024 * 0.3593, 1e-5);
  }
  arch_free(m);
  arch_free(h);
}

/* ---- malformed architectures ---- */

typedef struct BadCase {
  const char *from, *to; /* BASE with the first FROM replaced by TO */
  int line, col;
  const char *msg; /* a substring of the message */
} BadCase;

/* BASE with FROM replaced by TO, heap-allocated. */
static char *variant(const char *from, const char *to) {
  const char *at = strstr(base, from);
  if (!at)
    return NULL;
  size_t pre = (size_t)(at - base), flen = strlen(from), tlen = strlen(to);
  size_t n = strlen(base) - flen + tlen;
  char *s = malloc(n + 1);
  memcpy(s, base, pre);
  memcpy(s + pre, to, tlen);
  strcpy(s + pre + tlen, at + flen);
  return s;
}

static const BadCase bad_cases[] = {
    {"      pes: 8\n", "      pes: 8\n      colour: red\n", 24, 7,
     "unknown key 'colour' in a compute unit (expected name, role, shape, "
     "pes, mode_of, pipeline, efficiency, sms, threads, ops, epilogue, "
     "reduction or tile)"},
    {"  word: 2 B\n", "  word: 2 B\n  speed: 3\n", 5, 3,
     "unknown key 'speed' in architecture (expected name, clock, word, "
     "memory, compute, energy, binding, area or kernel)"},
    {"      capacity: 1 MiB\n", "      capacity: 1 MiB\n      size: 1 MiB\n",
     12, 7, "unknown key 'size' in a memory level"},
    {"clock: 1 GHz", "clock: 1", 3, 10,
     "clock '1' has no unit: expected a frequency in Hz such as '1.75 GHz' "
     "(units: Hz, kHz, MHz, GHz)"},
    {"capacity: 1 MiB", "capacity: 1 GHz", 11, 17,
     "capacity '1 GHz' is a frequency in Hz, expected a size in bytes"},
    {"bandwidth: 1 GB/s", "bandwidth: 1 GB", 7, 18,
     "bandwidth '1 GB' is a size in bytes, expected a bandwidth in bytes/s"},
    {"bandwidth: 1 GB/s", "bandwidth: 1e-300 B/s", 7, 18,
     "bandwidth '1e-300 B/s' is out of range (1 B/s to 1e18 B/s)"},
    {"bandwidth: 1 GB/s", "bandwidth: 1e300 TB/s", 7, 18,
     "bandwidth '1e300 TB/s' is out of range (1 B/s to 1e18 B/s)"},
    {"clock: 1 GHz", "clock: 1e20 Hz", 3, 10,
     "clock '1e20 Hz' is out of range (1 Hz to 1e13 Hz)"},
    {"read_energy: 1 pJ/B", "read_energy: 1e12 pJ/B", 8, 20,
     "read_energy '1e12 pJ/B' is out of range (1e-6 pJ/B to 1e9 pJ/B, or 0)"},
    {"clock: 1 GHz", "clock: 0x10 GHz", 3, 10, "clock '0x10 GHz' is not"},
    {"read_energy: 1 pJ/B", "read_energy: 1 pJ", 8, 20,
     "read_energy '1 pJ' is an energy per operation, expected an energy per "
     "byte"},
    {"capacity: 1 MiB", "capacity: 1 furlong", 11, 17,
     "capacity '1 furlong' is not a size in bytes such as '32 MiB' (units: "
     "B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)"},
    {"role: vector", "role: scalar", 21, 13,
     "unknown role 'scalar' (expected matrix, vector or feeder)"},
    {"mode_of: mx", "mode_of: my", 22, 16,
     "mode_of names unknown unit 'my' (did you mean 'mx'? units: mx, vx)"},
    {"mode_of: mx", "mode_of: vx", 22, 16, "cannot be a mode of itself"},
    {"      pes: 8\n",
     "      pes: 8\n    - name: wx\n      role: feeder\n      mode_of: vx\n"
     "      pes: 2\n",
     26, 16, "unit 'wx' is a mode of 'vx', which is itself a mode"},
    {"pes: 8", "pes: 32", 22, 16, "mode 'vx' has 32 PEs but 'mx' has only 16"},
    {"name: vx", "name: mx", 20, 13, "duplicate unit name 'mx' (first at line 15)"},
    {"name: Buf", "name: DRAM", 10, 13,
     "duplicate memory level name 'DRAM' (first at line 6)"},
    {"[4, 4]", "[4, 0]", 17, 18, "shape columns must be a positive integer"},
    {"[4, 4]", "[4, 4, 4]", 17, 14,
     "shape must be two positive integers [ROWS, COLS], found 3 items"},
    {"[4, 4]", "[4, x]", 17, 18, "shape columns must be a positive integer, "
                                 "found 'x'"},
    {"      shape: [4, 4]\n", "      shape: [4, 4]\n      pes: 10\n", 18, 12,
     "pes 10 does not match shape [4, 4] (16 PEs)"},
    {"      shape: [4, 4]\n", "      pes: 16\n", 15, 7,
     "unit 'mx' has role matrix but no shape"},
    {"add: 1}", "add: -1}", 18, 27,
     "rate of 'add' must be 0 or a number of operations per PE per cycle "
     "from 1e-6 to 1e6, found '-1'"},
    {"add: 1}", "add: fast}", 18, 27, "rate of 'add' must be 0 or a number"},
    {"add: 1}", "add: 1e-300}", 18, 27, "found '1e-300'"},
    {"add: 1}", "add: 0x10}", 18, 27, "found '0x10'"},
    {"add: 1}", "tanh: 1}", 18, 22,
     "unknown operation class 'tanh' in unit 'mx' (expected macc, add, mul, "
     "div, exp, log, sqrt, silu or max)"},
    {"{macc: 1, add: 1}", "{add: 1}", 18, 12,
     "unit 'mx' has role matrix but no macc rate"},
    {"{macc: 1, add: 1}", "{macc: 0}", 18, 12,
     "unit 'mx' performs no operation"},
    {"  clock: 1 GHz\n", "", 1, 1, "architecture is missing 'clock'"},
    {"clock: 1 GHz", "clock: -1 GHz", 3, 10, "clock must be positive"},
    {"clock: 1 GHz", "clock: 0 GHz", 3, 10, "clock must be positive"},
    {"clock: 1 GHz", "clock:", 3, 9,
     "clock has no value: expected a frequency in Hz"},
    {"clock: 1 GHz", "clock: [1 GHz]", 3, 10,
     "expected a scalar for clock, found a list"},
    {"word: 2 B", "word: 1.5 B", 4, 9, "word must be a whole number of bytes"},
    {"      capacity: 1 MiB\n", "", 10, 7,
     "memory level 'Buf' is missing 'capacity'"},
    {"      bandwidth: 1 GB/s\n", "", 6, 7,
     "memory level 'DRAM' is missing 'bandwidth'"},
    {"      write_energy: 1 pJ/B\n    - name: Buf",
     "      write_energy: -1 pJ/B\n    - name: Buf", 9, 21,
     "write_energy must not be negative"},
    {"      mode_of: mx\n", "", 20, 7, "unit 'vx' is missing 'ops'"},
    {"      pes: 8\n", "", 20, 7, "unit 'vx' needs 'pes' (a count) or 'shape'"},
    {"      role: vector\n", "", 20, 7, "unit 'vx' is missing 'role'"},
    {"    - name: vx\n", "    - name: 'v x'\n", 20, 13,
     "unit name 'v x' is not a name"},
    {"{macc: 1 pJ, add: 1 pJ}", "{macc: 1 pJ}", 24, 11,
     "energy has no entry for 'add', which unit 'mx' performs"},
    {"{macc: 1 pJ, add: 1 pJ}", "{macc: 1 pJ, add: 1}", 24, 29,
     "energy of 'add' '1' has no unit"},
    {"  energy: {macc: 1 pJ, add: 1 pJ}\n", "", 1, 1,
     "architecture is missing 'energy'"},
    {"  energy: {macc: 1 pJ, add: 1 pJ}\n",
     "  energy: {macc: 1 pJ, add: 1 pJ}\nextra: 1\n", 25, 1,
     "unknown section 'extra' (expected architecture)"},
    {"    - name: Buf\n      capacity: 1 MiB\n      read_energy: 1 pJ/B\n"
     "      write_energy: 1 pJ/B\n",
     "", 6, 5, "memory has 1 level: give off-chip memory and at least one "
               "on-chip level"},
    {"  compute:\n", "  compute: []\n  x:\n", 15, 3,
     "unknown key 'x' in architecture"},
    /* area: a level's area needs the section; the section needs a node,
     * functional units covering every class performed, areas on chip. */
    {"      capacity: 1 MiB\n", "      capacity: 1 MiB\n      area: 1 mm2/MiB\n",
     12, 13, "needs the architecture's area section"},
    {"  energy:", "  area: {node: 7 nm, functional_units: [{name: f, ops: "
                  "[macc, add], area: 1 um2}]}\n  energy:",
     10, 7, "memory level 'Buf' has no 'area'"},
    {"      bandwidth: 1 GB/s\n", "      bandwidth: 1 GB/s\n      area: 1 mm2/MiB\n",
     8, 13, "memory level 'DRAM' is off chip"},
    {"  energy:", "  area: {functional_units: []}\n  energy:", 24, 3,
     "area is missing 'node'"},
    {"  energy:", "  area: {node: 7, functional_units: []}\n  energy:", 24,
     16, "node '7' has no unit"},
    {"  energy:", "  area: {node: 7 nm, functional_units: [{name: f, ops: "
                  "[macc], area: 1 um2}]}\n  energy:",
     24, 40, "no functional unit performs 'add', which unit 'mx' performs"},
    {"  energy:", "  area: {node: 7 nm, functional_units: [{name: f, ops: "
                  "[macc, add], area: 1 um2}, {name: g, ops: [add], area: 1 "
                  "um2}]}\n  energy:",
     24, 99, "'add' is already performed by functional unit 'f'"},
    {"  energy:", "  area: {node: 7 nm, functional_units: [{name: f, ops: "
                  "[macc, add], area: 1 mm2/MiB}]}\n  energy:",
     24, 75, "area '1 mm2/MiB' is an area per byte of capacity, expected an "
             "area"},
    {"      capacity: 1 MiB\n", "      capacity: 1 MiB\n      ports: 2\n",
     12, 14, "ports and port_area need 'area'"},
    {"  name: t\n", "  name: t\n  name: u\n", 3, 3, "duplicate key 'name'"},
};

TEST(arch_malformed) {
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
    const BadCase *c = &bad_cases[i];
    char *text = variant(c->from, c->to);
    if (!text) {
      test_fail(__FILE__, __LINE__, "case %zu: '%s' not in the base text", i,
                c->from);
      continue;
    }
    Diag d = {0};
    Arch *a = arch_parse("bad.yaml", text, strlen(text), &d);
    if (a) {
      test_fail(__FILE__, __LINE__, "case %zu (%s): accepted", i, c->msg);
      arch_free(a);
    } else if (strcmp(d.file, "bad.yaml") != 0 || d.loc.line != c->line ||
               d.loc.col != c->col || !strstr(d.msg, c->msg)) {
      test_fail(__FILE__, __LINE__,
                "case %zu: got %s:%d:%d: %s\n  expected bad.yaml:%d:%d: ...%s",
                i, d.file, d.loc.line, d.loc.col, d.msg, c->line, c->col,
                c->msg);
    }
    free(text);
  }
}

TEST(arch_malformed_whole) {
  static const struct {
    const char *text;
    int line, col;
    const char *msg;
  } cases[] = {
      {"", 1, 1, "empty architecture file"},
      {"- 1\n", 1, 1, "expected a mapping for the top level"},
      {"archs:\n  name: x\n", 1, 1, "unknown section 'archs'"},
      /* a top-level `arch:` is AccelForge's (docs/compat.md) */
      {"arch:\n  name: x\n", 2, 3, "unknown key 'name' in arch"},
      {"architecture: 3\n", 1, 15,
       "expected a mapping for the architecture section"},
      {"architecture:\n  name: [x\n", 3, 1, "YAML syntax error"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Diag d = {0};
    Arch *a = arch_parse("w.yaml", cases[i].text, strlen(cases[i].text), &d);
    CHECK(a == NULL);
    arch_free(a);
    if (d.loc.line != cases[i].line || d.loc.col != cases[i].col ||
        !strstr(d.msg, cases[i].msg))
      test_fail(__FILE__, __LINE__, "case %zu: got %d:%d: %s, expected %d:%d: %s",
                i, d.loc.line, d.loc.col, d.msg, cases[i].line, cases[i].col,
                cases[i].msg);
  }
  Diag d = {0};
  CHECK(arch_load("archs/no-such-file.yaml", &d) == NULL);
  CHECK(strstr(d.msg, "cannot read") != NULL);
}
