/* test_sweep_paths.c — a study's parameter paths resolved on an
 * architecture file (src/sweep/path.c, docs/sweep.md "Paths"): by name,
 * position and role, each to the same canonical path; a role no level or
 * several levels have, a position past the end, a role in another list
 * refused with the reason. */
#include "test.h"

#include <stdlib.h>

#include "../../src/sweep/study.h"

typedef struct PathCase {
  const char *path, *canon; /* canon NULL: refused, WHY in its reason */
  const char *why;
} PathCase;

/* Resolve each case on the shipped file FILE. */
static void resolve_all(const char *file, const PathCase *cases, int n) {
  Diag d = {0};
  YamlDoc *doc = ydoc_load(file, &d);
  CHECK(doc != NULL);
  if (!doc)
    return;
  for (int i = 0; i < n; i++) {
    Buf canon = {0}, why = {0};
    bool ok = study_path_resolve(doc->root, file, cases[i].path, &canon,
                                 &why);
    if (cases[i].canon) {
      CHECK(ok);
      CHECK_STR(canon.s, cases[i].canon);
    } else if (ok || !why.s || !strstr(why.s, cases[i].why)) {
      test_fail(__FILE__, __LINE__, "%s on %s: %s, expected refusal '%s'",
                cases[i].path, file, ok ? "resolved" : why.s, cases[i].why);
    }
    buf_free(&canon);
    buf_free(&why);
  }
  ydoc_free(doc);
}

TEST(sweep_paths_by_name_position_role) {
  static const PathCase h100[] = {
      {"clock", "clock", NULL},
      {"memory.L2.capacity", "memory[1].capacity", NULL},
      {"memory[fusion].capacity", "memory[1].capacity", NULL},
      {"memory[buffer].bandwidth", "memory[1].bandwidth", NULL},
      {"memory[dram].bandwidth", "memory[0].bandwidth", NULL},
      {"memory[level].bandwidth", "memory[2].bandwidth", NULL},
      {"memory.SharedMemory.bandwidth", "memory[2].bandwidth", NULL},
      {"memory[registers].read_energy", "memory[3].read_energy", NULL},
      {"memory[-1].read_energy", "memory[3].read_energy", NULL},
      {"memory[0].read_energy", "memory[0].read_energy", NULL},
      {"compute[vector].ops.exp", "compute[1].ops.exp", NULL},
      {"compute[matrix].shape", "compute[0].shape", NULL},
      {"area.functional_units.fma.area", "area.functional_units[0].area",
       NULL},
      {"area.functional_units[-1].area", "area.functional_units[3].area",
       NULL},
      {"memory[staging].capacity", NULL,
       "memory[staging]: no level has the role 'staging' (HBM dram, L2 "
       "buffer, SharedMemory level, Registers registers)"},
      {"compute[feeder].pes", NULL, "no unit has the role 'feeder'"},
      {"memory[4].capacity", NULL,
       "memory[4]: there are 4 items (0 to 3, or -1 to -4)"},
      {"memory[-5].capacity", NULL, "there are 4 items"},
      {"memory[+1].capacity", NULL, "no level has the role '+1'"},
      {"area.functional_units[fma].area", NULL,
       "only memory and compute items are selected by role"},
      {"memory[1]", NULL, "it names a section, not a field"},
      {"memory[1.capacity", NULL, "is not KEY or KEY[SELECTOR]"},
      {"clock[0].x", NULL, "clock[0]: 'clock' is not a list"},
      {"memory.L3.capacity", NULL, "no item named 'L3'"},
      {"memory.L2.name", NULL, "'name' labels an item and changes no figure"},
  };
  resolve_all("archs/h100.yaml", h100, sizeof h100 / sizeof h100[0]);
  static const PathCase mambalaya[] = {
      {"memory[fusion].capacity", "memory[1].capacity", NULL},
      {"memory[registers].capacity", "memory[2].capacity", NULL},
      {"compute[feeder].pes", "compute[2].pes", NULL},
      {"memory[level].capacity", NULL, "no level has the role 'level'"},
  };
  resolve_all("archs/mambalaya.yaml", mambalaya,
              sizeof mambalaya / sizeof mambalaya[0]);
}
