/* test_area.c — the area model by component class (docs/architecture.md,
 * "Area"): the H100 and Mambalaya sum the same classes, which add up to
 * the total; the nonlinear hardware's two readings, by hand; every field
 * of the shipped area sections moves the area. */
#include "test.h"

#include <stdlib.h>

#include "../../src/arch/arch.h"

/* Both presets sum every class, each positive, and the classes add up to
 * the total; the memory class is every on-chip level, register files and
 * the H100's shared memory included. */
TEST(area_classes_like_for_like) {
  const char *const files[] = {"archs/mambalaya.yaml", "archs/h100.yaml"};
  bool counted[2][AREA_CLASS_COUNT];
  for (int i = 0; i < 2; i++) {
    Diag d = {0};
    Arch *a = arch_load(files[i], &d);
    CHECK(a != NULL);
    if (!a)
      return;
    double cls[AREA_CLASS_COUNT], sum = 0, levels = 0;
    arch_area_by_class(a, cls);
    for (int c = 0; c < AREA_CLASS_COUNT; c++) {
      counted[i][c] = isfinite(cls[c]) && cls[c] > 0;
      sum += cls[c];
    }
    for (int l = 1; l < a->nlevels; l++) {
      CHECK(arch_level_area(a, l) > 0);
      levels += arch_level_area(a, l);
    }
    CHECK_NEAR(sum, arch_area(a), 1e-12);
    CHECK_NEAR(cls[AREA_MEMORY], levels, 1e-12);
    arch_free(a);
  }
  for (int c = 0; c < AREA_CLASS_COUNT; c++) {
    CHECK(counted[0][c]);
    CHECK_INT(counted[0][c], counted[1][c]);
  }
}

/* A vector unit of 10 PEs on one buffer, its nonlinear hardware %s. */
#define NONLINEAR_ARCH \
  "architecture:\n" \
  "  name: t\n  clock: 1 GHz\n  word: 2 B\n" \
  "  memory:\n" \
  "    - {name: D, bandwidth: 1 GB/s, read_energy: 1 pJ/B, " \
  "write_energy: 1 pJ/B}\n" \
  "    - {name: B, capacity: 1 MiB, read_energy: 1 pJ/B, " \
  "write_energy: 1 pJ/B, area: 1 mm2/MiB}\n" \
  "  compute:\n" \
  "    - {name: v, role: vector, pes: 10, ops: {macc: 1, exp: 2}}\n" \
  "  energy: {macc: 1 pJ, exp: 1 pJ}\n" \
  "  area:\n" \
  "    node: 7 nm\n" \
  "    functional_units:\n" \
  "      - {name: fma, ops: [macc, add, mul], area: 100 um2}\n" \
  "      - {name: nl, ops: [exp], area: 400 um2}\n" \
  "    nonlinear: %s\n"

/* One PE with macc 1 and exp 2, fma 100 um2, nl 400 um2, 10 PEs: as
 * separate stages, 10 x (100 + 2 x 400) um2; as MARCA's unit, the PE
 * needs 2 FMAs for the exps: 10 x 2 x 100 um2. */
TEST(area_nonlinear_readings) {
  const char *const hw[] = {"separate", "marca"};
  const double compute[] = {10 * 100e-6, 10 * 2 * 100e-6};
  const double nonlinear[] = {10 * 2 * 400e-6, 0};
  for (int h = 0; h < 2; h++) {
    char text[1024];
    snprintf(text, sizeof text, NONLINEAR_ARCH, hw[h]);
    Diag d = {0};
    Arch *a = arch_parse("t.yaml", text, strlen(text), &d);
    CHECK(a != NULL);
    if (!a)
      continue;
    double cls[AREA_CLASS_COUNT];
    arch_area_by_class(a, cls);
    CHECK_INT(a->area.nonlinear, h);
    CHECK_NEAR(cls[AREA_COMPUTE], compute[h], 1e-12);
    CHECK_NEAR(cls[AREA_NONLINEAR], nonlinear[h], 1e-12);
    CHECK_NEAR(cls[AREA_INTERCONNECT], 0, 0);
    CHECK_NEAR(cls[AREA_MEMORY], 1, 1e-12);
    CHECK_NEAR(arch_area_as(a, NONLINEAR_SEPARATE), 1 + 0.009, 1e-12);
    CHECK_NEAR(arch_area_as(a, NONLINEAR_MARCA), 1 + 0.002, 1e-12);
    arch_free(a);
  }
  /* marca without an FMA to build on, and an unknown reading. */
  const char *const bad[] = {"marca\n", "shared\n"};
  const char *const why[] = {"no functional unit performs macc",
                             "separate"};
  for (int i = 0; i < 2; i++) {
    char text[1024];
    snprintf(text, sizeof text, NONLINEAR_ARCH, bad[i]);
    for (char *f = strstr(text, "macc"); f && i == 0; f = strstr(f, "macc"))
      memcpy(f, "max ", 4); /* no FMA: max everywhere macc was */
    Diag d = {0};
    Arch *a = arch_parse("t.yaml", text, strlen(text), &d);
    CHECK(a == NULL);
    CHECK(d.loc.line == 16 && d.loc.col == 16 && strstr(d.msg, why[i]));
    arch_free(a);
  }
}

/* Each functional unit's area, the interconnect and the reading of the
 * nonlinear hardware each move the area of both shipped presets. */
TEST(area_every_shipped_field_moves) {
  const char *const files[] = {"archs/mambalaya.yaml", "archs/h100.yaml"};
  int tried = 0;
  for (int i = 0; i < 2; i++) {
    Diag d = {0};
    Arch *a = arch_load(files[i], &d);
    CHECK(a != NULL);
    if (!a)
      return;
    double base = arch_area(a);
    for (int f = 0; f <= a->area.nfus + 1; f++) {
      Arch *b = arch_load(files[i], &d);
      if (f < a->area.nfus)
        b->area.fus[f].area *= 2;
      else if (f == a->area.nfus)
        b->area.interconnect *= 2;
      else
        b->area.nonlinear = NONLINEAR_MARCA;
      tried++;
      if (!(fabs(arch_area(b) - base) > 1e-9 * base))
        test_fail(__FILE__, __LINE__, "%s: area field %d moves nothing",
                  files[i], f);
      arch_free(b);
    }
    arch_free(a);
  }
  CHECK_INT(tried, 12);
}
